/**
 * The element loops of the predefined reduction operations.
 *
 * Every loop computes, for k < n,
 *
 *     inout[io + k] = input[ii + k] ⊕ inout[io + k]          (input is the LEFT operand)
 *
 * in place, front to back, with the operands in that order (so floating-point results are
 * bitwise reproducible for a fixed reduction order; the rules per op are in docs/ops.md).
 *
 * ## Why four functions with the same shape
 *
 * One loop per (op, type family), selected once per call by a `switch` on the op code, never
 * per element. A family is a set of typed-array kinds that share one function:
 *
 *   floatLoops   Float32Array, Float64Array
 *   wideLoops    Int32Array, Uint32Array, Int16Array, Uint16Array
 *   narrowLoops  Int8Array, Uint8Array (Buffer too), Uint8ClampedArray
 *   bigLoops     BigInt64Array, BigUint64Array
 *
 * `wideLoops` and `narrowLoops` are the same text on purpose. V8 keeps an element access
 * fast while it has seen at most 4 receiver kinds (polymorphic inline cache); at the 5th it
 * turns megamorphic. Measured on Node 20 (x64, 64 Ki elements, sum): one loop fed 1 kind
 * 1.7 ns/element, 2 kinds 2.0-2.5, 4 kinds 2.1-4.0, 5 or more kinds 50 ns/element. Closures
 * made by one factory share their feedback, so only separate function literals help. Splitting
 * the 7 integer kinds into two families of at most 4 keeps every loop under that cliff.
 *
 * Integer products use `Math.imul`: a 32 x 32-bit product can exceed 2^53, where a double
 * loses the low bits that wrapping keeps; `imul` yields exactly the low 32 bits, which the
 * store then wraps (or, for Uint8Clamped, saturates: its operands are at most 255, so the
 * product is exact) to the element type. Float products use `*`; Float32 results are rounded
 * on store, which equals float32 arithmetic for + and * (a double holds the exact result to
 * more than 2 x 24 + 2 bits, so the double rounding is innocuous).
 *
 * The float sum, the op that solvers and benchmarks reduce with, runs four elements per turn:
 * TurboFan checks each array's map and reloads its length and data pointer at every access
 * (a typed-array store may, as far as it knows, change them), and the unrolled turn shares
 * the loop's own overhead among four. Measured on Node 20 (8,192 doubles, one array kind):
 * 9.5 us -> 6.8 us, elements and order unchanged, so the bits are too.
 *
 * Kernels do not check bounds or types: callers do (reduceInto and reduceBytes in
 * kernels.ts, or the schedule engine once per schedule).
 */
import { NbcInternalError } from '../errors.js';
import type { TypedArray } from '../comm/validate.js';
import { DTYPE_COUNT, type DType } from './dtype.js';

/** Stable codes of the predefined ops (part of the schedule format: never renumber). */
export const OpCode = {
  sum: 0,
  prod: 1,
  min: 2,
  max: 3,
  land: 4,
  lor: 5,
  lxor: 6,
  band: 7,
  bor: 8,
  bxor: 9,
  minloc: 10,
  maxloc: 11,
} as const;

export type OpCode = (typeof OpCode)[keyof typeof OpCode];

/**
 * A resolved reduction for one datatype:
 * `inout[inoutStart + k] = input[inputStart + k] ⊕ inout[inoutStart + k]` for k < count.
 * Both arrays must be of the datatype it was resolved for; no checks are made.
 */
export type ReduceKernel = (
  inout: TypedArray, inoutStart: number, input: TypedArray, inputStart: number, count: number,
) => void;

type FloatArray = Float32Array | Float64Array;
type IntArray = Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array;
type BigArray = BigInt64Array | BigUint64Array;

