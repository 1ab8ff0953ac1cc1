/**
 * The grids of the proof applications: a 3-D block decomposition of an N0 x N1 x N2 global grid
 * over a process grid (dimsCreate(size, 3), row-major like cartCreate), the regions a halo
 * exchange moves, and the kernels: 7-point and 27-point matrix-free matvecs over any box of
 * rows, inner products and vector updates.
 *
 * Layout: a rank's vectors are compact, n0 x n1 x n2 with the last dimension fastest, except
 * the matvec's input (the search direction p), which carries one ghost layer on every side
 * ((n0 + 2) x (n1 + 2) x (n2 + 2)) that the halo exchange fills. Ghosts on the global boundary
 * are never written and stay 0: that is the zero Dirichlet condition. Kernels are plain loops
 * over typed arrays and allocate nothing (PERFORMANCE.md; the solvers call them every
 * iteration). Where every vector of a call lies in one `VectorHeap` (kernels.ts), the same
 * loop runs in WebAssembly, with the same bits.
 */
import { wasmFor } from './kernels.js';

/** A rank's part of the global grid. */
export interface Box {
  /** Global points per dimension. */
  global: readonly [number, number, number];
  /** Process grid and this rank's coordinates on it. */
  dims: readonly [number, number, number];
  coords: readonly [number, number, number];
  /** Local points per dimension and the global index of the first. */
  n: readonly [number, number, number];
  start: readonly [number, number, number];
  /** Local points (rows of the local matrix). */
  rows: number;
  /** Length of a ghosted vector. */
  ghosted: number;
}

/** The part of `N` points that coordinate `c` of `P` holds: the first N % P parts one point larger. */
export function split1d(N: number, P: number, c: number): { start: number; len: number } {
  const q = Math.floor(N / P);
  const r = N % P;
  return { start: c * q + Math.min(c, r), len: q + (c < r ? 1 : 0) };
}

export function makeBox(global: readonly number[], dims: readonly number[], coords: readonly number[]): Box {
  const g = [global[0]!, global[1]!, global[2]!] as const;
  const d = [dims[0]!, dims[1]!, dims[2]!] as const;
  const c = [coords[0]!, coords[1]!, coords[2]!] as const;
  const parts = [0, 1, 2].map((k) => split1d(g[k]!, d[k]!, c[k]!));
  const n = [parts[0]!.len, parts[1]!.len, parts[2]!.len] as const;
  return {
    global: g, dims: d, coords: c, n, start: [parts[0]!.start, parts[1]!.start, parts[2]!.start],
    rows: n[0] * n[1] * n[2], ghosted: (n[0] + 2) * (n[1] + 2) * (n[2] + 2),
  };
}

/** The rank at process-grid coordinates `c` (row-major), or -1 outside the grid. */
export function rankAt(dims: readonly number[], c: readonly number[]): number {
  let r = 0;
  for (let k = 0; k < 3; k++) {
    if (c[k]! < 0 || c[k]! >= dims[k]!) return -1;
    r = r * dims[k]! + c[k]!;
  }
  return r;
}

/**
 * Ghosted indices of a region, points in row-major order. Ranges are half-open, in ghosted
 * coordinates (local index + 1). Both ends of a halo message list their points in this order,
 * and the block decomposition makes their shared extents equal, so they agree point by point.
 */
function regionIndices(box: Box, r: ReadonlyArray<readonly [number, number]>): Int32Array {
  const g1 = box.n[1] + 2;
  const g2 = box.n[2] + 2;
  const [a, b, c] = r as [readonly [number, number], readonly [number, number], readonly [number, number]];
  const out = new Int32Array((a[1] - a[0]) * (b[1] - b[0]) * (c[1] - c[0]));
  let k = 0;
  for (let i0 = a[0]; i0 < a[1]; i0++) for (let i1 = b[0]; i1 < b[1]; i1++) for (let i2 = c[0]; i2 < c[1]; i2++) out[k++] = (i0 * g1 + i1) * g2 + i2;
  return out;
}

