/**
 * The node engine: the process's main thread acting as the node's network card.
 *
 * It owns the node's TCP links. Ranks hand it messages for other nodes through their
 * (rank -> engine) rings; it forwards them as frames. Frames from other nodes it delivers into
 * the (engine -> rank) rings. A large message crosses TCP as fragments of at most
 * FRAGMENT_BYTES read straight out of the sender's arena slice, reassembled in the receiving
 * engine's slice. Within PUSH_CREDIT_BYTES per node pair they go at once (pushed) and reach
 * the rank as an RTS naming them; the credit returns (KIND_CREDIT) when the rank's ACK frees
 * the room. Past it the message is pulled (shm/layout.ts KIND_PULL): its RTS crosses alone,
 * and only once a receive matches it does the receiving engine reserve room and ask for the
 * fragments. So a receiver that computes holds at most the credit per sending node, and its
 * senders wait (their sends complete when pulled) instead of filling its memory.
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
import { NbcError, NbcInternalError, NbcNoMemError } from '../errors.js';
import {
  align8, endpointWord, H_AUX, H_BYTES, H_CTX, H_DST, H_KIND, H_LEN, H_OFFSET, H_SLICE, H_SRC, H_SRC_WORLD, H_TAG, H_TOKEN, HEADER_BYTES,
  HEADER_WORDS, kDoorbell, kFinished, KIND_ACK, KIND_COMM, KIND_CREDIT, KIND_DATA, KIND_EAGER, KIND_EAGER_CREDIT, KIND_FIN, KIND_FRAG, KIND_POST,
  KIND_PULL, KIND_RTS, KIND_SCHED, kSleeping,
} from '../shm/layout.js';
import {
  COMM_RELEASE, decodePost, DONE_ERROR, OF_BYTES, OF_DST, OF_SRC, OF_WORDS, OffloadEngine, POST_TWO_LEVEL_WORDS, POST_WORDS,
} from '../sched/offload.js';
import type { UcxPath } from '../p2p/ucx.js';
import { AggNode } from './agg-node.js';
import { decodeSchedule } from '../sched/wire.js';
import { interNodeSchedule } from '../coll/select.js';
import type { CoreConfig } from '../config.js';
import { allocationBytes, SliceAllocator } from '../shm/arena.js';
import { ringOffset, waitWatcher, wake, type NodeShared } from '../shm/node-shared.js';
import { Ring } from '../shm/ring.js';
import type { Placement } from '../p2p/transport.js';
import { copyAt, copyBytes } from '../shm/copy.js';

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
/** Frame type of a message of an offloaded schedule (sched/offload.ts header + payload). */
export const FRAME_OFFLOAD = 2;
/** Largest fragment of a large message on the wire. */
export const FRAGMENT_BYTES = 1 << 20;
/**
 * Bytes of large messages a sending engine may push to one other node before the receiver has
 * taken them (at most an eighth of the arena slice per node): within it a large message costs
 * no round trip more than before the pull protocol; past it the receiver pulls, so a receiver
 * that does not take its messages holds at most this much per sending node in its arena.
 */
export const PUSH_CREDIT_BYTES = 8 << 20;
/**
 * What a pushed message costs the push credit: its room in the receiving arena, plus what the
 * receiving rank keeps of it while no receive takes it (its RTS record, ~200 bytes of heap),
 * so that many tiny pushed payloads (small sends that ran out of eager credit) are bounded in
 * number as well as in bytes.
 */
function pushCost(bytes: number): number {
  return allocationBytes(bytes) + PUSH_MESSAGE_COST;
}
export const PUSH_MESSAGE_COST = 256;
/** H_AUX of a fragment pushed within the sender's credit (not pulled). */
const PUSHED = 1;

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

/**
 * Back-pressure, both ways. A link holding more than HIGH_WATER unsent bytes stops the engine
 * from draining the rings of ranks that send to it (their rings fill and their sends queue in
 * the rank, by reference); deliveries waiting for room in rank rings beyond HIGH_WATER pause
 * reading from every link until they fall below LOW_WATER (TCP then holds senders back).
 */
export const HIGH_WATER = 16 << 20;
export const LOW_WATER = 4 << 20;

/**
 * What a record waiting in `pending` costs besides its payload, counted against HIGH_WATER: its
 * header, the two typed arrays and their backing stores, the queue entry. Measured: 10^5 queued
 * 64-byte records held ~1.3 KB each (the slow-receiver load scenario, test/load.test.ts).
 * Counting payload bytes alone let 260,000 small records (~400 MB) queue before reading paused,
 * and a stream of empty messages would never have paused it.
 */
