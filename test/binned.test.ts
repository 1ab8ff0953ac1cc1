import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exactUnits } from './exact-sum.ts';
import fc from 'fast-check';
import {
  BinnedSum, binOf, compactFinish, compactFresh, compactMerge, finishBlock, packedFinish, packedFresh, packedMerge, splitBlock, topCodes,
} from '../src/ops/binned.ts';


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

/** round(a / 2^k), ties to even, for a BigInt a and k >= 0. */
function roundShift(a: bigint, k: number): bigint {
  if (k === 0) return a;
  const d = 1n << BigInt(k);
  const neg = a < 0n;
  const m = neg ? -a : a;
  let q = m / d;
  const r = m - q * d;
  if (2n * r > d || (2n * r === d && (q & 1n) === 1n)) q += 1n;
  return neg ? -q : q;
}

/**
 * The documented result, independently of the library: every finite value rounded to the
 * lowest kept bin's unit u_L (L = top - K + 1, top the largest value's bin), summed exactly,
 * then rounded once to the nearest double (Number(bigint) rounds to nearest, ties to even).
 */
function keptSumRounded(xs: readonly number[], K: number): number {
  const finite = xs.filter((x) => x !== 0);
  if (finite.length === 0) return xs.every((x) => Object.is(x, -0)) && xs.length > 0 ? -0 : 0;
  const top = Math.max(...finite.map((x) => binOf(x)));
  const shift = 40 * Math.max(0, top - K + 1);
  let units = 0n;
  for (const x of finite) units += roundShift(exactUnits([x]), shift);
  // Rounded to 53 bits, then scaled exactly (a subnormal result has fewer than 53 bits of units).
  const v = Number(units) * 2 ** (shift - 1074);
  return v === 0 ? 0 : v;
}

/** A sum through the two-phase form: each value one rank's, codes by max, counts summed in the order given. */
function twoPhase(xs: readonly number[], K: number, order: readonly number[]): number {
  let code = 0;
  const one = new Uint8Array(1);
  for (const x of xs) {
    topCodes(Float64Array.of(x), one);
    code = Math.max(code, one[0]!);
  }
  const total = new Float64Array(K).fill(-0); // the identity of addition, signed zeros included
  const part = new Float64Array(K);
  for (const i of order) {
    splitBlock(Float64Array.of(xs[i]!), Uint8Array.of(code), 0, 1, part, 0, K);
    for (let k = 0; k < K; k++) total[k] = total[k]! + part[k]!;
  }
  const out = new Float64Array(1);
  finishBlock(total, 0, Uint8Array.of(code), 0, 1, out, 0, K);
  return out[0]!;
}

/** A sum through compact items merged in a random tree. */
function compactTree(xs: readonly number[], K: number, rnd: (n: number) => number): number {
  const items = xs.map((x) => {
    const a = new Float64Array(1 + K);
    compactFresh(a, 0, x, K);
    return a;
  });
  while (items.length > 1) {
    const a = items.splice(rnd(items.length), 1)[0]!;
    const b = items[rnd(items.length)]!;
    compactMerge(b, 0, a, 0, K);
  }
  return compactFinish(items[0]!, 1, 1, items[0]![0]!, K);
}

/** A sum through packed items (the top in the first count's low bits) merged in a random tree. */
function packedTree(xs: readonly number[], K: number, rnd: (n: number) => number): number {
  const items = xs.map((x) => {
    const a = new Float64Array(K);
    packedFresh(a, 0, x, K);
    return a;
  });
  while (items.length > 1) {
    const a = items.splice(rnd(items.length), 1)[0]!;
    packedMerge(items[rnd(items.length)]!, 0, a, 0, K);
  }
  return packedFinish(items[0]!, 0, K);
}

