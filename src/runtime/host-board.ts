/**
 * Opening the job's host board (shm/host-board.ts): the file that nbc run's launcher creates
 * (`NBC_HOST_BOARD`), mapped with the native addon's mapShared.
 */
import { HostBoard, hostBoardBytes } from '../shm/host-board.js';
import { nativeAddon } from './native.js';

/**
 * The job's host board (`NBC_HOST_BOARD`, set by nbc run) for `ranks` ranks, seen by the rank
 * at `index` (-1 for a node's own threads); null where the job has none or the native addon
 * cannot map it (then the threads of a node watch only its own ranks, which is all they need where
 * each node has a host of its own).
 */
export function openHostBoard(ranks: number, index = -1, path = process.env.NBC_HOST_BOARD): HostBoard | null {
  if (path === undefined || path === '') return null;
  const map = nativeAddon().addon?.mapShared;
  if (map === undefined) return null;
  try {
    return new HostBoard(new Int32Array(map(path, hostBoardBytes(ranks)), 0, 2 * ranks), index);
  } catch {
    return null; // the job is ending (its launcher removed the file) or /dev/shm is full
  }
}
