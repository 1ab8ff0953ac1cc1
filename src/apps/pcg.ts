/**
 * `nbc pcg`: seed 000's solver on hypre's `ij -27pt` problem, as a job file (every rank runs
 * the default export; `nbc pcg` launches it, and so can `nbc run`, `nbc node` or mpirun).
 *
 * The problem: the 27-point Laplacian (26 on the diagonal, -1 for each of the 26 neighbours),
 * zero Dirichlet boundary, on a global grid n*P x n*Q x n*R for the process grid
 * dimsCreate(size, 3) (or `--global NX,NY,NZ`, split as evenly as the grid allows), b = ones,
 * x0 = 0, diagonal scaling, stop when ||r||_2 / ||b||_2 < tol. The halo is exchanged with the
 * 26 neighbours over a distributed graph, started before the interior rows of the matvec and
 * finished before the boundary rows (what hypre's Matvec does with Isend/Irecv).
 *
 * The variants (seed 000, Section V):
 * - `alg1`, Figure 3: hypre's PCG. Three blocking inner products per iteration, each used at
 *   once; DiagScale divides by the diagonal.
 * - `alg2`, Figure 6: the split-preconditioned form, t = L^-1 r with L = sqrt(diag A),
 *   DiagInvScale multiplies by L^-1; gamma = (t, t). The x update is delayed by one iteration
 *   (x += alpha * p_prev after the matvec), so each inner product's result is needed only
 *   after independent work. Same iterates as alg1 in exact arithmetic.
 * - `overlap`, Figure 7: alg2 with every inner product started by iallreduce and waited for
 *   after the independent DiagInvScale or X_Axpy. Same operations in the same order on the
 *   same data as alg2, so the same iterates up to the reduction's rounding.
 *
 * Verification: for small grids (or `--verify on`), rank 0 gathers x and solves the same
 * problem with a sequential PCG written independently of the distributed kernels (plain
 * bounds-checked loops over the global grid); iteration counts must agree within 1 and the
 * solutions to 1e-6 relative in the 2-norm.
 */
import { dimsCreate, type Communicator, type Request } from '../index.js';
import {
  axpy, axpyFromGhost, boundaryBoxes, divide, dot, dotGhost, interiorBox, makeBox, matvec27, scale, xpbyIntoGhost, type Box,
} from './grid.js';
import { Halo } from './halo.js';
import { VectorHeap } from './kernels.js';
import {
  collOptions, haloOptions, P, Pacer, parseAppArgs, phaseSummary, Phases, placement, report, solveContext, warmUp, type AppOptions, type AppResult, type Verification,
} from './run.js';

/** Above this many unknowns `--verify auto` skips the sequential reference solve. */
export const VERIFY_AUTO_MAX = 110_000;

/** What a solve returns on every rank. */
export interface PcgSolve {
  iterations: number;
  relResidual: number;
  history: number[];
  x: Float64Array;
  seconds: number;
}

/** The distributed 27-point operator: halo plus interior / boundary matvec. */
class Operator {
  private readonly inner: number[];
  private readonly shell: number[][];

  constructor(readonly box: Box, readonly halo: Halo, private readonly pacer: Pacer, private readonly phases: Phases) {
    this.inner = interiorBox(box);
    this.shell = boundaryBoxes(box);
  }

  /** s = A p: start the halo, interior rows, finish the halo, boundary rows. */
  apply(s: Float64Array, p: Float64Array, t0: number): number {
    const req = this.halo.start(p);
    const hook = this.pacer.active ? this.pacer : null;
    this.pacer.req = req;
    matvec27(this.box, s, p, this.inner, hook);
    this.pacer.req = null;
    const tw = performance.now();
    this.halo.finish(p);
    const t1 = performance.now();
    this.phases.ms[P.halo]! += t1 - tw;
    this.phases.commMs[P.halo]! += t1 - tw;
    for (const b of this.shell) matvec27(this.box, s, p, b, hook);
    // The matvec phase excludes the time blocked on the halo (charged to 'halo' above).
    return this.phases.charge(P.matvec, t0 + (t1 - tw));
  }
}

