// Summarises bench/results/apps/*.json (scripts/bench-apps.sh): medians over rounds, printed as
// markdown tables for BENCHMARKS.md, and charts in docs/img/apps-*.svg.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSpec } from '../dist/bench/chart.js';

const dir = process.argv[2] ?? 'bench/results/apps';
const img = process.argv[3] ?? 'docs/img';
const runs = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => ({ file: f, ...JSON.parse(readFileSync(join(dir, f), 'utf8')) }));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]; };
const groups = new Map();
for (const r of runs) {
  const key = r.file.replace(/-r\d+\.json$/, '');
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(r);
}
const round = (r) => Number(/-r(\d+)\.json$/.exec(r.file)[1]);
const rows = [...groups].map(([key, rs]) => ({ key, ...rs[0], all: rs, solveSeconds: median(rs.map((r) => r.solveSeconds)), perIterationMs: median(rs.map((r) => r.perIterationMs)), rounds: rs.length }));

// 1. CG: blocking vs non-blocking per link and rank count.
const cg = rows.filter((r) => r.app === 'cg');
console.log('| CG link | ranks | warm-up solves | blocking ms/iter | non-blocking ms/iter | non-blocking faster by | per round (same round) |\n|---|---|---|---|---|---|---|');
for (const link of ['gige', 'ib']) {
  for (const ranks of [...new Set(cg.map((r) => r.ranks))].sort((a, b) => a - b)) {
    const b = cg.find((r) => r.link === link && r.ranks === ranks && r.mode === 'blocking');
    const nb = cg.find((r) => r.link === link && r.ranks === ranks && r.mode === 'nonblocking');
    if (!b || !nb) continue;
    const perRound = b.all.map((x) => [x, nb.all.find((y) => round(y) === round(x))]).filter(([, y]) => y !== undefined)
      .sort(([x], [y]) => round(x) - round(y)).map(([x, y]) => `${(100 * (1 - y.perIterationMs / x.perIterationMs)).toFixed(0)} %`);
    console.log(`| ${link} | ${ranks} | ${b.warmupSolves ?? 0} | ${b.perIterationMs.toFixed(3)} | ${nb.perIterationMs.toFixed(3)} | ${(100 * (1 - nb.perIterationMs / b.perIterationMs)).toFixed(1)} % | ${perRound.join(' / ')} |`);
  }
}
// 2. PCG runtime comparison and Table I.
const pcg = rows.filter((r) => r.app === 'pcg' && r.noise === null);
console.log('\n| PCG ranks | variant | executor | iterations | solve s | ms/iter (median) | per round | matvec | sdotp | gamma | iprod | precond | axpy |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of pcg.sort((a, b) => a.ranks - b.ranks || a.key.localeCompare(b.key))) {
  const ph = ['matvec', 'sdotp', 'gamma', 'iprod', 'precond', 'axpy'].map((p) => (r.phases[p].seconds * 1000).toFixed(1));
  const perRound = [...r.all].sort((x, y) => round(x) - round(y)).map((x) => x.perIterationMs.toFixed(2));
  console.log(`| ${r.ranks} | ${r.variant} | ${r.executor} | ${r.iterations} | ${r.solveSeconds.toFixed(3)} | ${r.perIterationMs.toFixed(3)} | ${perRound.join(' / ')} | ${ph.join(' | ')} |`);
}
// 3. Noise.
const noisy = rows.filter((r) => r.app === 'pcg' && r.noise !== null);
console.log('\n| noise | Algorithm 2 ms/iter | Overlap-PCG ms/iter |\n|---|---|---|');
for (const noise of [...new Set(noisy.map((r) => r.noise))]) {
  const a = noisy.find((r) => r.noise === noise && r.variant === 'alg2');
  const o = noisy.find((r) => r.noise === noise && r.variant === 'overlap');
  console.log(`| ${noise} | ${a?.perIterationMs.toFixed(3) ?? '-'} | ${o?.perIterationMs.toFixed(3) ?? '-'} |`);
}

const bar = (title, values, x, color) => ({
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json', title, width: 420, height: 220, data: { values }, mark: 'bar',
  encoding: { x: { field: x, type: 'nominal' }, xOffset: { field: color }, y: { field: 'ms', type: 'quantitative', title: 'ms per iteration (median)' }, color: { field: color, type: 'nominal' } },
});
await renderSpec(bar('CG: blocking vs non-blocking halo (seed 001)', cg.map((r) => ({ ranks: `${r.ranks} ${r.link}`, mode: r.mode, ms: r.perIterationMs })), 'ranks', 'mode'), `${img}/apps-cg.svg`);
await renderSpec(bar('PCG variants (seed 000)', pcg.map((r) => ({ ranks: String(r.ranks), variant: `${r.variant} ${r.executor}`, ms: r.perIterationMs })), 'ranks', 'variant'), `${img}/apps-pcg.svg`);
if (noisy.length > 0) await renderSpec(bar('PCG under noise (seed 000)', noisy.map((r) => ({ noise: r.noise, variant: r.variant, ms: r.perIterationMs })), 'noise', 'variant'), `${img}/apps-noise.svg`);
console.log(`\ncharts: ${img}/apps-cg.svg, ${img}/apps-pcg.svg` + (noisy.length > 0 ? `, ${img}/apps-noise.svg` : ''));
