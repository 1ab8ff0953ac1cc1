// Summarises bench-switch.sh: per collective, layout and size, each variant's median over the
// rounds, the fastest forced algorithm, what the selection table picks (select.ts, asked with
// the layout's nodes and the host's cores as a call would ask it) and the automatic call's time
// over the fastest one (its regret). Prints a table, writes summary.json and summary.md, and
// one chart per collective and layout (charts/, through `nbc bench chart`).
//   node scripts/switch-summary.mjs OUT
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import Table from 'cli-table3';
import { select } from '../dist/coll/select.js';
import { DEFAULT_CONFIG } from '../dist/config.js';
import { loadCostParams } from '../dist/runtime/params-file.js';

const [dir] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: node scripts/switch-summary.mjs OUT');
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const cores = availableParallelism();
const cost = loadCostParams();

// "coll|ranks|ppn" -> variant -> bytes -> [us per round]
const groups = new Map();
let rounds = 0;
for (const f of readdirSync(dir).filter((x) => /-r\d+\.json$/.test(x))) {
  const r = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
  const variant = r.algorithm ?? 'auto';
  rounds = Math.max(rounds, Number(/-r(\d+)\.json$/.exec(f)[1]));
  const key = `${r.op}|${r.ranks}|${r.ppn}`;
  if (!groups.has(key)) groups.set(key, new Map());
  const g = groups.get(key);
  if (!g.has(variant)) g.set(variant, new Map());
  for (const row of r.results) {
    const m = g.get(variant);
    if (!m.has(row.bytes)) m.set(row.bytes, []);
    m.get(row.bytes).push(row.latencyUs);
  }
}

/** What the rules pick for one rank's `bytes` of `coll` on `ranks` ranks, `ppn` per node, all on this host. */
function picked(coll, ranks, ppn, bytes) {
  const nodes = Math.ceil(ranks / ppn);
  const config = { ...DEFAULT_CONFIG, cost, oversubscribed: ranks > cores };
  const c = select(coll, { size: ranks, bytes, commutative: true, executor: 'host', nodes, ppn, uniform: ranks % ppn === 0 }, undefined, config);
  return c.name;
}

const rows = [];
const table = new Table({ head: ['collective', 'ranks:ppn', 'bytes', 'fastest forced', 'us', 'rules pick', 'us', 'auto us', 'auto / fastest'] });
mkdirSync(`${dir}/charts`, { recursive: true });
mkdirSync(`${dir}/median`, { recursive: true });
for (const [key, g] of [...groups].sort()) {
  const [coll, ranks, ppn] = key.split('|');
  const sizes = [...new Set([...g.values()].flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  for (const bytes of sizes) {
    const med = (v) => (g.get(v)?.has(bytes) ? median(g.get(v).get(bytes)) : undefined);
    let best = null;
    for (const v of g.keys()) {
      if (v === 'auto') continue;
      const us = med(v);
      if (us !== undefined && (best === null || us < best.us)) best = { algorithm: v, us };
    }
    if (best === null) continue;
    const pick = picked(coll, Number(ranks), Number(ppn), bytes);
    const autoUs = med('auto');
    const row = {
      coll, ranks: Number(ranks), ppn: Number(ppn), bytes, fastest: best.algorithm, fastestUs: best.us,
      pick, pickUs: med(pick) ?? null, autoUs: autoUs ?? null, regret: autoUs === undefined ? null : autoUs / best.us,
      forced: Object.fromEntries([...g.keys()].filter((v) => v !== 'auto').map((v) => [v, med(v) ?? null])),
      rounds: Math.min(...[...g.values()].map((m) => m.get(bytes)?.length ?? 0)),
    };
    rows.push(row);
    const f = (x) => (x === null || x === undefined ? '-' : x.toFixed(1));
    table.push([coll, `${ranks}:${ppn}`, bytes, best.algorithm, f(best.us), pick, f(row.pickUs), f(row.autoUs), row.regret === null ? '-' : `${row.regret.toFixed(2)}x`]);
  }
  // The medians as nbc bench results, one file per variant, and their chart.
  const files = [];
  for (const [v, m] of g) {
    const file = `${dir}/median/${coll}-${ranks}-${ppn}-${v}.json`;
    const results = [...m].sort((a, b) => a[0] - b[0]).map(([bytes, us]) => ({ bytes, latencyUs: median(us) }));
    writeFileSync(file, JSON.stringify({ op: coll, kind: 'blocking', ranks: Number(ranks), ppn: Number(ppn), algorithm: v === 'auto' ? null : v, label: v, stat: `median of ${m.values().next().value.length} rounds`, results }, null, 1));
    files.push(file);
  }
  // A latency chart needs sizes above 0 bytes (a barrier has none).
  if (sizes.some((b) => b > 0)) execFileSync('node', ['dist/cli/nbc.js', 'bench', 'chart', `${dir}/charts/${coll}-${ranks}-${ppn}.svg`, ...files, '--metric', 'latency']);
}
console.log(table.toString());
const regrets = rows.filter((r) => r.regret !== null).map((r) => r.regret);
const worse = rows.filter((r) => r.pickUs !== null && r.pickUs > 1.1 * r.fastestUs);
console.log(`${rows.length} points, ${rounds} rounds: auto / fastest forced median ${median(regrets).toFixed(2)}x, max ${Math.max(...regrets).toFixed(2)}x; the rules' pick is more than 10 % slower than the fastest at ${worse.length} points`);
writeFileSync(`${dir}/summary.json`, JSON.stringify({ cores, rounds, rows }, null, 1));
const md = ['| collective | ranks:ppn | bytes | fastest forced (us) | rules pick (us) | auto us | auto / fastest |', '|---|---|---|---|---|---|---|'];
for (const r of rows) {
  md.push(`| ${r.coll} | ${r.ranks}:${r.ppn} | ${r.bytes} | ${r.fastest} (${r.fastestUs.toFixed(1)}) | ${r.pick} (${r.pickUs === null ? '-' : r.pickUs.toFixed(1)}) | ${r.autoUs === null ? '-' : r.autoUs.toFixed(1)} | ${r.regret === null ? '-' : `${r.regret.toFixed(2)}x`} |`);
}
writeFileSync(`${dir}/summary.md`, `${md.join('\n')}\n`);
