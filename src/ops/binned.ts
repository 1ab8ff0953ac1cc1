/**
 * Binned sums: float sums whose bits do not depend on the order of the additions, so a
 * reduction gives the same result whatever the rank count, the partition of the data, the
 * algorithm or the executor (the idea of Demmel and Nguyen's binned format, "Parallel
 * Reproducible Summation", IEEE TC 2015; the representation here is this project's own).
 *
 * ## The format
 *
 * Exponents are cut into bins of W = 40 bits on a fixed grid: bin j holds multiples of
 * u_j = 2^(40 j - 1074) (bin 0 the subnormals' unit). A binned value is K folds, K = 2 or 3,
 * on the K consecutive bins top, top - 1, ..., top - K + 1, each fold an exact integer count
 * of its bin's unit kept as two doubles (C, S): C * 2^52 + S. An item of the wire format is
 * 2 + 2K doubles:
 *
 *     [top, flags, C_0, S_0, C_1, S_1, ...]          top = -1: nothing finite and nonzero yet
 *
 * A value x goes in top-down: fold k takes q = round(r / u) of the rest r (starting at x), and
 * r becomes r - q u; every step is exact. The top bin of a set of values is that of the
 * largest, chosen with a bit of headroom (|x| < 2^39 u_top), so a fold's deposits are at most
 * 2^39 units and S stays exact, carried into C at 2^52.
 *
 * ## Why the bits do not depend on the order
 *
 * Merging two binned values aligns them on the higher top; the lower one's folds move down and
 * those below the K kept bins are dropped. Whatever the order, the kept bins end up holding,
 * exactly, sum over x of round(x / u_L) u_L, with u_L the lowest kept bin's unit for the
 * final top: each value's top-down split puts round(x / u_L) u_L into the bins from u_L up
 * however high it started, and a value that was dropped whole had |x| < u_L / 2 (the headroom).
 * How that sum spreads over the bins can differ; `finish` first carries every lower bin into
 * [0, 2^40) units (a unique mixed-radix form of the exact sum), then adds the bins in a fixed
 * order. So the same set of values gives the same double.
 *
 * Error: each value is rounded to u_L < 4 max|x| 2^(-40 (K - 1)), so |result - exact| <=
 * 2 N max|x| 2^(-40 (K - 1)) plus the final conversion's rounding: to the nearest double (or
 * single) of the binned value, ties to even (docs/ops.md).
 *
 * Specials, fixed rules: any NaN, or both infinities, give the canonical NaN; otherwise an
 * infinity gives itself; a sum of nothing but -0 is -0, any other zero sum +0.
 *
 * Core code: no node:* imports.
 */
import { NbcArgError } from '../errors.js';
import { describeValue } from '../describe.js';

/** Bits of exponent per bin. */
export const BIN_BITS = 40;
/** Doubles per binned item for K folds. */
export const binnedItemLength = (folds: number): number => 2 + 2 * folds;

const TWO52 = 2 ** 52;
/** Adding and subtracting 1.5 * 2^52 rounds |y| < 2^51 to the nearest integer, ties to even. */
const ROUND = 1.5 * 2 ** 52;
const TWO40 = 2 ** BIN_BITS;
const TWO39 = 2 ** (BIN_BITS - 1);
/** u_j = 2^(40 j - 1074), j = 0..52 (bin 52 holds the largest doubles). */
const UNIT = Float64Array.from({ length: 54 }, (_, j) => 2 ** (BIN_BITS * j - 1074));

const F_NAN = 1;
const F_PINF = 2;
const F_NINF = 4;
/** A summand that is not -0 was seen (so a zero sum is +0). */
const F_NOT_NEG_ZERO = 8;
/** Any summand was seen. */
const F_SEEN = 16;

/** The largest single, and the least double that rounds to a single's infinity (FLT_MAX + half its ulp). */
const FLT_MAX = 2 ** 128 - 2 ** 104;
const FLT_OVERFLOW = 2 ** 128 - 2 ** 103;

const scratch = new Float64Array(1);
const bits = new Uint32Array(scratch.buffer);

/** floor(log2 |x|) of a finite nonzero double. */
function exponentOf(x: number): number {
  scratch[0] = x;
  const biased = (bits[1]! >>> 20) & 0x7ff;
  if (biased !== 0) return biased - 1023;
  scratch[0] = x * 2 ** 64; // a subnormal, scaled exactly into the normal range
  return ((bits[1]! >>> 20) & 0x7ff) - 1023 - 64;
}

