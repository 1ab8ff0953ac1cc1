/**
 * `nbc calibrate --loggp`: measures the simulator's LogGOPS parameters on this machine
 * (loggp-job.ts, Netgauge's method) for the shared-memory path and the path between nodes, and
 * the reduction and copy kernels in this process, then writes the file `nbc sim` reads.
 *
 * Fits (per path, from the fastest samples):
 * - G: least-squares slope of the one-way ping-pong time over sizes. Shared memory moves bytes
 *   by CPU copies, so there G is split evenly between the wire (G) and the receiver (O); between
 *   nodes it is all G (O = 0: UCX and TCP move the bytes off the CPU's critical path).
 * - o: the time inside isend per message, from the longest train (o_s; Netgauge takes o_r
 *   alike on symmetric hosts).
 * - g: the least-squares slope of the train's time over its length (max(o, g) in LogGP; taken
 *   as g, never below o).
 * - L: the one-way time of the smallest message less 2o. The model's o is symmetric (sender
 *   and receiver), but here isend (a request, and for UCX a staging copy) costs more than the
 *   blocking receive side: measured o_s reached 0.54x (shm) and 0.57x (UCX) of the one-way
 *   time on the reference VM, leaving no room for L. So o is capped at 0.45x the one-way
 *   time, which keeps 2o + L equal to the measured one-way latency; the raw o_s stays in the
 *   file's samples.
 * - S: NBC_EAGER_LIMIT (the transport's threshold), default 8192.
 * Kernels: a sum of two 1 MiB float64 vectors and a 1 MiB copy, fastest of 20.
 */
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { reduceRegions } from '../ops/regions.js';
import { launch } from '../runtime/launcher.js';
import { parseTransport } from '../runtime/node-main.js';
import { DEFAULT_SIM_PARAMS, SIM_PARAMS_VERSION, type LogGOPS, type SimParams, type SimParamsFile } from './params.js';
import type { LogGPJobArgs, LogGPJobResult } from './loggp-job.js';
import { simParamsFilePath, writeSimParamsFile } from './params-file.js';

const JOB = fileURLToPath(new URL('./loggp-job.js', import.meta.url));
const SIZES = [1, 64, 1024, 4096, 16384, 65536];
const MAX_TRAIN = 16;
const BUDGET_MS = 8000;

/** Least-squares slope and intercept of y over x. */
export function fitLine(xs: readonly number[], ys: readonly number[]): { slope: number; intercept: number } {
  const n = xs.length;
  let sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i]!;
    sy += ys[i]!;
    sxx += xs[i]! * xs[i]!;
    sxy += xs[i]! * ys[i]!;
  }
  const d = n * sxx - sx * sx;
  const slope = d === 0 ? 0 : (n * sxy - sx * sy) / d;
  return { slope, intercept: (sy - slope * sx) / n };
}

/** LogGOPS of one path from the job's samples (the rules above). */
export function fitLogGOPS(job: LogGPJobResult, shm: boolean, eagerLimit: number): LogGOPS {
  const perByte = Math.max(0, fitLine(job.pingPong.map((p) => p.bytes - 1), job.pingPong.map((p) => p.us)).slope);
  const longest = job.trains[job.trains.length - 1]!;
  const smallest = job.pingPong.reduce((x, y) => (y.bytes < x.bytes ? y : x));
  const o = Math.min(longest.postUs / longest.messages, 0.45 * smallest.us);
  const gap = fitLine(job.trains.map((t) => t.messages), job.trains.map((t) => t.totalUs)).slope;
  return {
    L: Math.max(0, smallest.us - 2 * o), o, g: Math.max(o, gap),
    G: shm ? perByte / 2 : perByte, O: shm ? perByte / 2 : 0, S: eagerLimit,
  };
}

function kernelSpeeds(): { reduceUsPerByte: number; copyUsPerByte: number } {
  const n = 1 << 17;
  const a = new Float64Array(n).fill(1);
  const b = new Float64Array(n).fill(2);
  const ua = new Uint8Array(a.buffer);
  const ub = new Uint8Array(b.buffer);
  let red = Infinity;
  let copy = Infinity;
  for (let i = 0; i < 20; i++) {
    let t = performance.now();
    reduceRegions(0, 8, ua, ub);
    red = Math.min(red, performance.now() - t);
    t = performance.now();
    ub.set(ua);
    copy = Math.min(copy, performance.now() - t);
  }
  return { reduceUsPerByte: (red * 1000) / ua.byteLength, copyUsPerByte: (copy * 1000) / ua.byteLength };
}

async function measure(ppn: 1 | 2, transport: string | undefined): Promise<LogGPJobResult> {
  const args: LogGPJobArgs = { sizes: SIZES, maxTrain: MAX_TRAIN, budgetMs: BUDGET_MS, minRounds: 5 };
  const r = await launch(JOB, { ranks: 2, ppn, args: [JSON.stringify(args)], output: 'pipe', timeoutMs: BUDGET_MS + 30_000, transport: transport === undefined ? undefined : parseTransport(transport) });
  if (r.exitCode !== 0) throw new Error(`the LogGP job on ${ppn === 2 ? 'shared memory' : 'the network'} failed (exit ${r.exitCode}):\n${r.stderr}`);
  return r.ranks[0]!.result as LogGPJobResult;
}

/** Runs the calibration, writes the file; returns what it wrote and where. */
export async function calibrateLogGP(o: { out?: string; transport?: string; log?: (s: string) => void }): Promise<{ file: string; content: SimParamsFile }> {
  const log = o.log ?? ((s: string) => process.stderr.write(s));
  const limit = Number(process.env.NBC_EAGER_LIMIT ?? '') || 8192;
  log('measuring shared memory (2 ranks, 1 node)... ');
  const shmJob = await measure(2, undefined);
  log(`${shmJob.rounds} rounds\nmeasuring the network (2 ranks, 2 nodes${o.transport ? `, ${o.transport}` : ''})... `);
  const netJob = await measure(1, o.transport);
  log(`${netJob.rounds} rounds\n`);
  const params: SimParams = {
    ...DEFAULT_SIM_PARAMS,
    source: `calibrated on ${hostname()} at ${new Date().toISOString()}`,
    shm: fitLogGOPS(shmJob, true, limit),
    net: fitLogGOPS(netJob, false, limit),
    ...kernelSpeeds(),
  };
  // An offloaded post is one ring record to the engine: a shared-memory send's overhead.
  params.postUs = params.shm.o;
  const content: SimParamsFile = {
    version: SIM_PARAMS_VERSION, measuredAt: new Date().toISOString(), host: hostname(), params,
    samples: { shm: shmJob, net: netJob },
  };
  const file = o.out ?? simParamsFilePath();
  writeSimParamsFile(file, content);
  return { file, content };
}