function floatLoops(op: number, a: FloatArray, io: number, b: FloatArray, ii: number, n: number): void {
  let k = 0;
  switch (op) {
    case OpCode.sum:
      for (; k + 4 <= n; k += 4) {
        const o = io + k, i = ii + k;
        a[o] = b[i]! + a[o]!; a[o + 1] = b[i + 1]! + a[o + 1]!; a[o + 2] = b[i + 2]! + a[o + 2]!; a[o + 3] = b[i + 3]! + a[o + 3]!;
      }
      for (; k < n; k++) a[io + k] = b[ii + k]! + a[io + k]!;
      return;
    case OpCode.prod: for (; k < n; k++) a[io + k] = b[ii + k]! * a[io + k]!; return;
    case OpCode.min:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y < x ? y : x; }
      return;
    case OpCode.max:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y > x ? y : x; }
      return;
    // Logical ops test `!== 0`, not JS truthiness: NaN is true, as in C.
    case OpCode.land: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0 && a[io + k]! !== 0 ? 1 : 0; return;
    case OpCode.lor: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0 || a[io + k]! !== 0 ? 1 : 0; return;
    case OpCode.lxor: for (; k < n; k++) a[io + k] = (b[ii + k]! !== 0) !== (a[io + k]! !== 0) ? 1 : 0; return;
    case OpCode.minloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x < y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    case OpCode.maxloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x > y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    default: throw new NbcInternalError(`float reduction loop has no op code ${op}`);
  }
}

/** Int32Array, Uint32Array, Int16Array, Uint16Array. Same text as narrowLoops: see the header. */
function wideLoops(op: number, a: IntArray, io: number, b: IntArray, ii: number, n: number): void {
  let k = 0;
  switch (op) {
    case OpCode.sum: for (; k < n; k++) a[io + k] = b[ii + k]! + a[io + k]!; return;
    case OpCode.prod: for (; k < n; k++) a[io + k] = Math.imul(b[ii + k]!, a[io + k]!); return;
    case OpCode.min:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y < x ? y : x; }
      return;
    case OpCode.max:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y > x ? y : x; }
      return;
    case OpCode.land: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0 && a[io + k]! !== 0 ? 1 : 0; return;
    case OpCode.lor: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0 || a[io + k]! !== 0 ? 1 : 0; return;
    case OpCode.lxor: for (; k < n; k++) a[io + k] = (b[ii + k]! !== 0) !== (a[io + k]! !== 0) ? 1 : 0; return;
    case OpCode.band: for (; k < n; k++) a[io + k] = b[ii + k]! & a[io + k]!; return;
    case OpCode.bor: for (; k < n; k++) a[io + k] = b[ii + k]! | a[io + k]!; return;
    case OpCode.bxor: for (; k < n; k++) a[io + k] = b[ii + k]! ^ a[io + k]!; return;
    case OpCode.minloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x < y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    case OpCode.maxloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x > y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    default: throw new NbcInternalError(`integer reduction loop has no op code ${op}`);
  }
}

/** Int8Array, Uint8Array (and Buffer), Uint8ClampedArray. Same text as wideLoops: see the header. */
function narrowLoops(op: number, a: IntArray, io: number, b: IntArray, ii: number, n: number): void {
  let k = 0;
  switch (op) {
    case OpCode.sum: for (; k < n; k++) a[io + k] = b[ii + k]! + a[io + k]!; return;
    case OpCode.prod: for (; k < n; k++) a[io + k] = Math.imul(b[ii + k]!, a[io + k]!); return;
    case OpCode.min:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y < x ? y : x; }
      return;
    case OpCode.max:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y > x ? y : x; }
      return;
    case OpCode.land: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0 && a[io + k]! !== 0 ? 1 : 0; return;
    case OpCode.lor: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0 || a[io + k]! !== 0 ? 1 : 0; return;
    case OpCode.lxor: for (; k < n; k++) a[io + k] = (b[ii + k]! !== 0) !== (a[io + k]! !== 0) ? 1 : 0; return;
    case OpCode.band: for (; k < n; k++) a[io + k] = b[ii + k]! & a[io + k]!; return;
    case OpCode.bor: for (; k < n; k++) a[io + k] = b[ii + k]! | a[io + k]!; return;
    case OpCode.bxor: for (; k < n; k++) a[io + k] = b[ii + k]! ^ a[io + k]!; return;
    case OpCode.minloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x < y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    case OpCode.maxloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x > y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    default: throw new NbcInternalError(`integer reduction loop has no op code ${op}`);
  }
}

