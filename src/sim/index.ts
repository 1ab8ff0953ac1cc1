/**
 * The simulator's front door: simulate one collective call per message size on a LogGOPS
 * model and report it as nbcbench rows (bench/result.ts), with the same overlap arithmetic
 * (bench/metrics.ts) for non-blocking calls with compute.
 *
 *     const rows = simulate({ coll: 'allreduce', ranks: 1e5, ppn: 1, executor: 'host' }, [8, 1024], params);
 */
import { overlapPct } from '../bench/metrics.js';
import type { BenchRow } from '../bench/result.js';
import { runProgram, type SimNoise } from './engine.js';
import { buildProgram, type CallSpec } from './program.js';
import type { SimParams } from './params.js';

export { runProgram, type RunResult, type SimNoise } from './engine.js';
export { buildProgram, programOf, benchBytes, SIM_COLLS, SIM_EXECUTORS, type CallSpec, type Program, type SimExecutor } from './program.js';
export { toGoal } from './goal.js';
export { DEFAULT_SIM_PARAMS, PRESETS, parseSimParams, parseSimParamsFile, type SimParams, type LogGOPS, type AggParams } from './params.js';

/** nbcbench's row plus what the simulator adds. */
export interface SimRow extends BenchRow {
  /** The algorithm selection chose (or the one forced). */
  algorithm: string;
  /** Events processed (all runs of this size) and the wall time they took. */
  events: number;
  wallSeconds: number;
}

export interface SimulateOptions {
  /** Non-blocking calls: also run with a compute phase as long as the pure latency (nbcbench's method). */
  compute?: boolean;
  noise?: SimNoise | null;
  seed?: number;
}

/** Simulates `spec` at every size; one row per size, in the given order. */
export function simulate(spec: Omit<CallSpec, 'bytes'>, sizes: readonly number[], params: SimParams, opts: SimulateOptions = {}): SimRow[] {
  const rows: SimRow[] = [];
  for (const bytes of sizes) {
    const t0 = performance.now();
    const prog = buildProgram({ ...spec, bytes }, params);
    const pure = runProgram(prog, params, { noise: opts.noise ?? null, seed: opts.seed });
    let events = pure.events;
    const row: SimRow = { bytes: prog.bytes, latencyUs: pure.latencyUs, algorithm: prog.algorithm, events, wallSeconds: 0 };
    if (opts.compute === true) {
      // nbcbench: compute as long as the pure latency between start and wait; per field the
      // maximum over ranks. No test() calls: the host executor progresses only in wait().
      const c = runProgram(prog, params, { noise: opts.noise ?? null, seed: opts.seed, computeUs: pure.latencyUs });
      events += c.events;
      let init = 0;
      let compute = 0;
      let wait = 0;
      let overall = 0;
      for (let r = 0; r < prog.ranks; r++) {
        init = Math.max(init, c.initEnd[r]!);
        compute = Math.max(compute, c.computeEnd[r]! - c.initEnd[r]!);
        wait = Math.max(wait, c.done[r]! - c.computeEnd[r]!);
        overall = Math.max(overall, c.done[r]!);
      }
      Object.assign(row, {
        pureUs: pure.latencyUs, initUs: init, testUs: 0, waitUs: wait, overheadUs: init + wait,
        overallUs: overall, computeUs: compute, overlapPct: overlapPct(overall, compute, pure.latencyUs), events,
      });
    }
    row.wallSeconds = (performance.now() - t0) / 1000;
    rows.push(row);
  }
  return rows;
}
