/**
 * The reductions in WebAssembly (src/ops/folds.wat) against the JavaScript loops of
 * src/ops/loops.ts, the reference: the same bits for every (op, type) that has a WebAssembly
 * loop, on random values with NaN, infinities and signed zeros, every length up to past a few
 * 16-byte turns (the loops' tails) and any element offset. Only buffers of a registered memory
 * (a node's slices) take them; the node's slices are such memories, and the committed
 * folds-wasm.ts is the .wat assembled (test/kernels.test.ts runs the check for both modules).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { DType } from '../src/ops/dtype.ts';
import { registerFoldMemories, registerFoldMemory, wasmFold, WASM_FOLD_MIN_BYTES } from '../src/ops/folds.ts';
import { OpCode } from '../src/ops/loops.ts';
import { Op } from '../src/ops/op.ts';
import { kernelFor, reduceRegions } from '../src/ops/regions.ts';
import { WA } from '../src/ops/wasm.ts';
import type { TypedArray } from '../src/comm/validate.ts';
import { adoptSliceMemories, createNodeShared } from '../src/shm/node-shared.ts';

const memory = new WA!.Memory({ initial: 1, maximum: 1, shared: true });
registerFoldMemory(memory);

type Ctor = { new (n: number): TypedArray; new (buffer: ArrayBufferLike, at: number, n: number): TypedArray; BYTES_PER_ELEMENT: number };
const CASES: Array<[string, DType, Ctor, number[]]> = [
  ['Float64', DType.Float64, Float64Array, [OpCode.sum, OpCode.prod, OpCode.min, OpCode.max]],
  ['Float32', DType.Float32, Float32Array, [OpCode.sum, OpCode.prod, OpCode.min, OpCode.max]],
  ['Int32', DType.Int32, Int32Array, [OpCode.sum, OpCode.prod, OpCode.min, OpCode.max, OpCode.band, OpCode.bor, OpCode.bxor]],
  ['Uint32', DType.Uint32, Uint32Array, [OpCode.sum, OpCode.prod, OpCode.min, OpCode.max, OpCode.band, OpCode.bor, OpCode.bxor]],
];

/** Values that tell the loops apart where they differ: NaN, infinities, signed zeros, ties, extremes. */
function value(float: boolean): fc.Arbitrary<number> {
  return float
    ? fc.oneof(fc.double(), fc.constantFrom(NaN, -0, 0, Infinity, -Infinity, 1, -1, 2 ** -1074, 3.4e38))
    : fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.constantFrom(0, -1, 1, 2 ** 31 - 1, -(2 ** 31), 0x7fff, 65537));
}

const hex = (a: ArrayBufferView): string => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');

describe('reductions in WebAssembly', () => {
  for (const [name, dt, C, ops] of CASES) {
    test(`${name}: every op with a WebAssembly loop gives the JavaScript loop's bits (any length, offset, NaN and signed zeros)`, () => {
      const float = dt === DType.Float64 || dt === DType.Float32;
      fc.assert(fc.property(
        fc.constantFrom(...ops), fc.array(fc.tuple(value(float), value(float)), { minLength: 0, maxLength: 37 }),
        fc.nat({ max: 7 }), fc.nat({ max: 7 }),
        (op, pairs, at, bt) => {
          const n = pairs.length;
          const bpe = C.BYTES_PER_ELEMENT;
          const inW = new C(memory.buffer, at * bpe, n);
          const ioW = new C(memory.buffer, 1024 + bt * bpe, n);
          const inJ = new C(n);
          const ioJ = new C(n);
          pairs.forEach(([x, y], k) => { inW[k] = x; inJ[k] = x; ioW[k] = y; ioJ[k] = y; });
          const fold = wasmFold(memory.buffer, op, dt);
          assert.notEqual(fold, null, `a WebAssembly loop for op ${op}`);
          fold!(ioW.byteOffset, inW.byteOffset, ioW.byteLength);
          kernelFor(op, dt)(ioJ, 0, inJ, 0, n);
          assert.equal(hex(ioW), hex(ioJ), `op ${op} on ${n} elements`);
          assert.equal(hex(inW), hex(inJ), 'the input is left as it was');
        }), { numRuns: 300 });
    });
  }

  test('only buffers of a registered memory, predefined ops and the four types take a WebAssembly loop', () => {
    assert.equal(wasmFold(new SharedArrayBuffer(64), OpCode.sum, DType.Float64), null, 'a plain SharedArrayBuffer');
    assert.equal(wasmFold(new WA!.Memory({ initial: 1, maximum: 1, shared: true }).buffer, OpCode.sum, DType.Float64), null, 'a memory never registered');
    assert.equal(wasmFold(memory.buffer, OpCode.sum, DType.Int16), null, 'Int16');
    assert.equal(wasmFold(memory.buffer, OpCode.band, DType.Float64), null, 'a bitwise op on floats');
    assert.equal(wasmFold(memory.buffer, OpCode.minloc, DType.Float64), null, 'minloc');
    const user = Op.create((inout: Float64Array, input: Float64Array) => { for (let i = 0; i < inout.length; i++) inout[i]! += input[i]!; });
    assert.equal(wasmFold(memory.buffer, user.id, DType.Float64), null, 'a user op');
  });

  test('reduceRegions folds two regions of one slice with the same bits either way (WebAssembly from WASM_FOLD_MIN_BYTES), and overlapping ones from the input as it was', () => {
    const shared = createNodeShared({ ranks: 1, ringBytes: 4096, sliceBytes: 1 << 16 });
    adoptSliceMemories(shared);
    registerFoldMemories(shared.memories);
    assert.ok(shared.memories?.[0], 'a slice is a WebAssembly memory');
    assert.equal(createNodeShared({ ranks: 1, ringBytes: 4096, sliceBytes: 1 << 16 }, false).memories![0], null, 'plain slices where asked (NBC_WASM=0)');
    const slice = shared.slices[0]!;
    assert.equal(slice, shared.memories![0]!.buffer);
    assert.notEqual(wasmFold(slice, OpCode.sum, DType.Float64), null);
    for (const n of [9, 200]) { // below and past WASM_FOLD_MIN_BYTES: the JavaScript and the WebAssembly route
      assert.equal(n * 8 >= WASM_FOLD_MIN_BYTES, n === 200);
      const x = new Float64Array(slice, 0, n);
      const y = new Float64Array(slice, 2048, n);
      for (let k = 0; k < n; k++) { x[k] = 0.1 * (k + 1); y[k] = 1 / (k + 3); }
      const want = Float64Array.from(y, (v, k) => x[k]! + v);
      reduceRegions(OpCode.sum, DType.Float64, new Uint8Array(slice, 0, 8 * n), new Uint8Array(slice, 2048, 8 * n));
      assert.equal(hex(y), hex(want), `${n} doubles`);
    }
    // overlapping by all but one element: the byte-level route, which folds the input's values
    // as they were (the 16-byte turns would read elements they had just written)
    const z = new Float64Array(slice, 8192, 5).fill(1);
    reduceRegions(OpCode.sum, DType.Float64, new Uint8Array(slice, 8192, 32), new Uint8Array(slice, 8200, 32));
    assert.deepEqual([...z], [1, 2, 2, 2, 2]);
  });
});
