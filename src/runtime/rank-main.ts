/**
 * Entry point of a rank worker thread. Attaches to the node's shared memory, builds the world
 * communicator, loads the job file (registering tsx first for TypeScript jobs), runs its
 * default export if it has one, and reports the result to the node.
 *
 * A job file either calls `await init()` at top level, or exports
 * `default async function (world, args) { ... }` whose return value becomes the rank's result
 * (it must be structured-cloneable).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { RankContext } from '../comm/comm.js';
import { Communicator } from '../coll/communicator.js';
import { Transport, type Placement } from '../p2p/transport.js';
import type { NodeShared } from '../shm/node-shared.js';
import { configFromEnv } from './config.js';
import { nativeAddon } from './native.js';
import { setRankRuntime } from './init.js';

export interface RankBoot {
  shared: NodeShared;
  placement: Placement;
  entry: string;
  args: string[];
  eagerLimit?: number;
  spinUs?: number;
  /** More of the job's ranks on this host than cores (CoreConfig.oversubscribed). */
  oversubscribed?: boolean;
  /** Oversubscribed: how long a wait yields the core between polls before parking (us). */
  yieldUs?: number;
}

export interface RankReport {
  type: 'result';
  rank: number;
  result: unknown;
}

const boot = workerData as RankBoot;
// Oversubscribed, a waiting rank hands its core over with sched_yield (the native addon's)
// before it parks; without the addon it spins briefly and parks.
const yieldFn = boot.oversubscribed === true ? nativeAddon().addon?.schedYield ?? null : null;
const transport = new Transport(boot.shared, boot.placement, {
  eagerLimit: boot.eagerLimit, spinUs: boot.spinUs, yieldFn, yieldUs: boot.yieldUs,
});
const rc: RankContext = {
  transport,
  worldRank: boot.placement.worldRank,
  worldSize: boot.placement.worldSize,
  nodeId: boot.placement.nodeId,
  nextCtx: 2,
  config: configFromEnv(process.env, boot.oversubscribed === true),
};
const world = new Communicator(rc, Array.from({ length: rc.worldSize }, (_, i) => i), 0);
setRankRuntime({ world, rc, args: boot.args });

if (/\.[cm]?tsx?$/.test(boot.entry)) {
  const { register } = await import('tsx/esm/api');
  register();
}
const mod = (await import(pathToFileURL(boot.entry).href)) as { default?: unknown };
let result: unknown;
if (typeof mod.default === 'function') {
  result = await (mod.default as (w: Communicator, a: string[]) => unknown)(world, boot.args);
}
// Anything still owed to peers (ACKs, queued sends) must leave before the thread ends.
transport.drain();
try {
  parentPort!.postMessage({ type: 'result', rank: rc.worldRank, result } satisfies RankReport);
} catch {
  parentPort!.postMessage({ type: 'result', rank: rc.worldRank, result: String(result) } satisfies RankReport);
}
