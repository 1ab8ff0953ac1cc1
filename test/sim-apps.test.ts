import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ScheduleBuilder, RECV, SEND } from '../src/sched/schedule.ts';
import { programOf, runProgram, PRESETS, parseSimParams, type SimParams } from '../src/sim/index.ts';
import { iterationsFor, simulateApp, type AppCompute, type AppSpec } from '../src/sim/apps.ts';
import { measureAppCompute, OWN_ITERATIONS, SEED000_COMPUTE } from '../src/sim/app-compute.ts';

/** Round numbers, so the times below can be checked by hand: only the network's o and L cost anything. */
const P: SimParams = {
  source: 'test',
  net: { L: 10, o: 1, g: 0, G: 0, O: 0, S: 1 << 20 },
  shm: { L: 1, o: 0.5, g: 0, G: 0, O: 0, S: 1 << 20 },
  reduceUsPerByte: 0,
  copyUsPerByte: 0,
  postUs: 0,
  agg: { radix: 2, levels: 1, payload: 256, slots: 4, linkUs: 0.5, hopUs: 0.7, hopPerByteUs: 0.01 },
};

/** Every kernel free but the matvec: 5 us a row. */
const C: AppCompute = {
  source: 'test', matvec27RowUs: 5, matvec7RowUs: 5, dotRowUs: 0, axpyRowUs: 0, scaleRowUs: 0, divideRowUs: 0, packUs: 0, spread: 0,
  iterations: { pcg: 1, cg: 1 },
};

const spec = (over: Partial<AppSpec>): AppSpec => ({
  app: 'cg', ranks: 2, ppn: 1, n: 1, global: null, variant: 'cg', mode: 'blocking', executor: 'host', testInterval: 0,
  iterations: 3, noise: null, seed: 1, ...over,
});

test('CG on 2 ranks of 2 nodes, by hand: a blocking halo of 2o + L, the matvec, two allreduces of 2o + L each', { timeout: 10_000 }, () => {
  // Global 2 x 1 x 1: one row per rank, one face of one element each way. An iteration: the
  // halo (send o, flight L, receive o: 12 us), the matvec (1 row x 5 us), the (s, p) and (r, r)
  // allreduces (recursive doubling on 2 ranks: one exchange each, 12 us; the fold costs 0).
  const r = simulateApp(spec({ global: [2, 1, 1] }), P, C);
  assert.equal(r.iterations, 3);
  assert.deepEqual(r.processGrid, [2, 1, 1]);
  assert.ok(Math.abs(r.solveSeconds * 1e6 - 3 * (12 + 5 + 12 + 12)) < 1e-6, `${r.solveSeconds * 1e6} us`);
  assert.ok(Math.abs(r.phases.halo!.commSeconds * 1e6 - 3 * 12) < 1e-6, 'halo');
  assert.ok(Math.abs(r.phases.matvec!.seconds * 1e6 - 3 * 5) < 1e-6, 'matvec');
  assert.ok(Math.abs((r.phases.sdotp!.commSeconds + r.phases.iprod!.commSeconds) * 1e6 - 3 * 24) < 1e-6, 'inner products');
});

test('the non-blocking halo hides behind the interior rows: only what is left after them shows', { timeout: 10_000 }, () => {
  // Global 6 x 3 x 3 on 2 ranks: 3 x 3 x 3 each, 18 interior rows (all but the layer toward the
  // neighbour). The halo's flight runs behind 18 x 5 = 90 us of interior rows; what shows is
  // the send's o before them and the receive's o after (2 us, against 2o + L = 12 blocking).
  const blocking = simulateApp(spec({ global: [6, 3, 3], iterations: 1 }), P, C);
  const overlapped = simulateApp(spec({ global: [6, 3, 3], iterations: 1, mode: 'nonblocking' }), P, C);
  assert.ok(Math.abs(blocking.phases.halo!.commSeconds * 1e6 - 12) < 1e-6);
  assert.ok(Math.abs(overlapped.phases.halo!.commSeconds * 1e6 - 2) < 1e-6, `${overlapped.phases.halo!.commSeconds * 1e6}`);
  assert.ok(Math.abs((blocking.solveSeconds - overlapped.solveSeconds) * 1e6 - 10) < 1e-6);
});

