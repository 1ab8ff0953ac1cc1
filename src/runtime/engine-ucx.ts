/**
 * The engine's UCX path (the UCX transport): the offloaded schedules' frames travel between
 * engines over this engine's UCP worker, its peers the other nodes' engines by node id, instead
 * of over the TCP links. A frame is one UCX message: the offload header and one fragment
 * (sched/offload-records.ts), copied into one buffer so the payload's region is free at once.
 *
 * Its progress runs on the engine's event loop: woken by the worker's event fd, and kept
 * turning while sends are in flight; a spinning engine also drains it every turn (`drain`).
 */
import { Buffer } from 'node:buffer';
import type { UcxPath } from '../p2p/ucx.js';
import { finishedHeader, OF_BYTES } from '../sched/offload-records.js';

/** What the UCX path needs of its engine. */
export interface UcxEngine {
  /** False once the engine has stopped (or failed). */
  live(): boolean;
  /** Runs `fn`, failing the node on a throw. */
  guard(fn: () => void): void;
  /** An offload frame from node `from`'s engine (the body may be kept). */
  onFrame(from: number, body: Buffer): void;
  /** Counts a frame sent. */
  count(bytes: number): void;
  /** The path found work (a spinning engine polls on). */
  worked(): void;
}

export class EngineUcx {
  private pumping = false;

  constructor(private readonly ucx: UcxPath, private readonly engine: UcxEngine) {}

  /** Starts receiving. */
  start(): void {
    this.pump();
  }

  /** One frame: `onWritten` once UCX has it (the payload was copied). */
  send(node: number, header: Int32Array, payload: Uint8Array, onWritten: () => void): void {
    const e = this.engine;
    const msg = new Uint8Array(OF_BYTES + payload.byteLength);
    msg.set(new Uint8Array(header.buffer, header.byteOffset, OF_BYTES));
    msg.set(payload, OF_BYTES);
    this.ucx.sendMessage(node, msg, (err) => {
      if (err !== null) e.guard(() => { throw err; });
    });
    e.count(msg.byteLength);
    queueMicrotask(() => e.guard(onWritten));
    this.schedulePump();
  }

  /**
   * World rank `world` of this node has returned from its job: every other engine (of `nodes`)
   * hears it behind this engine's offload frames to it. Sent at the end of the job, maybe as a
   * node exits: a failed send is no news (a lost node is reported by its links and the
   * rendezvous).
   */
  announceFinished(world: number, nodes: number, self: number): void {
    const msg = new Uint8Array(finishedHeader(world).buffer);
    for (let node = 0; node < nodes; node++) {
      if (node !== self) this.ucx.sendMessage(node, msg, () => {});
    }
    this.schedulePump();
  }

  /** Hands every frame the UCX worker has to the engine; true when there was one. */
  drain(): boolean {
    const ucx = this.ucx;
    let found = false;
    // One progress of the worker, then the frames it brought without another (ucx.ts, poll).
    let len = ucx.poll();
    while (len >= 0) {
      found = true;
      // a copy: the offload engine may keep an unexpected frame's body until its receive
      this.engine.onFrame(ucx.lastSender, Buffer.from(ucx.inbox.subarray(0, len)));
      len = ucx.poll(false);
    }
    return found;
  }

  private schedulePump(): void {
    if (this.pumping) return;
    this.pumping = true;
    setImmediate(() => {
      this.pumping = false;
      this.pump();
    });
  }

  /** Receives every frame UCX has, then sleeps on the worker's events (or turns again while sends are in flight). */
  private pump(): void {
    const ucx = this.ucx;
    const e = this.engine;
    if (!e.live()) return;
    e.guard(() => {
      if (this.drain()) e.worked();
    });
    if (!e.live()) return;
    if (ucx.busy) {
      this.schedulePump();
      return;
    }
    ucx.watch(() => this.pump());
    // The worker's event fd does not report every UCX event (seen on tcp with three engines
    // exchanging rendezvous frames), so look again after a pause that starts at 1 ms after
    // activity and doubles while nothing arrives, up to 100 ms.
    const delay = ucx.idleDelayMs();
    setTimeout(() => this.schedulePump(), delay).unref();
  }
}
