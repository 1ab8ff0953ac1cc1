#!/usr/bin/env node
/**
 * `npm run soak -- --minutes N`: runs the soak job (bench/soak-job.ts) for N minutes, on each
 * transport in turn (TCP, then UCX where the addon has it, the time split between them),
 * sampling the resident memory of every node process every few seconds. Writes
 * bench/results/reliability/soak.json and a chart of memory over time, and prints each
 * node's slope after the warm-up in MB/hour: a job that leaks shows a slope, one that does
 * not stays flat.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import Table from 'cli-table3';
import type { TopLevelSpec } from 'vega-lite';
import { renderSpec } from '../bench/chart.js';
import { RssSampler, summarize, type RssSample, type RssSummary } from '../bench/rss.js';
import type { SoakJobArgs, SoakJobResult } from '../bench/soak-job.js';
import { launch } from '../runtime/launcher.js';
import { ucxUnavailable } from '../runtime/node-main.js';
import { positiveInt } from './args.js';

const JOB = fileURLToPath(new URL('../bench/soak-job.js', import.meta.url));

interface Segment {
  transport: 'tcp' | 'ucx';
  seconds: number;
  exitCode: number;
  failure: string | null;
  result: SoakJobResult | null;
  warmupS: number;
  samples: RssSample[];
  summary: RssSummary[];
}

const positiveNumber = (v: string): number => {
  const n = Number(v);
  if (!(n > 0)) throw new InvalidArgumentError(`expected a positive number, got '${v}'`);
  return n;
};
const list = (v: string): string[] => v.split(',').filter(Boolean);

const program = new Command('soak')
  .description('every collective on every executor for N minutes; resident memory of every node sampled')
  .option('--minutes <n>', 'how long in all', positiveNumber, 60)
  .option('-n, --ranks <n>', 'ranks', positiveInt, 4)
  .option('--ppn <n>', 'ranks per node', positiveInt, 2)
  .option('--interval <s>', 'seconds between memory samples', positiveNumber, 5)
  .option('--warmup <s>', 'seconds left out of the slope (default: a tenth of each segment, at least 30)', positiveNumber)
  .option('--sizes <list>', 'Int32 elements per rank, cycled', '1,100,3000,40000')
  .option('--rest-ms <ms>', 'every rank rests this long after each cycle (to share a crowded machine)', Number, 0)
  .option('--variants <list>', 'executor variants: host, offload, hier, agg', 'host,offload,hier')
  .option('--transports <list>', 'tcp, ucx (default: both where UCX is available)')
  .option('--json <file>', 'where to write the results', 'bench/results/reliability/soak.json')
  .option('--chart <file>', 'chart of memory over time (.svg or .png)', 'bench/results/reliability/soak.svg')
  .parse();

const o = program.opts<{
  minutes: number; ranks: number; ppn: number; interval: number; warmup?: number; sizes: string;
  variants: string; restMs: number; transports?: string; json: string; chart: string;
}>();

const transports = (o.transports !== undefined ? list(o.transports) : ucxUnavailable() === null ? ['tcp', 'ucx'] : ['tcp']) as Array<'tcp' | 'ucx'>;
const perSegment = (o.minutes * 60) / transports.length;
const segments: Segment[] = [];

for (const transport of transports) {
  const warmupS = o.warmup ?? Math.max(30, perSegment / 10);
  const sampler = new RssSampler(o.interval * 1000);
  const args: SoakJobArgs = {
    seconds: perSegment, sizes: list(o.sizes).map(Number), variants: list(o.variants), reportSeconds: 60, restMs: o.restMs,
  };
  console.log(`soak: ${transport}, ${o.ranks} ranks on ${Math.ceil(o.ranks / o.ppn)} nodes, ${Math.round(perSegment)} s, variants ${args.variants.join(', ')}`);
  sampler.start();
  const r = await launch(JOB, {
    ranks: o.ranks, ppn: o.ppn, transport, args: [JSON.stringify(args)], output: 'inherit',
    timeoutMs: (perSegment + 300) * 1000,
    onSpawn: (node, pid) => sampler.add(`node${node}`, pid),
  });
  const samples = sampler.stop();
  const seg: Segment = {
    transport, seconds: perSegment, exitCode: r.exitCode, failure: r.failure,
    result: (r.ranks[0]?.result as SoakJobResult | undefined) ?? null,
    warmupS, samples, summary: summarize(samples, warmupS),
  };
  segments.push(seg);
  const t = new Table({ style: { head: [], border: [] }, head: ['process', 'first MB', 'after warm-up MB', 'last MB', 'peak MB', 'slope MB/h'] });
  for (const s of seg.summary) t.push([s.label, s.firstMb, s.afterWarmupMb, s.lastMb, s.peakMb, s.slopeMbPerHour]);
  console.log(t.toString());
  if (seg.result !== null) {
    console.log(`soak: ${transport}: ${seg.result.cycles} cycles, ${seg.result.calls} collective calls checked, ` +
      `${seg.result.commsCreated} communicators created and freed; refused: ${Object.keys(seg.result.refused).join(', ') || 'none'}`);
  }
  if (r.exitCode !== 0) console.error(`soak: ${transport}: the job failed (exit ${r.exitCode}): ${r.failure}`);
}

mkdirSync(dirname(o.json), { recursive: true });
writeFileSync(o.json, `${JSON.stringify({
  command: `npm run soak -- ${process.argv.slice(2).join(' ')}`.trim(),
  date: new Date().toISOString(),
  ranks: o.ranks, ppn: o.ppn, minutes: o.minutes, intervalS: o.interval,
  segments,
}, null, 1)}\n`);
console.log(`soak: wrote ${o.json}`);

const points = segments.flatMap((seg, k) => {
  const offset = segments.slice(0, k).reduce((a, s) => a + (s.samples.at(-1)?.t ?? 0), 0);
  return seg.samples.flatMap((s) => Object.entries(s.kb).map(([label, kb]) => ({
    minutes: (offset + s.t) / 60, mb: kb / 1024, process: `${label} (${seg.transport})`,
  })));
});
const spec: TopLevelSpec = {
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title: `soak: resident memory of each node process (${o.ranks} ranks, ${Math.ceil(o.ranks / o.ppn)} nodes)`,
  width: 640, height: 360,
  config: { font: 'DejaVu Sans' },
  data: { values: points },
  mark: { type: 'line', point: false },
  encoding: {
    x: { field: 'minutes', type: 'quantitative', title: 'minutes' },
    y: { field: 'mb', type: 'quantitative', title: 'resident memory (MiB)', scale: { zero: true } },
    color: { field: 'process', type: 'nominal' },
  },
};
await renderSpec(spec, o.chart);
console.log(`soak: wrote ${o.chart}`);
process.exitCode = segments.every((s) => s.exitCode === 0) ? 0 : 1;
