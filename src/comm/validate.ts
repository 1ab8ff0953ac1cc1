/**
 * Argument checks shared by the public API. Each throws a typed NbcError whose message says
 * what was attempted, what was wrong and what was expected.
 */
import { NbcRankError, NbcTagError, NbcTypeError } from '../errors.js';
import { ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB } from '../p2p/constants.js';
import { describeValue } from '../describe.js';

export type TypedArray =
  | Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array
  | Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

export type TypedArrayConstructor =
  | Int8ArrayConstructor | Uint8ArrayConstructor | Uint8ClampedArrayConstructor
  | Int16ArrayConstructor | Uint16ArrayConstructor | Int32ArrayConstructor
  | Uint32ArrayConstructor | Float32ArrayConstructor | Float64ArrayConstructor
  | BigInt64ArrayConstructor | BigUint64ArrayConstructor;

/** %TypedArray%, the abstract class every typed array class extends. */
const TYPED_ARRAY_BASE = Object.getPrototypeOf(Int8Array) as abstract new () => unknown;

/** Whether `c` is a typed array class or a subclass of one (Node's Buffer is a Uint8Array); for comm.alloc. */
export function isTypedArrayClass(c: unknown): boolean {
  return typeof c === 'function' && (c as { prototype?: unknown }).prototype instanceof TYPED_ARRAY_BASE;
}

/** The bytes of a typed array, as a Uint8Array view (the array itself when it is one). */
export function bytesOf(buf: unknown, op: string, ctxId: number, what = 'buffer'): Uint8Array {
  if (buf instanceof Uint8Array) return buf;
  if (!ArrayBuffer.isView(buf) || buf instanceof DataView) {
    throw new NbcTypeError(
      `Cannot ${op} on communicator ${ctxId}: ${what} is ${describeValue(buf)}; expected a typed array ` +
      `(Int8Array .. Float64Array, BigInt64Array, BigUint64Array) or a Buffer`);
  }
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

export function elementBytes(buf: ArrayBufferView): number {
  return (buf as unknown as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
}

export function checkDest(dest: unknown, size: number, op: string, ctxId: number): void {
  if (Number.isInteger(dest) && (((dest as number) >= 0 && (dest as number) < size) || dest === PROC_NULL)) return;
  throw new NbcRankError(
    `Cannot ${op} on communicator ${ctxId}: destination ${String(dest)} is out of range; ` +
    `expected an integer 0..${size - 1} or PROC_NULL`);
}

export function checkSource(source: unknown, size: number, op: string, ctxId: number): void {
  if (Number.isInteger(source) &&
    (((source as number) >= 0 && (source as number) < size) || source === ANY_SOURCE || source === PROC_NULL)) return;
  throw new NbcRankError(
    `Cannot ${op} on communicator ${ctxId}: source ${String(source)} is out of range; ` +
    `expected an integer 0..${size - 1}, ANY_SOURCE or PROC_NULL`);
}

export function checkTag(tag: unknown, allowAny: boolean, op: string, ctxId: number): void {
  if (Number.isInteger(tag) && (((tag as number) >= 0 && (tag as number) <= TAG_UB) || (allowAny && tag === ANY_TAG))) return;
  throw new NbcTagError(
    `Cannot ${op} on communicator ${ctxId}: tag ${String(tag)} is out of range; ` +
    `expected an integer 0..${TAG_UB}${allowAny ? ' or ANY_TAG' : ''}`);
}

