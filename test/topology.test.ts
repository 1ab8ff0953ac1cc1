import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROC_NULL, cartCoords, cartNeighbors, cartRank, cartShift, dimsCreate } from '../src/comm/topology.js';
import { ErrorCode } from '../src/errors.js';
import { hasCode } from './assert.ts';

/** Every ordered k-tuple of positive integers whose product is n (brute force). */
function allFactorizations(n: number, k: number): number[][] {
  if (k === 0) return n === 1 ? [[]] : [];
  const out: number[][] = [];
  for (let f = 1; f <= n; f++) {
    if (n % f !== 0) continue;
    for (const rest of allFactorizations(n / f, k - 1)) out.push([f, ...rest]);
  }
  return out;
}

const spread = (t: readonly number[]): number => Math.max(...t) - Math.min(...t);
const lexLess = (a: readonly number[], b: readonly number[]): boolean => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
  return false;
};


/** Row-major reference: enumerate the grid with an odometer whose last digit turns fastest. */
function gridInOrder(dims: readonly number[]): number[][] {
  const size = dims.reduce((a, b) => a * b, 1);
  const out: number[][] = [];
  const c = new Array<number>(dims.length).fill(0);
  for (let r = 0; r < size; r++) {
    out.push(c.slice());
    for (let i = dims.length - 1; i >= 0; i--) {
      c[i] = (c[i] as number) + 1;
      if (c[i] === dims[i]) c[i] = 0;
      else break;
    }
  }
  return out;
}

const GRIDS: number[][] = [[1], [2], [5], [1, 1], [2, 1], [1, 2], [2, 2], [3, 4], [4, 3, 2], [2, 1, 3], [2, 2, 2, 2]];

/** All periods combinations for n dimensions. */
function allPeriods(n: number): boolean[][] {
  const out: boolean[][] = [];
  for (let m = 0; m < 1 << n; m++) out.push(Array.from({ length: n }, (_, i) => ((m >> i) & 1) === 1));
  return out;
}

test('dimsCreate() matches brute-force balanced factorizations for nnodes 1..64 and ndims 1..4', () => {
  for (let n = 1; n <= 64; n++) {
    for (let k = 1; k <= 4; k++) {
      const got = dimsCreate(n, k);
      assert.equal(got.length, k);
      assert.equal(
        got.reduce((a, b) => a * b, 1),
        n,
        `product of ${JSON.stringify(got)} for n=${n}`,
      );
      for (let i = 1; i < k; i++) assert.ok((got[i - 1] as number) >= (got[i] as number), `non-increasing ${got}`);
      const all = allFactorizations(n, k);
      const best = Math.min(...all.map(spread));
      assert.equal(spread(got), best, `n=${n} k=${k}: ${JSON.stringify(got)} has spread ${spread(got)}, best ${best}`);
      // The documented tie-break: lexicographically smallest among the sorted optimal ones.
      const optimal = all.filter((t) => spread(t) === best).map((t) => t.slice().sort((a, b) => b - a));
      for (const t of optimal) assert.ok(!lexLess(t, got), `n=${n} k=${k}: ${t} beats ${got}`);
    }
  }
});

test('dimsCreate() is well balanced for large inputs and gives [5, 2, 2, 1] for 20 over 4', () => {
  assert.deepEqual(dimsCreate(20, 4), [5, 2, 2, 1]);
  assert.deepEqual(dimsCreate(12, 2), [4, 3]);
  assert.deepEqual(dimsCreate(7, 3), [7, 1, 1]);
  assert.deepEqual(dimsCreate(1 << 20, 3), [128, 128, 64]);
  assert.deepEqual(dimsCreate(1_000_000_007, 2), [1_000_000_007, 1]); // a prime: no scan to 1e9
  assert.deepEqual(dimsCreate(720720, 4), [33, 30, 28, 26]);
});

