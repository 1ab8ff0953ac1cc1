/**
 * The node engine: the process's main thread acting as the node's network card. It only
 * dispatches; each protocol lives in its own module:
 *
 *   records from ranks (rank -> engine rings, `poll`)     frames from other engines (`onFrame`)
 *   EAGER, EAGER_CREDIT -> a FRAME_MSG, forwarded           EAGER, EAGER_CREDIT, RTS -> the rank
 *   RTS, PULL, ACK      -> engine-large.ts                  FRAG, PULL, CREDIT       -> engine-large.ts
 *   POST, SCHED, COMM   -> the offload executor             FRAME_OFFLOAD            -> the offload executor
 *                          (sched/offload.ts onRecord)                                  (sched/offload.ts onFrame)
 *   FIN                 -> every other node (announce)      FIN                      -> every rank of the node
 *
 * Records for this node's ranks go through engine-deliver.ts (queued while a ring is full,
 * back-pressure on the links). Large messages cross as fragments (net/fragment.ts), pushed
 * within a credit or pulled (engine-large.ts). `agg` calls go to the aggregation fabric
 * (agg-node.ts); with the UCX transport the offload frames travel over the engine's UCP worker
 * (engine-ucx.ts).
 *
 * The engine never blocks: it parks with Atomics.waitAsync on its doorbell, so TCP events keep
 * flowing while it waits for ranks. With a spin budget (EngineWait.spinUs > 0) it first keeps
 * polling, one event-loop turn at a time, until `spinUs` have passed without work, so that a
 * post or a frame in a busy stretch costs no wake-up on either side. Where it shares its core
 * with ranks, it gives the core away between turns (EngineWait.yieldCore, sched_yield), so a
 * rank with work runs at once and the engine still sees the next frame without a wake-up; and
 * it polls on only while one of its ranks waits (kWaiting, shm/node-shared.ts waitWatcher), parking while they
 * compute; where other nodes' ranks share the host (nbc run), also only while none of those
 * computes (EngineWait.hostIdle, the host board: shm/host-board.ts).
 */
import { Buffer } from 'node:buffer';
import { NbcInternalError } from '../errors.js';
import {
  endpointWord, HEADER_BYTES, HEADER_WORDS, kDoorbell, KIND_ACK, KIND_COMM, KIND_CREDIT, KIND_EAGER, KIND_EAGER_CREDIT, KIND_FIN,
  KIND_FRAG, KIND_POST, KIND_PULL, KIND_RTS, KIND_SCHED, kSleeping,
} from '../shm/layout.js';
import {
  ackToken, encodeFin, finRank, msgBytes, pullBytes, pullId, pullMessage, pullNode, pullSender, recArrive, recDst, recKind, recLen, rtsNode,
  rtsSlice,
} from '../shm/record.js';
import { OffloadEngine } from '../sched/offload.js';
import { COMPLETION_ARRIVE, finishedRank, OF_BYTES, readOffloadHeader } from '../sched/offload-records.js';
import type { UcxPath } from '../p2p/ucx.js';
import { registerFoldMemories } from '../ops/folds.js';
import { AggNode } from './agg-node.js';
import { interNodeSchedule } from '../coll/select.js';
import type { CoreConfig } from '../config.js';
import { SliceAllocator } from '../shm/arena.js';
import { adoptSliceMemories, ringOffset, waitWatcher, wake, type NodeShared } from '../shm/node-shared.js';
import { Ring } from '../shm/ring.js';
import type { Placement } from '../p2p/transport.js';
import { copyAt } from '../shm/copy.js';
import { HIGH_WATER, RankDelivery } from './engine-deliver.js';
import { LargeMessages } from './engine-large.js';
import type { Wire } from '../p2p/wire.js';
import { EngineUcx } from './engine-ucx.js';
import { perf } from '../perf.js';

export { HIGH_WATER, LOW_WATER, PENDING_RECORD_COST } from './engine-deliver.js';
export { PUSH_CREDIT_BYTES, PUSH_MESSAGE_COST } from './engine-large.js';
export { FRAGMENT_BYTES } from '../net/fragment.js';

