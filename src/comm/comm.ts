/**
 * Communicators: a group of ranks plus a context id that keeps their traffic apart.
 *
 * Context ids: every communicator gets an even id for point-to-point traffic and uses id + 1
 * for its internal (collective) traffic. A new communicator's id is the maximum, over its
 * members, of each member's next free id; every member then moves its next free id past it.
 * So no rank ever belongs to two communicators with the same id, which is all matching needs
 * (a message is matched by the receiver, on (context, source, tag)).
 */
import type { CoreConfig } from '../config.js';
import { describeValue } from '../describe.js';
import { fnv1a32 } from '../fnv.js';
import { NbcArgError, NbcCommError, NbcCountError, NbcRankError, NbcTypeError } from '../errors.js';
import { ANY_SOURCE, ANY_TAG, PROC_NULL } from '../p2p/constants.js';
import { completedRequest, Request, type Status } from '../p2p/request.js';
import type { MessageTrace, Transport, TransportStats } from '../p2p/transport.js';
import type { UcxErrMode } from '../p2p/ucx.js';
import {
  cartCoords, cartNeighborhood, cartRank, cartShift, dimsCreate, distGraphProblem, edgeCounts, edgeMismatch, graphNeighborhood,
  type DistGraphOptions, type Neighborhood,
} from './topology.js';
import {
  bytesOf, checkDest, checkSource, checkTag, elementBytes, isTypedArrayClass, type TypedArray, type TypedArrayConstructor,
} from './validate.js';

/** Color for split() meaning "not in any new communicator". */
export const UNDEFINED = -32766;

/**
 * Tags of the internal exchanges on the collective context, above every collective's (its
 * sequence number mod 2^26, x 16: below 2^30): communicator creation's, and the one that
 * compares calls (NBC_CHECK_CALLS, coll/check-calls.ts). Separate, so that a rank creating a
 * communicator while another makes a checked call cannot take each other's message.
 */
export const EXCHANGE_TAG = 0x7ffffff0;
export const CHECK_TAG = 0x7ffffff1;

/** State shared by every communicator of one rank. */
export interface RankContext {
  transport: Transport;
  worldRank: number;
  worldSize: number;
  nodeId: number;
  /** Next free (even) context id. */
  nextCtx: number;
  /** What the runtime read from the environment for the collectives (runtime/config.ts). */
  config: CoreConfig;
}

/** An ordered set of world ranks. */
export class Group {
  constructor(readonly worldRanks: readonly number[], private readonly myWorld: number) {}

  get size(): number {
    return this.worldRanks.length;
  }

  /** This rank's position in the group, or UNDEFINED. */
  get rank(): number {
    const i = this.worldRanks.indexOf(this.myWorld);
    return i < 0 ? UNDEFINED : i;
  }

  /** The group of the members at the given positions, in that order. */
  incl(ranks: readonly number[]): Group {
    this.checkRanks(ranks, 'incl');
    if (new Set(ranks).size !== ranks.length) {
      throw new NbcRankError(`Cannot incl ranks [${ranks.join(', ')}]: ranks repeat; expected distinct ranks`);
    }
    return new Group(ranks.map((r) => this.worldRanks[r]!), this.myWorld);
  }

  /** The group without the members at the given positions. */
  excl(ranks: readonly number[]): Group {
    this.checkRanks(ranks, 'excl');
    const drop = new Set(ranks);
    return new Group(this.worldRanks.filter((_, i) => !drop.has(i)), this.myWorld);
  }

  private checkRanks(ranks: readonly number[], op: string): void {
    for (const r of ranks) {
      if (!Number.isInteger(r) || r < 0 || r >= this.size) {
        throw new NbcRankError(`Cannot ${op} rank ${r}: expected an integer 0..${this.size - 1}`);
      }
    }
  }
}

/** A Cartesian topology attached to a communicator. */
export interface CartTopology {
  dims: readonly number[];
  periods: readonly boolean[];
}

/**
 * A distributed-graph topology attached to a communicator (distGraphCreateAdjacent): this
 * rank's in-neighbours and out-neighbours, in the order the neighbour collectives use.
 */