test('dimsCreate() keeps non-zero entries and fills the zeros in non-increasing order', () => {
  assert.deepEqual(dimsCreate(24, 3, [0, 3, 0]), [4, 3, 2]);
  assert.deepEqual(dimsCreate(24, 3, [0, 0, 2]), [4, 3, 2]);
  assert.deepEqual(dimsCreate(6, 2, [6, 0]), [6, 1]);
  assert.deepEqual(dimsCreate(12, 3, [2, 3, 2]), [2, 3, 2]);
  assert.deepEqual(dimsCreate(1, 0), []);
  assert.deepEqual(dimsCreate(1, 0, []), []);
  const input = [0, 2];
  dimsCreate(8, 2, input);
  assert.deepEqual(input, [0, 2], 'the input array is not modified');
  // Fill against brute force with one fixed entry too.
  for (let n = 1; n <= 64; n++) {
    for (const fixed of [1, 2, 3]) {
      if (n % fixed !== 0) continue;
      const got = dimsCreate(n, 3, [0, fixed, 0]);
      assert.equal(got[1], fixed);
      assert.equal((got[0] as number) * (got[2] as number), n / fixed);
      assert.ok((got[0] as number) >= (got[2] as number));
      const best = Math.min(...allFactorizations(n / fixed, 2).map(spread));
      assert.equal(spread([got[0] as number, got[2] as number]), best);
    }
  }
});

test('dimsCreate() rejects impossible requests with NbcArgError messages that say what was expected', () => {
  assert.throws(() => dimsCreate(10, 2, [3, 0]), hasCode(ErrorCode.ARG, /multiply to 3, which does not divide 10/));
  assert.throws(() => dimsCreate(10, 2, [2, 2]), hasCode(ErrorCode.ARG, /multiply to 4; expected a product of 10/));
  assert.throws(() => dimsCreate(4, 2, [-2, 0]), hasCode(ErrorCode.ARG, /dims\[0\] is -2; expected 0 \(to be filled\) or a positive integer/));
  assert.throws(() => dimsCreate(4, 2, [1.5, 0]), hasCode(ErrorCode.ARG, /dims\[0\] is 1.5/));
  assert.throws(() => dimsCreate(4, -1), hasCode(ErrorCode.ARG, /ndims -1 is invalid; expected an integer >= 0/));
  assert.throws(() => dimsCreate(4, 3, [0, 0]), hasCode(ErrorCode.ARG, /dims has 2 entries but ndims is 3/));
  assert.throws(() => dimsCreate(0, 2), hasCode(ErrorCode.ARG, /nnodes 0 is invalid/));
  assert.throws(() => dimsCreate(2, 0), hasCode(ErrorCode.ARG, /multiply to 1; expected a product of 2/));
});

test('cartCoords() and cartRank() round-trip every rank and follow row-major order', () => {
  for (const dims of GRIDS) {
    const order = gridInOrder(dims);
    for (const periods of allPeriods(dims.length)) {
      for (let r = 0; r < order.length; r++) {
        const coords = cartCoords(dims, r);
        assert.deepEqual(coords, order[r], `dims ${dims} rank ${r}`);
        assert.equal(cartRank(dims, periods, coords), r);
      }
    }
  }
  assert.deepEqual(cartCoords([2, 3], 4), [1, 1]);
});

test('cartRank() wraps periodic coordinates and returns PROC_NULL off a non-periodic edge', () => {
  assert.equal(PROC_NULL, -1);
  assert.equal(cartRank([3, 4], [true, true], [-1, 5]), cartRank([3, 4], [true, true], [2, 1]));
  assert.equal(cartRank([3, 4], [true, false], [7, 0]), cartRank([3, 4], [true, false], [1, 0]));
  assert.equal(cartRank([3, 4], [true, false], [0, 4]), PROC_NULL);
  assert.equal(cartRank([3, 4], [false, true], [-1, 0]), PROC_NULL);
  assert.equal(cartRank([1], [true], [-3]), 0);
});

/** Reference shift: move along one coordinate by hand, wrap or drop. */
function refShift(dims: number[], periods: boolean[], rank: number, dim: number, disp: number) {
  const order = gridInOrder(dims);
  const at = order[rank] as number[];
  const find = (delta: number): number => {
    const c = at.slice();
    let v = (c[dim] as number) + delta;
    const d = dims[dim] as number;
    if (v < 0 || v >= d) {
      if (!periods[dim]) return PROC_NULL;
      v = ((v % d) + d) % d;
    }
    c[dim] = v;
    return order.findIndex((o) => o.every((x, i) => x === c[i]));
  };
  return { source: find(-disp), dest: find(disp) };
}

