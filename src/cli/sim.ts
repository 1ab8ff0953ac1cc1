/**
 * `nbc sim <op>`: the simulator (src/sim/): the schedules the library would run for a call,
 * replayed on a LogGOPS model of a machine, at any scale.
 *
 *   nbc sim allreduce --ranks 100000 --sizes 8,1K --algorithm recursive-doubling
 *   nbc sim iallreduce --ranks 512 --ppn 8 --executor offload --algorithm two-level --compute --params qdr-cx2
 *   nbc sim allreduce --ranks 128 --executor agg --sizes 8:4K:2 --params switchib2 --json r.json --chart r.svg
 *   nbc sim bcast --ranks 8 --sizes 8 --goal bcast.goal
 *
 * Rows are nbcbench's (`bytes`, `latencyUs`, and for non-blocking ops with --compute the
 * overlap figures by the same formulas), plus `algorithm`, `events` and `wallSeconds`; the JSON
 * file is a BenchResult, so `nbc bench compare` and `nbc bench chart` read it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import Table from 'cli-table3';
import { type Command } from 'commander';
import { DEFAULT_CONFIG } from '../config.js';
import { NbcArgError } from '../errors.js';
import { chartFormat, renderChart } from '../bench/chart.js';
import { parseNoise } from '../bench/metrics.js';
import type { BenchResult } from '../bench/result.js';
import type { CollName } from '../coll/select.js';
import { buildProgram, crowdedParams, PRESETS, simulate, SIM_COLLS, SIM_EXECUTORS, toGoal, type SimExecutor, type SimRow } from '../sim/index.js';
import { measureAppCompute } from '../sim/app-compute.js';
import { SIM_APPS, simulateApp, type SimApp } from '../sim/apps.js';
import { loadSimParams } from '../sim/params-file.js';
import { parseSizes } from './bench.js';

/** The largest simulation nbc sim takes: 4 Mi ranks (about 13 GB, at 0.3 GB per 10^5 ranks); beyond it memory, not time, ends a run. */
const MAX_SIM_RANKS = 1 << 22;
import { positiveInt, nonNegativeInt } from './args.js';

interface SimOptions {
  ranks: number; ppn: number; sizes: string; algorithm?: string; executor: string; params?: string; noise?: string;
  seed: number; compute?: boolean; json?: string; chart?: string; goal?: string; afterBarrier?: boolean; hostCores?: number;
  inputs: string;
  // The applications (nbc sim pcg|cg).
  n?: number; global?: string; variant?: string; mode?: string; testInterval?: number; iterations?: number;
}

/** `nbc sim pcg|cg`: the application on the model (sim/apps.ts), its phases printed as nbc pcg prints them. */
function simApp(app: SimApp, o: SimOptions): void {
  for (const [flag, set] of [['--compute', o.compute], ['--after-barrier', o.afterBarrier], ['--goal', o.goal], ['--chart', o.chart], ['--host-cores', o.hostCores]] as const) {
    if (set !== undefined && set !== false) throw new NbcArgError(`Cannot simulate ${app} with ${flag}: it applies to a single collective; the applications take --n or --global, --variant, --mode, --test-interval, --iterations, --noise`);
  }
  if (o.executor !== 'host' && o.executor !== 'offload' && o.executor !== 'agg') {
    throw new NbcArgError(`Cannot simulate ${app} on executor '${o.executor}': expected host, offload or agg (as nbc ${app} takes)`);
  }
  let global: [number, number, number] | null = null;
  if (o.global !== undefined) {
    const parts = o.global.split(',').map(Number);
    if (parts.length !== 3 || parts.some((x) => !Number.isInteger(x) || x < 1)) throw new NbcArgError(`Cannot use --global ${o.global}: expected NX,NY,NZ, positive integers`);
    global = [parts[0]!, parts[1]!, parts[2]!];
  }
  const mode = o.mode ?? 'nonblocking';
  if (mode !== 'blocking' && mode !== 'nonblocking') throw new NbcArgError(`Cannot use --mode ${mode}: expected blocking or nonblocking`);
  const loaded = loadSimParams(o.params);
  process.stderr.write(`parameters: ${loaded.from}\n`);
  const compute = loaded.params.compute ?? measureAppCompute();
  process.stderr.write(`compute: ${compute.source}\n`);
  const r = simulateApp({
    app, ranks: o.ranks, ppn: o.ppn, n: o.n ?? (app === 'pcg' ? 40 : 30), global, variant: o.variant ?? (app === 'pcg' ? 'overlap' : 'cg'),
    mode, executor: o.executor as SimExecutor, algorithm: o.algorithm, testInterval: o.testInterval ?? 0, iterations: o.iterations ?? null,
    noise: o.noise === undefined ? null : parseNoise(o.noise), seed: o.seed,
  }, loaded.params, compute);
  const t = new Table({ head: ['phase', 'seconds', 'of it blocked in communication'], style: { head: [], border: [], compact: true } });
  for (const [name, ph] of Object.entries(r.phases)) t.push([name, ph.seconds.toFixed(4), ph.commSeconds.toFixed(4)]);
  process.stdout.write(`${app} ${r.variant} on ${r.ranks} ranks (${r.ppn} per node), grid ${r.global.join('x')} (${r.local.join('x')} per rank), executor ${r.executor}, allreduce ${r.algorithm}${o.noise ? `, noise ${o.noise}` : ''} (simulated)\n`);
  process.stdout.write(`${r.iterations} iterations (${r.iterationsFrom}): ${r.solveSeconds.toFixed(3)} s, ${r.perIterationMs.toFixed(3)} ms per iteration; ${r.events} events in ${r.wallSeconds.toFixed(2)} s\n`);
  process.stdout.write(t.toString() + '\n');
  if (o.json !== undefined) {
    mkdirSync(dirname(o.json), { recursive: true });
    writeFileSync(o.json, JSON.stringify({ ...r, simulated: { params: loaded.params, from: loaded.from, seed: o.seed, noise: o.noise ?? null, testInterval: o.testInterval ?? 0 } }, null, 2) + '\n');
  }
}

