/**
 * The executor registry: every executor a call can name in `{ executor }` (or NBC_EXECUTOR),
 * one row each. An executor is made once per rank transport, the first time a call names it.
 *
 * Adding an executor: write its file (a class implementing `Executor`; for one that runs
 * schedules, a port of interpreter.ts), then add its row here: its description, its counters
 * (`stats`: what `comm.stats().executors.<name>` reports, `{ calls }` at least) and how it is
 * made. `ExecutorsStats`, the counters every rank keeps and comm.stats() copies, is derived
 * from these rows, so nothing else names the executors. docs/architecture.md ("Adding an
 * executor") walks through it.
 */
import type { CoreConfig } from '../config.js';
import { NbcArgError } from '../errors.js';
import type { Transport } from '../p2p/transport.js';
import type { AggExecutorStats, CollTarget, Executor, ExecutorStats } from './executor.js';
import { AggExecutor } from './agg-executor.js';
import { HostExecutor } from './host.js';
import { OffloadClient } from './offload-client.js';

export interface ExecutorRow<S extends ExecutorStats = ExecutorStats> {
  /** What it is, for errors and `nbc info`. */
  description: string;
  /** It runs schedules on the node's engine (CoreConfig.engine). */
  needsEngine: boolean;
  /** Its counters, zeroed: made once per rank transport, counted into by the executor. */
  stats(): S;
  /** Makes it for a rank's transport, counting into `stats` (this row's counters of that transport). */
  create(transport: Transport, config: CoreConfig, stats: S): Executor;
}

/** A row, its counters' type kept (so ExecutorsStats knows agg's extra fields). */
const row = <S extends ExecutorStats>(r: ExecutorRow<S>): ExecutorRow<S> => r;

export const EXECUTORS = {
  host: row({
    description: 'the calling rank runs the schedule inside its calls (LibNBC; seeds 001, 002)',
    needsEngine: false,
    stats: () => ({ calls: 0 }),
    create: (t, _c, s) => new HostExecutor(t, s),
  }),
  offload: row({
    description: "the node's engine runs the schedule while the rank computes (CORE-Direct; seed 000)",
    needsEngine: true,
    stats: () => ({ calls: 0 }),
    create: (t, c, s) => new OffloadClient(t, c.offloadSpinUs, s),
  }),
  agg: row<AggExecutorStats>({
    description: 'aggregation daemons reduce barrier, reduce and allreduce in flight; the engine feeds them (SHArP; seed 003)',
    needsEngine: true,
    stats: () => ({ calls: 0, onFabric: 0, amongEngines: 0 }),
    create: (t, c, s) => new AggExecutor(t, c.offloadSpinUs, executorFor(t, c, 'host', 'agg'), s),
  }),
} as const satisfies Readonly<Record<string, ExecutorRow>>;

/**
 * The calls of a rank by who ran them, one entry per row of EXECUTORS with that row's
 * counters. A call named with `agg` that the fabric does not take (another collective, op or
 * type; a communicator on one node) runs host algorithms and counts under `host`.
 */
export type ExecutorsStats = { [K in keyof typeof EXECUTORS]: ReturnType<(typeof EXECUTORS)[K]['stats']> };

const rows = EXECUTORS as Readonly<Record<string, ExecutorRow>>;
const counted = new WeakMap<Transport, ExecutorsStats>();

/**
 * The live counters of what each executor ran for a rank (comm.stats() copies them). The
 * executors and the lean blocking paths (coll/lean.ts, host algorithms) count into them.
 */
export function executorStats(transport: Transport): ExecutorsStats {
  let s = counted.get(transport);
  if (s === undefined) {
    const made: Record<string, ExecutorStats> = {};
    for (const name of Object.keys(rows)) made[name] = rows[name]!.stats();
    s = made as ExecutorsStats;
    counted.set(transport, s);
  }
  return s;
}

/** A copy of a rank's counters (comm.stats().executors): they go on counting, the copy does not. */
export function executorStatsCopy(transport: Transport): ExecutorsStats {
  const live = executorStats(transport) as unknown as Record<string, ExecutorStats>;
  const copy: Record<string, ExecutorStats> = {};
  for (const name of Object.keys(live)) copy[name] = { ...live[name]! };
  return copy as ExecutorsStats;
}

const made = new WeakMap<Transport, Map<string, Executor>>();

/** Tells every executor made for `transport` that communicator `target` was freed. */
export function releaseCommunicator(transport: Transport, target: CollTarget): void {
  for (const ex of made.get(transport)?.values() ?? []) ex.release?.(target);
}

/** The executor `name` of a rank's transport; NbcArgError naming the registered ones if none. */
export function executorFor(transport: Transport, config: CoreConfig, name: string, coll: string): Executor {
  let mine = made.get(transport);
  if (mine === undefined) {
    mine = new Map();
    made.set(transport, mine);
  }
  let ex = mine.get(name);
  if (ex === undefined) {
    const r = Object.hasOwn(rows, name) ? rows[name] : undefined;
    if (r === undefined) {
      throw new NbcArgError(`Cannot run ${coll} with executor '${String(name)}': unknown executor; expected one of ${Object.keys(rows).join(', ')}`);
    }
    if (r.needsEngine && !config.engine) {
      throw new NbcArgError(`Cannot run ${coll} with executor '${name}': it runs on the node's engine, and this rank has none ` +
        "(a page's Web Worker, or a lone init() outside nbc run); expected executor 'host'");
    }
    const stats = (executorStats(transport) as unknown as Record<string, ExecutorStats>)[name]!;
    ex = r.create(transport, config, stats);
    mine.set(name, ex);
  }
  return ex;
}
