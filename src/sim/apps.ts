/**
 * The proof applications on the model: `nbc sim pcg` and `nbc sim cg` run what `nbc pcg` (seed
 * 000's PCG variants) and `nbc cg` (seed 001's CG) run, iteration by iteration, on a LogGOPS
 * machine at any scale: the library's own halo and inner-product schedules (the same selection
 * and builders as the launched jobs, program.ts) between compute phases priced per row.
 *
 * Every rank keeps its own clock. A compute phase moves it by the phase's rows times the
 * kernel's cost per row (AppCompute), stretched by the rank's skew draw for that phase and
 * waited through OS noise (the engine's bursts, same phases); a collective runs its whole
 * program on the engine with each rank starting at its own clock (RunOptions.startAt) and
 * hands back each rank's completion. What runs behind a non-blocking collective (the interior
 * rows behind the halo, DiagInvScale or X_Axpy behind an inner product) is the engine's compute
 * (RunOptions.computeUs), with test() calls where the app makes them (RunOptions.testEveryUs).
 * So skew, noise and the wait for the slowest rank carry from one phase into the next, as they
 * do in the solver.
 *
 * Iterations: given (--iterations), else from the law nbc pcg's own counts follow on this
 * machine (AppCompute.iterations): the count to a relative residual of 1e-8 grows as
 * sqrt(NX^2 + NY^2 + NZ^2) of the global grid.
 *
 * Core code: no node:* imports.
 */
import { dimsCreate } from '../comm/topology.js';
import { NbcArgError } from '../errors.js';
import { makeBox, rankAt, type Box } from '../apps/grid.js';
import { ALGORITHMS } from '../coll/select.js';
import { shape } from '../coll/shape.js';
import type { Schedule } from '../sched/schedule.js';
import { noisePhases, noisyEnd, runProgram, splitmix32, type SimNoise } from './engine.js';
import { buildProgram, programOf, type Program, type SimExecutor } from './program.js';
import type { SimParams } from './params.js';

/** What the applications' kernels cost, per row of the local grid (us), and where the figures come from. */
export interface AppCompute {
  source: string;
  /** nbc pcg's 27-point matvec. */
  matvec27RowUs: number;
  /** nbc cg's 7-point matvec. */
  matvec7RowUs: number;
  /** The local part of one inner product. */
  dotRowUs: number;
  /** One vector update (axpy, xpby). */
  axpyRowUs: number;
  /** Diagonal scaling by multiplication (alg2's DiagInvScale). */
  scaleRowUs: number;
  /** Diagonal scaling by division (alg1's DiagScale). */
  divideRowUs: number;
  /** Packing or unpacking one halo element. */
  packUs: number;
  /**
   * Process skew: in each compute phase every rank takes up to this fraction longer, drawn
   * uniformly per rank and phase (0: all ranks alike).
   */
  spread: number;
  /** Iterations to tol 1e-8 per unit of sqrt(NX^2 + NY^2 + NZ^2): PCG (27-point, diagonal scaling) and CG (7-point). */
  iterations: { pcg: number; cg: number };
}

export type SimApp = 'pcg' | 'cg';
export const SIM_APPS: readonly SimApp[] = ['pcg', 'cg'];
export const APP_VARIANTS: Record<SimApp, readonly string[]> = { pcg: ['alg1', 'alg2', 'overlap'], cg: ['cg'] };

export interface AppSpec {
  app: SimApp;
  ranks: number;
  ppn: number;
  /** Local points per dimension per rank (ignored with `global`). */
  n: number;
  global: [number, number, number] | null;
  variant: string;
  /** cg: the halo blocking, or behind the interior rows. */
  mode: 'blocking' | 'nonblocking';
  /** Who runs the inner products and the halo (host or offload; agg runs the inner products on the fabric, the halo on the host). */
  executor: SimExecutor;
  algorithm?: string;
  /** Interior rows between test() calls on the halo (host, non-blocking); 0: none. */
  testInterval: number;
  /** Iterations to run; null: from the law (AppCompute.iterations). */
  iterations: number | null;
  noise: SimNoise | null;
  seed: number;
}

/** One phase of seed 000's Table I: seconds on average over ranks, and of them blocked in communication. */
export interface SimPhase {
  seconds: number;
  commSeconds: number;
}