/**
 * One inner product: local dot, then a blocking allreduce, or an iallreduce to wait for
 * later. Buffers are its own, so three can be in flight at once.
 */
class InnerProduct {
  private readonly local = new Float64Array(1);
  private readonly global = new Float64Array(1);
  private req: Request | null = null;
  private startMs = 0;

  constructor(private readonly comm: Communicator, private readonly phase: number, private readonly phases: Phases,
    private readonly opts: ReturnType<typeof collOptions>) {}

  /** Blocking: returns the global value; charges the phase from t0. */
  now(value: number, t0: number): number {
    this.local[0] = value;
    const t = performance.now();
    this.comm.allreduce(this.local, this.global, 'sum', this.opts);
    this.phases.charge(this.phase, t0, performance.now() - t);
    return this.global[0]!;
  }

  /** Non-blocking: starts the reduction of the local value (charged from t0). */
  start(value: number, t0: number): void {
    this.local[0] = value;
    const t = performance.now();
    this.req = this.comm.iallreduce(this.local, this.global, 'sum', this.opts);
    this.startMs = performance.now() - t;
    this.phases.charge(this.phase, t0, this.startMs);
  }

  /** Waits for the started reduction; the wait is charged to the phase as communication. */
  wait(): number {
    const t = performance.now();
    this.req!.wait();
    this.req = null;
    this.phases.charge(this.phase, t, performance.now() - t);
    return this.global[0]!;
  }

  get pending(): boolean {
    return this.req !== null;
  }
}

/**
 * What the solves of a job work with: the operator (its halo's graph communicator), the vectors
 * and the three inner products, built once by `pcgSetup` as a solver's setup phase is, and reset
 * by every solve (its log and history are the solve's own). Solves that built their own state
 * each time left every warm-up solve's vectors to the garbage collector, whose marking then ran
 * inside the timed solve (on 2 x 24^3 after 20 warm-up solves, 0.17 ms an iteration).
 */
export interface PcgWork {
  readonly o: AppOptions;
  /** The halo's distributed-graph communicator, freed by `freePcg`. */
  readonly graph: Communicator;
  readonly box: Box;
  readonly phases: Phases;
  readonly A: Operator;
  readonly n: number;
  readonly x: Float64Array;
  readonly r: Float64Array;
  readonly s: Float64Array;
  readonly t: Float64Array;
  readonly w: Float64Array;
  readonly diag: Float64Array;
  readonly linv: Float64Array;
  /** The search direction and the previous one (alg2 and overlap swap them each iteration), ghosted. */
  readonly p: Float64Array;
  readonly pPrev: Float64Array;
  readonly sdotp: InnerProduct;
  readonly gammaIp: InnerProduct;
  readonly iprodIp: InnerProduct;
  /** (b, b), and tol^2: the test is (r, r) / (b, b) < tol^2. */
  readonly biProd: number;
  readonly tol2: number;
  readonly history: number[];
  readonly log: (it: number, rel: number) => void;
}

/** The iterations a variant ran and the relative residual it stopped at. */
interface PcgEnd {
  it: number;
  rel: number;
}

/** Builds the solves' operator, vectors and inner products (b = ones). Collective: creates the halo's graph, one allreduce for (b, b). */
export function pcgSetup(world: Communicator, o: AppOptions, box: Box, phases: Phases, pacer: Pacer): PcgWork {
  const opts = collOptions(o);
  const n = box.rows;
  // The vectors and the halo's buffers in one heap, so that the WebAssembly kernels run from
  // the first iteration: 8 vectors, 2 ghosted ones, and the halo's send and receive blocks and
  // index lists (each at most the ghost layer, the lists half as large).
  const heap = new VectorHeap(8 * n + 2 * box.ghosted + 3 * (box.ghosted - n), box.n[2] + 2);
  const { halo, graph } = Halo.graph(world, box, haloOptions(o), heap);
  const b = heap.vector(n).fill(1);
  const bb = new Float64Array(1);
  world.allreduce(Float64Array.of(dot(b, b, n)), bb, 'sum', opts);
  const r = heap.vector(n);
  r.set(b); // r = b - A x0 with x0 = 0
  return {
    o, graph, box, phases, log: () => {}, n, r,
    A: new Operator(box, halo, pacer, phases),
    x: heap.vector(n),
    s: heap.vector(n),
    t: heap.vector(n),
    w: heap.vector(n),
    diag: heap.vector(n).fill(26),
    linv: heap.vector(n).fill(1 / Math.sqrt(26)),
    p: heap.vector(box.ghosted),
    pPrev: heap.vector(box.ghosted),
    sdotp: new InnerProduct(world, P.sdotp, phases, opts),
    gammaIp: new InnerProduct(world, P.gamma, phases, opts),
    iprodIp: new InnerProduct(world, P.iprod, phases, opts),
    biProd: bb[0]!,
    tol2: o.tol * o.tol,
    history: [],
  };
}

