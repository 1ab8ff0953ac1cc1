/**
 * The simulator's front door: simulate one collective call per message size on a LogGOPS
 * model and report it as nbcbench rows (bench/result.ts), with the same overlap arithmetic
 * (bench/metrics.ts) for non-blocking calls with compute.
 *
 *     const rows = simulate({ coll: 'allreduce', ranks: 1e5, ppn: 1, executor: 'host' }, [8, 1024], params);
 */
import { overlapPct, statOf } from '../bench/metrics.js';
import type { BenchRow } from '../bench/result.js';
import { DEFAULT_CONFIG } from '../config.js';
import { runProgram, splitmix32, type SimNoise } from './engine.js';
import { buildProgram, type CallSpec, type Program } from './program.js';
import type { SimParams } from './params.js';

export { runProgram, type RunResult, type SimNoise } from './engine.js';
export { buildProgram, programOf, benchBytes, SIM_COLLS, SIM_EXECUTORS, type CallSpec, type Program, type SimExecutor } from './program.js';
export { toGoal } from './goal.js';
export { DEFAULT_SIM_PARAMS, PRESETS, crowdedParams, parseSimParams, parseSimParamsFile, type SimParams, type LogGOPS, type AggParams, type Crowd } from './params.js';

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
  /**
   * nbcbench's rule: every rank makes the call as it leaves a barrier (the host executor's, as
   * the benchmark runs it), and the latency is the slowest rank's own time from its call to
   * its completion. Default: every rank calls at 0, and the latency is the last completion.
   */
  afterBarrier?: boolean;
  /**
   * With afterBarrier: draw every message's flight from its path's measured jitter (LogGOPS.J)
   * where the parameters carry it. Default true.
   */
  jitter?: boolean;
}

/**
 * Runs per size where nbcbench's statistic is a median over calls that differ (a measured
 * barrier spread, jitter): one per ordering of the ranks' exits and draw of the messages'
 * flights, the median of their slowest ranks taken.
 */
const RUNS = 31;

/**
 * Where the parameters carry a measured barrier spread (params.barrierSpreadUs) and the layout
 * spans nodes or crowds its host (crowdedParams() gives a one-node layout its own): the ranks
 * leave the barrier evenly spread over it (on top of loopExits), in an order drawn per run
 * from the seed.
 */
