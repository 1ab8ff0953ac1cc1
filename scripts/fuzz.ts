/**
 * `npm run fuzz -- --runs N --live N [--seed S] [--only NAME] [--out FILE]`: the long forms of
 * the reliability suite's fuzzing (docs/reliability.md, "Fuzzing").
 *
 * 1. Every in-process target of test/fuzz/targets.ts, N runs each from seed S.
 * 2. A live job (4 ranks on 2 nodes, with a private aggregation fabric of radix 2 and 2 levels)
 *    running verified collectives while N fuzzed connections are opened to each of its TCP
 *    listeners (test/fuzz/live.ts). `--live 0` skips it.
 *
 * Writes bench/results/reliability/fuzz.json: per parser runs, failures, seconds; per live
 * listener connections, failures; and prints a summary. Exits 1 when anything failed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Command } from 'commander';
import { TARGETS, runTarget } from '../test/fuzz/targets.ts';
import { liveFuzz } from '../test/fuzz/live.ts';

const program = new Command()
  .name('fuzz')
  .description('Long-form fuzzing of every parser that reads bytes from outside a process')
  .option('--runs <n>', 'runs per in-process target', (v) => Number(v), 100_000)
  .option('--live <n>', 'fuzzed connections per live listener (0: no live job)', (v) => Number(v), 10_000)
  .option('--seed <s>', 'seed (default: random)', (v) => Number(v))
  .option('--only <name>', 'in-process targets whose name contains this (live runs only when it matches "live")')
  .option('--out <file>', 'where to write the results', 'bench/results/reliability/fuzz.json')
  .parse();

const o = program.opts<{ runs: number; live: number; seed?: number; only?: string; out: string }>();
for (const [name, v] of [['--runs', o.runs], ['--live', o.live]] as const) {
  if (!Number.isInteger(v) || v < 0) program.error(`${name} ${v} is not an integer >= 0`);
}
const seed = o.seed ?? Math.floor(Math.random() * 0x7fff_ffff);
console.log(`fuzz: ${o.runs} runs per parser, ${o.live} connections per live listener, seed ${seed}`);

const parsers: Record<string, { runs: number; failures: number; seconds: number; failure?: string }> = {};
let failed = false;
for (const t of TARGETS) {
  if (o.only !== undefined && !t.name.includes(o.only)) continue;
  if (o.runs === 0) break;
  const r = await runTarget(t, o.runs, seed);
  parsers[t.name] = r;
  failed ||= r.failures > 0;
  console.log(`  ${t.name}: ${r.runs} runs, ${r.failures} failures, ${r.seconds.toFixed(1)} s${r.failure ? `\n    ${r.failure}` : ''}`);
}

let live: Awaited<ReturnType<typeof liveFuzz>> | null = null;
if (o.live > 0 && (o.only === undefined || 'live'.includes(o.only))) {
  live = await liveFuzz({ connections: o.live, seed, log: (l) => console.log(`  ${l}`) });
  failed ||= !live.ok;
  for (const l of live.listeners) {
    console.log(`  live ${l.name} (${l.address}): ${l.connections} connections, ${l.failures} failures, ${l.logged} logged rejections`);
  }
  console.log(`  live job: exit ${live.job.exitCode}, ${live.job.iterations} verified iterations per rank, ${live.job.mismatches} mismatches, ${live.seconds.toFixed(1)} s`);
  for (const p of live.problems) console.log(`  problem: ${p}`);
}

mkdirSync(dirname(o.out), { recursive: true });
writeFileSync(o.out, JSON.stringify({
  command: `npm run fuzz -- --runs ${o.runs} --live ${o.live} --seed ${seed}`,
  date: new Date().toISOString(), node: process.version, seed, parsers,
  live: live === null ? null : {
    seconds: live.seconds, job: live.job,
    listeners: Object.fromEntries(live.listeners.map((l) => [l.name, { address: l.address, connections: l.connections, failures: l.failures, logged: l.logged, kinds: l.kinds }])),
    problems: live.problems,
  },
}, null, 2) + '\n');
console.log(`fuzz: wrote ${o.out}; ${failed ? 'FAILURES' : 'no failures'}`);
process.exit(failed ? 1 : 0);
