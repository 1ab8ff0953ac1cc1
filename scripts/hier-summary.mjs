// Summarises bench-hier.sh: per op, ranks per node and size, the median over rounds of each
// algorithm, the best flat one, and hier's factor over it. Prints a table, writes summary.json
// and one chart per op and ppn (through `nbc bench chart`).
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import Table from 'cli-table3';
import { choosePacking, predictAlltoall } from '../dist/coll/cost-model.js';
import { loadCostParams } from '../dist/runtime/params-file.js';

const [dir, roundsText] = process.argv.slice(2);
const rounds = Number(roundsText);
const files = readdirSync(dir).filter((f) => /-r\d+\.json$/.test(f));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const runs = new Map(); // "op|ppn|alg" -> bytes -> [latency per round]
for (const f of files) {
  const r = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
  const key = `${r.op}|${r.ppn}|${r.algorithm}`;
  if (!runs.has(key)) runs.set(key, new Map());
  for (const row of r.results) {
    const m = runs.get(key);
    if (!m.has(row.bytes)) m.set(row.bytes, []);
    m.get(row.bytes).push(row.latencyUs);
  }
}
const summary = [];
const table = new Table({ head: ['op', 'nodes x ppn', 'bytes', 'hier us', 'best flat', 'flat us', 'factor'] });
for (const op of ['barrier', 'allreduce', 'alltoall']) {
  for (const ppn of [4, 2]) {
    const hier = runs.get(`${op}|${ppn}|hier`);
    if (hier === undefined) continue;
    for (const [bytes, lat] of [...hier].sort((a, b) => a[0] - b[0])) {
      let best = null;
      for (const [key, m] of runs) {
        const [o, p, alg] = key.split('|');
        if (o !== op || Number(p) !== ppn || alg === 'hier' || !m.has(bytes)) continue;
        const us = median(m.get(bytes));
        if (best === null || us < best.us) best = { alg, us };
      }
      const hierUs = median(lat);
      const row = { op, nodes: 8 / ppn, ppn, bytes, hierUs, bestFlat: best.alg, flatUs: best.us, factor: best.us / hierUs, rounds };
      summary.push(row);
      table.push([op, `${8 / ppn} x ${ppn}`, bytes, hierUs.toFixed(1), best.alg, best.us.toFixed(1), `${row.factor.toFixed(2)}x`]);
    }
    const chartFiles = files.filter((f) => f.startsWith(`${op}-ppn${ppn}-`) && f.endsWith('-r1.json')).map((f) => `${dir}/${f}`);
    if (op !== 'barrier' && chartFiles.length > 0) {
      execFileSync('node', ['dist/cli/nbc.js', 'bench', 'chart', `docs/img/hier-${op}-ppn${ppn}.svg`, ...chartFiles, '--metric', 'latency']);
    }
  }
}
console.log(table.toString());

// Seed 004's cut-off: the model's block size where packing stops paying, against the
// measured one (the first size where hier alltoall is no faster than the best flat one).
const params = loadCostParams();
const cutoffs = [];
for (const ppn of [4, 2]) {
  const nodes = 8 / ppn;
  let predicted = null;
  for (let b = 1; b <= 1 << 20; b *= 2) {
    if (!choosePacking({ nodes, ppn, params, blockBytes: b })) { predicted = b; break; }
  }
  const rows = summary.filter((r) => r.op === 'alltoall' && r.ppn === ppn);
  const lastWin = rows.filter((r) => r.factor > 1).map((r) => r.bytes).pop() ?? null;
  const firstLoss = rows.find((r) => r.factor <= 1)?.bytes ?? null;
  const at = predicted === null ? null : predictAlltoall({ nodes, ppn, params, blockBytes: predicted });
  cutoffs.push({ nodes, ppn, predictedCutoffBytes: predicted, measuredLastWinBytes: lastWin, measuredFirstLossBytes: firstLoss, predictedAtCutoff: at });
  console.log(`alltoall ${nodes} x ${ppn}: model cut-off ${predicted} B per block; measured: hier still ahead at ${lastWin ?? '-'} B, behind from ${firstLoss ?? '- (never)'} B`);
}
writeFileSync(`${dir}/summary.json`, JSON.stringify({ rows: summary, cutoffs, params }, null, 2) + '\n');