function spreadExits(ranks: number, spreadUs: number, seed: number): Float64Array {
  const order = Int32Array.from({ length: ranks }, (_, i) => i);
  const next = splitmix32(seed);
  for (let i = ranks - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  const at = new Float64Array(ranks);
  for (let i = 0; i < ranks; i++) at[order[i]!] = ranks === 1 ? 0 : (spreadUs * i) / (ranks - 1);
  return at;
}

/** Rounds of nbcbench's loop (a barrier, then the call) simulated up to the measured call. */
const LOOP_ROUNDS = 3;

/** The ranks' times (the first `ranks` procs) from the earliest. */
function fromFirst(t: Float64Array, ranks: number): Float64Array {
  const at = t.slice(0, ranks);
  let first = Infinity;
  for (let r = 0; r < ranks; r++) first = Math.min(first, at[r]!);
  for (let r = 0; r < ranks; r++) at[r]! -= first;
  return at;
}

/**
 * When each rank leaves the barrier before the measured call (afterBarrier), from the first
 * to leave. In nbcbench's loop each rank enters the barrier as its previous call ends, so a
 * call that lets some ranks go early (a bcast's root, a gather's leaves) has them leave the
 * next barrier early too, and they then wait that much longer inside the call (how much
 * depends on the path: with L 5 and o 1, a bcast's receiver on another node waits 12.07 us
 * instead of 7.07, test/sim.test.ts). LOOP_ROUNDS rounds of barrier and call settle that.
 */
function loopExits(barrier: Program, prog: Program, params: SimParams, opts: SimulateOptions, jitterSeeds: (() => number) | null): Float64Array {
  const run = (p: Program, startAt: Float64Array | null): Float64Array =>
    runProgram(p, params, { noise: opts.noise ?? null, seed: opts.seed, startAt, jitterSeed: jitterSeeds === null ? null : jitterSeeds() }).done;
  let exits = fromFirst(run(barrier, null), prog.ranks);
  for (let k = 1; k < LOOP_ROUNDS; k++) exits = fromFirst(run(barrier, fromFirst(run(prog, exits), prog.ranks)), prog.ranks);
  return exits;
}

/**
 * How far apart (us, first to last) `ranks` ranks, `ppn` per node, leave the last of LOOP_ROUNDS
 * barriers run back to back, each rank entering the next as it left the last, under `params`
 * (no barrier spread is added, no jitter drawn), on a host where they are crowded (oversubscribed):
 * the spread the model makes itself, which the calibration takes from the measured one.
 */
export function barrierLoopSpread(ranks: number, ppn: number, params: SimParams): number {
  const barrier = buildProgram({ coll: 'barrier', ranks, ppn, executor: 'host', bytes: 0, config: { ...DEFAULT_CONFIG, oversubscribed: true } }, params);
  const exits = loopExits(barrier, barrier, params, {}, null);
  let last = 0;
  for (let r = 0; r < ranks; r++) last = Math.max(last, exits[r]!);
  return last;
}

/** The slowest rank's time from its start to `end` (nbcbench's per-call maximum over ranks). */
function slowest(end: Float64Array, startAt: Float64Array | null): number {
  let m = 0;
  for (let r = 0; r < end.length; r++) m = Math.max(m, end[r]! - (startAt === null ? 0 : startAt[r]!));
  return m;
}

/** Simulates `spec` at every size; one row per size, in the given order. */
export function simulate(spec: Omit<CallSpec, 'bytes'>, sizes: readonly number[], params: SimParams, opts: SimulateOptions = {}): SimRow[] {
  const rows: SimRow[] = [];
  const barrier = opts.afterBarrier === true
    ? buildProgram({ coll: 'barrier', ranks: spec.ranks, ppn: spec.ppn, executor: 'host', bytes: 0, ...(spec.config ? { config: spec.config } : {}) }, params)
    : null;
  const spansNodes = spec.ranks > spec.ppn;
  const crowded = params.hostCores !== undefined && params.hostCores < spec.ranks;
  const spread = opts.afterBarrier === true && (spansNodes || crowded) ? params.barrierSpreadUs ?? 0 : 0;
  const jittered = opts.afterBarrier === true && opts.jitter !== false && (params.net.J !== undefined || params.shm.J !== undefined);
  for (const bytes of sizes) {
    const t0 = performance.now();
    const prog = buildProgram({ ...spec, bytes }, params);
    // The loop without jitter: where the ranks start, unless every run draws its own (then only the compute run needs it).
    const startAt = barrier === null || (jittered && opts.compute !== true) ? null : loopExits(barrier, prog, params, opts, null);
    let pureUs: number;
    let events = 0;
    if (spread > 0 || jittered) {
      // nbcbench's statistic over iterations (median of the per-call maximum), over orderings
      // of the measured spread and draws of the jitter, each run with its own loop.
      const runs: number[] = [];
      for (let k = 0; k < RUNS; k++) {
        const seed = (opts.seed ?? 1) * 7919 + k;
        // Every program run of this one (the loop's barriers and calls, the measured call) draws its own flights.
        const draw = splitmix32(seed ^ 0x5bd1e995);
        const jitterSeeds = jittered ? (): number => Math.floor(draw() * 4294967296) : null;
        const at = jitterSeeds !== null && barrier !== null ? loopExits(barrier, prog, params, opts, jitterSeeds) : startAt!.slice();
        if (spread > 0) {
          const by = spreadExits(prog.ranks, spread, seed);
          for (let r = 0; r < prog.ranks; r++) at[r]! += by[r]!;
        }
        const r = runProgram(prog, params, { noise: opts.noise ?? null, seed: opts.seed, startAt: at, jitterSeed: jitterSeeds === null ? null : jitterSeeds() });
        events += r.events;
        runs.push(slowest(r.done, at));
      }
      pureUs = statOf(runs, 'median');
    } else {
      const pure = runProgram(prog, params, { noise: opts.noise ?? null, seed: opts.seed, startAt });
      pureUs = slowest(pure.done, startAt);
      events = pure.events;
    }
    const row: SimRow = { bytes: spec.coll === 'barrier' ? 0 : prog.bytes, latencyUs: pureUs, algorithm: prog.algorithm, events, wallSeconds: 0 };
    if (opts.compute === true) {
      // nbcbench: compute as long as the pure latency between start and wait; per field the
      // maximum over ranks. No test() calls: the host executor progresses only in wait().
      const c = runProgram(prog, params, { noise: opts.noise ?? null, seed: opts.seed, computeUs: pureUs, startAt });
      events += c.events;
      let init = 0;
      let compute = 0;
      let wait = 0;
      for (let r = 0; r < prog.ranks; r++) {
        init = Math.max(init, c.initEnd[r]! - (startAt === null ? 0 : startAt[r]!));
        compute = Math.max(compute, c.computeEnd[r]! - c.initEnd[r]!);
        wait = Math.max(wait, c.done[r]! - c.computeEnd[r]!);
      }
      const overall = slowest(c.done, startAt);
      Object.assign(row, {
        pureUs, initUs: init, testUs: 0, waitUs: wait, overheadUs: init + wait,
        overallUs: overall, computeUs: compute, overlapPct: overlapPct(overall, compute, pureUs), events,
      });
    }
    row.wallSeconds = (performance.now() - t0) / 1000;
    rows.push(row);
  }
  return rows;
}
