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
import { loadSimParams } from '../sim/params-file.js';
import { parseSizes } from './bench.js';

/** The largest simulation nbc sim takes: 4 Mi ranks (about 13 GB, at 0.3 GB per 10^5 ranks); beyond it memory, not time, ends a run. */
const MAX_SIM_RANKS = 1 << 22;
import { positiveInt, nonNegativeInt } from './args.js';

interface SimOptions {
  ranks: number; ppn: number; sizes: string; algorithm?: string; executor: string; params?: string; noise?: string;
  seed: number; compute?: boolean; json?: string; chart?: string; goal?: string; afterBarrier?: boolean; hostCores?: number;
  inputs: string;
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
    .argument('<op>', `collective (${SIM_COLLS.join(', ')}), or its i-form for non-blocking`)
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
    .action(async (op: string, o: SimOptions) => {
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
      const spec = { coll, ranks: o.ranks, ppn: o.ppn, executor: o.executor as SimExecutor, algorithm: o.algorithm, inputs: o.inputs as 'cached' | 'fresh', ...(config ? { config } : {}) };
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
