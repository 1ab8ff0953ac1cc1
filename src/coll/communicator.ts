/**
 * The communicator users hold: point-to-point and communicator management from comm/, plus
 * every collective in three forms — blocking (`allreduce`), non-blocking (`iallreduce`,
 * returning a request) and persistent (`allreduceInit`, start/wait/test/free, restartable
 * without rebuilding its schedule).
 *
 * A facade of short methods. The work lives beside it: argument checks (args.ts), planning
 * per collective (plan-rooted.ts, plan-global.ts, plan-neighbor.ts), the schedule cache and
 * the recent-call memo (memo.ts), persistent requests (persistent.ts) and the lean blocking
 * paths (lean.ts). What stays here is what ties them to one communicator: the sequence
 * numbers that tag its collectives, its nodes, selection with its executor, and the planner
 * that the planning modules call back.
 */
import { CHECK_TAG, Comm, type CommStats } from '../comm/comm.js';
import { describeValue } from '../describe.js';
import { NbcArgError, NbcOpError } from '../errors.js';
import type { TypedArrayConstructor } from '../comm/validate.js';
import { dtypeOf, resolveOp, type DType, type OpLike } from '../ops/index.js';
import { USER_OP_ID_BASE } from '../ops/op.js';
import { opById } from '../ops/regions.js';
import { IN_PLACE } from '../p2p/constants.js';
import type { Request } from '../p2p/request.js';
import type { CollTarget, Executor, ExecutorsStats, Plan } from '../sched/executor.js';
import { fabricReduces, fabricTakes } from '../sched/agg-executor.js';
import { executorFor, executorStats, executorStatsCopy, releaseCommunicator } from '../sched/executors.js';
import { ScheduleBuilder, type Schedule } from '../sched/schedule.js';
import type { Buf, BufOrInPlace, Counts, Planner } from './args.js';
import {
  leanAllreduceOf, leanAlltoallOf, leanBcastOf, LeanPaths, type LeanAllreduce, type LeanAlltoall, type LeanBcast,
} from './lean.js';
import { allreduceReproducible, releaseReproducible, reproducibleInit, startReproducible, wantsReproducible, type ReproducibleCall, type ReproducibleColl } from './reproducible.js';
import { callSignature, disagreement, numberCall } from './check-calls.js';
import { BOARD_DATA_BYTES, FlatBoard } from './flat.js';
import { byteLengthOf, findRecent, recentCalls, remember, ScheduleCache, type CountArrays, type RecentCall } from './memo.js';
import { checkOptions, type CollOptions } from './options.js';
import { PersistentRequest } from './persistent.js';
import {
  checkAllreduce, planAllgather, planAllgatherv, planAllreduce, planAlltoall, planAlltoallv, planBarrier, planCheckedAllreduce,
  planReduceScatter, planScan,
} from './plan-global.js';
import { planNeighborAllgather, planNeighborAlltoall, planNeighborAlltoallv } from './plan-neighbor.js';
import { planBcast, planGather, planGatherv, planReduce, planScatter, planScatterv } from './plan-rooted.js';
import { ALGORITHMS, select, type Choice, type CollName } from './select.js';
import { shape, topologyOf, type CollShape, type Topology } from './shape.js';

export type { CollOptions } from './options.js';
export { PersistentRequest } from './persistent.js';

/** The schedule of plans the executor composes by itself (the engines' two-level forms). */
const COMPOSED = new ScheduleBuilder('composed by the executor').build();

export class Communicator extends Comm {
  private collSeq = 0;
  /** Schedules by call shape (memo.ts). */
  private readonly cache = new ScheduleCache();

  // ---- plumbing ---------------------------------------------------------------------

  /**
   * Recent plans of the non-blocking calls (and of blocking ones without a lean path), per
   * collective, kept like the blocking calls' lists (findRecent). A plan depends only on the
   * buffers' identity and length, the scalars, the op, the options and the values of the count
   * arrays, so a loop that passes the same arguments again reuses it and skips validation,
   * selection and the cache lookup. Count arrays are compared by value (a caller may change
   * one in place between calls): O(size) per call, against planning's many times that.
   */
  private readonly planMemo = new Map<CollName, Array<RecentCall<never>>>();

