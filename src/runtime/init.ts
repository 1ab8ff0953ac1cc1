/**
 * `init()`: a rank's entry into nbcoll. Inside a rank started by `nbc run` or `nbc node` it
 * returns the world communicator the rank bootstrap built. Anywhere else (plain `node job.js`)
 * it returns a world of one rank, like an MPI singleton, so a job file runs on its own too.
 */
import type { RankContext } from '../comm/comm.js';
import { Communicator } from '../coll/communicator.js';
import { createNodeShared } from '../shm/node-shared.js';
import { Transport } from '../p2p/transport.js';
import { configFromEnv } from './config.js';

const KEY = Symbol.for('nbcoll.rank-runtime');

export interface RankRuntime {
  world: Communicator;
  rc: RankContext;
  args: string[];
}

type Holder = { [KEY]?: RankRuntime };

export function setRankRuntime(rt: RankRuntime): void {
  (globalThis as Holder)[KEY] = rt;
}

export function rankRuntime(): RankRuntime | undefined {
  return (globalThis as Holder)[KEY];
}

/** The world communicator of this rank. */
export async function init(): Promise<Communicator> {
  return initSync();
}

/** Synchronous form of init(). */
export function initSync(): Communicator {
  const rt = rankRuntime();
  if (rt !== undefined) return rt.world;
  const single = makeRankContext(0, 1);
  const world = new Communicator(single, [0], 0);
  setRankRuntime({ world, rc: single, args: process.argv.slice(2) });
  return world;
}

function makeRankContext(worldRank: number, worldSize: number): RankContext {
  const shared = createNodeShared({ ranks: 1, ringBytes: 64 * 1024, sliceBytes: 256 * 1024 * 1024 }, process.env.NBC_WASM !== '0');
  const transport = new Transport(shared, {
    worldRank, worldSize, nodeId: 0, nodeOfRank: Int32Array.of(0), localOfRank: Int32Array.of(0),
  });
  return { transport, worldRank, worldSize, nodeId: 0, nextCtx: 2, config: { ...configFromEnv(), engine: false } };
}