/** The bin a finite nonzero x tops: the lowest j with |x| < 2^39 u_j. */
export function binOf(x: number): number {
  return Math.max(0, Math.ceil((exponentOf(x) + 1076) / BIN_BITS) - 1);
}

/** Checks the fold count (2 or 3). */
export function checkFolds(folds: unknown, what: string): number {
  if (folds !== 2 && folds !== 3) throw new NbcArgError(`Cannot ${what}: folds is ${describeValue(folds)}; expected 2 or 3`);
  return folds;
}

/** Moves item `at`'s folds down to a higher top `top` (the lowest drop off). */
function raise(a: Float64Array, at: number, top: number, K: number): void {
  const old = a[at]!;
  if (old >= 0) {
    const d = top - old;
    for (let k = K - 1; k >= 0; k--) {
      const from = k - d;
      a[at + 2 + 2 * k] = from >= 0 ? a[at + 2 + 2 * from]! : 0;
      a[at + 3 + 2 * k] = from >= 0 ? a[at + 3 + 2 * from]! : 0;
    }
  }
  a[at] = top;
}

/** Adds `q` units to fold k of item `at`, carrying S's multiples of 2^52 into C. */
function addUnits(a: Float64Array, i: number, q: number): void {
  let s = a[i + 1]! + q;
  if (s >= TWO52 || s <= -TWO52) {
    const c = Math.floor(s / TWO52);
    s -= c * TWO52;
    a[i] = a[i]! + c;
  }
  a[i + 1] = s;
}

/** Adds x to binned item `at` of `a` (K folds). */
export function deposit(a: Float64Array, at: number, x: number, K: number): void {
  if (x === 0) {
    a[at + 1] = (a[at + 1]! | F_SEEN | (1 / x > 0 ? F_NOT_NEG_ZERO : 0));
    return;
  }
  if (!(x - x === 0)) { // NaN or an infinity
    a[at + 1] = (a[at + 1]! | F_SEEN | F_NOT_NEG_ZERO | (x !== x ? F_NAN : x > 0 ? F_PINF : F_NINF));
    return;
  }
  a[at + 1] = (a[at + 1]! | F_SEEN | F_NOT_NEG_ZERO);
  const j = binOf(x);
  if (j > a[at]!) raise(a, at, j, K);
  const top = a[at]!;
  let r = x;
  for (let k = 0; k < K; k++) {
    const bin = top - k;
    if (bin < 0 || r === 0) break;
    const u = UNIT[bin]!;
    const y = r / u; // exact: a power of two
    const q = (y + ROUND) - ROUND; // nearest integer, ties to even: |y| < 2^40
    if (q !== 0) addUnits(a, at + 2 + 2 * k, q);
    r = (y - q) * u; // exact: |y - q| <= 1/2 (Sterbenz), scaled back
  }
}

/**
 * Writes x as a fresh binned item at `at` (whatever was there): what `deposit` into an empty
 * item gives, without the checks an item with contents needs.
 */
export function depositFresh(a: Float64Array, at: number, x: number, K: number): void {
  if (x === 0 || !(x - x === 0)) {
    for (let k = 0; k < 2 * K; k++) a[at + 2 + k] = 0;
    a[at] = -1;
    a[at + 1] = 0;
    deposit(a, at, x, K);
    return;
  }
  const top = binOf(x);
  a[at] = top;
  a[at + 1] = F_SEEN | F_NOT_NEG_ZERO;
  let r = x;
  for (let k = 0; k < K; k++) {
    const bin = top - k;
    a[at + 2 + 2 * k] = 0;
    if (bin < 0 || r === 0) {
      a[at + 3 + 2 * k] = 0;
      continue;
    }
    const u = UNIT[bin]!;
    const y = r / u;
    const q = (y + ROUND) - ROUND;
    a[at + 3 + 2 * k] = q; // |q| <= 2^39: no carry
    r = (y - q) * u;
  }
}

/**
 * Adds every element of `xs` to binned item `at`: the same result as `deposit` on each, in
 * one pass for the largest magnitude and one that splits every element with the folds' counts
 * in locals (carried into the item every 4096 elements, before they could reach 2^52).
 */
