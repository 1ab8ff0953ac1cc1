/**
 * What the applications' kernels cost (AppCompute, sim/apps.ts): measured on this machine by
 * running the apps' own kernels (apps/grid.ts), or taken from a paper's reported times.
 *
 * Core code: no node:* imports.
 */
import { axpy, divide, dot, makeBox, matvec27, matvec7, scale } from '../apps/grid.js';
import { VectorHeap } from '../apps/kernels.js';
import type { AppCompute } from './apps.js';

/**
 * Iterations per unit of sqrt(NX^2 + NY^2 + NZ^2) to a relative residual of 1e-8, from the
 * apps' own counts on this project's reference VM (BENCHMARKS.md, "The applications on the
 * model"): nbc pcg on 28^3, 40^3, 48x24x24, 80x40x40, 60x20x20, 120x40x40, 32x32x16, 80x80x40
 * (0.80-0.94, mean 0.87); nbc cg on 16^3, 24^3, 32^3, 48x24x24, 32x32x16 (1.17-1.41, mean 1.26).
 */
export const OWN_ITERATIONS = { pcg: 0.87, cg: 1.26 };

/**
 * Seed 000, Table I (256 processes, 60^3 unknowns each, 951 iterations, the 2.53 GHz Xeon
 * nodes of qdr-cx2), per row and iteration:
 * - matvec: 39.72 s (Algorithm 1) and 40.29 s (Algorithm 2) / 951 / 216000: 0.193-0.196 us;
 * - DiagScale (Algorithm 1's precond, one division a row): 7.36 s: 0.0358 us;
 * - DiagInvScale (Algorithm 2, a multiplication, twice an iteration): 3.60 s / 2: 0.0088 us;
 * - axpy: 3.81-3.86 s over 3 updates an iteration: 0.0062 us each;
 * - dot: not separable from the inner products' communication in the table; assumed 2/3 of an
 *   axpy (two streams read, none written);
 * - halo packing: assumed one axpy's cost per element;
 * - skew: Sec. VI-D, "the variation between the min and the max compute times, across all the
 *   processors, for the same DGEMM problem size is as high as 10 %";
 * - iterations: 951 on the 480 x 480 x 240 grid (dimsCreate(256, 3) = 8 x 8 x 4 processes of
 *   60^3): 951 / sqrt(480^2 + 480^2 + 240^2) = 1.32 per unit; the CG constant is this project's
 *   own (OWN_ITERATIONS), scaled alike.
 */
export const SEED000_COMPUTE: AppCompute = {
  source: 'seed 000 Table I (256 x 60^3, 951 iterations) and Sec. VI-D (10 % skew)',
  matvec27RowUs: (39.72 + 40.29) / 2 / 951 / 216_000 * 1e6,
  matvec7RowUs: (39.72 + 40.29) / 2 / 951 / 216_000 * 1e6 * (7 / 27),
  dotRowUs: 3.835 / 3 / 951 / 216_000 * 1e6 * (2 / 3),
  axpyRowUs: 3.835 / 3 / 951 / 216_000 * 1e6,
  scaleRowUs: 3.60 / 2 / 951 / 216_000 * 1e6,
  divideRowUs: 7.36 / 951 / 216_000 * 1e6,
  packUs: 3.835 / 3 / 951 / 216_000 * 1e6,
  spread: 0.10,
  iterations: { pcg: 951 / Math.hypot(480, 480, 240), cg: OWN_ITERATIONS.cg * (951 / Math.hypot(480, 480, 240)) / OWN_ITERATIONS.pcg },
};

/**
 * Seed 001's odin nodes (2 GHz Opteron 246, DDR-400). The paper reports speedups, not times,
 * so every figure is assumed: memory-bound kernels at about 3.5 GB/s (a STREAM-class figure
 * for the node), by the bytes each streams per row: the matrix-free 7-point matvec 16 B (p read
 * once with reuse, s written), an axpy or xpby 24 B, a dot 16 B; no skew (one process a node
 * on an otherwise idle cluster).
 */
export const ODIN_COMPUTE: AppCompute = {
  source: 'assumed for seed 001\'s 2 GHz Opteron 246 nodes (memory-bound kernels at 3.5 GB/s; the paper gives speedups only)',
  matvec27RowUs: 32 / 3500,
  matvec7RowUs: 16 / 3500,
  dotRowUs: 16 / 3500,
  axpyRowUs: 24 / 3500,
  scaleRowUs: 24 / 3500,
  divideRowUs: 24 / 3500,
  packUs: 16 / 3500,
  spread: 0,
  iterations: OWN_ITERATIONS,
};

/** Where the timed dot's result goes (read by nothing: a store V8 must keep, so the dot is computed). */
export let kept = 0;

/** Median of `reps` timings of `f` (us), after one untimed call. */
function timeUs(f: () => void, reps: number): number {
  f();
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    f();
    xs.push((performance.now() - t) * 1000);
  }
  xs.sort((a, b) => a - b);
  return xs[xs.length >> 1]!;
}

/**
 * The apps' kernels timed here on one rank's box of `n`^3 rows, warm (after `warmup` untimed
 * passes, V8 having optimised them): what `nbc sim pcg|cg` uses where the parameters carry no
 * compute model. No skew (the ranks of a simulated cluster are alike).
 */
export function measureAppCompute(n = 32, warmup = 40): AppCompute {
  const box = makeBox([n, n, n], [1, 1, 1], [0, 0, 0]);
  const rows = box.rows;
  const all = [0, n, 0, n, 0, n];
  // in a vector heap, as the apps place them: the kernels the apps run (WebAssembly) are timed
  const heap = new VectorHeap(4 * rows + box.ghosted, n + 2);
  const p = heap.vector(box.ghosted).fill(1);
  const y = heap.vector(rows);
  const a = heap.vector(rows).fill(1);
  const b = heap.vector(rows).fill(2);
  const d = heap.vector(rows).fill(26);
  const kernels = {
    m27: () => matvec27(box, y, p, all, null),
    m7: () => matvec7(box, y, p, all, null),
    dot: () => { kept = dot(a, b, rows); },
    axpy: () => axpy(a, 1e-9, b, rows),
    scale: () => scale(y, a, d, rows),
    divide: () => divide(y, a, d, rows),
  };
  for (let w = 0; w < warmup; w++) for (const k of Object.values(kernels)) k();
  const per = (k: () => void): number => timeUs(k, 15) / rows;
  const out: AppCompute = {
    source: `measured here (the apps' kernels on ${n}^3 rows, warm)`,
    matvec27RowUs: per(kernels.m27),
    matvec7RowUs: per(kernels.m7),
    dotRowUs: per(kernels.dot),
    axpyRowUs: per(kernels.axpy),
    scaleRowUs: per(kernels.scale),
    divideRowUs: per(kernels.divide),
    packUs: per(kernels.axpy),
    spread: 0,
    iterations: OWN_ITERATIONS,
  };
  return out;
}