/** Frees what `pcgSetup` created (the halo's graph communicator). */
export function freePcg(k: PcgWork): void {
  k.graph.free();
}

/** `k` ready for a new solve from x0 = 0 (r = b = ones, no search direction yet), logging to `log`. */
function resetWork(k: PcgWork, log: (it: number, rel: number) => void): PcgWork {
  k.x.fill(0);
  k.r.fill(1);
  k.s.fill(0);
  k.t.fill(0);
  k.w.fill(0);
  k.p.fill(0);
  k.pPrev.fill(0);
  return { ...k, history: [], log };
}

/** Iteration `it`'s relative residual from ip = (r, r), recorded in the history and logged. */
function record(k: PcgWork, it: number, ip: number): number {
  const rel = Math.sqrt(ip / k.biProd);
  k.history.push(rel);
  k.log(it, rel);
  return rel;
}

/** `alg1` (seed 000, Figure 3): hypre's PCG, three blocking inner products each used at once. */
function runAlg1(k: PcgWork): PcgEnd {
  const { o, box, phases, A, n, x, r, s, w, diag, p, sdotp, gammaIp, iprodIp } = k;
  let rel = 1;
  let it = 0;
  let c = performance.now();
  divide(w, r, diag, n); // p = C^-1 r (DiagScale)
  xpbyIntoGhost(box, p, w, 0, p);
  c = phases.charge(P.precond, c);
  let gamma = gammaIp.now(dotGhost(box, r, p), c);
  c = performance.now();
  while (it < o.maxIter) {
    it++;
    c = A.apply(s, p, c);
    const sp = sdotp.now(dotGhost(box, s, p), c);
    c = performance.now();
    const alpha = gamma / sp;
    const gammaOld = gamma;
    axpyFromGhost(box, x, alpha, p);
    axpy(r, -alpha, s, n);
    c = phases.charge(P.axpy, c);
    divide(s, r, diag, n); // s = C^-1 r (DiagScale)
    c = phases.charge(P.precond, c);
    gamma = gammaIp.now(dot(r, s, n), c);
    c = performance.now();
    const ip = iprodIp.now(dot(r, r, n), c);
    rel = record(k, it, ip);
    c = performance.now();
    if (ip / k.biProd < k.tol2) break;
    xpbyIntoGhost(box, p, s, gamma / gammaOld, p);
    c = phases.charge(P.axpy, c);
  }
  return { it, rel };
}

/**
 * `alg2` (Figure 6) and, with `overlap`, Figure 7: the split-preconditioned form with the x
 * update delayed by one iteration; with `overlap` every inner product is an iallreduce waited
 * for after the independent DiagInvScale or X_Axpy.
 */