export interface DistGraphTopology {
  sources: readonly number[];
  destinations: readonly number[];
  sourceWeights: readonly number[] | null;
  destWeights: readonly number[] | null;
}

type CommClass = new (rc: RankContext, worldRanks: readonly number[] | Int32Array, ctx: number, topology?: CartTopology | null,
  graph?: DistGraphTopology | null) => Comm;

/**
 * A communicator: point-to-point messaging, communicator management and (optionally) a
 * Cartesian topology. The collectives are added by the subclass in coll/ (layers import
 * downwards only); communicators made from one keep its class, and their types say so:
 * dup, split, splitShared, create and cartCreate return `this`, so on the `Communicator`
 * that init() returns, `world.dup().allreduce(...)` type-checks.
 */
export class Comm {
  readonly rank: number;
  readonly size: number;
  private freed = false;
  /** World rank of each member. */
  protected readonly worldRanks: Int32Array;
  /** The Cartesian topology, for communicators made by cartCreate (and their dups). */
  readonly topology: CartTopology | null;
  /** The distributed-graph topology, for communicators made by distGraphCreateAdjacent (and their dups). */
  readonly distGraph: DistGraphTopology | null;

  constructor(protected readonly rc: RankContext, worldRanks: readonly number[] | Int32Array, readonly ctx: number,
    topology: CartTopology | null = null, graph: DistGraphTopology | null = null) {
    this.topology = topology;
    this.distGraph = graph;
    this.worldRanks = Int32Array.from(worldRanks);
    this.size = this.worldRanks.length;
    this.rank = this.worldRanks.indexOf(rc.worldRank);
    if (this.rank < 0) throw new NbcCommError(`internal: rank ${rc.worldRank} is not a member of communicator ${ctx}`);
    // Whom each context's sources name, so a receive from a rank that has returned fails.
    rc.transport.registerContext(ctx, this.worldRanks);
    rc.transport.registerContext(ctx + 1, this.worldRanks);
  }

  /**
   * A communicator of the same class as this one. The cast to `this` holds because every
   * subclass keeps Comm's constructor signature (CommClass), which is what makes the
   * management methods' `this` return types true.
   */
  protected spawn(worldRanks: readonly number[] | Int32Array, ctx: number, topology: CartTopology | null = null,
    graph: DistGraphTopology | null = null): this {
    return new (this.constructor as CommClass)(this.rc, worldRanks, ctx, topology, graph) as this;
  }

  /** Index of the node (process) this rank runs on. */
  get nodeId(): number {
    return this.rc.nodeId;
  }

  /** Id of the communicator's collective (internal) context. */
  get collCtx(): number {
    return this.ctx + 1;
  }

  protected get transport(): Transport {
    return this.rc.transport;
  }

  protected check(op: string): void {
    if (this.freed) {
      throw new NbcCommError(`Cannot ${op} on communicator ${this.ctx}: it has been freed; expected a live communicator`);
    }
  }

  /** World rank of member `rank`. */
  worldRankOf(rank: number): number {
    return this.worldRanks[rank]!;
  }

  group(): Group {
    return new Group(Array.from(this.worldRanks), this.rc.worldRank);
  }

  // ---- memory ------------------------------------------------------------------------

  /**
   * Allocates `n` elements of registered memory from this node's shared arena. Ranks of the
   * node read such buffers directly, so large messages from them need no staging copy.
   * The array's `buffer` is the node's SharedArrayBuffer (not transferable; `freeMem` returns
   * it), though the type says what `new Type(n)` would give, so that it passes wherever a
   * plain typed array does.
   */
  alloc<C extends TypedArrayConstructor>(Type: C, n: number): InstanceType<C> {
    this.check('alloc');
    if (!isTypedArrayClass(Type)) {
      throw new NbcTypeError(`Cannot alloc ${describeValue(Type)}: expected a typed array class such as Float64Array`);
    }
    if (!Number.isInteger(n) || n < 0) {
      throw new NbcCountError(`Cannot alloc ${String(n)} elements: expected a non-negative integer`);
    }
    const t = this.transport;
    const bytes = n * Type.BYTES_PER_ELEMENT;
    const off = t.allocator.alloc(bytes);
    if (off < 0) {
      throw new NbcCountError(`Cannot alloc ${bytes} bytes: the rank's arena slice has ${t.allocator.available} bytes free; expected a smaller request or a larger NBC_ARENA_MB`);
    }
    const Ctor = Type as unknown as new (b: ArrayBufferLike, offset: number, length: number) => InstanceType<C>;
    return new Ctor(t.shared.slices[t.ep]!, off, n);
  }

