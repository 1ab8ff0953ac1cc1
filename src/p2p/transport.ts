/**
 * The rank side of point-to-point messaging: one instance per rank worker, a facade over
 *
 *   match.ts      the match core: posted receives and unexpected messages per context,
 *                 wildcards, non-overtaking order, finished peers
 *   path-ring.ts  the ring path: this node's ranks, and other nodes through the engine (TCP)
 *   path-ucx.ts   the UCX path: other nodes straight from this rank's UCP worker
 *   credit.ts     eager credit (back-pressure toward each receiver)
 *   wait.ts       spin, yield, park: every blocking wait
 *
 * Each peer has one path (`paths`, by world rank); sends go to it, and every path feeds the
 * one match core, so ANY_SOURCE and probe see messages of both paths, and this class never
 * asks which path a message came by. Each (source -> destination) pair has one FIFO path,
 * so messages from one source on one communicator are never overtaken.
 *
 * A rank that returns from its job says so (KIND_FIN, `announceFinished`) on every path it
 * sent on, behind its last message: from then on, a receive only it could match, or a send
 * only it could take, fails with NBC_ERR_PEER_FAILED instead of waiting for ever.
 */
import { NbcInternalError, NbcPeerFailedError } from '../errors.js';
import { SliceAllocator } from '../shm/arena.js';
import { copyAt } from '../shm/copy.js';
import type { HostBoard } from '../shm/host-board.js';
import { boardBase, BOARDS, controlBytes, endpointWord, HEADER_BYTES, HEADER_WORDS, kAbortWord, kFinished, kWakeFd } from '../shm/layout.js';
import { adoptSliceMemories, type NodeShared } from '../shm/node-shared.js';
import { encodeFin } from '../shm/record.js';
import { REPORTED_ELSEWHERE } from './constants.js';
import { EAGER_CREDIT_BYTES, EagerCredit } from './credit.js';
import { MatchCore } from './match.js';
import {
  invalidData, lengthMismatch, receiverFinished, RecvRequest, senderFinished, SendRequest, traceMessage,
  type MessageTrace, type Placement, type TransportStats,
} from './messages.js';
import type { Path, PathHost } from './path.js';
import { RingPath } from './path-ring.js';
import { UcxRoute } from './path-ucx.js';
import { Request, type Progressor, type Status } from './request.js';
import type { UcxPath } from './ucx.js';
import { NOT_DONE, Waiter, type ParkHost, type Waitable } from './wait.js';
import { Wire, type WireModel } from './wire.js';

export { EAGER_CREDIT_BYTES, EAGER_MESSAGE_COST } from './credit.js';
export { RecvRequest, SendRequest } from './messages.js';
export type { MessageTrace, Placement, TransportStats } from './messages.js';

export interface TransportOptions {
  /** Largest payload sent inline; larger messages use rendezvous. */
  eagerLimit?: number;
  /** Spin this long (us) before parking in a blocking wait. */
  spinUs?: number;
  /**
   * sched_yield (the native addon's), given where this host runs more ranks than cores: after
   * spinning, a waiting rank hands its core over between polls for `yieldUs` before it parks,
   * so the rank it waits for runs at once instead of after a futex round trip (Open MPI's
   * mpi_yield_when_idle). Null: no yield phase.
   */
  yieldFn?: (() => void) | null;
  /** How long the yield phase lasts (us). */
  yieldUs?: number;
  /**
   * Communicators of every rank run their blocking barrier and small allreduce on the node's flag boards
   * (coll/flat.ts): asked for where the job has one node and more ranks than the host has cores.
   */
  flat?: boolean;
  /** The UCX path for ranks of other nodes (the UCX transport), or null: through the engine. */
  ucx?: UcxPath | null;
  /**
   * The job's host board, this rank's word (shm/host-board.ts), where the job's nodes share
   * this host: the rank marks its blocking waits there, so that the nodes' engines and wires
   * yield their cores only while no rank computes. The rank's own yield does not look at it:
   * parking beside a computing rank instead cost more (BENCHMARKS.md, "Yields beside a
   * computing rank").
   */
  board?: HostBoard | null;
  /**
   * Whether a thread of the node watches this rank's yielding waits (kWaiting): an engine that
   * shares its core with the ranks and polls on only while one waits, or an emulated wire.
   * Default true; a job whose node has no such thread skips the count, a contended word per
   * idle step of every crowded wait.
   */
  waitsWatched?: boolean;
  /** Eager credit toward each other rank, bytes (default EAGER_CREDIT_BYTES; 0: every send by rendezvous). */
  eagerCredit?: number;
  /**
   * The emulated network (`--link`, p2p/wire.ts), or null: messages between nodes are
   * stamped with their modelled arrival and held until then. `originMs` turns this thread's
   * `performance.now()` into the host's monotonic clock (runtime/env.ts wireOrigin).
   */
  wire?: { model: WireModel; originMs: number } | null;
}

