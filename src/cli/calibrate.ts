/**
 * `nbc calibrate`: measures seed 004's model parameters (`coll/cost-model.ts`) on this machine,
 * per path, and stores them as JSON for selection to read.
 *
 *   nbc calibrate [--out FILE] [--iters N] [--ranks N] [--json]
 *
 * One job per path through the launcher, as `nbc bench p2p` runs them: shared memory is
 * `--ranks N --ppn N` (one node), TCP is `--ppn 1` (every rank its own node). The job
 * (`bench/calibrate-job.ts`) times ping-pongs from 1 B to 64 KiB and a direct scatter of
 * 1..16 messages of 1 B and of 64 KiB; `fitPath` turns them into T_startup, beta and C. The
 * 64 KiB scatter is not fitted: it is printed beside the model's prediction, as a check of
 * eq. 3. Each job measures for at most BUDGET_MS, so a run stays under a minute on a busy
 * 2-core machine.
 */
import { readFileSync } from 'node:fs';
import { cpus, hostname, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { InvalidArgumentError, type Command } from 'commander';
import type { CalibrateJobArgs, CalibrateJobResult } from '../bench/calibrate-job.js';
import {
  fitPath, packingCutoffBytes, PARAMS_VERSION, scatterLatency, type CostParams, type ParamsFile, type PathName, type PathParams,
} from '../coll/cost-model.js';
import { launch } from '../runtime/launcher.js';
import { TRANSPORT_CHOICES, type TransportChoice } from '../runtime/node-main.js';
import { paramsFilePath, writeParamsFile } from '../runtime/params-file.js';
import { machineInfo } from './bench.js';
import { NbcArgError } from '../errors.js';
import { calibrateLogGP, refitLogGP } from '../sim/calibrate.js';
import { parseSimParamsFile } from '../sim/params.js';
import { writeSimParamsFile } from '../sim/params-file.js';
import { positiveInt } from './args.js';

const CALIBRATE_JOB = fileURLToPath(new URL('../bench/calibrate-job.js', import.meta.url));

const PING_PONG_SIZES = [1, 16, 256, 1024, 4096, 16384, 65536];
/** Start-up bound (fitted) and transmission bound (checked against eq. 3). */
const SCATTER_SIZES = [1, 65536];
const MAX_MESSAGES = 16;
/** Measuring time per path; at least MIN_ITERS rounds run whatever it takes. */
const BUDGET_MS = 20_000;
const MIN_ITERS = 10;

function ranksArg(value: string): number {
  const n = positiveInt(value);
  if (n < 2) throw new InvalidArgumentError(`expected at least 2 (a root and a receiver), got '${value}'`);
  return n;
}

interface CalibrateOptions {
  out?: string;
  loggp?: boolean;
  transport?: TransportChoice;
  stat: string;
  crowd?: number[];
  refit?: string;
  iters: number;
  ranks: number;
  json?: boolean;
}

interface Measured {
  path: PathName;
  params: PathParams;
  job: CalibrateJobResult;
}

/** Runs the job on one path; null (with the job's output on stderr) when it failed. */
async function measure(path: 'shm' | 'tcp', o: CalibrateOptions): Promise<Measured | null> {
  const args: CalibrateJobArgs = {
    sizes: PING_PONG_SIZES, scatterSizes: SCATTER_SIZES, maxMessages: MAX_MESSAGES,
    iters: o.iters, warmup: Math.min(10, o.iters), budgetMs: BUDGET_MS, minIters: Math.min(MIN_ITERS, o.iters),
  };
  const t0 = performance.now();
  process.stderr.write(`measuring ${path} (${o.ranks} ranks, ppn ${path === 'shm' ? o.ranks : 1})... `);
  const r = await launch(CALIBRATE_JOB, {
    ranks: o.ranks, ppn: path === 'shm' ? o.ranks : 1, args: [JSON.stringify(args)], output: 'pipe', timeoutMs: BUDGET_MS + 40_000,
  });
  if (r.exitCode !== 0) {
    process.stderr.write(`failed\n${r.stderr}`);
    process.exitCode = r.exitCode;
    return null;
  }
  const job = r.ranks[0]!.result as CalibrateJobResult;
  process.stderr.write(`done, ${job.rounds} rounds in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  // The fastest iteration of each point: the path's own cost (see calibrate-job.ts).
  const params = fitPath({
    pingPong: job.pingPong.map((p) => ({ bytes: p.bytes, us: p.minUs })),
    scatter: {
      bytes: SCATTER_SIZES[0]!,
      points: job.scatter.filter((p) => p.bytes === SCATTER_SIZES[0]).map((p) => ({ messages: p.messages, us: p.minUs })),
    },
  });
  for (const [field, what] of [['startupUs', 'start-up (scatter slope over messages)'], ['perByteUs', 'per-byte (ping-pong slope over sizes)']] as const) {
    if (params[field] === 0) {
      process.stderr.write(`warning: ${path}: the ${what} fit came out <= 0 and was taken as 0; the samples are too noisy (a busy machine, or too few --iters)\n`);
    }
  }
  if (job.scatter.some((p) => !(p.minUs > 0))) {
    process.stderr.write(`warning: ${path}: a scatter took less than its ack's one-way time; the samples are too noisy (a busy machine, or too few --iters)\n`);
  }
  return { path, params, job };
}

const fmt = (x: number, digits = 2): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');

function report(measured: Measured[]): string {
  const params = new Table({
    head: ['path', 'T_startup us', 'beta us/B', '1/beta GB/s', 'C us', 'cut-off (eq. 5)', 'rounds'],
    style: { head: [], border: [], compact: true },
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
  });
  const check = new Table({
    head: ['path', 'scatter', 'messages', 'measured us (fastest)', 'measured us (median)', 'model us'],
    style: { head: [], border: [], compact: true },
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right'],
  });
  for (const m of measured) {
    const p = m.params;
    params.push([
      m.path, fmt(p.startupUs, 3), p.perByteUs.toExponential(3), fmt(p.perByteUs > 0 ? 1e-3 / p.perByteUs : Infinity),
      fmt(p.constantUs), `${packingCutoffBytes(p)} B`, m.job.rounds,
    ]);
    for (const bytes of SCATTER_SIZES) {
      for (const k of [1, MAX_MESSAGES / 2, MAX_MESSAGES]) {
        const s = m.job.scatter.find((x) => x.bytes === bytes && x.messages === k);
        if (s === undefined) continue;
        check.push([m.path, `${bytes} B`, k, fmt(s.minUs), fmt(s.medianUs), fmt(scatterLatency(p, k + 1, bytes))]);
      }
    }
  }
  return `seed 004 model, T = T_serialization + C, per path\n${params.toString()}\n` +
    `direct scatter: measured vs model (1 B fitted; 64 KiB predicted by eq. 3)\n${check.toString()}\n`;
}

/** `--loggp --refit FILE`: the calibration in FILE fitted again from its samples. */
function refitFile(from: string, out: string | undefined): { file: string; content: ReturnType<typeof refitLogGP> } {
  let text: string;
  try {
    text = readFileSync(from, 'utf8');
  } catch (err) {
    throw new NbcArgError(`Cannot refit ${from}: ${(err as Error).message}; expected a file written by nbc calibrate --loggp`, { cause: err });
  }
  const content = refitLogGP(parseSimParamsFile(text, from));
  const file = out ?? from;
  writeSimParamsFile(file, content);
  return { file, content };
}

/** `--crowd 8,16` or `none`, else commander's usage error. */
function crowdArg(value: string): number[] {
  return value === 'none' ? [] : value.split(',').map((x) => positiveInt(x));
}

/** `--transport`, checked before anything is measured; commander's usage error otherwise. */
function transportArg(value: string): TransportChoice {
  if (!(TRANSPORT_CHOICES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${TRANSPORT_CHOICES.join(', ')}`);
  return value as TransportChoice;
}

export function registerCalibrate(program: Command): void {
  program.command('calibrate')
    .description("measure seed 004's cost model (start-up, per-byte, constant) per path and store it as JSON for selection")
    .option('--out <file>', 'where to write the parameters (default: NBC_PARAMS, else $XDG_CACHE_HOME/nbcoll/params.json, ~/.cache without it)')
    .option('--iters <n>', 'measured rounds per path (fewer if a path runs out of its 20 s)', positiveInt, 100)
    .option('--ranks <n>', 'ranks per job: the scatter spreads its messages over n-1 receivers', ranksArg, 2)
    .option('--json', 'print the parameters file instead of the tables')
    .option('--loggp', "instead: measure the simulator's LogGOPS parameters (Netgauge's method) and write them for nbc sim (default file: NBC_SIM_PARAMS, else loggp.json beside params.json)")
    .option('--transport <t>', 'with --loggp: the path between nodes to measure, ucx or tcp (default: auto)', transportArg)
    .option('--stat <s>', 'with --loggp: statistic of each point over its rounds, median or min', 'median')
    .option('--refit <file>', "with --loggp: measure nothing; fit the samples FILE keeps again with this version's rules and write the result to --out (default: FILE)")
    .option('--crowd <list>', "with --loggp: crowds to measure, ranks on this host (multiples of 4 above its cores), or 'none' (default: 2, 4 and 8 per core, up to 64)", crowdArg)
    .action(async (o: CalibrateOptions) => {
      if (o.refit !== undefined && o.loggp !== true) throw new NbcArgError('Cannot use --refit without --loggp: only LogGOPS calibrations keep their samples');
      if (o.loggp === true) {
        if (o.stat !== 'median' && o.stat !== 'min') throw new NbcArgError(`Cannot calibrate with --stat ${o.stat}: expected median or min`);
        const { file, content } = o.refit !== undefined ? refitFile(o.refit, o.out) : await calibrateLogGP({ out: o.out, transport: o.transport, stat: o.stat, crowd: o.crowd });
        const p = content.params;
        const row = (name: string, x: typeof p.shm): string =>
          `${name}: L ${x.L.toFixed(3)} us, o ${x.o.toFixed(3)} us${x.oRecv === undefined ? '' : ` (receiver ${x.oRecv.toFixed(3)} us)`}, g ${x.g.toFixed(3)} us, G ${x.G.toExponential(3)} us/B, O ${x.O.toExponential(3)} us/B, S ${x.S} B` +
          (x.lent === undefined ? '' : `; into lent memory a fold ${x.lent.foldUsPerByte.toExponential(3)}, a copy ${x.lent.copyUsPerByte.toExponential(3)} us/B more`) + '\n';
        if (o.json) process.stdout.write(JSON.stringify(content, null, 2) + '\n');
        else {
          const crowdRows = (p.crowd?.levels ?? []).map((l) => row(`shm, ${l.ranks} ranks`, l.shm) + row(`net, ${l.ranks} ranks`, l.net) +
            (l.barrierSpreadUs === undefined ? '' : `${l.ranks} ranks: barrier exits spread ${l.barrierSpreadUs.toFixed(1)} us beyond L\n`) +
            (l.nodeBarrierSpreadUs === undefined ? '' : `${l.ranks} ranks on one node: barrier exits spread ${l.nodeBarrierSpreadUs.toFixed(1)} us beyond the simulated loop's\n`)).join('');
          const spread = p.barrierSpreadUs === undefined ? '' : `2 ranks on 2 nodes: barrier exits spread ${p.barrierSpreadUs.toFixed(1)} us beyond L\n`;
          process.stdout.write(row('shm', p.shm) + row('net', p.net) + spread + crowdRows +
            `reduce ${(1e-3 / p.reduceUsPerByte).toFixed(2)} GB/s, copy ${(1e-3 / p.copyUsPerByte).toFixed(2)} GB/s, ${(p.callUs ?? 0).toFixed(1)} us per call (${(p.callNetUs ?? p.callUs ?? 0).toFixed(1)} us across nodes)\nwritten to ${file}\n`);
        }
        return;
      }
      const load = loadavg()[0]!;
      const cores = cpus().length;
      if (load > cores) {
        process.stderr.write(`warning: load average ${load.toFixed(1)} on ${cores} cores: other programs compete for the CPU, so the figures will be rough; calibrate on an idle machine\n`);
      }
      const measured: Measured[] = [];
      for (const path of ['shm', 'tcp'] as const) {
        const m = await measure(path, o);
        if (m === null) return;
        measured.push(m);
      }
      const paths = Object.fromEntries(measured.map((m) => [m.path, m.params])) as unknown as CostParams;
      const file: ParamsFile & Record<string, unknown> = {
        version: PARAMS_VERSION, measuredAt: new Date().toISOString(), host: hostname(), node: process.version, paths,
        machine: { ...machineInfo(), loadAverage: load },
        samples: Object.fromEntries(measured.map((m) => [m.path, m.job])),
      };
      const out = o.out ?? paramsFilePath();
      writeParamsFile(out, file);
      if (o.json) process.stdout.write(JSON.stringify(file, null, 2) + '\n');
      else process.stdout.write(report(measured) + `written to ${out}\n`);
    });
}