  private memoPlan(coll: CollName, opts: CollOptions | undefined, build: () => Plan,
    a?: unknown, b?: unknown, c?: unknown, d?: unknown, counts?: CountArrays): Plan {
    let list = this.planMemo.get(coll);
    if (list === undefined) {
      list = recentCalls();
      this.planMemo.set(coll, list);
    }
    const hit = findRecent(list, a, b, c, d, opts, counts);
    if (hit !== undefined) return hit.plan!;
    const plan = build();
    remember(list, Math.max(byteLengthOf(a), byteLengthOf(b)), a, b, c, d, opts, null, plan, counts);
    return plan;
  }

  /**
   * Tag of the next collective instance: its sequence number (mod 2^26), times 16 sub-tags:
   * below 2^30, clear of the internal exchanges' tags (comm.ts EXCHANGE_TAG, CHECK_TAG).
   */
  private nextTag(): number {
    return (this.collSeq++ & 0x3ffffff) * 16;
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
  private choose(coll: CollName, bytes: number, commutative: boolean, opts: CollOptions | undefined, fabricFits?: boolean, nonblocking?: boolean): Choice {
    const t = this.nodes;
    return select(coll, { size: this.size, bytes, commutative, executor: this.executorName(opts), nodes: t.nodes, ppn: t.ppn, uniform: t.uniform, fabricFits, nonblocking },
      opts?.algorithm, this.rc.config);
  }

  /**
   * The algorithm a call would run: the per-call override, else NBC_<COLLECTIVE>_ALGORITHM,
   * else the selection table (with this communicator's nodes and the cost model), as
   * `name` or `name:degree` for algorithms that take one. `bytes` is one rank's block, as the
   * call would pass it. For logs, tuning and tests; it sends nothing. For a reduction, `op`
   * and `type` (the buffers' typed-array class) say what the call reduces: whether the
   * aggregation fabric takes it (executor `agg`; without them, a call it takes, such as a sum
   * of Float64Array) and whether the op commutes (else `commutative`, default true).
   */
  algorithmFor(coll: CollName, bytes: number, opts?: CollOptions & { commutative?: boolean; op?: OpLike; type?: TypedArrayConstructor }): string {
    if (!Object.hasOwn(ALGORITHMS, coll)) {
      throw new NbcArgError(`Cannot say the algorithm of ${describeValue(coll)}: not a collective; expected one of ${Object.keys(ALGORITHMS).join(', ')}`);
    }
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new NbcArgError(`Cannot say the algorithm of ${coll} for ${String(bytes)} bytes: expected a non-negative integer byte count`);
    }
    const op = opts?.op === undefined ? undefined : resolveOp(opts.op, `algorithmFor ${coll}`);
    const dtype = opts?.type === undefined ? undefined : dtypeOf(new opts.type(0));
    const fabricFits = this.executorName(opts) !== 'agg' ? undefined
      : op === undefined || dtype === undefined || fabricTakes(coll, op.id, dtype);
    const c = this.choose(coll, bytes, op?.commutative ?? opts?.commutative ?? true, opts, fabricFits);
    return ALGORITHMS[coll][c.name]!.radix === undefined ? c.name : `${c.name}:${c.radix}`;
  }

