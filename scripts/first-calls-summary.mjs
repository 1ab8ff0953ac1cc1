// Summary of scripts/bench-first-calls.sh: per side, the median over rounds of each 100-call
// bucket's median (us per 8 B allreduce, or one way for plain Node TCP), shown for calls 1-100,
// 101-1000 and then per 1000; the calls until warm: the first bucket from which the median of
// every 5 consecutive buckets is within 1.2x of the warm speed of its layout (the fastest last
// 1000 calls among the sides of the same layout: TCP, 4 ranks of one node, UCX); and the CG's ms
// per iteration after K warm-up solves. A chart in docs/img/first-calls.svg.
import { readFileSync } from 'node:fs';
import { renderSpec } from '../dist/bench/chart.js';

const [dir, roundsArg, sidesArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const sides = [...sidesArg.split(' '), 'node-tcp'];
const load = (name) => JSON.parse(readFileSync(`${dir}/${name}.json`, 'utf8'));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[(s.length - 1) >> 1]; };
const each = (f) => Array.from({ length: rounds }, (_, i) => f(i + 1));
const what = {
  tcp: 'allreduce, 2 nodes x 1, TCP', ucx: 'allreduce, 2 nodes x 1, UCX', 'ucx-helpers': 'the same, V8 helper threads kept (before)',
  'ucx-trained': 'the same, NBC_TRAIN=300', shm4: 'allreduce, 4 ranks of one node (2 cores)', 'shm4-rings': 'the same on the rings (NBC_FLAT=0)', 'shm4-helpers': 'the same, V8 helper threads kept (before)',
  'shm4-trained': 'the same, NBC_TRAIN=300', 'node-tcp': 'plain Node TCP ping-pong, one way (the peer)',
};
const WARM = 1.2;
const WINDOW = 5;

const first = load(`loop-${sides[0]}-r1`);
const bucket = first.bucket;
const buckets = first.medians.length;
const perThousand = 1000 / bucket;
// columns: calls 1-100, 101-1000, then each further 1000 (medians of the 100-call medians)
const cols = [{ label: `1-${bucket}`, from: 0, to: 1 }, { label: `${bucket + 1}-1000`, from: 1, to: perThousand }];
for (let k = perThousand; k < buckets; k += perThousand) cols.push({ label: `${k * bucket + 1}-${(k + perThousand) * bucket}`, from: k, to: k + perThousand });
console.log(`${rounds} interleaved rounds, each side a fresh job: median over rounds of the median of each ${bucket} calls (us)\n`);
console.log(`| side | ${cols.map((c) => `calls ${c.label}`).join(' | ')} | first 100 / last 1000 | calls until warm (every ${WINDOW * bucket} calls from there within ${WARM}x of the layout's fastest last 1000) |`);
console.log(`|---|${'---|'.repeat(cols.length + 2)}`);
const chart = [];
const layoutOf = (side) => side.split('-')[0];
const series = {};
for (const s of sides) {
  const runs = each((r) => load(s === 'node-tcp' ? `node-tcp-r${r}` : `loop-${s}-r${r}`).medians);
  const m = Array.from({ length: buckets }, (_, b) => median(runs.map((x) => x[b])));
  series[s] = { m, col: cols.map((c) => median(m.slice(c.from, c.to))) };
}
for (const s of sides) {
  const { m, col } = series[s];
  const last = col[col.length - 1];
  // the layout's warm speed: the fastest last 1000 among its sides
  const warm = Math.min(...sides.filter((x) => layoutOf(x) === layoutOf(s)).map((x) => series[x].col.at(-1)));
  // Warm from the first bucket after which every window of WINDOW buckets has its median within
  // WARM x that speed: a single noisy bucket (this VM drifts) does not reset the count.
  const win = (b) => median(m.slice(b, b + WINDOW));
  let warmFrom = null;
  for (let b = buckets - WINDOW; b >= 0 && win(b) <= WARM * warm; b--) warmFrom = b;
  console.log(`| ${what[s]} | ${col.map((x) => x.toFixed(1)).join(' | ')} | ${(col[0] / last).toFixed(1)}x | ${warmFrom === null ? `not within 8000 (${warm.toFixed(1)} us)` : `${warmFrom * bucket} (${warm.toFixed(1)} us)`} |`);
  m.forEach((us, b) => chart.push({ side: what[s], calls: (b + 1) * bucket, us }));
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
  title: 'A fresh job: 8 B allreduce, median per 100 calls',
  width: 480, height: 260,
  data: { values: chart },
  mark: { type: 'line', point: true },
  encoding: {
    x: { field: 'calls', type: 'quantitative', title: 'calls since the job started' },
    y: { field: 'us', type: 'quantitative', scale: { type: 'log' }, title: 'us per call (median of 100)' },
    color: { field: 'side', type: 'nominal', title: '', legend: { labelLimit: 400, orient: 'bottom', columns: 2 } },
  },
}, 'docs/img/first-calls.svg');
