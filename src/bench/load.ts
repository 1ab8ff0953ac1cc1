/**
 * Runs one load scenario (load-job.ts) under a deadline while sampling the resident memory of
 * every node process, for test/load.test.ts and `npm run load` (cli/load.ts) alike.
 */
import { fileURLToPath } from 'node:url';
import { launch, type LaunchResult } from '../runtime/launcher.js';
import type { TransportChoice } from '../runtime/node-main.js';
import { RssSampler, labelsOf, type RssSample } from './rss.js';

export const LOAD_JOB = fileURLToPath(new URL('./load-job.js', import.meta.url));

export interface LoadRun {
  mode: 'outstanding' | 'slow' | 'flood';
  params: object;
  ranks: number;
  ppn: number;
  transport?: TransportChoice;
  timeoutMs: number;
  /** Memory sampling period, ms. */
  sampleMs?: number;
}

export interface LoadOutcome {
  run: LoadRun;
  result: LaunchResult;
  wallMs: number;
  samples: RssSample[];
  /** Date.now() at sample t = 0. */
  epochMs: number;
  /** Per node: resident MiB at the first sample, at the peak, and peak minus first. */
  memory: Record<string, { firstMb: number; peakMb: number; growthMb: number }>;
}

export async function runLoad(run: LoadRun): Promise<LoadOutcome> {
  const sampler = new RssSampler(run.sampleMs ?? 250);
  const t0 = performance.now();
  sampler.start();
  const result = await launch(LOAD_JOB, {
    ranks: run.ranks, ppn: run.ppn, transport: run.transport, output: 'pipe', timeoutMs: run.timeoutMs,
    args: [run.mode, JSON.stringify(run.params)],
    onSpawn: (node, pid) => sampler.add(`node${node}`, pid),
  });
  const samples = sampler.stop();
  const memory: LoadOutcome['memory'] = {};
  for (const l of labelsOf(samples)) {
    const v = samples.map((s) => s.kb[l]).filter((x): x is number => x !== undefined).map((kb) => kb / 1024);
    const first = v[0] ?? 0;
    const peak = Math.max(...v);
    memory[l] = { firstMb: round1(first), peakMb: round1(peak), growthMb: round1(peak - first) };
  }
  return { run, result, wallMs: Math.round(performance.now() - t0), samples, epochMs: sampler.epochMs, memory };
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