/** 'iallreduce' -> allreduce, non-blocking; 'allreduce' -> blocking. */
export function parseSimOp(op: string): { coll: CollName; nonblocking: boolean } {
  const colls = SIM_COLLS as readonly string[];
  if (colls.includes(op)) return { coll: op as CollName, nonblocking: false };
  if (op.startsWith('i') && colls.includes(op.slice(1))) return { coll: op.slice(1) as CollName, nonblocking: true };
  throw new NbcArgError(`Cannot simulate '${op}': expected one of ${SIM_COLLS.join(', ')}, or its non-blocking form (i${SIM_COLLS[0]}, ...)`);
}

const fmt = (x: number | undefined, d = 2): string => (x === undefined ? '-' : x.toFixed(d));

function table(rows: SimRow[], nonblocking: boolean): string {
  const head = ['bytes', 'algorithm', 'latency us', ...(nonblocking ? ['overall us', 'compute us', 'overlap %'] : []), 'events', 'wall s', 'events/s'];
  const t = new Table({ head, style: { head: [], border: [], compact: true } });
  for (const r of rows) {
    t.push([r.bytes, r.algorithm, fmt(r.latencyUs), ...(nonblocking ? [fmt(r.overallUs), fmt(r.computeUs), fmt(r.overlapPct, 1)] : []),
      r.events, fmt(r.wallSeconds, 3), r.wallSeconds > 0 ? (r.events / r.wallSeconds).toExponential(2) : '-']);
  }
  return t.toString();
}