export class Transport implements Progressor, PathHost, ParkHost {
  readonly ep: number;
  readonly engineEp: number;
  readonly endpoints: number;
  readonly control: Int32Array;
  /** The flag boards' first word in `control` (coll/flat.ts), or -1: the boards are not used. */
  readonly boardBase: number;
  /** Boards given to communicators so far (claimBoard). */
  private boardsClaimed = 0;
  readonly slices: Uint8Array[];
  readonly allocator: SliceAllocator;
  readonly eagerLimit: number;
  /** The UCX path to ranks of other nodes, or null (they are reached through the engine). */
  readonly ucx: UcxPath | null;
  readonly stats: TransportStats = {
    messagesSent: 0, bytesSent: 0, intraNodeMessages: 0, interNodeMessages: 0,
    messagesReceived: 0, bytesReceived: 0, ucxPeakInFlight: 0, creditRendezvous: 0, intraNodePeers: 0, interNodePeers: 0,
  };
  /** Per world rank: 1 once this rank has sent to it (TransportStats' peers). */
  readonly peerUsed: Uint8Array;
  readonly core: MatchCore;
  readonly credit: EagerCredit;
  readonly waiter: Waiter;
  /** The emulated network, or null (none: the common case, one null check per record). */
  readonly wire: Wire | null;
  private readonly ring: RingPath;
  private readonly ucxRoute: UcxRoute | null;
  /** Each world rank's path. */
  private readonly paths: Path[] = [];
  /** Sends of the current lean collective not finished at once (sendLean). */
  private leanSends: SendRequest[] = [];
  inProgress = false;
  private failure: Error | null = null;
  /** The early message's payload, for `takeEarly`. */
  private early: Uint8Array = EMPTY_BYTES;
  /** The wait of `waitUntil`, reused: a nested wait saves and restores its request. */
  private readonly reqWait: RequestWait;
  /** The node's ring memory: where `recvEager` payloads lie. */
  readonly ringMemory: Uint8Array;
  /**
   * Progress hooks (the collective executor): run after every drain, so every outstanding
   * collective advances whichever request the rank happens to wait on. Without this, two
   * ranks waiting on two collectives in opposite orders would deadlock.
   */
  private readonly hooks: Array<() => boolean> = [];
  private readonly readyChecks: Array<() => boolean> = [];