  /**
   * Whether a blocking call takes its lean path: the algorithm left to the table, which picks
   * one the front end runs by hand, on the host executor, with a message that travels eagerly.
   */
  private leanEligible(coll: CollName, opts: CollOptions | undefined, bytes: number, commutative = true, fabricFits = false): boolean {
    const executor = this.executorName(opts);
    if ((opts !== undefined && opts.algorithm !== undefined) || (executor !== 'host' && executor !== 'agg') ||
      bytes > this.transport.eagerLimit || this.size === 1 || this.rc.config.checkCalls) return false;
    // On agg, a call the fabric does not take runs a host algorithm, lean where it can; one it
    // takes is composed by the engines (never lean).
    const c = executor === 'agg'
      ? this.choose(coll, bytes, commutative, { executor }, fabricFits)
      : this.choose(coll, bytes, commutative, undefined);
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
    checkOptions(opts);
    if (opts?.reproducible === true) {
      throw new NbcArgError(`Cannot ${coll} on communicator ${this.ctx} with { reproducible: true }: it applies to the reductions (allreduce, reduce, reduceScatter, reduceScatterBlock, scan, exscan; blocking, non-blocking and persistent); expected one of them`);
    }
    const executor: Executor = executorFor(this.transport, this.rc.config, this.executorName(opts), coll);
    // Refused here, on every rank alike: a rank whose schedule happens to hold no reduction
    // would otherwise post it and wait for peers that refused theirs.
    if (executor.name === 'offload' && s.op >= USER_OP_ID_BASE) {
      throw new NbcOpError(`Cannot offload ${coll} with a user-defined op: it runs only in the thread that created it; expected a predefined op or executor host`);
    }
    const fabricFits = executor.name === 'agg' ? fabricTakes(coll, s.op, s.dtype) : undefined;
    const choice = this.choose(coll, s.bytes, s.commutative, opts, fabricFits, s.nonblocking);
    // A non-root's reduce works in a RECV of its own: the host executor takes it from its pool
    // at every start; the others run on the buffer given here.
    if (extra?.workRecvBytes !== undefined && executor.name !== 'host') recv = new Uint8Array(extra.workRecvBytes);
    const sig = this.rc.config.checkCalls ? { sig: callSignature(coll, s, executor.name, choice.name, choice.radix) } : null;
    if (choice.composite !== undefined) {
      const composite = { kind: choice.composite, root: s.root, op: s.op, dtype: s.dtype, esize: s.esize };
      return { coll, sched: COMPOSED, send, recv, executor, composite, ...extra, ...sig };
    }
    return { coll, sched: this.schedule(coll, choice, s, cacheable), send, recv, executor, ...extra, ...sig };
  }

  private schedule(coll: CollName, choice: Choice, s: CollShape, cacheable: boolean): Schedule {
    const key = cacheable ? ScheduleCache.key(coll, choice.name, choice.radix, s) : '';
    const hit = cacheable ? this.cache.get(key) : undefined;
    if (hit !== undefined) return hit;
    const sched = choice.build({ ...s, radix: choice.radix, topo: this.nodes, leader: choice.leader });
    this.rc.config.schedDump?.(`[rank ${this.rank} comm ${this.ctx}] ${sched.toString((id) => opById(id).name)}`);
    if (cacheable) this.cache.set(key, sched);
    return sched;
  }

  /** What the planning modules (plan-*.ts) call back. */
  private get planner(): Planner {
    return (this.planning ??= {
      rank: this.rank,
      size: this.size,
      ctx: this.ctx,
      base: (root = 0) => shape({ rank: this.rank, size: this.size, root }),
      plan: (coll, s, opts, cacheable, send, recv, extra) => this.plan(coll, s, opts, cacheable, send, recv, extra),
      neighbors: (coll) => this.neighborhood(coll),
    });
  }
  private planning: Planner | undefined = undefined;

  /**
   * Whether a reduction takes the reproducible path (coll/reproducible.ts): asked for by the
   * call, or by NBC_REPRODUCIBLE=1 where it fits. One flag test when neither is set.
   */
  private reproducible(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, opts: CollOptions | undefined): boolean {
    const config = this.rc.config;
    return (opts?.reproducible === true || config.reproducible) && wantsReproducible(config.reproducible, send, recv, op, opts);
  }

  /** A reproducible call as coll/reproducible.ts takes it. */
  private reproducibleCall(coll: ReproducibleColl, send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, opts: CollOptions | undefined,
    root?: number, counts?: Counts): ReproducibleCall {
    this.check(coll);
    checkOptions(opts);
    return { coll, send, recv, op, opts: opts ?? {}, executor: this.executorName(opts), root, counts };
  }

  /** The lean blocking paths on this communicator (lean.ts). */
  private get lean(): LeanPaths {
    return (this.leanPaths ??= new LeanPaths(this.transport, { worldRanks: this.worldRanks, collCtx: this.collCtx, rank: this.rank, size: this.size },
      executorStats(this.transport).host));
  }
  private leanPaths: LeanPaths | undefined = undefined;

  /**
   * This communicator's flag board (flat.ts), or -1. Taken as it is created, which every rank
   * does in the same order: one of the first BOARDS communicators (the world first) that hold
   * every rank of a one-node job with more ranks than cores.
   */
  private readonly boardIndex: number = this.size > 1 && this.size === this.transport.placement.nodeOfRank.length ? this.transport.claimBoard() : -1;