export function depositAll(a: Float64Array, at: number, xs: ArrayLike<number>, K: number): void {
  const n = xs.length;
  let max = 0;
  let notNegZero = false;
  for (let i = 0; i < n; i++) {
    const x = xs[i]!;
    const m = Math.abs(x);
    if (m > max) max = m;
    else if (!(m <= max)) max = NaN; // NaN: the slow path
    if (x !== 0 || 1 / x > 0) notNegZero = true;
  }
  if (n === 0) return;
  if (!(max < Infinity) || (max > 0 && Math.max(a[at]!, binOf(max)) - K + 1 < 0)) {
    for (let i = 0; i < n; i++) deposit(a, at, xs[i]!, K);
    return;
  }
  a[at + 1] = (a[at + 1]! | F_SEEN | (notNegZero ? F_NOT_NEG_ZERO : 0));
  if (max === 0) return;
  const j = binOf(max);
  if (j > a[at]!) raise(a, at, j, K);
  // 1 / u_top, exact; beyond the largest double for the two lowest tops (then the slow path).
  // A product that underflows is of a value below every kept fold's half unit: it adds 0.
  const inv = 1 / UNIT[a[at]!]!;
  if (!(inv < Infinity) || (K !== 2 && K !== 3)) {
    for (let i = 0; i < n; i++) deposit(a, at, xs[i]!, K);
    return;
  }
  for (let start = 0; start < n; start += 4096) {
    const end = Math.min(n, start + 4096);
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    if (K === 2) {
      for (let i = start; i < end; i++) {
        const y = xs[i]! * inv;
        const q0 = (y + ROUND) - ROUND;
        const y1 = (y - q0) * TWO40;
        s0 += q0;
        s1 += (y1 + ROUND) - ROUND;
      }
    } else {
      for (let i = start; i < end; i++) {
        const y = xs[i]! * inv;
        const q0 = (y + ROUND) - ROUND;
        const y1 = (y - q0) * TWO40;
        const q1 = (y1 + ROUND) - ROUND;
        const y2 = (y1 - q1) * TWO40;
        s0 += q0;
        s1 += q1;
        s2 += (y2 + ROUND) - ROUND;
      }
    }
    addUnits(a, at + 2, s0);
    addUnits(a, at + 4, s1);
    if (K === 3) addUnits(a, at + 6, s2);
  }
}

/** inout[io] = input[ii] + inout[io] (binned items, K folds): exact per kept bin, and commutative. */
export function merge(inout: Float64Array, io: number, input: Float64Array, ii: number, K: number): void {
  inout[io + 1] = (inout[io + 1]! | input[ii + 1]!);
  const tb = input[ii]!;
  if (tb < 0) return;
  if (tb > inout[io]!) raise(inout, io, tb, K);
  const d = inout[io]! - tb;
  for (let k = 0; k + d < K; k++) {
    const to = io + 2 + 2 * (k + d);
    const from = ii + 2 + 2 * k;
    inout[to] = inout[to]! + input[from]!;
    addUnits(inout, to, input[from + 1]!);
  }
}

/** The folds' counts as the canonical mixed-radix form builds them: C_k, S_k per fold. */
const digits = new Float64Array(8);

/**
 * Fold k of item `at` into digits[2k], digits[2k + 1] with S in [0, 2^52) (the same integer
 * C * 2^52 + S).
 */
function loadCanonical(a: Float64Array, at: number, k: number): void {
  const s = a[at + 3 + 2 * k]!;
  const carry = Math.floor(s / TWO52);
  digits[2 * k] = a[at + 2 + 2 * k]! + carry;
  digits[2 * k + 1] = s - carry * TWO52;
}

/**
 * The double nearest the binned item `at` (K folds), by the fixed rules for specials and zeros
 * (or with `single` the nearest single): correctly rounded while the top fold's count stays
 * below 2^53 (about 2^14 summands at the top of their bin), within an ulp beyond.
 */
