/**
 * The rank side of the offload executor. A collective is posted to the node engine as
 * (schedule id, buffer regions, completion word); the engine runs it (sched/offload.ts) and
 * sets the completion word. Schedules and communicators are registered with the engine once,
 * through the same ring, so they always arrive before the posts that use them.
 *
 * Buffers: regions must live in the node's shared memory. Registered buffers (comm.alloc) are
 * used in place; plain typed arrays are staged through this rank's arena slice: copied in
 * when the collective is posted, and the receive buffer copied out when its completion is
 * seen. Scratch (TMP) and the
 * completion word come from the arena too and are returned at completion.
 *
 * Under the emulated network (p2p/wire.ts) the engine may write, beside the completion word,
 * the tick the network delivers the result at (an `agg` call's result from the fabric: the
 * engine and daemons never wait for it): the rank holds the request until then, and its wait
 * sleeps until the earliest such tick as for a record held in its ring.
 */
import { NbcArgError, NbcNoMemError, NbcPeerFailedError } from '../errors.js';
import { REPORTED_ELSEWHERE } from '../p2p/constants.js';
import { Request } from '../p2p/request.js';
import type { Transport } from '../p2p/transport.js';
import type { Wire } from '../p2p/wire.js';
import type { AggExecutorStats, CollTarget, Executor, ExecutorStats, Plan } from './executor.js';
import {
  DONE_FABRIC, DONE_INVALID, DONE_OK, DONE_PEER_FAILED, DONE_PEER_GONE, offloadPeerGoneMessage, REGISTERED_SCHEDULES,
} from './offload.js';
import { encodePost, sendComm, sendPost, sendSchedule } from './offload-records.js';
import type { Schedule } from './schedule.js';
import type { TwoLevelCall } from './two-level.js';
import { encodeSchedule } from './wire.js';

class OffloadRequest extends Request {
  slotIndex = 0;
  slot!: Int32Array;

  /** The rank's emulated network, or null. */
  wire: Wire | null = null;

  override ready(): boolean {
    return this.done || (Atomics.load(this.slot, this.slotIndex) !== 0 && this.delivered());
  }

  /** Whether the result's stamp (the word after the completion word; 0: none) has passed; else notes it held. */
  delivered(): boolean {
    return this.wire === null || this.wire.arrived(Atomics.load(this.slot, this.slotIndex + 1));
  }

  /** Recv data to copy out of the arena at completion (plain user buffer), or null. */
  copyOut: { from: Uint8Array; to: Uint8Array } | null = null;
  /** Arena offsets to free at completion. */
  frees: number[] = [];
}

type OffloadTarget = CollTarget;

export class OffloadClient implements Executor {
  readonly name = 'offload';
  /** Schedules registered with the engine, oldest first: the engine's window, mirrored (offload.ts REGISTERED_SCHEDULES). */
  private readonly ids = new Map<Schedule, number>();
  private nextId = 1;
  private readonly comms = new Set<number>();
  private pending: OffloadRequest[] = [];
  private readonly slot: Int32Array;
  private readonly ownSlice: SharedArrayBuffer;
  /** The agg executor's counters, where this client posts its calls; else null. */
  private readonly agg: AggExecutorStats | null;

  /**
   * @param spinUs how long a rank waiting for an offloaded collective spins before parking:
   *   briefly, since the engine that completes it needs a core, and on a busy machine the
   *   waiting rank's spin would be taking it.
   * @param stats where its posts are counted (executors.ts, comm.stats()); the agg executor's
   *   also learn how each completed call was reduced
   */
  constructor(private readonly t: Transport, private readonly spinUs: number,
    private readonly stats: ExecutorStats | AggExecutorStats = { calls: 0 }) {
    this.agg = 'onFabric' in stats ? stats : null;
    this.ownSlice = t.shared.slices[t.ep]!;
    this.slot = new Int32Array(this.ownSlice);
    t.addProgressHook(() => this.poll(), () => this.completed());
  }

  private alloc(bytes: number, what: string): number {
    const off = this.t.allocator.alloc(Math.max(bytes, 1));
    if (off < 0) {
      throw new NbcNoMemError(`Cannot offload a collective: no room in the arena slice for its ${what} (${bytes} bytes, ${this.t.allocator.available} free); expected a larger NBC_ARENA_MB`);
    }
    return off;
  }

  /** The arena region of `view`: in place when registered, else staged (copied in if asked). */
  private region(view: Uint8Array, req: OffloadRequest, copyIn: boolean): { slice: number; offset: number; bytes: number; arena: Uint8Array } {
    if (view.buffer === this.ownSlice || view.byteLength === 0) return { slice: this.t.ep, offset: view.byteOffset, bytes: view.byteLength, arena: view };
    const off = this.alloc(view.byteLength, 'staging copy');
    req.frees.push(off);
    const arena = new Uint8Array(this.ownSlice, off, view.byteLength);
    if (copyIn) arena.set(view);
    return { slice: this.t.ep, offset: off, bytes: view.byteLength, arena };
  }

  start(plan: Plan, target: CollTarget, tag: number): Request {
    if (plan.composite !== undefined) return this.postTwoLevel(target, plan.send, plan.recv, tag, plan.composite);
    return this.post(plan.sched, target, plan.send, plan.recv, tag);
  }

