// Summaries for scripts/bench-sim.sh: node scripts/sim-summary.mjs validation|scale|seeds OUT;
// node scripts/sim-summary.mjs across OUT_A OUT_B: how far two runs' measurements of the same points differ;
// node scripts/sim-summary.mjs floor RUN...: how far the host's own measurements move between calibrations and runs;
// node scripts/sim-summary.mjs combine OUT RUN... : the validation points of several runs (each point measured and
// simulated in its own run), a later run's point replacing an earlier run's, summed up in OUT/validation.md.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSpec } from '../dist/bench/chart.js';

const [mode, out] = process.argv.slice(2);
const read = (f) => JSON.parse(readFileSync(f, 'utf8'));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const pct = (x) => `${(100 * x).toFixed(1)} %`;

if (mode === 'validation') {
  const dir = join(out, 'val');
  const points = [];
  const groups = [];
  for (const f of readdirSync(dir).filter((f) => f.startsWith('bench-') && f.endsWith('.json'))) {
    const simFile = join(dir, f.replace(/^bench-/, 'sim-'));
    if (!existsSync(simFile)) continue;
    const b = read(join(dir, f));
    const s = read(simFile);
    const repeatFile = join(dir, f.replace(/^bench-/, 'repeat-'));
    const again = existsSync(repeatFile) ? read(repeatFile) : null;
    const errs = [];
    const spreads = [];
    for (const row of b.results) {
      const sr = s.results.find((r) => r.bytes === row.bytes);
      if (sr === undefined || !(row.latencyUs > 0)) continue;
      // Measured: the first run; with a repeat, the mean of both, and their spread |b2 - b1| / b1.
      const rr = again?.results.find((r) => r.bytes === row.bytes);
      const measuredUs = rr !== undefined && rr.latencyUs > 0 ? (row.latencyUs + rr.latencyUs) / 2 : row.latencyUs;
      const spread = rr !== undefined && rr.latencyUs > 0 ? Math.abs(rr.latencyUs - row.latencyUs) / row.latencyUs : null;
      const err = Math.abs(sr.latencyUs - measuredUs) / measuredUs;
      errs.push(err);
      if (spread !== null) spreads.push(spread);
      points.push({ op: b.op, ranks: b.ranks, ppn: b.ppn, algorithm: b.algorithm, bytes: row.bytes, measuredUs, simulatedUs: sr.latencyUs, err,
        ...(rr !== undefined ? { firstUs: row.latencyUs, repeatUs: rr.latencyUs, spread } : {}) });
    }
    groups.push({ op: b.op, ranks: b.ranks, ppn: b.ppn, algorithm: b.algorithm, medianErr: median(errs), worstErr: Math.max(...errs), medianSpread: spreads.length ? median(spreads) : null });
  }
  groups.sort((x, y) => y.medianErr - x.medianErr);
  const overall = median(points.map((p) => p.err));
  const spreadAll = points.filter((p) => p.spread != null).map((p) => p.spread);
  const overallSpread = spreadAll.length ? median(spreadAll) : null;
  const layouts = [...new Set(points.map((p) => `${p.ranks}:${p.ppn}`))].map((k) => {
    const at = points.filter((p) => `${p.ranks}:${p.ppn}` === k);
    const sp = at.filter((p) => p.spread != null).map((p) => p.spread);
    return { layout: k, points: at.length, medianErr: median(at.map((p) => p.err)), medianSpread: sp.length ? median(sp) : null };
  });
  writeFileSync(join(out, 'validation.json'), JSON.stringify({ overallMedianErr: overall, overallMedianSpread: overallSpread, layouts, groups, points }, null, 2) + '\n');
  const md = [`median absolute error over ${points.length} points: ${pct(overall)} (target <= 20 %)` +
    (overallSpread === null ? '' : `; nbc bench against itself (the same point measured twice): ${pct(overallSpread)}`), '',
    '| ranks:ppn | points | median error | bench vs itself |', '|---|---|---|---|',
    ...layouts.map((l) => `| ${l.layout} | ${l.points} | ${pct(l.medianErr)} | ${l.medianSpread === null ? '-' : pct(l.medianSpread)} |`), '',
    '| op | ranks | ppn | algorithm | median error | worst | bench vs itself |', '|---|---|---|---|---|---|---|',
    ...groups.map((g) => `| ${g.op} | ${g.ranks} | ${g.ppn} | ${g.algorithm} | ${pct(g.medianErr)} | ${pct(g.worstErr)} | ${g.medianSpread === null ? '-' : pct(g.medianSpread)} |`)];
  writeFileSync(join(out, 'validation.md'), md.join('\n') + '\n');
  await renderSpec({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json', width: 480, height: 480, title: 'nbc sim vs nbc bench (same run)',
    data: { values: points },
    layer: [
      { mark: { type: 'point', filled: true }, encoding: {
        x: { field: 'measuredUs', type: 'quantitative', scale: { type: 'log' }, title: 'measured us' },
        y: { field: 'simulatedUs', type: 'quantitative', scale: { type: 'log' }, title: 'simulated us' },
        color: { field: 'op', type: 'nominal' } } },
    ],
  }, join(out, 'validation.svg'));
  console.log(md.slice(0, 14).join('\n'));
} else if (mode === 'scale') {
  const dir = join(out, 'scale');
  const rows = [];
  const auto = {};
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const r = read(join(dir, f));
    for (const row of r.results) {
      if (r.algorithm === 'auto') auto[`${r.ranks}/${row.bytes}`] = row.algorithm;
      else rows.push({ algorithm: r.algorithm, ranks: r.ranks, bytes: row.bytes, latencyUs: row.latencyUs, events: row.events, wallSeconds: row.wallSeconds });
    }
  }
  const sizes = [...new Set(rows.map((r) => r.bytes))].sort((a, b) => a - b);
  const crossovers = [];
  const md = [];
  for (const bytes of sizes) {
    const at = rows.filter((r) => r.bytes === bytes);
    const ranks = [...new Set(at.map((r) => r.ranks))].sort((a, b) => a - b);
    let prev = null;
    md.push(`\n${bytes} B: | ranks | best (simulated) | selection picks |`, '|---|---|---|');
    for (const n of ranks) {
      const best = at.filter((r) => r.ranks === n).reduce((x, y) => (y.latencyUs < x.latencyUs ? y : x));
      md.push(`| ${n} | ${best.algorithm} ${best.latencyUs.toFixed(1)} us | ${auto[`${n}/${bytes}`] ?? '-'} |`);
      if (prev !== null && prev !== best.algorithm) crossovers.push({ bytes, ranks: n, from: prev, to: best.algorithm });
      prev = best.algorithm;
    }
    await renderSpec({
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json', width: 560, height: 360, title: `allreduce ${bytes} B, simulated`,
      data: { values: at }, mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'ranks', type: 'quantitative', scale: { type: 'log' } },
        y: { field: 'latencyUs', type: 'quantitative', scale: { type: 'log' }, title: 'latency us' },
        color: { field: 'algorithm', type: 'nominal' },
      },
    }, join(out, `scale-${bytes}.svg`));
  }
  const big = rows.filter((r) => r.ranks >= 100000 && r.algorithm === 'recursive-doubling');
  writeFileSync(join(out, 'scale.json'), JSON.stringify({ crossovers, auto, rows, largest: big }, null, 2) + '\n');
  writeFileSync(join(out, 'scale.md'), md.join('\n') + '\n');
  console.log(md.join('\n'));
  console.log('crossovers:', JSON.stringify(crossovers));
  for (const b of big) console.log(`recursive doubling at ${b.ranks} ranks, ${b.bytes} B: ${b.events} events in ${b.wallSeconds.toFixed(1)} s (${(b.events / b.wallSeconds).toExponential(2)} events/s)`);
} else if (mode === 'seeds') {
  const dir = join(out, 'seeds');
  const f = (n) => join(dir, n);
  const lines = [];
  const paper003 = { 8: 2.11, 16: 2.14, 32: 2.11, 64: 2.25, 128: 2.27, 256: 2.57, 512: 2.74, 1024: 3.29, 2048: 3.98, 4096: 3.24 };
  if (existsSync(f('003-agg.json'))) {
    const agg = read(f('003-agg.json')).results;
    const host = read(f('003-host.json')).results;
    lines.push('seed 003, allreduce on 128 hosts (switchib2): | bytes | agg us | host us | host/agg | paper (Table V) |', '|---|---|---|---|---|');
    for (const a of agg) {
      const h = host.find((x) => x.bytes === a.bytes);
      lines.push(`| ${a.bytes} | ${a.latencyUs.toFixed(2)} | ${h.latencyUs.toFixed(2)} | ${(h.latencyUs / a.latencyUs).toFixed(2)}x | ${paper003[a.bytes] ?? '-'}x |`);
    }
  }
  lines.push('', 'seed 000, iallreduce overlap with a dedicated engine (qdr-cx2, 8 per node): | procs | form | bytes | overlap |', '|---|---|---|---|');
  for (const file of readdirSync(dir).filter((x) => x.startsWith('000-')).sort()) {
    const r = read(f(file));
    for (const row of r.results) lines.push(`| ${r.ranks} | ${file.split('-').slice(1, -1).join('-')} | ${row.bytes} | ${row.overlapPct.toFixed(1)} % |`);
  }
  lines.push('', 'seed 004, 4 nodes x 8 (clovertown-ddr): | coll | bytes | flat us | hier us | flat/hier (paper ~3x) |', '|---|---|---|---|---|');
  for (const coll of ['barrier', 'allreduce']) {
    if (!existsSync(f(`004-${coll}-hier.json`))) continue;
    const h = read(f(`004-${coll}-hier.json`)).results;
    const fl = read(f(`004-${coll}-flat.json`)).results;
    for (const x of h) {
      const y = fl.find((z) => z.bytes === x.bytes);
      lines.push(`| ${coll} | ${x.bytes} | ${y.latencyUs.toFixed(2)} | ${x.latencyUs.toFixed(2)} | ${(y.latencyUs / x.latencyUs).toFixed(2)}x |`);
    }
  }
  writeFileSync(join(out, 'seeds.md'), lines.join('\n') + '\n');
  console.log(lines.join('\n'));
} else if (mode === 'across') {
  // How far the measurement moves between two runs of the validation: per point both runs
  // measured (the mean of each run's two measurements), |b - a| / a, the median; by default
  // only the collectives whose code did not change between the runs (ONLY=op,op,...).
  const other = process.argv[4];
  if (other === undefined) {
    console.error('usage: node scripts/sim-summary.mjs across OUT_A OUT_B');
    process.exit(2);
  }
  const only = (process.env.ONLY ?? '').split(',').filter((x) => x !== '');
  const key = (p) => `${p.op}|${p.ranks}|${p.ppn}|${p.algorithm}|${p.bytes}`;
  const a = new Map(read(join(out, 'validation.json')).points.map((p) => [key(p), p]));
  const diffs = [];
  for (const p of read(join(other, 'validation.json')).points) {
    const q = a.get(key(p));
    if (q === undefined || (only.length > 0 && !only.includes(p.op))) continue;
    diffs.push(Math.abs(p.measuredUs - q.measuredUs) / q.measuredUs);
  }
  console.log(`${diffs.length} points measured in both ${out} and ${other}${only.length ? ` (${only.join(', ')})` : ''}: they differ by ${pct(median(diffs))} (median)`);
} else if (mode === 'combine') {
  const runs = process.argv.slice(4);
  if (runs.length === 0) {
    console.error('usage: node scripts/sim-summary.mjs combine OUT RUN...');
    process.exit(2);
  }
  const key = (p) => `${p.op}|${p.ranks}|${p.ppn}|${p.algorithm}|${p.bytes}`;
  const byKey = new Map();
  for (const run of runs) for (const p of read(join(run, 'validation.json')).points) byKey.set(key(p), { ...p, run });
  const points = [...byKey.values()];
  const summary = (at) => ({ points: at.length, medianErr: median(at.map((p) => p.err)), within20: at.filter((p) => p.err <= 0.2).length });
  const split = (f) => [...new Set(points.map(f))].map((k) => ({ key: k, ...summary(points.filter((p) => f(p) === k)) }));
  const layouts = split((p) => `${p.ranks}:${p.ppn}`);
  const sizes = split((p) => p.bytes);
  const ops = split((p) => p.op).sort((x, y) => y.medianErr - x.medianErr);
  const from = split((p) => p.run);
  const all = summary(points);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'validation.json'), JSON.stringify({ runs, overallMedianErr: all.medianErr, layouts, sizes, ops, points }, null, 2) + '\n');
  const row = (x) => `| ${x.key} | ${x.points} | ${pct(x.medianErr)} | ${x.within20} |`;
  const head = (what) => [`| ${what} | points | median error | within 20 % |`, '|---|---|---|---|'];
  const md = [`median absolute error over ${all.points} points: ${pct(all.medianErr)} (target <= 20 %); ${all.within20} within 20 %`, '',
    ...head('run (the latest measurement of each point)'), ...from.map(row), '', ...head('ranks:ppn'), ...layouts.map(row), '',
    ...head('bytes'), ...sizes.map(row), '', ...head('op'), ...ops.map(row)];
  writeFileSync(join(out, 'validation.md'), md.join('\n') + '\n');
  console.log(md.join('\n'));
} else if (mode === 'floor') {
  // How far this host's own measurements move, the floor under the validation's error, from
  // runs already made: (1) the calibration's call-cost jobs (8 B, 2 ranks, the same job every
  // time, the same code) in consecutive calibrations of one run, |b - a| / b; (2) every
  // validation point's repeat, measured right after it (its `spread`), by layout.
  const runs = process.argv.slice(3);
  if (runs.length === 0) {
    console.error('usage: node scripts/sim-summary.mjs floor RUN...');
    process.exit(2);
  }
  const rel = (a, b) => Math.abs(b - a) / b;
  const gaps = [];
  const calls = { oneNode: [], acrossNodes: [], perColl: [] };
  for (const run of runs) {
    const cals = readdirSync(run).filter((f) => /^loggp(-\d+)?\.json$/.test(f)).map((f) => read(join(run, f)))
      .filter((c) => c.samples?.call !== undefined).sort((x, y) => x.measuredAt.localeCompare(y.measuredAt));
    for (let i = 1; i < cals.length; i++) {
      const [a, b] = [cals[i - 1].samples, cals[i].samples];
      gaps.push((Date.parse(cals[i].measuredAt) - Date.parse(cals[i - 1].measuredAt)) / 1000);
      calls.oneNode.push(rel(a.call.measuredUs, b.call.measuredUs));
      if (a.callNet && b.callNet) calls.acrossNodes.push(rel(a.callNet.measuredUs, b.callNet.measuredUs));
      for (const c of b.callByColl ?? []) {
        const p = a.callByColl?.find((x) => x.coll === c.coll);
        if (p !== undefined) calls.perColl.push(rel(p.measuredUs, c.measuredUs));
      }
    }
  }
  const line = (what, xs) => `| ${what} | ${xs.length} | ${pct(median(xs))} | ${xs.filter((x) => x <= 0.2).length} |`;
  const md = [`the same call-cost job in consecutive calibrations of one run (median ${median(gaps).toFixed(0)} s apart):`, '',
    '| job | pairs | median difference | within 20 % |', '|---|---|---|---|',
    line('allreduce 8 B, 2 ranks of one node', calls.oneNode), line('allreduce 8 B, 2 ranks of 2 nodes', calls.acrossNodes),
    line('the other 15 collectives, 8 B, 2 ranks of one node', calls.perColl), ''];
  const repeats = runs.flatMap((run) => read(join(run, 'validation.json')).points.filter((p) => p.spread != null)
    .map((p) => ({ layout: `${p.ranks}:${p.ppn}`, d: p.spread })));
  md.push('nbc bench measuring a validation point twice in a row (its repeat, seconds later):', '',
    '| ranks:ppn | points | median difference | within 20 % |', '|---|---|---|---|',
    ...[...new Set(repeats.map((m) => m.layout))].sort().map((l) => line(l, repeats.filter((m) => m.layout === l).map((m) => m.d))),
    line('all', repeats.map((m) => m.d)));
  console.log(md.join('\n'));
} else {
  console.error('usage: node scripts/sim-summary.mjs validation|scale|seeds OUT, across OUT_A OUT_B, floor RUN..., or combine OUT RUN...');
  process.exit(2);
}