export function registerSim(program: Command): void {
  program.command('sim')
    .description('simulate a collective on a LogGOPS model: the schedules the library would run, at any scale')
    .argument('<op>', `collective (${SIM_COLLS.join(', ')}), or its i-form for non-blocking; or an application: pcg, cg`)
    .requiredOption('--ranks <N>', 'ranks', positiveInt)
    .option('--ppn <P>', 'ranks per node', positiveInt, 1)
    .option('--sizes <list>', 'bytes per rank: 8:1M (x4 steps), 8:1M:2, or a list 8,1K,64K', '8:1M')
    .option('--algorithm <name>', 'force an algorithm, as { algorithm } does (default: the selection table)')
    .option('--executor <e>', `who runs it: ${SIM_EXECUTORS.join(', ')} (hier: host with the hier algorithm)`, 'host')
    .option('--params <file|preset>', `LogGOPS parameters: a file, or a preset (${Object.keys(PRESETS).join(', ')}); default: the last nbc calibrate --loggp, else built-in defaults`)
    .option('--noise <D@F>', 'OS noise per rank, e.g. 100us@1kHz (seed 000)')
    .option('--seed <n>', 'seed of the noise phases', nonNegativeInt, 1)
    .option('--compute', 'non-blocking ops: also run with compute as long as the pure latency, and report overlap')
    .option('--after-barrier', "nbcbench's rule: each rank calls as it leaves a barrier, and the latency is the slowest rank's own time (default: all call at once)")
    .option('--inputs <where>', "cached: the call's input unchanged since the last call, as nbc bench loops it (shared memory then copies it from cache); fresh: just written, as an application's data", 'cached')
    .option('--host-cores <N>', 'the cluster is emulated on one host of N cores (as nbc bench runs it): more ranks than cores share them, and are priced by the calibration\'s crowd levels', positiveInt)
    .option('--json <file>', 'write the result (nbcbench JSON, plus events and wallSeconds)')
    .option('--chart <file>', 'latency (or, with --compute, overlap) chart, .svg or .png')
    .option('--goal <file>', "write the first size's schedules in LogGOPSim's GOAL format")
    .option('--n <N>', 'pcg, cg: local points per dimension per rank (default: pcg 40, cg 30)', positiveInt)
    .option('--global <NX,NY,NZ>', 'pcg, cg: the global grid instead of --n')
    .option('--variant <v>', 'pcg: alg1, alg2 or overlap (default overlap); cg: cg')
    .option('--mode <m>', 'cg: the halo blocking, or nonblocking behind the interior rows (default)')
    .option('--test-interval <rows>', 'pcg, cg: interior rows between test() calls on the halo (host executor); 0 = none', nonNegativeInt)
    .option('--iterations <n>', 'pcg, cg: iterations to run (default: from the grid, as the apps converge to 1e-8)', positiveInt)
    .action(async (op: string, o: SimOptions) => {
      if ((SIM_APPS as readonly string[]).includes(op)) {
        simApp(op as SimApp, o);
        return;
      }
      for (const [flag, set] of [['--n', o.n], ['--global', o.global], ['--variant', o.variant], ['--mode', o.mode], ['--test-interval', o.testInterval], ['--iterations', o.iterations]] as const) {
        if (set !== undefined) throw new NbcArgError(`Cannot simulate ${op} with ${flag}: it applies to the applications (nbc sim pcg, nbc sim cg)`);
      }
      const { coll, nonblocking } = parseSimOp(op);
      if (!(SIM_EXECUTORS as readonly string[]).includes(o.executor)) {
        throw new NbcArgError(`Cannot simulate on executor '${o.executor}': expected one of ${SIM_EXECUTORS.join(', ')}`);
      }
      if (o.compute === true && !nonblocking) {
        throw new NbcArgError(`Cannot simulate ${op} with --compute: only non-blocking ops overlap computation; expected i${op}`);
      }
      if (o.inputs !== 'cached' && o.inputs !== 'fresh') {
        throw new NbcArgError(`Cannot simulate with --inputs ${o.inputs}: expected cached (unchanged since the last call, as nbc bench loops) or fresh (just written)`);
      }
      if (o.chart !== undefined) chartFormat(o.chart);
      if (o.ranks > MAX_SIM_RANKS) {
        throw new NbcArgError(`Cannot simulate ${o.ranks} ranks: every rank's schedule is held in memory (10^5 ranks of recursive doubling take about 0.3 GB); expected at most ${MAX_SIM_RANKS} ranks`);
      }
      const noise = o.noise === undefined ? null : parseNoise(o.noise);
      const loaded = loadSimParams(o.params);
      const from = loaded.from;
      let params = loaded.params;
      process.stderr.write(`parameters: ${from}\n`);
      if (o.hostCores !== undefined) {
        const crowded = crowdedParams(params, o.ranks, o.hostCores, o.ppn);
        params = crowded.params;
        process.stderr.write(`host: ${crowded.note}\n`);
      }
      // A barrier moves no data: one row, at 0 bytes, as nbc bench reports it.
      const sizes = coll === 'barrier' ? [0] : parseSizes(o.sizes);
      // Selection sees the host as the runtime would: oversubscribed when its ranks outnumber its cores.
      const config = o.hostCores !== undefined && o.ranks > o.hostCores ? { ...DEFAULT_CONFIG, oversubscribed: true } : undefined;
      const spec = { coll, ranks: o.ranks, ppn: o.ppn, executor: o.executor as SimExecutor, algorithm: o.algorithm, inputs: o.inputs as 'cached' | 'fresh', nonblocking, ...(config ? { config } : {}) };
      if (o.goal !== undefined) {
        const prog = buildProgram({ ...spec, bytes: sizes[0]! }, params);
        mkdirSync(dirname(o.goal), { recursive: true });
        writeFileSync(o.goal, toGoal(prog, params));
        process.stderr.write(`GOAL schedules of ${coll}/${prog.algorithm} at ${prog.bytes} B written to ${o.goal}\n`);
      }
      const rows = simulate(spec, sizes, params, { compute: o.compute === true, noise, seed: o.seed, afterBarrier: o.afterBarrier === true });
      process.stdout.write(`${op} on ${o.ranks} ranks, ${o.ppn} per node, executor ${o.executor}${noise ? `, noise ${o.noise}` : ''} (simulated)\n`);
      process.stdout.write(table(rows, o.compute === true) + '\n');
      const result: BenchResult & { simulated: { params: typeof params; from: string; seed: number; afterBarrier: boolean; hostCores: number | null; inputs: string } } = {
        op, kind: nonblocking ? 'nonblocking' : 'blocking', ranks: o.ranks, ppn: o.ppn, executor: o.executor,
        algorithm: o.algorithm ?? 'auto', link: null, compute: o.compute === true ? 'busy' : null, testInterval: '0',
        noise: o.noise ?? null, stat: 'median', label: `sim ${o.executor} ${o.algorithm ?? 'auto'}`,
        machine: { cpu: `simulated: ${params.source}`, cores: 0, node: process.version }, limits: {}, results: rows,
        simulated: { params, from, seed: o.seed, afterBarrier: o.afterBarrier === true, hostCores: o.hostCores ?? null, inputs: o.inputs },
      };
      if (o.json !== undefined) {
        mkdirSync(dirname(o.json), { recursive: true });
        writeFileSync(o.json, JSON.stringify(result, null, 2) + '\n');
      }
      if (o.chart !== undefined) await renderChart([result], o.chart, { metric: o.compute === true ? 'overlap' : 'latency' });
    });
}
