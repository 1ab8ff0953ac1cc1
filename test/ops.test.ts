import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { ErrorCode } from '../src/errors.js';
import { hasCode } from './assert.ts';
import type { TypedArray, TypedArrayConstructor } from '../src/comm/validate.js';
import {
  BUILTIN_OP_NAMES, DType, DTYPE_COUNT, Op, OpCode, bytesPerElement, builtinOpById, ctorOf, dtypeName,
  dtypeOf, hasDtype, isBigInt, isFloat, isInteger, reduceBytes, reduceInto, resolveOp, tryDtypeOf, viewOf,
} from '../src/ops/index.js';
import type { BuiltinOpName } from '../src/ops/index.js';
import { referenceReduce } from '../src/ops/reference.js';
import { mulberry32 } from './jobs/common.ts';

// ---------------------------------------------------------------------------------------------
// Helpers

const ALL_DTYPES: DType[] = Array.from({ length: DTYPE_COUNT }, (_, i) => i as DType);
const BITWISE = new Set<string>(['band', 'bor', 'bxor']);
const LOC = new Set<string>(['minloc', 'maxloc']);



function alloc(dt: DType, n: number): TypedArray {
  return new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
}

function at(a: TypedArray, i: number): number | bigint {
  return (a as ArrayLike<number | bigint>)[i]!;
}

function put(a: TypedArray, i: number, v: number | bigint): void {
  (a as unknown as { [i: number]: number | bigint })[i] = v;
}

function copyOf(dt: DType, a: TypedArray): TypedArray {
  const out = alloc(dt, a.length);
  for (let i = 0; i < a.length; i++) put(out, i, at(a, i));
  return out;
}

function from(dt: DType, values: readonly (number | bigint)[]): TypedArray {
  const out = alloc(dt, values.length);
  values.forEach((v, i) => put(out, i, isBigInt(dt) ? BigInt(v) : Number(v)));
  return out;
}

const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  [DType.Int8]: [-128, 127], [DType.Uint8]: [0, 255], [DType.Uint8Clamped]: [0, 255],
  [DType.Int16]: [-32768, 32767], [DType.Uint16]: [0, 65535],
  [DType.Int32]: [-2147483648, 2147483647], [DType.Uint32]: [0, 4294967295],
};

const FLOAT_SPECIALS = [0, -0, NaN, Infinity, -Infinity, 1, -1, 5e-324, 1e308, -1e308];

/**
 * One random element of type dt: zeros, small values (for ties and logical ops), specials
 * (NaN, ±0, ±Infinity for floats) and values over the whole range (negative ones included).
 */
function randomValue(dt: DType, rand: () => number, small = false): number | bigint {
  const r = rand();
  const smallInt = Math.floor(rand() * 7) - 3;
  if (isBigInt(dt)) {
    if (r < 0.15) return 0n;
    if (small || r < 0.45) return dt === DType.BigUint64 ? BigInt(Math.abs(smallInt)) : BigInt(smallInt);
    const bits = (BigInt(Math.floor(rand() * 2 ** 32)) << 32n) | BigInt(Math.floor(rand() * 2 ** 32));
    return dt === DType.BigInt64 ? BigInt.asIntN(64, bits) : bits;
  }
  if (isFloat(dt)) {
    const round = dt === DType.Float32 ? Math.fround : (x: number): number => x;
    if (r < 0.15) return round(FLOAT_SPECIALS[Math.floor(rand() * FLOAT_SPECIALS.length)]!);
    if (small || r < 0.45) return smallInt;
    return round((rand() - 0.5) * 10 ** (rand() * 12 - 6));
  }
  const [lo, hi] = INT_RANGE[dt]!;
  if (r < 0.15) return 0;
  if (small || r < 0.45) return lo === 0 ? Math.abs(smallInt) : smallInt;
  return lo + Math.floor(rand() * (hi - lo + 1));
}

/** Interleaved (value, index) pairs for minloc/maxloc: few distinct values, so many ties. */
function randomArray(dt: DType, n: number, rand: () => number, loc: boolean): TypedArray {
  const a = alloc(dt, n);
  for (let i = 0; i < n; i++) {
    if (loc && i % 2 === 1) put(a, i, isBigInt(dt) ? BigInt(Math.floor(rand() * 6)) : Math.floor(rand() * 6));
    else put(a, i, loc && rand() < 0.8 ? randomValue(dt, rand, true) : randomValue(dt, rand));
  }
  return a;
}

function show(v: number | bigint): string {
  return typeof v === 'bigint' ? `${v}n` : Object.is(v, -0) ? '-0' : String(v);
}

