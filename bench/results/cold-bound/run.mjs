// Where a fresh job's first PCG solve loses its time on ranks that crowd the cores, measured
// side by side in ROUNDS interleaved rounds (default 3): hypre's DS-PCG (the peer), then
// `nbc pcg` cold (a fresh job's first solve) under V8 configurations that bound the JIT's
// part from either side, and the warm solve (after 5 untimed ones) for two of them:
//   default                     what a job runs with (TurboFan compiles inside the solve)
//   --no-opt                    no TurboFan at all: the library and the app in baseline code,
//                               the floor of a first solve that compiles nothing
//   --no-opt --always-sparkplug the same with baseline code from each function's first call
//   budget x6                   --always-sparkplug --interrupt-budget=400000: compiles later,
//                               after the first solve (a trade, below)
//   concurrent                  --concurrent-recompilation: TurboFan off the ranks' threads
// and the whole job's wall time (start-up included). Shapes 4 x 16^3 and 3 x 20^3 (more ranks
// than the 2 cores), Algorithm 1 and Overlap-PCG. Writes rounds.json and summary.md here.
// Usage: node bench/results/cold-bound/run.mjs   (after npm run build; needs libhypre-dev, Open MPI)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPeer } from '../../../scripts/peer-build.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLI = join(HERE, '../../../dist/cli/nbc.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SHAPES = [{ procs: 4, n: 16 }, { procs: 3, n: 20 }];
const VARIANTS = ['alg1', 'overlap'];
const CONFIGS = [
  { name: 'default', args: '', warm: true },
  { name: '--no-opt', args: '--no-opt' },
  { name: '--no-opt --always-sparkplug', args: '--no-opt --always-sparkplug' },
  { name: 'budget x6', args: '--always-sparkplug --interrupt-budget=400000', warm: true },
  { name: 'concurrent', args: '--concurrent-recompilation' },
];
const TOL = '1e-8';
const SCRATCH = mkdtempSync(join(tmpdir(), 'nbc-cold-bound-'));
const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];

function hypre(bin, { procs, n }) {
  const p = spawnSync('mpirun', ['--oversubscribe', '--allow-run-as-root', '-np', String(procs), bin, String(n), TOL], {
    encoding: 'utf8', timeout: 300_000, env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' },
  });
  const m = /iterations (\d+) .*per_iter_ms ([\d.]+)/.exec(p.stdout ?? '');
  if (p.status !== 0 || m === null) throw new Error(`hypre exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}`);
  return Number(m[2]);
}

function nbc({ procs, n }, variant, args, warmup) {
  const file = join(SCRATCH, 'solve.json');
  const t0 = performance.now();
  const p = spawnSync(process.execPath, [CLI, 'pcg', '--ranks', String(procs), '--n', String(n), '--tol', TOL, '--variant', variant,
    '--warmup', String(warmup), '--verify', 'off', '--quiet', '--json', file],
  { encoding: 'utf8', timeout: 300_000, env: { ...process.env, NBC_TRAIN: '0', NBC_NODE_ARGS: args } });
  const wallMs = performance.now() - t0;
  if (p.status !== 0) throw new Error(`nbc pcg (${args}) exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}`);
  return { ms: JSON.parse(readFileSync(file, 'utf8')).perIterationMs, wallMs };
}

const peer = buildPeer('hypre_pcg.c', { flags: ['-I/usr/include/hypre', '-lHYPRE', '-lm'], pkg: 'libhypre-dev' });
if (peer.why !== undefined) throw new Error(`hypre is needed for this run: ${peer.why}`);
const runs = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const shape of SHAPES) {
    const h = hypre(peer.bin, shape);
    runs.push({ round, shape: `${shape.procs}x${shape.n}`, what: 'hypre', ms: h });
    for (const variant of VARIANTS) {
      for (const c of CONFIGS) {
        for (const warmup of c.warm ? [0, 5] : [0]) {
          const r = nbc(shape, variant, c.args, warmup);
          runs.push({ round, shape: `${shape.procs}x${shape.n}`, variant, config: c.name, mode: warmup === 0 ? 'cold' : 'warm', ...r });
          process.stderr.write(`round ${round} ${shape.procs}x${shape.n} ${variant} ${c.name} ${warmup === 0 ? 'cold' : 'warm'}: ${r.ms.toFixed(3)} ms\n`);
        }
      }
    }
  }
}
writeFileSync(join(HERE, 'rounds.json'), `${JSON.stringify(runs, null, 1)}\n`);

const lines = [
  '# The first solve on crowded cores: where the time goes (`node bench/results/cold-bound/run.mjs`)',
  '',
  `${new Date().toISOString().slice(0, 10)}, ${ROUNDS} interleaved rounds; ms per iteration, median (range), ratio of the median to hypre's median of the same rounds; job wall: the whole \`nbc pcg\` job, start-up included (median ms).`,
  '',
  '| shape | variant | V8 | cold | x hypre | warm | x hypre | job wall, cold / warm |',
  '|---|---|---|---|---|---|---|---|',
];
for (const shape of SHAPES) {
  const s = `${shape.procs}x${shape.n}`;
  const h = median(runs.filter((r) => r.shape === s && r.what === 'hypre').map((r) => r.ms));
  lines.push(`| ${shape.procs} x ${shape.n}^3 | hypre | | ${h.toFixed(3)} | 1.00x | ${h.toFixed(3)} | 1.00x | |`);
  for (const variant of VARIANTS) {
    for (const c of CONFIGS) {
      const of = (mode) => runs.filter((r) => r.shape === s && r.variant === variant && r.config === c.name && r.mode === mode);
      const cell = (xs) => (xs.length === 0 ? ['', '', ''] : [
        `${median(xs.map((r) => r.ms)).toFixed(3)} (${Math.min(...xs.map((r) => r.ms)).toFixed(2)}-${Math.max(...xs.map((r) => r.ms)).toFixed(2)})`,
        `${(median(xs.map((r) => r.ms)) / h).toFixed(2)}x`, median(xs.map((r) => r.wallMs)).toFixed(0)]);
      const [cm, cr, cw] = cell(of('cold'));
      const [wm, wr, ww] = cell(of('warm'));
      lines.push(`| ${shape.procs} x ${shape.n}^3 | ${variant} | ${c.name} | ${cm} | ${cr} | ${wm} | ${wr} | ${cw}${ww === '' ? '' : ` / ${ww}`} |`);
    }
  }
}
writeFileSync(join(HERE, 'summary.md'), `${lines.join('\n')}\n`);
process.stdout.write(`${lines.join('\n')}\n`);