/** The points this rank sends to the neighbour at `offset` (its boundary layer facing it). */
export function sendRegion(box: Box, offset: readonly number[]): Int32Array {
  return regionIndices(box, [0, 1, 2].map((k) => {
    const n = box.n[k]!;
    const o = offset[k]!;
    return o < 0 ? [1, 2] as const : o > 0 ? [n, n + 1] as const : [1, n + 1] as const;
  }));
}

/** The ghost points the neighbour at `offset` fills. */
export function recvRegion(box: Box, offset: readonly number[]): Int32Array {
  return regionIndices(box, [0, 1, 2].map((k) => {
    const n = box.n[k]!;
    const o = offset[k]!;
    return o < 0 ? [0, 1] as const : o > 0 ? [n + 1, n + 2] as const : [1, n + 1] as const;
  }));
}

/** Called after every line of a matvec box: drives test() calls and noise (apps/run.ts). */
export interface LineHook {
  lines(rows: number): void;
}

/**
 * The boxes of boundary rows: the local box minus its interior [1, n-1)^3, as six disjoint
 * boxes [lo0, hi0, lo1, hi1, lo2, hi2] (empty ones dropped). Their rows read ghosts; the
 * interior's do not, so the interior can be computed while the halo is in flight.
 */
export function boundaryBoxes(box: Box): number[][] {
  const [n0, n1, n2] = box.n;
  const i0 = Math.max(1, n0 - 1);
  const i1 = Math.max(1, n1 - 1);
  const out = [
    [0, 1, 0, n1, 0, n2], [Math.max(1, n0 - 1), n0, 0, n1, 0, n2],
    [1, i0, 0, 1, 0, n2], [1, i0, Math.max(1, n1 - 1), n1, 0, n2],
    [1, i0, 1, i1, 0, 1], [1, i0, 1, i1, Math.max(1, n2 - 1), n2],
  ];
  return out.filter((b) => b[0]! < b[1]! && b[2]! < b[3]! && b[4]! < b[5]!);
}

/** The interior box (rows that read no ghost), possibly empty. */
export function interiorBox(box: Box): number[] {
  const [n0, n1, n2] = box.n;
  return [1, Math.max(1, n0 - 1), 1, Math.max(1, n1 - 1), 1, Math.max(1, n2 - 1)];
}

/**
 * Runs a WebAssembly matvec over box b's lines (lo0, hi0, lo1, hi1): all at once, or one line
 * at a time where a hook is told of each line's rows.
 */
function byLines(b: readonly number[], hook: LineHook | null, rows: (lo0: number, hi0: number, lo1: number, hi1: number) => void): void {
  if (hook === null) {
    rows(b[0]!, b[1]!, b[2]!, b[3]!);
    return;
  }
  for (let i0 = b[0]!; i0 < b[1]!; i0++) {
    for (let i1 = b[2]!; i1 < b[3]!; i1++) {
      rows(i0, i0 + 1, i1, i1 + 1);
      hook.lines(b[5]! - b[4]!);
    }
  }
}

/**
 * y = A p on the rows of box b for the 7-point Laplacian (6 on the diagonal, -1 for the six
 * face neighbours). p is ghosted, y compact.
 */
export function matvec7(box: Box, y: Float64Array, p: Float64Array, b: readonly number[], hook: LineHook | null): void {
  const n1 = box.n[1];
  const n2 = box.n[2];
  const k = wasmFor(y, p);
  if (k !== undefined) {
    byLines(b, hook, (lo0, hi0, lo1, hi1) => k.fn.matvec7(n1, n2, y.byteOffset, p.byteOffset, lo0, hi0, lo1, hi1, b[4]!, b[5]!));
    return;
  }
  const g2 = n2 + 2;
  const s0 = (n1 + 2) * g2;
  const lo2 = b[4]!;
  const hi2 = b[5]!;
  for (let i0 = b[0]!; i0 < b[1]!; i0++) {
    for (let i1 = b[2]!; i1 < b[3]!; i1++) {
      let g = ((i0 + 1) * (n1 + 2) + i1 + 1) * g2 + 1 + lo2;
      let c = (i0 * n1 + i1) * n2 + lo2;
      for (let i2 = lo2; i2 < hi2; i2++, g++, c++) {
        y[c] = 6 * p[g]! - (p[g - 1]! + p[g + 1]! + p[g - g2]! + p[g + g2]! + p[g - s0]! + p[g + s0]!);
      }
      if (hook !== null) hook.lines(hi2 - lo2);
    }
  }
}

