// Summary of scripts/ab-tcp-engine.sh: per benchmark and size, the median over rounds of each
// side (base, new) and their ratio, the loopback TCP ping-pong of the same runs beside them;
// a chart in docs/img/tcp-engine.svg.
import { existsSync, readFileSync } from 'node:fs';
import { renderSpec } from '../dist/bench/chart.js';

const [dir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const load = (name) => JSON.parse(readFileSync(`${dir}/${name}.json`, 'utf8'));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[(s.length - 1) >> 1]; };
const size = (b) => (b < 1024 ? `${b} B` : `${b / 1024} KiB`);
const each = (f) => Array.from({ length: rounds }, (_, i) => f(i + 1));

const limits = each((i) => { const l = load(`p2p-2x1-new-${i}`).limits; return l?.tcpPingPongOneWayUs ?? l?.latencyUs; });
console.log(`${rounds} interleaved rounds; raw Node TCP ping-pong one way in the same runs: ${limits.map((x) => x?.toFixed(1)).join(', ')} us (median ${median(limits).toFixed(1)})\n`);
console.log('| benchmark | size | base (median) | new (median) | new / base | rounds, base | rounds, new |\n|---|---|---|---|---|---|---|');
const chart = [];
const row = (what, unit, sz, base, neu) => {
  const mb = median(base);
  const mn = median(neu);
  const d = unit === 'us' ? 0 : 2;
  console.log(`| ${what} | ${sz} | ${mb.toFixed(d + 1)} ${unit} | ${mn.toFixed(d + 1)} ${unit} | **${(mn / mb).toFixed(2)}x** | ${base.map((x) => x.toFixed(d)).join(' / ')} | ${neu.map((x) => x.toFixed(d)).join(' / ')} |`);
  chart.push({ case: `${what} ${sz}`, side: 'base', ratio: 1 }, { case: `${what} ${sz}`, side: 'new', ratio: mn / mb });
};
const benches = [
  ['p2p-2x1', 'p2p 2 x 1, one way', (r) => r.latencyUs],
  ['allreduce-2x1-gige', 'allreduce 2 x 1, gige', (r) => r.latencyUs],
  ['allreduce-2x2', 'allreduce 2 x 2', (r) => r.latencyUs],
  ['iallreduce-2x1', 'iallreduce 2 x 1 with compute, overall', (r) => r.overallUs],
];
for (const [name, what, pick] of benches) {
  const runs = (side) => each((i) => load(`${name}-${side}-${i}`).results);
  const base = runs('base');
  const neu = runs('new');
  base[0].forEach((r, k) => row(what, 'us', size(r.bytes), base.map((x) => pick(x[k])), neu.map((x) => pick(x[k]))));
}
for (const q of existsSync(`${dir}/loop-2x1-gige-new-1.json`) ? ['medianUs', 'p90Us'] : []) {
  const per = (side) => each((i) => load(`loop-2x1-gige-${side}-${i}`)[q]);
  row(`compute 500 us + allreduce, gige, ${q === 'medianUs' ? 'median' : '90th pct'}`, 'us', '8 B', per('base'), per('new'));
}
for (const mode of ['blocking', 'nonblocking']) {
  const per = (side) => each((i) => load(`cg-2x1-gige-${mode}-${side}-${i}`).perIterationMs);
  row(`CG 2 x 1, gige, ${mode} halo`, 'ms/iter', 'n 40', per('base'), per('new'));
}
const ovl = (side) => each((i) => load(`iallreduce-2x1-${side}-${i}`).results.map((r) => r.overlapPct));
const show = (side) => ovl(side)[0].map((_, k) => median(ovl(side).map((x) => x[k])).toFixed(0)).join(' / ');
console.log(`\niallreduce 2 x 1 overlap (8 B / 64 KiB, medians): base ${show('base')} %, new ${show('new')} %`);
await renderSpec({
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title: 'TCP path between emulated nodes: new / base (median of interleaved rounds; lower is faster)',
  width: 520, height: 240, data: { values: chart }, mark: 'bar',
  encoding: {
    x: { field: 'case', type: 'nominal', sort: null, axis: { labelAngle: -40, labelLimit: 260, title: null } }, xOffset: { field: 'side' },
    y: { field: 'ratio', type: 'quantitative', title: 'time relative to base' }, color: { field: 'side', type: 'nominal' },
  },
}, 'docs/img/tcp-engine.svg');
console.log('\nchart: docs/img/tcp-engine.svg');