  /** Returns memory from alloc() to the arena. The array must not be used afterwards. */
  freeMem(buf: TypedArray): void {
    const t = this.transport;
    if (!t.isRegistered(buf) || t.allocator.sizeOf(buf.byteOffset) === undefined) {
      throw new NbcArgError('Cannot freeMem: the array was not returned by alloc() on this rank (or was freed already)');
    }
    t.allocator.free(buf.byteOffset);
  }

  // ---- point-to-point ----------------------------------------------------------------

  isend(buf: TypedArray, dest: number, tag = 0): Request {
    this.check('isend');
    const view = bytesOf(buf, 'isend', this.ctx);
    checkDest(dest, this.size, 'isend', this.ctx);
    checkTag(tag, false, 'isend', this.ctx);
    if (dest === PROC_NULL) return completedRequest(this.transport, { source: PROC_NULL, tag: ANY_TAG });
    return this.transport.isend(view, this.worldRanks[dest]!, this.ctx, this.rank, tag);
  }

  send(buf: TypedArray, dest: number, tag = 0): void {
    this.check('send');
    const view = bytesOf(buf, 'send', this.ctx);
    checkDest(dest, this.size, 'send', this.ctx);
    checkTag(tag, false, 'send', this.ctx);
    if (dest === PROC_NULL) return;
    this.transport.send(view, this.worldRanks[dest]!, this.ctx, this.rank, tag);
  }

  irecv(buf: TypedArray, source: number = ANY_SOURCE, tag: number = ANY_TAG): Request {
    this.check('irecv');
    const view = bytesOf(buf, 'irecv', this.ctx);
    checkSource(source, this.size, 'irecv', this.ctx);
    checkTag(tag, true, 'irecv', this.ctx);
    if (source === PROC_NULL) return completedRequest(this.transport, { source: PROC_NULL, tag: ANY_TAG });
    return this.transport.irecv(view, elementBytes(buf), source, this.ctx, tag);
  }

  recv(buf: TypedArray, source: number = ANY_SOURCE, tag: number = ANY_TAG): Status {
    return this.irecv(buf, source, tag).wait();
  }

  /** Sends and receives at once (no deadlock between pairs that both send first). */
  sendrecv(sendBuf: TypedArray, dest: number, sendTag: number, recvBuf: TypedArray, source: number = ANY_SOURCE, recvTag: number = ANY_TAG): Status {
    const r = this.irecv(recvBuf, source, recvTag);
    const s = this.isend(sendBuf, dest, sendTag);
    s.wait();
    return r.wait();
  }

  /** Status of a pending message without receiving it, or null. `count` is in bytes. */
  iprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status | null {
    this.check('iprobe');
    checkSource(source, this.size, 'iprobe', this.ctx);
    checkTag(tag, true, 'iprobe', this.ctx);
    if (source === PROC_NULL) return { source: PROC_NULL, tag: ANY_TAG, count: 0, bytes: 0 };
    return this.transport.iprobe(this.ctx, source, tag);
  }

  /** Blocks until a matching message is pending; returns its status. `count` is in bytes. */
  probe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status {
    this.check('probe');
    checkSource(source, this.size, 'probe', this.ctx);
    checkTag(tag, true, 'probe', this.ctx);
    if (source === PROC_NULL) return { source: PROC_NULL, tag: ANY_TAG, count: 0, bytes: 0 };
    return this.transport.probe(this.ctx, source, tag);
  }

  // ---- internal collectives for communicator management --------------------------------