export const PENDING_RECORD_COST = 1024;

/** Bytes a pending record counts for against HIGH_WATER. */
const pendingCost = (payload: Uint8Array | null): number => PENDING_RECORD_COST + (payload === null ? 0 : payload.byteLength);

export interface EngineStats {
  framesSent: number;
  framesReceived: number;
  bytesSent: number;
  bytesReceived: number;
}

/** A payload arriving in the engine's slice: pulled for a matched receive, or pushed. */
interface Reassembly {
  rank: number;
  /** The rank's pull id (its DATA record's H_AUX); -1: pushed, handed over as an RTS. */
  pull: number;
  header: Int32Array | null;
  bytes: number;
  offset: number;
  received: number;
}

/** A rank's pull waiting for room in the engine's slice. */
interface WaitingPull {
  rank: number;
  pull: number;
  node: number;
  id: number;
  bytes: number;
  srcWorld: number;
}

/** An RTS sent to another node whose payload waits in the sending rank's slice until pulled. */
interface Outgoing {
  rank: number;
  /** The rank's RTS header (H_DST: the receiver), the template of the fragments. */
  header: Int32Array;
  node: number;
}

/** A record waiting for room in an (engine -> rank) ring. */
interface Pending {
  header: Int32Array;
  payload: Uint8Array | null;
}

export class Engine {
  readonly ep: number;
  readonly control: Int32Array;
  readonly slices: Buffer[];
  readonly allocator: SliceAllocator;
  readonly stats: EngineStats = { framesSent: 0, framesReceived: 0, bytesSent: 0, bytesReceived: 0 };
  private readonly fromRanks: Ring[] = [];
  private readonly toRanks: Ring[] = [];
  private readonly pending: Pending[][] = [];
  private pendingCount = 0;
  /** What the records waiting in `pending` cost (pendingCost), in bytes. */
  private pendingBytes = 0;
  private readingPaused = false;
  /** Per rank: 1 while draining its ring waits for a link to drain. */
  private readonly blocked: Uint8Array;
  /** Payloads arriving (pulled or pushed) by `${sender node}:${message id}`; pulls waiting for arena room, in order. */
  private readonly reassembly = new Map<string, Reassembly>();
  private readonly waitingPulls: WaitingPull[] = [];
  /** Sent RTSs whose payload waits for the receiving node's PULL, by message id. */
  private readonly outgoing = new Map<number, Outgoing>();
  /** Engine-held payloads waiting for the rank's ACK: token -> slice offset, and the node owed credit for it (-1: none). */
  private readonly held = new Map<number, { offset: number; bytes: number; creditTo: number }>();
  /** Push credit left towards each node (PUSH_CREDIT_BYTES at most). */
  private readonly pushCredit: number[] = [];
  private readonly pushCreditMax: number;
  private nextToken = 1;
  private nextMessageId = 1;
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
  /** With the UCX transport: this engine's UCP worker, peers indexed by node id (useUcx). */
  private ucx: UcxPath | null = null;
  private ucxPumping = false;
  /**
   * Where a finished rank's word goes for nodes without a link to this one (node-main.ts: a
   * rendezvous broadcast, whose receivers call `finishedElsewhere`); null where there is none.
   */
  relayFinished: ((worldRank: number, nodes: number[]) => void) | null = null;

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
    this.slices = shared.slices.map((s) => Buffer.from(s));
    this.allocator = new SliceAllocator(shared.layout.sliceBytes);
    const nodes = placement.nodeOfRank.reduce((m, n) => Math.max(m, n + 1), 1);
    this.pushCreditMax = Math.min(PUSH_CREDIT_BYTES, Math.floor(shared.layout.sliceBytes / 8 / nodes));
    for (let n = 0; n < nodes; n++) this.pushCredit.push(this.pushCreditMax);
    for (let r = 0; r < ranks; r++) {
      this.fromRanks.push(new Ring(shared.rings, ringOffset(shared, r, this.ep), ringBytes, r, this.ep));
      this.toRanks.push(new Ring(shared.rings, ringOffset(shared, this.ep, r), ringBytes, this.ep, r));
      this.pending.push([]);
    }
    this.sleepIdx = endpointWord(this.ep, kSleeping);
    this.doorbellIdx = endpointWord(this.ep, kDoorbell);
    links?.on('frame', (from, type, body) => {
      if (this.spinUs > 0) this.lastWork = performance.now();
      this.guard(() => this.onFrame(from, type, body));
    });
    this.blocked = new Uint8Array(ranks);
    links?.on('drain', () => {
      if (this.blocked.includes(1)) this.guard(() => this.poll());
    });
    const u8 = shared.slices.map((sl) => new Uint8Array(sl));
    this.sliceWords = shared.slices.map((sl) => new Int32Array(sl));
    this.offload = new OffloadEngine({
      nodeId: placement.nodeId,
      nodeOfRank: placement.nodeOfRank,
      slices: u8,
      sendFrame: (node, header, payload, onWritten) => {
        if (this.ucx !== null) {
          this.sendUcx(node, header, payload, onWritten);
          return;
        }
        if (this.links === null) throw new NbcInternalError('an offloaded schedule addressed another node, but this node has no links');
        this.links.send(node, FRAME_OFFLOAD, [new Uint8Array(header.buffer), payload], () => this.guard(onWritten));
        this.count(OF_BYTES + payload.byteLength);
      },
      interNode: (coll, s) => interNodeSchedule(coll, s, config),
      complete: (ep, slice, offset, value) => this.completeSlot(ep, slice, offset, value),
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
    if (this.spinUs > 0 && (performance.now() - this.lastWork) * 1000 < this.spinUs &&
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
        if (this.poll() && this.spinUs > 0) this.lastWork = performance.now();
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
      if (this.drainUcx() || ranks) this.lastWork = performance.now();
    });
    this.arm();
  };