  constructor(readonly shared: NodeShared, readonly placement: Placement, opts: TransportOptions = {}) {
    const { ranks, ringBytes } = shared.layout;
    const worldSize = placement.nodeOfRank.length;
    this.ep = placement.localOfRank[placement.worldRank]!;
    this.engineEp = ranks;
    this.endpoints = ranks + 1;
    this.control = new Int32Array(shared.control);
    this.boardBase = opts.flat === true && nodeCount(placement) === 1 && shared.control.byteLength >= controlBytes(this.endpoints)
      ? boardBase(this.endpoints) : -1;
    adoptSliceMemories(shared);
    this.slices = shared.slices.map((s) => new Uint8Array(s));
    this.ringMemory = new Uint8Array(shared.rings);
    this.allocator = new SliceAllocator(shared.layout.sliceBytes);
    const maxEager = (ringBytes >> 2) - HEADER_BYTES;
    this.eagerLimit = Math.min(opts.eagerLimit ?? 8192, maxEager);
    this.ucx = opts.ucx ?? null;
    this.peerUsed = new Uint8Array(worldSize);
    this.core = new MatchCore(placement.worldRank, worldSize, this.stats);
    this.credit = new EagerCredit(worldSize, opts.eagerCredit ?? EAGER_CREDIT_BYTES, this.stats);
    const yieldFn = opts.yieldFn ?? null;
    const w = opts.wire ?? null;
    this.wire = w === null ? null : new Wire(w.model, this.control, placement.nodeId, nodeCount(placement), w.originMs);
    this.waiter = new Waiter(this.control, this.ep, {
      spinMs: (opts.spinUs ?? 20) / 1000, yieldFn, yieldMs: yieldFn === null ? 0 : (opts.yieldUs ?? 0) / 1000,
      board: opts.board ?? null, countWaits: opts.waitsWatched ?? true,
    }, this, this.ucx, this.wire);
    this.reqWait = new RequestWait();
    this.ring = new RingPath(this, shared, this.control, this.slices, this.allocator);
    this.ucxRoute = this.ucx === null ? null : new UcxRoute(this, this.ucx);
    for (let w = 0; w < worldSize; w++) {
      this.paths.push(placement.nodeOfRank[w] === placement.nodeId || this.ucxRoute === null ? this.ring : this.ucxRoute);
    }
    // A rank that sleeps in poll(2) on its UCX worker is woken through its eventfd (wake()).
    if (this.ucx !== null) Atomics.store(this.control, endpointWord(this.ep, kWakeFd), this.ucx.wakeFd);
  }

  /**
   * The next flag board for a communicator that holds every rank of this one-node job, or -1
   * (none used, or all BOARDS given). Called as each such communicator is created, which every
   * rank does in the same order, so every rank gives it the same board.
   */
  claimBoard(): number {
    if (this.boardBase < 0 || this.boardsClaimed >= BOARDS) return -1;
    return this.boardsClaimed++;
  }

  /** Where to record messages, or null (the default: one null check per message). */
  get trace(): MessageTrace | null {
    return this.core.trace;
  }

  set trace(t: MessageTrace | null) {
    this.core.trace = t;
  }

  /**
   * Registers a function run on every progress call; it returns true when it did something.
   * `ready`, where given, tells without side effects whether the hook has work that no ring
   * record announces (an offloaded collective's completion word, which the engine sets before
   * it rings a sleeping rank): a rank about to park checks it after raising its sleeping flag,
   * so a completion that landed between its last poll and the flag is not slept through.
   */
  addProgressHook(hook: () => boolean, ready?: () => boolean): void {
    this.hooks.push(hook);
    if (ready !== undefined) this.readyChecks.push(ready);
  }

  /** True when a progress hook has work waiting (see addProgressHook). */
  private hookReady(): boolean {
    for (let i = 0; i < this.readyChecks.length; i++) if (this.readyChecks[i]!()) return true;
    return false;
  }

  isRegistered(view: ArrayBufferView): boolean {
    return this.ring.isRegistered(view);
  }

  // ---- sending -----------------------------------------------------------------------

  isend(view: Uint8Array, dstWorld: number, ctx: number, src: number, tag: number): SendRequest {
    const req = new SendRequest(this);
    req.view = view;
    req.dstWorld = dstWorld;
    req.ctx = ctx;
    req.src = src;
    req.tag = tag;
    req.status.bytes = view.byteLength;
    if (this.core.trace !== null) traceMessage(this.core.trace.sends, dstWorld, ctx, tag, view.byteLength);
    if (this.core.isFinished(dstWorld)) {
      this.sendToFinished(req);
      return req;
    }
    this.paths[dstWorld]!.send(req);
    return req;
  }

