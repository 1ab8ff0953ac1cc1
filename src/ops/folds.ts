/**
 * The predefined reductions in WebAssembly (folds.wat), for operands in one WebAssembly memory.
 *
 * A node's arena slices are shared WebAssembly memories where the runtime allows it
 * (shm/node-shared.ts), so what `comm.alloc` hands out and a collective's large scratch lie in
 * one: a reduction between two such regions of a slice (the usual case: a received block in
 * scratch folded into the user's buffer) runs as SIMD, 16 bytes a turn, with the JavaScript
 * loops' bits (folds.wat says why they agree). Measured on the 2-core VM (scripts/fold-speed.mjs),
 * 8,192 doubles summed: 1.96 us against 7.98 for the JavaScript loop. Anything else (plain arrays, two memories,
 * user ops, types without a WebAssembly loop) keeps the JavaScript loops of loops.ts.
 *
 * The executors register the node's slice memories in their thread (registerFoldMemories).
 * Core code: no node:* imports. With `NBC_WASM=0` the runtime makes plain slices, and the
 * JavaScript loops run.
 */
import { DType } from './dtype.js';
import { FOLDS_WASM_BASE64 } from './folds-wasm.js';
import { OpCode } from './loops.js';
import { compileBase64, WA, type WasmMemory } from './wasm.js';

/**
 * Below this many bytes the call into WebAssembly costs more than the loop saves
 * (`node scripts/fold-speed.mjs`: 8 doubles 0.053 us against 0.032, 128 doubles 0.131 against
 * 0.145, 1024 doubles 0.234 against 0.969), so the JavaScript loop folds them.
 */
export const WASM_FOLD_MIN_BYTES = 1024;

/** inout = input ⊕ inout over `bytes` bytes, both given as byte offsets in one memory. */
export type WasmFold = (inout: number, input: number, bytes: number) => void;

type Exports = Record<string, WasmFold>;

const memories = new WeakMap<ArrayBufferLike, WasmMemory>();
const instances = new WeakMap<ArrayBufferLike, Exports | null>();
let compiled: object | null | undefined;

/** Lets reductions between regions of `memory.buffer` run in WebAssembly (in this thread). */
export function registerFoldMemory(memory: WasmMemory): void {
  memories.set(memory.buffer, memory);
}

/** `registerFoldMemory` for each of a node's slice memories (shm/node-shared.ts) there are. */
export function registerFoldMemories(list: ReadonlyArray<WasmMemory | null> | undefined): void {
  if (list === undefined) return;
  for (const m of list) if (m !== null) registerFoldMemory(m);
}

/**
 * The WebAssembly loop of predefined op `opId` on `dt` for regions of `buffer`, or null where
 * there is none (`buffer` is no registered memory's, or the op and type have no such loop).
 */
export function wasmFold(buffer: ArrayBufferLike, opId: number, dt: DType): WasmFold | null {
  const name = exportName(opId, dt);
  if (name === null) return null;
  let fns = instances.get(buffer);
  if (fns === undefined) {
    const memory = memories.get(buffer);
    compiled ??= compileBase64(FOLDS_WASM_BASE64);
    fns = memory === undefined || compiled === null ? null
      : new WA!.Instance(compiled, { env: { memory } }).exports as Exports;
    instances.set(buffer, fns);
  }
  return fns === null ? null : fns[name] ?? null;
}

/** folds.wat's export for (op, dtype), or null. */
function exportName(opId: number, dt: DType): string | null {
  let ty: string;
  let sign = '';
  switch (dt) {
    case DType.Float64: ty = 'f64'; break;
    case DType.Float32: ty = 'f32'; break;
    case DType.Int32: ty = 'i32'; sign = '_s'; break;
    case DType.Uint32: ty = 'i32'; sign = '_u'; break;
    default: return null;
  }
  switch (opId) {
    case OpCode.sum: return `${ty}_sum`;
    case OpCode.prod: return `${ty}_prod`;
    case OpCode.min: return `${ty}_min${sign}`;
    case OpCode.max: return `${ty}_max${sign}`;
    case OpCode.band: return ty === 'i32' ? 'i32_band' : null;
    case OpCode.bor: return ty === 'i32' ? 'i32_bor' : null;
    case OpCode.bxor: return ty === 'i32' ? 'i32_bxor' : null;
    default: return null;
  }
}