  /**
   * Every member contributes `values` (same length everywhere); all get the concatenation in
   * rank order. Linear through rank 0 on the collective context: only used to build
   * communicators, where simplicity beats speed.
   */
  protected exchangeInts(values: readonly number[] | Int32Array, tag = EXCHANGE_TAG): Int32Array {
    const k = values.length;
    const all = new Int32Array(k * this.size);
    const mine = Int32Array.from(values);
    const t = this.transport;
    if (this.size === 1) return mine;
    if (this.rank === 0) {
      all.set(mine, 0);
      const reqs: Request[] = [];
      for (let r = 1; r < this.size; r++) {
        reqs.push(t.irecv(new Uint8Array(all.buffer, r * k * 4, k * 4), 4, r, this.collCtx, tag));
      }
      for (const q of reqs) q.wait();
      const sends: Request[] = [];
      const bytes = new Uint8Array(all.buffer);
      for (let r = 1; r < this.size; r++) sends.push(t.isend(bytes, this.worldRanks[r]!, this.collCtx, 0, tag));
      for (const q of sends) q.wait();
    } else {
      t.isend(new Uint8Array(mine.buffer), this.worldRanks[0]!, this.collCtx, this.rank, tag).wait();
      t.irecv(new Uint8Array(all.buffer), 4, 0, this.collCtx, tag).wait();
    }
    return all;
  }

  /** Agrees on a fresh context id among all members, carrying extra per-rank values. */
  protected agree(extra: readonly number[]): { ctx: number; table: Int32Array; width: number } {
    const width = extra.length + 1;
    const table = this.exchangeInts([this.rc.nextCtx, ...extra]);
    let ctx = 0;
    for (let r = 0; r < this.size; r++) ctx = Math.max(ctx, table[r * width]!);
    this.rc.nextCtx = ctx + 2;
    return { ctx, table, width };
  }

  // ---- communicator management --------------------------------------------------------

  /**
   * A new communicator with the same members, order and topology, and its own context, of
   * this one's class (a Communicator's dup has every collective). Collective.
   */
  dup(): this {
    this.check('dup');
    const { ctx } = this.agree([]);
    return this.spawn(this.worldRanks, ctx, this.topology, this.distGraph);
  }

  /**
   * Partitions the members by `color`; within a color, ranks are ordered by `key`, then by
   * rank in this communicator. Collective.
   * @returns this rank's part, of this communicator's class; null where `color` is UNDEFINED
   *   (the rank still takes part in the call but joins no new communicator).
   */
  split(color: number, key = 0): this | null {
    this.check('split');
    if (!Number.isInteger(color) || (color < 0 && color !== UNDEFINED)) {
      throw new NbcArgError(`Cannot split communicator ${this.ctx}: color ${String(color)} is invalid; expected a non-negative integer or UNDEFINED`);
    }
    if (!Number.isInteger(key)) {
      throw new NbcArgError(`Cannot split communicator ${this.ctx}: key ${String(key)} is not an integer`);
    }
    const { ctx, table, width } = this.agree([color, key]);
    if (color === UNDEFINED) return null;
    const members: Array<{ key: number; rank: number }> = [];
    for (let r = 0; r < this.size; r++) {
      if (table[r * width + 1] === color) members.push({ key: table[r * width + 2]!, rank: r });
    }
    members.sort((a, b) => a.key - b.key || a.rank - b.rank);
    return this.spawn(members.map((m) => this.worldRanks[m.rank]!), ctx);
  }

  /**
   * The members that share this rank's node, of this communicator's class; never null (every
   * rank has a node). Collective.
   */
  splitShared(): this {
    return this.split(this.rc.nodeId, this.rank)!; // the color is a node id, never UNDEFINED
  }

  /**
   * A communicator of the members of `group` (a subgroup of this communicator's group), in
   * the group's order. Collective over this communicator: ranks outside the group call it too.
   * @returns the new communicator, of this communicator's class; null on ranks outside `group`.
   */
  create(group: Group): this | null {
    this.check('create');
    if (!(group instanceof Group)) {
      throw new NbcArgError(`Cannot create a communicator from ${describeValue(group)}: expected a Group (comm.group(), then incl or excl)`);
    }
    const mine = new Set(this.worldRanks);
    for (const w of group.worldRanks) {
      if (!mine.has(w)) {
        throw new NbcRankError(`Cannot create a communicator from a group with world rank ${w}: it is not a member of communicator ${this.ctx}`);
      }
    }
    const { ctx } = this.agree([]);
    return group.worldRanks.includes(this.rc.worldRank) ? this.spawn(group.worldRanks, ctx) : null;
  }

