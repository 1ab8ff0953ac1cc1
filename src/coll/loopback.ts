/**
 * A communicator's ranks in one thread, for the per-algorithm tests (test/coll/). Each rank
 * plans its calls the way a Communicator does: the planning modules (plan-*.ts) check the
 * arguments, resolve IN_PLACE and describe the call as a shape, and selection (select.ts)
 * picks the algorithm with the same rules, overrides and builders, including the hierarchical
 * ones over the world's nodes. The rank then starts the schedule on the loopback port
 * (sched/loopback.ts), with fresh scratch filled with garbage. `run` completes every rank's
 * calls and throws if the port found a builder bug.
 *
 * Calls look like the Communicator's blocking ones but start a collective and return its plan,
 * since no rank can block while the others run in the same thread:
 *
 *     world.run((c) => c.allreduce(send[c.rank], recv[c.rank], 'sum', { algorithm: 'ring' }));
 *
 * Algorithms that the node engines compose (`two-level`, `agg`) have no rank schedule, so they
 * are refused here. The lean blocking paths (lean.ts) are not schedules either and stay with
 * the launched jobs.
 */
import type { Neighborhood } from '../comm/topology.js';
import { DEFAULT_CONFIG, type CoreConfig } from '../config.js';
import { NbcArgError, NbcCommError, NbcInternalError } from '../errors.js';
import type { OpLike } from '../ops/index.js';
import type { Executor, Plan } from '../sched/executor.js';
import { LoopbackPort, type LoopbackOptions, type LoopbackRun } from '../sched/loopback.js';
import type { Buf, BufOrInPlace, Counts, Planner } from './args.js';
import type { CollOptions } from './options.js';
import {
  planAllgather, planAllgatherv, planAllreduce, planAlltoall, planAlltoallv, planBarrier, planReduceScatter, planScan,
} from './plan-global.js';
import { planNeighborAllgather, planNeighborAlltoall, planNeighborAlltoallv } from './plan-neighbor.js';
import { planBcast, planGather, planGatherv, planReduce, planScatter, planScatterv } from './plan-rooted.js';
import { select, type CollName } from './select.js';
import { shape, topologyOf, type CollShape, type Topology } from './shape.js';

export interface LoopbackWorldOptions extends LoopbackOptions {
  /** The node of each rank, as hierarchical algorithms and selection see it (default: one node). */
  nodeOf?: (rank: number) => number;
  /** Selection's configuration (default DEFAULT_CONFIG). */
  config?: CoreConfig;
  /** Each rank's neighbourhood (a Cartesian grid's or a graph's), for the neighbour collectives. */
  neighborhood?: (rank: number) => Neighborhood;
}

/** The context id the loopback's messages carry. */
const LOOPBACK_CTX = 1;

/** Scratch and working receive buffers start as this byte, so a schedule that reads them before writing shows. */
export const GARBAGE = 0xa5;

/** Plans made here start on the loopback port, not through an executor. */
const LOOPBACK_EXECUTOR: Executor = {
  name: 'loopback',
  start: () => {
    throw new NbcInternalError('a loopback plan starts through LoopbackWorld, not an executor');
  },
};

export class LoopbackWorld {
  /** The world's nodes, as a communicator sees them. */
  readonly topo: Topology;
  readonly ranks: LoopbackRank[];
  private port: LoopbackPort;

  constructor(readonly size: number, private readonly opts: LoopbackWorldOptions = {}) {
    const nodeOf = opts.nodeOf ?? (() => 0);
    this.topo = topologyOf(size, nodeOf);
    this.ranks = Array.from({ length: size }, (_, r) => new LoopbackRank(this, r));
    this.port = this.freshPort();
  }

  get config(): CoreConfig {
    return this.opts.config ?? DEFAULT_CONFIG;
  }

  /** Runs `calls` for every rank in rank order (each starts its collectives), then completes them all. */
  run(calls: (comm: LoopbackRank) => void): void {
    try {
      for (const c of this.ranks) this.start(c.rank, calls);
    } catch (err) {
      this.port = this.freshPort(); // a call refused on some rank: the next run starts clean
      throw err;
    }
    this.finish();
  }

  /** Runs `calls` for one rank: its collectives start, and run as far as the messages already sent let them. */
  start(rank: number, calls: (comm: LoopbackRank) => void): void {
    calls(this.ranks[rank]!);
  }

  /** Delivers every queued completion without checking anything: the calls go as far as they can. */
  deliver(): void {
    this.port.deliver();
  }

  /** Whether every collective `rank` started has completed. */
  done(rank: number): boolean {
    return this.port.runs.every((r) => r.rank !== rank || r.done);
  }

  /**
   * Completes every started collective, and throws if the port found a builder bug (a
   * deadlock, a hazard, a size mismatch, a message nobody received, a failed run). The next
   * calls start on a fresh port.
   */
  finish(): void {
    const port = this.port;
    this.port = this.freshPort();
    port.verify();
  }

  /** @internal a rank's plan starts: its schedule on the port, tagged with the rank's next sequence number. */
  launch(rank: number, plan: Plan, tag: number): LoopbackRun {
    if (plan.tmp === undefined && plan.sched.tmpBytes > 0) plan.tmp = new Uint8Array(plan.sched.tmpBytes).fill(GARBAGE);
    plan.before?.();
    return this.port.start(plan.sched, rank, LOOPBACK_CTX, tag, { send: plan.send, recv: plan.recv, tmp: plan.tmp ?? new Uint8Array(0) });
  }

