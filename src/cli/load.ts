#!/usr/bin/env node
/**
 * `npm run load -- [--long] [--only outstanding,slow,flood] [--trials N]`: the load scenarios
 * of the reliability suite (bench/load-job.ts), each under a deadline with every node's
 * resident memory sampled. The short forms are what test/load.test.ts runs; `--long` runs
 * the documented long forms (10^4 outstanding collectives on 100 communicators, 10^6 messages
 * between every pair). Writes bench/results/reliability/load.json.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Command } from 'commander';
import Table from 'cli-table3';
import { runLoad, type LoadRun } from '../bench/load.js';
import type { RssSample } from '../bench/rss.js';
import { ucxUnavailable } from '../runtime/node-main.js';
import { positiveInt } from './args.js';

interface Scenario extends LoadRun {
  name: string;
  /** What the run must show besides a clean exit, as a failure message, or null. */
  judge?: (results: unknown[], memory: Record<string, { peakMb: number }>) => string | null;
}

const boundedMb = 300;
/**
 * Every node under boundedMb while the receiver stood still (the stall it reports); the
 * catch-up after it holds what was sent, in the receiver's own unexpected queue, and is
 * reported apart (catchUpPeakMb).
 */
const bounded = (_: unknown[], memory: Record<string, { peakMb: number; stallPeakMb?: number }>): string | null => {
  const over = Object.entries(memory).filter(([, m]) => (m.stallPeakMb ?? m.peakMb) >= boundedMb);
  return over.length === 0 ? null : `resident memory over ${boundedMb} MB while the receiver stood still: ${over.map(([n, m]) => `${n} ${m.stallPeakMb ?? m.peakMb} MB`).join(', ')}`;
};

/** Adds, per node, the peak inside the receiver's stall and the peak after it. */
function splitAtStall(out: { samples: RssSample[]; epochMs: number; memory: Record<string, object> }, results: unknown[]): void {
  const stall = (results[0] as { stall?: [number, number] } | undefined)?.stall;
  if (stall === undefined) return;
  const from = (stall[0] - out.epochMs) / 1000;
  const to = (stall[1] - out.epochMs) / 1000;
  for (const [node, m] of Object.entries(out.memory)) {
    const peak = (keep: (t: number) => boolean): number =>
      Math.round(Math.max(0, ...out.samples.filter((s) => keep(s.t) && s.kb[node] !== undefined).map((s) => s.kb[node]! / 1024)) * 10) / 10;
    Object.assign(m, { stallPeakMb: peak((t) => t >= from && t <= to), catchUpPeakMb: peak((t) => t > to) });
  }
}

function scenarios(long: boolean, transports: Array<'tcp' | 'ucx'>): Scenario[] {
  const out: Scenario[] = [];
  for (const transport of transports) {
    out.push({
      name: `outstanding-${transport}`, mode: 'outstanding', ranks: 4, ppn: 2, transport,
      params: { total: long ? 10_000 : 1500, comms: long ? 100 : 20, seed: 16, sizes: [1, 16, 300, 3000] },
      timeoutMs: long ? 600_000 : 90_000,
    });
    out.push({
      name: `flood-${transport}`, mode: 'flood', ranks: 4, ppn: 2, transport,
      params: { count: long ? 1_000_000 : 10_000, bytes: 16, window: 64 },
      timeoutMs: long ? 3_600_000 : 90_000,
    });
  }
  const stall = long ? 30 : 4;
  for (const transport of transports) {
    out.push({
      name: `slow-compute-send64-${transport}`, mode: 'slow', ranks: 4, ppn: 2, transport,
      params: { seconds: stall, bytes: 64, receiver: 'compute', sender: 'send' }, timeoutMs: (stall + 120) * 1000, judge: bounded,
    });
    out.push({
      name: `slow-compute-isend20k-${transport}`, mode: 'slow', ranks: 4, ppn: 2, transport,
      params: { seconds: stall, bytes: 20_000, receiver: 'compute', sender: 'isend', window: 64 }, timeoutMs: (stall + 120) * 1000, judge: bounded,
    });
    out.push({
      name: `slow-blocked-isend64-${transport}`, mode: 'slow', ranks: 4, ppn: 2, transport,
      params: { seconds: stall, bytes: 64, receiver: 'blocked', sender: 'isend', window: 64 }, timeoutMs: (stall + 120) * 1000, judge: bounded,
    });
  }
  return out;
}

