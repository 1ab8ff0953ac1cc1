/**
 * Byte copies between typed arrays, tuned for shared memory: small copies by a loop (no view
 * allocated), larger ones by TypedArray.set, and those involving a SharedArrayBuffer past
 * NATIVE_COPY_MIN by the native addon's memmove where the runtime handed it over
 * (setNativeCopy). Every executor and path copies through here.
 */
/**
 * Copies of at least this many bytes with shared memory on either side go to the native
 * addon's memmove where it is built: V8 copies a SharedArrayBuffer's bytes word by word with
 * relaxed atomics, 2.3 us for 64 KiB on the reference VM against memmove's 0.7 (3x at 16-64
 * KiB, 2x from 256 KiB, even at 1 KiB; BENCHMARKS.md, "Shared-memory copies").
 */
export const NATIVE_COPY_MIN = 2048;

/** A memmove between typed arrays' bytes: (dst, dstAt, src, srcAt, bytes). */
export type CopyFn = (dst: Uint8Array, dstAt: number, src: Uint8Array, srcAt: number, bytes: number) => void;

/** This thread's native memmove (setNativeCopy); null without the addon. */
let nativeCopy: CopyFn | null = null;

/**
 * Gives this thread the native addon's memmove for copies that involve shared memory. The
 * runtime sets it as a rank or node thread starts (runtime/rank-main.ts, node-main.ts), as it
 * hands over the yield function: the core never loads the addon itself.
 */
export function setNativeCopy(fn: CopyFn | null): void {
  nativeCopy = fn;
}

/** Copies through the addon's memmove where shared memory is involved and it is built; false where the caller copies. */
function copiedNatively(src: Uint8Array, from: number, dst: Uint8Array, at: number, bytes: number): boolean {
  if (nativeCopy === null || !(src.buffer instanceof SharedArrayBuffer || dst.buffer instanceof SharedArrayBuffer)) return false;
  nativeCopy(dst, at, src, from, bytes);
  return true;
}

/** Copies the `bytes` bytes of view `src` into `dst` at `at`. Small copies avoid allocating a view. */
export function copyBytes(src: Uint8Array, dst: Uint8Array, at: number, bytes: number): void {
  if (bytes <= 64) {
    for (let i = 0; i < bytes; i++) dst[at + i] = src[i]!;
  } else if (bytes < NATIVE_COPY_MIN || !copiedNatively(src, 0, dst, at, bytes)) {
    dst.set(src, at);
  }
}

/**
 * Copies view `from` onto view `to` (same length), as an executor's copy action does; a copy of
 * a region onto itself (an in-place call) does nothing.
 */
export function copyRegion(from: Uint8Array, to: Uint8Array): void {
  if (from.byteOffset !== to.byteOffset || from.buffer !== to.buffer) copyBytes(from, to, 0, from.byteLength);
}

/** Copies `bytes` bytes of `src` from `from` into `dst` at `at`. Small copies avoid allocating a view. */
export function copyAt(src: Uint8Array, from: number, dst: Uint8Array, at: number, bytes: number): void {
  if (bytes <= 64) {
    for (let i = 0; i < bytes; i++) dst[at + i] = src[from + i]!;
  } else if (bytes < NATIVE_COPY_MIN || !copiedNatively(src, from, dst, at, bytes)) {
    dst.set(src.subarray(from, from + bytes), at);
  }
}

