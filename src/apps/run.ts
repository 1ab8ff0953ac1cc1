/**
 * What `nbc cg` and `nbc pcg` share: their options (parsed the same way whether the job was
 * launched by the CLI, `nbc run`, `nbc node` or mpirun), the per-phase clock behind seed 000's
 * Table I, OS noise, test() pacing inside the matvec, and the report (table, JSON, chart)
 * that rank 0 writes after gathering every rank's phases.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import Table from 'cli-table3';
import type { TopLevelSpec } from 'vega-lite';
import { NbcArgError, type CollOptions, type Communicator, type Request } from '../index.js';
import { chartFormat, renderSpec } from '../bench/chart.js';
import { parseNoise, type Noise } from '../bench/metrics.js';
import type { LineHook } from './grid.js';

export type App = 'cg' | 'pcg';
export const VARIANTS = { cg: ['cg'], pcg: ['alg1', 'alg2', 'overlap'] } as const;

export interface AppOptions {
  app: App;
  /** Local points per dimension per rank (ignored when `global` is set). */
  n: number;
  global: [number, number, number] | null;
  tol: number;
  maxIter: number;
  /**
   * Untimed solves before the timed one: a fresh job's first few thousand calls are slower while
   * V8 tiers its hot paths up (BENCHMARKS.md, "First calls and warm-up"), so comparisons
   * of steady-state solvers time a solve after some.
   */
  warmup: number;
  variant: string;
  mode: 'blocking' | 'nonblocking';
  executor: string;
  algorithm: string | undefined;
  /** Rows of the interior matvec between test() calls on the halo request; 0 = none. */
  testInterval: number;
  noise: Noise | null;
  noiseText: string | null;
  verbose: boolean;
  json: string | null;
  chart: string | null;
  verify: 'auto' | 'on' | 'off';
  /** The link the job was launched with, recorded in the JSON (the launcher applies it). */
  link: string | null;
  quiet: boolean;
}

function num(name: string, text: string, integer: boolean, min: number): number {
  const v = Number(text);
  if (!Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min) {
    throw new NbcArgError(`Cannot use --${name} ${text}: expected ${integer ? 'an integer' : 'a number'} >= ${min}`);
  }
  return v;
}

function oneOf<T extends string>(name: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text)) {
    throw new NbcArgError(`Cannot use --${name} ${text}: expected one of ${allowed.join(', ')}`);
  }
  return text as T;
}

/** node:util's parseArgs, its errors (unknown flag, missing value) as NbcArgError. */
function parseJobArgs<T extends ParseArgsConfig>(app: App, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new NbcArgError(`Cannot parse the ${app} job's arguments: ${(err as Error).message.split('\n')[0]}`);
    }
    throw err;
  }
}

/** Parses a job's arguments (the same flags as `nbc cg` / `nbc pcg`, less the launcher's). */
export function parseAppArgs(app: App, argv: readonly string[]): AppOptions {
  const { values: v } = parseJobArgs(app, {
    args: [...argv],
    strict: true,
    options: {
      n: { type: 'string' }, global: { type: 'string' }, tol: { type: 'string' }, 'max-iter': { type: 'string' }, warmup: { type: 'string' },
      variant: { type: 'string' }, mode: { type: 'string' }, executor: { type: 'string' }, algorithm: { type: 'string' },
      'test-interval': { type: 'string' }, noise: { type: 'string' }, verbose: { type: 'boolean' }, json: { type: 'string' },
      chart: { type: 'string' }, verify: { type: 'string' }, link: { type: 'string' }, quiet: { type: 'boolean' },
    },
  });
  let global: [number, number, number] | null = null;
  if (v.global !== undefined) {
    const parts = v.global.split(',').map((s) => num('global', s, true, 1));
    if (parts.length !== 3) throw new NbcArgError(`Cannot use --global ${v.global}: expected NX,NY,NZ`);
    global = [parts[0]!, parts[1]!, parts[2]!];
  }
  if (v.chart !== undefined) chartFormat(v.chart);
  return {
    app,
    n: num('n', v.n ?? (app === 'pcg' ? '40' : '30'), true, 1),
    global,
    tol: num('tol', v.tol ?? '1e-8', false, 0),
    maxIter: num('max-iter', v['max-iter'] ?? '10000', true, 1),
    warmup: num('warmup', v.warmup ?? '0', true, 0),
    variant: oneOf('variant', v.variant ?? (app === 'pcg' ? 'overlap' : 'cg'), VARIANTS[app]),
    mode: oneOf('mode', v.mode ?? 'nonblocking', ['blocking', 'nonblocking'] as const),
    executor: oneOf('executor', v.executor ?? 'host', ['host', 'offload', 'agg'] as const),
    algorithm: v.algorithm,
    testInterval: num('test-interval', v['test-interval'] ?? '0', true, 0),
    noise: v.noise === undefined ? null : parseNoise(v.noise),
    noiseText: v.noise ?? null,
    verbose: v.verbose ?? false,
    json: v.json ?? null,
    chart: v.chart ?? null,
    verify: oneOf('verify', v.verify ?? 'auto', ['auto', 'on', 'off'] as const),
    link: v.link ?? null,
    quiet: v.quiet ?? false,
  };
}

