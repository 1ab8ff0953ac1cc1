/**
 * Cartesian process topologies: `dimsCreate` (MPI_Dims_create) and the coordinate arithmetic
 * behind `cartCreate`, `cart.coords`, `cart.rankOf`, `cart.shift` and the neighbour
 * collectives. Pure functions over plain numbers; no runtime APIs.
 *
 * Grids are row-major as in MPI: the last dimension varies fastest, so on dims [2, 3]
 * rank 4 has coordinates [1, 1].
 */

import { describeValue } from '../describe.js';
import { NbcArgError, NbcRankError } from '../errors.js';
import { PROC_NULL } from '../p2p/constants.js';

export { PROC_NULL };

/**
 * Fill the zero entries of `dims` so that the product of all entries is `nnodes`
 * (MPI_Dims_create). Non-zero entries are kept as given; the filled entries are as close to
 * each other as possible and appear in non-increasing order.
 *
 * "As close as possible" is made exact so that every caller gets the same answer: among all
 * factorizations of the free part into the zero entries, take the one with the smallest
 * difference between its largest and smallest factor; among those, the lexicographically
 * smallest when read largest first (20 over 4 dims gives [5, 2, 2, 1], not [5, 4, 1, 1]).
 *
 * `dims` defaults to `ndims` zeros and is not modified; a new array is returned.
 */
export function dimsCreate(nnodes: number, ndims: number, dims?: readonly number[]): number[] {
  if (!Number.isSafeInteger(ndims) || ndims < 0) {
    throw new NbcArgError(`Cannot create dims: ndims ${String(ndims)} is invalid; expected an integer >= 0`);
  }
  if (!Number.isSafeInteger(nnodes) || nnodes < 1) {
    throw new NbcArgError(`Cannot create dims: nnodes ${String(nnodes)} is invalid; expected an integer >= 1`);
  }
  const out = dims === undefined ? new Array<number>(ndims).fill(0) : dims.slice();
  if (out.length !== ndims) {
    throw new NbcArgError(
      `Cannot create dims for ${nnodes} nodes: dims has ${out.length} entries but ndims is ${ndims}; expected equal lengths`,
    );
  }
  let fixed = 1;
  const free: number[] = [];
  for (let i = 0; i < ndims; i++) {
    const d = out[i] as number;
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new NbcArgError(
        `Cannot create dims for ${nnodes} nodes: dims[${i}] is ${String(d)}; expected 0 (to be filled) or a positive integer`,
      );
    }
    if (d === 0) free.push(i);
    else fixed *= d;
  }
  if (free.length === 0) {
    if (fixed !== nnodes) {
      throw new NbcArgError(
        `Cannot create dims for ${nnodes} nodes: the given dims [${out.join(', ')}] multiply to ${fixed}; expected a product of ${nnodes} or a 0 entry to fill`,
      );
    }
    return out;
  }
  if (nnodes % fixed !== 0) {
    throw new NbcArgError(
      `Cannot create dims for ${nnodes} nodes: the non-zero dims [${out.join(', ')}] multiply to ${fixed}, which does not divide ${nnodes}; expected a divisor of ${nnodes}`,
    );
  }
  const factors = balancedFactors(nnodes / fixed, free.length);
  for (let j = 0; j < free.length; j++) out[free[j] as number] = factors[j] as number;
  return out;
}

/** The non-increasing k-factorization of n chosen by the rule documented on `dimsCreate`. */
function balancedFactors(n: number, k: number): number[] {
  if (k === 1) return [n];
  const divs = divisors(n);
  const cur = new Array<number>(k).fill(1);
  let best = null as number[] | null; // (assertion: the closure assigns it)
  let bestDiff = Infinity;

  // Depth-first over non-increasing factor sequences, each level ascending, so the first
  // sequence found with a given spread is the lexicographically smallest one with it.
  const search = (level: number, rest: number, maxFactor: number): void => {
    const m = k - level; // factors still to choose, including this one
    if (m === 1) {
      if (rest > maxFactor) return;
      cur[level] = rest;
      const diff = (cur[0] as number) - rest;
      if (diff < bestDiff) {
        bestDiff = diff;
        best = cur.slice();
      }
      return;
    }
    const lo = ceilRoot(rest, m); // the largest remaining factor is at least rest^(1/m)
    for (const f of divs) {
      if (f < lo) continue;
      if (f > maxFactor || f > rest) break;
      if (rest % f !== 0) continue;
      const first = level === 0 ? f : (cur[0] as number);
      // The smallest final factor is at most (rest / f)^(1/(m-1)); spread grows with f.
      if (first - floorRoot(rest / f, m - 1) >= bestDiff) break;
      cur[level] = f;
      search(level + 1, rest / f, f);
    }
  };
  search(0, n, n);
  if (best === null) throw new Error('unreachable: n = n * 1 * ... * 1 is always a factorization');
  return best;
}

