/**
 * Reductions between byte regions, as schedule executors (host and offload) apply them:
 * inout = in ⊕ inout over two views of any buffers. Two typed views and a kernel cached per
 * (op, dtype); unaligned or overlapping operands go through reduceBytes, which handles both, and
 * two regions of one WebAssembly memory (a node's slice) through its WebAssembly loop (folds.ts).
 */
import type { TypedArray } from '../comm/validate.js';
import { bytesPerElement, ctorOf, type DType } from './dtype.js';
import { wasmFold, WASM_FOLD_MIN_BYTES } from './folds.js';
import { reduceBytes } from './kernels.js';
import { builtinOpById, USER_OP_ID_BASE, type Op, type ReduceKernel } from './op.js';

/** User ops of this thread by id (a user op only runs in the thread that created it). */
const userOps = new Map<number, Op>();

export function registerUserOp(op: Op): void {
  if (!op.isBuiltin) userOps.set(op.id, op);
}

export function opById(id: number): Op {
  if (id < USER_OP_ID_BASE) return builtinOpById(id);
  const op = userOps.get(id);
  if (op === undefined) throw new Error(`user op ${id} is not known in this thread`);
  return op;
}

const kernels: Array<Array<ReduceKernel | undefined>> = [];

export function kernelFor(opId: number, dt: DType): ReduceKernel {
  const row = (kernels[opId] ??= []);
  return (row[dt] ??= opById(opId).kernel(dt));
}

/** inout = input ⊕ inout, element-wise, over two equally long byte views. */
export function reduceRegions(opId: number, dt: DType, input: Uint8Array, inout: Uint8Array): void {
  const bpe = bytesPerElement(dt);
  const n = input.byteLength / bpe;
  const overlap = input.buffer === inout.buffer &&
    input.byteOffset < inout.byteOffset + inout.byteLength && inout.byteOffset < input.byteOffset + input.byteLength;
  if (input.byteOffset % bpe !== 0 || inout.byteOffset % bpe !== 0 || overlap) {
    reduceBytes(opById(opId), dt, inout.buffer, inout.byteOffset, input.buffer, input.byteOffset, n);
    return;
  }
  const fold = input.buffer === inout.buffer && inout.byteLength >= WASM_FOLD_MIN_BYTES ? wasmFold(inout.buffer, opId, dt) : null;
  if (fold !== null) {
    fold(inout.byteOffset, input.byteOffset, inout.byteLength);
    return;
  }
  const Ctor = ctorOf(dt) as unknown as new (b: ArrayBufferLike, off: number, len: number) => TypedArray;
  kernelFor(opId, dt)(new Ctor(inout.buffer, inout.byteOffset, n), 0, new Ctor(input.buffer, input.byteOffset, n), 0, n);
}