export interface AppResult {
  app: SimApp;
  variant: string;
  mode: 'blocking' | 'nonblocking';
  executor: string;
  algorithm: string;
  ranks: number;
  ppn: number;
  global: number[];
  local: number[];
  processGrid: number[];
  iterations: number;
  /** Where the iteration count comes from. */
  iterationsFrom: string;
  solveSeconds: number;
  perIterationMs: number;
  phases: Record<string, SimPhase>;
  /** The compute model's source, and the network's. */
  compute: string;
  params: string;
  events: number;
  wallSeconds: number;
}

export const PHASES = ['matvec', 'halo', 'sdotp', 'gamma', 'iprod', 'precond', 'axpy'] as const;
type Phase = (typeof PHASES)[number];

/** The iterations the law gives for a global grid (AppCompute.iterations). */
export function iterationsFor(app: SimApp, global: readonly number[], compute: AppCompute): number {
  const diag = Math.sqrt(global.reduce((a, n) => a + n * n, 0));
  return Math.max(1, Math.round(compute.iterations[app] * diag));
}

/** The process grid and every rank's box, as the apps lay them out (dimsCreate, row-major). */
function boxes(spec: AppSpec): Box[] {
  const dims = dimsCreate(spec.ranks, 3);
  const global = spec.global ?? [spec.n * dims[0]!, spec.n * dims[1]!, spec.n * dims[2]!];
  for (let k = 0; k < 3; k++) {
    if (global[k]! < dims[k]!) {
      throw new NbcArgError(`Cannot simulate ${spec.app} on ${spec.ranks} ranks: global grid ${global.join('x')} has fewer points than the process grid ${dims.join('x')} in dimension ${k}; expected at least one point per rank`);
    }
  }
  const out: Box[] = [];
  for (let r = 0; r < spec.ranks; r++) {
    out.push(makeBox(global, dims, [Math.floor(r / (dims[1]! * dims[2]!)), Math.floor(r / dims[2]!) % dims[1]!, r % dims[2]!]));
  }
  return out;
}

/**
 * Every rank's halo schedule: the library's neighbour alltoallv (coll/neighbor.ts) over the 26
 * neighbours of the 27-point stencil (pcg) or the 6 faces (cg), each block as many doubles as
 * the shared face, edge or corner holds.
 */
function haloSchedules(spec: AppSpec, bx: Box[]): { schedules: Schedule[]; elements: Float64Array } {
  const build = ALGORITHMS.neighborAlltoallv.direct!.build;
  const faces = spec.app === 'cg';
  const schedules: Schedule[] = [];
  const elements = new Float64Array(spec.ranks);
  for (let r = 0; r < spec.ranks; r++) {
    const b = bx[r]!;
    const nbrs: number[] = [];
    const counts: number[] = [];
    for (let d0 = -1; d0 <= 1; d0++) {
      for (let d1 = -1; d1 <= 1; d1++) {
        for (let d2 = -1; d2 <= 1; d2++) {
          const d = [d0, d1, d2];
          const zeros = d.filter((x) => x === 0).length;
          if (zeros === 3 || (faces && zeros !== 2)) continue;
          const nb = rankAt(b.dims, [b.coords[0] + d0, b.coords[1] + d1, b.coords[2] + d2]);
          if (nb < 0) continue;
          let els = 1;
          for (let k = 0; k < 3; k++) if (d[k] === 0) els *= b.n[k]!;
          nbrs.push(nb);
          counts.push(els * 8);
        }
      }
    }
    const displs: number[] = [];
    let at = 0;
    for (const c of counts) { displs.push(at); at += c; }
    elements[r] = at / 8;
    const c32 = Int32Array.from(counts);
    const d32 = Int32Array.from(displs);
    const tags = new Int32Array(nbrs.length);
    schedules.push(build({
      ...shape({ rank: r, size: spec.ranks, bytes: at }),
      sources: nbrs, destinations: nbrs, recvTags: tags, sendTags: tags,
      counts: c32, displs: d32, rcounts: c32, rdispls: d32,
    } as unknown as Parameters<typeof build>[0]));
  }
  return { schedules, elements };
}

/** Rows of a box's interior (the matvec rows that need no ghost) and of its shell. */
function interiorRows(b: Box): number {
  let rows = 1;
  for (let k = 0; k < 3; k++) {
    const lo = b.coords[k]! > 0 ? 1 : 0;
    const hi = b.coords[k]! < b.dims[k]! - 1 ? 1 : 0;
    rows *= Math.max(0, b.n[k]! - lo - hi);
  }
  return rows;
}