  /** @internal the neighbourhood of `rank` for a neighbour collective. */
  neighborhoodOf(rank: number, coll: string): Neighborhood {
    const n = this.opts.neighborhood;
    if (n === undefined) {
      throw new NbcCommError(`Cannot ${coll} on communicator ${LOOPBACK_CTX}: the loopback world was made without a neighbourhood; expected LoopbackWorldOptions.neighborhood`);
    }
    return n(rank);
  }

  private freshPort(): LoopbackPort {
    return new LoopbackPort(this.size, { eagerBytes: this.opts.eagerBytes, random: this.opts.random });
  }
}

/** One rank of a LoopbackWorld: the Planner the planning modules call back, and the collectives. */
export class LoopbackRank implements Planner {
  readonly size: number;
  readonly ctx = LOOPBACK_CTX;
  /** The plans this rank started, in order (their schedules say which algorithm ran). */
  readonly plans: Plan[] = [];
  private seq = 0;

  constructor(private readonly world: LoopbackWorld, readonly rank: number) {
    this.size = world.size;
  }

  base(root = 0): CollShape {
    return shape({ rank: this.rank, size: this.size, root });
  }

  /** Selects and builds as Communicator.plan does (without its cache); refuses executor-composed algorithms. */
  plan(coll: CollName, s: CollShape, opts: CollOptions | undefined, _cacheable: boolean, send: Uint8Array, recv: Uint8Array, extra?: Partial<Plan>): Plan {
    const t = this.world.topo;
    const config = this.world.config;
    const executor = opts?.executor ?? config.executor;
    const choice = select(coll, { size: this.size, bytes: s.bytes, commutative: s.commutative, executor, nodes: t.nodes, ppn: t.ppn, uniform: t.uniform, nonblocking: s.nonblocking },
      opts?.algorithm, config);
    if (choice.composite !== undefined) {
      throw new NbcArgError(`Cannot run ${coll} with algorithm '${choice.name}' on the loopback: the node engines compose it, so it has no rank schedule`);
    }
    // A non-root's reduce works in a RECV of its own (Plan.workRecvBytes), as other executors get it.
    if (extra?.workRecvBytes !== undefined) recv = new Uint8Array(extra.workRecvBytes).fill(GARBAGE);
    const sched = choice.build({ ...s, radix: choice.radix, topo: t, leader: choice.leader });
    return { coll, sched, send, recv, executor: LOOPBACK_EXECUTOR, ...extra };
  }

  neighbors(coll: string): Neighborhood {
    return this.world.neighborhoodOf(this.rank, coll);
  }

  private go(plan: Plan): Plan {
    this.plans.push(plan);
    this.world.launch(this.rank, plan, (this.seq++ & 0x3ffffff) * 16);
    return plan;
  }

  barrier(opts?: CollOptions): Plan { return this.go(planBarrier(this, opts)); }
  bcast(buf: Buf, root: number, opts?: CollOptions): Plan { return this.go(planBcast(this, buf, root, opts)); }
  reduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Plan {
    return this.go(planReduce(this, send, recv, op, root, opts));
  }
  allreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): Plan { return this.go(planAllreduce(this, send, recv, op, opts)); }
  gather(send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): Plan { return this.go(planGather(this, send, recv, root, opts)); }
  scatter(send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan { return this.go(planScatter(this, send, recv, root, opts)); }
  gatherv(send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, root: number, opts?: CollOptions): Plan {
    return this.go(planGatherv(this, send, recv, counts, displs, root, opts));
  }
  scatterv(send: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
    return this.go(planScatterv(this, send, counts, displs, recv, root, opts));
  }
  allgather(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan { return this.go(planAllgather(this, send, recv, opts)); }
  allgatherv(send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): Plan {
    return this.go(planAllgatherv(this, send, recv, counts, displs, opts));
  }
  alltoall(send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan { return this.go(planAlltoall(this, send, recv, opts)); }
  alltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
    return this.go(planAlltoallv(this, send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
  reduceScatterBlock(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan {
    return this.go(planReduceScatter(this, 'reduceScatterBlock', send, recv, null, op, opts));
  }
  reduceScatter(send: BufOrInPlace, recv: Buf, counts: Counts, op: OpLike, opts?: CollOptions): Plan {
    return this.go(planReduceScatter(this, 'reduceScatter', send, recv, counts, op, opts));
  }
  scan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan { return this.go(planScan(this, 'scan', send, recv, op, opts)); }
  exscan(send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan { return this.go(planScan(this, 'exscan', send, recv, op, opts)); }
  neighborAllgather(send: Buf, recv: Buf, opts?: CollOptions): Plan { return this.go(planNeighborAllgather(this, send, recv, opts)); }
  neighborAlltoall(send: Buf, recv: Buf, opts?: CollOptions): Plan { return this.go(planNeighborAlltoall(this, send, recv, opts)); }
  neighborAlltoallv(send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
    return this.go(planNeighborAlltoallv(this, send, scounts, sdispls, recv, rcounts, rdispls, opts));
  }
}