  private hasWork(): boolean {
    if (this.pendingCount > 0) return true;
    // A blocked ring's records wait for the link's 'drain', which polls again.
    for (let r = 0; r < this.fromRanks.length; r++) if (this.blocked[r] === 0 && this.fromRanks[r]!.hasData()) return true;
    return false;
  }

  /** True when the record at `at` goes to a node whose link already holds HIGH_WATER bytes. */
  private linkFull(ring: Ring, at: number): boolean {
    if (this.links === null) return false;
    const w = at >> 2;
    const kind = ring.i32[w + H_KIND]!;
    if (kind !== KIND_EAGER && kind !== KIND_RTS) return false;
    const node = this.placement.nodeOfRank[ring.i32[w + H_DST]!]!;
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
        const len = ring.i32[(at >> 2) + H_LEN]!;
        this.fromRank(r, ring, at);
        if (ring.release(len)) wake(this.control, r);
      }
    }
    if (this.pendingCount > 0) this.flushPending();
    return found;
  }

  private fromRank(rank: number, ring: Ring, at: number): void {
    const i32 = ring.i32;
    const w = at >> 2;
    const kind = i32[w + H_KIND]!;
    if (kind === KIND_POST || kind === KIND_SCHED || kind === KIND_COMM) {
      this.offloadRecord(rank, i32, w);
      return;
    }
    if (kind === KIND_ACK) {
      const token = i32[w + H_TOKEN]!;
      const h = this.held.get(token);
      if (h === undefined) throw new NbcInternalError(`engine got ACK for unknown token ${token}`);
      this.held.delete(token);
      this.allocator.free(h.offset);
      if (h.creditTo >= 0) this.returnCredit(h.creditTo, pushCost(h.bytes));
      if (this.waitingPulls.length > 0) this.startWaitingPulls();
      return;
    }
    if (kind === KIND_PULL) {
      this.pull(rank, i32[w + H_SLICE]!, i32[w + H_OFFSET]!, i32[w + H_TOKEN]!, i32[w + H_BYTES]!, i32[w + H_DST]!);
      return;
    }
    if (kind === KIND_FIN) {
      this.offload.peerFinished(i32[w + H_SRC_WORLD]!);
      this.announceFinished(i32.slice(w, w + HEADER_WORDS));
      return;
    }
    const dst = i32[w + H_DST]!;
    const node = this.placement.nodeOfRank[dst]!;
    if (this.links === null || node === this.placement.nodeId) {
      throw new NbcInternalError(`rank ${rank} routed a message for rank ${dst} through the engine`);
    }
    const bytes = i32[w + H_BYTES]!;
    if (kind === KIND_EAGER || kind === KIND_EAGER_CREDIT) {
      if (kind === KIND_EAGER_CREDIT && bytes !== 0) throw new NbcInternalError(`rank ${rank} sent an eager credit record with a payload`);
      // One copy out of the ring into a frame buffer: the ring slot is reused as soon as we
      // release it, while the socket may hold the frame for a while.
      const frame = Buffer.allocUnsafe(HEADER_BYTES + bytes);
      copyAt(ring.u8, at, frame, 0, HEADER_BYTES + bytes);
      this.links.send(node, FRAME_MSG, [frame]);
      this.count(HEADER_BYTES + bytes);
      return;
    }
    if (kind === KIND_RTS) {
      // Within credit the fragments go now; else the RTS crosses alone and the payload stays in
      // the rank's slice until the receiving node pulls it (onFrame, KIND_PULL). Either way the
      // rank's send completes once the socket has taken the last fragment.
      const id = this.nextMessageId++;
      const out = { rank, header: i32.slice(w, w + HEADER_WORDS), node };
      const room = pushCost(bytes);
      if (room <= this.pushCredit[node]!) {
        // Within credit: push it now, as if pulled at once.
        this.pushCredit[node]! -= room;
        this.stream(id, out, PUSHED);
        return;
      }
      this.outgoing.set(id, out);
      const header = new Int32Array(out.header);
      header[H_TOKEN] = id;
      header[H_SLICE] = -1;
      header[H_OFFSET] = this.placement.nodeId;
      header[H_LEN] = HEADER_BYTES;
      this.links.send(node, FRAME_MSG, [new Uint8Array(header.buffer)]);
      this.count(HEADER_BYTES);
      return;
    }
    throw new NbcInternalError(`engine got record kind ${kind} from rank ${rank}`);
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
    const world = fin[H_SRC_WORLD]!;
    if (this.ucx !== null) {
      // The ranks heard it over UCX from the rank itself; the other engines, for their
      // offloaded collectives, hear it here, behind this engine's offload frames to them.
      // Sent at the end of the job, maybe as a node exits: a failed send is no news (a lost
      // node is reported by its links and the rendezvous).
      const h = new Int32Array(OF_WORDS);
      h[OF_DST] = -1;
      h[OF_SRC] = world;
      const msg = new Uint8Array(h.buffer);
      for (let node = 0; node < this.pushCredit.length; node++) {
        if (node !== this.placement.nodeId) this.ucx.sendMessage(node, msg, () => {});
      }
      this.schedulePump();
      return;
    }
    const unlinked: number[] = [];
    // pushCredit has one entry per node.
    for (let node = 0; node < this.pushCredit.length; node++) {
      if (node === this.placement.nodeId) continue;
      if (links.carries(node)) links.send(node, FRAME_MSG, [new Uint8Array(fin.buffer)]);
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
    // As the rank's own FIN (transport.ts announceFinished): no context, source or tag.
    const header = new Int32Array(HEADER_WORDS).fill(-1);
    header[H_KIND] = KIND_FIN;
    header[H_LEN] = HEADER_BYTES;
    header[H_BYTES] = 0;
    header[H_SRC_WORLD] = worldRank;
    for (let r = 0; r < this.toRanks.length; r++) this.deliver(r, header, null);
  }

  /**
   * A rank's offload record (KIND_POST, KIND_SCHED, KIND_COMM; sched/offload-client.ts writes
   * them). Nothing in it is trusted: a schedule that does not decode, a communicator naming
   * ranks that do not exist, a post whose regions lie outside the arena or that the schedule
   * overruns, all complete the post with DONE_ERROR (the rank's collective fails with an
   * NbcError) and log one line naming the reason; the engine goes on. Only a completion word
   * outside the rank's arena slice, which leaves no way to answer, fails the node.
   */
  private offloadRecord(rank: number, i32: Int32Array, w: number): void {
    const kind = i32[w + H_KIND]!;
    if (kind === KIND_POST) {
      const slot = i32[w + H_SLICE]!;
      const slotOffset = i32[w + H_OFFSET]!;
      const slotBytes = this.slices[slot]?.byteLength ?? 0;
      if (slot !== rank || slotOffset < 0 || slotOffset % 4 !== 0 || slotOffset + 4 > slotBytes) {
        throw new NbcInternalError(`rank ${rank} posted an offloaded collective whose completion word (slice ${slot}, ` +
          `offset ${slotOffset}) is not in its own arena slice of ${this.slices[rank]!.byteLength} bytes`);
      }
      // Schedule id 0: a two-level post, with its call after the regions (sched/offload.ts, decodePost).
      const twoLevel = i32[w + H_DST] === 0;
      const need = (twoLevel ? POST_TWO_LEVEL_WORDS : POST_WORDS) * 4;
      if (i32[w + H_BYTES]! < need || HEADER_BYTES + i32[w + H_BYTES]! > i32[w + H_LEN]!) {
        this.completeSlot(rank, slot, slotOffset, DONE_ERROR);
        this.refused(rank, `its post record declares ${i32[w + H_BYTES]} bytes of arguments in a ${
          i32[w + H_LEN]}-byte record; expected ${need}`);
        return;
      }
      const p = decodePost(i32, w + HEADER_WORDS, twoLevel);
      const why = p.call !== null
        ? this.offload.postTwoLevel(rank, i32[w + H_CTX]!, i32[w + H_SRC]!, i32[w + H_TAG]!, p.send, p.recv, p.call, slot, slotOffset)
        : this.offload.post(rank, i32[w + H_DST]!, i32[w + H_CTX]!, i32[w + H_SRC]!, i32[w + H_TAG]!, p.send, p.recv, p.tmp, slot, slotOffset);
      if (why !== null) this.refused(rank, why);
      return;
    }
    const bytes = i32[w + H_BYTES]!;
    if (bytes < 0 || bytes % 4 !== 0 || HEADER_BYTES + bytes > i32[w + H_LEN]!) {
      const what = kind === KIND_SCHED ? `schedule ${i32[w + H_DST]}` : `communicator ${i32[w + H_CTX]}`;
      const why = `its ${what} record declares ${bytes} bytes in a ${i32[w + H_LEN]}-byte record`;
      if (kind === KIND_SCHED) this.offload.refuseSchedule(rank, i32[w + H_DST]!, why);
      else this.offload.refuseComm(rank, i32[w + H_CTX]!, why);
      this.refused(rank, why);
      return;
    }
    const words = i32.slice(w + HEADER_WORDS, w + HEADER_WORDS + (bytes >> 2));
    try {
      if (kind === KIND_SCHED) {
        const id = i32[w + H_DST]!;
        try {
          this.offload.registerSchedule(rank, id, decodeSchedule(words));
        } catch (err) {
          this.offload.refuseSchedule(rank, id, (err as Error).message);
          throw err;
        }
      } else if (i32[w + H_TAG] === COMM_RELEASE && words.length === 0) {
        this.offload.releaseComm(rank, i32[w + H_CTX]!);
      } else {
        this.offload.registerComm(rank, i32[w + H_CTX]!, words);
      }
    } catch (err) {
      if (!(err instanceof NbcError)) throw err;
      this.refused(rank, err.message);
    }
  }

  /** Stores `value` into a completion word (checked by the caller to lie in `slice`) and wakes endpoint `ep`. */
  private completeSlot(ep: number, slice: number, offset: number, value: number): void {
    Atomics.store(this.sliceWords[slice]!, offset >> 2, value);
    wake(this.control, ep);
  }

  /** One line per refused offload record; the rank's post completes with DONE_ERROR. */
  private refused(rank: number, why: string): void {
    this.log(`nbc: node ${this.placement.nodeId}: refused an offload record of rank ${rank}: ${why}`);
  }

  /**
   * Carries the offloaded schedules' frames over UCX instead of the TCP links (the UCX
   * transport): `ucx` is this engine's worker, its peers the other nodes' engines by node id.
   * Its progress runs on this thread's event loop: woken by the worker's event fd, and kept
   * turning while sends are in flight.
   */
  useUcx(ucx: UcxPath): void {
    this.ucx = ucx;
    this.pumpUcx();
  }

  /** Serves `agg` calls through `node` (runtime/agg-node.ts). */
  useAgg(node: AggNode): void {
    this.agg = node;
  }

  /** One frame: header and payload copied into one message, so the payload's region is free at once. */
  private sendUcx(node: number, header: Int32Array, payload: Uint8Array, onWritten: () => void): void {
    const msg = new Uint8Array(OF_BYTES + payload.byteLength);
    msg.set(new Uint8Array(header.buffer, header.byteOffset, OF_BYTES));
    msg.set(payload, OF_BYTES);
    this.ucx!.sendMessage(node, msg, (err) => {
      if (err !== null) this.guard(() => { throw err; });
    });
    this.count(msg.byteLength);
    queueMicrotask(() => this.guard(onWritten));
    this.schedulePump();
  }

  private schedulePump(): void {
    if (this.ucxPumping) return;
    this.ucxPumping = true;
    setImmediate(() => {
      this.ucxPumping = false;
      this.pumpUcx();
    });
  }

  /** Receives every frame UCX has, then sleeps on the worker's events (or turns again while sends are in flight). */
  private pumpUcx(): void {
    const ucx = this.ucx;
    if (ucx === null || this.stopped) return;
    this.guard(() => {
      if (this.drainUcx()) this.lastWork = performance.now();
    });
    if (this.stopped) return;
    if (ucx.busy) {
      this.schedulePump();
      return;
    }
    ucx.watch(() => this.pumpUcx());
    // The worker's event fd does not report every UCX event (seen on tcp with three engines
    // exchanging rendezvous frames), so look again after a pause that starts at 1 ms after
    // activity and doubles while nothing arrives, up to 100 ms.
    const delay = ucx.idleDelayMs();
    setTimeout(() => this.schedulePump(), delay).unref();
  }

  /** Hands every frame the UCX worker has to onFrame; true when there was one. */
  private drainUcx(): boolean {
    const ucx = this.ucx;
    if (ucx === null) return false;
    let found = false;
    // One progress of the worker, then the frames it brought without another (ucx.ts, poll).
    let len = ucx.poll();
    while (len >= 0) {
      found = true;
      // a copy: the offload engine may keep an unexpected frame's body until its receive
      this.onFrame(ucx.lastSender, FRAME_OFFLOAD, Buffer.from(ucx.inbox.subarray(0, len)));
      len = ucx.poll(false);
    }
    return found;
  }

  private count(bytes: number): void {
    this.stats.framesSent++;
    this.stats.bytesSent += bytes;
  }

  private onFrame(from: number, type: number, body: Buffer): void {
    if (type === FRAME_OFFLOAD) {
      if (body.byteLength < OF_BYTES) throw new NbcInternalError(`short offload frame (${body.byteLength} bytes) from node ${from}`);
      const header = new Int32Array(OF_WORDS);
      new Uint8Array(header.buffer).set(body.subarray(0, OF_BYTES));
      this.stats.framesReceived++;
      this.stats.bytesReceived += body.byteLength;
      if (header[OF_DST] === -1) {
        // A rank of node `from` has finished (announceFinished, over UCX).
        this.offload.peerFinished(header[OF_SRC]!);
        return;
      }
      this.offload.onFrame(from, header, body.subarray(OF_BYTES));
      return;
    }
    if (type !== FRAME_MSG) throw new NbcInternalError(`unknown frame type ${type} from node ${from}`);
    if (body.byteLength < HEADER_BYTES) {
      throw new NbcInternalError(`short frame (${body.byteLength} bytes) from node ${from}`);
    }
    this.stats.framesReceived++;
    this.stats.bytesReceived += body.byteLength;
    // The frame body may not be 4-byte aligned: copy the header out.
    const header = new Int32Array(HEADER_WORDS);
    new Uint8Array(header.buffer).set(body.subarray(0, HEADER_BYTES));
    if (header[H_KIND] === KIND_CREDIT) {
      const n = header[H_BYTES]!;
      if (!(n > 0) || body.byteLength !== HEADER_BYTES || !(from >= 0 && from < this.pushCredit.length)) throw new NbcInternalError(`malformed credit frame from node ${from}`);
      this.pushCredit[from] = Math.min(this.pushCreditMax, this.pushCredit[from]! + n);
      return;
    }
    if (header[H_KIND] === KIND_FIN) {
      const world = header[H_SRC_WORLD]!;
      if (body.byteLength !== HEADER_BYTES || this.placement.nodeOfRank[world] !== from) {
        throw new NbcInternalError(`malformed FIN frame from node ${from}`);
      }
      this.finishedElsewhere(world);
      return;
    }
    const dst = header[H_DST]!;
    if (!(dst >= 0 && dst < this.placement.worldSize) || this.placement.nodeOfRank[dst] !== this.placement.nodeId) {
      throw new NbcInternalError(`node ${from} sent a message for rank ${dst}, which is not on this node`);
    }
    const local = this.placement.localOfRank[dst]!;
    const bytes = header[H_BYTES]!;
    const kind = header[H_KIND]!;
    if (kind === KIND_EAGER) {
      if (body.byteLength !== HEADER_BYTES + bytes) {
        throw new NbcInternalError(`frame from node ${from} declares ${bytes} payload bytes but carries ${body.byteLength - HEADER_BYTES}`);
      }
      this.deliver(local, header, body.subarray(HEADER_BYTES));
      return;
    }
    if (kind === KIND_EAGER_CREDIT) {
      // A receiving rank gives a sending rank of this node its eager credit back.
      if (body.byteLength !== HEADER_BYTES || bytes !== 0) throw new NbcInternalError(`malformed eager credit frame from node ${from}`);
      this.deliver(local, header, null);
      return;
    }
    if (kind === KIND_RTS) {
      // The payload waits at the sender: the rank pulls it once a receive matches.
      if (body.byteLength !== HEADER_BYTES || header[H_SLICE] !== -1 || header[H_OFFSET] !== from) {
        throw new NbcInternalError(`malformed RTS frame from node ${from}`);
      }
      this.deliver(local, header, null);
      return;
    }
    if (kind === KIND_PULL) {
      // `dst` is the sending rank, on this node: stream its payload to the puller's node.
      const id = header[H_TOKEN]!;
      const out = this.outgoing.get(id);
      if (out === undefined || out.node !== from || body.byteLength !== HEADER_BYTES) {
        throw new NbcInternalError(`node ${from} pulled message ${id}, which this node did not offer it`);
      }
      this.outgoing.delete(id);
      this.stream(id, out);
      return;
    }
    if (kind === KIND_FRAG) {
      const key = `${from}:${header[H_TOKEN]}`;
      const fragOffset = header[H_OFFSET]!;
      const n = body.byteLength - HEADER_BYTES;
      let r = this.reassembly.get(key);
      if (r === undefined && header[H_AUX] === PUSHED && fragOffset === 0 && bytes >= 0) {
        // Pushed within the sender's credit: room was promised, so no room is a fatal error.
        const off = this.allocator.alloc(bytes);
        if (off < 0) {
          throw new NbcNoMemError(
            `Cannot receive a ${bytes}-byte message for rank ${dst} from node ${from}: the engine's arena slice has ` +
            `${this.allocator.available} bytes free; expected a larger NBC_ARENA_MB`);
        }
        r = { rank: local, pull: -1, header, bytes, offset: off, received: 0 };
        this.reassembly.set(key, r);
      }
      if (r === undefined) throw new NbcInternalError(`fragment at ${fragOffset} of a message from node ${from} that nobody pulled`);
      if (fragOffset !== r.received || r.received + n > r.bytes || bytes !== r.bytes || local !== r.rank) {
        throw new NbcInternalError(`out-of-order or mismatched fragment from node ${from}`);
      }
      copyAt(body, HEADER_BYTES, this.slices[this.ep]!, r.offset + fragOffset, n);
      r.received += n;
      if (r.received === r.bytes) {
        // Pushed: handed to the rank as an RTS naming it, whose ACK returns the credit.
        // Pulled: handed over as the DATA the rank's pull waits for.
        this.reassembly.delete(key);
        const token = this.nextToken++;
        const record = r.header ?? new Int32Array(HEADER_WORDS);
        record[H_KIND] = r.header !== null ? KIND_RTS : KIND_DATA;
        record[H_BYTES] = r.bytes;
        record[H_SLICE] = this.ep;
        record[H_OFFSET] = r.offset;
        record[H_TOKEN] = token;
        record[H_AUX] = r.header !== null ? 0 : r.pull;
        this.held.set(token, { offset: r.offset, bytes: r.bytes, creditTo: r.header !== null ? from : -1 });
        this.deliver(r.rank, record, null);
      }
      return;
    }
    throw new NbcInternalError(`unknown message kind ${kind} from node ${from}`);
  }

  /**
   * Rank `rank` of this node matched a receive to message `id` of node `node` (`bytes` long,
   * from world rank `srcWorld`): reserve room for it in this engine's slice and ask for it, or
   * wait, in order, for room that ACKs free. A payload larger than the whole slice never fits.
   */
  private pull(rank: number, pull: number, node: number, id: number, bytes: number, srcWorld: number): void {
    const p = this.placement;
    if (!(srcWorld >= 0 && srcWorld < p.worldSize) || p.nodeOfRank[srcWorld] !== node || node === p.nodeId || !(bytes >= 0)) {
      throw new NbcInternalError(`rank ${rank} of node ${p.nodeId} pulled message ${id} of node ${node} (rank ${srcWorld}, ${bytes} bytes), which no node offered`);
    }
    if (bytes > this.allocator.size) {
      throw new NbcNoMemError(
        `Cannot receive a ${bytes}-byte message from rank ${srcWorld} on node ${p.nodeId}: the engine's arena slice holds ` +
        `${this.allocator.size} bytes in all; expected a larger NBC_ARENA_MB`);
    }
    const w: WaitingPull = { rank, pull, node, id, bytes, srcWorld };
    if (this.waitingPulls.length > 0 || !this.startPull(w)) this.waitingPulls.push(w);
  }

  private startPull(w: WaitingPull): boolean {
    const off = this.allocator.alloc(w.bytes);
    if (off < 0) return false;
    this.reassembly.set(`${w.node}:${w.id}`, { rank: w.rank, pull: w.pull, header: null, bytes: w.bytes, offset: off, received: 0 });
    const header = new Int32Array(HEADER_WORDS);
    header[H_KIND] = KIND_PULL;
    header[H_LEN] = HEADER_BYTES;
    header[H_DST] = w.srcWorld;
    header[H_TOKEN] = w.id;
    header[H_BYTES] = w.bytes;
    this.links!.send(w.node, FRAME_MSG, [new Uint8Array(header.buffer)]);
    this.count(HEADER_BYTES);
    return true;
  }

  private startWaitingPulls(): void {
    const q = this.waitingPulls;
    let n = 0;
    while (n < q.length && this.startPull(q[n]!)) n++;
    if (n > 0) q.splice(0, n);
  }

  /**
   * Streams a pulled payload: fragments are views of the sending rank's slice (no copy), which
   * stays untouched until the rank's ACK, sent once the socket has taken the last fragment.
   */
  private stream(id: number, out: Outgoing, aux = 0): void {
    const rts = out.header;
    const bytes = rts[H_BYTES]!;
    const slice = rts[H_SLICE]!;
    const offset = rts[H_OFFSET]!;
    const token = rts[H_TOKEN]!;
    const template = new Int32Array(rts);
    template[H_KIND] = KIND_FRAG;
    template[H_TOKEN] = id;
    template[H_AUX] = aux;
    const data = this.slices[slice]!;
    // At least one fragment: an empty message (a small send without eager credit) is one too.
    for (let done = 0; done < bytes || done === 0; done += FRAGMENT_BYTES) {
      const n = Math.min(FRAGMENT_BYTES, bytes - done);
      const header = new Int32Array(template);
      header[H_OFFSET] = done;
      header[H_LEN] = HEADER_BYTES + n;
      const last = done + n >= bytes;
      const body = data.subarray(offset + done, offset + done + n);
      this.links!.send(out.node, FRAME_MSG, [new Uint8Array(header.buffer), body],
        last ? () => this.guard(() => this.deliverAck(out.rank, token, slice)) : undefined);
      this.count(HEADER_BYTES + n);
    }
  }

  /** Gives `bytes` of push credit back to `node` (a pushed payload's room was freed). */
  private returnCredit(node: number, bytes: number): void {
    const header = new Int32Array(HEADER_WORDS);
    header[H_KIND] = KIND_CREDIT;
    header[H_LEN] = HEADER_BYTES;
    header[H_BYTES] = bytes;
    header[H_DST] = -1;
    this.links?.send(node, FRAME_MSG, [new Uint8Array(header.buffer)]);
    this.count(HEADER_BYTES);
  }

  private deliverAck(rank: number, token: number, slice: number): void {
    const header = new Int32Array(HEADER_WORDS);
    header[H_KIND] = KIND_ACK;
    header[H_TOKEN] = token;
    header[H_SLICE] = slice;
    this.deliver(rank, header, null);
  }

  /** Writes a record into the rank's ring, or queues it (in order) when the ring is full. */
  private deliver(rank: number, header: Int32Array, payload: Uint8Array | null): void {
    // A rank that has returned from its job reads nothing more (shm/layout.ts kFinished).
    if (this.finished(rank)) return;
    const q = this.pending[rank]!;
    if (q.length === 0 && this.write(rank, header, payload)) return;
    // Keep a private copy: the frame buffer may be reused by the decoder.
    q.push({ header, payload: payload === null ? null : new Uint8Array(payload) });
    this.pendingCount++;
    this.pendingBytes += pendingCost(payload);
    if (this.pendingBytes > HIGH_WATER && !this.readingPaused && this.links !== null) {
      this.readingPaused = true;
      this.links.pauseReading();
    }
    this.arm();
  }

  private write(rank: number, header: Int32Array, payload: Uint8Array | null): boolean {
    const ring = this.toRanks[rank]!;
    const n = payload === null ? 0 : payload.byteLength;
    const len = align8(HEADER_BYTES + n);
    const at = ring.reserve(len);
    if (at < 0) return false;
    const w = at >> 2;
    ring.i32.set(header, w);
    ring.i32[w + H_LEN] = len;
    if (payload !== null && n > 0) copyBytes(payload, ring.u8, at + HEADER_BYTES, n);
    ring.publish(len);
    wake(this.control, rank);
    return true;
  }

  private finished(rank: number): boolean {
    return Atomics.load(this.control, endpointWord(rank, kFinished)) === 1;
  }

  private flushPending(): void {
    for (let r = 0; r < this.pending.length; r++) {
      const q = this.pending[r]!;
      if (q.length > 0 && this.finished(r)) {
        for (const p of q) this.pendingBytes -= pendingCost(p.payload);
        this.pendingCount -= q.length;
        q.length = 0;
        continue;
      }
      let n = 0;
      while (n < q.length && this.write(r, q[n]!.header, q[n]!.payload)) {
        this.pendingBytes -= pendingCost(q[n]!.payload);
        n++;
      }
      if (n > 0) {
        q.splice(0, n);
        this.pendingCount -= n;
      }
    }
    if (this.readingPaused && this.pendingBytes < LOW_WATER) {
      this.readingPaused = false;
      this.links?.resumeReading();
    }
  }
}