/**
 * Simulates a solve. Per iteration the operations of `nbc pcg` (runAlg1 / runAlg2 in
 * apps/pcg.ts) or `nbc cg` (apps/cg.ts), in their order, on every rank's clock.
 */
export function simulateApp(spec: AppSpec, params: SimParams, compute: AppCompute): AppResult {
  if (!APP_VARIANTS[spec.app].includes(spec.variant)) {
    throw new NbcArgError(`Cannot simulate ${spec.app} --variant ${spec.variant}: expected one of ${APP_VARIANTS[spec.app].join(', ')}`);
  }
  if (spec.executor === 'hier') throw new NbcArgError(`Cannot simulate ${spec.app} on executor 'hier': the apps take host, offload or agg (--algorithm hier picks the hierarchical allreduce)`);
  const wall0 = performance.now();
  const N = spec.ranks;
  const bx = boxes(spec);
  const b0 = bx[0]!;
  const iterations = spec.iterations ?? iterationsFor(spec.app, b0.global, compute);
  const iterationsFrom = spec.iterations !== null ? 'given (--iterations)' : `the law ${compute.iterations[spec.app]} x sqrt(NX^2 + NY^2 + NZ^2) (${compute.source})`;

  // The programs: the halo (host; offload where the executor is), and the 8-byte allreduce of
  // the inner products (the library's selection for the executor and layout).
  const halo = haloSchedules(spec, bx);
  const haloProg: Program = programOf(halo.schedules, spec.ppn, 'neighborAlltoallv');
  const nonblocking = spec.app === 'pcg' && spec.variant === 'overlap'; // its inner products are iallreduces
  const arProg = buildProgram({ coll: 'allreduce', ranks: N, ppn: spec.ppn, bytes: 8, executor: spec.executor, algorithm: spec.algorithm, inputs: 'fresh', nonblocking }, params);

  const noise = spec.noise !== null && spec.noise.durationUs > 0 ? spec.noise : null;
  const phase = noise === null ? null : noisePhases(N, noise.periodUs, spec.seed);
  const skew = splitmix32(spec.seed ^ 0x5bd1e995);
  const clock = new Float64Array(N);
  const ms: Record<Phase, Float64Array> = Object.fromEntries(PHASES.map((p) => [p, new Float64Array(N)])) as Record<Phase, Float64Array>;
  const comm: Record<Phase, Float64Array> = Object.fromEntries(PHASES.map((p) => [p, new Float64Array(N)])) as Record<Phase, Float64Array>;
  let events = 0;
  const work = new Float64Array(N);

  /** Each rank's time for `perRowUs` over its rows times `rowsOf(r)`, with its skew draw. */
  const draw = (perRowUs: number, rowsOf: (r: number) => number): Float64Array => {
    for (let r = 0; r < N; r++) work[r] = perRowUs * rowsOf(r) * (1 + compute.spread * skew());
    return work;
  };
  const rows = (r: number): number => bx[r]!.rows;
  /** A compute phase on every rank's clock (through its noise). */
  const computePhase = (p: Phase, w: Float64Array): void => {
    for (let r = 0; r < N; r++) {
      const end = phase === null ? clock[r]! + w[r]! : noisyEnd(clock[r]!, w[r]!, phase[r]!, noise!.durationUs, noise!.periodUs);
      ms[p][r]! += end - clock[r]!;
      clock[r] = end;
    }
  };
  const run = (prog: Program, computeUs: Float64Array | null, testEveryUs: number | null): Float64Array => {
    const res = runProgram(prog, params, { startAt: clock, computeUs, noise, seed: spec.seed, testEveryUs });
    events += res.events;
    return res.done;
  };
  /** A blocking allreduce of the phase's local value (its dot already computed). */
  const allreduce = (p: Phase): void => {
    const done = run(arProg, null, null);
    for (let r = 0; r < N; r++) {
      ms[p][r]! += done[r]! - clock[r]!;
      comm[p][r]! += done[r]! - clock[r]!;
      clock[r] = done[r]!;
    }
  };
  /** An iallreduce started now, with `w` of compute (charged to `wp`) behind it, then waited for. */
  const iallreduce = (p: Phase, w: Float64Array, wp: Phase): void => {
    const computeUs = Float64Array.from(w);
    const done = run(arProg, computeUs, null);
    for (let r = 0; r < N; r++) {
      const computed = clock[r]! + computeUs[r]!;
      const wait = Math.max(0, done[r]! - computed);
      ms[wp][r]! += computeUs[r]!;
      ms[p][r]! += wait;
      comm[p][r]! += wait;
      clock[r] = done[r]!;
    }
  };
  const matvecRow = spec.app === 'pcg' ? compute.matvec27RowUs : compute.matvec7RowUs;
  /** s = A p: pack, the halo behind the interior rows (blocking for cg --mode blocking), unpack, the shell. */
  const matvec = (): void => {
    computePhase('matvec', draw(compute.packUs, (r) => halo.elements[r]!));
    if (spec.app === 'cg' && spec.mode === 'blocking') {
      const done = run(haloProg, null, null);
      for (let r = 0; r < N; r++) {
        ms.halo[r]! += done[r]! - clock[r]!;
        comm.halo[r]! += done[r]! - clock[r]!;
        clock[r] = done[r]!;
      }
      computePhase('matvec', draw(matvecRow, rows));
    } else {
      const inner = Float64Array.from(draw(matvecRow, (r) => interiorRows(bx[r]!)));
      const every = spec.testInterval > 0 && spec.executor === 'host' ? spec.testInterval * matvecRow : null;
      const done = run(haloProg, inner, every);
      for (let r = 0; r < N; r++) {
        const computed = clock[r]! + inner[r]!;
        const wait = Math.max(0, done[r]! - computed);
        ms.matvec[r]! += done[r]! - clock[r]! - wait;
        ms.halo[r]! += wait;
        comm.halo[r]! += wait;
        clock[r] = done[r]!;
      }
      computePhase('matvec', draw(matvecRow, (r) => bx[r]!.rows - interiorRows(bx[r]!)));
    }
    computePhase('matvec', draw(compute.packUs, (r) => halo.elements[r]!));
  };
  const dot = (p: Phase): void => computePhase(p, draw(compute.dotRowUs, rows));
  const axpy = (k: number): void => computePhase('axpy', draw(compute.axpyRowUs * k, rows));

  const variant = spec.app === 'cg' ? 'cg' : spec.variant;
  for (let it = 0; it < iterations; it++) {
    if (variant === 'cg') {
      matvec();
      dot('sdotp'); allreduce('sdotp');
      axpy(2);
      dot('iprod'); allreduce('iprod');
      axpy(1);
    } else if (variant === 'alg1') {
      matvec();
      dot('sdotp'); allreduce('sdotp');
      axpy(2);
      computePhase('precond', draw(compute.divideRowUs, rows));
      dot('gamma'); allreduce('gamma');
      dot('iprod'); allreduce('iprod');
      axpy(1);
    } else if (variant === 'alg2') {
      computePhase('precond', draw(compute.scaleRowUs, rows));
      axpy(1);
      matvec();
      dot('sdotp'); allreduce('sdotp');
      axpy(2);
      dot('iprod'); allreduce('iprod');
      computePhase('precond', draw(compute.scaleRowUs, rows));
      dot('gamma'); allreduce('gamma');
    } else {
      // Overlap-PCG (Figure 7): gamma was started last iteration; DiagInvScale runs behind it.
      if (it === 0) dot('gamma');
      iallreduce('gamma', draw(compute.scaleRowUs, rows), 'precond');
      axpy(1);
      matvec();
      dot('sdotp');
      iallreduce('sdotp', draw(compute.axpyRowUs, rows), 'axpy');
      axpy(1);
      dot('iprod');
      iallreduce('iprod', draw(compute.scaleRowUs, rows), 'precond');
      dot('gamma');
    }
  }
  let end = 0;
  for (let r = 0; r < N; r++) end = Math.max(end, clock[r]!);
  const avg = (a: Float64Array): number => a.reduce((x, y) => x + y, 0) / N / 1e6;
  const phases: Record<string, SimPhase> = {};
  for (const p of PHASES) phases[p] = { seconds: avg(ms[p]), commSeconds: avg(comm[p]) };
  return {
    app: spec.app, variant, mode: spec.app === 'pcg' ? (variant === 'overlap' ? 'nonblocking' : 'blocking') : spec.mode,
    executor: spec.executor, algorithm: arProg.algorithm, ranks: N, ppn: spec.ppn,
    global: [...b0.global], local: [...b0.n], processGrid: [...b0.dims],
    iterations, iterationsFrom, solveSeconds: end / 1e6, perIterationMs: end / 1e3 / iterations, phases,
    compute: compute.source, params: params.source, events, wallSeconds: (performance.now() - wall0) / 1000,
  };
}