/** Column sums of one line of a 27-point matvec (grown as needed, never per call). */
let columns = new Float64Array(0);

/**
 * y = A p on the rows of box b for the 27-point Laplacian of hypre's `ij -27pt` (26 on the
 * diagonal, -1 for each of the 26 neighbours): 27 p - (sum of the 3x3x3 block). Per line of
 * rows, the 3x3 column sums (the two slower dimensions) are formed once per column and the
 * block sum of each row adds three neighbouring columns: 9 loads per row instead of 27.
 */
export function matvec27(box: Box, y: Float64Array, p: Float64Array, b: readonly number[], hook: LineHook | null): void {
  const n1 = box.n[1];
  const n2 = box.n[2];
  const g2 = n2 + 2;
  const s0 = (n1 + 2) * g2;
  const lo2 = b[4]!;
  const hi2 = b[5]!;
  const width = hi2 - lo2;
  if (width <= 0) return;
  const k = wasmFor(y, p);
  if (k !== undefined && k.columns >= width + 2) {
    byLines(b, hook, (lo0, hi0, lo1, hi1) => k.fn.matvec27(n1, n2, y.byteOffset, p.byteOffset, k.col, lo0, hi0, lo1, hi1, lo2, hi2));
    return;
  }
  if (columns.length < width + 2) columns = new Float64Array(width + 2);
  const col = columns;
  for (let i0 = b[0]!; i0 < b[1]!; i0++) {
    for (let i1 = b[2]!; i1 < b[3]!; i1++) {
      const line = ((i0 + 1) * (n1 + 2) + i1 + 1) * g2 + 1;
      // columns lo2 - 1 .. hi2 of this line (ghosts only where a row of the box needs them)
      for (let k = 0, g = line + lo2 - 1; k < width + 2; k++, g++) {
        const a = g - s0;
        const z = g + s0;
        col[k] = p[a - g2]! + p[a]! + p[a + g2]! + p[g - g2]! + p[g]! + p[g + g2]! + p[z - g2]! + p[z]! + p[z + g2]!;
      }
      let c = (i0 * n1 + i1) * n2 + lo2;
      let g = line + lo2;
      for (let k = 1; k <= width; k++, c++, g++) y[c] = 27 * p[g]! - (col[k - 1]! + col[k]! + col[k + 1]!);
      if (hook !== null) hook.lines(width);
    }
  }
}

/** Local part of (a, b), both compact. */
export function dot(a: Float64Array, b: Float64Array, n: number): number {
  const k = wasmFor(a, b);
  if (k !== undefined) return k.fn.dot(a.byteOffset, b.byteOffset, n);
  let s = 0;
  for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
  return s;
}

/** Local part of (a, p), a compact and p ghosted. */
export function dotGhost(box: Box, a: Float64Array, p: Float64Array): number {
  const [n0, n1, n2] = box.n;
  const k = wasmFor(a, p);
  if (k !== undefined) return box.rows === 0 ? 0 : k.fn.dotGhost(n0, n1, n2, a.byteOffset, p.byteOffset);
  const g2 = n2 + 2;
  let s = 0;
  let c = 0;
  for (let i0 = 0; i0 < n0; i0++) {
    for (let i1 = 0; i1 < n1; i1++) {
      let g = ((i0 + 1) * (n1 + 2) + i1 + 1) * g2 + 1;
      for (let i2 = 0; i2 < n2; i2++) s += a[c++]! * p[g++]!;
    }
  }
  return s;
}