/** Element-wise identity: NaN equals NaN, -0 differs from +0. */
function assertSameElements(actual: TypedArray, expected: TypedArray, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < actual.length; i++) {
    const a = at(actual, i), e = at(expected, i);
    if (!Object.is(a, e)) {
      assert.fail(`${what}: element ${i} is ${show(a)}, expected ${show(e)}`);
    }
  }
}

/** The rank-order fold through reduceInto: rank k calls reduceInto(inout = c_k, input = partial). */
function foldWithReduceInto(op: BuiltinOpName | Op, dt: DType, contributions: TypedArray[]): TypedArray {
  let acc = copyOf(dt, contributions[0]!);
  for (let k = 1; k < contributions.length; k++) {
    const next = copyOf(dt, contributions[k]!);
    reduceInto(op, dt, next, acc);
    acc = next;
  }
  return acc;
}

function bytesOf(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * The same fold through reduceBytes, with the partial result and the next contribution at
 * the given byte offsets of (possibly distinct, possibly shared) buffers.
 */
function foldWithReduceBytes(op: BuiltinOpName | Op, dt: DType, contributions: TypedArray[],
  accBuf: ArrayBufferLike, accOff: number, nextBuf: ArrayBufferLike, nextOff: number): TypedArray {
  const bytes = contributions[0]!.byteLength;
  const accU8 = new Uint8Array(accBuf), nextU8 = new Uint8Array(nextBuf);
  accU8.set(bytesOf(contributions[0]!), accOff);
  for (let k = 1; k < contributions.length; k++) {
    nextU8.set(bytesOf(contributions[k]!), nextOff);
    reduceBytes(op, dt, nextBuf, nextOff, accBuf, accOff, contributions[0]!.length);
    accU8.set(nextU8.slice(nextOff, nextOff + bytes), accOff);
  }
  const out = alloc(dt, contributions[0]!.length);
  bytesOf(out).set(accU8.subarray(accOff, accOff + bytes));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Datatypes

test('datatype ids are stable, one per typed-array type, with names and element sizes', () => {
  const expected: [DType, string, number, TypedArrayConstructor][] = [
    [0, 'Int8', 1, Int8Array], [1, 'Uint8', 1, Uint8Array], [2, 'Uint8Clamped', 1, Uint8ClampedArray],
    [3, 'Int16', 2, Int16Array], [4, 'Uint16', 2, Uint16Array], [5, 'Int32', 4, Int32Array],
    [6, 'Uint32', 4, Uint32Array], [7, 'Float32', 4, Float32Array], [8, 'Float64', 8, Float64Array],
    [9, 'BigInt64', 8, BigInt64Array], [10, 'BigUint64', 8, BigUint64Array],
  ];
  assert.equal(DTYPE_COUNT, expected.length);
  for (const [dt, name, bytes, ctor] of expected) {
    assert.equal(DType[name as keyof typeof DType], dt);
    assert.equal(dtypeName(dt), name);
    assert.equal(bytesPerElement(dt), bytes);
    assert.equal(ctorOf(dt), ctor);
  }
});

test('dtypeOf() maps every typed array to its id and a Buffer to Uint8', () => {
  for (const dt of ALL_DTYPES) {
    const a = alloc(dt, 3);
    assert.equal(dtypeOf(a), dt);
    assert.ok(hasDtype(a, dt));
    assert.ok(!hasDtype(a, ((dt + 1) % DTYPE_COUNT) as DType));
  }
  assert.equal(dtypeOf(Buffer.from([1, 2, 3])), DType.Uint8);
  assert.ok(hasDtype(Buffer.alloc(2), DType.Uint8));
  class Sub extends Float64Array {}
  assert.equal(dtypeOf(new Sub(2)), DType.Float64);
});

test('dtypeOf() rejects a DataView, a plain array, an ArrayBuffer and null with NBC_ERR_TYPE', () => {
  for (const bad of [new DataView(new ArrayBuffer(8)), [1, 2], new ArrayBuffer(8), null, 3]) {
    assert.throws(() => dtypeOf(bad as unknown as TypedArray), hasCode(ErrorCode.TYPE, /expected a typed array/));
    assert.equal(tryDtypeOf(bad), undefined);
  }
});

test('isFloat(), isBigInt() and isInteger() classify the datatypes', () => {
  assert.deepEqual(ALL_DTYPES.filter(isFloat), [DType.Float32, DType.Float64]);
  assert.deepEqual(ALL_DTYPES.filter(isBigInt), [DType.BigInt64, DType.BigUint64]);
  assert.deepEqual(ALL_DTYPES.filter(isInteger), ALL_DTYPES.filter((dt) => !isFloat(dt)));
});

test('viewOf() makes a view of the right type and refuses unaligned or out-of-range views with NBC_ERR_ARG', () => {
  const sab = new SharedArrayBuffer(64);
  for (const dt of ALL_DTYPES) {
    const bpe = bytesPerElement(dt);
    const v = viewOf(dt, sab, 2 * bpe, 3);
    assert.equal(dtypeOf(v), dt);
    assert.equal(v.byteOffset, 2 * bpe);
    assert.equal(v.length, 3);
    assert.equal(v.buffer, sab);
    if (bpe > 1) assert.throws(() => viewOf(dt, sab, 1, 1), hasCode(ErrorCode.ARG, /multiple of/));
    assert.throws(() => viewOf(dt, sab, 0, 64 / bpe + 1), hasCode(ErrorCode.ARG, /64 bytes/));
  }
  assert.throws(() => viewOf(42 as DType, sab, 0, 1), hasCode(ErrorCode.TYPE, /datatype id 42/));
});

test('core ops code imports no node:* module', () => {
  const dir = new URL('../src/ops/', import.meta.url);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const src = readFileSync(new URL(file, dir), 'utf8');
    assert.doesNotMatch(src, /from\s+['"]node:|require\(|import\(['"]node:/, file);
  }
});

// ---------------------------------------------------------------------------------------------
// Ops: names, ids, validity

test('resolveOp() accepts every predefined name and an Op, and lists the names for an unknown one', () => {
  for (const name of BUILTIN_OP_NAMES) {
    const op = resolveOp(name);
    assert.equal(op.name, name);
    assert.ok(op.isBuiltin);
    assert.ok(op.commutative);
    assert.equal(resolveOp(op), op);
    assert.equal(Op.builtin(name), op);
    assert.equal(op.itemLength, LOC.has(name) ? 2 : 1);
  }
  assert.throws(() => resolveOp('avg'),
    hasCode(ErrorCode.OP, /unknown op 'avg'/, /'sum', 'prod', 'min', 'max', 'land', 'lor', 'lxor', 'band', 'bor', 'bxor', 'minloc', 'maxloc'/));
  assert.throws(() => resolveOp(7), hasCode(ErrorCode.OP, /op is number 7/));
  assert.throws(() => resolveOp(undefined), hasCode(ErrorCode.OP, /op is undefined/));
  assert.throws(() => resolveOp('SUM', 'allreduce on communicator 3'),
    hasCode(ErrorCode.OP, /^Cannot allreduce on communicator 3: unknown op 'SUM'/));
});

test('predefined ops have stable ids and builtinOpById() inverts them; user ops get ids of their own', () => {
  assert.deepEqual(BUILTIN_OP_NAMES.map((n) => OpCode[n]), BUILTIN_OP_NAMES.map((_, i) => i));
  assert.deepEqual(
    { sum: 0, prod: 1, min: 2, max: 3, land: 4, lor: 5, lxor: 6, band: 7, bor: 8, bxor: 9, minloc: 10, maxloc: 11 },
    OpCode);
  for (const name of BUILTIN_OP_NAMES) assert.equal(builtinOpById(OpCode[name]).name, name);
  assert.throws(() => builtinOpById(12), hasCode(ErrorCode.OP));
  const a = Op.create(() => {}), b = Op.create(() => {});
  assert.ok(a.id >= 256 && b.id > a.id);
  assert.equal(a.isBuiltin, false);
  assert.equal(a.commutative, false, 'user ops are non-commutative unless declared otherwise');
  assert.equal(Op.create(() => {}, { commutative: true }).commutative, true);
});

test('band, bor and bxor on Float32 and Float64 throw NBC_ERR_OP naming the op, the type and the allowed types', () => {
  for (const name of ['band', 'bor', 'bxor'] as const) {
    for (const dt of [DType.Float32, DType.Float64]) {
      const pattern = new RegExp(`op '${name}' is not defined for ${dtypeName(dt)} elements.*integer types only \\(Int8, .*BigUint64\\)`);
      const op = resolveOp(name);
      assert.equal(op.accepts(dt), false);
      assert.throws(() => op.kernel(dt), hasCode(ErrorCode.OP, pattern));
      assert.throws(() => reduceInto(name, dt, alloc(dt, 2), alloc(dt, 2)), hasCode(ErrorCode.OP, pattern));
      assert.throws(() => reduceBytes(name, dt, new ArrayBuffer(16), 0, new ArrayBuffer(16), 0, 2), hasCode(ErrorCode.OP, pattern));
      assert.throws(() => referenceReduce(name, dt, [alloc(dt, 2)]), hasCode(ErrorCode.OP, pattern));
    }
  }
  // Everything else is allowed: every op on every integer type, all but bitwise ops on floats.
  for (const name of BUILTIN_OP_NAMES) {
    for (const dt of ALL_DTYPES) assert.equal(resolveOp(name).accepts(dt), !(BITWISE.has(name) && isFloat(dt)), `${name} ${dtypeName(dt)}`);
  }
});

test('minloc and maxloc with an odd element count throw NBC_ERR_COUNT', () => {
  for (const name of ['minloc', 'maxloc'] as const) {
    assert.throws(() => reduceInto(name, DType.Float64, new Float64Array(3), new Float64Array(3)),
      hasCode(ErrorCode.COUNT, new RegExp(`op '${name}' reduces \\(value, index\\) pairs.*even; got 3`)));
    assert.throws(() => reduceInto(name, DType.Int32, new Int32Array(4), new Int32Array(4), 1), hasCode(ErrorCode.COUNT));
    assert.throws(() => reduceBytes(name, DType.Int16, new ArrayBuffer(10), 0, new ArrayBuffer(10), 0, 5), hasCode(ErrorCode.COUNT));
    assert.throws(() => referenceReduce(name, DType.Uint8, [new Uint8Array(5)]), hasCode(ErrorCode.COUNT));
    reduceInto(name, DType.Float64, new Float64Array(3), new Float64Array(3), 2); // an even prefix is fine
  }
});

// ---------------------------------------------------------------------------------------------
// Every op x every datatype against the reference

for (const name of BUILTIN_OP_NAMES) {
  test(`reduceInto() folds random data with '${name}' exactly like referenceReduce() on every allowed datatype`, () => {
    for (const dt of ALL_DTYPES) {
      if (BITWISE.has(name) && isFloat(dt)) continue;
      const seed = 1000 * OpCode[name] + dt;
      const rand = mulberry32(seed);
      for (let trial = 0; trial < 25; trial++) {
        const ranks = 1 + Math.floor(rand() * 6);
        let n = Math.floor(rand() * 41);
        if (LOC.has(name)) n -= n % 2;
        const contributions = Array.from({ length: ranks }, () => randomArray(dt, n, rand, LOC.has(name)));
        assertSameElements(foldWithReduceInto(name, dt, contributions), referenceReduce(name, dt, contributions),
          `${name} on ${dtypeName(dt)}, seed ${seed}, trial ${trial}, ${ranks} ranks`);
      }
    }
  });
}

test('reduceBytes() matches the reference for every op and datatype at aligned and unaligned byte offsets', () => {
  const rand = mulberry32(77);
  for (const name of BUILTIN_OP_NAMES) {
    for (const dt of ALL_DTYPES) {
      if (BITWISE.has(name) && isFloat(dt)) continue;
      for (let trial = 0; trial < 6; trial++) {
        const n = LOC.has(name) ? 12 : 13;
        const contributions = Array.from({ length: 4 }, () => randomArray(dt, n, rand, LOC.has(name)));
        const bytes = n * bytesPerElement(dt);
        // trial 0: both aligned; then unaligned dst, unaligned src, both, separate buffers.
        const accOff = [0, 8, 3, 5, 1, 16][trial]!, nextOff = [bytes + 8, bytes + 19, bytes + 24, bytes + 33, 7, 0][trial]!;
        const shared = new SharedArrayBuffer(2 * bytes + 64);
        const other = trial >= 4 ? new ArrayBuffer(bytes + 64) : shared;
        assertSameElements(foldWithReduceBytes(name, dt, contributions, shared, accOff, other, nextOff),
          referenceReduce(name, dt, contributions), `${name} on ${dtypeName(dt)}, trial ${trial} (offsets ${accOff}, ${nextOff})`);
      }
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Semantics, one rule at a time

test('min and max follow the C rule of MPI implementations: a tie or a NaN on either side gives the input element', () => {
  for (const dt of [DType.Float32, DType.Float64]) {
    //                      inout:  3    NaN  NaN  0   -0   2  5
    //                      input:  NaN  3    NaN  -0  0    5  2
    for (const name of ['min', 'max'] as const) {
      const inout = from(dt, [3, NaN, NaN, 0, -0, 2, 5]);
      const input = from(dt, [NaN, 3, NaN, -0, 0, 5, 2]);
      reduceInto(name, dt, inout, input);
      const expected = name === 'min' ? [NaN, 3, NaN, -0, 0, 2, 2] : [NaN, 3, NaN, -0, 0, 5, 5];
      assertSameElements(inout, from(dt, expected), `${name} on ${dtypeName(dt)}`);
    }
  }
});

test('in a rank-order fold, min and max are NaN exactly where the first contribution is NaN', () => {
  const c = [new Float64Array([NaN, 1, 1]), new Float64Array([2, NaN, 0]), new Float64Array([3, 4, NaN])];
  assertSameElements(foldWithReduceInto('min', DType.Float64, c), new Float64Array([NaN, 1, 0]), 'min');
  assertSameElements(foldWithReduceInto('max', DType.Float64, c), new Float64Array([NaN, 4, 1]), 'max');
});

test('minloc and maxloc pick the extreme value and, on equal values, the smaller index', () => {
  for (const dt of [DType.Float64, DType.Int32, DType.Uint8, DType.BigInt64]) {
    //                      (value, index) pairs
    const inout = from(dt, [5, 2,   3, 7,   4, 9,   4, 1,   6, 6]);
    const input = from(dt, [3, 8,   5, 0,   4, 3,   4, 2,   6, 6]);
    const minloc = copyOf(dt, inout);
    reduceInto('minloc', dt, minloc, input);
    assertSameElements(minloc, from(dt, [3, 8, 3, 7, 4, 3, 4, 1, 6, 6]), `minloc on ${dtypeName(dt)}`);
    const maxloc = copyOf(dt, inout);
    reduceInto('maxloc', dt, maxloc, input);
    assertSameElements(maxloc, from(dt, [5, 2, 5, 0, 4, 3, 4, 1, 6, 6]), `maxloc on ${dtypeName(dt)}`);
  }
  // Across ranks: the global minimum 1 appears at ranks 1 and 3; the lower index wins.
  const ranks = [[4, 0], [1, 1], [2, 2], [1, 3]].map((p) => new Float32Array(p));
  assertSameElements(foldWithReduceInto('minloc', DType.Float32, ranks), new Float32Array([1, 1]), 'minloc fold');
});

test('minloc and maxloc keep the inout pair when the values do not compare (NaN), as Open MPI and MPICH do', () => {
  const inout = new Float64Array([NaN, 1, 2, 1]);
  reduceInto('minloc', DType.Float64, inout, new Float64Array([1, 0, NaN, 0]));
  assertSameElements(inout, new Float64Array([NaN, 1, 2, 1]), 'minloc with NaN');
});

test('logical ops treat NaN as true and -0 as false and give 1 or 0 (1n or 0n for BigInt types)', () => {
  const inout = () => new Float64Array([NaN, -0, 7, 0]);
  const input = new Float64Array([2, 5, -0, NaN]);
  const expect = { land: [1, 0, 0, 0], lor: [1, 1, 1, 1], lxor: [0, 1, 1, 1] };
  for (const [name, values] of Object.entries(expect)) {
    const a = inout();
    reduceInto(name as BuiltinOpName, DType.Float64, a, input);
    assertSameElements(a, new Float64Array(values), name);
  }
  const b = new BigInt64Array([0n, -5n, 3n]);
  reduceInto('lor', DType.BigInt64, b, new BigInt64Array([0n, 0n, 9n]));
  assertSameElements(b, new BigInt64Array([0n, 1n, 1n]), 'lor on BigInt64');
});

test('integer sum and prod wrap like C, with exact low bits for 32-bit products', () => {
  // 0x7fffffff^2 = 0x3fffffff00000001 exceeds 2^53: a double product would lose the low bits.
  const i32 = new Int32Array([0x7fffffff, 0x7fffffff, -0x80000000, 123456789]);
  reduceInto('prod', DType.Int32, i32, new Int32Array([0x7fffffff, 2, -1, 987654321]));
  assertSameElements(i32, new Int32Array([1, -2, -0x80000000, Number(BigInt.asIntN(32, 123456789n * 987654321n))]), 'Int32 prod');
  const u32 = new Uint32Array([0xffffffff, 0xffffffff]);
  reduceInto('prod', DType.Uint32, u32, new Uint32Array([0xffffffff, 3]));
  assertSameElements(u32, new Uint32Array([1, 0xfffffffd]), 'Uint32 prod');
  const i8 = new Int8Array([127, -128]);
  reduceInto('sum', DType.Int8, i8, new Int8Array([1, -1]));
  assertSameElements(i8, new Int8Array([-128, 127]), 'Int8 sum');
  const u64 = new BigUint64Array([2n ** 64n - 1n, 2n ** 63n]);
  reduceInto('sum', DType.BigUint64, u64, new BigUint64Array([2n, 2n ** 63n]));
  assertSameElements(u64, new BigUint64Array([1n, 0n]), 'BigUint64 sum');
});

test('Uint8Clamped sum and prod saturate at 255', () => {
  const a = new Uint8ClampedArray([200, 10, 16]);
  reduceInto('sum', DType.Uint8Clamped, a, new Uint8ClampedArray([100, 20, 16]));
  assertSameElements(a, new Uint8ClampedArray([255, 30, 32]), 'sum');
  reduceInto('prod', DType.Uint8Clamped, a, new Uint8ClampedArray([2, 9, 8]));
  assertSameElements(a, new Uint8ClampedArray([255, 255, 255]), 'prod');
});

test('Float32 sum is rounded to float32 like C float arithmetic', () => {
  const a = new Float32Array([1]);
  reduceInto('sum', DType.Float32, a, new Float32Array([2 ** -24]));
  assert.equal(a[0], 1, '1 + 2^-24 rounds to even: 1');
  const b = new Float32Array([0.1]);
  reduceInto('sum', DType.Float32, b, new Float32Array([0.2]));
  assert.equal(b[0], Math.fround(Math.fround(0.1) + Math.fround(0.2)));
});

// ---------------------------------------------------------------------------------------------
// User ops: argument order, fold order

type Mat = [number, number, number, number];
const mul = (x: Mat, y: Mat): Mat => [
  x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]];

/** 2x2 matrices, row-major, several per array: inout = input × inout (input on the left). */
const matmul = Op.create((inout: Float64Array, input: Float64Array) => {
  for (let i = 0; i < inout.length; i += 4) {
    const p = mul([input[i]!, input[i + 1]!, input[i + 2]!, input[i + 3]!], [inout[i]!, inout[i + 1]!, inout[i + 2]!, inout[i + 3]!]);
    inout.set(p, i);
  }
}, { commutative: false, itemLength: 4, name: 'matmul2x2' });

test('a user op receives (inout, input) with input as the left operand', () => {
  const calls: [number[], number[]][] = [];
  const spy = Op.create((inout: Int32Array, input: Int32Array) => {
    calls.push([[...inout], [...input]]);
    for (let i = 0; i < inout.length; i++) inout[i] = 10 * input[i]! + inout[i]!; // "input then inout" as digits
  });
  const inout = new Int32Array([1, 2]);
  reduceInto(spy, DType.Int32, inout, new Int32Array([3, 4]));
  assert.deepEqual(calls, [[[1, 2], [3, 4]]]);
  assert.deepEqual([...inout], [31, 42]);
  // Rank order: ((c0 ⊕ c1) ⊕ c2) gives the digits c0 c1 c2.
  const folded = foldWithReduceInto(spy, DType.Int32, [new Int32Array([1]), new Int32Array([2]), new Int32Array([3])]);
  assert.deepEqual([...folded], [123]);
  assert.deepEqual([...referenceReduce(spy, DType.Int32, [new Int32Array([1]), new Int32Array([2]), new Int32Array([3])])], [123]);
});

test('a non-commutative user op (2x2 matrix product) folds in rank order through reduceInto, reduceBytes and the reference', () => {
  const rand = mulberry32(4);
  const ranks = 5, perRank = 3;
  const contributions = Array.from({ length: ranks }, () =>
    new Float64Array(Array.from({ length: 4 * perRank }, () => Math.floor(rand() * 7) - 3)));
  // Make the first matrices surely non-commuting: shear up at rank 0, shear down at rank 1.
  contributions[0]!.set([1, 1, 0, 1], 0);
  contributions[1]!.set([1, 0, 1, 1], 0);
  const expected = new Float64Array(4 * perRank);
  const reversed = new Float64Array(4 * perRank);
  for (let m = 0; m < perRank; m++) {
    const mats = contributions.map((c) => [...c.subarray(4 * m, 4 * m + 4)] as Mat);
    expected.set(mats.reduce((x, y) => mul(x, y)), 4 * m);
    reversed.set(mats.reduceRight((x, y) => mul(x, y)), 4 * m);
  }
  assert.notDeepEqual([...expected], [...reversed], 'the data must tell the orders apart');
  assertSameElements(foldWithReduceInto(matmul, DType.Float64, contributions), expected, 'reduceInto');
  assertSameElements(referenceReduce(matmul, DType.Float64, contributions), expected, 'referenceReduce');
  const buf = new SharedArrayBuffer(256);
  assertSameElements(foldWithReduceBytes(matmul, DType.Float64, contributions, buf, 3, buf, 120), expected, 'reduceBytes unaligned');
});

test('a user op with itemLength 4 rejects counts that are not multiples of 4 with NBC_ERR_COUNT', () => {
  assert.throws(() => reduceInto(matmul, DType.Float64, new Float64Array(6), new Float64Array(6)),
    hasCode(ErrorCode.COUNT, /op 'matmul2x2' combines items of 4 elements; the element count 6 is not a multiple of 4/));
  reduceInto(matmul, DType.Float64, new Float64Array(6), new Float64Array(6), 4);
});

test('Op.create() rejects a non-function with NBC_ERR_OP and bad options with NBC_ERR_ARG', () => {
  assert.throws(() => Op.create(42 as unknown as () => void), hasCode(ErrorCode.OP, /expected \(inout, input\) => void/));
  assert.throws(() => Op.create(() => {}, { commutative: 'yes' as unknown as boolean }), hasCode(ErrorCode.ARG, /commutative/));
  assert.throws(() => Op.create(() => {}, { itemLength: 0 }), hasCode(ErrorCode.ARG, /itemLength/));
  assert.throws(() => Op.create(() => {}, { itemLength: 1.5 }), hasCode(ErrorCode.ARG, /itemLength/));
});

// ---------------------------------------------------------------------------------------------
// reduceInto and reduceBytes: ranges, types, aliasing

test('reduceInto() reduces only the first count elements and leaves the rest', () => {
  const a = new Int16Array([1, 2, 3, 4]);
  reduceInto('sum', DType.Int16, a, new Int16Array([10, 20, 30, 40]), 2);
  assert.deepEqual([...a], [11, 22, 3, 4]);
  reduceInto('sum', DType.Int16, a, new Int16Array([1, 1, 1, 1]), 0);
  assert.deepEqual([...a], [11, 22, 3, 4]);
});

test('reduceInto() accepts a Buffer as Uint8 and subarray views at any element offset', () => {
  const buf = Buffer.from([1, 2, 3]);
  reduceInto('bor', DType.Uint8, buf, new Uint8Array([4, 4, 4]));
  assert.deepEqual([...buf], [5, 6, 7]);
  const big = new Float64Array([0, 1, 2, 3, 4, 5]);
  reduceInto('sum', DType.Float64, big.subarray(3), big.subarray(0, 3));
  assert.deepEqual([...big], [0, 1, 2, 3, 5, 7]);
});

test('reduceInto() rejects mismatched array types with NBC_ERR_TYPE and counts beyond the arrays with NBC_ERR_COUNT', () => {
  assert.throws(() => reduceInto('sum', DType.Float64, new Float64Array(2), new Float32Array(2) as unknown as Float64Array),
    hasCode(ErrorCode.TYPE, /inout is Float64Array and input is Float32Array; expected both to be Float64Array/));
  assert.throws(() => reduceInto('sum', DType.Int32, new Uint32Array(2), new Uint32Array(2)), hasCode(ErrorCode.TYPE));
  assert.throws(() => reduceInto('sum', DType.Int32, new Int32Array(2), new Int32Array(3), 3), hasCode(ErrorCode.COUNT, /count 3 exceeds/));
  assert.throws(() => reduceInto('sum', DType.Int32, new Int32Array(2), new Int32Array(2), -1), hasCode(ErrorCode.COUNT));
  assert.throws(() => reduceInto('sum', DType.Int32, new Int32Array(2), new Int32Array(2), 1.5), hasCode(ErrorCode.COUNT));
  assert.throws(() => reduceInto('sum', 99 as DType, new Int32Array(2), new Int32Array(2)), hasCode(ErrorCode.TYPE));
});

test('reduceInto() gives the non-aliased result when inout and input partly overlap, and works on identical arrays', () => {
  const a = new Int32Array([1, 2, 3, 4, 5]);
  reduceInto('sum', DType.Int32, a.subarray(1), a.subarray(0, 4)); // inout[i] = a[i] + a[i+1], from the old values
  assert.deepEqual([...a], [1, 3, 5, 7, 9]);
  const b = new Int32Array([1, 2, 3, 4, 5]);
  reduceInto('sum', DType.Int32, b.subarray(0, 4), b.subarray(1));
  assert.deepEqual([...b], [3, 5, 7, 9, 5]);
  const c = new Float64Array([1.5, -2]);
  reduceInto('prod', DType.Float64, c, c);
  assert.deepEqual([...c], [2.25, 4]);
});

test('reduceBytes() at unaligned offsets changes only the destination range', () => {
  const buf = new SharedArrayBuffer(64);
  const u8 = new Uint8Array(buf);
  for (let i = 0; i < 64; i++) u8[i] = 0xa0 + (i % 16);
  const before = u8.slice();
  const dst = new Float64Array([1.25, -3, 1e300]), src = new Float64Array([2, 0.5, 1e300]);
  u8.set(bytesOf(dst), 3);
  u8.set(bytesOf(src), 37);
  reduceBytes('sum', DType.Float64, buf, 3, buf, 37, 3);
  const out = new Float64Array(3);
  bytesOf(out).set(u8.subarray(3, 27));
  assert.deepEqual([...out], [3.25, -2.5, 2e300]);
  for (let i = 0; i < 64; i++) {
    if (i >= 3 && i < 27) continue;
    if (i >= 37 && i < 61) assert.equal(u8[i], bytesOf(src)[i - 37], `src byte ${i} unchanged`);
    else assert.equal(u8[i], before[i], `byte ${i} outside both ranges unchanged`);
  }
});

test('reduceBytes() treats partly overlapping ranges of one buffer as if src were copied first', () => {
  for (const [dstOff, srcOff] of [[8, 0], [0, 8], [4, 0], [3, 5]] as const) {
    const buf = new ArrayBuffer(48);
    const values = new Int32Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    new Uint8Array(buf).set(bytesOf(values));
    const read = (off: number): number[] => [...new Int32Array(new Uint8Array(buf).slice(off, off + 16).buffer)];
    const expected = read(dstOff).map((d, i) => d + read(srcOff)[i]!);
    reduceBytes('sum', DType.Int32, buf, dstOff, buf, srcOff, 4);
    assert.deepEqual(read(dstOff), expected, `dst ${dstOff}, src ${srcOff}`);
  }
});

test('reduceBytes() rejects ranges outside their buffers with NBC_ERR_COUNT', () => {
  const buf = new SharedArrayBuffer(32);
  assert.throws(() => reduceBytes('sum', DType.Float64, buf, 8, buf, 0, 4), hasCode(ErrorCode.COUNT, /dst range at byte 8 of 32 bytes.*32 bytes/));
  assert.throws(() => reduceBytes('sum', DType.Float64, buf, 0, buf, 1, 4), hasCode(ErrorCode.COUNT, /src range/));
  assert.throws(() => reduceBytes('sum', DType.Float64, buf, -8, buf, 0, 1), hasCode(ErrorCode.COUNT));
  assert.throws(() => reduceBytes('sum', DType.Float64, buf, 0.5, buf, 16, 1), hasCode(ErrorCode.COUNT));
  assert.throws(() => reduceBytes('sum', DType.Float64, buf, 40, buf, 0, 0), hasCode(ErrorCode.COUNT));
  reduceBytes('sum', DType.Float64, buf, 32, buf, 0, 0); // an empty range at the end is fine
  assert.throws(() => reduceBytes('sum', DType.Float64, new Float64Array(4) as unknown as ArrayBuffer, 0, buf, 0, 1),
    hasCode(ErrorCode.TYPE, /dst is Float64Array; expected an ArrayBuffer or a SharedArrayBuffer/));
});

test('reduceBytes() sees a growable SharedArrayBuffer grow after its views were cached', () => {
  type Growable = SharedArrayBuffer & { grow(n: number): void };
  const buf = new (SharedArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Growable)(16, { maxByteLength: 64 });
  new Float64Array(buf, 0, 2).set([1, 2]);
  reduceBytes('sum', DType.Float64, buf, 0, buf, 8, 1);
  assert.throws(() => reduceBytes('sum', DType.Float64, buf, 16, buf, 0, 1), hasCode(ErrorCode.COUNT));
  buf.grow(32);
  new Float64Array(buf, 16, 2).set([10, 20]);
  reduceBytes('sum', DType.Float64, buf, 24, buf, 16, 1);
  assert.deepEqual([...new Float64Array(buf, 0, 4)], [3, 2, 10, 30]);
});

test('a kernel resolved once with op.kernel() reduces at element offsets', () => {
  const k = resolveOp('max').kernel(DType.Uint16);
  const a = new Uint16Array([1, 9, 1, 9]), b = new Uint16Array([0, 5, 5, 5, 5]);
  k(a, 1, b, 2, 3);
  assert.deepEqual([...a], [1, 9, 5, 9]);
  const u = matmul.kernel(DType.Float64);
  const m = new Float64Array([9, 1, 0, 0, 1, 9]);
  u(m, 1, new Float64Array([2, 0, 0, 2]), 0, 4); // 2I × [[1,0],[0,1]] at offset 1
  assert.deepEqual([...m], [9, 2, 0, 0, 2, 9]);
});

test('referenceReduce() rejects no contributions, different lengths and wrong types', () => {
  assert.throws(() => referenceReduce('sum', DType.Int32, []), hasCode(ErrorCode.COUNT, /no contributions/));
  assert.throws(() => referenceReduce('sum', DType.Int32, [new Int32Array(2), new Int32Array(3)]),
    hasCode(ErrorCode.COUNT, /contribution 1 has 3 elements but contribution 0 has 2/));
  assert.throws(() => referenceReduce('sum', DType.Int32, [new Int32Array(2), new Uint32Array(2)]),
    hasCode(ErrorCode.TYPE, /contribution 1 is not an Int32Array/));
  const one = new Int32Array([5, 6]);
  const r = referenceReduce('sum', DType.Int32, [one]);
  assert.deepEqual([...r], [5, 6]);
  assert.notEqual(r, one, 'the reference returns a new array');
});
