import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Computer } from '../src/bench/compute.ts';
import { overlapPct, parseNoise, parseTestInterval, statOf, summarizeNb } from '../src/bench/metrics.ts';
import { hasCode } from './assert.ts';

test('overlapPct() is 100 when the communication hid fully behind the compute', () => {
  assert.equal(overlapPct(100, 100, 80), 100);
});

test('overlapPct() is 0 when nothing overlapped (overall = compute + pure)', () => {
  assert.equal(overlapPct(180, 100, 80), 0);
});

test('overlapPct() follows OSU in between: 100 * (1 - (overall - compute) / pure)', () => {
  assert.equal(overlapPct(140, 100, 80), 50);
  assert.ok(Math.abs(overlapPct(120, 100, 80) - 75) < 1e-9);
});

test('overlapPct() clamps noise below 0 and above 100', () => {
  assert.equal(overlapPct(300, 100, 80), 0, 'slower than no overlap at all');
  assert.equal(overlapPct(90, 100, 80), 100, 'overall shorter than the compute');
});

test('overlapPct() with zero pure time is 100 when nothing was added, else 0', () => {
  assert.equal(overlapPct(100, 100, 0), 100);
  assert.equal(overlapPct(101, 100, 0), 0);
});

test('statOf() computes median (even and odd), min, max and avg', () => {
  const xs = [5, 1, 4, 2, 3];
  assert.equal(statOf(xs, 'median'), 3);
  assert.equal(statOf([4, 1, 3, 2], 'median'), 2.5);
  assert.equal(statOf(xs, 'min'), 1);
  assert.equal(statOf(xs, 'max'), 5);
  assert.equal(statOf(xs, 'avg'), 3);
  assert.throws(() => statOf([], 'median'), hasCode('NBC_ERR_ARG', /no samples/));
});

test('summarizeNb() splits overhead into init + test + wait and derives overlap from the chosen statistic', () => {
  const f = (xs: number[]): Float64Array => Float64Array.from(xs);
  const s = summarizeNb({
    pure: f([80, 82, 78]), init: f([2, 3, 2]), test: f([5, 5, 6]), wait: f([10, 12, 11]),
    overall: f([140, 150, 130]), compute: f([100, 100, 100]),
  }, 'median');
  assert.deepEqual([s.pureUs, s.initUs, s.testUs, s.waitUs, s.overallUs, s.computeUs], [80, 2, 5, 11, 140, 100]);
  assert.equal(s.overheadUs, 18);
  assert.equal(s.latencyUs, 80);
  assert.equal(s.overlapPct, 50);
  const worst = summarizeNb({
    pure: f([80]), init: f([1]), test: f([0]), wait: f([1]), overall: f([400]), compute: f([100]),
  }, 'max');
  assert.equal(worst.overlapPct, 0, 'clamped');
});

test('--test-interval parses none, times and data sizes', () => {
  assert.deepEqual(parseTestInterval('0'), { kind: 'none' });
  assert.deepEqual(parseTestInterval('10us'), { kind: 'time', us: 10 });
  assert.deepEqual(parseTestInterval('2ms'), { kind: 'time', us: 2000 });
  assert.deepEqual(parseTestInterval('5'), { kind: 'time', us: 5 });
  assert.deepEqual(parseTestInterval('64KiB'), { kind: 'bytes', bytes: 65536 });
  assert.throws(() => parseTestInterval('often'), hasCode('NBC_ERR_ARG', /--test-interval/));
});

test('--noise parses DURATION@FREQ and refuses a duration longer than the period', () => {
  assert.deepEqual(parseNoise('100us@1kHz'), { durationUs: 100, periodUs: 1000 });
  assert.deepEqual(parseNoise('1ms@100Hz'), { durationUs: 1000, periodUs: 10000 });
  assert.throws(() => parseNoise('2ms@1kHz'), hasCode('NBC_ERR_ARG', /shorter than the period/));
  assert.throws(() => parseNoise('loud'), hasCode('NBC_ERR_ARG', /DURATION@FREQUENCY/));
});

test('noise delays the work: a compute phase lasts its work plus the noise that fell in it', () => {
  const quiet = new Computer('busy', { kind: 'none' }, null, 0).run(2000, null);
  assert.equal(quiet.noiseUs, 0);
  assert.ok(quiet.computeUs >= 2000, `quiet phase ${quiet.computeUs} us`);
  // seed 0: the first burst comes at once, then one every 100 us
  const noisy = new Computer('busy', { kind: 'none' }, parseNoise('50us@10kHz'), 0).run(2000, null);
  assert.ok(noisy.noiseUs >= 50, `noise ${noisy.noiseUs} us`);
  assert.ok(noisy.computeUs >= 2000 + noisy.noiseUs, `noisy phase ${noisy.computeUs} us with ${noisy.noiseUs} us of noise`);
});
