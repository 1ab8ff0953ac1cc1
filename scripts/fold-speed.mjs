// node scripts/fold-speed.mjs [ROUNDS]: what a reduction of two regions costs by the JavaScript
// loop (ops/loops.ts) and by the WebAssembly loop (ops/folds.wat), both on the same two regions
// of one shared WebAssembly memory (as a node's arena slices are), hot in cache, rounds
// interleaved: the median of each round's best of 50 x 20 folds, per size, us. docs/ops.md,
// "In WebAssembly, between regions of one slice". Run after npm run build.
import { DType } from '../dist/ops/dtype.js';
import { registerFoldMemory, wasmFold } from '../dist/ops/folds.js';
import { OpCode } from '../dist/ops/loops.js';
import { kernelFor } from '../dist/ops/regions.js';

const rounds = Number(process.argv[2] ?? 5);
const memory = new WebAssembly.Memory({ initial: 64, maximum: 64, shared: true });
registerFoldMemory(memory);
const best = (f) => {
  let t = Infinity;
  for (let r = 0; r < 50; r++) {
    const t0 = performance.now();
    for (let k = 0; k < 20; k++) f();
    t = Math.min(t, (performance.now() - t0) / 20);
  }
  return t * 1000;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log('doubles    JavaScript us   WebAssembly us   ratio   (sum, Float64Array, median of', rounds, 'interleaved rounds)');
for (const n of [8, 128, 1024, 8192, 65536]) {
  const inout = new Float64Array(memory.buffer, 0, n);
  const input = new Float64Array(memory.buffer, 8 * n, n);
  for (let i = 0; i < n; i++) { inout[i] = 1 / (i + 1); input[i] = i * 0.5; }
  const js = kernelFor(OpCode.sum, DType.Float64);
  const wasm = wasmFold(memory.buffer, OpCode.sum, DType.Float64);
  const a = [], b = [];
  for (let r = 0; r < rounds; r++) {
    a.push(best(() => js(inout, 0, input, 0, n)));
    b.push(best(() => wasm(inout.byteOffset, input.byteOffset, inout.byteLength)));
  }
  console.log(`${String(n).padEnd(10)} ${median(a).toFixed(3).padStart(13)} ${median(b).toFixed(3).padStart(16)} ${(median(a) / median(b)).toFixed(2).padStart(7)}`);
}
