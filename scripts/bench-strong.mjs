#!/usr/bin/env node
/**
 * `npm run bench:strong`: seed 000's PCG at strong-scaling shapes, next to hypre on the same
 * cores, in ROUNDS interleaved rounds (default 3), medians. Per shape (processes x N^3 per
 * process: the issue's four, 1 x 28^3, 2 x 24^3, 3 x 20^3, 4 x 16^3, and 40^3 per process on
 * 1 to 4; SHAPES="p:n ..." overrides), one round runs hypre's DS-PCG
 * (../shared/peers/hypre_pcg.c under Open MPI, built here) and then `nbc pcg` with each variant
 * (Algorithm 1, Algorithm 2, Overlap-PCG) four ways:
 *
 * - cold: the first solve of a fresh job (`--warmup 0`);
 * - cold, trained: with the library trained before the job (NBC_TRAIN=300, runtime/train.ts),
 *   and each job's wall time beside it (start-up included);
 * - warm: the solve after 5 untimed ones (`--warmup 5`);
 * - steady: the solve after 20 untimed ones (`--warmup 20`), where every hot path, the
 *   non-blocking one included, has been optimised by V8 (it takes 1000-2000 calls of a
 *   function called once per collective).
 *
 * Targets: warm <= 1.3x hypre, cold <= 2x, iterations equal to
 * hypre's +-1. hypre is C and has no warm-up: its one solve is its cold and its warm time.
 * Writes bench/results/strong/ (OUT): each run's JSON, summary.json, summary.md, and the chart
 * docs/img/strong.svg. Needs libhypre-dev and Open MPI for the peer; without them the nbc
 * side is measured alone and says why. CHART moves the chart elsewhere.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderSpec } from '../dist/bench/chart.js';
import { buildPeer } from './peer-build.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = `${ROOT}dist/cli/nbc.js`;
const OUT = process.env.OUT ?? `${ROOT}bench/results/strong`;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SHAPES = (process.env.SHAPES ?? '1:28 1:40 2:24 2:40 3:20 3:40 4:16 4:40').split(/\s+/).filter(Boolean).map((s) => {
  const [p, n] = s.split(':').map(Number);
  return { procs: p, n };
});
const VARIANTS = ['alg1', 'alg2', 'overlap'];
const MODES = [
  { mode: 'cold', warmup: 0, env: { NBC_TRAIN: '0' } },
  { mode: 'cold-trained', warmup: 0, env: { NBC_TRAIN: '300' } },
  { mode: 'warm', warmup: 5, env: { NBC_TRAIN: '0' } },
  { mode: 'steady', warmup: 20, env: { NBC_TRAIN: '0' } },
];
const TOL = '1e-8';
mkdirSync(OUT, { recursive: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];

function hypre(bin, { procs, n }) {
  const p = spawnSync('mpirun', ['--oversubscribe', '--allow-run-as-root', '-np', String(procs), bin, String(n), TOL], {
    encoding: 'utf8', timeout: 300_000, env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' },
  });
  const m = /iterations (\d+) .*per_iter_ms ([\d.]+)/.exec(p.stdout ?? '');
  if (p.status !== 0 || m === null) return { error: `hypre exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}` };
  return { iterations: Number(m[1]), perIterationMs: Number(m[2]) };
}

function nbc({ procs, n }, variant, m, round) {
  const file = `${OUT}/pcg-${procs}x${n}-${variant}-${m.mode}-r${round}.json`;
  const t0 = performance.now();
  const p = spawnSync(process.execPath, [CLI, 'pcg', '--ranks', String(procs), '--n', String(n), '--tol', TOL, '--variant', variant,
    '--warmup', String(m.warmup), '--verify', 'off', '--quiet', '--json', file], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, ...m.env } });
  const wallMs = performance.now() - t0;
  if (p.status !== 0) return { error: `nbc pcg exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}` };
  const j = JSON.parse(readFileSync(file, 'utf8'));
  return { iterations: j.iterations, perIterationMs: j.perIterationMs, solveMs: j.perIterationMs * j.iterations, jobWallMs: wallMs };
}

const peer = buildPeer('hypre_pcg.c', { flags: ['-I/usr/include/hypre', '-lHYPRE', '-lm'], pkg: 'libhypre-dev', src: process.env.HYPRE_PEER ?? null });
if (peer.why !== undefined) process.stderr.write(`bench:strong: hypre not measured: ${peer.why}\n`);
const runs = {};
const note = (key, value) => (runs[key] ??= []).push(value);
for (let round = 1; round <= ROUNDS; round++) {
  for (const shape of SHAPES) {
    const s = `${shape.procs}x${shape.n}`;
    if (peer.bin !== undefined) note(`${s}-hypre`, hypre(peer.bin, shape));
    for (const v of VARIANTS) for (const m of MODES) note(`${s}-${v}-${m.mode}`, nbc(shape, v, m, round));
  }
  // Each round's readings as they stand, for a run cut short by a time limit.
  writeFileSync(`${OUT}/runs.json`, JSON.stringify(runs, null, 2) + '\n');
  process.stderr.write(`round ${round}/${ROUNDS} done\n`);
}

const fig = (key, field) => {
  const xs = runs[key] ?? [];
  const bad = xs.find((x) => x.error !== undefined);
  if (bad !== undefined) return { error: bad.error };
  return { median: median(xs.map((x) => x[field])), rounds: xs.map((x) => x[field]) };
};
const target = { cold: 2, 'cold-trained': 2, warm: 1.3, steady: 1.3 };
const rows = [];
const chart = [];
for (const shape of SHAPES) {
  const s = `${shape.procs}x${shape.n}`;
  const h = peer.bin === undefined ? { error: peer.why } : fig(`${s}-hypre`, 'perIterationMs');
  const hIt = peer.bin === undefined ? null : fig(`${s}-hypre`, 'iterations').median ?? null;
  for (const v of VARIANTS) {
    for (const m of MODES) {
      const x = fig(`${s}-${v}-${m.mode}`, 'perIterationMs');
      const it = fig(`${s}-${v}-${m.mode}`, 'iterations').median ?? null;
      const wall = fig(`${s}-${v}-${m.mode}`, 'jobWallMs').median ?? null;
      const ratio = x.median !== undefined && h.median !== undefined ? x.median / h.median : null;
      const itOk = it !== null && hIt !== null ? Math.abs(it - hIt) <= 1 : null;
      rows.push({
        shape: `${shape.procs} x ${shape.n}^3`, variant: v, mode: m.mode, nbcMs: x.median ?? null, nbcRounds: x.rounds ?? null,
        hypreMs: h.median ?? null, hypreRounds: h.rounds ?? null, ratio, target: target[m.mode], iterations: it, hypreIterations: hIt, jobWallMs: wall,
        verdict: x.error ?? (ratio === null ? `hypre not measured: ${h.error}` : `${ratio <= target[m.mode] ? 'met' : 'missed'}${itOk === false ? '; iterations differ' : ''}`),
      });
      if (ratio !== null) chart.push({ shape: `${shape.procs} x ${shape.n}^3`, side: `${v}, ${m.mode}`, ratio });
    }
  }
}

const c = cpus();
const summary = {
  command: 'npm run bench:strong', rounds: ROUNDS, tol: TOL, machine: { cpu: c[0]?.model ?? 'unknown', cores: c.length, node: process.version },
  date: new Date().toISOString(), loadAverageAtEnd: loadavg(), hypre: peer.why ?? 'hypre 2.x DS-PCG under Open MPI (../shared/peers/hypre_pcg.c)', rows, runs,
};
writeFileSync(`${OUT}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
const f3 = (x) => (x === null ? '' : x.toFixed(3));
const cell = (r) => (r === undefined || r.nbcMs === null ? (r?.verdict ?? '') : `${f3(r.nbcMs)}${r.ratio === null ? '' : ` (${r.ratio.toFixed(2)}x${r.ratio <= r.target ? '' : ' !'})`}`);
const wide = [];
for (const shape of SHAPES) {
  for (const v of VARIANTS) {
    const of = (m) => rows.find((r) => r.shape === `${shape.procs} x ${shape.n}^3` && r.variant === v && r.mode === m);
    const c = of('cold');
    wide.push(`| ${shape.procs} x ${shape.n}^3 | ${v} | ${f3(c?.hypreMs ?? null)} | ${MODES.map((m) => cell(of(m.mode))).join(' | ')} | ${c?.iterations ?? ''} (${c?.hypreIterations ?? ''}) | ${MODES.map((m) => of(m.mode)?.jobWallMs?.toFixed(0) ?? '').join(' / ')} |`);
  }
}
const md = [
  '# `nbc pcg` against hypre at strong-scaling shapes (`npm run bench:strong`)',
  '',
  `${summary.machine.cpu}, ${summary.machine.cores} cores, Node ${summary.machine.node}; medians of ${ROUNDS} interleaved rounds; ${summary.date}; load average at the end ${summary.loadAverageAtEnd.map((x) => x.toFixed(1)).join(' ')}.`,
  '',
  'ms per iteration (ratio to hypre; ! where over the target: cold <= 2x, warm and steady <= 1.3x). cold: the first solve of a fresh job; trained: NBC_TRAIN=300; warm: after 5 untimed solves; steady: after 20. Job wall ms: each column\'s whole job, start-up included.',
  '',
  `| shape | variant | hypre | ${MODES.map((m) => m.mode).join(' | ')} | iterations (hypre) | job wall ms |`,
  `|---|---|---|${MODES.map(() => '---|').join('')}---|---|`,
  ...wide,
  '',
];
writeFileSync(`${OUT}/summary.md`, md.join('\n'));
if (chart.length > 0) {
  const file = process.env.CHART ?? `${ROOT}docs/img/strong.svg`;
  mkdirSync(dirname(file), { recursive: true });
  await renderSpec({
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: 'nbc pcg against hypre, ms per iteration as a ratio (medians)',
    width: 420, height: 240,
    data: { values: chart },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'shape', type: 'nominal', title: 'processes x unknowns per process' },
      xOffset: { field: 'side' },
      y: { field: 'ratio', type: 'quantitative', scale: { type: 'log' }, title: 'nbc / hypre' },
      color: { field: 'side', type: 'nominal', title: '', legend: { orient: 'bottom', columns: 4, labelLimit: 300 } },
    },
  }, file);
}
process.stdout.write(md.join('\n'));