/** BigInt64Array, BigUint64Array: the stores wrap modulo 2^64. */
function bigLoops(op: number, a: BigArray, io: number, b: BigArray, ii: number, n: number): void {
  let k = 0;
  switch (op) {
    case OpCode.sum: for (; k < n; k++) a[io + k] = b[ii + k]! + a[io + k]!; return;
    case OpCode.prod: for (; k < n; k++) a[io + k] = b[ii + k]! * a[io + k]!; return;
    case OpCode.min:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y < x ? y : x; }
      return;
    case OpCode.max:
      for (; k < n; k++) { const x = b[ii + k]!, y = a[io + k]!; a[io + k] = y > x ? y : x; }
      return;
    case OpCode.land: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0n && a[io + k]! !== 0n ? 1n : 0n; return;
    case OpCode.lor: for (; k < n; k++) a[io + k] = b[ii + k]! !== 0n || a[io + k]! !== 0n ? 1n : 0n; return;
    case OpCode.lxor: for (; k < n; k++) a[io + k] = (b[ii + k]! !== 0n) !== (a[io + k]! !== 0n) ? 1n : 0n; return;
    case OpCode.band: for (; k < n; k++) a[io + k] = b[ii + k]! & a[io + k]!; return;
    case OpCode.bor: for (; k < n; k++) a[io + k] = b[ii + k]! | a[io + k]!; return;
    case OpCode.bxor: for (; k < n; k++) a[io + k] = b[ii + k]! ^ a[io + k]!; return;
    case OpCode.minloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x < y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    case OpCode.maxloc:
      for (; k < n; k += 2) {
        const x = b[ii + k]!, y = a[io + k]!;
        if (x > y) { a[io + k] = x; a[io + k + 1] = b[ii + k + 1]!; } else if (x === y) {
          const xi = b[ii + k + 1]!, yi = a[io + k + 1]!; a[io + k + 1] = yi < xi ? yi : xi;
        }
      }
      return;
    default: throw new NbcInternalError(`bigint reduction loop has no op code ${op}`);
  }
}

const Family = { Float: 0, Wide: 1, Narrow: 2, Big: 3 } as const;
type Family = (typeof Family)[keyof typeof Family];

/** Indexed by DType. */
const FAMILY: readonly Family[] = [
  Family.Narrow, Family.Narrow, Family.Narrow, // Int8, Uint8, Uint8Clamped
  Family.Wide, Family.Wide, Family.Wide, Family.Wide, // Int16, Uint16, Int32, Uint32
  Family.Float, Family.Float, // Float32, Float64
  Family.Big, Family.Big, // BigInt64, BigUint64
];

function makeKernel(code: OpCode, family: Family): ReduceKernel {
  switch (family) {
    case Family.Float:
      return (a, io, b, ii, n) => floatLoops(code, a as FloatArray, io, b as FloatArray, ii, n);
    case Family.Wide:
      return (a, io, b, ii, n) => wideLoops(code, a as IntArray, io, b as IntArray, ii, n);
    case Family.Narrow:
      return (a, io, b, ii, n) => narrowLoops(code, a as IntArray, io, b as IntArray, ii, n);
    case Family.Big:
      return (a, io, b, ii, n) => bigLoops(code, a as BigArray, io, b as BigArray, ii, n);
  }
}

/** `[code * DTYPE_COUNT + dt]`, made on first use. */
const kernels: (ReduceKernel | undefined)[] = [];

/**
 * The loop of predefined op `code` for `dt`. Whether the pair is allowed is decided by the
 * caller (Op.kernel): this table would happily return a float `band` that throws inside.
 */
export function builtinKernel(code: OpCode, dt: DType): ReduceKernel {
  const slot = code * DTYPE_COUNT + dt;
  let k = kernels[slot];
  if (k === undefined) {
    const family = FAMILY[dt];
    if (family === undefined) throw new NbcInternalError(`no reduction loops for datatype id ${dt}`);
    k = makeKernel(code, family);
    kernels[slot] = k;
  }
  return k;
}
