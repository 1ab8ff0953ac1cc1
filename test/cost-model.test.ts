import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chooseHier, choosePacking, DEFAULT_PARAMS, fitLine, fitPath, packingCutoffBytes, parseParams, predictAlltoall,
  predictHier, scatterLatency, SEED_004_PARAMS, type CostParams, type HierColl, type ParamsFile,
} from '../src/coll/cost-model.js';
import { ErrorCode } from '../src/errors.js';
import { loadCostParams, paramsFilePath, readParamsFile, writeParamsFile } from '../src/runtime/params-file.js';
import { hasCode } from './assert.ts';

const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const SEED = SEED_004_PARAMS;
/** Seed 004's InfiniBand between nodes, this machine's shared memory inside them. */
const IB: CostParams = { shm: DEFAULT_PARAMS.shm, tcp: SEED };

const close = (a: number, b: number, eps = 1e-9): void => assert.ok(Math.abs(a - b) <= eps, `${a} is not ${b}`);

function validFile(): ParamsFile {
  return {
    version: 1, measuredAt: '2025-01-02T03:04:05.000Z', host: 'h', node: 'v20.0.0',
    paths: { shm: { startupUs: 0.5, perByteUs: 1e-4, constantUs: 0.1 }, tcp: { startupUs: 4, perByteUs: 2e-3, constantUs: 70 } },
  };
}

test("packingCutoffBytes() gives seed 004's 2243 bytes from T_startup = 2.098 us and beta = 0.000935 us/B (eq. 5)", () => {
  assert.equal(packingCutoffBytes(SEED), 2243);
  assert.equal(packingCutoffBytes({ startupUs: 1, perByteUs: 0, constantUs: 0 }), Infinity);
});

test("scatterLatency() reproduces seed 004's 11-process scatter: 21 us without C, 11 us with C = -10 (observed 9.9 us)", () => {
  close(scatterLatency({ ...SEED, constantUs: 0 }, 11, 1), 10 * 2.098 + 0.000935);
  close(scatterLatency(SEED, 11, 1), 10 * 2.098 + 0.000935 - 10);
});

test('scatterLatency() is start-up bound below the cut-off (eq. 2) and transmission bound above it (eq. 3)', () => {
  const n = 32; // the paper profiled 32 processes
  for (const x of [1, 1024, 2243]) close(scatterLatency(SEED, n, x), (n - 1) * SEED.startupUs + x * SEED.perByteUs + SEED.constantUs);
  for (const x of [2244, 16384, 1 << 20]) close(scatterLatency(SEED, n, x), SEED.startupUs + (n - 1) * x * SEED.perByteUs + SEED.constantUs);
  // Eq. 2 and 3 meet at the switch point, n * T_startup + C: no jump.
  const xs = SEED.startupUs / SEED.perByteUs;
  close(scatterLatency(SEED, n, xs - 1e-6), n * SEED.startupUs + SEED.constantUs, 1e-6);
  close(scatterLatency(SEED, n, xs + 1e-6), n * SEED.startupUs + SEED.constantUs, 1e-6);
  // Nothing to send, and never faster than one message.
  assert.equal(scatterLatency(SEED, 1, 100), 0);
  close(scatterLatency(SEED, 2, 8), SEED.startupUs + 8 * SEED.perByteUs);
});

test('fitPath() recovers T_startup, beta and C from samples the model generated', () => {
  const truth = { startupUs: 3.5, perByteUs: 0.002, constantUs: 60 };
  const sizes = [1, 16, 256, 1024, 4096, 16384, 65536];
  const pingPong = sizes.map((bytes) => ({ bytes, us: 75 + bytes * truth.perByteUs }));
  const points = Array.from({ length: 16 }, (_, i) => ({ messages: i + 1, us: scatterLatency(truth, i + 2, 1) }));
  const fit = fitPath({ pingPong, scatter: { bytes: 1, points } });
  close(fit.startupUs, truth.startupUs, 1e-9);
  close(fit.perByteUs, truth.perByteUs, 1e-12);
  close(fit.constantUs, truth.constantUs, 1e-9);
  const line = fitLine([1, 2, 3], [2, 4, 6]);
  close(line.slope, 2);
  close(line.intercept, 0);
  assert.throws(() => fitLine([1, 1], [2, 3]), hasCode(ErrorCode.ARG, /same x/));
});

test('parseParams() accepts a valid file, as text or value, ignoring unknown keys', () => {
  const f = validFile();
  assert.deepEqual(parseParams(f), f);
  assert.deepEqual(parseParams(JSON.stringify({ ...f, samples: { shm: [] } })), f);
  const withUcx = { ...f, paths: { ...f.paths, ucx: { startupUs: 1, perByteUs: 1e-4, constantUs: -2 } } };
  assert.deepEqual(parseParams(withUcx).paths.ucx, { startupUs: 1, perByteUs: 1e-4, constantUs: -2 });
});

