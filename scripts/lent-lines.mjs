// What writing into "lent" memory costs: a buffer whose cache lines another core has just read
// (as a receiver does when it copies straight out of a sender's comm.alloc buffer). Two
// threads share a SharedArrayBuffer; each round the helper thread copies X out (or not), then
// the main thread writes X, timed: by the float sum kernel (a fold in place), by V8's copy
// (TypedArray.set, which on shared memory copies element by element), by the library's own copy
// (copyBytes: the addon's memmove when it is built), or by the library's route for a fold into
// lent memory (copy X out to private memory, fold there, copy it back: HostExecutor.reduce).
// bench/HISTORY.md, "Folding into lent memory" and "Writes into lent memory, priced".
// Usage: node scripts/lent-lines.mjs [rounds]
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import { builtinKernel } from '../dist/ops/loops.js';
import { copyBytes } from '../dist/shm/copy.js';
import { nativeAddon } from '../dist/runtime/native.js';

const N = 8192; // doubles: 64 KiB
if (isMainThread) {
  const rounds = Number(process.argv[2] ?? 3000);
  const sab = new SharedArrayBuffer(4 << 20);
  const ctl = new Int32Array(new SharedArrayBuffer(16));
  const helper = new Worker(new URL(import.meta.url), { workerData: { sab, ctl: ctl.buffer } });
  const X = new Float64Array(sab, 0, N);
  const T = new Float64Array(sab, 1 << 20, N);
  const fold = builtinKernel(0, 8); // sum, Float64
  const X8 = new Uint8Array(X.buffer, X.byteOffset, N * 8);
  const T8 = new Uint8Array(T.buffer, T.byteOffset, N * 8);
  const priv = new Float64Array(N);
  const priv8 = new Uint8Array(priv.buffer);
  const copy = nativeAddon().addon?.copy === undefined ? 'copyBytes (no addon: TypedArray.set)' : 'copyBytes (addon memmove)';
  const ways = {
    'fold in place (sum kernel)': () => fold(X, 0, T, 0, N),
    'TypedArray.set': () => X.set(T),
    [copy]: () => copyBytes(T8, X8, 0, N * 8),
    'private fold (out, fold, back)': () => { copyBytes(X8, priv8, 0, N * 8); fold(priv, 0, T, 0, N); copyBytes(priv8, X8, 0, N * 8); },
  };
  const rows = [];
  for (let rep = 0; rep < 2; rep++) {
    for (const [name, write] of Object.entries(ways)) {
      for (const lent of [true, false]) {
        let total = 0;
        for (let i = 1; i <= rounds; i++) {
          if (lent) { // the helper copies X out, as a receiver would; wait until it has
            Atomics.store(ctl, 0, i);
            Atomics.notify(ctl, 0);
            while (Atomics.load(ctl, 1) !== i);
          }
          const t0 = performance.now();
          write();
          total += performance.now() - t0;
        }
        if (lent) { Atomics.store(ctl, 1, 0); Atomics.store(ctl, 0, 0); }
        rows.push({ write: name, 'X just read by the other core': lent, us: +((total / rounds) * 1000).toFixed(2) });
      }
    }
  }
  Atomics.store(ctl, 0, -1);
  Atomics.notify(ctl, 0);
  console.table(rows);
} else {
  const { sab, ctl: c } = workerData;
  const ctl = new Int32Array(c);
  const X = new Uint8Array(sab, 0, N * 8);
  const Y = new Uint8Array(sab, 3 << 20, N * 8);
  let seen = 0;
  for (;;) {
    const v = Atomics.load(ctl, 0);
    if (v === -1) break;
    if (v === 0) { seen = 0; Atomics.wait(ctl, 0, 0, 50); continue; }
    if (v !== seen) { Y.set(X); seen = v; Atomics.store(ctl, 1, v); }
  }
}