function runAlg2(k: PcgWork, overlap: boolean): PcgEnd {
  const { o, box, phases, A, n, x, r, s, t, w, linv, sdotp, gammaIp, iprodIp } = k;
  let rel = 1;
  let { p, pPrev } = k;
  let it = 0;
  let c = performance.now();
  scale(t, r, linv, n); // t = L^-1 r (DiagInvScale)
  c = phases.charge(P.precond, c);
  let gamma = 0;
  if (overlap) gammaIp.start(dot(t, t, n), c);
  else gamma = gammaIp.now(dot(t, t, n), c);
  c = performance.now();
  let gammaOld = 0;
  let alpha = 0;
  let beta = 0;
  let converged = false;
  while (it < o.maxIter) {
    it++;
    scale(w, t, linv, n); // w = L^-T t (DiagInvScale; L = L^T); overlaps the gamma reduction
    c = phases.charge(P.precond, c);
    if (overlap) {
      gamma = gammaIp.wait();
      beta = it === 1 ? 0 : gamma / gammaOld;
      c = performance.now();
    }
    xpbyIntoGhost(box, p, w, beta, pPrev); // P_Axpy
    c = phases.charge(P.axpy, c);
    c = A.apply(s, p, c);
    let sp: number;
    if (overlap) {
      sdotp.start(dotGhost(box, s, p), c);
      c = performance.now();
      axpyFromGhost(box, x, alpha, pPrev); // X_Axpy (delayed), overlaps sdotp
      c = phases.charge(P.axpy, c);
      sp = sdotp.wait();
    } else {
      sp = sdotp.now(dotGhost(box, s, p), c);
      c = performance.now();
      axpyFromGhost(box, x, alpha, pPrev); // X_Axpy (delayed)
      c = phases.charge(P.axpy, c);
    }
    c = performance.now();
    alpha = gamma / sp;
    axpy(r, -alpha, s, n); // R_Axpy
    c = phases.charge(P.axpy, c);
    let ip: number;
    if (overlap) {
      iprodIp.start(dot(r, r, n), c);
      c = performance.now();
      scale(t, r, linv, n); // t = L^-1 r, overlaps iprod
      c = phases.charge(P.precond, c);
      ip = iprodIp.wait();
      gammaOld = gamma;
      c = performance.now();
      gammaIp.start(dot(t, t, n), c);
    } else {
      ip = iprodIp.now(dot(r, r, n), c);
      c = performance.now();
      scale(t, r, linv, n);
      c = phases.charge(P.precond, c);
      gammaOld = gamma;
      gamma = gammaIp.now(dot(t, t, n), c);
      beta = gamma / gammaOld;
    }
    rel = record(k, it, ip);
    c = performance.now();
    if (ip / k.biProd < k.tol2) {
      converged = true;
      break;
    }
    const q = pPrev;
    pPrev = p;
    p = q;
  }
  if (gammaIp.pending) gammaIp.wait(); // the last gamma was started before the test
  c = performance.now();
  // The delayed update of the last iteration, along its direction: still `p` where the loop
  // broke out, already swapped into `pPrev` where it ran out of iterations.
  axpyFromGhost(box, x, alpha, converged ? p : pPrev);
  phases.charge(P.axpy, c);
  return { it, rel };
}

/**
 * Runs one variant; x0 = 0, b = ones. Collective over `world`. On `setup` (pcgSetup) where the
 * job solves more than once; without, the solve builds its own and frees it.
 */
export function solvePcg(world: Communicator, o: AppOptions, box: Box, phases: Phases, pacer: Pacer,
  log: (it: number, rel: number) => void, setup?: PcgWork): PcgSolve {
  const own = setup ?? pcgSetup(world, o, box, phases, pacer);
  const k = resetWork(own, log);
  world.barrier();
  phases.ms.fill(0);
  phases.commMs.fill(0);
  const start = performance.now();
  const { it, rel } = o.variant === 'alg1' ? runAlg1(k) : runAlg2(k, o.variant === 'overlap');
  const seconds = (performance.now() - start) / 1000;
  if (setup === undefined) freePcg(own);
  return { iterations: it, relResidual: rel, history: k.history, x: k.x, seconds };
}