  /**
   * Blocking send. Small messages with nothing queued ahead go straight into the ring with no
   * request object at all (the common case, and the latency-critical one).
   */
  send(view: Uint8Array, dstWorld: number, ctx: number, src: number, tag: number): void {
    if (this.trySendEager(view, view.byteLength, dstWorld, ctx, src, tag)) return;
    const req = this.isend(view, dstWorld, ctx, src, tag);
    this.waitUntil(req);
    if (req.error) throw req.error;
  }

  /**
   * A send of the lean blocking collectives (coll/lean.ts), whose exchanges send before they
   * receive, so their sends must not wait for the peer's receive: eager when it can be (the
   * common case: nothing allocated); else (no eager credit left, or the ring is full) from a
   * private copy, by rendezvous if need be, and collected by `finishLean` once the caller's
   * own receives are done.
   */
  sendLean(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): void {
    if (!this.trySendEager(view, bytes, dstWorld, ctx, src, tag)) this.sendLeanLater(view, bytes, dstWorld, ctx, src, tag);
  }

  /**
   * `sendLean`'s send that could not go at once, from a private copy. The rare cases of the
   * lean calls are kept out of line: what the callers inline stays within V8's inlining
   * budget, which the eager send and receive need (past it, they were called, not inlined:
   * +15 % on the in-process lean exchange).
   */
  private sendLeanLater(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): void {
    this.leanSends.push(this.isend(view.slice(0, bytes), dstWorld, ctx, src, tag));
  }

  /** Waits for the sends `sendLean` could not finish at once; throws the first one's error. */
  finishLean(): void {
    if (this.leanSends.length !== 0) this.finishLeanSends();
  }

  private finishLeanSends(): void {
    const reqs = this.leanSends;
    this.leanSends = [];
    for (const r of reqs) this.waitUntil(r);
    for (const r of reqs) if (r.error) throw r.error;
  }

  /** Forgets the lean sends of a call that failed (they still complete, or fail, on their own). */
  dropLean(): void {
    this.leanSends = [];
  }