/** All divisors of n, ascending. */
function divisors(n: number): number[] {
  const small: number[] = [];
  const large: number[] = [];
  for (let d = 1; d * d <= n; d++) {
    if (n % d === 0) {
      small.push(d);
      if (d * d !== n) large.push(n / d);
    }
  }
  return small.concat(large.reverse());
}

/** x^m, or Infinity once it exceeds `limit` (keeps the arithmetic exact). */
function powCapped(x: number, m: number, limit: number): number {
  let p = 1;
  for (let i = 0; i < m; i++) {
    p *= x;
    if (p > limit) return Infinity;
  }
  return p;
}

/** The smallest x >= 1 with x^m >= n. */
function ceilRoot(n: number, m: number): number {
  let x = Math.max(1, Math.round(Math.pow(n, 1 / m)));
  while (x > 1 && powCapped(x - 1, m, n) >= n) x--;
  while (powCapped(x, m, n) < n) x++;
  return x;
}

/** The largest x >= 1 with x^m <= n. */
function floorRoot(n: number, m: number): number {
  let x = Math.max(1, Math.round(Math.pow(n, 1 / m)));
  while (x > 1 && powCapped(x, m, n) > n) x--;
  while (powCapped(x + 1, m, n) <= n) x++;
  return x;
}

function checkDims(what: string, dims: readonly number[]): number {
  let size = 1;
  for (let i = 0; i < dims.length; i++) {
    const d = dims[i] as number;
    if (!Number.isSafeInteger(d) || d < 1) {
      throw new NbcArgError(`Cannot ${what}: dims[${i}] is ${String(d)}; expected a positive integer`);
    }
    size *= d;
  }
  return size;
}

function checkPeriods(what: string, dims: readonly number[], periods: readonly boolean[]): void {
  if (periods.length !== dims.length) {
    throw new NbcArgError(
      `Cannot ${what}: periods has ${periods.length} entries but dims has ${dims.length}; expected one per dimension`,
    );
  }
}

function checkRank(what: string, size: number, rank: number): void {
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= size) {
    throw new NbcRankError(`Cannot ${what}: rank ${String(rank)} is out of range; expected 0..${size - 1}`);
  }
}

/** The coordinates of `rank` on the row-major grid `dims` (MPI_Cart_coords). */
export function cartCoords(dims: readonly number[], rank: number): number[] {
  const what = `compute Cartesian coordinates on dims [${dims.join(', ')}]`;
  const size = checkDims(what, dims);
  checkRank(what, size, rank);
  const coords = new Array<number>(dims.length);
  let r = rank;
  for (let i = dims.length - 1; i >= 0; i--) {
    const d = dims[i] as number;
    coords[i] = r % d;
    r = Math.floor(r / d);
  }
  return coords;
}

/**
 * The rank at `coords` (MPI_Cart_rank). A coordinate outside 0..dims[i]-1 wraps around in a
 * periodic dimension; in a non-periodic one the result is PROC_NULL.
 */
export function cartRank(dims: readonly number[], periods: readonly boolean[], coords: readonly number[]): number {
  const what = `compute a Cartesian rank on dims [${dims.join(', ')}]`;
  checkDims(what, dims);
  checkPeriods(what, dims, periods);
  if (!Array.isArray(coords)) throw new NbcArgError(`Cannot ${what}: coords is ${describeValue(coords)}; expected an array of ${dims.length} integers`);
  if (coords.length !== dims.length) {
    throw new NbcArgError(
      `Cannot ${what}: coords [${coords.join(', ')}] has ${coords.length} entries; expected ${dims.length}`,
    );
  }
  let rank = 0;
  for (let i = 0; i < dims.length; i++) {
    const d = dims[i] as number;
    let c = coords[i] as number;
    if (!Number.isSafeInteger(c)) {
      throw new NbcArgError(`Cannot ${what}: coords[${i}] is ${String(c)}; expected an integer`);
    }
    if (c < 0 || c >= d) {
      if (!periods[i]) return PROC_NULL;
      c = ((c % d) + d) % d;
    }
    rank = rank * d + c;
  }
  return rank;
}

