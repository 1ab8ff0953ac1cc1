/**
 * The communicator users hold: point-to-point and communicator management from comm/, plus
 * every collective in three forms — blocking (`allreduce`), non-blocking (`iallreduce`,
 * returning a request) and persistent (`allreduceInit`, start/wait/test/free, restartable
 * without rebuilding its schedule).
 *
 * Each collective validates its arguments (typed NbcErrors, raised before any message is
 * sent), describes the call as a shape, picks an algorithm (select.ts), takes the schedule
 * from a bounded per-communicator cache keyed by call shape (never by buffer identity) and
 * hands it to the host executor with the call's buffers.
 */
import { Comm } from '../comm/comm.js';
import { cartNeighbors } from '../comm/topology.js';
import { bytesOf, describe, type TypedArray } from '../comm/validate.js';
import {
  NbcArgError, NbcCountError, NbcRootError, NbcTypeError,
} from '../errors.js';
import { bytesPerElement, ctorOf, dtypeOf, resolveOp, type DType, type OpLike, type ReduceKernel } from '../ops/index.js';
import { kernelFor, opById, registerUserOp } from '../ops/regions.js';
import { IN_PLACE, type InPlace } from '../p2p/constants.js';
import type { Request, Status } from '../p2p/request.js';
import { copyAt, copyBytes } from '../p2p/transport.js';
import type { CollTarget, Executor, Plan } from '../sched/executor.js';
import { executorFor } from '../sched/executors.js';
import { ScheduleBuilder, type Schedule } from '../sched/schedule.js';
import { select, type Choice, type CollName } from './select.js';
import { knomialNode, toActual, toRelative } from './patterns.js';
import { pow2Floor, shape, topologyOf, type CollShape, type Topology } from './shape.js';

export interface CollOptions {
  /** Algorithm name (see select.ts), e.g. 'ring' or 'knomial:4'. */
  algorithm?: string;
  /**
   * Who runs the schedule: 'host' (the calling rank, inside its calls; the default) or
   * 'offload' (its node's engine). 'agg' (in-network aggregation) is not in this build.
   */
  executor?: 'host' | 'offload' | 'agg';
}

/**
 * A call's options as remembered: a copy of their values, since the caller may change its
 * object between calls. Every field of CollOptions: a field added there must be added here
 * and in sameOptions.
 */
function keptOptions(o: CollOptions | undefined): CollOptions | undefined {
  return o === undefined ? undefined : { algorithm: o.algorithm, executor: o.executor };
}

/**
 * Whether a call's options choose the same plan as remembered ones (by value, so a fresh
 * object literal per call still finds its plan).
 */
function sameOptions(kept: CollOptions | undefined, given: CollOptions | undefined): boolean {
  if (kept === undefined || given === undefined) return kept === given;
  return kept.algorithm === given.algorithm && kept.executor === given.executor;
}

type Buf = TypedArray;
type BufOrInPlace = TypedArray | InPlace;
type Counts = ArrayLike<number>;

/** The schedule of plans the executor composes by itself (the engines' two-level forms). */
const COMPOSED = new ScheduleBuilder('composed by the executor').build();

const EMPTY: Uint8Array = new Uint8Array(0);
const CACHE_LIMIT = 128;
/** Largest buffer a memoised plan may hold on to. */
const MEMO_MAX_BYTES = 256 << 10;

/**
 * The shape fields a cached schedule depends on, besides the collective, the algorithm and
 * its degree (rank, size and topology are the communicator's own). Calls with per-rank count
 * arrays are not cached.
 */
const KEY_FIELDS = ['root', 'bytes', 'esize', 'dtype', 'op', 'commutative'] as const satisfies ReadonlyArray<keyof CollShape>;

/** A persistent collective: start() it any number of times; wait()/test() each start. */
export class PersistentRequest implements PromiseLike<Status> {
  private current: Request | null = null;
  private freed = false;

  constructor(private readonly comm: Communicator, private readonly plan: Plan) {}

  /** Starts one instance (all ranks must start their persistent collectives in the same order). */
  start(): this {
    if (this.freed) throw new NbcArgError(`Cannot start a freed persistent ${this.plan.coll}`);
    if (this.current !== null && !this.current.done) {
      throw new NbcArgError(`Cannot start persistent ${this.plan.coll}: the previous start is still active; wait for it first`);
    }
    this.current = this.comm.launchPlan(this.plan);
    return this;
  }

  private active(op: string): Request {
    if (this.current === null) throw new NbcArgError(`Cannot ${op} persistent ${this.plan.coll}: it was never started`);
    return this.current;
  }

  get done(): boolean {
    return this.current === null || this.current.done;
  }

  test(): boolean {
    return this.current === null ? true : this.current.test();
  }

  wait(): void {
    if (this.current !== null) this.active('wait').wait();
  }

  free(): void {
    if (this.current !== null && !this.current.done) {
      throw new NbcArgError(`Cannot free persistent ${this.plan.coll}: an instance is still active; wait for it first`);
    }
    this.freed = true;
  }

  /** The schedule this request runs (for inspection and dumps). */
  get schedule(): Schedule {
    return this.plan.sched;
  }

  then<R1 = Status, R2 = never>(onF?: ((v: Status) => R1 | PromiseLike<R1>) | null, onR?: ((e: unknown) => R2 | PromiseLike<R2>) | null): Promise<R1 | R2> {
    return this.active('await').then(onF, onR);
  }
}

export class Communicator extends Comm {
  private collSeq = 0;
  /**
   * Schedules by call shape. Hits update a use tick in place (no delete/re-insert: that would
   * leave a dead entry and a promoted key string in a long-lived Map on every call, which is
   * old-space garbage and, in a tight loop, major GCs).
   */
  private readonly cache = new Map<string, { sched: Schedule; used: number }>();
  private cacheTick = 0;

  // ---- plumbing ---------------------------------------------------------------------

  /**
   * Recent plans of the non-blocking calls (and of blocking ones without a lean path), per
   * collective, kept like the blocking calls' lists (findRecent). A plan depends only on the
   * buffers' identity and length, the scalars, the op and the options, so a loop that passes
   * the same arguments again reuses it and skips validation, selection and the cache lookup.
   * Only for collectives without count arrays: a caller may change a counts array in place
   * between calls.
   */
  private readonly planMemo = new Map<CollName, Array<RecentCall<never>>>();

