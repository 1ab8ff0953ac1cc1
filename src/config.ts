/**
 * What the core (shm p2p comm ops sched coll) is told about its environment. The runtime reads
 * the process environment once (runtime/config.ts) and passes this down; the core itself reads
 * no `process.*`, so it runs the same in a rank, the node engine or a simulator.
 */
import { DEFAULT_PARAMS, type CostParams } from './coll/cost-model.js';

export interface CoreConfig {
  /** The executor a call without `{ executor }` runs on (NBC_EXECUTOR; default 'host'). */
  executor: string;
  /** Algorithm overrides by collective name (NBC_<COLLECTIVE>_ALGORITHM), e.g. { allreduce: 'ring' }. */
  algorithms: Readonly<Record<string, string>>;
  /** Prints every schedule built (NBC_SCHED_DUMP=1), or null. */
  schedDump: ((text: string) => void) | null;
  /** How long a rank waiting for an offloaded collective spins before parking (NBC_OFFLOAD_SPIN_US). */
  offloadSpinUs: number;
  /** Seed 004's cost-model parameters (`nbc calibrate`'s file, else the defaults): hier vs flat, packing. */
  cost: CostParams;
  /**
   * More ranks on this host than cores: every hop between ranks then costs a thread switch,
   * which seed 004's model (one core per rank) leaves out, so selection does not consult it.
   */
  oversubscribed: boolean;
  /**
   * Every collective call first checks with its communicator's members that they all make the
   * same call (NBC_CHECK_CALLS=1; coll/check-calls.ts): a debug aid. Each call then costs an
   * exchange through rank 0 (non-blocking ones block while it runs), and blocking calls skip
   * the lean paths.
   */
  checkCalls: boolean;
  /**
   * Sums of Float64 or Float32 by allreduce, iallreduce, reduce and ireduce on the host
   * executor are reproducible unless a call says `{ reproducible: false }` (NBC_REPRODUCIBLE=1;
   * coll/reproducible.ts).
   */
  reproducible: boolean;
  /**
   * The rank's node has an engine (under `nbc run` and `nbc node`), which the offload and agg
   * executors need. False in a page's Web Workers (nbcoll/web) and in a lone `init()`: those
   * executors are refused there, by name, instead of posting to an engine that never answers.
   */
  engine: boolean;
}

export const DEFAULT_CONFIG: CoreConfig = Object.freeze({
  executor: 'host',
  algorithms: Object.freeze({}),
  schedDump: null,
  // The engine that completes an offloaded collective needs a core; on a busy machine the
  // waiting rank's spin would be taking it (bench/HISTORY.md, "Offload executor").
  offloadSpinUs: 5,
  cost: DEFAULT_PARAMS,
  oversubscribed: false,
  checkCalls: false,
  reproducible: false,
  engine: true,
});