  /**
   * A communicator with a Cartesian topology of `dims` (row-major rank order), of this
   * communicator's class (a Communicator's has the neighbour collectives). `reorder` is
   * accepted and ignored: ranks keep their order. `periods` defaults to none periodic (as
   * mpi4py's). Collective, and checked collectively: every rank must pass the same grid, and a
   * rank whose arguments are invalid raises its own NBC_ERR_ARG after taking part, while the
   * others raise NBC_ERR_ARG naming it (no rank is left waiting).
   * @returns the grid communicator; null on ranks beyond the grid's size (rank >= product of
   *   `dims`), like split's UNDEFINED.
   */
  cartCreate(dims: readonly number[], periods?: readonly boolean[], reorder = false): this | null {
    this.check('cartCreate');
    void reorder;
    const problem = cartProblem(dims, periods, this.size, this.ctx);
    const grid = problem === null ? { dims: [...dims], periods: periods === undefined ? dims.map(() => false) : periods.map((p) => p === true) } : null;
    const { ctx, table, width } = this.agree([problem === null ? 0 : 1, grid === null ? 0 : gridFingerprint(grid.dims, grid.periods)]);
    if (problem !== null) throw problem;
    for (let r = 0; r < this.size; r++) {
      if (table[r * width + 1] !== 0) {
        throw new NbcArgError(`Cannot cartCreate on communicator ${this.ctx}: rank ${r} passed invalid arguments (it raised the reason); expected a valid grid on every rank`);
      }
      if (table[r * width + 2] !== table[this.rank * width + 2]) {
        throw new NbcArgError(`Cannot cartCreate on communicator ${this.ctx}: rank ${r} passed another grid than this rank's (dims [${dims.join(', ')}], periods [${grid!.periods.join(', ')}]); expected the same dims and periods on every rank`);
      }
    }
    const n = grid!.dims.reduce((a, b) => a * b, 1);
    if (this.rank >= n) return null;
    return this.spawn(this.worldRanks.subarray(0, n), ctx, grid);
  }

  /**
   * A communicator with a distributed-graph topology (MPI_Dist_graph_create_adjacent): the
   * same members in the same order (no reordering), where this rank receives from `sources`
   * and sends to `destinations`, in those orders: block i of a neighbour collective's receive
   * buffer comes from `sources[i]`, block j of its send buffer goes to `destinations[j]`. A rank
   * may be named more than once (up to 16 times); repeated edges match in list order. Weights
   * are kept for `distGraphNeighbors()` and otherwise ignored. Collective.
   *
   * The graph is checked collectively before it is used: every rank's edge counts travel to
   * every rank, and if rank a lists b as a destination a different number of times than b
   * lists a as a source, every rank raises the same NBC_ERR_ARG naming that edge, instead of a
   * later neighbour collective waiting forever. A rank with invalid arguments (NBC_ERR_RANK for
   * a rank out of range, NBC_ERR_ARG otherwise) raises its own error after taking part, and
   * the others raise NBC_ERR_ARG naming it. The check moves 2 * size integers per rank through
   * rank 0 (like split), which is fine for communicator creation up to thousands of ranks.
   */
  distGraphCreateAdjacent(sources: readonly number[], destinations: readonly number[], opts?: DistGraphOptions): this {
    const what = `distGraphCreateAdjacent on communicator ${this.ctx}`;
    this.check('distGraphCreateAdjacent');
    const problem = distGraphProblem(what, this.size, sources, destinations, opts);
    const counts = problem === null ? edgeCounts(this.size, sources, destinations) : new Array<number>(2 * this.size).fill(0);
    const { ctx, table, width } = this.agree([problem === null ? 0 : 1, ...counts]);
    if (problem !== null) throw problem;
    for (let r = 0; r < this.size; r++) {
      if (table[r * width + 1] !== 0) {
        throw new NbcArgError(`Cannot ${what}: rank ${r} passed invalid arguments (it raised the reason); expected valid sources and destinations on every rank`);
      }
    }
    const bad = edgeMismatch(this.size, (r, i) => table[r * width + 2 + i]!);
    if (bad !== null) {
      throw new NbcArgError(`Cannot ${what}: rank ${bad.from} lists rank ${bad.to} as a destination ${bad.sent} time(s) but rank ${bad.to} lists rank ${bad.from} as a source ${bad.received} time(s); expected every edge listed by both of its ranks`);
    }
    return this.spawn(this.worldRanks, ctx, null, {
      sources: Array.from(sources), destinations: Array.from(destinations),
      sourceWeights: opts?.sourceWeights === undefined ? null : [...opts.sourceWeights],
      destWeights: opts?.destWeights === undefined ? null : [...opts.destWeights],
    });
  }