/**
 * The options of a solve's inner products (allreduces): `--executor` and `--algorithm`. The
 * halo takes `haloOptions`: `--algorithm` names an allreduce algorithm, which a neighbour
 * exchange does not have.
 */
export function collOptions(o: AppOptions): CollOptions {
  return { executor: o.executor as CollOptions['executor'], ...(o.algorithm === undefined ? {} : { algorithm: o.algorithm }) };
}

/** The options of a solve's halo exchange: `--executor`. */
export function haloOptions(o: AppOptions): CollOptions {
  return { executor: o.executor as CollOptions['executor'] };
}

/**
 * Seed 000's OS noise: every period, a burst of busy work of the given duration, with each
 * rank's bursts at their own phase. It can only strike where the solver looks at the clock:
 * at every phase boundary and after every line of a matvec, which on these grids is every few
 * microseconds, finer than any burst studied.
 */
export class NoiseSource {
  private next: number;
  /** Milliseconds stolen so far. */
  stolenMs = 0;

  constructor(private readonly noise: Noise, rank: number) {
    this.next = performance.now() + ((rank * 7919) % 1000) / 1000 * noise.periodUs / 1000;
  }

  poll(): void {
    const t = performance.now();
    if (t < this.next) return;
    const until = t + this.noise.durationUs / 1000;
    while (performance.now() < until) { /* stolen time */ }
    this.stolenMs += performance.now() - t;
    this.next += this.noise.periodUs / 1000;
    if (this.next < until) this.next = until + this.noise.periodUs / 1000; // never catch up in bursts
  }
}

/** test() on the in-flight halo every `interval` rows, and noise after every line. */
export class Pacer implements LineHook {
  req: Request | null = null;
  private rows = 0;
  tests = 0;

  constructor(private readonly interval: number, private readonly noise: NoiseSource | null) {}

  /** Whether the matvec needs a hook at all (keeps the plain kernel loop otherwise). */
  get active(): boolean {
    return this.interval > 0 || this.noise !== null;
  }

  lines(rows: number): void {
    if (this.noise !== null) this.noise.poll();
    if (this.interval === 0 || this.req === null) return;
    this.rows += rows;
    if (this.rows >= this.interval) {
      this.rows = 0;
      this.tests++;
      this.req.test();
    }
  }
}

/** One row of Table I: time in a phase, and of it the time blocked in communication. */
export interface PhaseTime {
  seconds: number;
  commSeconds: number;
}

/** The phases of a solve, in report order (seed 000 Table I, plus the halo). */
export const PHASES = ['matvec', 'halo', 'sdotp', 'gamma', 'iprod', 'precond', 'axpy'] as const;
export type Phase = (typeof PHASES)[number];

/**
 * Per-phase clocks. `time(phase, t0, comm)` charges now - t0 to the phase and `comm` of it to
 * its communication column; the solver reads performance.now() at phase boundaries only.
 */
export class Phases {
  readonly ms = new Float64Array(PHASES.length);
  readonly commMs = new Float64Array(PHASES.length);

  constructor(private readonly noise: NoiseSource | null) {}