/**
 * The neighbours of `rank` at distance `disp` along dimension `dim` (MPI_Cart_shift):
 * `dest` is the rank `disp` steps up, `source` the rank `disp` steps down; PROC_NULL where
 * the step leaves a non-periodic dimension. In a periodic dimension of size 1 both are `rank`.
 */
export function cartShift(
  dims: readonly number[],
  periods: readonly boolean[],
  rank: number,
  dim: number,
  disp: number,
): { source: number; dest: number } {
  const what = `shift on Cartesian dims [${dims.join(', ')}]`;
  const size = checkDims(what, dims);
  checkPeriods(what, dims, periods);
  checkRank(what, size, rank);
  if (!Number.isSafeInteger(dim) || dim < 0 || dim >= dims.length) {
    throw new NbcArgError(`Cannot ${what}: dimension ${String(dim)} is out of range; expected 0..${dims.length - 1}`);
  }
  if (!Number.isSafeInteger(disp)) {
    throw new NbcArgError(`Cannot ${what}: displacement ${String(disp)} is invalid; expected an integer`);
  }
  const coords = cartCoords(dims, rank);
  const c = coords[dim] as number;
  coords[dim] = c + disp;
  const dest = cartRank(dims, periods, coords);
  coords[dim] = c - disp;
  const source = cartRank(dims, periods, coords);
  return { source, dest };
}

/**
 * The neighbours of `rank` in MPI neighbour-collective order: for each dimension, the -1
 * neighbour then the +1 neighbour (2 * ndims entries, PROC_NULL for missing ones). This is
 * the order of the blocks in neighborAlltoall / neighborAllgather buffers.
 */
export function cartNeighbors(dims: readonly number[], periods: readonly boolean[], rank: number): number[] {
  const out = new Array<number>(2 * dims.length);
  for (let i = 0; i < dims.length; i++) {
    const { source, dest } = cartShift(dims, periods, rank, i, 1);
    out[2 * i] = source;
    out[2 * i + 1] = dest;
  }
  if (dims.length === 0) {
    // A 0-dimensional grid has one rank and no neighbours; still validate the rank.
    checkRank('list neighbours on a 0-dimensional Cartesian grid', 1, rank);
  }
  return out;
}

/**
 * Where the blocks of a neighbour collective come from and go to, and the sub-tag of each
 * message. Block i of the receive buffer comes from `sources[i]` with sub-tag `recvTags[i]`;
 * block j of the send buffer goes to `destinations[j]` with sub-tag `sendTags[j]`. PROC_NULL
 * entries move nothing (their receive block is left as it was). One shape for Cartesian grids
 * and distributed graphs, so the neighbour schedule builders (coll/neighbor.ts) serve both.
 */
export interface Neighborhood {
  sources: Int32Array;
  destinations: Int32Array;
  recvTags: Int32Array;
  sendTags: Int32Array;
}

/**
 * A collective instance has 16 sub-tags (the communicator's tag is its sequence number times
 * 16), so at most 16 edges may join one ordered pair of ranks in a distributed graph.
 */
export const MAX_EDGES_PER_PAIR = 16;

/**
 * A Cartesian grid's neighbourhood: sources and destinations are both `cartNeighbors`. The
 * block sent to slot i lands in the neighbour's slot i ^ 1 (the neighbour on our -1 side sees
 * us on its +1 side), so a message to slot i carries sub-tag i ^ 1 and slot i receives sub-tag
 * i; on a periodic dimension of size 1 or 2, where both slots name the same rank, the two
 * messages still land in the right blocks (MPI-4.1).
 */
export function cartNeighborhood(dims: readonly number[], periods: readonly boolean[], rank: number): Neighborhood {
  const nb = Int32Array.from(cartNeighbors(dims, periods, rank));
  const recvTags = Int32Array.from(nb, (_, i) => i);
  const sendTags = Int32Array.from(nb, (_, i) => i ^ 1);
  return { sources: nb, destinations: nb.slice(), recvTags, sendTags };
}

/**
 * A distributed graph's neighbourhood (MPI_Dist_graph_create_adjacent): the k-th edge from
 * rank a to rank b, counted in a's `destinations` order, carries sub-tag k and lands in the
 * block of b's k-th `sources` entry naming a. So repeated edges between one pair match in list
 * order on both sides, as MPI's non-overtaking rule orders them. The lists must already be
 * valid (`distGraphProblem`).
 */
