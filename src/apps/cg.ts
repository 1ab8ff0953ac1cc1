/**
 * `nbc cg`: seed 001's solver, as a job file (every rank runs the default export; `nbc cg`
 * launches it, and so can `nbc run`, `nbc node` or mpirun).
 *
 * Unpreconditioned CG on the 3-D Poisson problem: the 7-point Laplacian (6 on the diagonal,
 * -1 for the six face neighbours, zero Dirichlet boundary), matrix-free, on a Cartesian
 * communicator from dimsCreate(size, 3), `--n` points per rank per dimension (or `--global`).
 * The halo exchange is `neighborAlltoall` (`--mode blocking`), or `ineighborAlltoall` started
 * before the interior rows of the matvec and finished before the boundary rows (`--mode
 * nonblocking`, seed 001 Listings 3-5), with `test()` every `--test-interval` rows for the
 * host executor (`--executor offload` progresses without). Dot products by allreduce.
 *
 * Verification: the right-hand side is manufactured from the exact discrete solution
 * u(i, j, k) = X(i) Y(j) Z(k), X(i) = i (N0 + 1 - i) over the 1-based global index (0 on the
 * boundary). The second difference of such a quadratic is exactly -2, so b = A u =
 * 2 (Y Z + X Z + X Y) holds exactly in floating point, and the only error left is the
 * solver's: ||x - u|| / ||u|| <= cond(A) ||r|| / ||b||, with cond(A) from the Laplacian's
 * known eigenvalues. The run prints the error and that bound, and fails above it.
 */
import { dimsCreate, type Communicator } from '../index.js';
import { axpy, axpyFromGhost, boundaryBoxes, dot, dotGhost, interiorBox, makeBox, matvec7, xpbyIntoGhost, type Box } from './grid.js';
import { Halo } from './halo.js';
import { VectorHeap } from './kernels.js';
import { matvecGBs } from './pcg.js';
import {
  collOptions, haloOptions, P, Pacer, parseAppArgs, phaseSummary, Phases, placement, report, solveContext, warmUp, type AppOptions, type AppResult, type Verification,
} from './run.js';

/** The exact solution's factor along one dimension of N points, at 0-based global index g. */
const factor = (g: number, N: number): number => (g + 1) * (N - g);

/** cond(A) of the 7-point Laplacian with Dirichlet boundary on N0 x N1 x N2 points. */
export function laplacianCondition(N: readonly number[]): number {
  let lo = 0;
  let hi = 0;
  for (const n of N) {
    const c = Math.cos(Math.PI / (n + 1));
    lo += 2 * (1 - c);
    hi += 2 * (1 + c);
  }
  return hi / lo;
}

export interface CgSolve {
  iterations: number;
  relResidual: number;
  history: number[];
  seconds: number;
  /** ||x - u|| and ||u|| on this rank (squared), for the verification. */
  err2: number;
  u2: number;
}

/**
 * What the solves of a job work with: the halo, the exact solution and right-hand side, the
 * vectors and the matvec's boxes, built once by `cgSetup` and reset by every solve (solves
 * that built their own left the garbage collector's marking to the timed one).
 */
export interface CgWork {
  halo: Halo;
  u: Float64Array;
  b: Float64Array;
  x: Float64Array;
  r: Float64Array;
  s: Float64Array;
  p: Float64Array;
  inner: number[];
  shell: number[][];
}

/** Builds the solves' halo, vectors and right-hand side. Collective over `cart` (the halo agrees on its block). */
export function cgSetup(cart: Communicator, o: AppOptions, box: Box): CgWork {
  const n = box.rows;
  const [n0, n1, n2] = box.n;
  const [N0, N1, N2] = box.global;
  // The vectors and the halo's buffers in one heap, so that the WebAssembly kernels run from
  // the first iteration (blocks padded to the largest face of any rank: where they do not fit,
  // the heap hands out plain arrays and the pack and unpack stay in JavaScript).
  const heap = new VectorHeap(5 * n + box.ghosted + 3 * (box.ghosted - n), n2 + 2);
  const halo = Halo.cart(cart, box, haloOptions(o), heap);
  const u = heap.vector(n);
  const b = heap.vector(n);
  for (let i = 0, c = 0; i < n0; i++) {
    const X = factor(box.start[0] + i, N0);
    for (let j = 0; j < n1; j++) {
      const Y = factor(box.start[1] + j, N1);
      for (let k = 0; k < n2; k++, c++) {
        const Z = factor(box.start[2] + k, N2);
        u[c] = X * Y * Z;
        b[c] = 2 * (Y * Z + X * Z + X * Y);
      }
    }
  }
  return {
    halo, u, b, x: heap.vector(n), r: heap.vector(n), s: heap.vector(n), p: heap.vector(box.ghosted),
    inner: interiorBox(box), shell: boundaryBoxes(box),
  };
}