  /** Charges the phase and returns the new clock (the next phase's start). */
  charge(phase: number, t0: number, commMs = 0): number {
    const t = performance.now();
    this.ms[phase]! += t - t0;
    this.commMs[phase]! += commMs;
    if (this.noise !== null) {
      this.noise.poll();
      return performance.now();
    }
    return t;
  }
}

export const P = {
  matvec: 0, halo: 1, sdotp: 2, gamma: 3, iprod: 4, precond: 5, axpy: 6,
} as const satisfies Record<Phase, number>;

/** A verification outcome, as printed and recorded. */
export interface Verification {
  kind: string;
  ok: boolean;
  /** What was measured against what bound, in words and numbers. */
  value: number;
  bound: number;
  detail: string;
}

/** The JSON record of one run (`--json`). */
export interface AppResult {
  app: App;
  variant: string;
  mode: string;
  executor: string;
  algorithm: string | null;
  ranks: number;
  ppn: number;
  nodes: number;
  link: string | null;
  noise: string | null;
  global: number[];
  local: number[];
  processGrid: number[];
  unknowns: number;
  iterations: number;
  finalRelResidual: number;
  /** Seconds of the timed solve (the slowest rank's). */
  solveSeconds: number;
  /** Untimed solves run before it (`--warmup`). */
  warmupSolves: number;
  perIterationMs: number;
  /** Per phase: seconds averaged over ranks, and of them seconds blocked in communication. */
  phases: Record<string, PhaseTime>;
  /** Matvec memory traffic (matrix-free: read p, write y; 16 B per row) in GB/s, per rank. */
  matvecGBs: number;
  testCalls: number;
  noiseStolenSeconds: number;
  verification: Verification | null;
  /** Why the run was not verified, where it was not. */
  verificationSkipped?: string;
  residualHistory: number[];
  machine: { node: string; date: string };
}

/** Sum over ranks, to rank 0 (and everyone). */
function sumAll(comm: Communicator, a: Float64Array): Float64Array {
  const out = new Float64Array(a.length);
  comm.allreduce(a, out, 'sum');
  return out;
}

/** What both solvers run a solve with: the rank's noise, phase clock and test() pacing, and the residual printer. */
export interface SolveContext {
  noise: NoiseSource | null;
  phases: Phases;
  pacer: Pacer;
  /** Called after every iteration; prints the residual history on rank 0 with --verbose. */
  progress: (iteration: number, relResidual: number) => void;
}

export function solveContext(world: Communicator, o: AppOptions): SolveContext {
  const noise = o.noise === null ? null : new NoiseSource(o.noise, world.rank);
  const verbose = o.verbose && world.rank === 0;
  return {
    noise,
    phases: new Phases(noise),
    pacer: new Pacer(o.testInterval, noise),
    progress: (it, rel) => {
      if (verbose) process.stdout.write(`iteration ${it}: relative residual ${rel.toExponential(6)}\n`);
    },
  };
}

/**
 * Runs `o.warmup` untimed solves (`solve` without the residual printer), then forgets what they
 * counted; every solve clears the phase clocks itself when it starts timing.
 */
export function warmUp(ctx: SolveContext, o: AppOptions, solve: (log: SolveContext['progress']) => void): void {
  for (let w = 0; w < o.warmup; w++) solve(() => {});
  ctx.pacer.tests = 0;
  if (ctx.noise !== null) ctx.noise.stolenMs = 0;
}

/** The ranks per node (largest node) and the number of nodes, agreed by all. */
export function placement(world: Communicator): { ppn: number; nodes: number } {
  const local = world.splitShared();
  const mine = Float64Array.of(local.size, local.rank === 0 ? 1 : 0);
  const max = new Float64Array(1);
  world.allreduce(Float64Array.of(local.size), max, 'max');
  const sum = sumAll(world, mine);
  local.free();
  return { ppn: max[0]!, nodes: sum[1]! };
}

/** Averages the phases over ranks (collective). */
export function phaseSummary(world: Communicator, phases: Phases): Record<string, PhaseTime> {
  const both = new Float64Array(2 * PHASES.length);
  both.set(phases.ms, 0);
  both.set(phases.commMs, PHASES.length);
  const sum = sumAll(world, both);
  const out: Record<string, PhaseTime> = {};
  PHASES.forEach((name, i) => {
    out[name] = { seconds: sum[i]! / world.size / 1000, commSeconds: sum[PHASES.length + i]! / world.size / 1000 };
  });
  return out;
}