  /**
   * Sends an eager message straight onto its path, complete on return, when it can: it is
   * at most the eager limit, within credit, nothing is queued ahead of it, and there is room.
   * False (nothing sent) otherwise.
   */
  trySendEager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): boolean {
    if (bytes > this.eagerLimit || !this.credit.has(dstWorld, bytes)) return false;
    if (!this.paths[dstWorld]!.trySendEager(view, bytes, dstWorld, ctx, src, tag)) return false;
    if (this.core.trace !== null) traceMessage(this.core.trace.sends, dstWorld, ctx, tag, bytes);
    return true;
  }

  /**
   * Sends a control record to this node's engine (offload executor: schedules, communicators,
   * posts): header fields, then `payload` words. Ordered with everything else this rank sends
   * to the engine; queued when the ring is full. (`_token`: unused, always 0.)
   */
  toEngine(kind: number, ctx: number, src: number, tag: number, dst: number, _token: number, slice: number,
    offset: number, payload: Int32Array): void {
    this.ring.toEngine(kind, ctx, src, tag, dst, slice, offset, payload);
  }

  /**
   * A send to a rank that has returned from its job: an eager one completes, its message
   * dropped (as one that nobody receives); a larger one, which would wait for the receiver,
   * fails.
   */
  private sendToFinished(req: SendRequest): void {
    if (req.view.byteLength <= this.eagerLimit) req.complete();
    else req.complete(receiverFinished(this.placement.worldRank, req));
  }

  // ---- receiving ---------------------------------------------------------------------

  /**
   * Blocking receive of one eager message with no request and no copy: the lean blocking
   * collectives read the payload where it lies in the ring. Returns the payload's byte offset
   * in `ringMemory`, valid until `releaseEager()`, which the caller must call before any other
   * call on this transport. Returns -1 when the message had been taken off its ring before
   * this call (while something else was progressed), or came over UCX: `takeEarly()` then
   * hands out a private copy of its payload, and there is nothing to release.
   *
   * Matching is MPI's: the earliest message with this (ctx, src, tag); the caller guarantees
   * no posted receive could match it too (a tag private to one collective instance). A
   * message that is not exactly `bytes` long is consumed and raises NBC_ERR_TRUNCATE (longer)
   * or NBC_ERR_COUNT (shorter).
   */
  recvEager(fromWorld: number, ctx: number, src: number, tag: number, bytes: number): number {
    if (this.core.unexpectedCount > 0 && this.takeUnexpected(ctx, src, tag, bytes)) return -1;
    return this.paths[fromWorld]!.recvEager(fromWorld, ctx, src, tag, bytes);
  }

  /** `recvEager`, then its payload copied into `into` at byte `at`, and the record released. */
  recvEagerInto(fromWorld: number, ctx: number, src: number, tag: number, into: Uint8Array, at: number, bytes: number): void {
    const off = this.recvEager(fromWorld, ctx, src, tag, bytes);
    if (off < 0) {
      this.copyEarly(into, at, bytes);
      return;
    }
    copyAt(this.ringMemory, off, into, at, bytes);
    this.releaseEager();
  }

  /** `recvEagerInto`'s rare case: the message had come early (or over UCX), a private copy. */
  private copyEarly(into: Uint8Array, at: number, bytes: number): void {
    copyAt(this.takeEarly(), 0, into, at, bytes);
  }

  /** Frees the record `recvEager` left in place. */
  releaseEager(): void {
    this.ring.releaseEager();
  }

  /**
   * The payload of the message `recvEager` found early (it returned -1): a private copy, or
   * over UCX the bytes where they lie in the path's inbox (PathHost.tookEager), valid until
   * the next call on this transport.
   */
  takeEarly(): Uint8Array {
    const d = this.early;
    this.early = EMPTY_BYTES;
    return d;
  }

  tookEager(ctx: number, src: number, tag: number, payload: Uint8Array): void {
    this.countReceived(ctx, src, tag, payload.byteLength);
    this.early = payload;
  }

  /** A message a lean receive took (recvEager's early one): counted, and traced where traced. */
  private countReceived(ctx: number, src: number, tag: number, bytes: number): void {
    this.stats.messagesReceived++;
    this.stats.bytesReceived += bytes;
    if (this.core.trace !== null) traceMessage(this.core.trace.recvs, src, ctx, tag, bytes);
  }

  /** Takes the earliest unexpected message (ctx, src, tag) as the early one; false when none. */
  takeUnexpected(ctx: number, src: number, tag: number, bytes: number): boolean {
    const m = this.core.take(ctx, src, tag);
    if (m === null) return false;
    this.countReceived(ctx, src, tag, m.bytes);
    this.early = m.path.fetch(m);
    // A wrong size names the cause (the ranks disagree on a count) even where the sender's
    // collective had failed already and flagged the data.
    if (m.bytes !== bytes) {
      this.early = EMPTY_BYTES;
      throw lengthMismatch(m.bytes, bytes, src, tag);
    }
    if (m.invalid) {
      this.early = EMPTY_BYTES;
      throw invalidData(this.placement.worldRank, src, tag);
    }
    return true;
  }

  irecv(view: Uint8Array, elementBytes: number, src: number, ctx: number, tag: number, reuse?: RecvRequest): RecvRequest {
    let req: RecvRequest;
    if (reuse !== undefined && reuse.done) {
      // A caller-owned request that is complete may be posted again (lean blocking paths).
      req = reuse;
      req.done = false;
      req.error = null;
    } else {
      req = new RecvRequest(this);
    }
    return this.postRecv(req, view, elementBytes, src, ctx, tag, false);
  }

  /**
   * A collective's receive: `irecv` of a message that must be exactly `view`'s length. A longer
   * one fails it with NBC_ERR_TRUNCATE, a shorter one with NBC_ERR_COUNT (the ranks disagree
   * on a count), and either is consumed so that its sender completes.
   */
  irecvExact(view: Uint8Array, src: number, ctx: number, tag: number): RecvRequest {
    return this.postRecv(new RecvRequest(this), view, 1, src, ctx, tag, true);
  }

  /** Fills in a receive and posts it to the match core. */
  private postRecv(req: RecvRequest, view: Uint8Array, elementBytes: number, src: number, ctx: number, tag: number, exact: boolean): RecvRequest {
    req.view = view;
    req.elementBytes = elementBytes;
    req.exact = exact;
    req.src = src;
    req.ctx = ctx;
    req.tag = tag;
    this.core.post(req);
    return req;
  }

  /** Forgets context `ctx`'s matching lists where nothing waits in them (match.ts). */
  releaseContext(ctx: number): void {
    this.core.releaseContext(ctx);
  }

  /**
   * Names the members (world ranks, by communicator rank) of context `ctx`, so that a receive
   * whose only possible senders have returned from their jobs fails instead of hanging.
   */
  registerContext(ctx: number, worldRanks: Int32Array): void {
    this.core.registerContext(ctx, worldRanks);
  }

  /** Non-blocking probe: the status of the first matching message not yet received, or null. */
  iprobe(ctx: number, src: number, tag: number): Status | null {
    this.progress();
    const m = this.core.peek(ctx, src, tag);
    return m === null ? null : { source: m.src, tag: m.tag, count: m.bytes, bytes: m.bytes };
  }

  /** Blocking probe: parks between looks (no spin). */
  probe(ctx: number, src: number, tag: number): Status {
    let found: Status | null = null;
    const probeReq = new Request(this);
    while ((found = this.iprobe(ctx, src, tag)) === null) {
      if (this.core.finishedCount > 0) {
        const gone = this.core.senderGone(ctx, src);
        if (gone >= 0) throw senderFinished(this.placement.worldRank, gone, ctx, src, tag);
      }
      this.waiter.parkOnce(probeReq);
    }
    return found;
  }

  /**
   * World rank `world` has returned from its job, and everything it sent this rank has been
   * handled (its KIND_FIN comes behind its last message on the same path). What only it could
   * complete fails now: posted receives naming it (the core), and sends it never took (its path).
   */
  peerFinished(world: number): void {
    if (this.core.peerFinished(world)) this.paths[world]!.peerFinished(world);
  }

  // ---- progress and waiting -----------------------------------------------------------

  /** Drains every path into the match core and retries queued sends. True when anything happened. */
  progress(): boolean {
    if (this.inProgress) return false; // re-entered from a callback: the outer call finishes
    if (this.ring.held !== null) throw new NbcInternalError('the transport was progressed while a received record was held in place (recvEager without releaseEager)');
    this.inProgress = true;
    let any = false;
    try {
      if (this.ring.poll()) any = true;
      if (this.ucxRoute !== null && this.ucxRoute.poll()) any = true;
      if (this.ring.queuedEndpoints > 0 && this.ring.flush()) any = true;
      for (let h = 0; h < this.hooks.length; h++) if (this.hooks[h]!()) any = true;
    } finally {
      this.inProgress = false;
    }
    const code = Atomics.load(this.control, kAbortWord);
    if (code !== 0) this.fail(code);
    return any;
  }

  private fail(code: number): never {
    this.failure ??= new NbcPeerFailedError(
      `The job is aborting (exit code ${code}): another rank or node failed; see the launcher's message; ${REPORTED_ELSEWHERE}`);
    throw this.failure;
  }

  /** ParkHost: with the sleeping flag up, queued sends retried, and whether work waits. */
  workBeforePark(): boolean {
    const moved = this.ring.queuedEndpoints > 0 && !this.inProgress && this.ring.flush();
    return moved || this.ring.hasIncoming() || this.hookReady();
  }

  /** ParkHost: whether work waits (parkAsync). */
  hasWork(): boolean {
    return this.ring.hasIncoming() || this.ring.queuedEndpoints > 0 || this.hookReady();
  }

  waitUntil(req: Request): void {
    if (req.done) return;
    this.progress();
    if (req.done) return;
    const w = this.reqWait;
    const outer = w.req;
    w.req = req;
    try {
      this.waiter.run(w, req.spinUs === undefined ? this.waiter.spinMs : req.spinUs / 1000, false);
    } finally {
      w.req = outer;
    }
  }

  waitUntilAny(reqs: readonly Request[]): void {
    this.waitFor(() => reqs.some((r) => r.done));
  }

  /** Progresses until `done()` holds. */
  waitFor(done: () => boolean): void {
    this.waiter.run(new UntilWait(done), this.waiter.spinMs, false);
  }

  /**
   * Calls `callback` after the next doorbell (or 50 ms), without blocking the thread
   * (wait.ts parkAsync).
   */
  parkAsync(callback: () => void): void {
    this.waiter.parkAsync(callback);
  }

  /**
   * Blocks until every queued record (sends, ACKs owed to peers) is in its ring: called before
   * a rank's thread ends. Payloads still awaiting an ACK live in the node's arena, which
   * outlives the thread, so they need not be waited for. UCX payloads and sends must have left.
   */
  drain(): void {
    this.ring.drain();
    this.ucxRoute?.drain();
  }

  /**
   * Called once this rank's job has returned: tells every other rank so (KIND_FIN), on each
   * path this rank sent on and behind its last message there, then drains. The ranks of this
   * node get it through their rings; those of other nodes through the engine, which passes it
   * on to every node, or, with UCX, as a header message each. The engine also fails the
   * offloaded collectives that wait for this rank. A rank already finished gets
   * none (shm/layout.ts kFinished), and this rank, once marked, is sent nothing more.
   */
  announceFinished(): void {
    Atomics.store(this.control, endpointWord(this.ep, kFinished), 1);
    const fin = new Int32Array(HEADER_WORDS);
    encodeFin(fin, 0, -1, this.placement.worldRank);
    this.ring.announceFinished(fin);
    this.ucxRoute?.announceFinished();
    // The engine runs this rank's offloaded collectives' peers too (sched/offload.ts).
    this.ring.queueRecord(this.engineEp, fin);
    this.drain();
  }

  /**
   * After `drain`, with UCX: keeps this rank's worker progressing until the node stops the
   * job (the abort word, set to 1 on a clean shutdown). A sent message can still need its
   * sender's worker (a connection being set up, a socket buffer still full), so no worker may
   * go quiet before every rank of the job is done: the node's DONE/SHUTDOWN exchange is the
   * job-wide fence, as MPI_Finalize's is. Sleeps between events.
   */
  linger(): void {
    if (this.ucx === null) return;
    const c = this.control;
    while (Atomics.load(c, kAbortWord) === 0) {
      try {
        this.progress();
      } catch {
        return; // the job is ending; nothing more to deliver
      }
      this.waiter.parkOnce(NOT_DONE);
    }
  }
}

const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

function nodeCount(p: Placement): number {
  let n = 0;
  for (let i = 0; i < p.nodeOfRank.length; i++) if (p.nodeOfRank[i]! >= n) n = p.nodeOfRank[i]! + 1;
  return n;
}

/** `waitUntil`'s wait: until its request is done. */
class RequestWait implements Waitable {
  readonly progressMask = 0;
  req: Request | null = null;

  get done(): boolean {
    return this.req!.done;
  }

  ready(): boolean {
    return false;
  }

  settled(): boolean {
    return this.req!.done;
  }
}

/** A wait until a condition holds (drain, waitUntilAny, a UCX sender held back). */
class UntilWait implements Waitable {
  readonly progressMask = 0;
  constructor(private readonly cond: () => boolean) {}

  get done(): boolean {
    return this.cond();
  }

  ready(): boolean {
    return false;
  }

  settled(): boolean {
    return this.cond();
  }
}