  post(sched: Schedule, target: OffloadTarget, send: Uint8Array, recv: Uint8Array, tag: number): Request {
    // User ops never get here: planning refuses them for this executor on every rank
    // (Communicator.plan), not only on ranks whose schedule holds a reduction.
    if (sched.tmpBytes < 0) throw new NbcArgError('invalid schedule');
    const t = this.t;
    const { req, s: sr, r } = this.stage(target, send, recv);
    let id = this.ids.get(sched);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(sched, id);
      if (this.ids.size > REGISTERED_SCHEDULES) this.ids.delete(this.ids.keys().next().value!);
      sendSchedule(t, target.collCtx, target.rank, id, encodeSchedule(sched));
    }
    const tmpOff = sched.tmpBytes > 0 ? this.alloc(sched.tmpBytes, 'scratch') : 0;
    if (sched.tmpBytes > 0) req.frees.push(tmpOff);
    const slotOff = this.arm(req);
    this.stats.calls++;
    sendPost(t, target.collCtx, target.rank, tag, id, t.ep, slotOff, encodePost(sr, r, { slice: t.ep, offset: tmpOff, bytes: sched.tmpBytes }, null));
    this.pending.push(req);
    return req;
  }

  /**
   * Posts a two-level collective (sched/two-level.ts): the engine combines its node's members
   * and runs the inter-node part with the other engines.
   */
  postTwoLevel(target: OffloadTarget, send: Uint8Array, recv: Uint8Array, tag: number, call: TwoLevelCall): Request {
    const t = this.t;
    const { req, s, r } = this.stage(target, send, recv);
    const slotOff = this.arm(req);
    this.stats.calls++;
    sendPost(t, target.collCtx, target.rank, tag, 0, t.ep, slotOff, encodePost(s, r, null, call));
    this.pending.push(req);
    return req;
  }

  /**
   * A freed communicator: the engine forgets its members (a KIND_COMM record with COMM_RELEASE
   * and no members), after the posts already written. Without it every communicator an offloaded
   * collective ever ran on stayed registered in the engine (the soak's residual growth).
   */
  release(target: OffloadTarget): void {
    if (!this.comms.delete(target.collCtx)) return;
    sendComm(this.t, target.collCtx, target.rank, new Int32Array(0), true);
  }

  /**
   * What every post starts with: the communicator registered with the engine (once), a
   * request, and the send and receive regions in the arena. A staged receive buffer is copied
   * in too: a collective may leave parts of it untouched (exscan on rank 0, gaps between
   * gatherv blocks, PROC_NULL neighbours), and copying the stage out must not overwrite them.
   */
  private stage(target: OffloadTarget, send: Uint8Array, recv: Uint8Array) {
    if (!this.comms.has(target.collCtx)) {
      sendComm(this.t, target.collCtx, target.rank, target.worldRanks);
      this.comms.add(target.collCtx);
    }
    const req = new OffloadRequest(this.t);
    req.spinUs = this.spinUs;
    req.wire = this.t.wire;
    const same = send.buffer === recv.buffer && send.byteOffset === recv.byteOffset && send.byteLength === recv.byteLength;
    const r = this.region(recv, req, true);
    const s = same ? r : this.region(send, req, true);
    if (r.arena !== recv) req.copyOut = { from: r.arena, to: recv };
    return { req, s, r };
  }

  /** Allocates and clears the request's completion word; returns its arena offset. */
  private arm(req: OffloadRequest): number {
    const slotOff = this.alloc(64, 'completion word');
    req.frees.push(slotOff);
    req.slotIndex = slotOff >> 2;
    req.slot = this.slot;
    Atomics.store(this.slot, req.slotIndex, 0);
    Atomics.store(this.slot, req.slotIndex + 1, 0);
    return slotOff;
  }

  /** True when the engine has set a pending request's completion word and its stamp has passed (read only). */
  private completed(): boolean {
    for (let i = 0; i < this.pending.length; i++) if (this.pending[i]!.ready()) return true;
    return false;
  }

  /** Completes the requests whose completion word the engine has set. */
  private poll(): boolean {
    if (this.pending.length === 0) return false;
    let any = false;
    let w = 0;
    for (let i = 0; i < this.pending.length; i++) {
      const req = this.pending[i]!;
      const v = Atomics.load(this.slot, req.slotIndex);
      if (v === 0 || !req.delivered()) {
        this.pending[w++] = req;
        continue;
      }
      any = true;
      const ok = v === DONE_OK || v === DONE_FABRIC;
      if (ok && req.copyOut !== null) req.copyOut.to.set(req.copyOut.from);
      for (const off of req.frees) this.t.allocator.free(off);
      if (ok && this.agg !== null) {
        if (v === DONE_FABRIC) this.agg.onFabric++;
        else this.agg.amongEngines++;
      }
      req.complete(ok ? null : v === DONE_PEER_FAILED ? new NbcPeerFailedError(
        'An aggregated collective failed: a daemon, link or member node of the aggregation fabric failed under it (the node log names it); later agg calls on this communicator fail the same way; a new one (dup) joins a fresh group, or falls back to host algorithms')
        : v >= DONE_PEER_GONE ? new NbcPeerFailedError(offloadPeerGoneMessage(v - DONE_PEER_GONE))
        : v === DONE_INVALID ? new NbcPeerFailedError(
          `An offloaded collective received data that is not valid: the collective had already failed on the rank that sent it (a disagreeing count or a lost peer there), which sent it only so that nobody waits; ${REPORTED_ELSEWHERE}`)
        : new NbcArgError(
          'An offloaded collective failed: its ranks disagree on message sizes, or the node engine refused the post (the node log says why: a schedule, communicator or buffer region it cannot run); expected matching calls on every rank'));
    }
    if (w !== this.pending.length) this.pending.length = w;
    return any;
  }
}