export function finish(a: Float64Array, at: number, K: number, single = false): number {
  const flags = a[at + 1]!;
  if ((flags & F_NAN) !== 0 || ((flags & F_PINF) !== 0 && (flags & F_NINF) !== 0)) return NaN;
  if ((flags & F_PINF) !== 0) return Infinity;
  if ((flags & F_NINF) !== 0) return -Infinity;
  const top = a[at]!;
  let v = 0;
  if (top >= 1 && K === 2 && a[at + 2] === 0 && a[at + 4] === 0) {
    // The common case, no carries: the same form as below in a few operations. The lower
    // fold keeps its count's balanced remainder r in [-2^39, 2^39); the rest goes up.
    const s1 = a[at + 5]!;
    const up = Math.floor((s1 + TWO39) / TWO40);
    v = roundTerms(top, a[at + 3]! + up, s1 - up * TWO40, 0, 2);
  } else if (top >= 0) {
    for (let k = 0; k < K; k++) loadCanonical(a, at, k);
    // From the lowest fold up, keep in each lower fold the balanced remainder of its count,
    // in [-2^39, 2^39) units, and carry the rest up: the unique form of the exact sum, with
    // every lower fold less than half a unit of the fold above it.
    for (let k = K - 1; k > 0; k--) {
      const c = digits[2 * k]!;
      const s = digits[2 * k + 1]!; // in [0, 2^52): the count mod 2^40 is s mod 2^40
      let r = s - Math.floor(s / TWO40) * TWO40;
      if (r >= TWO39) r -= TWO40;
      // carry = (c 2^52 + s - r) / 2^40 = c 2^12 + (s - r) / 2^40, exact in two parts
      const carryC = c / 4096 - ((c / 4096) % 1); // whole multiples of 2^52 units above
      const carryS = (c - carryC * 4096) * 4096 + (s - r) / TWO40;
      digits[2 * k] = 0;
      digits[2 * k + 1] = r;
      const up = 2 * (k - 1);
      digits[up] = digits[up]! + carryC;
      const s2 = digits[up + 1]! + carryS; // < 2^52 + 2^24: exact
      const c2 = Math.floor(s2 / TWO52);
      digits[up] = digits[up]! + c2;
      digits[up + 1] = s2 - c2 * TWO52;
    }
    // The top fold's count (rounded once if beyond 2^53), then the lower folds: a unique form,
    // rounded once (roundTerms).
    v = roundTerms(top, digits[0]! * TWO52 + digits[1]!, K > 1 ? digits[3]! : 0, K > 2 ? digits[5]! : 0, K);
  }
  if (v === 0) return (flags & F_SEEN) !== 0 && (flags & F_NOT_NEG_ZERO) === 0 ? -0 : 0;
  return single ? toSingle(v) : v;
}

/**
 * The double nearest hi u_top + r1 u_(top-1) + r2 u_(top-2) (r2 with K = 3 only), the lower
 * terms balanced remainders (|r| <= 2^39): rounded once, ties to even, so correctly rounded
 * whenever |hi| < 2^53 (always, in the compact form). Each term is exact as a double (an
 * integer below 2^53 times a power of two, subnormals included); with two terms one addition
 * rounds; with three, the two additions' exact errors (TwoSum) decide the one case where the
 * second rounding alone would be wrong: a tie in it that the first addition's error breaks.
 */
function roundTerms(top: number, hi: number, r1: number, r2: number, K: number): number {
  // The top bins' terms can pass the largest double on the way to a sum below it: those are
  // added scaled down by 2^-128 (exact there, no subnormals) and scaled back once.
  if (top >= 50) return roundScaled(top, hi, r1, r2, K, 2 ** -128) * 2 ** 128;
  return roundScaled(top, hi, r1, r2, K, 1);
}

/**
 * The sign of the exact value minus the last roundTerms result (0: it was exact), for the
 * rounding to single precision that may follow (toSingle).
 */
let residual = 0;

function roundScaled(top: number, hi: number, r1: number, r2: number, K: number, scale: number): number {
  const a = hi * (UNIT[top]! * scale);
  residual = 0;
  if (top === 0) return a;
  const b = r1 * (UNIT[top - 1]! * scale);
  if (K === 2 || top === 1) return sumWithResidual(a, b);
  const c = r2 * (UNIT[top - 2]! * scale);
  const s = b + c;
  const bb = s - c;
  const eS = (b - bb) + (c - (s - bb)); // b + c = s + eS exactly
  const v = a + s;
  const vv = v - s;
  const eV = (a - vv) + (s - (v - vv)); // a + s = v + eV exactly
  if (eV === 0) return sumWithResidual(v, eS); // one rounding of the exact value
  // |eV| is at most half an ulp of v; a tie went to even, and eS on the same side breaks it.
  if (eS !== 0 && (eS > 0) === (eV > 0) && Math.abs(eV) === halfUlp(v)) {
    residual = eS - eV;
    return v + 2 * eV;
  }
  residual = eV + eS;
  return v;
}