const program = new Command('load')
  .description('the load scenarios of the reliability suite, with resident memory sampled')
  .option('--long', 'the long forms (10^4 outstanding on 100 communicators, 10^6 messages per pair, 30 s stalls)')
  .option('--only <list>', 'scenario names or prefixes, comma-separated (outstanding, flood, slow, ...)')
  .option('--trials <n>', 'runs of each scenario', positiveInt, 1)
  .option('--transports <list>', 'tcp, ucx (default: both where UCX is available)')
  .option('--json <file>', 'where to write the results (runs of other scenarios already there are kept)', 'bench/results/reliability/load.json')
  .parse();
const o = program.opts<{ long?: boolean; only?: string; trials: number; transports?: string; json: string }>();

const transports = (o.transports?.split(',') ?? (ucxUnavailable() === null ? ['tcp', 'ucx'] : ['tcp'])) as Array<'tcp' | 'ucx'>;
const only = o.only?.split(',').filter(Boolean);
const chosen = scenarios(o.long === true, transports).filter((s) => only === undefined || only.some((p) => s.name.startsWith(p)));

interface Row { scenario: string; trial: number }
/** Runs of scenarios this invocation does not run stay in the file: long forms are run a few at a time. */
const kept: Row[] = existsSync(o.json)
  ? (JSON.parse(readFileSync(o.json, 'utf8')) as { runs: Row[] }).runs.filter((r) => !chosen.some((s) => s.name === r.scenario))
  : [];
const rows: Row[] = [];
/** Written after every run, so a long series that is stopped keeps what it measured. */
const save = (): void => {
  mkdirSync(dirname(o.json), { recursive: true });
  const all = [...kept, ...rows].sort((a, b) => a.scenario.localeCompare(b.scenario) || a.trial - b.trial);
  writeFileSync(o.json, `${JSON.stringify({ updated: new Date().toISOString(), runs: all }, null, 1)}\n`);
};
const table = new Table({ style: { head: [], border: [] }, head: ['scenario', 'trial', 'ok', 'wall s', 'peak MB by node', 'notes'] });
let failures = 0;
for (const s of chosen) {
  for (let trial = 1; trial <= o.trials; trial++) {
    process.stdout.write(`load: ${s.name} trial ${trial}/${o.trials} ... `);
    const out = await runLoad(s);
    const results = out.result.ranks.map((r) => r.result);
    splitAtStall(out, results);
    const verdict = out.result.exitCode !== 0 ? `exit ${out.result.exitCode}: ${out.result.failure}` : s.judge?.(results, out.memory) ?? null;
    if (verdict !== null) failures++;
    console.log(verdict === null ? `ok (${(out.wallMs / 1000).toFixed(1)} s)` : `FAILED: ${verdict}`);
    if (out.result.exitCode !== 0) console.log(out.result.stderr.slice(-2000));
    const peaks = Object.entries(out.memory).map(([n, m]) => `${n} ${m.peakMb}`).join(', ');
    table.push([s.name, trial, verdict === null ? 'yes' : 'NO', (out.wallMs / 1000).toFixed(1), peaks, verdict ?? '']);
    rows.push({
      scenario: s.name, trial, command: `npm run load -- ${o.long === true ? '--long ' : ''}--only ${s.name}`, date: new Date().toISOString(), ok: verdict === null, failure: verdict, mode: s.mode, params: s.params, ranks: s.ranks, ppn: s.ppn,
      transport: s.transport, deadlineMs: s.timeoutMs, wallMs: out.wallMs, memory: out.memory, results,
      rss: out.samples.map((x) => ({ t: Math.round(x.t * 10) / 10, mb: Object.fromEntries(Object.entries(x.kb).map(([k, v]) => [k, Math.round(v / 102.4) / 10])) })),
    } as Row);
    save();
  }
}
console.log(table.toString());
console.log(`load: wrote ${o.json}; ${failures} failed run(s)`);
process.exitCode = failures === 0 ? 0 : 1;