test('parseParams() rejects bad input with a message naming the bad field', () => {
  const f = validFile();
  const bad: Array<[unknown, RegExp]> = [
    ['{ not json', /not JSON/],
    [[], /the top level is an array; expected an object/],
    [{ ...f, version: 2 }, /version is 2; expected 1/],
    [{ ...f, measuredAt: 'yesterday' }, /measuredAt is "yesterday"; expected an ISO 8601 date/],
    [{ ...f, host: 7 }, /host is 7; expected a string/],
    [{ ...f, paths: undefined }, /paths is undefined; expected an object with shm and tcp/],
    [{ ...f, paths: { shm: f.paths.shm } }, /paths\.tcp is undefined; expected an object with startupUs, perByteUs, constantUs/],
    [{ ...f, paths: { ...f.paths, tcp: { ...f.paths.tcp, perByteUs: -1 } } }, /paths\.tcp\.perByteUs is -1; expected a number >= 0/],
    [{ ...f, paths: { ...f.paths, shm: { ...f.paths.shm, startupUs: '0.5' } } }, /paths\.shm\.startupUs is "0\.5"; expected a number >= 0/],
    [{ ...f, paths: { ...f.paths, shm: { ...f.paths.shm, constantUs: null } } }, /paths\.shm\.constantUs is null; expected a finite number/],
    [{ ...f, paths: { ...f.paths, ucx: { startupUs: 1, perByteUs: 1 } } }, /paths\.ucx\.constantUs is undefined/],
  ];
  for (const [input, message] of bad) {
    assert.throws(() => parseParams(input, 'params.json'), hasCode(ErrorCode.ARG, /^Cannot use params\.json: /, message));
  }
});

test('predictors grow with bytes (flat, packed, hier), for every collective', () => {
  const sizes = [0, 1, 8, 64, 512, 1024, 2048, 2243, 2244, 4096, 8192, 65536, 1 << 20];
  for (const params of [IB, DEFAULT_PARAMS]) {
    for (const [nodes, ppn] of [[1, 4], [2, 1], [4, 4], [8, 2], [3, 5]] as const) {
      let prev = { flatUs: -1, packedUs: -1 };
      for (const blockBytes of sizes) {
        const t = predictAlltoall({ nodes, ppn, blockBytes, params });
        assert.ok(t.flatUs >= prev.flatUs && t.packedUs >= prev.packedUs, `alltoall ${nodes}x${ppn} at ${blockBytes} B`);
        prev = t;
      }
      for (const coll of ['allreduce', 'bcast', 'barrier'] as HierColl[]) {
        let last = { flatUs: -1, hierUs: -1 };
        for (const bytes of sizes) {
          const t = predictHier(coll, { nodes, ppn, bytes, params });
          assert.ok(t.flatUs >= last.flatUs && t.hierUs >= last.hierUs, `${coll} ${nodes}x${ppn} at ${bytes} B`);
          assert.ok(t.flatUs > 0 || nodes * ppn === 1, `${coll} takes time`);
          last = t;
        }
      }
    }
  }
});

/** The smallest block size (bytes) at which the model stops packing. */
function packingFlip(nodes: number, ppn: number, params: CostParams): number {
  let b = 1;
  while (choosePacking({ nodes, ppn, blockBytes: b, params })) b++;
  return b;
}

test('choosePacking() packs below the cut-off and stops just below it (eq. 5), never above', () => {
  for (const [params, net] of [[IB, SEED], [DEFAULT_PARAMS, DEFAULT_PARAMS.tcp]] as const) {
    const cutoff = packingCutoffBytes(net);
    for (const [nodes, ppn] of [[4, 4], [4, 8], [16, 2]] as const) {
      const flip = packingFlip(nodes, ppn, params);
      // Below the cut-off packing saves start-ups; the node's gather and scatter in shared
      // memory cost a little, so the flip comes just before the cut-off, never after it.
      assert.ok(flip > cutoff / 2 && flip <= cutoff, `${nodes}x${ppn}: packing stops at ${flip} B, cut-off ${cutoff} B`);
      for (const blockBytes of [cutoff, 2 * cutoff, 64 * cutoff]) {
        assert.equal(choosePacking({ nodes, ppn, blockBytes, params }), false, `${nodes}x${ppn} at ${blockBytes} B`);
      }
    }
  }
  // With the seed's parameters, 8 B blocks on 4 nodes x 4: 47 start-ups on the link vs 3.
  const t = predictAlltoall({ nodes: 4, ppn: 4, blockBytes: 8, params: IB });
  assert.ok(t.flatUs > 5 * t.packedUs, `${t.flatUs} vs ${t.packedUs}`);
  // One rank per node, or one node: nothing to aggregate.
  assert.equal(choosePacking({ nodes: 4, ppn: 1, blockBytes: 8, params: IB }), false);
  assert.equal(choosePacking({ nodes: 1, ppn: 8, blockBytes: 8, params: IB }), false);
});