/** x + y rounded, its exact error's sign kept in `residual` (TwoSum). */
function sumWithResidual(x: number, y: number): number {
  const v = x + y;
  const yy = v - x;
  residual = (x - (v - yy)) + (y - yy);
  return v;
}

/**
 * v, the double nearest a binned value (just returned by compactFinish), rounded once more to
 * the nearest single: correctly, since the one case where two roundings differ from one, v
 * exactly halfway between two singles, is decided by the first rounding's error.
 */
function toSingle(v: number): number {
  const f = Math.fround(v);
  if (f === v || residual === 0) return f;
  if (!(f - f === 0)) {
    // Past the largest single: v is exactly the overflow threshold only when the exact value
    // may still lie below it, and then the first rounding's error says which side it is on.
    const edge = FLT_OVERFLOW * Math.sign(v);
    return v === edge && (residual > 0) !== (v > 0) ? Math.sign(v) * FLT_MAX : f;
  }
  const g = 2 * v - f; // the other single at the same distance, if v is halfway
  if (g === f || Math.fround(g) !== g) return f;
  return (residual > 0) === (g > f) ? g : f;
}

/** Half the unit in the last place of a finite nonzero double. */
function halfUlp(v: number): number {
  return 2 ** Math.max(exponentOf(v) - 53, -1075);
}

// ---- The compact form -------------------------------------------------------------------
//
// Inside one collective every binned value is a sum of at most `size` contributions, one per
// rank, so each fold's count stays below size * 2^39 and fits a double exactly while size <
// 2^13 (COMPACT_MAX_TERMS): no carry word is needed. A compact item is 1 + K doubles,
//
//     [top, n_0, n_1, ...]          top = -1: no finite nonzero contribution
//
// and a NaN or an infinity is kept as n_0 itself (then only n_0 counts: IEEE addition already
// combines specials by the fixed rules, whatever the order), and a zero as n_0 = x (so n_0 is
// -0 exactly when every contribution was -0). The two-phase form splits the item: the tops
// (as codes top + 1, one byte per element) are reduced by max first, then every rank splits
// its elements on the agreed tops and the counts are reduced by a plain sum of doubles, exact
// in any order, so any predefined-op executor (offload, agg) can run it. Both forms keep, for
// the same contributions, the same exact sum on the same bins, and finish it the same way.

/** The most contributions a compact item takes exactly. */
export const COMPACT_MAX_TERMS = 2 ** 13 - 1;
/** Doubles per compact item for K folds. */
export const compactItemLength = (folds: number): number => 1 + folds;

/** 1 / u_j for j >= 2 (beyond the largest double below). */
const INV_UNIT = Float64Array.from(UNIT, (u) => 1 / u);
/** Bin + 1 of the normal doubles by biased exponent (0: zero, subnormal or special). */
const CODE_OF_BIASED = Uint8Array.from({ length: 2048 }, (_, b) =>
  b === 0 || b === 2047 ? 0 : Math.max(0, Math.ceil((b - 1023 + 1076) / BIN_BITS) - 1) + 1);

/** Splits x on `top` into counts at out[at..at+K) (x finite, |x| < 2^39 u_top or zero). */
function splitOn(out: Float64Array, at: number, x: number, top: number, K: number): void {
  const y = top >= 2 ? x * INV_UNIT[top]! : x / UNIT[top]!; // exact: a power of two
  const q0 = (y + ROUND) - ROUND;
  out[at] = q0;
  if (K === 1) return;
  const y1 = (y - q0) * TWO40;
  const q1 = (y1 + ROUND) - ROUND;
  out[at + 1] = q1;
  if (K === 3) {
    const y2 = (y1 - q1) * TWO40;
    out[at + 2] = (y2 + ROUND) - ROUND;
  }
}

