// Summarises scripts/bench-multicore.mjs: per configuration the median over rounds, then each
// case's figures beside its seed's figure and the target, with a verdict (met / missed /
// failed). Writes summary.json, summary.md and one chart per case (multicore-<case>.svg) in
// the output directory. A run that failed leaves its error in the summary instead of a number.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { renderSpec } from '../dist/bench/chart.js';
import { LINK_PRESETS } from '../dist/runtime/link-spec.js';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fixed = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));

/** Per configuration key: its case and meta, the figures of its successful rounds, its errors. */
function collect(out, log) {
  const groups = new Map();
  for (const e of log) {
    if (!groups.has(e.key)) groups.set(e.key, { case: e.case, key: e.key, meta: e.meta, values: [], errors: [] });
    const g = groups.get(e.key);
    if (!e.ok) { g.errors.push(`round ${e.round}: ${e.error}`); continue; }
    const file = join(out, e.file);
    if (!existsSync(file)) { g.errors.push(`round ${e.round}: exited 0 but wrote no ${e.file}`); continue; }
    try {
      const r = JSON.parse(readFileSync(file, 'utf8'));
      // cg/pcg: ms per iteration; nbc bench: the one size's latency (us) and, if non-blocking, overlap %.
      g.values.push(r.app ? { ms: r.perIterationMs } : { us: r.results[0].latencyUs, overlapPct: r.results[0].overlapPct ?? null });
    } catch (err) {
      g.errors.push(`round ${e.round}: ${e.file} unreadable (${err.message})`);
    }
  }
  for (const g of groups.values()) {
    g.rounds = g.values.length;
    for (const f of ['ms', 'us', 'overlapPct']) {
      const xs = g.values.map((v) => v[f]).filter((x) => typeof x === 'number');
      g[f] = xs.length > 0 ? median(xs) : null;
    }
  }
  return groups;
}

/**
 * One figure: `value` (a number, or null with `error` saying why), the seed's figure and the
 * target as text, and the verdict against `threshold` (higher is better; none: informational).
 */
function figure(name, unit, value, error, seed, threshold) {
  const target = threshold === null ? '-' : `>= ${threshold}${unit === 'x' ? 'x' : ` ${unit}`}`;
  const verdict = value === null ? 'failed' : threshold === null ? 'info' : value >= threshold ? 'met' : 'missed';
  return { name, unit, value, error: value === null ? (error ?? 'no successful run') : null, seed, target, threshold, verdict };
}

/** Why a comparison of configurations has no number: the errors of those that failed. */
const whyMissing = (...gs) => gs.map((g) => (g === undefined ? 'not run' : g.errors.join('; ') || null)).filter(Boolean).join('; ') || null;

function cgCase(groups, s) {
  const rows = [];
  const figures = [];
  const maxN = Math.max(...s.cgRanks);
  for (const link of s.cgLinks) for (const ranks of s.cgRanks) {
    const b = groups.get(`cg-${link}-${ranks}-blocking`);
    const nb = groups.get(`cg-${link}-${ranks}-nonblocking`);
    const pct = b?.ms && nb?.ms ? 100 * (1 - nb.ms / b.ms) : null;
    rows.push({ link, ranks, blockingMs: b?.ms ?? null, nonblockingMs: nb?.ms ?? null, fasterPct: pct, rounds: Math.min(b?.rounds ?? 0, nb?.rounds ?? 0) });
    const main = link === 'gige' && ranks === maxN;
    figures.push(figure(`CG non-blocking faster than blocking, ${link}, ${ranks} ranks`, '%', pct, whyMissing(b, nb),
      link === 'gige' ? '34 %' : '-', main ? 30 : null));
  }
  return { title: 'CG halo overlap (seed 001)', rows, figures };
}

function pcgCase(groups, s) {
  const rows = [];
  const figures = [];
  const maxN = Math.max(...s.pcgRanks);
  for (const ranks of s.pcgRanks) {
    const g = (v, ex) => groups.get(`pcg-${ranks}-${v}-${ex}`);
    const a1 = g('alg1', 'host');
    rows.push({ ranks, alg1Ms: a1?.ms ?? null, alg2Ms: g('alg2', 'host')?.ms ?? null, overlapHostMs: g('overlap', 'host')?.ms ?? null, overlapOffloadMs: g('overlap', 'offload')?.ms ?? null });
    for (const ex of s.pcgVariants.filter(([v]) => v === 'overlap').map(([, e]) => e)) {
      const o = g('overlap', ex);
      const pct = a1?.ms && o?.ms ? 100 * (1 - o.ms / a1.ms) : null;
      figures.push(figure(`Overlap-PCG (${ex}) faster than Algorithm 1, ${ranks} ranks`, '%', pct, whyMissing(a1, o), '21 %', ranks === maxN && ex === 'offload' ? 20 : null));
    }
  }
  return { title: 'PCG variants (seed 000)', rows, figures };
}