/** y += alpha * x, both compact. */
export function axpy(y: Float64Array, alpha: number, x: Float64Array, n: number): void {
  const k = wasmFor(y, x);
  if (k !== undefined) return k.fn.axpy(y.byteOffset, alpha, x.byteOffset, n);
  for (let i = 0; i < n; i++) y[i]! += alpha * x[i]!;
}

/** y += alpha * p, y compact and p ghosted. */
export function axpyFromGhost(box: Box, y: Float64Array, alpha: number, p: Float64Array): void {
  const [n0, n1, n2] = box.n;
  const k = wasmFor(y, p);
  if (k !== undefined) {
    if (box.rows > 0) k.fn.axpyFromGhost(n0, n1, n2, y.byteOffset, alpha, p.byteOffset);
    return;
  }
  const g2 = n2 + 2;
  let c = 0;
  for (let i0 = 0; i0 < n0; i0++) {
    for (let i1 = 0; i1 < n1; i1++) {
      let g = ((i0 + 1) * (n1 + 2) + i1 + 1) * g2 + 1;
      for (let i2 = 0; i2 < n2; i2++) y[c++]! += alpha * p[g++]!;
    }
  }
}

/** p = w + beta * q, p and q ghosted (interior only; q may be p), w compact. */
export function xpbyIntoGhost(box: Box, p: Float64Array, w: Float64Array, beta: number, q: Float64Array): void {
  const [n0, n1, n2] = box.n;
  const k = wasmFor(p, w, q);
  if (k !== undefined) {
    if (box.rows > 0) k.fn.xpbyIntoGhost(n0, n1, n2, p.byteOffset, w.byteOffset, beta, q.byteOffset);
    return;
  }
  const g2 = n2 + 2;
  let c = 0;
  for (let i0 = 0; i0 < n0; i0++) {
    for (let i1 = 0; i1 < n1; i1++) {
      let g = ((i0 + 1) * (n1 + 2) + i1 + 1) * g2 + 1;
      for (let i2 = 0; i2 < n2; i2++, g++) p[g] = w[c++]! + beta * q[g]!;
    }
  }
}

/** y = x * d elementwise (DiagInvScale, seed 000 Figure 5), all compact. */
export function scale(y: Float64Array, x: Float64Array, d: Float64Array, n: number): void {
  const k = wasmFor(y, x, d);
  if (k !== undefined) return k.fn.scale(y.byteOffset, x.byteOffset, d.byteOffset, n);
  for (let i = 0; i < n; i++) y[i] = x[i]! * d[i]!;
}

/** y = x / d elementwise (DiagScale, seed 000 Figure 4: a division per row), all compact. */
export function divide(y: Float64Array, x: Float64Array, d: Float64Array, n: number): void {
  const k = wasmFor(y, x, d);
  if (k !== undefined) return k.fn.divide(y.byteOffset, x.byteOffset, d.byteOffset, n);
  for (let i = 0; i < n; i++) y[i] = x[i]! / d[i]!;
}

/** dst[at + k] = src[idx[k]] for every k: a halo's pack. */
export function gather(dst: Float64Array, at: number, src: Float64Array, idx: Int32Array): void {
  const k = wasmFor(dst, src, idx);
  if (k !== undefined) return k.fn.gather(dst.byteOffset + at * 8, src.byteOffset, idx.byteOffset, idx.length);
  for (let i = 0; i < idx.length; i++) dst[at + i] = src[idx[i]!]!;
}

/** dst[idx[k]] = src[at + k] for every k: a halo's unpack. */
export function scatter(dst: Float64Array, src: Float64Array, at: number, idx: Int32Array): void {
  const k = wasmFor(dst, src, idx);
  if (k !== undefined) return k.fn.scatter(dst.byteOffset, src.byteOffset + at * 8, idx.byteOffset, idx.length);
  for (let i = 0; i < idx.length; i++) dst[idx[i]!] = src[at + i]!;
}