/** The 27-point operator on the whole grid with bounds checks: the reference's own matvec. */
function referenceMatvec(N: readonly number[], y: Float64Array, p: Float64Array): void {
  const [N0, N1, N2] = N as [number, number, number];
  for (let i = 0; i < N0; i++) for (let j = 0; j < N1; j++) for (let k = 0; k < N2; k++) {
    let v = 26 * p[(i * N1 + j) * N2 + k]!;
    for (let a = -1; a <= 1; a++) for (let bb = -1; bb <= 1; bb++) for (let cc = -1; cc <= 1; cc++) {
      if (a === 0 && bb === 0 && cc === 0) continue;
      const ii = i + a, jj = j + bb, kk = k + cc;
      if (ii < 0 || jj < 0 || kk < 0 || ii >= N0 || jj >= N1 || kk >= N2) continue;
      v -= p[(ii * N1 + jj) * N2 + kk]!;
    }
    y[(i * N1 + j) * N2 + k] = v;
  }
}

/**
 * The sequential reference: textbook Jacobi-preconditioned CG on the global grid (x0 = 0,
 * b = ones, same stopping test), sharing no code with the distributed solver.
 */
export function referencePcg(N: readonly number[], tol: number, maxIter: number): { x: Float64Array; iterations: number } {
  const n = N[0]! * N[1]! * N[2]!;
  const x = new Float64Array(n);
  const r = new Float64Array(n).fill(1);
  const z = new Float64Array(n);
  const p = new Float64Array(n);
  const q = new Float64Array(n);
  const bnorm2 = n;
  for (let i = 0; i < n; i++) { z[i] = r[i]! / 26; p[i] = z[i]!; }
  let rz = 0;
  for (let i = 0; i < n; i++) rz += r[i]! * z[i]!;
  let it = 0;
  while (it < maxIter) {
    it++;
    referenceMatvec(N, q, p);
    let pq = 0;
    for (let i = 0; i < n; i++) pq += p[i]! * q[i]!;
    const alpha = rz / pq;
    let rr = 0;
    for (let i = 0; i < n; i++) { x[i]! += alpha * p[i]!; r[i]! -= alpha * q[i]!; rr += r[i]! * r[i]!; }
    if (rr / bnorm2 < tol * tol) break;
    let rzNew = 0;
    for (let i = 0; i < n; i++) { z[i] = r[i]! / 26; rzNew += r[i]! * z[i]!; }
    const beta = rzNew / rz;
    rz = rzNew;
    for (let i = 0; i < n; i++) p[i] = z[i]! + beta * p[i]!;
  }
  return { x, iterations: it };
}

/** Gathers every rank's x into the global grid on rank 0 (null elsewhere). Collective. */
export function gatherSolution(world: Communicator, box: Box, x: Float64Array): Float64Array | null {
  const counts = new Float64Array(world.size);
  world.allgather(Float64Array.of(box.rows), counts);
  const displs: number[] = [];
  let total = 0;
  for (const c of counts) { displs.push(total); total += c; }
  const all = world.rank === 0 ? new Float64Array(total) : new Float64Array(0);
  world.gatherv(x, world.rank === 0 ? all : null, Array.from(counts), displs, 0);
  if (world.rank !== 0) return null;
  const [N0, N1, N2] = box.global;
  const out = new Float64Array(N0 * N1 * N2);
  for (let r = 0; r < world.size; r++) {
    const rb = makeBox(box.global, box.dims, coordsOf(box.dims, r));
    let at = displs[r]!;
    for (let i = 0; i < rb.n[0]; i++) for (let j = 0; j < rb.n[1]; j++) for (let k = 0; k < rb.n[2]; k++) {
      out[((rb.start[0] + i) * N1 + rb.start[1] + j) * N2 + rb.start[2] + k] = all[at++]!;
    }
  }
  return out;
}

/** Row-major coordinates of `rank` on `dims` (cartCreate's order). */
export function coordsOf(dims: readonly number[], rank: number): number[] {
  return [Math.floor(rank / (dims[1]! * dims[2]!)), Math.floor(rank / dims[2]!) % dims[1]!, rank % dims[2]!];
}

/** Relative 2-norm difference ||a - b|| / ||b||. */
export function relDiff(a: Float64Array, b: Float64Array): number {
  let d = 0;
  let nb = 0;
  for (let i = 0; i < b.length; i++) { d += (a[i]! - b[i]!) ** 2; nb += b[i]! ** 2; }
  return Math.sqrt(d / nb);
}

