/**
 * The arithmetic of nbcbench, kept pure so it can be tested on synthetic timings
 * (PERFORMANCE.md: NBCBench rules plus OSU's overlap figure).
 *
 * Per iteration every rank records its own times; the job takes, per field, the maximum over
 * ranks (the slowest rank decides the parallel run time), then the requested statistic over
 * iterations (median by default).
 */
import { NbcArgError } from '../errors.js';

export type Stat = 'median' | 'min' | 'max' | 'avg';
export const STATS: readonly Stat[] = ['median', 'min', 'max', 'avg'];

/** The statistic `stat` of `xs` (which must not be empty). */
export function statOf(xs: ArrayLike<number>, stat: Stat): number {
  const n = xs.length;
  if (n === 0) throw new NbcArgError(`Cannot take the ${stat} of no samples: expected at least one iteration`);
  if (stat === 'avg') {
    let s = 0;
    for (let i = 0; i < n; i++) s += xs[i]!;
    return s / n;
  }
  if (stat === 'min' || stat === 'max') {
    let m = xs[0]!;
    for (let i = 1; i < n; i++) m = stat === 'min' ? Math.min(m, xs[i]!) : Math.max(m, xs[i]!);
    return m;
  }
  const sorted = Array.from(xs).sort((a, b) => a - b);
  const mid = n >> 1;
  return n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * OSU overlap: how much of the pure communication time disappeared behind the computation.
 * `100 * (1 - (overall - compute) / pure)`, clamped to 0..100 (timing noise can push the raw
 * value past either end). A zero pure time means there was nothing to hide: 100 when the
 * overall time is no longer than the compute, else 0.
 */
export function overlapPct(overallUs: number, computeUs: number, pureUs: number): number {
  if (!(pureUs > 0)) return overallUs <= computeUs ? 100 : 0;
  const raw = 100 * (1 - (overallUs - computeUs) / pureUs);
  return Math.min(100, Math.max(0, raw));
}

/** Per-iteration times of one rank for a non-blocking operation, in microseconds. */
export interface NbTimes {
  /** The op alone: start .. wait returns. */
  pure: Float64Array;
  /** With compute: time in the initiating call, in test() calls, in wait(), start .. end, and compute. */
  init: Float64Array;
  test: Float64Array;
  wait: Float64Array;
  overall: Float64Array;
  compute: Float64Array;
}

export interface NbSummary {
  latencyUs: number;
  pureUs: number;
  initUs: number;
  testUs: number;
  waitUs: number;
  overheadUs: number;
  overallUs: number;
  computeUs: number;
  overlapPct: number;
}

/**
 * Summarises per-iteration times that are already the maximum over ranks. Overhead is the
 * time the rank spent inside the library: initiating call + test() calls + wait().
 */
export function summarizeNb(t: NbTimes, stat: Stat): NbSummary {
  const pureUs = statOf(t.pure, stat);
  const initUs = statOf(t.init, stat);
  const testUs = statOf(t.test, stat);
  const waitUs = statOf(t.wait, stat);
  const overallUs = statOf(t.overall, stat);
  const computeUs = statOf(t.compute, stat);
  return {
    latencyUs: pureUs, pureUs, initUs, testUs, waitUs, overheadUs: initUs + testUs + waitUs,
    overallUs, computeUs, overlapPct: overlapPct(overallUs, computeUs, pureUs),
  };
}

/** `--test-interval`: none, every N microseconds of compute, or every N bytes of compute data. */
export type TestInterval = { kind: 'none' } | { kind: 'time'; us: number } | { kind: 'bytes'; bytes: number };

const TIME_UNITS: Record<string, number> = { ns: 1e-3, us: 1, ms: 1e3, s: 1e6 };
const BYTE_UNITS: Record<string, number> = { b: 1, k: 1024, kb: 1024, kib: 1024, m: 1 << 20, mb: 1 << 20, mib: 1 << 20 };

export function parseTestInterval(text: string): TestInterval {
  const m = /^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$/.exec(text);
  const bad = (): NbcArgError => new NbcArgError(
    `Cannot parse --test-interval '${text}': expected 0 (no test() calls), a time such as 10us or 1ms, or a size such as 64KiB (data processed by --compute dgemm)`);
  if (m === null) throw bad();
  const n = Number(m[1]);
  const unit = m[2]!.toLowerCase();
  if (n === 0) return { kind: 'none' };
  if (unit === '' || TIME_UNITS[unit] !== undefined) return { kind: 'time', us: n * (TIME_UNITS[unit || 'us'] ?? 1) };
  if (BYTE_UNITS[unit] !== undefined) return { kind: 'bytes', bytes: Math.round(n * BYTE_UNITS[unit]!) };
  throw bad();
}

/** A duration such as 500ms, 0.5s or 200us (no unit: microseconds), in milliseconds. */
export function parseDurationMs(option: string, text: string): number {
  const m = /^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$/.exec(text);
  const us = m === null ? undefined : TIME_UNITS[m[2]!.toLowerCase() || 'us'];
  if (m === null || us === undefined) {
    throw new NbcArgError(`Cannot parse ${option} '${text}': expected a duration such as 500ms, 0.5s or 0`);
  }
  return (Number(m[1]) * us) / 1000;
}

/** `--noise DURATION@FREQ`, e.g. 100us@1kHz: every 1/FREQ, DURATION of stolen CPU time. */
export interface Noise {
  durationUs: number;
  periodUs: number;
}

export function parseNoise(text: string): Noise {
  const m = /^\s*([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)\s*@\s*([0-9]*\.?[0-9]+)\s*(hz|khz|mhz)\s*$/i.exec(text);
  if (m === null) {
    throw new NbcArgError(`Cannot parse --noise '${text}': expected DURATION@FREQUENCY, e.g. 100us@1kHz`);
  }
  const durationUs = Number(m[1]) * TIME_UNITS[m[2]!.toLowerCase()]!;
  const hz = Number(m[3]) * ({ hz: 1, khz: 1e3, mhz: 1e6 } as Record<string, number>)[m[4]!.toLowerCase()]!;
  const periodUs = 1e6 / hz;
  if (!(durationUs > 0) || !(periodUs > durationUs)) {
    throw new NbcArgError(`Cannot use --noise '${text}': the duration must be positive and shorter than the period (${periodUs.toFixed(1)} us)`);
  }
  return { durationUs, periodUs };
}