test('cartShift() matches a reference for periods true/false, disp ±1 and ±2, and dims of size 1 and 2', () => {
  for (const dims of GRIDS) {
    const size = dims.reduce((a, b) => a * b, 1);
    for (const periods of allPeriods(dims.length)) {
      for (let r = 0; r < size; r++) {
        for (let dim = 0; dim < dims.length; dim++) {
          for (const disp of [-2, -1, 0, 1, 2]) {
            assert.deepEqual(
              cartShift(dims, periods, r, dim, disp),
              refShift(dims, periods, r, dim, disp),
              `dims ${dims} periods ${periods} rank ${r} dim ${dim} disp ${disp}`,
            );
          }
        }
      }
    }
  }
});

test('cartShift() on a periodic dimension of size 1 names yourself, on size 2 the same peer twice', () => {
  assert.deepEqual(cartShift([1], [true], 0, 0, 1), { source: 0, dest: 0 });
  assert.deepEqual(cartShift([1], [false], 0, 0, 1), { source: PROC_NULL, dest: PROC_NULL });
  assert.deepEqual(cartShift([2], [true], 0, 0, 1), { source: 1, dest: 1 });
  assert.deepEqual(cartShift([2], [true], 1, 0, -1), { source: 0, dest: 0 });
  assert.deepEqual(cartShift([2], [true], 1, 0, 2), { source: 1, dest: 1 });
  assert.deepEqual(cartShift([2], [false], 0, 0, 1), { source: PROC_NULL, dest: 1 });
  assert.deepEqual(cartShift([2, 1], [true, true], 1, 1, 1), { source: 1, dest: 1 });
});

test('cartNeighbors() lists the -1 then +1 neighbour of each dimension', () => {
  // dims [3, 4]: rank 5 is at (1, 1).
  assert.deepEqual(cartNeighbors([3, 4], [false, false], 5), [1, 9, 4, 6]);
  // rank 0 at (0, 0): the -1 neighbours exist only where periodic.
  assert.deepEqual(cartNeighbors([3, 4], [false, false], 0), [PROC_NULL, 4, PROC_NULL, 1]);
  assert.deepEqual(cartNeighbors([3, 4], [true, true], 0), [8, 4, 3, 1]);
  assert.deepEqual(cartNeighbors([1, 2], [true, true], 1), [1, 1, 0, 0]);
  assert.deepEqual(cartNeighbors([], [], 0), []);
  for (const dims of GRIDS) {
    const size = dims.reduce((a, b) => a * b, 1);
    for (const periods of allPeriods(dims.length)) {
      for (let r = 0; r < size; r++) {
        const expected = dims.flatMap((_, i) => {
          const s = refShift(dims, periods, r, i, 1);
          return [s.source, s.dest];
        });
        assert.deepEqual(cartNeighbors(dims, periods, r), expected);
      }
    }
  }
});

test('Cartesian helpers reject bad arguments with typed errors', () => {
  assert.throws(() => cartCoords([2, 3], 6), hasCode(ErrorCode.RANK, /rank 6 is out of range; expected 0..5/));
  assert.throws(() => cartCoords([2, 3], -1), hasCode(ErrorCode.RANK));
  assert.throws(() => cartCoords([2, 0], 0), hasCode(ErrorCode.ARG, /dims\[1\] is 0; expected a positive integer/));
  assert.throws(() => cartRank([2, 3], [true], [0, 0]), hasCode(ErrorCode.ARG, /periods has 1 entries but dims has 2/));
  assert.throws(() => cartRank([2, 3], [true, true], [0]), hasCode(ErrorCode.ARG, /expected 2/));
  assert.throws(() => cartRank([2, 3], [true, true], [0, 0.5]), hasCode(ErrorCode.ARG, /coords\[1\] is 0.5/));
  assert.throws(() => cartShift([2, 3], [true, true], 7, 0, 1), hasCode(ErrorCode.RANK));
  assert.throws(() => cartShift([2, 3], [true, true], 0, 2, 1), hasCode(ErrorCode.ARG, /dimension 2 is out of range; expected 0..1/));
  assert.throws(() => cartShift([2, 3], [true, true], 0, 0, 1.5), hasCode(ErrorCode.ARG, /displacement 1.5/));
  assert.throws(() => cartNeighbors([2, 3], [false, false], 6), hasCode(ErrorCode.RANK));
  assert.throws(() => cartNeighbors([], [], 1), hasCode(ErrorCode.RANK));
});
