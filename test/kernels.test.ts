/**
 * The apps' WebAssembly kernels (src/apps/kernels.wat) against their JavaScript loops
 * (src/apps/grid.ts), which are the reference: the same bits for every kernel on random data,
 * odd and even line lengths (the f64x2 loops' tails), sub-boxes of the matvecs, a matvec driven
 * line by line by a hook, an update in place, a halo's gather and scatter; the committed
 * kernels-wasm.ts is the .wat
 * assembled.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import {
  axpy, axpyFromGhost, boundaryBoxes, divide, dot, dotGhost, gather, interiorBox, makeBox, matvec27, matvec7, scale, scatter, xpbyIntoGhost,
  type Box,
} from '../src/apps/grid.ts';
import { VectorHeap, wasmFor } from '../src/apps/kernels.ts';

const BUILD = fileURLToPath(new URL('../scripts/build-wasm.mjs', import.meta.url));

/** The same random contents twice: in a heap (WebAssembly kernels) and in plain arrays (JavaScript). */
function pair(heap: VectorHeap, n: number, seed: number): [Float64Array, Float64Array] {
  const w = heap.vector(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    w[i] = (s / 2 ** 32 - 0.5) * 2 ** ((s % 40) - 20);
  }
  return [w, Float64Array.from(w)];
}

const bits = (a: Float64Array): string => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');

describe('the apps\' WebAssembly kernels', () => {
  test('kernels-wasm.ts is kernels.wat assembled', async () => {
    await promisify(execFile)(process.execPath, [BUILD, '--check']);
  });

  test('a heap\'s vectors take the WebAssembly kernels; plain arrays and mixed calls the JavaScript ones', () => {
    const heap = new VectorHeap(64, 8);
    assert.equal(heap.wasm, true);
    const a = heap.vector(10);
    const b = heap.vector(10);
    assert.notEqual(wasmFor(a, b), undefined);
    assert.equal(wasmFor(a, new Float64Array(10)), undefined);
    assert.equal(wasmFor(new Float64Array(10), a), undefined);
    assert.equal(a.byteOffset % 16, 0);
    assert.equal(b.byteOffset % 16, 0);
    const big = heap.vector(1e6); // past the heap: a plain array, on which the JavaScript loops run
    assert.equal(big.length, 1e6);
    assert.equal(wasmFor(a, big), undefined);
    const idx = heap.ints(Int32Array.of(3, 1, 2));
    assert.deepEqual([...idx], [3, 1, 2]);
    assert.notEqual(wasmFor(a, idx), undefined);
  });

  test('every kernel gives the JavaScript loop\'s bits (random boxes, odd and even lines)', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 9 }), fc.integer(), fc.double({ min: -4, max: 4, noNaN: true }),
      (n0, n1, n2, seed, alpha) => {
        const box: Box = makeBox([n0, n1, n2], [1, 1, 1], [0, 0, 0]);
        const heap = new VectorHeap(8 * box.rows + 3 * box.ghosted, n2 + 2);
        const n = box.rows;
        const [xw, xj] = pair(heap, n, seed);
        const [yw, yj] = pair(heap, n, seed + 1);
        const [dw, dj] = pair(heap, n, seed + 2);
        const [pw, pj] = pair(heap, box.ghosted, seed + 3);
        const [qw, qj] = pair(heap, box.ghosted, seed + 4);
        assert.equal(Object.is(dot(xw, yw, n), dot(xj, yj, n)), true, 'dot');
        assert.equal(Object.is(dotGhost(box, xw, pw), dotGhost(box, xj, pj)), true, 'dotGhost');
        // Each update on both sides, then the bits of what it wrote.
        const both = (what: string, out: [Float64Array, Float64Array], run: (w: boolean) => void): void => {
          run(true);
          run(false);
          assert.equal(bits(out[0]), bits(out[1]), what);
        };
        both('axpy', [yw, yj], (w) => axpy(w ? yw : yj, alpha, w ? xw : xj, n));
        both('axpyFromGhost', [yw, yj], (w) => axpyFromGhost(box, w ? yw : yj, alpha, w ? pw : pj));
        both('scale', [yw, yj], (w) => scale(w ? yw : yj, w ? xw : xj, w ? dw : dj, n));
        both('divide', [yw, yj], (w) => divide(w ? yw : yj, w ? xw : xj, w ? dw : dj, n));
        both('xpbyIntoGhost', [qw, qj], (w) => xpbyIntoGhost(box, w ? qw : qj, w ? yw : yj, alpha, w ? pw : pj));
        both('xpbyIntoGhost in place', [pw, pj], (w) => xpbyIntoGhost(box, w ? pw : pj, w ? yw : yj, alpha, w ? pw : pj));
        // The matvecs over the interior and boundary boxes a solver uses, one of them by lines.
        const lines = { w: 0, j: 0 };
        for (const [k, sub] of [interiorBox(box), ...boundaryBoxes(box)].entries()) {
          const hw = k === 1 ? { lines: (r: number) => { lines.w += r; } } : null;
          const hj = k === 1 ? { lines: (r: number) => { lines.j += r; } } : null;
          matvec27(box, yw, pw, sub, hw);
          matvec27(box, yj, pj, sub, hj);
          assert.equal(bits(yw), bits(yj), `matvec27 on ${sub.join(',')}`);
          matvec7(box, xw, pw, sub, hw);
          matvec7(box, xj, pj, sub, hj);
          assert.equal(bits(xw), bits(xj), `matvec7 on ${sub.join(',')}`);
        }
        assert.equal(lines.w, lines.j, 'the hook sees the same rows');
        // A halo's pack and unpack: a shuffled index list into the ghosted vector, at an offset.
        const order = Int32Array.from({ length: Math.min(n, box.ghosted) }, (_, i) => (i * 7 + (seed >>> 0)) % box.ghosted);
        const idxW = heap.ints(order);
        assert.notEqual(wasmFor(yw, pw, idxW), undefined, 'the index list is in the heap');
        gather(yw, 1, pw, idxW.subarray(0, n - 1));
        gather(yj, 1, pj, order.subarray(0, n - 1));
        assert.equal(bits(yw), bits(yj), 'gather');
        scatter(qw, xw, 1, idxW.subarray(0, n - 1));
        scatter(qj, xj, 1, order.subarray(0, n - 1));
        assert.equal(bits(qw), bits(qj), 'scatter');
      },
    ), { numRuns: 60 });
  });
});
