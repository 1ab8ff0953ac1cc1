/**
 * Element datatypes: one small, stable number per typed-array element type, so schedules can
 * store the type of a reduction in one byte (struct-of-arrays, `Uint8Array` columns).
 *
 * The numbers are part of the schedule format and of the offload/aggregation wire formats:
 * never renumber them; only append.
 *
 * Core code: no `node:*` imports (the schedule engine, the offload engine and the simulator
 * all load this file).
 */
import { NbcArgError, NbcTypeError } from '../errors.js';
import type { TypedArray, TypedArrayConstructor } from '../comm/validate.js';
import { describeValue } from '../describe.js';

export const DType = {
  Int8: 0,
  Uint8: 1,
  Uint8Clamped: 2,
  Int16: 3,
  Uint16: 4,
  Int32: 5,
  Uint32: 6,
  Float32: 7,
  Float64: 8,
  BigInt64: 9,
  BigUint64: 10,
} as const;

export type DType = (typeof DType)[keyof typeof DType];

/** How many datatypes exist; valid ids are `0 .. DTYPE_COUNT - 1`. */
export const DTYPE_COUNT = 11;

/** Indexed by DType. */
const NAMES: readonly string[] = [
  'Int8', 'Uint8', 'Uint8Clamped', 'Int16', 'Uint16', 'Int32', 'Uint32',
  'Float32', 'Float64', 'BigInt64', 'BigUint64',
];

/** Indexed by DType. */
const CTORS: readonly TypedArrayConstructor[] = [
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array,
];

/** Indexed by DType. */
const BYTES: readonly number[] = [1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8];

/** `[[TypedArrayName]]` of a typed array (also of subclasses such as Buffer), cross-realm. */
const BY_TAG: ReadonlyMap<string, DType> = new Map(NAMES.map((n, i) => [`${n}Array`, i as DType]));

/**
 * `%TypedArray%.prototype[Symbol.toStringTag]` returns the intrinsic element type's name for
 * any typed array (a Buffer answers 'Uint8Array', a Float64Array from another realm answers
 * 'Float64Array') and undefined for anything else, without trusting `constructor` or
 * `instanceof`.
 */
const typedArrayTag = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Uint8Array.prototype) as object, Symbol.toStringTag)?.get as
  ((this: unknown) => string | undefined);

/** True when `x` is a valid DType id. */
export function isDType(x: unknown): x is DType {
  return typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < DTYPE_COUNT;
}

/** The DType of `buf`, or undefined when `buf` is not a typed array. */
export function tryDtypeOf(buf: unknown): DType | undefined {
  const tag = typedArrayTag.call(buf);
  return tag === undefined ? undefined : BY_TAG.get(tag);
}

/**
 * True when `buf` is a typed array of type `dt`. Fast for plain typed arrays (one constructor
 * comparison); Buffers, subclasses and arrays from other realms take the tag lookup.
 */
export function hasDtype(buf: unknown, dt: DType): boolean {
  return ((buf as { constructor?: unknown } | null)?.constructor === CTORS[dt] && ArrayBuffer.isView(buf)) ||
    tryDtypeOf(buf) === dt;
}

/**
 * The DType of a typed array. A Node.js Buffer (a Uint8Array subclass) is Uint8.
 * @throws NbcTypeError when `buf` is not a typed array (e.g. a DataView or a plain array).
 */
export function dtypeOf(buf: TypedArray): DType {
  const dt = tryDtypeOf(buf);
  if (dt === undefined) {
    throw new NbcTypeError(
      `Cannot determine the element type: the buffer is ${describeValue(buf)}; expected a typed array ` +
      `(Int8Array .. Float64Array, BigInt64Array, BigUint64Array) or a Buffer`);
  }
  return dt;
}

function checkDType(dt: number): void {
  if (!isDType(dt)) {
    throw new NbcTypeError(`Unknown datatype id ${String(dt)}; expected an integer 0..${DTYPE_COUNT - 1}`);
  }
}

/** 'Float64', 'BigUint64', ... (the typed array's name without 'Array'). */
export function dtypeName(dt: DType): string {
  checkDType(dt);
  return NAMES[dt]!;
}

export function bytesPerElement(dt: DType): number {
  checkDType(dt);
  return BYTES[dt]!;
}

/** The typed-array constructor for `dt` (Uint8 gives Uint8Array, not Buffer). */
export function ctorOf(dt: DType): TypedArrayConstructor {
  checkDType(dt);
  return CTORS[dt]!;
}

/** Float32 or Float64. */
export function isFloat(dt: DType): boolean {
  return dt === DType.Float32 || dt === DType.Float64;
}

/** BigInt64 or BigUint64 (elements are `bigint`, not `number`). */
export function isBigInt(dt: DType): boolean {
  return dt === DType.BigInt64 || dt === DType.BigUint64;
}

/** Every integer type, the BigInt types and Uint8Clamped included: everything but floats. */
export function isInteger(dt: DType): boolean {
  return isDType(dt) && !isFloat(dt);
}

/**
 * A view of `length` elements of type `dt` on `buffer` from `byteOffset`.
 * @throws NbcArgError when the offset is not a multiple of the element size (typed arrays
 *   cannot express unaligned views) or the range does not fit in the buffer.
 */
export function viewOf(dt: DType, buffer: ArrayBufferLike, byteOffset: number, length: number): TypedArray {
  checkDType(dt);
  const bpe = BYTES[dt]!;
  if (!Number.isInteger(byteOffset) || byteOffset < 0 || byteOffset % bpe !== 0) {
    throw new NbcArgError(
      `Cannot create a ${NAMES[dt]!} view at byte offset ${byteOffset}: ` +
      `expected a non-negative multiple of ${bpe}`);
  }
  if (!Number.isInteger(length) || length < 0 || byteOffset + length * bpe > buffer.byteLength) {
    throw new NbcArgError(
      `Cannot create a ${NAMES[dt]!} view of ${length} elements at byte offset ${byteOffset}: ` +
      `the buffer has ${buffer.byteLength} bytes`);
  }
  const Ctor = CTORS[dt]! as unknown as new (b: ArrayBufferLike, off: number, len: number) => TypedArray;
  return new Ctor(buffer, byteOffset, length);
}