export function graphNeighborhood(sources: readonly number[], destinations: readonly number[]): Neighborhood {
  const occurrence = (list: readonly number[]): Int32Array => {
    const seen = new Map<number, number>();
    return Int32Array.from(list, (r) => {
      const k = seen.get(r) ?? 0;
      seen.set(r, k + 1);
      return k;
    });
  };
  return {
    sources: Int32Array.from(sources),
    destinations: Int32Array.from(destinations),
    recvTags: occurrence(sources),
    sendTags: occurrence(destinations),
  };
}

/** Optional arguments of distGraphCreateAdjacent. */
export interface DistGraphOptions {
  /** Weights of the `sources` edges (one each; MPI's sourceweights). Kept, never used to place ranks. */
  sourceWeights?: readonly number[];
  /** Weights of the `destinations` edges (one each; MPI's destweights). */
  destWeights?: readonly number[];
  /** Accepted and ignored, as in cartCreate: ranks keep their order. */
  reorder?: boolean;
}

/**
 * What is wrong with one rank's arguments to distGraphCreateAdjacent, as an error to raise
 * (NBC_ERR_RANK for a rank out of range, NBC_ERR_ARG otherwise), or null when they are valid.
 * Returned rather than thrown so the caller can still take part in the collective check and
 * no peer waits for a rank that failed alone.
 */
export function distGraphProblem(what: string, size: number, sources: unknown, destinations: unknown,
  opts?: DistGraphOptions): NbcArgError | NbcRankError | null {
  const lists: Array<[string, unknown]> = [['sources', sources], ['destinations', destinations]];
  for (const [name, list] of lists) {
    if (!Array.isArray(list) && !ArrayBuffer.isView(list)) {
      return new NbcArgError(`Cannot ${what}: ${name} is ${typeof list}; expected an array of ranks`);
    }
    const l = list as ArrayLike<number>;
    const count = new Map<number, number>();
    for (let i = 0; i < l.length; i++) {
      const r = l[i]!;
      if (!Number.isSafeInteger(r) || r < 0 || r >= size) {
        return new NbcRankError(`Cannot ${what}: ${name}[${i}] is ${String(r)}; expected a rank 0..${size - 1}`);
      }
      const k = (count.get(r) ?? 0) + 1;
      if (k > MAX_EDGES_PER_PAIR) {
        return new NbcArgError(`Cannot ${what}: ${name} names rank ${r} ${k} times; expected at most ${MAX_EDGES_PER_PAIR} edges between two ranks`);
      }
      count.set(r, k);
    }
  }
  const weights: Array<[string, readonly number[] | undefined, number]> = [
    ['sourceWeights', opts?.sourceWeights, (sources as ArrayLike<number>).length],
    ['destWeights', opts?.destWeights, (destinations as ArrayLike<number>).length],
  ];
  for (const [name, w, n] of weights) {
    if (w === undefined) continue;
    if (w.length !== n) return new NbcArgError(`Cannot ${what}: ${name} has ${w.length} entries; expected ${n} (one per edge)`);
    if (!w.every((x) => Number.isSafeInteger(x) && x >= 0)) {
      return new NbcArgError(`Cannot ${what}: ${name} has an entry that is not a non-negative integer; expected edge weights >= 0`);
    }
  }
  return null;
}

/**
 * Edge counts one rank contributes to the collective consistency check: for every rank r,
 * how many of this rank's `destinations` name r, then how many of its `sources` name r.
 */
export function edgeCounts(size: number, sources: ArrayLike<number>, destinations: ArrayLike<number>): number[] {
  const out = new Array<number>(2 * size).fill(0);
  for (let i = 0; i < destinations.length; i++) out[destinations[i]!]! += 1;
  for (let i = 0; i < sources.length; i++) out[size + sources[i]!]! += 1;
  return out;
}

/**
 * The first edge two ranks disagree on, given every rank's `edgeCounts` (`countsOf(r)`), or
 * null: an edge a -> b must appear as often in a's destinations as a appears in b's sources,
 * or a neighbour collective would wait for a message that never comes.
 */
export function edgeMismatch(size: number, countsOf: (rank: number, index: number) => number):
  { from: number; to: number; sent: number; received: number } | null {
  for (let a = 0; a < size; a++) {
    for (let b = 0; b < size; b++) {
      const sent = countsOf(a, b);
      const received = countsOf(b, size + a);
      if (sent !== received) return { from: a, to: b, sent, received };
    }
  }
  return null;
}