  /**
   * The flag board, where this communicator runs its blocking barrier and small allreduce;
   * null where it has none (boardIndex) or calls are checked (NBC_CHECK_CALLS).
   */
  private get flat(): FlatBoard | null {
    if (this.flatBoard === undefined) {
      const t = this.transport;
      this.flatBoard = this.boardIndex >= 0 && !this.rc.config.checkCalls
        ? new FlatBoard(t, this.ctx, this.boardIndex, Int32Array.from(this.worldRanks, (w) => t.placement.localOfRank[w]!), Int32Array.from(this.worldRanks),
          this.rank, executorStats(t).host)
        : null;
    }
    return this.flatBoard;
  }
  private flatBoard: FlatBoard | null | undefined = undefined;

  /** Whether a call leaves the algorithm to the table and runs on the host executor. */
  private defaultHostCall(opts: CollOptions | undefined): boolean {
    return opts === undefined || (opts.algorithm === undefined && this.executorName(opts) === 'host');
  }

  /** The flag board for a blocking call with `opts`, or null: only calls that leave the algorithm to the table, on the host executor. */
  private flatCall(opts: CollOptions | undefined): FlatBoard | null {
    return this.defaultHostCall(opts) ? this.flat : null;
  }

  /**
   * Comm.stats(), and the collective calls of this rank (on every communicator) by the executor
   * that ran them: `host` (this rank's thread, lean blocking paths included), `offload` (the
   * node engine) and `agg` (posted to the engines, with how many the fabric reduced and how
   * many the engines exchanged among themselves). Counters since the rank started.
   */
  override stats(): CommStats & { executors: ExecutorsStats } {
    return { ...super.stats(), executors: executorStatsCopy(this.transport) };
  }

  /** Frees the communicator; the executors drop what they keep for it (the offload engine its members). */
  override free(): void {
    super.free();
    releaseCommunicator(this.transport, this.collTarget);
    releaseReproducible(this); // the companion of its non-blocking reproducible calls
  }

  /** This communicator as the executors address it. */
  private get collTarget(): CollTarget {
    return (this.target ??= { collCtx: this.collCtx, rank: this.rank, worldRanks: this.worldRanks });
  }
  private target: CollTarget | undefined = undefined;

  /** Starts a planned collective on its executor; the next sequence number names its messages. */
  private launchPlan(plan: Plan): Request {
    this.beforeStart(plan);
    return plan.executor.start(plan, this.collTarget, this.nextTag());
  }

  /** A blocking call's plan, run to its end: by the executor itself where it can (HostExecutor.runNow), else started and waited for. */
  private runPlan(plan: Plan): void {
    this.beforeStart(plan);
    const ex = plan.executor;
    if (ex.runNow !== undefined) ex.runNow(plan, this.collTarget, this.nextTag());
    else ex.start(plan, this.collTarget, this.nextTag()).wait();
  }

  private beforeStart(plan: Plan): void {
    this.check(plan.coll);
    if (plan.sig !== undefined && this.size > 1) {
      // NBC_CHECK_CALLS: every member compares every member's call before anything is sent.
      numberCall(plan.sig, this.collSeq);
      const problem = disagreement(this.exchangeInts(plan.sig, CHECK_TAG), this.size);
      if (problem !== null) throw problem;
    }
    plan.before?.();
  }

  private persistent(plan: Plan): PersistentRequest {
    if (plan.sched.tmpBytes > 0) plan.tmp = new Uint8Array(plan.sched.tmpBytes);
    plan.reuse = true;
    return new PersistentRequest(() => this.launchPlan(plan), plan.coll, plan.sched);
  }

  // ---- barrier ------------------------------------------------------------------------

  barrier(opts?: CollOptions): void {
    this.check('barrier');
    const flat = this.flatCall(opts);
    if (flat !== null) {
      flat.barrier();
      return;
    }
    if (this.defaultHostCall(opts) && (this.leanBarrierOk ??= this.leanEligible('barrier', undefined, 0, true, true))) {
      this.lean.barrier(this.nextTag());
      return;
    }
    this.runPlan(this.memoPlan('barrier', opts, () => planBarrier(this.planner, opts)));
  }

  /** Whether this communicator's default barrier takes the lean path (dissemination with n = 1). */
  private leanBarrierOk: boolean | undefined = undefined;

  ibarrier(opts?: CollOptions): Request { return this.launchPlan(this.memoPlan('barrier', opts, () => planBarrier(this.planner, opts))); }
  barrierInit(opts?: CollOptions): PersistentRequest { return this.persistent(planBarrier(this.planner, opts)); }

  // ---- bcast --------------------------------------------------------------------------

