// Summary of scripts/bench-first-calls.sh: per side, the median over rounds of each bucket's
// median (us per 8 B allreduce, or one way for plain Node TCP), and the CG's ms per iteration
// after K warm-up solves; a chart in docs/img/first-calls.svg.
import { readFileSync } from 'node:fs';
import { renderSpec } from '../dist/bench/chart.js';

const [dir, roundsArg, sidesArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const sides = [...sidesArg.split(' '), 'node-tcp'];
const load = (name) => JSON.parse(readFileSync(`${dir}/${name}.json`, 'utf8'));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[(s.length - 1) >> 1]; };
const each = (f) => Array.from({ length: rounds }, (_, i) => f(i + 1));
const what = {
  tcp: 'allreduce, TCP', 'tcp-eager': 'allreduce, TCP, V8 tiers up early', 'tcp-noopt': 'allreduce, TCP, --no-opt',
  ucx: 'allreduce, UCX', 'node-tcp': 'plain Node TCP ping-pong, one way',
};

const first = load(`loop-${sides[0]}-r1`);
const buckets = first.medians.length;
console.log(`${rounds} interleaved rounds, each side a fresh job: median over rounds of the median of each ${first.bucket} calls (us)\n`);
console.log(`| side | ${Array.from({ length: buckets }, (_, b) => `calls ${b * first.bucket + 1}-${(b + 1) * first.bucket}`).join(' | ')} | first / last |`);
console.log(`|---|${'---|'.repeat(buckets + 1)}`);
const chart = [];
for (const s of sides) {
  const runs = each((r) => load(s === 'node-tcp' ? `node-tcp-r${r}` : `loop-${s}-r${r}`).medians);
  const m = Array.from({ length: buckets }, (_, b) => median(runs.map((x) => x[b])));
  console.log(`| ${what[s]} | ${m.map((x) => x.toFixed(0)).join(' | ')} | ${(m[0] / m[buckets - 1]).toFixed(1)}x |`);
  m.forEach((us, b) => chart.push({ side: what[s], calls: (b + 1) * first.bucket, us }));
}
console.log('\nnbc cg, 2 nodes x 1 rank, emulated GigE, 40^3 per rank, blocking halo: ms per iteration of the solve timed after K warm-up solves');
console.log('\n| K | rounds | median | phases (median): halo / inner products / matvec / axpy |\n|---|---|---|---|');
for (const k of [0, 2, 5, 10]) {
  const runs = each((r) => load(`cg-w${k}-r${r}`));
  const per = (f) => median(runs.map(f)).toFixed(3);
  const ph = (p) => (r) => (r.phases[p].seconds * 1000) / r.iterations;
  console.log(`| ${k} | ${runs.map((r) => r.perIterationMs.toFixed(2)).join(' / ')} | **${per((r) => r.perIterationMs)}** | ` +
    `${per(ph('halo'))} / ${per((r) => ph('sdotp')(r) + ph('iprod')(r))} / ${per(ph('matvec'))} / ${per(ph('axpy'))} |`);
}
await renderSpec({
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title: 'A fresh job: 8 B allreduce on 2 nodes, median per 1000 calls',
  width: 480, height: 260,
  data: { values: chart },
  mark: { type: 'line', point: true },
  encoding: {
    x: { field: 'calls', type: 'quantitative', title: 'calls since the job started' },
    y: { field: 'us', type: 'quantitative', scale: { type: 'log' }, title: 'us per call (median of 1000)' },
    color: { field: 'side', type: 'nominal', title: '', legend: { labelLimit: 400, orient: 'bottom', columns: 2 } },
  },
}, 'docs/img/first-calls.svg');