/** How the engine waits for work (node-main.ts chooses, from the host's cores). */
export interface EngineWait {
  /** How long to keep polling after the last work before parking (us); 0 (default) parks at once. */
  spinUs?: number;
  /** Called between polling turns: gives the core to another runnable thread (sched_yield). */
  yieldCore?: (() => void) | null;
  /**
   * Whether no rank of the host computes (the job's host board, shm/host-board.ts), where the
   * job's other nodes share this host; a yielding engine polls on only while it says so.
   */
  hostIdle?: (() => boolean) | null;
}

/** Frame type of a message (header + payload) between engines. */
export const FRAME_MSG = 1;
/** Frame type of a message of an offloaded schedule (sched/offload-records.ts header + payload). */
export const FRAME_OFFLOAD = 2;

/** What the engine needs of the node's links (implemented by net/link.ts LinkManager). */
export interface NodeLinks {
  send(nodeId: number, type: number, parts: readonly Uint8Array[], onWritten?: () => void): void;
  on(event: 'frame', listener: (fromNode: number, type: number, body: Buffer) => void): unknown;
  on(event: 'drain', listener: (nodeId: number) => void): unknown;
  writableBytesPending(nodeId: number): number;
  /** Whether frames to `nodeId` already have a way there (link.ts). */
  carries(nodeId: number): boolean;
  pauseReading(): void;
  resumeReading(): void;
}

export interface EngineStats {
  framesSent: number;
  framesReceived: number;
  bytesSent: number;
  bytesReceived: number;
}

export class Engine {
  readonly ep: number;
  readonly control: Int32Array;
  readonly slices: Buffer[];
  readonly allocator: SliceAllocator;
  readonly stats: EngineStats = { framesSent: 0, framesReceived: 0, bytesSent: 0, bytesReceived: 0 };
  private readonly fromRanks: Ring[] = [];
  /** Records for this node's ranks. */
  private readonly toRanks: RankDelivery;
  /** Large messages between nodes: push credit and pulls. */
  private readonly large: LargeMessages;
  /** Nodes of the job. */
  private readonly nodes: number;
  /** Per rank: 1 while draining its ring waits for a link to drain. */
  private readonly blocked: Uint8Array;
  private armed = false;
  private stopped = false;
  /** performance.now() when a poll last found work (spinning engines only). */
  private lastWork = 0;
  private readonly spinUs: number;
  private readonly yieldCore: (() => void) | null;
  private readonly hostIdle: (() => boolean) | null;
  /** Whether a rank waited since the engine last looked (waitWatcher). */
  private readonly rankWaited: () => boolean;
  private readonly sleepIdx: number;
  private readonly doorbellIdx: number;
  /** Int32 views of the arena slices, for completion words. */
  private readonly sliceWords: Int32Array[];
  /** Runs the schedules ranks offload to this engine. */
  readonly offload: OffloadEngine;
  /** The node's side of the aggregation fabric (`agg` calls; node-main sets it with useAgg). */
  private agg = new AggNode(null, 'the node has not joined an aggregation fabric', () => {});
  /** With the UCX transport: the offload frames' path over this engine's UCP worker (useUcx). */
  private ucx: EngineUcx | null = null;
  /**
   * Where a finished rank's word goes for nodes without a link to this one (node-main.ts: a
   * rendezvous broadcast, whose receivers call `finishedElsewhere`); null where there is none.
   */
  relayFinished: ((worldRank: number, nodes: number[]) => void) | null = null;
  /**
   * The emulated network (p2p/wire.ts; node-main sets it before start), or null. The engine
   * never waits for it: what it sends carries its modelled arrival, which the ranks wait out.
   */
  wire: Wire | null = null;

