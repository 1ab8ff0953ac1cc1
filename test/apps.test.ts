/**
 * The proof applications verified (issue 14): the CG against its manufactured exact solution,
 * every PCG variant and executor (host, offload, agg) against a sequential reference solve, on
 * 1..16 ranks over 1..4 nodes with uneven grids; Overlap-PCG against Algorithm 2 iterate by iterate; the CLI and
 * `nbc run` paths end to end. Small grids: the whole file takes well under a minute.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAppArgs } from '../src/apps/run.ts';
import { boundaryBoxes, interiorBox, makeBox, recvRegion, sendRegion, split1d } from '../src/apps/grid.ts';
import type { CgRun, PcgRun } from './jobs/apps.ts';
import { launch } from 'nbcoll';
import { jobPath } from './helpers.ts';

const NBC = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const T = { timeout: 120_000 };

describe('the proof applications (nbc cg, nbc pcg)', () => {
  test('split1d() and the interior plus boundary boxes cover every row of a local grid exactly once, halo regions pair up', () => {
    assert.deepEqual([0, 1, 2].map((c) => split1d(10, 3, c)), [{ start: 0, len: 4 }, { start: 4, len: 3 }, { start: 7, len: 3 }]);
    for (const n of [[1, 1, 1], [2, 1, 3], [2, 2, 2], [5, 3, 4], [1, 6, 2]]) {
      const box = makeBox(n, [1, 1, 1], [0, 0, 0]);
      const hits = new Uint8Array(box.rows);
      for (const b of [interiorBox(box), ...boundaryBoxes(box)]) {
        for (let i = b[0]!; i < b[1]!; i++) for (let j = b[2]!; j < b[3]!; j++) for (let k = b[4]!; k < b[5]!; k++) hits[(i * n[1]! + j) * n[2]! + k]!++;
      }
      assert.ok(hits.every((h) => h === 1), `local grid ${n.join('x')}: every row once`);
      // What a rank sends towards offset o has as many points as the ghosts its neighbour fills from -o.
      for (const o of [[1, 0, 0], [0, -1, 1], [-1, -1, -1]]) assert.equal(sendRegion(box, o).length, recvRegion(box, o.map((v) => -v)).length);
    }
  });

  // Uneven: 10x9x7 over 2x1x1, 3x1x1, 7x1x1, 2x2x2 and 4x2x2 process grids; nodes of unequal
  // size (7 = 3+3+1). 16 ranks on 4 nodes run agg (a private fabric: PCG's
  // inner products reduced by the daemons) against the same sequential reference as host and
  // offload on the others.
  const CASES: Array<[number, number, string[]]> = [
    [1, 1, ['host', 'offload']], [2, 1, ['host', 'offload']], [3, 3, ['host', 'offload']],
    [7, 3, ['host', 'offload']], [8, 2, ['host', 'offload']], [16, 4, ['agg']],
  ];
  for (const [n, ppn, executors] of CASES) {
    test(`every PCG variant and executor (${executors.join(', ')}) matches the sequential reference and CG the exact solution on ${n} ranks over ${Math.ceil(n / ppn)} node(s), global 10x9x7`, T, async () => {
      const agg = executors.includes('agg') ? { agg: 'radix=2,levels=2' } : {};
      const r = await launch(jobPath('apps.ts'), { ranks: n, ppn, args: ['10,9,7', executors.join(',')], output: 'pipe', timeoutMs: 100_000, ...agg });
      assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
      if (executors.includes('agg')) assert.doesNotMatch(r.stderr, /uses host algorithms/, 'the fabric served the solvers');
      const out = r.ranks.find((x) => x.rank === 0)!.result as { pcg: PcgRun[]; cg: CgRun[] };
      assert.equal(out.pcg.length, 3 * executors.length);
      for (const p of out.pcg) {
        assert.ok(Math.abs(p.iterations - p.refIterations) <= 1, `${p.variant}/${p.executor}: ${p.iterations} iterations, reference ${p.refIterations}`);
        assert.ok(p.diff <= 1e-6, `${p.variant}/${p.executor}: ||x - x_ref|| / ||x_ref|| = ${p.diff}`);
      }
      const iters = out.pcg.map((p) => p.iterations);
      assert.ok(Math.max(...iters) - Math.min(...iters) <= 1, `iteration counts ${iters.join(', ')}`);
      // Overlap-PCG performs Algorithm 2's operations on the same data: the same residuals up to rounding.
      for (const executor of executors) {
        const a2 = out.pcg.find((p) => p.variant === 'alg2' && p.executor === executor)!;
        const ov = out.pcg.find((p) => p.variant === 'overlap' && p.executor === executor)!;
        assert.equal(ov.iterations, a2.iterations);
        a2.history.forEach((h, i) => assert.ok(Math.abs(ov.history[i]! - h) <= 1e-9 * h, `${executor} iteration ${i + 1}: ${ov.history[i]} vs ${h}`));
      }
      assert.equal(out.cg.length, 2 * executors.length);
      for (const c of out.cg) assert.ok(c.error <= c.bound && c.error < 1e-5, `cg ${c.mode}/${c.executor}: error ${c.error}, bound ${c.bound}`);
      const cgIters = out.cg.map((c) => c.iterations);
      assert.ok(Math.max(...cgIters) - Math.min(...cgIters) <= 1, `cg iteration counts ${cgIters.join(', ')}`);
    });
  }

  test("nbc pcg reaches hypre's 58 iterations on 40^3 unknowns (1 process) and writes its JSON record", T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-apps-'));
    const json = join(dir, 'pcg.json');
    await promisify(execFile)(process.execPath, [NBC, 'pcg', '--ranks', '1', '--n', '40', '--variant', 'alg1', '--verify', 'off', '--quiet', '--json', json], { timeout: 60_000 });
    const r = JSON.parse(readFileSync(json, 'utf8')) as Record<string, unknown>;
    assert.equal(r.iterations, 58);
    for (const k of ['app', 'variant', 'ranks', 'ppn', 'iterations', 'finalRelResidual', 'solveSeconds', 'perIterationMs', 'phases']) assert.ok(k in r, `JSON has ${k}`);
    assert.ok((r.finalRelResidual as number) < 1e-8);
  });

  test('--algorithm names the inner products\' allreduce only: the halo keeps its own, and every variant still matches the reference', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-apps-'));
    try {
      for (const [app, variant] of [['pcg', 'alg1'], ['pcg', 'overlap'], ['cg', null]] as const) {
        const json = join(dir, `${app}-${variant ?? 'cg'}.json`);
        // The halo is a neighbour exchange, which has no recursive doubling: it used to be refused.
        await promisify(execFile)(process.execPath, [NBC, app, '--ranks', '4', '--n', '6', ...(variant === null ? [] : ['--variant', variant]),
          '--algorithm', 'recursive-doubling', '--verify', 'on', '--quiet', '--json', json], { timeout: 60_000 });
        const r = JSON.parse(readFileSync(json, 'utf8')) as { algorithm: string | null; verification: { ok: boolean } };
        assert.equal(r.algorithm, 'recursive-doubling');
        assert.ok(r.verification.ok, `${app} ${variant ?? ''}: verified`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every PCG variant stopped by --max-iter holds the iterate of its last iteration: the reference stopped at the same limit matches it', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-apps-'));
    try {
      for (const variant of ['alg1', 'alg2', 'overlap']) {
        const json = join(dir, `pcg-${variant}.json`);
        await promisify(execFile)(process.execPath, [NBC, 'pcg', '--ranks', '2', '--n', '6', '--variant', variant, '--max-iter', '5',
          '--verify', 'on', '--quiet', '--json', json], { timeout: 60_000 });
        const r = JSON.parse(readFileSync(json, 'utf8')) as { iterations: number; verification: { ok: boolean; value: number } };
        assert.equal(r.iterations, 5, `${variant}: stopped by the limit`);
        assert.ok(r.verification.ok && r.verification.value <= 1e-6, `${variant}: ||x - x_ref|| / ||x_ref|| = ${r.verification.value}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('nbc run runs the CG job file over 2 nodes with an emulated link and prints its verification', T, async () => {
    const job = fileURLToPath(new URL('../dist/apps/cg.js', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [NBC, 'run', '-n', '4', '--ppn', '2', '--link', 'latency=50us,bandwidth=1gbit', job, '--n', '6', '--mode', 'nonblocking'], { timeout: 60_000 });
    assert.match(stdout, /verification \(manufactured exact solution\): ok/);
    assert.match(stdout, /4 ranks \(2 node\(s\) x 2\)/);
  });

  test('--warmup runs untimed solves first: the timed solve reports the same iterations and counts only its own test() calls', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-apps-'));
    const run = async (warmup: string): Promise<Record<string, unknown>> => {
      const json = join(dir, `cg-${warmup}.json`);
      await promisify(execFile)(process.execPath, [NBC, 'cg', '--ranks', '2', '--n', '6', '--mode', 'nonblocking', '--test-interval', '1',
        '--warmup', warmup, '--quiet', '--json', json], { timeout: 60_000 });
      return JSON.parse(readFileSync(json, 'utf8')) as Record<string, unknown>;
    };
    const [cold, warm] = await (async () => {
      try {
        return [await run('0'), await run('2')];
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    })();
    assert.equal(cold.warmupSolves, 0);
    assert.equal(warm.warmupSolves, 2);
    assert.equal(warm.iterations, cold.iterations);
    assert.equal(warm.finalRelResidual, cold.finalRelResidual, 'the timed solve starts from x0 = 0 again');
    assert.ok((cold.testCalls as number) > 0);
    assert.equal(warm.testCalls, cold.testCalls);
    assert.equal((warm.verification as { ok: boolean }).ok, true);
    assert.throws(() => parseAppArgs('pcg', ['--warmup=-1']), { code: 'NBC_ERR_ARG', message: /--warmup -1: expected an integer >= 0/ });
    assert.throws(() => parseAppArgs('cg', ['--warm-up', '1']), { code: 'NBC_ERR_ARG', message: /cg job's arguments: Unknown option '--warm-up'/ });
    assert.throws(() => parseAppArgs('pcg', ['--executor', 'gpu']), { code: 'NBC_ERR_ARG', message: /--executor gpu: expected one of host, offload, agg/ });
    assert.throws(() => parseAppArgs('cg', ['--chart', 'x.gif']), { code: 'NBC_ERR_ARG', message: /extension '\.gif' is not supported/ });
  });

  test('nbc cg and nbc pcg refuse a bad value once, in one line with exit code 2, before any rank starts', T, async () => {
    for (const [app, flag, value, why] of [['cg', '--n', '0', /Cannot use --n 0: expected an integer >= 1/], ['pcg', '--executor', 'gpu', /--executor gpu: expected one of host, offload, agg/]] as const) {
      const err = await promisify(execFile)(process.execPath, [NBC, app, '--ranks', '2', flag, value], { timeout: 60_000 }).then(() => null, (e: unknown) => e as { code: number; stderr: string });
      assert.ok(err !== null, `${app} ${flag} ${value} exited 0`);
      assert.equal(err.code, 2, err.stderr);
      const lines = err.stderr.trim().split('\n');
      assert.equal(lines.length, 1, err.stderr);
      assert.match(lines[0]!, why);
    }
  });
});