  private memoPlan(coll: CollName, opts: CollOptions | undefined, build: () => Plan,
    a?: unknown, b?: unknown, c?: unknown, d?: unknown): Plan {
    let list = this.planMemo.get(coll);
    if (list === undefined) {
      list = [];
      this.planMemo.set(coll, list);
    }
    const hit = findRecent(list, a, b, c, d, opts);
    if (hit !== undefined) return hit.plan!;
    const plan = build();
    remember(list, Math.max(byteLengthOf(a), byteLengthOf(b)), a, b, c, d, opts, null, plan);
    return plan;
  }

  /** Tag of the next collective instance: its sequence number, times 16 sub-tags. */
  private nextTag(): number {
    return ((this.collSeq++ & 0x7ffffff) * 16) | 0;
  }

  /** One view per dtype over the node's ring memory, where lean receives read payloads in place. */
  private ringViews: Array<TypedArray | undefined> = [];

  private ringView(dt: DType): TypedArray {
    let v = this.ringViews[dt];
    if (v === undefined) {
      const Ctor = ctorOf(dt) as unknown as new (b: ArrayBufferLike) => TypedArray;
      v = new Ctor(this.transport.ringMemory.buffer);
      this.ringViews[dt] = v;
    }
    return v;
  }

  /** The executor a call names, or the configured default (NBC_EXECUTOR). */
  private executorName(opts: CollOptions | undefined): string {
    return opts?.executor ?? this.rc.config.executor;
  }

  /** The nodes this communicator spans (what hierarchical algorithms and selection see). */
  private get nodes(): Topology {
    if (this.topo === undefined) {
      const nodeOfRank = this.transport.placement.nodeOfRank;
      this.topo = topologyOf(this.size, (r) => nodeOfRank[this.worldRanks[r]!]!);
    }
    return this.topo;
  }
  private topo: Topology | undefined = undefined;

  /** Selects the algorithm of a call (select.ts) from what every rank shares. */
  private choose(coll: CollName, bytes: number, commutative: boolean, opts: CollOptions | undefined): Choice {
    const t = this.nodes;
    return select(coll, { size: this.size, bytes, commutative, executor: this.executorName(opts), nodes: t.nodes, ppn: t.ppn },
      opts?.algorithm, this.rc.config);
  }

  /**
   * Whether a blocking call takes its lean path: the algorithm left to the table, which picks
   * one the front end runs by hand, on the host executor, with a message that travels eagerly.
   */
  private leanEligible(coll: CollName, opts: CollOptions | undefined, bytes: number, commutative = true): boolean {
    if ((opts !== undefined && opts.algorithm !== undefined) || this.executorName(opts) !== 'host' ||
      bytes > this.transport.eagerLimit || this.size === 1) return false;
    const c = this.choose(coll, bytes, commutative, undefined);
    // The lean barrier is dissemination with one message per round.
    return c.lean && (coll !== 'barrier' || c.radix === 1);
  }

  /**
   * Plans a call: checks the communicator, selects, takes the schedule from the cache keyed by
   * call shape (or builds it), and names the executor that will run it.
   */
  private plan(coll: CollName, s: CollShape, opts: CollOptions | undefined, cacheable: boolean, send: Uint8Array, recv: Uint8Array,
    extra?: Partial<Plan>): Plan {
    this.check(coll);
    const executor: Executor = executorFor(this.transport, this.rc.config, this.executorName(opts), coll);
    const choice = this.choose(coll, s.bytes, s.commutative, opts);
    if (choice.composite !== undefined) {
      const composite = { kind: choice.composite, root: s.root, op: s.op, dtype: s.dtype, esize: s.esize };
      return { coll, sched: COMPOSED, send, recv, executor, composite, ...extra };
    }
    return { coll, sched: this.schedule(coll, choice, s, cacheable), send, recv, executor, ...extra };
  }

  private schedule(coll: CollName, choice: Choice, s: CollShape, cacheable: boolean): Schedule {
    let key = '';
    if (cacheable) {
      key = `${coll}|${choice.name}|${choice.radix}`;
      for (const f of KEY_FIELDS) key += `|${s[f]}`;
      const hit = this.cache.get(key);
      if (hit !== undefined) {
        hit.used = ++this.cacheTick;
        return hit.sched;
      }
    }
    const sched = choice.build({ ...s, radix: choice.radix, topo: this.nodes, leader: choice.leader });
    this.rc.config.schedDump?.(`[rank ${this.rank} comm ${this.ctx}] ${sched.toString((id) => opById(id).name)}`);
    if (cacheable) {
      if (this.cache.size >= CACHE_LIMIT) {
        let oldest = '';
        let oldestUse = Infinity;
        for (const [k, v] of this.cache) {
          if (v.used < oldestUse) {
            oldest = k;
            oldestUse = v.used;
          }
        }
        this.cache.delete(oldest);
      }
      this.cache.set(key, { sched, used: ++this.cacheTick });
    }
    return sched;
  }

  /** This communicator as the executors address it. */
  private get collTarget(): CollTarget {
    return (this.target ??= { collCtx: this.collCtx, rank: this.rank, worldRanks: this.worldRanks });
  }
  private target: CollTarget | undefined = undefined;

  /** Starts a planned collective on its executor; the next sequence number names its messages. */
  launchPlan(plan: Plan): Request {
    this.check(plan.coll);
    plan.before?.();
    return plan.executor.start(plan, this.collTarget, this.nextTag());
  }

  private base(root = 0): CollShape {
    return shape({ rank: this.rank, size: this.size, root });
  }

  private checkRoot(root: number, coll: string): void {
    if (!Number.isInteger(root) || root < 0 || root >= this.size) {
      throw new NbcRootError(`Cannot ${coll} on communicator ${this.ctx}: root ${String(root)} is out of range; expected an integer 0..${this.size - 1}`);
    }
  }

  private buf(coll: string, b: unknown, what: string): Uint8Array {
    return bytesOf(b, coll, this.ctx, what);
  }

  private sameType(coll: string, a: Buf, b: Buf): void {
    if (a.constructor !== b.constructor && !(a instanceof Uint8Array && b instanceof Uint8Array)) {
      throw new NbcTypeError(`Cannot ${coll} on communicator ${this.ctx}: send is ${describe(a)} but recv is ${describe(b)}; expected the same typed array type`);
    }
  }

  private count(coll: string, what: string, got: number, expected: number): void {
    if (got !== expected) {
      throw new NbcCountError(`Cannot ${coll} on communicator ${this.ctx}: ${what} has ${got} elements; expected ${expected}`);
    }
  }