function hierCase(groups, s) {
  const rows = [];
  const figures = [];
  const mainPpn = Math.max(...s.hierPpns); // 2 x 8 on 16 ranks
  for (const ppn of s.hierPpns) for (const op of Object.keys(s.hierAlgs)) {
    const layout = `${s.hierRanks / ppn} x ${ppn}`;
    const key = (alg) => `hier-${op}-ppn${ppn}-${alg.replace(':', '_')}`;
    const hier = groups.get(key('hier'));
    let best = null;
    for (const alg of s.hierAlgs[op].filter((a) => a !== 'hier')) {
      const g = groups.get(key(alg));
      if (g?.us != null && (best === null || g.us < best.us)) best = { alg, us: g.us };
    }
    const factor = hier?.us && best ? best.us / hier.us : null;
    rows.push({ op, layout, bytes: op === 'barrier' ? 0 : 8, hierUs: hier?.us ?? null, bestFlat: best?.alg ?? null, flatUs: best?.us ?? null, factor });
    const flatErrors = best === null ? 'no flat algorithm ran: ' + s.hierAlgs[op].filter((a) => a !== 'hier').map((a) => whyMissing(groups.get(key(a)))).join('; ') : null;
    figures.push(figure(`hier over best flat, ${op}${op === 'barrier' ? '' : ' 8 B'}, ${layout}`, 'x', factor,
      whyMissing(hier) ?? flatErrors, op === 'alltoall' ? '-' : 'about 3x', ppn === mainPpn && op !== 'alltoall' ? 3 : null));
  }
  return { title: 'Hierarchical collectives on ddr (seed 004)', rows, figures };
}

function aggCase(groups, s) {
  const agg = groups.get('agg-agg');
  let best = null;
  for (const alg of s.aggHost) {
    const g = groups.get(`agg-${alg.replace(':', '_')}`);
    if (g?.us != null && (best === null || g.us < best.us)) best = { alg, us: g.us };
  }
  const factor = agg?.us && best ? best.us / agg.us : null;
  const rows = [{ ranks: s.aggRanks, topology: s.topology ?? 'flat (no --topology in this build)', aggUs: agg?.us ?? null, bestHost: best?.alg ?? null, hostUs: best?.us ?? null, factor }];
  const err = whyMissing(agg) ?? (best === null ? s.aggHost.map((a) => whyMissing(groups.get(`agg-${a.replace(':', '_')}`))).join('; ') : null);
  return { title: 'Aggregation fabric, 8 B allreduce (seed 003)', rows, figures: [figure(`agg over best host, allreduce 8 B, ${s.aggRanks} nodes`, 'x', factor, err, '2.11x', 2)] };
}

function overlapCase(groups, s) {
  const rows = [];
  const figures = [];
  for (const [nodes, ppn] of s.overlapConfigs) for (const ex of s.overlapExecutors) {
    const g = groups.get(`overlap-${nodes}x${ppn}-${ex}`);
    rows.push({ layout: `${nodes} x ${ppn}`, executor: ex, overlapPct: g?.overlapPct ?? null, overallUs: g?.us ?? null });
    figures.push(figure(`iallreduce 1 KiB overlap, ${ex}, ${nodes} x ${ppn}`, '%', g?.overlapPct ?? null, whyMissing(g), ex === 'offload' ? '>= 90 %' : '-', ex === 'offload' ? 90 : null));
  }
  return { title: 'Offloaded iallreduce overlap (seed 000)', rows, figures };
}

function machine() {
  // A copy of the tree without its .git (a lent machine) names its commit in NBC_COMMIT.
  const git = (...a) => (spawnSync('git', a, { encoding: 'utf8' }).stdout ?? '').trim();
  return {
    cores: cpus().length, model: cpus()[0]?.model ?? 'unknown', memoryGiB: +(totalmem() / 2 ** 30).toFixed(1), loadavg: loadavg(),
    os: `${process.platform} ${release()}`, node: process.version, date: new Date().toISOString(),
    commit: process.env.NBC_COMMIT ?? (git('rev-parse', 'HEAD') || 'unknown'), dirty: git('status', '--porcelain').length > 0,
  };
}

const bars = (title, values, x, offset, y, yTitle) => ({
  $schema: 'https://vega.github.io/schema/vega-lite/v6.json', title, width: 480, height: 240, background: 'white', data: { values }, mark: 'bar',
  encoding: { x: { field: x, type: 'nominal', title: null }, xOffset: { field: offset }, y: { field: y, type: 'quantitative', title: yTitle }, color: { field: offset, type: 'nominal', title: null } },
  config: { font: 'DejaVu Sans' },
});

