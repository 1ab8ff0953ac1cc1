import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exactUnits } from './exact-sum.ts';
import fc from 'fast-check';
import { BinnedSum, binOf } from '../src/ops/binned.ts';


/** |a - b| in units of 2^-1074, a a double, b an exact count. */
function distance(a: number, b: bigint): bigint {
  const d = exactUnits([a]) - b;
  return d < 0n ? -d : d;
}

/** Doubles over the whole range: magnitudes 2^-1074 to 2^1000, either sign, subnormals included. */
const wide = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1074, max: 1000 }).chain((e) => fc.double({ min: 1, max: 2, noNaN: true }).map((m) => m * 2 ** e)),
  fc.integer({ min: -1074, max: -1022 }).map((e) => -(2 ** e)),
);

test('a binned sum has the same bits whatever the order, the partition and the merge tree', { timeout: 60_000 }, () => {
  fc.assert(fc.property(
    fc.array(wide, { minLength: 1, maxLength: 60 }), fc.constantFrom(2 as const, 3 as const), fc.integer({ min: 1, max: 7 }), fc.integer(),
    (xs, K, parts, seed) => {
      const whole = new BinnedSum(K).addAll(xs).value();
      let s = seed | 0;
      const rnd = (n: number): number => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 0) % n;
      const shuffled = [...xs];
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = rnd(i + 1);
        [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
      }
      const accs = Array.from({ length: parts }, () => new BinnedSum(K));
      for (const x of shuffled) accs[rnd(parts)]!.add(x);
      // Merge in a random tree: pairs picked at random until one is left.
      while (accs.length > 1) {
        const i = rnd(accs.length);
        const a = accs.splice(i, 1)[0]!;
        accs[rnd(accs.length)]!.merge(a);
      }
      const merged = accs[0]!.value();
      assert.ok(Object.is(merged, whole), `${merged} against ${whole}`);
    }), { numRuns: 400 });
});

test('the error is within the documented bound: 2 N max|x| 2^(-40 (K - 1)) plus 2 ulp', { timeout: 60_000 }, () => {
  fc.assert(fc.property(fc.array(wide, { minLength: 1, maxLength: 40 }), fc.constantFrom(2 as const, 3 as const), (xs, K) => {
    const exact = exactUnits(xs);
    const v = new BinnedSum(K).addAll(xs).value();
    const maxAbs = xs.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    // In units of 2^-1074, rounded up: the binning's bound, then 2 ulp of the result.
    const binning = exactUnits([2 * xs.length * maxAbs * 2 ** (-40 * (K - 1))]);
    const ulp = Number.isFinite(v) && v !== 0 ? exactUnits([Math.abs(v) * 2 ** -51]) : 1n;
    if (!Number.isFinite(v)) return; // the exact sum beyond the largest double
    assert.ok(distance(v, exact) <= binning + ulp + 1n, `sum of ${xs.length} values: ${v}, exact ${exact}`);
  }), { numRuns: 400 });
});

test('heavy cancellation: 1e20, many small values, -1e20 in any order; K = 3 gets it exactly', () => {
  const xs = [1e20, ...Array.from({ length: 1000 }, (_, i) => (i % 7) - 3.25), -1e20];
  const exact = xs.slice(1, -1).reduce((a, b) => a + b, 0); // small integers and quarters: exact
  const three = new BinnedSum(3).addAll(xs).value();
  assert.equal(three, exact);
  assert.equal(new BinnedSum(3).addAll([...xs].reverse()).value(), three);
  let naive = 0;
  for (const x of xs) naive += x;
  assert.notEqual(naive, exact, 'the plain sum loses it (the check would be empty otherwise)');
});

test('fixed rules: NaN and opposite infinities give NaN, an infinity itself, only -0 gives -0', () => {
  const sum = (...xs: number[]): number => new BinnedSum().addAll(xs).value();
  assert.ok(Object.is(sum(-0, -0), -0));
  assert.ok(Object.is(sum(-0, 0), 0));
  assert.ok(Object.is(sum(), 0));
  assert.ok(Number.isNaN(sum(1, NaN, 2)));
  assert.ok(Number.isNaN(sum(Infinity, -Infinity)));
  assert.equal(sum(Infinity, -5), Infinity);
  assert.equal(sum(-Infinity, 1e308), -Infinity);
  assert.equal(sum(1e308, 1e308), Infinity);
  assert.equal(sum(5e-324, 5e-324), 1e-323);
  assert.equal(sum(1, -1), 0);
  // The bins: x = 1 sits in bin 26 (units of 2^-34, 2^39 of them above it).
  assert.equal(binOf(1), 26);
  assert.equal(binOf(5e-324), 0);
  assert.equal(binOf(Number.MAX_VALUE), 52);
});

test('bad fold counts and foreign items are refused by name', () => {
  assert.throws(() => new BinnedSum(4 as 2), { code: 'NBC_ERR_ARG', message: 'Cannot create a binned sum: folds is number 4; expected 2 or 3' });
  assert.throws(() => BinnedSum.of(new Float64Array(5)), { code: 'NBC_ERR_ARG', message: 'Cannot read a binned sum of 2 folds from 5 doubles; expected 6' });
  assert.throws(() => new BinnedSum(2).merge(new BinnedSum(3)), { code: 'NBC_ERR_ARG' });
});

test('long arrays carry the folds\' counts before they pass 2^52: 20000 values at the top of their bin', () => {
  // 0.75 * 2^39 units of the top bin each: the top fold's count passes 2^52 after about 2^14.
  const x = 0.75 * 2 ** 5; // bin 26 (units of 2^-34): 0.75 * 2^39 units
  const xs = new Float64Array(20_000).fill(x);
  xs[777] = 2 ** -30;
  for (const K of [2, 3] as const) {
    const fast = new BinnedSum(K).addAll(xs).value();
    const slow = new BinnedSum(K);
    for (const v of xs) slow.add(v);
    assert.equal(fast, slow.value(), `K = ${K}: the one-pass and the one-by-one paths agree`);
    assert.equal(fast, 19_999 * x + 2 ** -30, `K = ${K}: 19999 x + 2^-30, exactly representable`);
  }
});