  /** Validates an op for a buffer; returns the shape fields of a reduction. */
  private reduction(coll: string, op: OpLike, b: Buf): Pick<CollShape, 'dtype' | 'op' | 'commutative' | 'esize'> {
    const o = resolveOp(op, coll);
    const dt = dtypeOf(b);
    o.check(dt, b.length, coll);
    registerUserOp(o);
    return { dtype: dt, op: o.id, commutative: o.commutative, esize: bytesPerElement(dt) * o.itemLength };
  }

  /** Element counts and displacements to byte Int32Arrays, validated against a buffer. */
  private vector(coll: string, counts: Counts, displs: Counts | null, bpe: number, bufLen: number, what: string): { c: Int32Array; d: Int32Array } {
    if (counts === null || counts === undefined || counts.length !== this.size || (displs !== null && (displs === undefined || displs.length !== this.size))) {
      throw new NbcCountError(`Cannot ${coll} on communicator ${this.ctx}: ${what} counts and displacements must each have ${this.size} entries (one per rank)`);
    }
    const c = new Int32Array(this.size);
    const d = new Int32Array(this.size);
    let run = 0;
    for (let i = 0; i < this.size; i++) {
      const n = counts[i]!;
      const at = displs === null ? run : displs[i]!;
      if (!Number.isInteger(n) || n < 0 || !Number.isInteger(at) || at < 0 || at + n > bufLen) {
        throw new NbcCountError(`Cannot ${coll} on communicator ${this.ctx}: ${what} entry ${i} (count ${String(n)} at displacement ${String(at)}) does not fit a buffer of ${bufLen} elements; expected non-negative integers within it`);
      }
      c[i] = n * bpe;
      d[i] = at * bpe;
      run += n;
    }
    return { c, d };
  }

  private persistent(plan: Plan): PersistentRequest {
    if (plan.sched.tmpBytes > 0) plan.tmp = new Uint8Array(plan.sched.tmpBytes);
    plan.reuse = true;
    return new PersistentRequest(this, plan);
  }

  // ---- barrier ------------------------------------------------------------------------

  private planBarrier(opts?: CollOptions): Plan {
    return this.plan('barrier', this.base(), opts, true, EMPTY, EMPTY);
  }
  barrier(opts?: CollOptions): void {
    this.check('barrier');
    if ((opts === undefined || (opts.algorithm === undefined && this.executorName(opts) === 'host')) &&
      (this.leanBarrierOk ??= this.leanEligible('barrier', undefined, 0))) {
      this.leanBarrier();
      return;
    }
    this.launchPlan(this.memoPlan('barrier', opts, () => this.planBarrier(opts))).wait();
  }

  /** Whether this communicator's default barrier takes the lean path (dissemination with n = 1). */
  private leanBarrierOk: boolean | undefined = undefined;

  /** Blocking dissemination barrier (n = 1) straight on the transport; same messages as its schedule. */
  private leanBarrier(): void {
    const t = this.transport;
    const tag = this.nextTag();
    const p = this.size;
    for (let dist = 1; dist < p; dist *= 2) {
      t.sendSized(EMPTY, 0, this.worldRanks[(this.rank + dist) % p]!, this.collCtx, this.rank, tag);
      const from = (this.rank - dist + p) % p;
      if (t.recvEager(this.worldRanks[from]!, this.collCtx, from, tag, 0) >= 0) t.releaseEager();
      else t.takeEarly();
    }
  }
  ibarrier(opts?: CollOptions): Request { return this.launchPlan(this.memoPlan('barrier', opts, () => this.planBarrier(opts))); }
  barrierInit(opts?: CollOptions): PersistentRequest { return this.persistent(this.planBarrier(opts)); }

  // ---- bcast --------------------------------------------------------------------------

  private planBcast(buf: Buf, root: number, opts?: CollOptions): Plan {
    const v = this.buf('bcast', buf, 'buffer');
    this.checkRoot(root, 'bcast');
    const s = { ...this.base(root), bytes: v.byteLength, esize: bytesPerElement(dtypeOf(buf)) };
    return this.plan('bcast', s, opts, true, v, v);
  }
  private readonly recentBcast: Array<RecentCall<LeanBcast>> = [];

  bcast(buf: Buf, root: number, opts?: CollOptions): void {
    this.check('bcast');
    const hit = findRecent(this.recentBcast, buf, undefined, root, undefined, opts);
    let lean = hit?.lean ?? null;
    let plan = hit?.plan ?? null;
    if (hit === undefined) {
      plan = this.planBcast(buf, root, opts);
      const bytes = plan.recv.byteLength;
      if (this.leanEligible('bcast', opts, bytes)) {
        const p = this.size;
        const node = knomialNode(toRelative(this.rank, root, p), p, 2);
        const children = node.children.map((c) => toActual(c, root, p)).reverse();
        lean = { v: plan.recv, bytes, parent: node.parent < 0 ? -1 : toActual(node.parent, root, p), children };
        plan = null;
      }
      remember(this.recentBcast, bytes, buf, undefined, root, undefined, opts, lean, plan);
    }
    if (lean !== null) this.leanBcast(lean);
    else this.launchPlan(plan!).wait();
  }

