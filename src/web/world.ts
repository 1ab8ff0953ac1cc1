/**
 * The world communicator of a Web Worker rank, set by its bootstrap (rank.ts) before the job
 * module loads, for `init()`.
 */
import type { Communicator } from '../coll/communicator.js';
import { NbcLaunchError } from '../errors.js';

let world: Communicator | null = null;

export function setWorld(w: Communicator): void {
  world = w;
}

/** The world communicator of this rank. */
export async function init(): Promise<Communicator> {
  return initSync();
}

/** Synchronous form of init(). */
export function initSync(): Communicator {
  if (world === null) throw new NbcLaunchError('Cannot init(): this thread is not a rank started by launchWeb() (nbcoll/web)');
  return world;
}