  /** Frees the communicator. Pending operations on it must be complete. */
  free(): void {
    this.check('free');
    if (this.ctx === 0) throw new NbcCommError('Cannot free the world communicator: expected a communicator made by dup, split, create or cartCreate');
    this.freed = true;
    // Matching state of both contexts goes with it (what is still pending stays until done).
    this.transport.releaseContext(this.ctx);
    this.transport.releaseContext(this.ctx + 1);
  }

  // ---- Cartesian topology --------------------------------------------------------------

  protected cart(op: string): CartTopology {
    if (this.topology === null) {
      throw new NbcCommError(`Cannot ${op} on communicator ${this.ctx}: it has no Cartesian topology; expected a communicator from cartCreate`);
    }
    return this.topology;
  }

  get dims(): readonly number[] {
    return this.cart('read dims').dims;
  }

  get periods(): readonly boolean[] {
    return this.cart('read periods').periods;
  }

  get ndims(): number {
    return this.cart('read ndims').dims.length;
  }

  /** Grid coordinates of `rank` (default: this rank). */
  coords(rank: number = this.rank): number[] {
    return cartCoords(this.cart('coords').dims, rank);
  }

  /** Rank at `coords` (periodic dimensions wrap); PROC_NULL outside a non-periodic grid. */
  rankOf(coords: readonly number[]): number {
    const t = this.cart('rankOf');
    return cartRank(t.dims, t.periods, coords);
  }

  /** Neighbours `disp` steps along `dim`: where to receive from and send to. */
  shift(dim: number, disp: number): { source: number; dest: number } {
    const t = this.cart('shift');
    return cartShift(t.dims, t.periods, this.rank, dim, disp);
  }

  // ---- distributed-graph topology ---------------------------------------------------------

  protected graph(op: string): DistGraphTopology {
    if (this.distGraph === null) {
      throw new NbcCommError(`Cannot ${op} on communicator ${this.ctx}: it has no distributed-graph topology; expected a communicator from distGraphCreateAdjacent`);
    }
    return this.distGraph;
  }

  /** This rank's in- and out-degree (MPI_Dist_graph_neighbors_count), and whether weights were given. */
  distGraphNeighborsCount(): { indegree: number; outdegree: number; weighted: boolean } {
    const g = this.graph('distGraphNeighborsCount');
    return { indegree: g.sources.length, outdegree: g.destinations.length, weighted: g.sourceWeights !== null || g.destWeights !== null };
  }

  /** This rank's in- and out-neighbours in the order given at creation, with their weights (null when none were given). */
  distGraphNeighbors(): { sources: number[]; destinations: number[]; sourceWeights: number[] | null; destWeights: number[] | null } {
    const g = this.graph('distGraphNeighbors');
    return {
      sources: [...g.sources], destinations: [...g.destinations],
      sourceWeights: g.sourceWeights === null ? null : [...g.sourceWeights], destWeights: g.destWeights === null ? null : [...g.destWeights],
    };
  }

  /** Which topology this communicator has (MPI_Topo_test): 'cart', 'dist-graph' or null. */
  get topologyKind(): 'cart' | 'dist-graph' | null {
    return this.topology !== null ? 'cart' : this.distGraph !== null ? 'dist-graph' : null;
  }