  /** Blocking binomial bcast straight on the transport; the same messages as its schedule. */
  private leanBcast(l: LeanBcast): void {
    const t = this.transport;
    const tag = this.nextTag();
    if (l.parent >= 0) t.recvEagerInto(this.worldRanks[l.parent]!, this.collCtx, l.parent, tag, l.v, 0, l.bytes);
    for (let i = 0; i < l.children.length; i++) {
      t.sendSized(l.v, l.bytes, this.worldRanks[l.children[i]!]!, this.collCtx, this.rank, tag);
    }
  }
  ibcast(buf: Buf, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('bcast', opts, () => this.planBcast(buf, root, opts), buf, undefined, root));
  }
  bcastInit(buf: Buf, root: number, opts?: CollOptions): PersistentRequest { return this.persistent(this.planBcast(buf, root, opts)); }

  // ---- reduce / allreduce ---------------------------------------------------------------

  /**
   * reduce: `send` from every rank, the result in `recv` at the root (ignored elsewhere; may be
   * null). At the root, `send` may be IN_PLACE (the input is taken from recv) or `recv` may be
   * IN_PLACE (the result overwrites send).
   */
  private planReduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Plan {
    this.checkRoot(root, 'reduce');
    const isRoot = this.rank === root;
    if (send === IN_PLACE && !isRoot) {
      throw new NbcArgError(`Cannot reduce on communicator ${this.ctx}: only the root may pass IN_PLACE; rank ${this.rank} is not root ${root}`);
    }
    let input: Buf;
    let output: Buf | null;
    if (send === IN_PLACE) {
      input = output = recv as Buf;
    } else if (isRoot && recv === IN_PLACE) {
      input = output = send;
    } else {
      input = send;
      output = isRoot ? (recv as Buf) : null;
    }
    const sv = this.buf('reduce', input, 'send');
    const red = this.reduction('reduce', op, input);
    let rv: Uint8Array;
    if (output !== null) {
      rv = this.buf('reduce', output, 'recv');
      this.sameType('reduce', input, output);
      this.count('reduce', 'recv', output.length, input.length);
    } else {
      rv = new Uint8Array(sv.byteLength); // working space for algorithms that use RECV everywhere
    }
    const s = { ...this.base(root), ...red, bytes: sv.byteLength };
    return this.plan('reduce', s, opts, true, sv, rv, { workRecv: output === null });
  }
  reduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): void {
    this.launchPlan(this.memoPlan('reduce', opts, () => this.planReduce(send, recv, op, root, opts), send, recv, op, root)).wait();
  }
  ireduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('reduce', opts, () => this.planReduce(send, recv, op, root, opts), send, recv, op, root));
  }
  reduceInit(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planReduce(send, recv, op, root, opts));
  }

  /** allreduce: the result in `recv` on every rank. Either buffer may be IN_PLACE (the other is reduced in place). */
  private checkAllreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike) {
    if (send === IN_PLACE && recv === IN_PLACE) throw new NbcArgError('Cannot allreduce with both buffers IN_PLACE: expected one real buffer');
    const input = (send === IN_PLACE ? recv : send) as Buf;
    const output = (recv === IN_PLACE ? send : recv) as Buf;
    const sv = this.buf('allreduce', input, 'send');
    const rv = this.buf('allreduce', output, 'recv');
    this.sameType('allreduce', input, output);
    this.count('allreduce', 'recv', output.length, input.length);
    const red = this.reduction('allreduce', op, input);
    return { sv, rv, output, red };
  }
  private planAllreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): Plan {
    return this.planCheckedAllreduce(this.checkAllreduce(send, recv, op), opts);
  }

  private planCheckedAllreduce(c: ReturnType<Communicator['checkAllreduce']>, opts?: CollOptions): Plan {
    const { sv, rv, red } = c;
    const s = { ...this.base(), ...red, bytes: sv.byteLength };
    return this.plan('allreduce', s, opts, true, sv, rv);
  }
  /**
   * The last few blocking allreduces, resolved (the lean path's call, or the plan), reused when
   * a call passes the same buffers (same lengths), op and options again: loops do (a CG
   * iteration alternates a few), and validation plus selection would otherwise be most of
   * the cost of a small allreduce. Only derived facts are cached, never the data. Blocking
   * bcast and alltoall keep the same kind of list.
   */
  private readonly recentAllreduce: Array<RecentCall<LeanAllreduce>> = [];

  allreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): void {
    this.check('allreduce');
    const hit = findRecent(this.recentAllreduce, send, recv, op, undefined, opts);
    if (hit !== undefined) {
      if (hit.lean !== null) this.leanAllreduce(hit.lean);
      else this.launchPlan(hit.plan!).wait();
      return;
    }
    const c = this.checkAllreduce(send, recv, op);
    const bytes = c.sv.byteLength;
    let lean: LeanAllreduce | null = null;
    let plan: Plan | null = null;
    if (this.leanEligible('allreduce', opts, bytes, c.red.commutative)) {
      const dt = c.red.dtype as DType;
      lean = {
        sv: c.sv, rv: c.rv, mine: c.output, kernel: kernelFor(c.red.op, dt), dt, esize: bytesPerElement(dt), bytes,
        count: c.output.length, copyIn: c.sv.buffer !== c.rv.buffer || c.sv.byteOffset !== c.rv.byteOffset,
      };
    } else {
      plan = this.planCheckedAllreduce(c, opts);
    }
    remember(this.recentAllreduce, bytes, send, recv, op, undefined, opts, lean, plan);
    if (lean !== null) this.leanAllreduce(lean);
    else this.launchPlan(plan!).wait();
  }
  iallreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('allreduce', opts, () => this.planAllreduce(send, recv, op, opts), send, recv, op));
  }
  allreduceInit(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planAllreduce(send, recv, op, opts));
  }

  /**
   * Blocking small allreduce without the schedule machinery: exactly the recursive-doubling
   * schedule (allreduce.ts) — same messages, same tags, same fold order, so the same bits —
   * run straight on the transport. Per call it saves the plan, the request and the rounds,
   * which is most of the cost of an 8-byte allreduce.
   */
  private leanAllreduce(a: LeanAllreduce): void {
    const t = this.transport;
    const tag = this.nextTag();
    const rv = a.rv;
    if (a.copyIn) copyBytes(a.sv, rv, 0, a.bytes);
    const p = this.size;
    const rank = this.rank;
    const pp = pow2Floor(p);
    const r = p - pp;
    let newrank = rank - r;
    if (rank < 2 * r) {
      if (rank % 2 === 0) {
        t.sendSized(rv, a.bytes, this.worldRanks[rank + 1]!, this.collCtx, rank, tag);
        newrank = -1;
      } else {
        this.foldFrom(a, rank - 1, tag, true);
        newrank = rank >> 1;
      }
    }
    if (newrank >= 0) {
      for (let mask = 1; mask < pp; mask <<= 1) {
        const pnr = newrank ^ mask;
        const partner = pnr < r ? pnr * 2 + 1 : pnr + r;
        t.sendSized(rv, a.bytes, this.worldRanks[partner]!, this.collCtx, rank, tag);
        this.foldFrom(a, partner, tag, pnr < newrank);
      }
    }
    if (rank < 2 * r) {
      if (rank % 2 === 1) {
        t.sendSized(rv, a.bytes, this.worldRanks[rank - 1]!, this.collCtx, rank, tag);
      } else {
        t.recvEagerInto(this.worldRanks[rank + 1]!, this.collCtx, rank + 1, tag, rv, 0, a.bytes);
      }
    }
  }

  /**
   * Receives `peer`'s partial result and folds it into mine, in rank order: theirs ⊕ mine when
   * `theirsFirst`, else mine ⊕ theirs. The payload is read where it lies in the ring (ring
   * payloads are 8-byte aligned, so a typed view of any dtype reaches it); only a message that
   * arrived early comes as a private copy.
   */
  private foldFrom(a: LeanAllreduce, peer: number, tag: number, theirsFirst: boolean): void {
    const t = this.transport;
    const off = t.recvEager(this.worldRanks[peer]!, this.collCtx, peer, tag, a.bytes);
    if (off < 0) {
      const early = t.takeEarly();
      const Ctor = ctorOf(a.dt) as unknown as new (b: ArrayBufferLike, off: number, len: number) => TypedArray;
      fold(a, new Ctor(early.buffer, early.byteOffset, a.count), 0, theirsFirst, early, 0);
      return;
    }
    try {
      fold(a, this.ringView(a.dt), off / a.esize, theirsFirst, t.ringMemory, off);
    } finally {
      t.releaseEager();
    }
  }

  // ---- gather / scatter -----------------------------------------------------------------

  /** gather: block i of the root's recv comes from rank i. At the root send may be IN_PLACE (its block is already in recv). */
  private planGather(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): Plan {
    this.checkRoot(root, 'gather');
    const isRoot = this.rank === root;
    if (send === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot gather on communicator ${this.ctx}: only the root may pass IN_PLACE`);
    let sv: Uint8Array;
    let rv = EMPTY;
    if (isRoot) {
      rv = this.buf('gather', recv, 'recv');
      const n = send === IN_PLACE ? (recv as Buf).length / this.size : send.length;
      if (send !== IN_PLACE) this.sameType('gather', send, recv as Buf);
      this.count('gather', 'recv', (recv as Buf).length, n * this.size);
      sv = send === IN_PLACE ? rv.subarray(root * (rv.byteLength / this.size), (root + 1) * (rv.byteLength / this.size)) : this.buf('gather', send, 'send');
    } else {
      sv = this.buf('gather', send, 'send');
    }
    const s = { ...this.base(root), bytes: sv.byteLength };
    return this.plan('gather', s, opts, true, sv, rv);
  }
  gather(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): void {
    this.launchPlan(this.planGather(send, recv, root, opts)).wait();
  }
  igather(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.planGather(send, recv, root, opts));
  }
  gatherInit(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planGather(send, recv, root, opts));
  }

  /** scatter: block i of the root's send goes to rank i. At the root recv may be IN_PLACE (it keeps its block in send). */
  private planScatter(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
    this.checkRoot(root, 'scatter');
    const isRoot = this.rank === root;
    if (recv === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot scatter on communicator ${this.ctx}: only the root may pass IN_PLACE`);
    let sv = EMPTY;
    let rv: Uint8Array;
    if (isRoot) {
      sv = this.buf('scatter', send, 'send');
      const n = recv === IN_PLACE ? (send as Buf).length / this.size : recv.length;
      if (recv !== IN_PLACE) this.sameType('scatter', send as Buf, recv);
      this.count('scatter', 'send', (send as Buf).length, n * this.size);
      const B = sv.byteLength / this.size;
      rv = recv === IN_PLACE ? sv.subarray(root * B, (root + 1) * B) : this.buf('scatter', recv, 'recv');
    } else {
      rv = this.buf('scatter', recv, 'recv');
    }
    const s = { ...this.base(root), bytes: rv.byteLength };
    return this.plan('scatter', s, opts, true, sv, rv);
  }
  scatter(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): void {
    this.launchPlan(this.planScatter(send, recv, root, opts)).wait();
  }
  iscatter(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.planScatter(send, recv, root, opts));
  }
  scatterInit(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planScatter(send, recv, root, opts));
  }

  /** gatherv: `counts[i]` elements from rank i land at `displs[i]` of the root's recv (both significant at the root). */
  private planGatherv(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts, displs: Counts, root: number, opts?: CollOptions): Plan {
    this.checkRoot(root, 'gatherv');
    const isRoot = this.rank === root;
    if (send === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot gatherv on communicator ${this.ctx}: only the root may pass IN_PLACE`);
    const s = this.base(root);
    let sv: Uint8Array;
    let rv = EMPTY;
    if (isRoot) {
      rv = this.buf('gatherv', recv, 'recv');
      const r = recv as Buf;
      const bpe = bytesPerElement(dtypeOf(r));
      const { c, d } = this.vector('gatherv', counts, displs, bpe, r.length, 'recv');
      if (send !== IN_PLACE) {
        this.sameType('gatherv', send, r);
        this.count('gatherv', 'send', send.length, c[root]! / bpe);
      }
      sv = send === IN_PLACE ? rv.subarray(d[root]!, d[root]! + c[root]!) : this.buf('gatherv', send, 'send');
      s.counts = c;
      s.displs = d;
    } else {
      sv = this.buf('gatherv', send, 'send');
    }
    s.bytes = sv.byteLength;
    return this.plan('gatherv', s, opts, false, sv, rv);
  }
  gatherv(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts, displs: Counts, root: number, opts?: CollOptions): void {
    this.launchPlan(this.planGatherv(send, recv, counts, displs, root, opts)).wait();
  }
  igatherv(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts, displs: Counts, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.planGatherv(send, recv, counts, displs, root, opts));
  }
  gathervInit(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts, displs: Counts, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planGatherv(send, recv, counts, displs, root, opts));
  }

  /** scatterv: `counts[i]` elements at `displs[i]` of the root's send go to rank i. */
  private planScatterv(send: Buf | null | undefined, counts: Counts, displs: Counts, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
    this.checkRoot(root, 'scatterv');
    const isRoot = this.rank === root;
    if (recv === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot scatterv on communicator ${this.ctx}: only the root may pass IN_PLACE`);
    const s = this.base(root);
    let sv = EMPTY;
    let rv: Uint8Array;
    if (isRoot) {
      sv = this.buf('scatterv', send, 'send');
      const sb = send as Buf;
      const bpe = bytesPerElement(dtypeOf(sb));
      const { c, d } = this.vector('scatterv', counts, displs, bpe, sb.length, 'send');
      if (recv !== IN_PLACE) {
        this.sameType('scatterv', sb, recv);
        this.count('scatterv', 'recv', recv.length, c[root]! / bpe);
      }
      rv = recv === IN_PLACE ? sv.subarray(d[root]!, d[root]! + c[root]!) : this.buf('scatterv', recv, 'recv');
      s.counts = c;
      s.displs = d;
    } else {
      rv = this.buf('scatterv', recv, 'recv');
    }
    s.bytes = rv.byteLength;
    return this.plan('scatterv', s, opts, false, sv, rv);
  }
  scatterv(send: Buf | null | undefined, counts: Counts, displs: Counts, recv: BufOrInPlace, root: number, opts?: CollOptions): void {
    this.launchPlan(this.planScatterv(send, counts, displs, recv, root, opts)).wait();
  }
  iscatterv(send: Buf | null | undefined, counts: Counts, displs: Counts, recv: BufOrInPlace, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.planScatterv(send, counts, displs, recv, root, opts));
  }
  scattervInit(send: Buf | null | undefined, counts: Counts, displs: Counts, recv: BufOrInPlace, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planScatterv(send, counts, displs, recv, root, opts));
  }

  // ---- allgather ------------------------------------------------------------------------

  /** allgather: block i of every recv comes from rank i. send may be IN_PLACE (own block already in recv). */
  private planAllgather(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan {
    const rv = this.buf('allgather', recv, 'recv');
    const n = send === IN_PLACE ? recv.length / this.size : send.length;
    if (send !== IN_PLACE) this.sameType('allgather', send, recv);
    this.count('allgather', 'recv', recv.length, n * this.size);
    const B = rv.byteLength / this.size;
    const sv = send === IN_PLACE ? rv.subarray(this.rank * B, (this.rank + 1) * B) : this.buf('allgather', send, 'send');
    const s = { ...this.base(), bytes: sv.byteLength };
    return this.plan('allgather', s, opts, true, sv, rv);
  }
  allgather(send: BufOrInPlace, recv: Buf, opts?: CollOptions): void {
    this.launchPlan(this.memoPlan('allgather', opts, () => this.planAllgather(send, recv, opts), send, recv)).wait();
  }
  iallgather(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('allgather', opts, () => this.planAllgather(send, recv, opts), send, recv));
  }
  allgatherInit(send: BufOrInPlace, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(this.planAllgather(send, recv, opts)); }

  private planAllgatherv(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): Plan {
    const rv = this.buf('allgatherv', recv, 'recv');
    const bpe = bytesPerElement(dtypeOf(recv));
    const { c, d } = this.vector('allgatherv', counts, displs, bpe, recv.length, 'recv');
    if (send !== IN_PLACE) {
      this.sameType('allgatherv', send, recv);
      this.count('allgatherv', 'send', send.length, c[this.rank]! / bpe);
    }
    const sv = send === IN_PLACE ? rv.subarray(d[this.rank]!, d[this.rank]! + c[this.rank]!) : this.buf('allgatherv', send, 'send');
    const s = { ...this.base(), bytes: sv.byteLength, counts: c, displs: d };
    return this.plan('allgatherv', s, opts, false, sv, rv);
  }
  allgatherv(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): void {
    this.launchPlan(this.planAllgatherv(send, recv, counts, displs, opts)).wait();
  }
  iallgatherv(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): Request {
    return this.launchPlan(this.planAllgatherv(send, recv, counts, displs, opts));
  }
  allgathervInit(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planAllgatherv(send, recv, counts, displs, opts));
  }

  // ---- alltoall ---------------------------------------------------------------------------

  /** alltoall: block j of rank i's send lands at block i of rank j's recv. send may be IN_PLACE (data in recv). */
  private planAlltoall(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan {
    const rv = this.buf('alltoall', recv, 'recv');
    if (send !== IN_PLACE) {
      this.sameType('alltoall', send, recv);
      this.count('alltoall', 'recv', recv.length, send.length);
    }
    if (recv.length % this.size !== 0) {
      throw new NbcCountError(`Cannot alltoall on communicator ${this.ctx}: ${recv.length} elements do not split into ${this.size} equal blocks`);
    }
    let sv: Uint8Array;
    let before: (() => void) | undefined;
    if (send === IN_PLACE) {
      // The input must survive while recv is overwritten: snapshot it at every start.
      const copy = new Uint8Array(rv.byteLength);
      sv = copy;
      before = () => copy.set(rv);
    } else {
      sv = this.buf('alltoall', send, 'send');
    }
    const s = { ...this.base(), bytes: rv.byteLength / this.size };
    return this.plan('alltoall', s, opts, true, sv, rv, { before });
  }
  private readonly recentAlltoall: Array<RecentCall<LeanAlltoall>> = [];

  alltoall(send: BufOrInPlace, recv: Buf, opts?: CollOptions): void {
    this.check('alltoall');
    const hit = findRecent(this.recentAlltoall, send, recv, undefined, undefined, opts);
    let lean = hit?.lean ?? null;
    let plan = hit?.plan ?? null;
    if (hit === undefined) {
      plan = this.planAlltoall(send, recv, opts);
      const bytes = plan.recv.byteLength;
      const block = bytes / this.size;
      if (send !== IN_PLACE && this.leanEligible('alltoall', opts, block)) {
        const sv = plan.send;
        const blocks = Array.from({ length: this.size }, (_, r) => sv.subarray(r * block, (r + 1) * block));
        lean = { sv, rv: plan.recv, block, blocks };
        plan = null;
      }
      remember(this.recentAlltoall, bytes, send, recv, undefined, undefined, opts, lean, plan);
    }
    if (lean !== null) this.leanAlltoall(lean);
    else this.launchPlan(plan!).wait();
  }

  /**
   * Blocking alltoall with scattered destinations straight on the transport: every block sent
   * ((rank + k) mod p, k = 1..p-1), then every block received; the same messages as its
   * schedule.
   */
  private leanAlltoall(l: LeanAlltoall): void {
    const t = this.transport;
    const tag = this.nextTag();
    const p = this.size;
    const rank = this.rank;
    const B = l.block;
    copyAt(l.sv, rank * B, l.rv, rank * B, B);
    for (let k = 1; k < p; k++) {
      const to = (rank + k) % p;
      t.sendSized(l.blocks[to]!, B, this.worldRanks[to]!, this.collCtx, rank, tag);
    }
    for (let k = 1; k < p; k++) {
      const from = (rank - k + p) % p;
      t.recvEagerInto(this.worldRanks[from]!, this.collCtx, from, tag, l.rv, from * B, B);
    }
  }
  ialltoall(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('alltoall', opts, () => this.planAlltoall(send, recv, opts), send, recv));
  }
  alltoallInit(send: BufOrInPlace, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(this.planAlltoall(send, recv, opts)); }

  private planAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
    const sv = this.buf('alltoallv', send, 'send');
    const rv = this.buf('alltoallv', recv, 'recv');
    this.sameType('alltoallv', send, recv);
    const bpe = bytesPerElement(dtypeOf(send));
    const sx = this.vector('alltoallv', scounts, sdispls, bpe, send.length, 'send');
    const rx = this.vector('alltoallv', rcounts, rdispls, bpe, recv.length, 'recv');
    const s = { ...this.base(), counts: sx.c, displs: sx.d, rcounts: rx.c, rdispls: rx.d };
    return this.plan('alltoallv', s, opts, false, sv, rv);
  }
  alltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): void {
    this.launchPlan(this.planAlltoallv(send, scounts, sdispls, recv, rcounts, rdispls, opts)).wait();
  }
  ialltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Request {
    return this.launchPlan(this.planAlltoallv(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  alltoallvInit(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planAlltoallv(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }

  // ---- reduce-scatter --------------------------------------------------------------------

  /** reduceScatter: rank i gets `counts[i]` elements of the reduced vector. send may be IN_PLACE (input in recv, result at its start). */
  private planReduceScatter(coll: 'reduceScatter' | 'reduceScatterBlock', send: BufOrInPlace, recv: Buf, counts: Counts | null, op: OpLike, opts?: CollOptions): Plan {
    const rv = this.buf(coll, recv, 'recv');
    const input = send === IN_PLACE ? recv : send;
    const sv = this.buf(coll, input, 'send');
    this.sameType(coll, input, recv);
    const red = this.reduction(coll, op, input);
    const bpe = bytesPerElement(red.dtype as DType);
    let c: Int32Array;
    if (counts === null) {
      const n = send === IN_PLACE ? recv.length / this.size : recv.length;
      this.count(coll, 'send', input.length, n * this.size);
      c = new Int32Array(this.size).fill(n * bpe);
    } else {
      c = this.vector(coll, counts, null, bpe, input.length, 'send').c;
      let total = 0;
      for (let i = 0; i < this.size; i++) total += c[i]!;
      this.count(coll, 'send', input.length, total / bpe);
      if (send !== IN_PLACE) this.count(coll, 'recv', recv.length, c[this.rank]! / bpe);
    }
    for (let i = 0; i < this.size; i++) {
      if (c[i]! % red.esize !== 0) {
        throw new NbcCountError(`Cannot ${coll} on communicator ${this.ctx}: rank ${i}'s block of ${c[i]! / bpe} elements splits an item of the op`);
      }
    }
    const out = send === IN_PLACE ? rv.subarray(0, c[this.rank]!) : rv;
    const s = { ...this.base(), ...red, bytes: sv.byteLength, counts: c };
    return this.plan(coll, s, opts, false, sv, out);
  }
  reduceScatterBlock(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): void {
    this.launchPlan(this.planReduceScatter('reduceScatterBlock', send, recv, null, op, opts)).wait();
  }
  ireduceScatterBlock(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Request {
    return this.launchPlan(this.planReduceScatter('reduceScatterBlock', send, recv, null, op, opts));
  }
  reduceScatterBlockInit(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planReduceScatter('reduceScatterBlock', send, recv, null, op, opts));
  }
  reduceScatter(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): void {
    this.launchPlan(this.planReduceScatter('reduceScatter', send, recv, counts, op, opts)).wait();
  }
  ireduceScatter(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): Request {
    return this.launchPlan(this.planReduceScatter('reduceScatter', send, recv, counts, op, opts));
  }
  reduceScatterInit(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planReduceScatter('reduceScatter', send, recv, counts, op, opts));
  }

  // ---- scan / exscan ------------------------------------------------------------------------

  /** scan: rank i gets send_0 ⊕ ... ⊕ send_i; exscan: send_0 ⊕ ... ⊕ send_{i-1} (rank 0's recv is untouched). */
  private planScan(coll: 'scan' | 'exscan', send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan {
    const rv = this.buf(coll, recv, 'recv');
    const input = send === IN_PLACE ? recv : send;
    this.sameType(coll, input, recv);
    this.count(coll, 'recv', recv.length, input.length);
    const red = this.reduction(coll, op, input);
    let sv = this.buf(coll, input, 'send');
    let before: (() => void) | undefined;
    if (send === IN_PLACE) {
      const copy = new Uint8Array(rv.byteLength);
      sv = copy;
      before = () => copy.set(rv);
    }
    const s = { ...this.base(), ...red, bytes: rv.byteLength };
    return this.plan(coll, s, opts, true, sv, rv, { before });
  }
  scan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): void { this.launchPlan(this.planScan('scan', send, recv, op, opts)).wait(); }
  iscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Request { return this.launchPlan(this.planScan('scan', send, recv, op, opts)); }
  scanInit(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): PersistentRequest { return this.persistent(this.planScan('scan', send, recv, op, opts)); }
  exscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): void { this.launchPlan(this.planScan('exscan', send, recv, op, opts)).wait(); }
  iexscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Request { return this.launchPlan(this.planScan('exscan', send, recv, op, opts)); }
  exscanInit(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): PersistentRequest { return this.persistent(this.planScan('exscan', send, recv, op, opts)); }

  // ---- neighbour collectives (Cartesian communicators) ----------------------------------------

  private neighbors(coll: string): Int32Array {
    const t = this.cart(coll);
    if (t.dims.length > 8) throw new NbcArgError(`Cannot ${coll}: at most 8 dimensions are supported; this grid has ${t.dims.length}`);
    return Int32Array.from(cartNeighbors(t.dims, t.periods, this.rank));
  }

  /** neighborAllgather: recv block i comes from neighbour i (per dimension: -1 then +1). */
  private planNeighborAllgather(send: Buf, recv: Buf, opts?: CollOptions): Plan {
    const nb = this.neighbors('neighborAllgather');
    const sv = this.buf('neighborAllgather', send, 'send');
    const rv = this.buf('neighborAllgather', recv, 'recv');
    this.sameType('neighborAllgather', send, recv);
    this.count('neighborAllgather', 'recv', recv.length, send.length * nb.length);
    const s = { ...this.base(), bytes: sv.byteLength, neighbors: nb };
    return this.plan('neighborAllgather', s, opts, false, sv, rv);
  }
  neighborAllgather(send: Buf, recv: Buf, opts?: CollOptions): void { this.launchPlan(this.planNeighborAllgather(send, recv, opts)).wait(); }
  ineighborAllgather(send: Buf, recv: Buf, opts?: CollOptions): Request { return this.launchPlan(this.planNeighborAllgather(send, recv, opts)); }
  neighborAllgatherInit(send: Buf, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(this.planNeighborAllgather(send, recv, opts)); }

  /** neighborAlltoall: send block i goes to neighbour i, recv block i comes from neighbour i. */
  private planNeighborAlltoall(send: Buf, recv: Buf, opts?: CollOptions): Plan {
    const nb = this.neighbors('neighborAlltoall');
    this.sameType('neighborAlltoall', send, recv);
    this.count('neighborAlltoall', 'recv', recv.length, send.length);
    if (send.length % nb.length !== 0) {
      throw new NbcCountError(`Cannot neighborAlltoall: ${send.length} elements do not split into ${nb.length} equal blocks (one per neighbour)`);
    }
    const sv = this.buf('neighborAlltoall', send, 'send');
    const rv = this.buf('neighborAlltoall', recv, 'recv');
    const B = sv.byteLength / nb.length;
    const c = new Int32Array(nb.length).fill(B);
    const d = Int32Array.from({ length: nb.length }, (_, i) => i * B);
    const s = { ...this.base(), neighbors: nb, counts: c, displs: d, rcounts: c, rdispls: d };
    return this.plan('neighborAlltoall', s, opts, false, sv, rv);
  }
  neighborAlltoall(send: Buf, recv: Buf, opts?: CollOptions): void { this.launchPlan(this.planNeighborAlltoall(send, recv, opts)).wait(); }
  ineighborAlltoall(send: Buf, recv: Buf, opts?: CollOptions): Request { return this.launchPlan(this.planNeighborAlltoall(send, recv, opts)); }
  neighborAlltoallInit(send: Buf, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(this.planNeighborAlltoall(send, recv, opts)); }

  private planNeighborAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
    const nb = this.neighbors('neighborAlltoallv');
    this.sameType('neighborAlltoallv', send, recv);
    const sv = this.buf('neighborAlltoallv', send, 'send');
    const rv = this.buf('neighborAlltoallv', recv, 'recv');
    const bpe = bytesPerElement(dtypeOf(send));
    const vec = (counts: Counts, displs: Counts, len: number, what: string): { c: Int32Array; d: Int32Array } => {
      if (counts?.length !== nb.length || displs?.length !== nb.length) {
        throw new NbcCountError(`Cannot neighborAlltoallv: ${what} counts and displacements must have ${nb.length} entries (one per neighbour)`);
      }
      const c = new Int32Array(nb.length);
      const d = new Int32Array(nb.length);
      for (let i = 0; i < nb.length; i++) {
        const n = counts[i]!;
        const at = displs[i]!;
        if (!Number.isInteger(n) || n < 0 || !Number.isInteger(at) || at < 0 || at + n > len) {
          throw new NbcCountError(`Cannot neighborAlltoallv: ${what} entry ${i} (count ${String(n)} at ${String(at)}) does not fit a buffer of ${len} elements`);
        }
        c[i] = n * bpe;
        d[i] = at * bpe;
      }
      return { c, d };
    };
    const sx = vec(scounts, sdispls, send.length, 'send');
    const rx = vec(rcounts, rdispls, recv.length, 'recv');
    const s = { ...this.base(), neighbors: nb, counts: sx.c, displs: sx.d, rcounts: rx.c, rdispls: rx.d };
    return this.plan('neighborAlltoallv', s, opts, false, sv, rv);
  }
  neighborAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): void {
    this.launchPlan(this.planNeighborAlltoallv(send, scounts, sdispls, recv, rcounts, rdispls, opts)).wait();
  }
  ineighborAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Request {
    return this.launchPlan(this.planNeighborAlltoallv(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  neighborAlltoallvInit(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): PersistentRequest {
    return this.persistent(this.planNeighborAlltoallv(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
}

/** A communicator with a Cartesian topology (made by cartCreate). */
export type CartComm = Communicator;

/** A blocking allreduce the lean path runs, resolved once per call shape. */
interface LeanAllreduce {
  sv: Uint8Array;
  rv: Uint8Array;
  /** The recv buffer, typed. */
  mine: TypedArray;
  kernel: ReduceKernel;
  dt: DType;
  esize: number;
  bytes: number;
  count: number;
  /** Whether send must be copied into recv first (not IN_PLACE). */
  copyIn: boolean;
}

/**
 * One step of a lean allreduce: mine = theirs ⊕ mine when `theirsFirst`; else mine ⊕ theirs,
 * computed into their buffer (a ring record stays ours until released, an early copy is
 * private) and copied into recv.
 */
function fold(a: LeanAllreduce, theirs: TypedArray, at: number, theirsFirst: boolean, theirBytes: Uint8Array, byteAt: number): void {
  if (theirsFirst) {
    a.kernel(a.mine, 0, theirs, at, a.count);
  } else {
    a.kernel(theirs, at, a.mine, 0, a.count);
    copyAt(theirBytes, byteAt, a.rv, 0, a.bytes);
  }
}

/**
 * A call, resolved: the lean path's call when the call takes it, else its plan. Keyed by up
 * to four arguments (by identity; the buffers a and b by identity and length) and the
 * options (by value).
 */
interface RecentCall<L> {
  a: unknown;
  b: unknown;
  c: unknown;
  d: unknown;
  la: number;
  lb: number;
  opts: CollOptions | undefined;
  lean: L | null;
  plan: Plan | null;
}

const lengthOf = (x: unknown): number => (ArrayBuffer.isView(x) ? (x as TypedArray).length : -1);
const byteLengthOf = (x: unknown): number => (ArrayBuffer.isView(x) ? x.byteLength : 0);

function findRecent<L>(list: ReadonlyArray<RecentCall<L>>, a: unknown, b: unknown, c: unknown, d: unknown,
  opts: CollOptions | undefined): RecentCall<L> | undefined {
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    if (m.a === a && m.b === b && m.c === c && m.d === d && sameOptions(m.opts, opts) &&
      m.la === lengthOf(a) && m.lb === lengthOf(b)) return m;
  }
  return undefined;
}

/**
 * Remembers a resolved call (the last four per list). Remembering keeps its buffers
 * alive, so only calls of at most MEMO_MAX_BYTES are: small ones, whose per-call cost matters.
 */
function remember<L>(list: Array<RecentCall<L>>, bytes: number, a: unknown, b: unknown, c: unknown, d: unknown,
  opts: CollOptions | undefined, lean: L | null, plan: Plan | null): void {
  if (bytes > MEMO_MAX_BYTES) return;
  if (plan !== null) plan.reuse = true;
  if (list.length === 4) list.pop();
  list.unshift({ a, b, c, d, la: lengthOf(a), lb: lengthOf(b), opts: keptOptions(opts), lean, plan });
}

/** A blocking bcast the lean path runs (binomial tree), resolved once per call shape. */
interface LeanBcast {
  v: Uint8Array;
  bytes: number;
  /** Parent's rank, or -1 at the root. */
  parent: number;
  /** Children's ranks, in the order the schedule sends to them (largest subtree first). */
  children: number[];
}

/** A blocking alltoall the lean path runs (scattered destinations), resolved once per call shape. */
interface LeanAlltoall {
  sv: Uint8Array;
  rv: Uint8Array;
  /** Bytes per block. */
  block: number;
  /** The send buffer's block for each rank. */
  blocks: Uint8Array[];
}
