/**
 * Executors: who runs a planned collective. Each is one object with `start`, made once per
 * rank transport from the registry (executors.ts); the front end never asks which one it holds.
 * A plan is `{ schedule, buffers, executor }` plus what a start needs to reuse its buffers.
 * Core code: no node:* imports.
 */
import type { DType } from '../ops/index.js';
import type { Request } from '../p2p/request.js';
import type { CollBuffers } from './host.js';
import type { Schedule } from './schedule.js';
import type { TwoLevelCall } from './two-level.js';

/** A communicator as executors address it. */
export interface CollTarget {
  collCtx: number;
  rank: number;
  /** World rank of each member. */
  worldRanks: Int32Array;
}

export interface Executor {
  /** Its name in the registry ('host', 'offload', ...). */
  readonly name: string;
  /** Starts one instance of a plan, its messages tagged from `tag`; the request completes it. */
  start(plan: Plan, target: CollTarget, tag: number): Request;
  /**
   * Runs one instance of a plan to its end before returning, for a blocking call; throws its
   * error. Optional: without it a blocking call starts the plan and waits.
   */
  runNow?(plan: Plan, target: CollTarget, tag: number): void;
  /**
   * The communicator `target` was freed: drop what this executor keeps for it (collectives
   * already started finish normally). Optional.
   */
  release?(target: CollTarget): void;
}

/** What one executor ran for a rank (`comm.stats().executors`). */
export interface ExecutorStats {
  /** Collective calls it ran: blocking and non-blocking, and every start of a persistent request. */
  calls: number;
}

/** The `agg` executor's calls, and how the ones that completed were reduced. */
export interface AggExecutorStats extends ExecutorStats {
  /** Completed calls that the aggregation fabric reduced. */
  onFabric: number;
  /** Completed calls that the node engines exchanged among themselves (the fabric refused the communicator). */
  amongEngines: number;
}

/** The calls of a rank by who ran them: one entry per executor, derived from the registry's rows (executors.ts). */
export type { ExecutorsStats } from './executors.js';

/** A collective ready to start: its schedule, the bytes it reads and writes, and who runs it. */
export interface Plan {
  /** The collective's name, for messages. */
  coll: string;
  sched: Schedule;
  send: Uint8Array;
  recv: Uint8Array;
  executor: Executor;
  /** Runs before every start (e.g. snapshotting an in-place alltoall's input). */
  before?: () => void;
  /** Scratch owned by a persistent request (one instance at a time); else pooled per start. */
  tmp?: Uint8Array;
  /**
   * Set for a plan started again and again (remembered, or persistent): the host executor
   * keeps the buffer sets of its finished starts, with the views made of them, in `idle`, so a
   * repeated call makes no views at all.
   */
  reuse?: boolean;
  idle?: CollBuffers[];
  /**
   * A blocking allreduce's count and type, for the description it arrives with on a
   * communicator's flag board before it runs (coll/flat.ts).
   */
  board?: { bytes: number; dt: DType };
  /**
   * Set where recv is the plan's own working space (a non-root's reduce), this many bytes:
   * each buffer set gets its own. The host executor takes it from its pool at every start, so
   * its plans carry an empty recv; other executors get a buffer of that size in the plan.
   */
  workRecvBytes?: number;
  /**
   * A collective the executor composes by itself instead of running `sched` (the offload
   * executor's two-level form: its engines combine their nodes; sched/two-level.ts).
   */
  composite?: TwoLevelCall;
  /** The call's signature, compared among the ranks before every start (NBC_CHECK_CALLS; coll/check-calls.ts). */
  sig?: Int32Array;
  /**
   * Whether the host executor runs a blocking start of it straight on the transport
   * (HostExecutor.runNow: rounds, every message eager); set on its first blocking start.
   */
  direct?: boolean;
}