  /**
   * The neighbourhood the neighbour collectives use: the Cartesian grid's or the distributed
   * graph's (NBC_ERR_COMM on a communicator with neither). Computed once per communicator.
   */
  protected neighborhood(op: string): Neighborhood {
    if (this.hood !== undefined) return this.hood;
    if (this.distGraph !== null) {
      this.hood = graphNeighborhood(this.distGraph.sources, this.distGraph.destinations);
    } else {
      const t = this.topology;
      if (t === null) {
        throw new NbcCommError(`Cannot ${op} on communicator ${this.ctx}: it has no topology; expected a communicator from cartCreate or distGraphCreateAdjacent`);
      }
      // Two sub-tags per dimension out of a collective instance's 16.
      if (t.dims.length > 8) throw new NbcArgError(`Cannot ${op} on communicator ${this.ctx}: this grid has ${t.dims.length} dimensions; expected at most 8`);
      this.hood = cartNeighborhood(t.dims, t.periods, this.rank);
    }
    return this.hood;
  }
  private hood: Neighborhood | undefined = undefined;

  /**
   * Message and byte counts of this rank (all communicators), the peers it has sent to (the
   * connections it used), how it reaches other nodes, and, over UCX, how its endpoints treat a
   * failed peer (NBC_UCX_ERR_MODE; null over TCP). `host` counts what this rank's thread sent:
   * point-to-point and the host executor's collectives. Collectives run by the offload and agg
   * executors are sent by the node engine and the fabric, not counted here (a Communicator's
   * stats() counts those calls under `executors`).
   */
  stats(): CommStats {
    const ucx = this.transport.ucx;
    return {
      host: { ...this.transport.stats, ucxPeakInFlight: ucx?.peakHeadersInFlight ?? 0 },
      interNode: ucx === null ? 'tcp' : 'ucx',
      ucxErrMode: ucx?.errMode ?? null,
    };
  }

  /**
   * Records into `trace` every message this rank sends or matches, on any communicator, and
   * every schedule it starts, until called with null. For tests (test/jobs/lean.ts proves the
   * lean blocking collectives send what their schedules send); off, it costs one null check
   * per message.
   */
  traceMessages(trace: MessageTrace | null): void {
    this.transport.trace = trace;
  }
}

/** Why cartCreate refuses `dims` and `periods` on a communicator of `size` ranks, or null. */
function cartProblem(dims: readonly number[], periods: readonly boolean[] | undefined, size: number, ctx: number): NbcArgError | null {
  if (!Array.isArray(dims)) return new NbcArgError(`Cannot cartCreate: dims is ${describeValue(dims)}; expected an array of positive integers`);
  if (periods !== undefined && !Array.isArray(periods)) {
    return new NbcArgError(`Cannot cartCreate: periods is ${describeValue(periods)}; expected an array of booleans, one per dimension, or nothing`);
  }
  if (periods !== undefined && dims.length !== periods.length) {
    return new NbcArgError(`Cannot cartCreate: dims has ${dims.length} entries but periods has ${periods.length}; expected the same length`);
  }
  let n = 1;
  for (const d of dims) {
    if (!Number.isInteger(d) || d <= 0) {
      return new NbcArgError(`Cannot cartCreate: dimension ${String(d)} is invalid; expected positive integers (use dimsCreate to fill zeros)`);
    }
    n *= d;
  }
  if (n > size) {
    return new NbcArgError(`Cannot cartCreate a ${dims.join('x')} grid (${n} ranks) on communicator ${ctx} of ${size} ranks: expected at most ${size}`);
  }
  return null;
}

/** A grid's hash, 31 bits (an Int32 the ranks exchange), for ranks to compare theirs (cartCreate). */
function gridFingerprint(dims: readonly number[], periods: readonly boolean[]): number {
  return fnv1a32(JSON.stringify([dims, periods])) & 0x7fffffff;
}

/** What `comm.stats()` says of a rank: its traffic, and how it reaches other nodes. */
export interface CommStats {
  /** What this rank's thread sent and received: point-to-point and host-executor collectives. */
  host: TransportStats;
  /** How this rank reaches ranks of other nodes. */
  interNode: 'ucx' | 'tcp';
  /** Over UCX, how its endpoints treat a failed peer (NBC_UCX_ERR_MODE); null over TCP. */
  ucxErrMode: UcxErrMode | null;
}

export { dimsCreate };
