/**
 * Reduction entry points: on typed arrays (`reduceInto`) and on byte ranges of buffers
 * (`reduceBytes`, what the schedule engine uses between the SEND, RECV and TMP regions it
 * addresses by byte offset). Both compute
 *
 *     inout[k] = input[k] ⊕ inout[k]          (input is the LEFT operand; see op.ts)
 *
 * and check their arguments once per call; the element loops themselves are in loops.ts.
 *
 * Core code: no `node:*` imports.
 */
import { NbcCountError, NbcTypeError } from '../errors.js';
import type { TypedArray } from '../comm/validate.js';
import { DTYPE_COUNT, DType, bytesPerElement, ctorOf, dtypeName, hasDtype, tryDtypeOf, viewOf } from './dtype.js';
import { resolveOp, type OpLike } from './op.js';
import { describeValue } from '../describe.js';

export type { ReduceKernel } from './loops.js';

/**
 * `inout[i] = input[i] ⊕ inout[i]` for i < count (default: inout.length).
 *
 * Both arrays must be of type `dt` (a Buffer is a Uint8 array). They may be the same memory;
 * if they overlap partially, input is copied first so the result is as if they did not.
 * @throws NbcOpError (op unknown, or not defined for dt), NbcTypeError (an array is not of
 *   type dt), NbcCountError (count out of range, or not a multiple of op.itemLength: odd for
 *   minloc/maxloc).
 */
export function reduceInto(op: OpLike, dt: DType, inout: TypedArray, input: TypedArray, count?: number): void {
  const o = resolveOp(op);
  const kernel = o.kernel(dt);
  if (!hasDtype(inout, dt) || !hasDtype(input, dt)) {
    throw new NbcTypeError(
      `Cannot reduce with op '${o.name}': inout is ${typeName(inout)} and input is ${typeName(input)}; ` +
      `expected both to be ${dtypeName(dt)}Array`);
  }
  const n = count ?? inout.length;
  o.check(dt, n);
  if (n > inout.length || n > input.length) {
    throw new NbcCountError(
      `Cannot reduce with op '${o.name}': count ${n} exceeds inout (${inout.length} elements) ` +
      `or input (${input.length} elements)`);
  }
  if (n === 0) return;
  const bytes = n * bytesPerElement(dt);
  let src = input;
  if (partlyOverlap(inout.buffer, inout.byteOffset, input.buffer, input.byteOffset, bytes)) {
    src = new (ctorOf(dt) as unknown as new (len: number) => TypedArray)(n);
    copyBytes(input.buffer, input.byteOffset, src.buffer, 0, bytes);
  }
  kernel(inout, 0, src, 0, n);
}

/**
 * `dst[k] = src[k] ⊕ dst[k]` for the `count` elements of type `dt` that start at byte
 * `dstOff` of `dst` and byte `srcOff` of `src` (e.g. SharedArrayBuffers of the node arena).
 *
 * When both offsets are multiples of the element size, this allocates nothing: it reduces
 * through one whole-buffer view per (buffer, datatype), made on first use and cached weakly
 * (it lives as long as the buffer). Typed arrays cannot view unaligned offsets, so an
 * unaligned operand is first copied to an aligned scratch buffer (reused between calls) and,
 * for dst, copied back afterwards. Partly overlapping ranges of one buffer are handled the same
 * way (src goes through scratch); identical ranges need no copy.
 *
 * Elements are read and written with plain (non-atomic) accesses: the caller must own both
 * ranges for the duration of the call.
 * @throws NbcOpError, NbcCountError (count or range out of bounds, or not a multiple of
 *   op.itemLength), NbcTypeError (unknown dt).
 */
export function reduceBytes(op: OpLike, dt: DType, dst: ArrayBufferLike, dstOff: number,
  src: ArrayBufferLike, srcOff: number, count: number): void {
  const o = resolveOp(op);
  const kernel = o.kernel(dt);
  o.check(dt, count);
  if (count === 0) {
    checkRange('dst', dst, dstOff, 0, o.name);
    checkRange('src', src, srcOff, 0, o.name);
    return;
  }
  const bpe = bytesPerElement(dt);
  const bytes = count * bpe;
  const overlap = partlyOverlap(dst, dstOff, src, srcOff, bytes);
  const dstAligned = dstOff % bpe === 0;
  const srcAligned = srcOff % bpe === 0 && !overlap;
  if (dstAligned && srcAligned) {
    const dv = alignedView(dst, dt, dstOff, bytes, 'dst', o.name);
    const sv = alignedView(src, dt, srcOff, bytes, 'src', o.name);
    kernel(dv, dstOff / bpe, sv, srcOff / bpe, count);
    return;
  }

  // Slow path: scratch holds [dst copy | src copy], each `bytes` long (a multiple of bpe, so
  // both halves are aligned).
  checkRange('dst', dst, dstOff, bytes, o.name);
  checkRange('src', src, srcOff, bytes, o.name);
  const scratch = takeScratch(2 * bytes);
  try {
    let sv: TypedArray, si: number;
    if (srcAligned) {
      sv = alignedView(src, dt, srcOff, bytes, 'src', o.name); si = srcOff / bpe;
    } else {
      copyBytes(src, srcOff, scratch, bytes, bytes);
      sv = alignedView(scratch, dt, bytes, bytes, 'scratch', o.name); si = count;
    }
    if (dstAligned) {
      kernel(alignedView(dst, dt, dstOff, bytes, 'dst', o.name), dstOff / bpe, sv, si, count);
    } else {
      copyBytes(dst, dstOff, scratch, 0, bytes);
      kernel(alignedView(scratch, dt, 0, bytes, 'scratch', o.name), 0, sv, si, count);
      copyBytes(scratch, 0, dst, dstOff, bytes);
    }
  } finally {
    releaseScratch(scratch);
  }
}

