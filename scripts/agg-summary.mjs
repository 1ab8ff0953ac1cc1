// Summary of scripts/bench-agg.sh, shaped like seed 003's Table V: per size, agg against the
// best host algorithm (median over rounds), the improvement factor, and latency against node
// count at 8 B. Writes summary.json beside the runs and charts in docs/img/.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import Table from 'cli-table3';

const [dir, roundsText] = process.argv.slice(2);
const rounds = Number(roundsText);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const runs = new Map(); // "op|nodes|alg" -> bytes -> [latency per round]
let limit = null;
for (const f of readdirSync(dir).filter((x) => /-r\d+\.json$/.test(x))) {
  const r = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
  const alg = r.executor === 'agg' ? 'agg' : r.algorithm;
  const key = `${r.op}|${r.ranks / r.ppn}|${alg}`;
  if (!runs.has(key)) runs.set(key, new Map());
  for (const row of r.results) {
    const m = runs.get(key);
    if (!m.has(row.bytes)) m.set(row.bytes, []);
    m.get(row.bytes).push(row.latencyUs);
  }
  limit ??= r.link;
}
const compare = (op, nodes) => {
  const agg = runs.get(`${op}|${nodes}|agg`);
  if (agg === undefined) return [];
  const rows = [];
  for (const [bytes, lat] of [...agg].sort((a, b) => a[0] - b[0])) {
    let best = null;
    for (const [key, m] of runs) {
      const [o, n, alg] = key.split('|');
      if (o !== op || Number(n) !== nodes || alg === 'agg' || !m.has(bytes)) continue;
      const us = median(m.get(bytes));
      if (best === null || us < best.us) best = { alg, us };
    }
    const aggUs = median(lat);
    rows.push({ op, nodes, bytes, aggUs, bestHost: best?.alg ?? null, hostUs: best?.us ?? null, factor: best ? best.us / aggUs : null, rounds });
  }
  return rows;
};
const table = new Table({ head: ['op', 'nodes', 'bytes', 'agg us', 'best host', 'host us', 'host / agg'], style: { head: [], border: [] } });
const summary = [];
for (const [op, nodes] of [['allreduce', 16], ['barrier', 16], ['allreduce', 8], ['allreduce', 4]]) {
  for (const row of compare(op, nodes)) {
    summary.push(row);
    table.push([op, nodes, row.bytes, row.aggUs.toFixed(1), row.bestHost, row.hostUs?.toFixed(1), row.factor?.toFixed(2) + 'x']);
  }
}
console.log(`${rounds} round(s), median over rounds; emulated link on every hop: ${limit} (one hop's added latency is the physical limit of each step)`);
console.log(table.toString());
writeFileSync(`${dir}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
const latest = (re) => readdirSync(dir).filter((f) => re.test(f) && f.endsWith(`-r${rounds}.json`)).map((f) => `${dir}/${f}`);
execFileSync('node', ['dist/cli/nbc.js', 'bench', 'chart', 'docs/img/agg-allreduce-n16.svg', ...latest(/^allreduce-n16-/), '--metric', 'latency']);