/** Runs one solve from x0 = 0. Collective over `cart`. On `setup` (cgSetup) where the job solves more than once. */
export function solveCg(cart: Communicator, o: AppOptions, box: Box, phases: Phases, pacer: Pacer,
  log: (it: number, rel: number) => void, setup?: CgWork): CgSolve {
  const opts = collOptions(o);
  const { halo, u, b, x, r, s, p, inner, shell } = setup ?? cgSetup(cart, o, box);
  const n = box.rows;
  x.fill(0);
  s.fill(0);
  p.fill(0);
  const hook = pacer.active ? pacer : null;
  const blocking = o.mode === 'blocking';
  const one = new Float64Array(1);
  const sum = new Float64Array(1);
  /** A blocking allreduce of one local value, charged (with its communication) to `phase`. */
  const reduce = (value: number, phase: number, t0: number): number => {
    one[0] = value;
    const t = performance.now();
    cart.allreduce(one, sum, 'sum', opts);
    phases.charge(phase, t0, performance.now() - t);
    return sum[0]!;
  };
  const bb = reduce(dot(b, b, n), P.iprod, performance.now());
  r.set(b); // x0 = 0
  xpbyIntoGhost(box, p, r, 0, p);
  const history: number[] = [];
  cart.barrier();
  phases.ms.fill(0);
  phases.commMs.fill(0);
  const start = performance.now();
  let c = start;
  let rr = reduce(dot(r, r, n), P.iprod, c);
  c = performance.now();
  let it = 0;
  let rel = Math.sqrt(rr / bb);
  while (it < o.maxIter && rr / bb >= o.tol * o.tol) {
    it++;
    // s = A p, the halo behind the interior rows (or before all rows when blocking).
    if (blocking) {
      const t = performance.now();
      halo.exchange(p);
      c = phases.charge(P.halo, t, performance.now() - t);
      matvec7(box, s, p, inner, hook);
    } else {
      pacer.req = halo.start(p);
      matvec7(box, s, p, inner, hook);
      pacer.req = null;
      const tw = performance.now();
      halo.finish(p);
      const t1 = performance.now();
      phases.ms[P.halo]! += t1 - tw;
      phases.commMs[P.halo]! += t1 - tw;
      c += t1 - tw;
    }
    for (const bx of shell) matvec7(box, s, p, bx, hook);
    c = phases.charge(P.matvec, c);
    const pAp = reduce(dotGhost(box, s, p), P.sdotp, c);
    c = performance.now();
    const alpha = rr / pAp;
    axpyFromGhost(box, x, alpha, p);
    axpy(r, -alpha, s, n);
    c = phases.charge(P.axpy, c);
    const rrNew = reduce(dot(r, r, n), P.iprod, c);
    c = performance.now();
    rel = Math.sqrt(rrNew / bb);
    history.push(rel);
    log(it, rel);
    if (rrNew / bb < o.tol * o.tol) break;
    xpbyIntoGhost(box, p, r, rrNew / rr, p);
    rr = rrNew;
    c = phases.charge(P.axpy, c);
  }
  const seconds = (performance.now() - start) / 1000;
  let err2 = 0;
  let u2 = 0;
  for (let i = 0; i < n; i++) { err2 += (x[i]! - u[i]!) ** 2; u2 += u[i]! ** 2; }
  return { iterations: it, relResidual: rel, history, seconds, err2, u2 };
}

export default async function cg(world: Communicator, args: string[]): Promise<AppResult | null> {
  const o = parseAppArgs('cg', args);
  const dims = dimsCreate(world.size, 3);
  const cart = world.cartCreate(dims, [false, false, false])!;
  const global = o.global ?? [o.n * dims[0]!, o.n * dims[1]!, o.n * dims[2]!];
  for (let k = 0; k < 3; k++) {
    if (global[k]! < dims[k]!) throw new Error(`Cannot run on ${world.size} ranks: global grid ${global.join('x')} has fewer points than the process grid ${dims.join('x')} in dimension ${k}; expected at least one point per rank`);
  }
  const box = makeBox(global, dims, cart.coords());
  const ctx = solveContext(world, o);
  const { noise, phases, pacer } = ctx;
  const where = placement(world);
  const setup = cgSetup(cart, o, box);
  warmUp(ctx, o, (log) => solveCg(cart, o, box, phases, pacer, log, setup));
  const res = solveCg(cart, o, box, phases, pacer, ctx.progress, setup);
  const summary = phaseSummary(world, phases);
  const red = new Float64Array(4);
  world.allreduce(Float64Array.of(res.err2, res.u2, 0, noise?.stolenMs ?? 0), red, 'sum');
  const secs = new Float64Array(1);
  world.allreduce(Float64Array.of(res.seconds), secs, 'max');
  if (world.rank !== 0) return null;
  const error = Math.sqrt(red[0]! / red[1]!);
  const kappa = laplacianCondition(box.global);
  // The recursively updated residual drifts from the true one by rounding; 10x covers it.
  const bound = 10 * kappa * Math.max(res.relResidual, Number.EPSILON);
  let verification: Verification | null = null;
  if (o.verify !== 'off') {
    verification = {
      kind: 'manufactured exact solution', ok: error <= bound, value: error, bound,
      detail: `||x - u|| / ||u|| = ${error.toExponential(2)} <= 10 cond(A) ||r||/||b|| = ${bound.toExponential(2)} (cond(A) = ${kappa.toFixed(0)})`,
    };
  }
  const unknowns = box.global[0] * box.global[1] * box.global[2];
  const result: AppResult = {
    app: 'cg', variant: 'cg', mode: o.mode, executor: o.executor, algorithm: o.algorithm ?? null, ranks: world.size,
    ppn: where.ppn, nodes: where.nodes, link: o.link, noise: o.noiseText, global: [...box.global], local: [...box.n],
    processGrid: [...box.dims], unknowns, iterations: res.iterations, finalRelResidual: res.relResidual, solveSeconds: secs[0]!, warmupSolves: o.warmup,
    perIterationMs: res.iterations > 0 ? (secs[0]! * 1000) / res.iterations : 0, phases: summary,
    matvecGBs: matvecGBs(box.rows, res.iterations, summary.matvec!.seconds), testCalls: pacer.tests,
    noiseStolenSeconds: red[3]! / world.size / 1000, verification, residualHistory: res.history,
    machine: { node: process.version, date: new Date().toISOString() },
  };
  await report(o, result);
  if (verification !== null && !verification.ok) throw new Error(`verification failed: ${verification.detail}`);
  return result;
}