test('the compact, packed and two-phase forms give the bits of the binned sum, and those are the kept sum correctly rounded', { timeout: 60_000 }, () => {
  fc.assert(fc.property(
    fc.array(wide, { minLength: 1, maxLength: 40 }), fc.constantFrom(2 as const, 3 as const), fc.integer(),
    (xs, K, seed) => {
      let s = seed | 0;
      const rnd = (n: number): number => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 0) % n;
      const want = keptSumRounded(xs, K);
      const binned = new BinnedSum(K).addAll(xs).value();
      const order = xs.map((_, i) => i).sort(() => rnd(3) - 1);
      const two = twoPhase(xs, K, order);
      const tree = compactTree(xs, K, rnd);
      const packed = packedTree(xs, K, rnd);
      assert.ok(Object.is(packed, want), `packed tree ${packed}, kept sum rounded ${want}`);
      assert.ok(Object.is(binned, want), `binned ${binned}, kept sum rounded ${want}`);
      assert.ok(Object.is(two, want), `two-phase ${two}, kept sum rounded ${want}`);
      assert.ok(Object.is(tree, want), `compact tree ${tree}, kept sum rounded ${want}`);
    }), { numRuns: 600 });
});

test('K = 3 rounds once where two roundings would not: a tie in the second broken by the first\'s error', () => {
  // top bin 26 (units 2^-34): 1 + 2^-53 (a tie between 1 and 1 + 2^-52) plus a tiny positive
  // third term makes it round up; the two lower folds hold 2^-53 and 2^-100.
  const xs = [1, 2 ** -53, 2 ** -100];
  const want = 1 + 2 ** -52;
  assert.equal(new BinnedSum(3).addAll(xs).value(), want);
  assert.equal(twoPhase(xs, 3, [2, 0, 1]), want);
  assert.equal(twoPhase([1, 2 ** -53, -(2 ** -100)], 3, [0, 1, 2]), 1);
});

test('the compact, packed and two-phase forms keep the fixed rules for NaN, infinities and -0', () => {
  const both = (xs: number[]): number[] => [twoPhase(xs, 2, xs.map((_, i) => i)), compactTree(xs, 2, (n) => n - 1), packedTree(xs, 2, (n) => n - 1)];
  for (const v of both([-0, -0])) assert.ok(Object.is(v, -0));
  for (const v of both([-0, 0])) assert.ok(Object.is(v, 0));
  for (const v of both([1, -1, -0])) assert.ok(Object.is(v, 0));
  for (const v of both([1, NaN, 2])) assert.ok(Number.isNaN(v));
  for (const v of both([Infinity, 3, -Infinity])) assert.ok(Number.isNaN(v));
  for (const v of both([Infinity, -5, 1e300])) assert.equal(v, Infinity);
  for (const v of both([5e-324, 5e-324, -0])) assert.equal(v, 1e-323);
});

test('a Float32 sum past the largest single is an infinity of its own sign, and one just below the threshold the largest single', () => {
  const FLT_MAX = 2 ** 128 - 2 ** 104;
  const single = (xs: number[], K: number): number => {
    const items = xs.map((x) => {
      const a = new Float64Array(1 + K);
      compactFresh(a, 0, x, K);
      return a;
    });
    for (const a of items.slice(1)) compactMerge(items[0]!, 0, a, 0, K);
    return compactFinish(items[0]!, 1, 1, items[0]![0]!, K, true);
  };
  // The double is past the threshold, and below it the first rounding's error (negative) matters not.
  assert.equal(single([FLT_MAX, FLT_MAX, -(2 ** 46)], 3), Infinity);
  assert.equal(single([-FLT_MAX, -FLT_MAX, 2 ** 46], 3), -Infinity);
  // Exactly FLT_MAX + 2^103 - 2^46: the double rounds to the threshold, the exact value is below it.
  assert.equal(single([FLT_MAX, 2 ** 103, -(2 ** 46)], 3), FLT_MAX);
  assert.equal(single([-FLT_MAX, -(2 ** 103), 2 ** 46], 3), -FLT_MAX);
  assert.equal(single([FLT_MAX, 2 ** 103, 2 ** 46], 3), Infinity);
});