/** One bar chart per case, of the medians; a chart that cannot be drawn is noted, not fatal. */
async function charts(out, c) {
  const specs = {
    cg: bars('CG ms per iteration (seed 001)', c.cg?.rows.flatMap((r) => [['blocking', r.blockingMs], ['non-blocking', r.nonblockingMs]].map(([mode, ms]) => ({ at: `${r.link} ${r.ranks}`, mode, ms }))), 'at', 'mode', 'ms', 'ms per iteration (median)'),
    pcg: bars('PCG ms per iteration (seed 000)', c.pcg?.rows.flatMap((r) => [['alg1', r.alg1Ms], ['alg2', r.alg2Ms], ['overlap host', r.overlapHostMs], ['overlap offload', r.overlapOffloadMs]].map(([variant, ms]) => ({ ranks: `${r.ranks} ranks`, variant, ms }))), 'ranks', 'variant', 'ms', 'ms per iteration (median)'),
    hier: bars('hier vs best flat, ddr (seed 004)', c.hier?.rows.flatMap((r) => [['hier', r.hierUs], ['best flat', r.flatUs]].map(([alg, us]) => ({ at: `${r.op} ${r.layout}`, alg, us }))), 'at', 'alg', 'us', 'latency us (median)'),
    agg: bars('8 B allreduce, agg vs host (seed 003)', c.agg?.rows.flatMap((r) => [['agg', r.aggUs], [`host ${r.bestHost ?? ''}`, r.hostUs]].map(([executor, us]) => ({ at: `${r.ranks} nodes`, executor, us }))), 'at', 'executor', 'us', 'latency us (median)'),
    overlap: bars('iallreduce 1 KiB overlap (seed 000)', c.overlap?.rows.map((r) => ({ at: r.layout, executor: r.executor, pct: r.overlapPct })), 'at', 'executor', 'pct', 'overlap % (median)'),
  };
  const written = [];
  for (const [name, spec] of Object.entries(specs)) {
    spec.data.values = (spec.data.values ?? []).filter((v) => Object.values(v).every((x) => x !== null && x !== undefined));
    if (spec.data.values.length === 0) continue;
    try {
      await renderSpec(spec, join(out, `multicore-${name}.svg`));
      written.push(`multicore-${name}.svg`);
    } catch (e) {
      console.error(`chart ${name}: ${e.message}`);
    }
  }
  return written;
}

function markdown(summary) {
  const { machine: m, settings: s, cases } = summary;
  const lines = [
    `# bench:multicore, ${m.date.slice(0, 10)}${s.quick ? ' (quick form)' : ''}`, '',
    `${m.cores} x ${m.model}, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}, commit ${m.commit.slice(0, 12)}${m.dirty ? ' (with local changes)' : ''}; ` +
      `${s.rounds} interleaved round(s), medians; ${s.wallSeconds.toFixed(0)} s of runs.`,
    `Links: ${Object.entries(summary.links).map(([k, v]) => `${k} = ${v}`).join('; ')}.` + (s.topology ? ` agg case topology: ${s.topology}.` : ' agg case: flat network (this build of `nbc bench` has no --topology).'),
    '', '| figure | measured | seed | target | verdict |', '|---|---|---|---|---|',
  ];
  for (const c of Object.values(cases)) for (const f of c.figures) {
    const value = f.value === null ? `failed: ${f.error}` : `${fixed(f.value, f.unit === 'x' ? 2 : 1)}${f.unit === 'x' ? 'x' : ` ${f.unit}`}`;
    lines.push(`| ${f.name} | ${value.replace(/\|/g, '/')} | ${f.seed} | ${f.target} | ${f.verdict} |`);
  }
  for (const [name, c] of Object.entries(cases)) {
    lines.push('', `## ${c.title}`, '');
    if (c.rows.length > 0) {
      const cols = Object.keys(c.rows[0]);
      lines.push(`| ${cols.join(' | ')} |`, `|${cols.map(() => '---').join('|')}|`);
      for (const r of c.rows) lines.push(`| ${cols.map((k) => (typeof r[k] === 'number' ? fixed(r[k], Number.isInteger(r[k]) ? 0 : 3) : r[k] ?? '-')).join(' | ')} |`);
    }
    if (summary.charts.includes(`multicore-${name}.svg`)) lines.push('', `![${c.title}](multicore-${name}.svg)`);
  }
  if (summary.failures.length > 0) lines.push('', '## Failed or skipped runs', '', ...summary.failures.map((f) => `- ${f.key} round ${f.round}: ${f.error} (\`${f.command}\`)`));
  return lines.join('\n') + '\n';
}

/** Writes summary.json, summary.md and the charts for the runs in `log`. */
export async function summarize(out, log, settings) {
  const groups = collect(out, log);
  const builders = { cg: cgCase, pcg: pcgCase, hier: hierCase, agg: aggCase, overlap: overlapCase };
  const cases = {};
  for (const name of settings.cases) cases[name] = builders[name](groups, settings);
  const used = ['gige', 'ib', 'ddr', 'edr'];
  const summary = {
    machine: machine(), settings, links: Object.fromEntries(used.map((k) => [k, LINK_PRESETS[k]])), cases, charts: [],
    failures: log.filter((e) => !e.ok).map(({ key, round, error, command }) => ({ key, round, error, command })),
  };
  summary.charts = await charts(out, cases);
  writeFileSync(join(out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  const md = markdown(summary);
  writeFileSync(join(out, 'summary.md'), md);
  console.log(md);
  return summary;
}