test('chooseHier() takes the node phase for barrier and allreduce across nodes, flat within one node', () => {
  // The seed's testbed had 8 cores per node; with its C = -10 us up to 5 messages at once
  // cost no more than one (concurrent DMA engines), so 4 ranks per node would gain nothing.
  for (const [params, ppn] of [[IB, 8], [DEFAULT_PARAMS, 4]] as const) {
    for (const bytes of [8, 1024, 1 << 20]) {
      for (const coll of ['barrier', 'allreduce'] as HierColl[]) {
        assert.equal(chooseHier(coll, { nodes: 4, ppn, bytes, params }), true, `${coll} 4x${ppn} ${bytes} B`);
        assert.equal(chooseHier(coll, { nodes: 1, ppn: 8, bytes, params }), false, `${coll} 1x8`);
        assert.equal(chooseHier(coll, { nodes: 8, ppn: 1, bytes, params }), false, `${coll} 8x1 is a tie`);
      }
      // A binomial bcast over node-by-node ranks already sends one network message per node.
      assert.equal(chooseHier('bcast', { nodes: 4, ppn, bytes, params }), false);
    }
  }
  // Flat allreduce: ppn messages per node on the link in each of log2(nodes) rounds.
  const t = predictHier('allreduce', { nodes: 4, ppn: 4, bytes: 8, params: IB });
  const shm = scatterLatency(IB.shm, 2, 8);
  close(t.flatUs, 2 * shm + 2 * scatterLatency(SEED, 5, 8));
  close(t.hierUs, 4 * shm + 2 * scatterLatency(SEED, 2, 8));
  assert.throws(() => predictHier('barrier', { nodes: 2, ppn: 2, bytes: 0, params: IB, net: 'ucx' }), hasCode(ErrorCode.ARG, /no 'ucx' path/));
  assert.throws(() => predictAlltoall({ nodes: 0, ppn: 2, blockBytes: 8, params: IB }), hasCode(ErrorCode.ARG, /0 nodes x 2 ranks/));
});

test('paramsFilePath() takes NBC_PARAMS, then an absolute XDG_CACHE_HOME, then ~/.cache', () => {
  assert.equal(paramsFilePath({ NBC_PARAMS: '/x/p.json', XDG_CACHE_HOME: '/c' }, '/home/u'), '/x/p.json');
  assert.equal(paramsFilePath({ NBC_PARAMS: '', XDG_CACHE_HOME: '/c' }, '/home/u'), '/c/nbcoll/params.json');
  assert.equal(paramsFilePath({ XDG_CACHE_HOME: 'relative' }, '/home/u'), '/home/u/.cache/nbcoll/params.json');
  assert.equal(paramsFilePath({}, '/home/u'), '/home/u/.cache/nbcoll/params.json');
});

test('writeParamsFile() and readParamsFile() round-trip; no file means DEFAULT_PARAMS, a bad one an error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbc-params-'));
  const file = join(dir, 'sub', 'params.json');
  assert.equal(readParamsFile(file), null);
  assert.deepEqual(loadCostParams(file), DEFAULT_PARAMS);
  writeParamsFile(file, { ...validFile(), samples: { shm: 1 } });
  assert.deepEqual(readParamsFile(file), validFile());
  assert.deepEqual(loadCostParams(file), validFile().paths);
  writeFileSync(file, JSON.stringify({ ...validFile(), version: 0 }));
  assert.throws(() => readParamsFile(file), hasCode(ErrorCode.ARG, new RegExp(`Cannot use ${file}: version is 0`)));
  assert.throws(() => writeParamsFile(file, { ...validFile(), host: 1 as unknown as string }), hasCode(ErrorCode.ARG, /host is 1/));
});

test('nbc calibrate measures shm and tcp and writes a file parseParams() accepts', { timeout: 40_000 }, () => {
  const out = join(mkdtempSync(join(tmpdir(), 'nbc-calibrate-')), 'params.json');
  const p = spawnSync(process.execPath, [CLI, 'calibrate', '--iters', '3', '--out', out], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(p.status, 0, `${p.stderr}\n${p.stdout}`);
  // Three rounds on a busy machine give rough numbers; the file must still be valid.
  const f = parseParams(readFileSync(out, 'utf8'), out);
  assert.ok(f.paths.shm && f.paths.tcp);
  assert.equal(JSON.parse(readFileSync(out, 'utf8')).samples.tcp.rounds, 3, 'the samples are kept beside the fit');
  assert.match(p.stdout, /shm .*\n.*tcp /s);
  assert.match(p.stdout, new RegExp(`written to ${out}`));
  assert.match(p.stderr, /measuring shm .*done, 3 rounds/);
});
