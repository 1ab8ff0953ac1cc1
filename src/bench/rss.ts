/**
 * Resident memory of a job's processes over time, for the reliability tools (soak, load):
 * `RssSampler` reads VmRSS from /proc/<pid>/status of every process it is given, every
 * `intervalMs`; `slopeMbPerHour` fits a least-squares line through the samples after a
 * warm-up, the figure a soak is judged by (flat: near zero).
 */
import { readFileSync } from 'node:fs';

/** One reading: seconds since sampling began, and resident KiB by pid (absent: gone). */
export interface RssSample {
  t: number;
  kb: Record<string, number>;
}

/** VmRSS of `pid` in KiB, or null when the process is gone (or /proc is not there). */
export function readRssKb(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? null : Number(m[1]);
  } catch {
    return null;
  }
}

export class RssSampler {
  readonly samples: RssSample[] = [];
  private readonly pids = new Map<number, string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly t0 = performance.now();
  /** Date.now() when sampling began: sample `t` is seconds after it. */
  readonly epochMs = Date.now();

  constructor(private readonly intervalMs: number, private readonly read: (pid: number) => number | null = readRssKb) {}

  /** Samples `pid` from now on, under `label` (e.g. 'node0'). */
  add(label: string, pid: number): void {
    this.pids.set(pid, label);
  }

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    return this;
  }

  /** Takes one sample now (also the last one, from stop). */
  sample(): void {
    const kb: Record<string, number> = {};
    for (const [pid, label] of this.pids) {
      const v = this.read(pid);
      if (v !== null && v > 0) kb[label] = v; // 0: the process is still being set up
    }
    if (Object.keys(kb).length > 0) this.samples.push({ t: (performance.now() - this.t0) / 1000, kb });
  }

  stop(): RssSample[] {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    return this.samples;
  }
}

/** The labels that appear in any sample, sorted. */
export function labelsOf(samples: readonly RssSample[]): string[] {
  const s = new Set<string>();
  for (const x of samples) for (const k of Object.keys(x.kb)) s.add(k);
  return [...s].sort();
}

/**
 * Least-squares slope of `label`'s resident memory (or the total over labels present in every
 * sample when `label` is omitted) in MB per hour, over the samples at or after `warmupS`
 * seconds. NaN with fewer than two such samples.
 */
export function slopeMbPerHour(samples: readonly RssSample[], warmupS: number, label?: string): number {
  const labels = label === undefined ? labelsOf(samples) : [label];
  const xs: number[] = [];
  const ys: number[] = [];
  for (const s of samples) {
    if (s.t < warmupS || labels.some((l) => s.kb[l] === undefined)) continue;
    xs.push(s.t);
    ys.push(labels.reduce((acc, l) => acc + s.kb[l]!, 0));
  }
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  if (sxx === 0) return NaN;
  const kbPerS = sxy / sxx;
  return (kbPerS * 3600) / 1024;
}

/** Summary of one label (or the total): first, last and peak MiB, after the warm-up too. */
export interface RssSummary {
  label: string;
  firstMb: number;
  afterWarmupMb: number;
  lastMb: number;
  peakMb: number;
  slopeMbPerHour: number;
}

export function summarize(samples: readonly RssSample[], warmupS: number): RssSummary[] {
  const total = (s: RssSample, labels: string[]): number => labels.reduce((a, l) => a + (s.kb[l] ?? 0), 0);
  const labels = labelsOf(samples);
  const rows = [...labels.map((l) => [l, [l]] as const), ['total', labels] as const];
  return rows.map(([label, ls]) => {
    const vals = samples.map((s) => total(s, [...ls]) / 1024);
    const after = samples.findIndex((s) => s.t >= warmupS);
    return {
      label,
      firstMb: round1(vals[0] ?? NaN),
      afterWarmupMb: round1(after >= 0 ? vals[after]! : NaN),
      lastMb: round1(vals[vals.length - 1] ?? NaN),
      peakMb: round1(Math.max(...vals)),
      slopeMbPerHour: round1(slopeMbPerHour(samples, warmupS, label === 'total' ? undefined : label)),
    };
  });
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