test('without test() a rendezvous waits for the compute to end; with test() every so often it moves behind it', { timeout: 10_000 }, () => {
  const big: SimParams = { ...P, net: { ...P.net, S: 100 }, testUs: 0.5 };
  const a = new ScheduleBuilder('x');
  a.send(1, { buf: SEND, offset: 0, bytes: 1000 });
  a.recv(1, { buf: RECV, offset: 0, bytes: 1000 });
  const b = new ScheduleBuilder('x');
  b.send(0, { buf: SEND, offset: 0, bytes: 1000 });
  b.recv(0, { buf: RECV, offset: 0, bytes: 1000 });
  const prog = programOf([a.build(), b.build()], 1);
  const idle = runProgram(prog, big, { computeUs: 1000 });
  const tested = runProgram(prog, big, { computeUs: 1000, testEveryUs: 100 });
  // Without tests: the request (o, L), then after the compute the clear-to-send (o, L) and the
  // data (o, L), taken in (o): 1000 + 1 + (1 + 10) + (1 + 10) + 1 = 1024.
  assert.ok(Math.abs(idle.done[0]! - 1024) < 1e-9, `${idle.done[0]}`);
  // With a test every 100 us (0.5 us each): the exchange completes during the compute, which
  // ends after the request's o, its 10 pieces, 9 tests and the exchange's CPU work in between
  // (answer the peer's request, send the data, take the peer's data in: 3 o's).
  assert.ok(tested.done[0]! < idle.done[0]! - 15, `${tested.done[0]}`);
  assert.ok(Math.abs(tested.done[0]! - (1 + 1000 + 9 * 0.5 + 3)) < 1e-9, `${tested.done[0]}`);
});

test('PCG variants keep the paper\'s order on its preset, and noise slows the blocking variant more', { timeout: 60_000 }, () => {
  const qdr = PRESETS['qdr-cx2']!;
  const run = (variant: string, extra: Partial<AppSpec> = {}) => simulateApp(spec({
    app: 'pcg', ranks: 64, ppn: 8, n: 40, variant, iterations: 10, mode: 'nonblocking',
    ...(variant === 'overlap' ? { executor: 'offload', algorithm: 'recursive-doubling' } : {}), ...extra,
  }), qdr, qdr.compute!);
  const [a1, a2, ov] = [run('alg1'), run('alg2'), run('overlap')];
  assert.ok(ov.solveSeconds < a2.solveSeconds && a2.solveSeconds < a1.solveSeconds, `${a1.solveSeconds} ${a2.solveSeconds} ${ov.solveSeconds}`);
  const noise = { durationUs: 200, periodUs: 1000 };
  assert.ok(run('alg2', { noise }).solveSeconds / a2.solveSeconds > run('overlap', { noise }).solveSeconds / ov.solveSeconds);
  // The same seed gives the same bits.
  assert.equal(run('alg2', { noise }).solveSeconds, run('alg2', { noise }).solveSeconds);
});

test('iterations follow the grid\'s diagonal; the seed 000 preset reproduces Table I\'s 951 on 256 x 60^3', () => {
  assert.equal(iterationsFor('pcg', [480, 480, 240], SEED000_COMPUTE), 951);
  assert.equal(iterationsFor('pcg', [28, 28, 28], { ...C, iterations: OWN_ITERATIONS }), Math.round(0.87 * Math.hypot(28, 28, 28)));
});

test('the compute model is measured here when the parameters carry none, and checked field by field from a file', { timeout: 30_000 }, () => {
  const m = measureAppCompute(16, 5);
  for (const k of ['matvec27RowUs', 'matvec7RowUs', 'dotRowUs', 'axpyRowUs', 'scaleRowUs', 'divideRowUs'] as const) {
    assert.ok(m[k] > 0 && m[k] < 1, `${k} ${m[k]}`);
  }
  assert.ok(m.matvec27RowUs > m.axpyRowUs, 'a 27-point row costs more than an axpy row');
  const base = { ...P, compute: SEED000_COMPUTE };
  assert.deepEqual(parseSimParams(JSON.parse(JSON.stringify(base)), 'p.json').compute, SEED000_COMPUTE);
  assert.throws(() => parseSimParams({ ...base, compute: { ...SEED000_COMPUTE, dotRowUs: -1 } }, 'p.json'), {
    code: 'NBC_ERR_ARG', message: 'Cannot use the simulator parameters from p.json: compute.dotRowUs is -1; expected a finite number >= 0',
  });
});

const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const nbc = (...args: string[]) => spawnSync(process.execPath, [CLI, 'sim', ...args], { encoding: 'utf8', timeout: 60_000 });

test('nbc sim pcg prints the phases; wrong options are refused by name', { timeout: 60_000 }, () => {
  const ok = nbc('pcg', '--ranks', '8', '--ppn', '4', '--n', '10', '--variant', 'alg2', '--params', 'qdr-cx2', '--iterations', '5');
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /pcg alg2 on 8 ranks \(4 per node\), grid 20x20x20/);
  assert.match(ok.stdout, /5 iterations \(given \(--iterations\)\)/);
  assert.match(ok.stderr, /compute: seed 000 Table I/);
  const bad = nbc('pcg', '--ranks', '8', '--variant', 'alg9', '--params', 'qdr-cx2');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /Cannot simulate pcg --variant alg9: expected one of alg1, alg2, overlap \[NBC_ERR_ARG\]/);
  const coll = nbc('allreduce', '--ranks', '8', '--variant', 'alg1');
  assert.equal(coll.status, 2);
  assert.match(coll.stderr, /Cannot simulate allreduce with --variant: it applies to the applications/);
  const hier = nbc('cg', '--ranks', '8', '--executor', 'hier', '--params', 'qdr-cx2');
  assert.equal(hier.status, 2);
  assert.match(hier.stderr, /Cannot simulate cg on executor 'hier': expected host, offload or agg/);
});
