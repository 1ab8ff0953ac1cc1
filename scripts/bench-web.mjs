#!/usr/bin/env node
/**
 * `npm run bench:web`: the same job (scripts/web-bench-job.mjs) on Node, Bun and Deno (`nbc
 * run --runtime`, one node) and in headless Chromium and Firefox (`nbc web`, Web Workers), rounds
 * interleaved: barrier and 8 B allreduce latency, 8 MiB allreduce bandwidth, on 4 ranks (the
 * issue's figure; 2 cores here, so crowded) and on 2 (a core each). Medians over ROUNDS
 * (default 3); the ratio to Node's in the same run.
 *
 * Writes bench/results/web/ (OUT): summary.json, summary.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { launch } from '../dist/index.js';
import { chromiumPath, firefoxPath, runHeadless, serveWeb } from '../dist/runtime/web-server.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = process.env.OUT ?? `${ROOT}bench/results/web`;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const JOB = `${ROOT}scripts/web-bench-job.mjs`;
// Firefox where it is installed (Debian's firefox-esr). 'node-no-addon' is Node without the
// native addon, so without the sched_yield a crowded rank hands its core over with: the wait a
// Web Worker is left with (docs/web.md, "Waiting").
const RUNTIMES = ['node', 'node-no-addon', 'bun', 'deno', 'chromium', ...(firefoxPath() === null ? [] : ['firefox'])];
mkdirSync(OUT, { recursive: true });
if (chromiumPath() === null) throw new Error('bench:web needs Chromium (apt-get install chromium, or NBC_CHROMIUM=<path>)');

async function once(runtime, ranks) {
  if (runtime === 'chromium' || runtime === 'firefox') {
    const server = await serveWeb({ job: JOB, ranks, timeoutMs: 300_000, onOutput: () => {} });
    try {
      const end = await runHeadless(server, { browser: runtime });
      if (!end.ok) throw new Error(`${runtime}, ${ranks} ranks: ${end.message}`);
      return end.results[0];
    } finally {
      await server.close();
    }
  }
  const noAddon = runtime === 'node-no-addon';
  const r = await launch(JOB, {
    ranks, ppn: ranks, runtime: noAddon ? 'node' : runtime, output: 'pipe', timeoutMs: 300_000, env: noAddon ? { NBC_NO_NATIVE: '1' } : undefined,
  });
  if (r.exitCode !== 0) throw new Error(`${runtime}, ${ranks} ranks: ${r.failure}\n${r.stderr}`);
  return r.ranks[0].result;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];
const rows = [];
for (const ranks of [4, 2]) {
  const seen = Object.fromEntries(RUNTIMES.map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // A different order each round, so no runtime always follows the same one.
    const order = RUNTIMES.map((_, i) => RUNTIMES[(i + round) % RUNTIMES.length]);
    for (const rt of order) {
      seen[rt].push(await once(rt, ranks));
      process.stderr.write(`  ${ranks} ranks, round ${round + 1}: ${rt} ${JSON.stringify(seen[rt].at(-1))}\n`);
    }
  }
  for (const rt of RUNTIMES) {
    const m = (k) => median(seen[rt].map((x) => x[k]));
    rows.push({ ranks, runtime: rt, barrierUs: m('barrierUs'), allreduce8Us: m('allreduce8Us'), allreduce8MiBGBs: m('allreduce8MiBGBs'), rounds: seen[rt] });
  }
}
const node = (ranks) => rows.find((r) => r.ranks === ranks && r.runtime === 'node');
for (const r of rows) {
  const n = node(r.ranks);
  r.vsNode = { barrier: r.barrierUs / n.barrierUs, allreduce8: r.allreduce8Us / n.allreduce8Us, bandwidth: r.allreduce8MiBGBs / n.allreduce8MiBGBs };
}
const c = cpus();
const summary = { command: 'npm run bench:web', rounds: ROUNDS, machine: { cpu: c[0]?.model, cores: c.length, node: process.version }, date: new Date().toISOString(), rows };
writeFileSync(`${OUT}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
const md = [
  '# One job on Node, Bun, Deno and in Chromium and Firefox (`npm run bench:web`)',
  '',
  `${summary.machine.cpu}, ${summary.machine.cores} cores, Node ${summary.machine.node}; medians of ${ROUNDS} interleaved rounds; ${summary.date}.`,
  'Each figure is the slowest rank\'s: barrier and 8 B allreduce in batches of 100 calls after 500 warm-up calls, 8 MiB allreduce the median of 20 calls after 30 warm-up calls; node-no-addon: Node without the addon\'s sched_yield.',
  '',
  '| ranks (one node) | runtime | barrier us | x Node | allreduce 8 B us | x Node | allreduce 8 MiB GB/s | of Node |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.ranks} | ${r.runtime} | ${r.barrierUs.toFixed(2)} | ${r.vsNode.barrier.toFixed(2)}x | ${r.allreduce8Us.toFixed(2)} | ${r.vsNode.allreduce8.toFixed(2)}x | ` +
    `${r.allreduce8MiBGBs.toFixed(3)} | ${(100 * r.vsNode.bandwidth).toFixed(0)} % |`),
  '',
];
writeFileSync(`${OUT}/summary.md`, md.join('\n'));
process.stdout.write(md.join('\n'));
