/**
 * The apps' kernels in WebAssembly (kernels.wat), and the memory their vectors live in.
 *
 * A solver places its vectors in a `VectorHeap`: Float64Arrays over one WebAssembly memory with
 * the kernels instantiated on it. grid.ts's kernels then run the WebAssembly ones for vectors of
 * a heap (same bits as their JavaScript loops) and the JavaScript loops for any other array.
 * Why: the first solve of a job. V8 runs a JavaScript loop in its interpreter until TurboFan has
 * compiled it, several ms a kernel on every rank, on the ranks' own cores where V8 runs without
 * helper threads; a WebAssembly module is compiled as it loads (Liftoff, about 0.1 ms here).
 *
 * `NBC_WASM=0` keeps the JavaScript kernels (to measure one against the other).
 */
import { compileBase64, WA } from '../ops/wasm.js';
import { KERNELS_WASM_BASE64 } from './kernels-wasm.js';

/** kernels.wat's exports; offsets in bytes, counts in elements. */
interface Exports {
  axpy(y: number, alpha: number, x: number, n: number): void;
  scale(y: number, x: number, d: number, n: number): void;
  divide(y: number, x: number, d: number, n: number): void;
  dot(a: number, b: number, n: number): number;
  dotGhost(n0: number, n1: number, n2: number, a: number, p: number): number;
  axpyFromGhost(n0: number, n1: number, n2: number, y: number, alpha: number, p: number): void;
  xpbyIntoGhost(n0: number, n1: number, n2: number, p: number, w: number, beta: number, q: number): void;
  matvec7(n1: number, n2: number, y: number, p: number, lo0: number, hi0: number, lo1: number, hi1: number, lo2: number, hi2: number): void;
  matvec27(n1: number, n2: number, y: number, p: number, col: number,
    lo0: number, hi0: number, lo1: number, hi1: number, lo2: number, hi2: number): void;
  gather(dst: number, src: number, idx: number, n: number): void;
  scatter(dst: number, src: number, idx: number, n: number): void;
}

/** The kernels of one heap: its instance's exports and its 27-point column scratch. */
export interface WasmKernels {
  readonly fn: Exports;
  /** Byte offset of the column sums' scratch (`columns` doubles). */
  readonly col: number;
  readonly columns: number;
}

const PAGE = 65536;
let compiled: object | null | undefined;
const byBuffer = new WeakMap<ArrayBufferLike, WasmKernels>();

function kernelModule(): object | null {
  if (compiled === undefined) {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    compiled = env?.NBC_WASM === '0' ? null : compileBase64(KERNELS_WASM_BASE64);
  }
  return compiled;
}

/** The WebAssembly kernels for a, b (and c), where all lie in one heap; else undefined. */
export function wasmFor(a: ArrayBufferView, b: ArrayBufferView, c?: ArrayBufferView): WasmKernels | undefined {
  const k = byBuffer.get(a.buffer);
  return k !== undefined && b.buffer === a.buffer && (c === undefined || c.buffer === a.buffer) ? k : undefined;
}

/**
 * Vectors for one solver: `capacity` doubles in all, handed out by `vector(n)` (and index lists
 * by `ints(n)`); the memory never grows (a grown memory would detach the views). Past its
 * capacity, or without WebAssembly (NBC_WASM=0), a heap hands out plain arrays, on which the
 * JavaScript kernels run.
 */
export class VectorHeap {
  /** Whether the WebAssembly kernels run on this heap's vectors. */
  readonly wasm: boolean;
  private readonly buffer: ArrayBufferLike | null;
  private next: number;
  private readonly end: number;

  /** `capacity` doubles of vectors; `columns` doubles of 27-point scratch (the widest line + 2). */
  constructor(capacity: number, columns: number) {
    const mod = kernelModule();
    this.wasm = mod !== null;
    if (mod === null || WA === undefined) {
      this.buffer = null;
      this.next = 0;
      this.end = 0;
      return;
    }
    // 16-byte slots, so that every vector starts aligned for the f64x2 loads
    const bytes = (capacity + columns) * 8 + 16 * 32;
    const memory = new WA.Memory({ initial: Math.max(1, Math.ceil(bytes / PAGE)) });
    const instance = new WA.Instance(mod, { env: { memory } });
    const buffer = memory.buffer;
    this.buffer = buffer;
    this.end = buffer.byteLength;
    byBuffer.set(buffer, { fn: instance.exports as unknown as Exports, col: 0, columns });
    this.next = align16(columns * 8);
  }

  /** A zeroed vector of n doubles. */
  vector(n: number): Float64Array {
    const at = this.take(n * 8);
    return at < 0 ? new Float64Array(n) : new Float64Array(this.buffer!, at, n);
  }

  /** A copy of `values` (element indices for gather and scatter) in the heap. */
  ints(values: Int32Array): Int32Array {
    const at = this.take(values.length * 4);
    const out = at < 0 ? new Int32Array(values.length) : new Int32Array(this.buffer!, at, values.length);
    out.set(values);
    return out;
  }

  /** Byte offset of `bytes` more, or -1 where they do not fit (or there is no memory). */
  private take(bytes: number): number {
    if (this.buffer === null || align16(this.next + bytes) > this.end) return -1;
    const at = this.next;
    this.next = align16(at + bytes);
    return at;
  }
}

function align16(x: number): number {
  return (x + 15) & ~15;
}