/** Runs on the first use of a buffer and on the slow path, never on the cached fast path. */
function checkRange(what: string, buf: ArrayBufferLike, off: number, bytes: number, opName: string): void {
  if (!(buf instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && buf instanceof SharedArrayBuffer))) {
    throw new NbcTypeError(
      `Cannot reduce with op '${opName}': ${what} is ${typeName(buf)}; expected an ArrayBuffer or a SharedArrayBuffer`);
  }
  if (!Number.isInteger(off) || off < 0 || off + bytes > buf.byteLength) {
    throw new NbcCountError(
      `Cannot reduce with op '${opName}': the ${what} range at byte ${String(off)} of ${bytes} bytes ` +
      `does not fit its buffer of ${buf.byteLength} bytes`);
  }
}

/** Same buffer, different starts, and the byte ranges intersect. */
function partlyOverlap(a: ArrayBufferLike, aOff: number, b: ArrayBufferLike, bOff: number, bytes: number): boolean {
  return a === b && aOff !== bOff && aOff < bOff + bytes && bOff < aOff + bytes;
}

function copyBytes(from: ArrayBufferLike, fromOff: number, to: ArrayBufferLike, toOff: number, bytes: number): void {
  new Uint8Array(to, toOff, bytes).set(new Uint8Array(from, fromOff, bytes));
}

/**
 * Per buffer, one view per datatype over the whole buffer (length rounded down). Weak keys:
 * an entry goes away with its buffer. A view is remade when it is too short for the range
 * (the buffer grew, or a resizable buffer shrank and the view went out of bounds).
 */
const viewCache = new WeakMap<ArrayBufferLike, (TypedArray | undefined)[]>();

/**
 * The cached whole-buffer view of type dt, checked to cover `bytes` bytes from the aligned
 * byte offset `off`. The common case reads no `byteLength` of the buffer: that getter is a
 * runtime call for SharedArrayBuffers (13 ns measured), the view's `length` is not.
 */
function alignedView(buf: ArrayBufferLike, dt: DType, off: number, bytes: number, what: string,
  opName: string): TypedArray {
  let views = viewCache.get(buf);
  if (views === undefined) {
    views = new Array<TypedArray | undefined>(DTYPE_COUNT).fill(undefined);
    viewCache.set(buf, views);
  }
  const bpe = bytesPerElement(dt);
  const end = (off + bytes) / bpe;
  let v = views[dt];
  if (v === undefined || !(off >= 0 && end <= v.length)) {
    checkRange(what, buf, off, bytes, opName);
    v = viewOf(dt, buf, 0, Math.floor(buf.byteLength / bpe));
    views[dt] = v;
  }
  return v;
}

/**
 * One scratch buffer for the unaligned path, grown to the next power of two and reused. A user
 * op that itself reduces unaligned bytes re-enters here while scratch is taken: that inner
 * call gets a fresh buffer instead.
 */
let scratchBuf: ArrayBuffer = new ArrayBuffer(0);
let scratchTaken = false;

function takeScratch(bytes: number): ArrayBuffer {
  if (scratchTaken) return new ArrayBuffer(bytes);
  if (scratchBuf.byteLength < bytes) {
    let size = 64;
    while (size < bytes) size *= 2;
    scratchBuf = new ArrayBuffer(size);
  }
  scratchTaken = true;
  return scratchBuf;
}

function releaseScratch(buf: ArrayBuffer): void {
  if (buf === scratchBuf) scratchTaken = false;
}

function typeName(buf: unknown): string {
  const dt = tryDtypeOf(buf);
  if (dt !== undefined) return `${dtypeName(dt)}Array`;
  return describeValue(buf);
}