/** Writes x as a compact item at `at`. */
export function compactFresh(a: Float64Array, at: number, x: number, K: number): void {
  if (x === 0 || !(x - x === 0)) {
    a[at] = -1;
    a[at + 1] = x;
    for (let k = 1; k < K; k++) a[at + 1 + k] = 0;
    return;
  }
  const top = binOf(x);
  a[at] = top;
  splitOn(a, at + 1, x, top, K);
}

/** inout[io] = input[ii] + inout[io] (compact items, K folds): exact, and commutative. */
export function compactMerge(inout: Float64Array, io: number, input: Float64Array, ii: number, K: number): void {
  const a0 = inout[io + 1]!;
  const b0 = input[ii + 1]!;
  if (!(a0 - a0 === 0) || !(b0 - b0 === 0)) { // a special decides
    inout[io + 1] = !(a0 - a0 === 0) ? (!(b0 - b0 === 0) ? a0 + b0 : a0) : b0;
    return;
  }
  const tb = input[ii]!;
  let ta = inout[io]!;
  if (tb > ta) { // move inout's folds down to the higher top; the lowest drop off
    const d = tb - ta;
    for (let k = K - 1; k >= 0; k--) inout[io + 1 + k] = k - d >= 0 ? inout[io + 1 + k - d]! : 0;
    inout[io] = ta = tb;
  }
  const d = ta - tb;
  for (let k = 0; k + d < K; k++) inout[io + 1 + k + d] = inout[io + 1 + k + d]! + input[ii + 1 + k]!;
}

// The packed form: with fewer than 2^8 contributions a count stays below 2^47, so the top
// rides in the first count's low bits, v = 64 n_0 + (top + 1) (exact), and an item is K
// doubles, 2x the bytes of a plain sum at K = 2. A zero-only item is 64 n_0 (its sign kept), a
// special the special itself.

/** The most contributions a packed item takes exactly. */
export const PACKED_MAX_TERMS = 2 ** 8 - 1;

const unpackedA = new Float64Array(4);
const unpackedB = new Float64Array(4);

/** The packed item at a[at] as a compact item into out[0..K]. */
function unpack(a: Float64Array, at: number, out: Float64Array, K: number): void {
  const v = a[at]!;
  for (let k = 1; k < K; k++) out[1 + k] = a[at + k]!;
  if (!(v - v === 0)) {
    out[0] = -1;
    out[1] = v;
    return;
  }
  const n0 = Math.floor(v / 64);
  const code = v - n0 * 64;
  out[0] = code - 1;
  out[1] = code === 0 ? v / 64 : n0; // a zero-only item keeps its zero's sign
}

/** The compact item in[0..K] packed into a[at ..]. */
function pack(c: Float64Array, a: Float64Array, at: number, K: number): void {
  const n0 = c[1]!;
  a[at] = !(n0 - n0 === 0) ? n0 : c[0]! < 0 ? n0 * 64 : n0 * 64 + (c[0]! + 1);
  for (let k = 1; k < K; k++) a[at + k] = c[1 + k]!;
}

/** Writes x as a packed item at `at` (K doubles). */
export function packedFresh(a: Float64Array, at: number, x: number, K: number): void {
  compactFresh(unpackedA, 0, x, K);
  pack(unpackedA, a, at, K);
}

/** inout[io] = input[ii] + inout[io] (packed items, K folds): compactMerge on the unpacked items. */
export function packedMerge(inout: Float64Array, io: number, input: Float64Array, ii: number, K: number): void {
  unpack(inout, io, unpackedA, K);
  unpack(input, ii, unpackedB, K);
  compactMerge(unpackedA, 0, unpackedB, 0, K);
  pack(unpackedA, inout, io, K);
}

/** The value of the packed item at a[at] (compactFinish). */
export function packedFinish(a: Float64Array, at: number, K: number, single = false): number {
  unpack(a, at, unpackedA, K);
  return compactFinish(unpackedA, 1, 1, unpackedA[0]!, K, single);
}

/**
 * The double nearest the compact counts n[at], n[at + stride], ... (K of them) on `top` (by the
 * fixed rules for specials and zeros), or with `single` the nearest single (for Float32 sums,
 * promoted exactly).
 */
