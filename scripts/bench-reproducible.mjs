#!/usr/bin/env node
/**
 * `npm run bench:reproducible`: what a reproducible sum costs beside the plain one, measured
 * side by side in the same run.
 *
 * - the kernel: a binned deposit of every element of a 1 Mi-element Float64Array (K = 2 and 3)
 *   against a plain summation loop over the same array, in M elements/s on one core;
 * - allreduce on 2 ranks of one node at 8 B, 64 KiB, 1 MiB and 16 MiB: plain against
 *   `{ reproducible: true }` (folds 2 and 3), interleaved call by call, warm (2000 untimed calls
 *   of each side first at sizes to 64 KiB; scripts/reproducible-job.mjs);
 * - the bytes rank 0 sends per element of each call (the transport's count).
 *
 * Writes bench/results/reproducible/ (OUT): summary.json, summary.md. ROUNDS (default 3) jobs,
 * medians.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BinnedSum } from '../dist/index.js';
import { finishBlock, splitBlock, topCodes } from '../dist/ops/binned.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = process.env.OUT ?? `${ROOT}bench/results/reproducible`;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SIZES = [8, 65536, 1 << 20, 16 << 20];
mkdirSync(OUT, { recursive: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];

// ---- the kernel ----------------------------------------------------------------------------
const N = 1 << 20;
const data = Float64Array.from({ length: N }, (_, i) => Math.sin(i) * 2 ** ((i % 60) - 30));
const rate = (f) => {
  for (let w = 0; w < 3; w++) f();
  const xs = [];
  for (let r = 0; r < 9; r++) {
    const t = performance.now();
    f();
    xs.push(N / ((performance.now() - t) * 1000));
  }
  return median(xs);
};
let sink = 0;
const kernel = { plain: [], binned2: [], binned3: [], split2: [] };
const codes = new Uint8Array(N);
const counts = new Float64Array(2 * N);
const out = new Float64Array(N);
for (let r = 0; r < ROUNDS; r++) {
  kernel.plain.push(rate(() => { let s = 0; for (let i = 0; i < N; i++) s += data[i]; sink += s; }));
  kernel.binned2.push(rate(() => { sink += new BinnedSum(2).addAll(data).value(); }));
  kernel.binned3.push(rate(() => { sink += new BinnedSum(3).addAll(data).value(); }));
  // A collective's own work per element: its bin, its split on the agreed bins, the conversion back.
  kernel.split2.push(rate(() => { topCodes(data, codes); splitBlock(data, codes, 0, N, counts, 0, 2); finishBlock(counts, 0, codes, 0, N, out, 0, 2); sink += out[7]; }));
}
const k = Object.fromEntries(Object.entries(kernel).map(([side, v]) => [side, median(v)]));

// ---- allreduce ---------------------------------------------------------------------------
const runs = [];
for (let r = 0; r < ROUNDS; r++) {
  const p = spawnSync(process.execPath, [`${ROOT}dist/cli/nbc.js`, 'run', '-n', '2', `${ROOT}scripts/reproducible-job.mjs`, SIZES.join(','), '200'],
    { encoding: 'utf8', timeout: 600_000 });
  if (p.status !== 0) throw new Error(`reproducible-job: exit ${p.status}: ${p.stderr}`);
  runs.push(JSON.parse(p.stdout.trim().split('\n').at(-1)));
}
const rows = SIZES.map((bytes) => {
  const side = (s) => median(runs.map((x) => x[bytes][s]));
  const plain = side('plain');
  return { bytes, plainUs: plain, reproducibleUs: side('reproducible'), reproducible3Us: side('reproducible3'),
    ratio2: side('reproducible') / plain, ratio3: side('reproducible3') / plain,
    bytesPerElement: { plain: side('plainBytesPerElement'), folds2: side('reproducibleBytesPerElement'), folds3: side('reproducible3BytesPerElement') } };
});
const c = cpus();
const summary = { command: 'npm run bench:reproducible', rounds: ROUNDS, machine: { cpu: c[0]?.model, cores: c.length, node: process.version },
  date: new Date().toISOString(), kernelMElementsPerS: k, rows, sink: sink === 0 ? 0 : 1 };
writeFileSync(`${OUT}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
const size = (b) => (b >= 1 << 20 ? `${b >> 20} MiB` : b >= 1024 ? `${b >> 10} KiB` : `${b} B`);
const md = [
  '# Reproducible sums beside plain ones (`npm run bench:reproducible`)',
  '',
  `${summary.machine.cpu}, ${summary.machine.cores} cores, Node ${summary.machine.node}; medians of ${ROUNDS} rounds; ${summary.date}.`,
  '',
  `Kernel, one core, 1 Mi elements: plain sum ${k.plain.toFixed(0)} M elements/s; binned deposit ${k.binned2.toFixed(1)} (2 folds), ${k.binned3.toFixed(1)} (3 folds); a collective's own work per element (bin, split, finish) ${k.split2.toFixed(1)} (2 folds).`,
  '',
  '| allreduce, 2 ranks of one node | plain us | reproducible us (2 folds) | ratio | 3 folds us | ratio | bytes sent per element: plain / 2 folds / 3 folds |',
  '|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${size(r.bytes)} | ${r.plainUs.toFixed(1)} | ${r.reproducibleUs.toFixed(1)} | ${r.ratio2.toFixed(2)}x | ${r.reproducible3Us.toFixed(1)} | ${r.ratio3.toFixed(2)}x | ` +
    `${r.bytesPerElement.plain.toFixed(1)} / ${r.bytesPerElement.folds2.toFixed(1)} (${(r.bytesPerElement.folds2 / r.bytesPerElement.plain).toFixed(2)}x) / ${r.bytesPerElement.folds3.toFixed(1)} |`),
  '',
  'Bytes: what rank 0 sends per element of the call (the transport\'s count), headers included.',
  '',
];
writeFileSync(`${OUT}/summary.md`, md.join('\n'));
process.stdout.write(md.join('\n'));
