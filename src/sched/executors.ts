/**
 * The executor registry: every executor a call can name in `{ executor }` (or NBC_EXECUTOR),
 * one row each. An executor is made once per rank transport, the first time a call names it.
 *
 * Adding an executor: write its file (a class implementing `Executor`; for one that runs
 * schedules, a port of interpreter.ts), then add its row here. docs/architecture.md
 * ("Adding an executor") walks through it.
 */
import type { CoreConfig } from '../config.js';
import { NbcArgError } from '../errors.js';
import type { Transport } from '../p2p/transport.js';
import type { CollTarget, Executor, ExecutorsStats } from './executor.js';
import { AggExecutor } from './agg-executor.js';
import { HostExecutor } from './host.js';
import { OffloadClient } from './offload-client.js';

export interface ExecutorRow {
  /** What it is, for errors and `nbc info`. */
  description: string;
  create(transport: Transport, config: CoreConfig): Executor;
}

export const EXECUTORS: Readonly<Record<string, ExecutorRow>> = {
  host: {
    description: 'the calling rank runs the schedule inside its calls (LibNBC; seeds 001, 002)',
    create: (t) => new HostExecutor(t, executorStats(t).host),
  },
  offload: {
    description: "the node's engine runs the schedule while the rank computes (CORE-Direct; seed 000)",
    create: (t, c) => new OffloadClient(t, c.offloadSpinUs, executorStats(t).offload),
  },
  agg: {
    description: 'aggregation daemons reduce barrier, reduce and allreduce in flight; the engine feeds them (SHArP; seed 003)',
    create: (t, c) => new AggExecutor(t, c.offloadSpinUs, executorFor(t, c, 'host', 'agg'), executorStats(t).agg),
  },
};

const counted = new WeakMap<Transport, ExecutorsStats>();

/**
 * The live counters of what each executor ran for a rank (comm.stats() copies them). The
 * executors and the lean blocking paths (coll/lean.ts, host algorithms) count into them.
 */
export function executorStats(transport: Transport): ExecutorsStats {
  let s = counted.get(transport);
  if (s === undefined) {
    s = { host: { calls: 0 }, offload: { calls: 0 }, agg: { calls: 0, onFabric: 0, amongEngines: 0 } };
    counted.set(transport, s);
  }
  return s;
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
    const row = Object.hasOwn(EXECUTORS, name) ? EXECUTORS[name] : undefined;
    if (row === undefined) {
      throw new NbcArgError(`Cannot run ${coll} with executor '${String(name)}': unknown executor; expected one of ${Object.keys(EXECUTORS).join(', ')}`);
    }
    ex = row.create(transport, config);
    mine.set(name, ex);
  }
  return ex;
}