  private readonly recentBcast: Array<RecentCall<LeanBcast>> = recentCalls();

  bcast(buf: Buf, root: number, opts?: CollOptions): void {
    this.check('bcast');
    const hit = findRecent(this.recentBcast, buf, undefined, root, undefined, opts);
    let lean = hit?.lean ?? null;
    let plan = hit?.plan ?? null;
    if (hit === undefined) {
      plan = planBcast(this.planner, buf, root, opts);
      const bytes = plan.recv.byteLength;
      if (this.leanEligible('bcast', opts, bytes)) {
        lean = leanBcastOf(plan.recv, bytes, this.rank, root, this.size);
        plan = null;
      }
      remember(this.recentBcast, bytes, buf, undefined, root, undefined, opts, lean, plan);
    }
    if (lean !== null) this.lean.bcast(lean, this.nextTag());
    else this.runPlan(plan!);
  }

  ibcast(buf: Buf, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('bcast', opts, () => planBcast(this.planner, buf, root, opts), buf, undefined, root));
  }
  bcastInit(buf: Buf, root: number, opts?: CollOptions): PersistentRequest { return this.persistent(planBcast(this.planner, buf, root, opts)); }

  // ---- reduce / allreduce ---------------------------------------------------------------

  reduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): void {
    if (this.reproducible(send, recv, op, opts)) {
      startReproducible(this, this.reproducibleCall('reduce', send, recv, op, opts, root)).wait();
      return;
    }
    this.runPlan(this.reducePlan(send, recv, op, root, opts));
  }
  ireduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Request {
    if (this.reproducible(send, recv, op, opts)) return startReproducible(this, this.reproducibleCall('reduce', send, recv, op, opts, root));
    return this.launchPlan(this.reducePlan(send, recv, op, root, opts));
  }
  private reducePlan(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Plan {
    return this.memoPlan('reduce', opts, () => planReduce(this.planner, send, recv, op, root, opts), send, recv, op, root);
  }
  reduceInit(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): PersistentRequest {
    if (this.reproducible(send, recv, op, opts)) return reproducibleInit(this, this.reproducibleCall('reduce', send, recv, op, opts, root));
    return this.persistent(planReduce(this.planner, send, recv, op, root, opts));
  }


  /**
   * The last few blocking allreduces, resolved (the lean path's call, or the plan), reused when
   * a call passes the same buffers (same lengths), op and options again: loops do (a CG
   * iteration alternates a few), and validation plus selection would otherwise be most of
   * the cost of a small allreduce. Only derived facts are cached, never the data. Blocking
   * bcast and alltoall keep the same kind of list.
   */
  private readonly recentAllreduce: Array<RecentCall<LeanAllreduce>> = recentCalls();

  allreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): void {
    this.check('allreduce');
    if (this.reproducible(send, recv, op, opts)) {
      checkOptions(opts);
      allreduceReproducible(this, send, recv, op, opts ?? {}, this.executorName(opts));
      return;
    }
    const hit = findRecent(this.recentAllreduce, send, recv, op, undefined, opts);
    if (hit !== undefined) {
      this.runAllreduce(hit.lean, hit.plan, opts);
      return;
    }
    const c = checkAllreduce(this.planner, send, recv, op);
    const bytes = c.sv.byteLength;
    let lean: LeanAllreduce | null = null;
    let plan: Plan | null = null;
    if (this.leanEligible('allreduce', opts, bytes, c.red.commutative, fabricReduces(c.red.op, c.red.dtype))) {
      lean = leanAllreduceOf(c.sv, c.rv, c.output, c.red.op, c.red.dtype as DType);
    } else {
      plan = planCheckedAllreduce(this.planner, c, opts);
    }
    if (plan !== null) plan.board = { bytes, dt: c.red.dtype as DType };
    remember(this.recentAllreduce, bytes, send, recv, op, undefined, opts, lean, plan);
    this.runAllreduce(lean, plan, opts);
  }

  /**
   * A resolved blocking allreduce: on the flag board where it fits, else on the lean path or
   * its plan, after arriving on the board where the communicator has one (flat.ts: a rank whose
   * call took the board, or disagrees on the count, fails with the others).
   */
  private runAllreduce(lean: LeanAllreduce | null, plan: Plan | null, opts: CollOptions | undefined): void {
    const flat = this.flatCall(opts);
    if (flat !== null) {
      if (lean !== null && lean.bytes <= BOARD_DATA_BYTES) {
        flat.allreduce(lean);
        return;
      }
      if (lean !== null) flat.arriveOnly(lean.bytes, lean.dt);
      else flat.arriveOnly(plan!.board!.bytes, plan!.board!.dt);
    }
    if (lean !== null) this.lean.allreduce(lean, this.nextTag());
    else this.runPlan(plan!);
  }
  iallreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): Request {
    if (this.reproducible(send, recv, op, opts)) return startReproducible(this, this.reproducibleCall('allreduce', send, recv, op, opts));
    return this.launchPlan(this.memoPlan('allreduce', opts, () => planAllreduce(this.planner, send, recv, op, opts, true), send, recv, op));
  }
  allreduceInit(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): PersistentRequest {
    if (this.reproducible(send, recv, op, opts)) return reproducibleInit(this, this.reproducibleCall('allreduce', send, recv, op, opts));
    return this.persistent(planAllreduce(this.planner, send, recv, op, opts, true));
  }

  // ---- gather / scatter -----------------------------------------------------------------

  gather(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): void {
    this.runPlan(this.gatherPlan(send, recv, root, opts));
  }
  igather(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.gatherPlan(send, recv, root, opts));
  }
  private gatherPlan(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): Plan {
    return this.memoPlan('gather', opts, () => planGather(this.planner, send, recv, root, opts), send, recv, root);
  }
  gatherInit(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(planGather(this.planner, send, recv, root, opts));
  }

  scatter(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): void {
    this.runPlan(this.scatterPlan(send, recv, root, opts));
  }
  iscatter(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.scatterPlan(send, recv, root, opts));
  }
  private scatterPlan(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
    return this.memoPlan('scatter', opts, () => planScatter(this.planner, send, recv, root, opts), send, recv, root);
  }
  scatterInit(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(planScatter(this.planner, send, recv, root, opts));
  }

  gatherv(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, root: number, opts?: CollOptions): void {
    this.runPlan(this.gathervPlan(send, recv, counts, displs, root, opts));
  }
  igatherv(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.gathervPlan(send, recv, counts, displs, root, opts));
  }
  private gathervPlan(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, root: number, opts?: CollOptions): Plan {
    return this.memoPlan('gatherv', opts, () => planGatherv(this.planner, send, recv, counts, displs, root, opts), send, recv, root, undefined, [counts, displs]);
  }
  gathervInit(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(planGatherv(this.planner, send, recv, counts, displs, root, opts));
  }

  scatterv(send: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): void {
    this.runPlan(this.scattervPlan(send, counts, displs, recv, root, opts));
  }
  iscatterv(send: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Request {
    return this.launchPlan(this.scattervPlan(send, counts, displs, recv, root, opts));
  }
  private scattervPlan(send: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
    return this.memoPlan('scatterv', opts, () => planScatterv(this.planner, send, counts, displs, recv, root, opts), send, recv, root, undefined, [counts, displs]);
  }
  scattervInit(send: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): PersistentRequest {
    return this.persistent(planScatterv(this.planner, send, counts, displs, recv, root, opts));
  }

  // ---- allgather ------------------------------------------------------------------------

  allgather(send: BufOrInPlace, recv: Buf, opts?: CollOptions): void {
    this.runPlan(this.allgatherPlan(send, recv, opts));
  }
  iallgather(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Request {
    return this.launchPlan(this.allgatherPlan(send, recv, opts));
  }
  private allgatherPlan(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan {
    return this.memoPlan('allgather', opts, () => planAllgather(this.planner, send, recv, opts), send, recv);
  }
  allgatherInit(send: BufOrInPlace, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(planAllgather(this.planner, send, recv, opts)); }

  allgatherv(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): void {
    this.runPlan(this.allgathervPlan(send, recv, counts, displs, opts));
  }
  iallgatherv(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): Request {
    return this.launchPlan(this.allgathervPlan(send, recv, counts, displs, opts));
  }
  private allgathervPlan(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): Plan {
    return this.memoPlan('allgatherv', opts, () => planAllgatherv(this.planner, send, recv, counts, displs, opts), send, recv, undefined, undefined, [counts, displs]);
  }
  allgathervInit(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): PersistentRequest {
    return this.persistent(planAllgatherv(this.planner, send, recv, counts, displs, opts));
  }

  // ---- alltoall ---------------------------------------------------------------------------

  private readonly recentAlltoall: Array<RecentCall<LeanAlltoall>> = recentCalls();

  alltoall(send: BufOrInPlace, recv: Buf, opts?: CollOptions): void {
    this.check('alltoall');
    const hit = findRecent(this.recentAlltoall, send, recv, undefined, undefined, opts);
    let lean = hit?.lean ?? null;
    let plan = hit?.plan ?? null;
    if (hit === undefined) {
      plan = planAlltoall(this.planner, send, recv, opts);
      const bytes = plan.recv.byteLength;
      const block = bytes / this.size;
      if (send !== IN_PLACE && this.leanEligible('alltoall', opts, block)) {
        lean = leanAlltoallOf(plan.send, plan.recv, block, this.size);
        plan = null;
      }
      remember(this.recentAlltoall, bytes, send, recv, undefined, undefined, opts, lean, plan);
    }
    if (lean !== null) this.lean.alltoall(lean, this.nextTag());
    else this.runPlan(plan!);
  }

  ialltoall(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Request {
    return this.launchPlan(this.memoPlan('alltoall', opts, () => planAlltoall(this.planner, send, recv, opts), send, recv));
  }
  alltoallInit(send: BufOrInPlace, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(planAlltoall(this.planner, send, recv, opts)); }

  alltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): void {
    this.runPlan(this.alltoallvPlan(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  ialltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Request {
    return this.launchPlan(this.alltoallvPlan(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  private alltoallvPlan(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
    return this.memoPlan('alltoallv', opts, () => planAlltoallv(this.planner, send, scounts, sdispls, recv, rcounts, rdispls, opts),
      send, recv, undefined, undefined, [scounts, sdispls, rcounts, rdispls]);
  }
  alltoallvInit(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): PersistentRequest {
    return this.persistent(planAlltoallv(this.planner, send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }

  // ---- reduce-scatter --------------------------------------------------------------------

  reduceScatterBlock(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): void {
    if (this.reproducible(send, recv, op, opts)) {
      startReproducible(this, this.reproducibleCall('reduceScatterBlock', send, recv, op, opts)).wait();
      return;
    }
    this.runPlan(this.reduceScatterBlockPlan(send, recv, op, opts));
  }
  ireduceScatterBlock(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Request {
    if (this.reproducible(send, recv, op, opts)) return startReproducible(this, this.reproducibleCall('reduceScatterBlock', send, recv, op, opts));
    return this.launchPlan(this.reduceScatterBlockPlan(send, recv, op, opts));
  }
  private reduceScatterBlockPlan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan {
    return this.memoPlan('reduceScatterBlock', opts, () => planReduceScatter(this.planner, 'reduceScatterBlock', send, recv, null, op, opts), send, recv, op);
  }
  reduceScatterBlockInit(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): PersistentRequest {
    if (this.reproducible(send, recv, op, opts)) return reproducibleInit(this, this.reproducibleCall('reduceScatterBlock', send, recv, op, opts));
    return this.persistent(planReduceScatter(this.planner, 'reduceScatterBlock', send, recv, null, op, opts));
  }
  reduceScatter(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): void {
    if (this.reproducible(send, recv, op, opts)) {
      startReproducible(this, this.reproducibleCall('reduceScatter', send, recv, op, opts, undefined, counts)).wait();
      return;
    }
    this.runPlan(this.reduceScatterPlan(send, recv, counts, op, opts));
  }
  ireduceScatter(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): Request {
    if (this.reproducible(send, recv, op, opts)) return startReproducible(this, this.reproducibleCall('reduceScatter', send, recv, op, opts, undefined, counts));
    return this.launchPlan(this.reduceScatterPlan(send, recv, counts, op, opts));
  }
  private reduceScatterPlan(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): Plan {
    return this.memoPlan('reduceScatter', opts, () => planReduceScatter(this.planner, 'reduceScatter', send, recv, counts, op, opts), send, recv, op, undefined, [counts]);
  }
  reduceScatterInit(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): PersistentRequest {
    if (this.reproducible(send, recv, op, opts)) return reproducibleInit(this, this.reproducibleCall('reduceScatter', send, recv, op, opts, undefined, counts));
    return this.persistent(planReduceScatter(this.planner, 'reduceScatter', send, recv, counts, op, opts));
  }

  // ---- scan / exscan ------------------------------------------------------------------------


  scan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): void {
    if (this.reproducible(send, recv, op, opts)) {
      startReproducible(this, this.reproducibleCall('scan', send, recv, op, opts)).wait();
      return;
    }
    this.runPlan(this.scanPlan(send, recv, op, opts));
  }
  iscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Request {
    if (this.reproducible(send, recv, op, opts)) return startReproducible(this, this.reproducibleCall('scan', send, recv, op, opts));
    return this.launchPlan(this.scanPlan(send, recv, op, opts));
  }
  private scanPlan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan {
    return this.memoPlan('scan', opts, () => planScan(this.planner, 'scan', send, recv, op, opts), send, recv, op);
  }
  scanInit(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): PersistentRequest {
    if (this.reproducible(send, recv, op, opts)) return reproducibleInit(this, this.reproducibleCall('scan', send, recv, op, opts));
    return this.persistent(planScan(this.planner, 'scan', send, recv, op, opts));
  }
  exscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): void {
    if (this.reproducible(send, recv, op, opts)) {
      startReproducible(this, this.reproducibleCall('exscan', send, recv, op, opts)).wait();
      return;
    }
    this.runPlan(this.exscanPlan(send, recv, op, opts));
  }
  iexscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Request {
    if (this.reproducible(send, recv, op, opts)) return startReproducible(this, this.reproducibleCall('exscan', send, recv, op, opts));
    return this.launchPlan(this.exscanPlan(send, recv, op, opts));
  }
  private exscanPlan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan {
    return this.memoPlan('exscan', opts, () => planScan(this.planner, 'exscan', send, recv, op, opts), send, recv, op);
  }
  exscanInit(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): PersistentRequest {
    if (this.reproducible(send, recv, op, opts)) return reproducibleInit(this, this.reproducibleCall('exscan', send, recv, op, opts));
    return this.persistent(planScan(this.planner, 'exscan', send, recv, op, opts));
  }

  // ---- neighbour collectives (Cartesian and distributed-graph communicators) ----------------------------------------


  neighborAllgather(send: Buf, recv: Buf, opts?: CollOptions): void {
    this.runPlan(this.neighborAllgatherPlan(send, recv, opts));
  }
  ineighborAllgather(send: Buf, recv: Buf, opts?: CollOptions): Request { return this.launchPlan(this.neighborAllgatherPlan(send, recv, opts)); }
  private neighborAllgatherPlan(send: Buf, recv: Buf, opts?: CollOptions): Plan {
    return this.memoPlan('neighborAllgather', opts, () => planNeighborAllgather(this.planner, send, recv, opts), send, recv);
  }
  neighborAllgatherInit(send: Buf, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(planNeighborAllgather(this.planner, send, recv, opts)); }

  neighborAlltoall(send: Buf, recv: Buf, opts?: CollOptions): void {
    this.runPlan(this.neighborAlltoallPlan(send, recv, opts));
  }
  ineighborAlltoall(send: Buf, recv: Buf, opts?: CollOptions): Request { return this.launchPlan(this.neighborAlltoallPlan(send, recv, opts)); }
  private neighborAlltoallPlan(send: Buf, recv: Buf, opts?: CollOptions): Plan {
    return this.memoPlan('neighborAlltoall', opts, () => planNeighborAlltoall(this.planner, send, recv, opts), send, recv);
  }
  neighborAlltoallInit(send: Buf, recv: Buf, opts?: CollOptions): PersistentRequest { return this.persistent(planNeighborAlltoall(this.planner, send, recv, opts)); }

  neighborAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): void {
    this.runPlan(this.neighborAlltoallvPlan(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  ineighborAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Request {
    return this.launchPlan(this.neighborAlltoallvPlan(send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  private neighborAlltoallvPlan(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
    return this.memoPlan('neighborAlltoallv', opts, () => planNeighborAlltoallv(this.planner, send, scounts, sdispls, recv, rcounts, rdispls, opts),
      send, recv, undefined, undefined, [scounts, sdispls, rcounts, rdispls]);
  }
  neighborAlltoallvInit(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): PersistentRequest {
    return this.persistent(planNeighborAlltoallv(this.planner, send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
}

/** A communicator with a Cartesian topology (made by cartCreate). */
export type CartComm = Communicator;
/** A communicator with a distributed-graph topology (made by distGraphCreateAdjacent). */
export type DistGraphComm = Communicator;
