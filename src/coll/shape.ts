/**
 * What a schedule builder knows about a call: everything every rank shares (size, root, byte
 * counts, op commutativity) plus this rank's number. Builders are pure functions of it, which
 * is what makes schedules cacheable and identical across executors.
 */
export interface CollShape {
  rank: number;
  size: number;
  /** Root of rooted collectives (0 otherwise). */
  root: number;
  /** Bytes of one rank's block (count * element size). */
  bytes: number;
  /** Element size in bytes; reductions only split on element boundaries. */
  esize: number;
  /** dtype id and op id for reductions (0 otherwise). */
  dtype: number;
  op: number;
  commutative: boolean;
  /** k-nomial degree (2..8) where the algorithm takes one. */
  radix: number;
  /** Per-rank byte counts and displacements for v-variants (and reduceScatter). */
  counts?: Int32Array;
  displs?: Int32Array;
  /** alltoallv: receive side counts and displacements (send side in counts/displs). */
  rcounts?: Int32Array;
  rdispls?: Int32Array;
}

export function shape(partial: Partial<CollShape> & Pick<CollShape, 'rank' | 'size'>): CollShape {
  return { root: 0, bytes: 0, esize: 1, dtype: 0, op: 0, commutative: true, radix: 2, ...partial };
}

/** Largest power of two <= n (n >= 1). */
export function pow2Floor(n: number): number {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/** Splits `count` elements into `parts` blocks, the first `count % parts` one element larger. */
export function blocks(count: number, parts: number): { start: Int32Array; len: Int32Array } {
  const start = new Int32Array(parts + 1);
  const len = new Int32Array(parts);
  const q = Math.floor(count / parts);
  const r = count % parts;
  for (let i = 0; i < parts; i++) {
    len[i] = q + (i < r ? 1 : 0);
    start[i + 1] = start[i]! + len[i]!;
  }
  return { start, len };
}