  constructor(
    readonly shared: NodeShared,
    readonly placement: Placement,
    readonly links: NodeLinks | null,
    private readonly onFatal: (err: Error) => void,
    config: CoreConfig,
    wait: EngineWait = {},
    /** Where refused offload records are reported (default: a line on stderr). */
    private readonly log: (msg: string) => void = (msg) => process.stderr.write(`${msg}\n`),
  ) {
    const { ranks, ringBytes } = shared.layout;
    this.spinUs = wait.spinUs ?? 0;
    this.yieldCore = wait.yieldCore ?? null;
    this.ep = ranks;
    this.control = new Int32Array(shared.control);
    this.rankWaited = waitWatcher(this.control, ranks);
    this.hostIdle = wait.hostIdle ?? null;
    adoptSliceMemories(shared);
    registerFoldMemories(shared.memories);
    this.slices = shared.slices.map((s) => Buffer.from(s));
    this.allocator = new SliceAllocator(shared.layout.sliceBytes);
    this.nodes = placement.nodeOfRank.reduce((m, n) => Math.max(m, n + 1), 1);
    for (let r = 0; r < ranks; r++) this.fromRanks.push(new Ring(shared.rings, ringOffset(shared, r, this.ep), ringBytes, r, this.ep));
    this.toRanks = new RankDelivery(shared, this.control, links, () => this.arm());
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the large-message host's wire getter reads the engine's
    const engine = this;
    this.large = new LargeMessages({
      placement, ep: this.ep, slices: this.slices, allocator: this.allocator,
      sendMsg: (node, parts, onWritten) => this.sendMsg(node, parts, onWritten),
      deliver: (rank, header, payload) => this.toRanks.deliver(rank, header, payload),
      guard: (fn) => this.guard(fn),
      get wire() { return engine.wire; },
    }, this.nodes);
    this.sleepIdx = endpointWord(this.ep, kSleeping);
    this.doorbellIdx = endpointWord(this.ep, kDoorbell);
    links?.on('frame', (from, type, body) => {
      if (this.spinUs > 0) this.lastWork = perf.now();
      this.guard(() => this.onFrame(from, type, body));
    });
    this.blocked = new Uint8Array(ranks);
    links?.on('drain', () => {
      if (this.blocked.includes(1)) this.guard(() => this.poll());
    });
    this.sliceWords = shared.slices.map((sl) => new Int32Array(sl));
    this.offload = new OffloadEngine({
      get wire() { return engine.wire; },
      nodeId: placement.nodeId,
      nodeOfRank: placement.nodeOfRank,
      slices: shared.slices.map((sl) => new Uint8Array(sl)),
      sendFrame: (node, header, payload, onWritten) => this.sendOffload(node, header, payload, onWritten),
      interNode: (coll, s) => interNodeSchedule(coll, s, config),
      complete: (ep, slice, offset, value, arrive) => this.completeSlot(ep, slice, offset, value, arrive),
      aggregate: (key, layout, x, fallback, done) => this.agg.aggregate(key, layout, x, fallback, done),
    });
  }

  start(): void {
    this.arm();
  }