export function compactFinish(n: Float64Array, at: number, stride: number, top: number, K: number, single = false): number {
  const n0 = n[at]!;
  if (!(n0 - n0 === 0)) return n0 === n0 ? n0 : NaN; // an infinity, or the canonical NaN
  if (top < 0) return n0; // zeros only: -0 when every contribution was -0
  // From the lowest fold up, keep the balanced remainder of each count in [-2^39, 2^39) units
  // and carry the rest up (exact: every count is below 2^52): the unique form.
  let r2 = 0;
  let n1 = K > 1 ? n[at + stride]! : 0;
  if (K === 3) {
    const n2 = n[at + 2 * stride]!;
    const up = Math.floor((n2 + TWO39) / TWO40);
    r2 = n2 - up * TWO40;
    n1 += up;
  }
  const up = Math.floor((n1 + TWO39) / TWO40);
  const v = roundTerms(top, n0 + up, n1 - up * TWO40, r2, K);
  return v === 0 ? 0 : single ? toSingle(v) : v;
}

/** Each element's code, its bin + 1 (0: zero, NaN or an infinity), into `codes`. */
export function topCodes(xs: Float64Array | Float32Array, codes: Uint8Array): void {
  codes.fill(0, 0, xs.length);
  maxCodesInto(xs, 0, xs.length, codes);
}

/**
 * out[i] = max(out[i], the code of xs[from + i]) for i < n: with every contribution to a
 * block passed in turn, each element's bin over all of them. The exponents are read from the
 * doubles' high words.
 */
export function maxCodesInto(xs: Float64Array | Float32Array, from: number, n: number, out: Uint8Array): void {
  if (xs instanceof Float64Array) {
    const hi = highWords(xs);
    for (let i = 0; i < n; i++) {
      const b = (hi[2 * (from + i) + 1]! >>> 20) & 0x7ff;
      const x = xs[from + i]!;
      const code = b !== 0 ? CODE_OF_BIASED[b]! : x === 0 ? 0 : binOf(x) + 1;
      if (code > out[i]!) out[i] = code;
    }
    return;
  }
  for (let i = 0; i < n; i++) {
    const x = xs[from + i]!;
    const code = x === 0 || !(x - x === 0) ? 0 : binOf(x) + 1;
    if (code > out[i]!) out[i] = code;
  }
}

/** The 32-bit words of a Float64Array's buffer, the high word of element i at 2 i + 1 (little-endian), one view per array. */
const highWordViews = new WeakMap<Float64Array, Uint32Array>();
function highWords(xs: Float64Array): Uint32Array {
  let v = highWordViews.get(xs);
  if (v === undefined) highWordViews.set(xs, (v = new Uint32Array(xs.buffer, xs.byteOffset, 2 * xs.length)));
  return v;
}

/**
 * Elements [from, from + n) of `xs` split on their agreed tops (codes[from + i] - 1, the max over
 * every contribution's) into K counts each, planar: fold k of element from + i at counts[at +
 * k n + i]. A zero, NaN or infinity with no finite nonzero anywhere goes in as itself in the
 * first (see compactFinish). Planar, because V8 runs these loops 2-3x faster over one array
 * per fold than over interleaved pairs.
 */
export function splitBlock(xs: Float64Array | Float32Array, codes: Uint8Array, from: number, n: number, counts: Float64Array, at: number, K: number): void {
  split(xs, codes, from, n, counts, at, K, false);
}

/**
 * splitBlock's counts of elements [from, from + n) of `xs` added into counts[at + k n + i]
 * instead of written: how a rank sums the values every rank sent it for its block. Counts
 * start at -0 (the identity of addition, signed zeros included), so a zero-only element ends
 * as -0 exactly when every contribution was -0, and a special as the IEEE sum of the specials.
 */
export function splitAddBlock(xs: Float64Array | Float32Array, codes: Uint8Array, from: number, n: number, counts: Float64Array, at: number, K: number): void {
  split(xs, codes, from, n, counts, at, K, true);
}

/**
 * Both: each count written as -0 + count (the same value, -0 included) or added to. The
 * common case inline (splitOn's arithmetic), the rest through splitSlow.
 */