/** The process grid and this rank's box for `o` on `world`. */
export function layout(world: Communicator, o: AppOptions): Box {
  const dims = dimsCreate(world.size, 3);
  const global = o.global ?? [o.n * dims[0]!, o.n * dims[1]!, o.n * dims[2]!];
  for (let k = 0; k < 3; k++) {
    if (global[k]! < dims[k]!) throw new Error(`Cannot run on ${world.size} ranks: global grid ${global.join('x')} has fewer points than the process grid ${dims.join('x')} in dimension ${k}; expected at least one point per rank`);
  }
  return makeBox(global, dims, coordsOf(dims, world.rank));
}

/** Matvec memory traffic per rank in GB/s (matrix-free: read p, write s; 16 B per row). */
export function matvecGBs(rows: number, iterations: number, matvecSeconds: number): number {
  return matvecSeconds > 0 ? (16 * rows * iterations) / matvecSeconds / 1e9 : 0;
}

export default async function pcg(world: Communicator, args: string[]): Promise<AppResult | null> {
  const o = parseAppArgs('pcg', args);
  const box = layout(world, o);
  const ctx = solveContext(world, o);
  const { noise, phases, pacer } = ctx;
  const where = placement(world);
  const setup = pcgSetup(world, o, box, phases, pacer);
  warmUp(ctx, o, (log) => solvePcg(world, o, box, phases, pacer, log, setup));
  const res = solvePcg(world, o, box, phases, pacer, ctx.progress, setup);
  freePcg(setup);
  const summary = phaseSummary(world, phases);
  const secs = new Float64Array(1);
  world.allreduce(Float64Array.of(res.seconds), secs, 'max');
  const stolen = new Float64Array(1);
  world.allreduce(Float64Array.of(noise?.stolenMs ?? 0), stolen, 'sum');
  const unknowns = box.global[0] * box.global[1] * box.global[2];
  const verify = o.verify === 'on' || (o.verify === 'auto' && unknowns <= VERIFY_AUTO_MAX);
  const xg = verify ? gatherSolution(world, box, res.x) : null;
  if (world.rank !== 0) return null;
  let verification: Verification | null = null;
  if (xg !== null) {
    const ref = referencePcg(box.global, o.tol, o.maxIter);
    const diff = relDiff(xg, ref.x);
    const ok = diff <= 1e-6 && Math.abs(ref.iterations - res.iterations) <= 1;
    verification = {
      kind: 'sequential reference PCG', ok, value: diff, bound: 1e-6,
      detail: `||x - x_ref|| / ||x_ref|| = ${diff.toExponential(2)} (bound 1e-6), iterations ${res.iterations} vs reference ${ref.iterations} (bound +-1)`,
    };
  }
  const result: AppResult = {
    app: 'pcg', variant: o.variant, mode: o.variant === 'overlap' ? 'nonblocking' : 'blocking', executor: o.executor,
    algorithm: o.algorithm ?? null, ranks: world.size, ppn: where.ppn, nodes: where.nodes, link: o.link, noise: o.noiseText,
    global: [...box.global], local: [...box.n], processGrid: [...box.dims], unknowns,
    iterations: res.iterations, finalRelResidual: res.relResidual, solveSeconds: secs[0]!, warmupSolves: o.warmup,
    perIterationMs: (secs[0]! * 1000) / res.iterations, phases: summary,
    matvecGBs: matvecGBs(box.rows, res.iterations, summary.matvec!.seconds), testCalls: pacer.tests,
    noiseStolenSeconds: stolen[0]! / world.size / 1000, verification,
    ...(verify ? {} : { verificationSkipped: o.verify === 'off' ? '--verify off'
      : `${unknowns} unknowns: --verify auto compares with the sequential reference up to ${VERIFY_AUTO_MAX}; --verify on compares anyway` }),
    residualHistory: res.history,
    machine: { node: process.version, date: new Date().toISOString() },
  };
  await report(o, result);
  if (verification !== null && !verification.ok) throw new Error(`verification failed: ${verification.detail}`);
  return result;
}