const fmt = (s: number): string => (s * 1000).toFixed(s < 0.01 ? 3 : 1);

/** The report rank 0 prints: the run, Table I, the verification line. */
export function formatReport(r: AppResult): string {
  const lines: string[] = [];
  const what = r.app === 'cg' ? `CG (${r.mode} halo)` : `PCG ${r.variant}`;
  lines.push(`${what}: ${r.ranks} ranks (${r.nodes} node(s) x ${r.ppn}), process grid ${r.processGrid.join('x')}, global ${r.global.join('x')} ` +
    `(${r.unknowns} unknowns), executor ${r.executor}${r.algorithm === null ? '' : `, algorithm ${r.algorithm}`}` +
    `${r.link === null ? '' : `, link ${r.link}`}${r.noise === null ? '' : `, noise ${r.noise}`}`);
  lines.push(`iterations ${r.iterations}, final relative residual ${r.finalRelResidual.toExponential(3)}, solve ${r.solveSeconds.toFixed(4)} s, ` +
    `${r.perIterationMs.toFixed(3)} ms per iteration, matvec ${r.matvecGBs.toFixed(2)} GB/s per rank` +
    `${r.warmupSolves > 0 ? ` (timed after ${r.warmupSolves} warm-up solve${r.warmupSolves > 1 ? 's' : ''})` : ''}`);
  const t = new Table({ head: ['phase', 'ms (avg over ranks)', 'of it blocked in comm (ms)', '% of solve'], style: { head: [], border: [] } });
  const total = r.solveSeconds;
  let sum = 0;
  for (const [name, p] of Object.entries(r.phases)) {
    if (p.seconds === 0 && (name === 'gamma' || name === 'precond') && r.app === 'cg') continue;
    sum += p.seconds;
    t.push([name, fmt(p.seconds), fmt(p.commSeconds), total > 0 ? (100 * p.seconds / total).toFixed(1) : '-']);
  }
  t.push(['total (solve)', fmt(total), '', '100.0']);
  t.push(['  of it outside the phases', fmt(Math.max(0, total - sum)), '', '']);
  lines.push(t.toString());
  if (r.verification !== null) {
    const v = r.verification;
    lines.push(`verification (${v.kind}): ${v.ok ? 'ok' : 'FAILED'}: ${v.detail}`);
  } else if (r.verificationSkipped !== undefined) {
    lines.push(`verification: skipped (${r.verificationSkipped})`);
  }
  return lines.join('\n');
}

/** A Vega-Lite bar chart of one run's phases (Table I), blocked-in-communication time apart. */
export function phaseChartSpec(r: AppResult): TopLevelSpec {
  const values: Array<{ phase: string; part: string; ms: number }> = [];
  for (const [phase, p] of Object.entries(r.phases)) {
    values.push({ phase, part: 'compute', ms: (p.seconds - p.commSeconds) * 1000 });
    values.push({ phase, part: 'blocked in communication', ms: p.commSeconds * 1000 });
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: `${r.app} ${r.variant} on ${r.ranks} ranks (${r.nodes} x ${r.ppn}): ${r.iterations} iterations, ${r.perIterationMs.toFixed(2)} ms each`,
    width: 480, height: 240,
    data: { values },
    mark: 'bar',
    encoding: {
      x: { field: 'phase', type: 'nominal', sort: [...PHASES], title: 'phase' },
      y: { field: 'ms', type: 'quantitative', stack: 'zero', title: 'ms per solve (average over ranks)' },
      color: { field: 'part', type: 'nominal', title: '' },
    },
  };
}

/** Rank 0: prints the report and writes `--json` and `--chart`. */
export async function report(o: AppOptions, r: AppResult): Promise<void> {
  if (!o.quiet) process.stdout.write(formatReport(r) + '\n');
  if (o.json !== null) {
    mkdirSync(dirname(o.json), { recursive: true });
    writeFileSync(o.json, JSON.stringify(r, null, 2) + '\n');
  }
  if (o.chart !== null) {
    mkdirSync(dirname(o.chart), { recursive: true });
    await renderSpec(phaseChartSpec(r), o.chart);
  }
}
