/**
 * The proof applications' verification matrix on one job: every PCG variant (seed 000
 * Figures 3, 6, 7) with the host and offload executors, checked on rank 0 against the
 * sequential reference solve, and the CG (seed 001) with blocking and overlapped halos on
 * both executors, checked against its manufactured exact solution. Imports the built solvers
 * (dist/), the same module instance as 'nbcoll'.
 *
 * args: NX,NY,NZ (the global grid) [executors, comma-separated; default host,offload]
 */
import { dimsCreate, type Communicator } from 'nbcoll';
import { solveCg, laplacianCondition } from '../../dist/apps/cg.js';
import { gatherSolution, layout, referencePcg, relDiff, solvePcg } from '../../dist/apps/pcg.js';
import { makeBox } from '../../dist/apps/grid.js';
import { Pacer, parseAppArgs, Phases } from '../../dist/apps/run.js';

export interface PcgRun { variant: string; executor: string; iterations: number; diff: number; refIterations: number; history: number[] }
export interface CgRun { mode: string; executor: string; iterations: number; error: number; bound: number }

export default function main(w: Communicator, args: string[]): { pcg: PcgRun[]; cg: CgRun[] } | null {
  const global = args[0]!;
  const pcg: PcgRun[] = [];
  const cg: CgRun[] = [];
  let ref: { x: Float64Array; iterations: number } | null = null;
  for (const executor of (args[1] ?? 'host,offload').split(',')) {
    for (const variant of ['alg1', 'alg2', 'overlap']) {
      const o = parseAppArgs('pcg', ['--global', global, '--variant', variant, '--executor', executor, '--tol', '1e-9']);
      const box = layout(w, o);
      const res = solvePcg(w, o, box, new Phases(null), new Pacer(0, null), () => undefined);
      const x = gatherSolution(w, box, res.x);
      if (w.rank === 0) {
        ref ??= referencePcg(box.global, o.tol, o.maxIter);
        pcg.push({ variant, executor, iterations: res.iterations, diff: relDiff(x!, ref.x), refIterations: ref.iterations, history: res.history });
      }
    }
    for (const mode of ['blocking', 'nonblocking']) {
      const o = parseAppArgs('cg', ['--global', global, '--mode', mode, '--executor', executor, '--test-interval', mode === 'nonblocking' ? '7' : '0']);
      const dims = dimsCreate(w.size, 3);
      const cart = w.cartCreate(dims, [false, false, false])!;
      const box = makeBox(o.global!, dims, cart.coords());
      const res = solveCg(cart, o, box, new Phases(null), new Pacer(o.testInterval, null), () => undefined);
      const sums = new Float64Array(2);
      w.allreduce(Float64Array.of(res.err2, res.u2), sums, 'sum');
      const bound = 10 * laplacianCondition(box.global) * res.relResidual;
      if (w.rank === 0) cg.push({ mode, executor, iterations: res.iterations, error: Math.sqrt(sums[0]! / sums[1]!), bound });
      cart.free();
    }
  }
  return w.rank === 0 ? { pcg, cg } : null;
}