  stop(): void {
    this.stopped = true;
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.stopped = true;
      this.onFatal(err as Error);
    }
  }

  /**
   * Parks on the doorbell without blocking the event loop; polls when woken. A spinning engine
   * that had work within `spinUs` polls again on the next turn instead, its sleeping word left
   * at 0 so that ranks skip the doorbell. One that shares its core does so only while a rank of
   * its node waits: while they compute, a parked engine is woken by its socket at once, where a
   * yielding one would run only when the computing rank's time slice ends.
   */
  private arm(): void {
    if (this.armed || this.stopped) return;
    this.armed = true;
    if (this.spinUs > 0 && (perf.now() - this.lastWork) * 1000 < this.spinUs &&
      (this.yieldCore === null || (this.rankWaited() && (this.hostIdle === null || this.hostIdle())))) {
      setImmediate(this.spinTurn);
      return;
    }
    const c = this.control;
    Atomics.store(c, this.sleepIdx, 1);
    const seen = Atomics.load(c, this.doorbellIdx);
    const fire = (): void => {
      this.armed = false;
      Atomics.store(c, this.sleepIdx, 0);
      if (this.stopped) return;
      this.guard(() => {
        if (this.poll() && this.spinUs > 0) this.lastWork = perf.now();
      });
      this.arm();
    };
    if (this.hasWork()) {
      setImmediate(fire);
      return;
    }
    const r = Atomics.waitAsync(c, this.doorbellIdx, seen, 1000);
    if (r.async) void r.value.then(fire);
    else setImmediate(fire);
  }

  /** One turn of a spinning engine: its core to whoever needs it, the ranks' rings, then the UCX worker. */
  private readonly spinTurn = (): void => {
    this.armed = false;
    if (this.stopped) return;
    this.yieldCore?.();
    this.guard(() => {
      const ranks = this.poll();
      if ((this.ucx !== null && this.ucx.drain()) || ranks) this.lastWork = perf.now();
    });
    this.arm();
  };

  private hasWork(): boolean {
    if (this.toRanks.hasPending) return true;
    // A blocked ring's records wait for the link's 'drain', which polls again.
    for (let r = 0; r < this.fromRanks.length; r++) if (this.blocked[r] === 0 && this.fromRanks[r]!.hasData()) return true;
    return false;
  }

  /** True when the record at `at` goes to a node whose link already holds HIGH_WATER bytes. */
  private linkFull(ring: Ring, at: number): boolean {
    if (this.links === null) return false;
    const w = at >> 2;
    const kind = recKind(ring.i32, w);
    if (kind !== KIND_EAGER && kind !== KIND_RTS) return false;
    const node = this.placement.nodeOfRank[recDst(ring.i32, w)]!;
    return node !== this.placement.nodeId && this.links.writableBytesPending(node) > HIGH_WATER;
  }

  /**
   * Drains the ranks' rings and retries deliveries that were waiting for ring space; true when
   * it found a record.
   */
  poll(): boolean {
    let found = false;
    for (let r = 0; r < this.fromRanks.length; r++) {
      const ring = this.fromRanks[r]!;
      let at: number;
      this.blocked[r] = 0;
      while ((at = ring.peek()) >= 0) {
        if (this.linkFull(ring, at)) {
          this.blocked[r] = 1; // resumed by the link's 'drain'
          break;
        }
        found = true;
        const len = recLen(ring.i32, at >> 2);
        this.fromRank(r, ring, at);
        if (ring.release(len)) wake(this.control, r);
      }
    }
    if (this.toRanks.hasPending) this.toRanks.flush();
    return found;
  }

  /** A record from rank `rank`'s ring, at byte `at`, to its handler. */
  private fromRank(rank: number, ring: Ring, at: number): void {
    const i32 = ring.i32;
    const w = at >> 2;
    const kind = recKind(i32, w);
    switch (kind) {
      case KIND_POST:
      case KIND_SCHED:
      case KIND_COMM: {
        const why = this.offload.onRecord(rank, i32, w);
        if (why !== null) this.log(`nbc: node ${this.placement.nodeId}: refused an offload record of rank ${rank}: ${why}`);
        return;
      }
      case KIND_ACK:
        this.large.ack(ackToken(i32, w));
        return;
      case KIND_PULL:
        this.large.pull(rank, pullId(i32, w), pullNode(i32, w), pullMessage(i32, w), pullBytes(i32, w), pullSender(i32, w), recArrive(i32, w));
        return;
      case KIND_FIN:
        this.offload.peerFinished(finRank(i32, w));
        this.announceFinished(i32.slice(w, w + HEADER_WORDS));
        return;
    }
    const dst = recDst(i32, w);
    const node = this.placement.nodeOfRank[dst]!;
    if (this.links === null || node === this.placement.nodeId) {
      throw new NbcInternalError(`rank ${rank} routed a message for rank ${dst} through the engine`);
    }
    const bytes = msgBytes(i32, w);
    if (kind === KIND_EAGER || kind === KIND_EAGER_CREDIT) {
      if (kind === KIND_EAGER_CREDIT && bytes !== 0) throw new NbcInternalError(`rank ${rank} sent an eager credit record with a payload`);
      // One copy out of the ring into a frame buffer: the ring slot is reused as soon as we
      // release it, while the socket may hold the frame for a while.
      const frame = Buffer.allocUnsafe(HEADER_BYTES + bytes);
      copyAt(ring.u8, at, frame, 0, HEADER_BYTES + bytes);
      this.sendMsg(node, [frame]);
      return;
    }
    if (kind === KIND_RTS) {
      this.large.rts(rank, i32.slice(w, w + HEADER_WORDS), node);
      return;
    }
    throw new NbcInternalError(`engine got record kind ${kind} from rank ${rank}`);
  }

  /** One FRAME_MSG to node `node`'s engine. */
  private sendMsg(node: number, parts: readonly Uint8Array[], onWritten?: () => void): void {
    if (this.links === null) throw new NbcInternalError(`a message addressed node ${node}, but this node has no links`);
    this.links.send(node, FRAME_MSG, parts, onWritten);
    let bytes = 0;
    for (let i = 0; i < parts.length; i++) bytes += parts[i]!.byteLength;
    this.count(bytes);
  }

  /** One offload frame to node `node`'s engine: over UCX where the engine has it, else its link. */
  private sendOffload(node: number, header: Int32Array, payload: Uint8Array, onWritten: () => void): void {
    if (this.ucx !== null) {
      this.ucx.send(node, header, payload, onWritten);
      return;
    }
    if (this.links === null) throw new NbcInternalError('an offloaded schedule addressed another node, but this node has no links');
    this.links.send(node, FRAME_OFFLOAD, [new Uint8Array(header.buffer), payload], () => this.guard(onWritten));
    this.count(OF_BYTES + payload.byteLength);
  }

  /**
   * A rank of this node has returned from its job (its KIND_FIN, behind its last record): every
   * other node hears it behind that rank's last frame to it, and hands it to its ranks
   * (`finishedElsewhere`). Nodes that this one has a link with get it on the link, which keeps
   * order; the others got nothing from the rank, so `relayFinished` (the node's rendezvous
   * client) tells them, without dialling a link at the end of the job.
   */
  private announceFinished(fin: Int32Array): void {
    const links = this.links;
    if (links === null) return;
    const world = finRank(fin, 0);
    if (this.ucx !== null) {
      // The ranks heard it over UCX from the rank itself; the other engines, for their
      // offloaded collectives, hear it here, behind this engine's offload frames to them.
      this.ucx.announceFinished(world, this.nodes, this.placement.nodeId);
      return;
    }
    const unlinked: number[] = [];
    for (let node = 0; node < this.nodes; node++) {
      if (node === this.placement.nodeId) continue;
      if (links.carries(node)) this.sendMsg(node, [new Uint8Array(fin.buffer)]);
      else unlinked.push(node);
    }
    if (unlinked.length > 0) this.relayFinished?.(world, unlinked);
  }

  /**
   * World rank `worldRank`, of another node, has returned from its job, and everything its
   * node sent this one before has been delivered or queued: each rank of this node gets its
   * KIND_FIN behind that (p2p/transport.ts fails what only that rank could complete).
   */
  finishedElsewhere(worldRank: number): void {
    const p = this.placement;
    if (!(worldRank >= 0 && worldRank < p.worldSize) || p.nodeOfRank[worldRank] === p.nodeId) {
      throw new NbcInternalError(`rank ${worldRank} was announced finished to node ${p.nodeId}, which does not expect that rank's word`);
    }
    this.offload.peerFinished(worldRank);
    // As the rank's own FIN (transport.ts announceFinished), to every rank of the node.
    const header = new Int32Array(HEADER_WORDS);
    encodeFin(header, 0, -1, worldRank);
    for (let r = 0; r < this.toRanks.ranks; r++) this.toRanks.deliver(r, header, null);
  }

  /**
   * Stores `value` into a completion word (checked by the caller to lie in `slice`, with the
   * word after it) and wakes endpoint `ep`; its arrival tick goes first, into the word after.
   */
  private completeSlot(ep: number, slice: number, offset: number, value: number, arrive: number): void {
    const words = this.sliceWords[slice]!;
    Atomics.store(words, (offset >> 2) + COMPLETION_ARRIVE, arrive);
    Atomics.store(words, offset >> 2, value);
    wake(this.control, ep);
  }

  /**
   * Carries the offloaded schedules' frames over UCX instead of the TCP links (the UCX
   * transport): `ucx` is this engine's worker, its peers the other nodes' engines by node id.
   */
  useUcx(ucx: UcxPath): void {
    this.ucx = new EngineUcx(ucx, {
      live: () => !this.stopped,
      guard: (fn) => this.guard(fn),
      onFrame: (from, body) => this.onOffloadFrame(from, body),
      count: (bytes) => this.count(bytes),
      worked: () => { this.lastWork = perf.now(); },
    });
    this.ucx.start();
  }

  /** Serves `agg` calls through `node` (runtime/agg-node.ts). */
  useAgg(node: AggNode): void {
    this.agg = node;
  }

  private count(bytes: number): void {
    this.stats.framesSent++;
    this.stats.bytesSent += bytes;
  }

  private received(bytes: number): void {
    this.stats.framesReceived++;
    this.stats.bytesReceived += bytes;
  }

  /** A frame from node `from`'s engine, by frame type. */
  private onFrame(from: number, type: number, body: Buffer): void {
    if (type === FRAME_OFFLOAD) this.onOffloadFrame(from, body);
    else if (type === FRAME_MSG) this.onMessageFrame(from, body);
    else throw new NbcInternalError(`unknown frame type ${type} from node ${from}`);
  }

  /** A message of an offloaded schedule, or (over UCX) a rank's word that it has finished. */
  private onOffloadFrame(from: number, body: Buffer): void {
    const header = readOffloadHeader(body);
    if (header === null) throw new NbcInternalError(`short offload frame (${body.byteLength} bytes) from node ${from}`);
    this.received(body.byteLength);
    const finished = finishedRank(header);
    if (finished >= 0) this.offload.peerFinished(finished);
    else this.offload.onFrame(from, header, body.subarray(OF_BYTES));
  }

  /** A point-to-point message frame (a ring record header and its payload), by record kind. */
  private onMessageFrame(from: number, body: Buffer): void {
    if (body.byteLength < HEADER_BYTES) {
      throw new NbcInternalError(`short frame (${body.byteLength} bytes) from node ${from}`);
    }
    this.received(body.byteLength);
    // The frame body may not be 4-byte aligned: copy the header out.
    const header = new Int32Array(HEADER_WORDS);
    new Uint8Array(header.buffer).set(body.subarray(0, HEADER_BYTES));
    const kind = recKind(header, 0);
    if (kind === KIND_CREDIT) {
      this.large.onCredit(from, header, body.byteLength);
      return;
    }
    if (kind === KIND_FIN) {
      const world = finRank(header, 0);
      if (body.byteLength !== HEADER_BYTES || this.placement.nodeOfRank[world] !== from) {
        throw new NbcInternalError(`malformed FIN frame from node ${from}`);
      }
      this.finishedElsewhere(world);
      return;
    }
    const dst = recDst(header, 0);
    if (!(dst >= 0 && dst < this.placement.worldSize) || this.placement.nodeOfRank[dst] !== this.placement.nodeId) {
      throw new NbcInternalError(`node ${from} sent a message for rank ${dst}, which is not on this node`);
    }
    const local = this.placement.localOfRank[dst]!;
    if (kind === KIND_PULL) this.large.onPull(from, header, body.byteLength);
    else if (kind === KIND_FRAG) this.large.onFragment(from, local, header, body);
    else if (kind === KIND_EAGER || kind === KIND_EAGER_CREDIT || kind === KIND_RTS) this.onForRank(from, local, header, body);
    else throw new NbcInternalError(`unknown message kind ${kind} from node ${from}`);
  }

  /**
   * A message for rank `local` of this node, handed over as it came: an eager message with its
   * payload; a rank's eager credit returned to a sending rank here; an RTS whose payload waits
   * at the sender (the rank pulls it once a receive matches).
   */
  private onForRank(from: number, local: number, header: Int32Array, body: Buffer): void {
    const kind = recKind(header, 0);
    const bytes = msgBytes(header, 0);
    if (kind === KIND_EAGER) {
      if (body.byteLength !== HEADER_BYTES + bytes) {
        throw new NbcInternalError(`frame from node ${from} declares ${bytes} payload bytes but carries ${body.byteLength - HEADER_BYTES}`);
      }
      this.toRanks.deliver(local, header, body.subarray(HEADER_BYTES));
      return;
    }
    if (kind === KIND_EAGER_CREDIT) {
      if (body.byteLength !== HEADER_BYTES || bytes !== 0) throw new NbcInternalError(`malformed eager credit frame from node ${from}`);
    } else if (body.byteLength !== HEADER_BYTES || rtsSlice(header, 0) !== -1 || rtsNode(header, 0) !== from) {
      throw new NbcInternalError(`malformed RTS frame from node ${from}`);
    }
    this.toRanks.deliver(local, header, null);
  }
}