function split(xs: Float64Array | Float32Array, codes: Uint8Array, from: number, n: number, counts: Float64Array, at: number, K: number, add: boolean): void {
  const three = K === 3;
  const at1 = at + n;
  const at2 = at + 2 * n;
  for (let i = 0; i < n; i++) {
    const t = codes[from + i]! - 1;
    const x = xs[from + i]!;
    if (t >= 2 && x - x === 0 && K > 1) {
      const y = x * INV_UNIT[t]!;
      const q0 = (y + ROUND) - ROUND;
      const y1 = (y - q0) * TWO40;
      const q1 = (y1 + ROUND) - ROUND;
      counts[at + i] = (add ? counts[at + i]! : -0) + q0;
      counts[at1 + i] = (add ? counts[at1 + i]! : -0) + q1;
      if (three) counts[at2 + i] = (add ? counts[at2 + i]! : -0) + (((y1 - q1) * TWO40 + ROUND) - ROUND);
    } else {
      splitSlow(x, t, K);
      for (let k = 0; k < K; k++) counts[at + k * n + i] = (add ? counts[at + k * n + i]! : -0) + folded[k]!;
    }
  }
}

const folded = new Float64Array(3);

/** The K counts of x on top t into `folded` (split's uncommon cases). */
function splitSlow(x: number, t: number, K: number): void {
  if (t < 0 || !(x - x === 0)) {
    folded[0] = x; // a special decides; a zero keeps its sign
    folded[1] = 0;
    folded[2] = 0;
    return;
  }
  splitOn(folded, 0, x, t, K);
}

/**
 * out[outAt + i] = the value of element from + i, its K counts planar at counts[at + k n + i]
 * (as splitBlock lays them out) and its code at codes[from + i], for i < n: compactFinish on
 * each, the common case of 2 folds into a Float64Array inline.
 */
export function finishBlock(counts: Float64Array, at: number, codes: Uint8Array, from: number, n: number, out: Float64Array | Float32Array, outAt: number,
  K: number): void {
  const single = out instanceof Float32Array;
  if (K === 2 && !single) {
    const at1 = at + n;
    for (let i = 0; i < n; i++) {
      const t = codes[from + i]! - 1;
      const n0 = counts[at + i]!;
      if (t >= 1 && t < 50 && n0 - n0 === 0) {
        // Both terms are exact (counts below 2^53 times powers of two, no overflow below bin
        // 50), so one addition rounds the exact value: compactFinish's result, without the carry.
        const v = n0 * UNIT[t]! + counts[at1 + i]! * UNIT[t - 1]!;
        out[outAt + i] = v === 0 ? 0 : v;
      } else {
        out[outAt + i] = compactFinish(counts, at + i, n, t, 2);
      }
    }
    return;
  }
  for (let i = 0; i < n; i++) out[outAt + i] = compactFinish(counts, at + i, n, codes[from + i]! - 1, K, single);
}

/**
 * A local binned accumulator: add values in any order, split among any number of
 * accumulators, merge them in any order, and `value()` gives the same bits.
 *
 *     const acc = new BinnedSum();
 *     acc.addAll(myPart);                  // each rank its own part
 *     // ... world.allreduce(acc.items, total, binnedSumOp(2)) ...
 *     BinnedSum.of(total).value();
 */
export class BinnedSum {
  /** The item (length 2 + 2 folds), as the wire format carries it. */
  readonly items: Float64Array;

  constructor(readonly folds: 2 | 3 = 2) {
    checkFolds(folds, 'create a binned sum');
    this.items = new Float64Array(binnedItemLength(folds));
    this.items[0] = -1;
  }

  /** An accumulator over an item received as `items` (a copy). */
  static of(items: Float64Array, folds: 2 | 3 = 2): BinnedSum {
    const s = new BinnedSum(folds);
    if (items.length !== s.items.length) {
      throw new NbcArgError(`Cannot read a binned sum of ${folds} folds from ${items.length} doubles; expected ${s.items.length}`);
    }
    s.items.set(items);
    return s;
  }

  add(x: number): this {
    deposit(this.items, 0, x, this.folds);
    return this;
  }

  addAll(xs: ArrayLike<number>): this {
    depositAll(this.items, 0, xs, this.folds);
    return this;
  }

  merge(other: BinnedSum): this {
    if (other.folds !== this.folds) throw new NbcArgError(`Cannot merge a binned sum of ${other.folds} folds into one of ${this.folds}; expected the same fold count`);
    merge(this.items, 0, other.items, 0, this.folds);
    return this;
  }

  value(): number {
    return finish(this.items, 0, this.folds);
  }
}
