#!/usr/bin/env node
// The floor of a crowded host's collectives in JavaScript: RANKS worker threads (default 4)
// run ITERS iterations of a dissemination barrier then a recursive-doubling allreduce of one
// double, over flags in one SharedArrayBuffer, every empty poll followed by sched_yield (the
// native addon's, as a crowded nbcoll rank yields). Nothing else: no rings, no matching, no
// library. WAIT=park instead parks every empty wait at once (Atomics.wait on the flag, each
// store followed by Atomics.notify): the wait a Web Worker has, with no sched_yield (docs/web.md).
// Prints the time per barrier-and-allreduce iteration (throughput) and the median over
// iterations of the slowest rank's allreduce, us. BENCHMARKS.md, "Collectives next to Open
// MPI" (4 ranks on 2 cores) compares nbcoll's and Open MPI's loops with it
// (bench/peers/mpiloop.c is Open MPI's).
// Usage: [WAIT=yield|park] node scripts/yield-floor.mjs [ITERS] [RANKS]
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const ADDON = fileURLToPath(new URL('../native/build/Release/nbc_native.node', import.meta.url));
const WARM = 2000;

const WAIT = process.env.WAIT ?? 'yield';
if (WAIT !== 'yield' && WAIT !== 'park') throw new Error(`WAIT=${WAIT}: expected yield or park`);

if (isMainThread) {
  if (WAIT === 'yield' && !existsSync(ADDON)) {
    process.stderr.write(`yield-floor: the native addon is not built (${ADDON}); npm run build builds it where a C compiler is present\n`);
    process.exit(2);
  }
  const iters = Number(process.argv[2] ?? 30000);
  const ranks = Number(process.argv[3] ?? 4);
  if (!(ranks >= 2 && (ranks & (ranks - 1)) === 0)) throw new Error(`RANKS ${ranks}: expected a power of two >= 2`);
  const sab = new SharedArrayBuffer(64 * 1024);
  const workers = Array.from({ length: ranks }, (_, rank) => new Worker(new URL(import.meta.url), { workerData: { sab, rank, ranks, iters } }));
  const results = await Promise.all(workers.map((w) => new Promise((ok, fail) => { w.once('message', ok); w.once('error', fail); })));
  const slowest = Float64Array.from({ length: iters }, (_, i) => Math.max(...results.map((r) => r.lat[i])));
  slowest.sort();
  const perIterUs = Math.max(...results.map((r) => r.perIterUs));
  process.stdout.write(`${JSON.stringify({ wait: WAIT, ranks, iters, perIterationUs: +perIterUs.toFixed(2), allreduceMedianMaxUs: +slowest[iters >> 1].toFixed(2) })}\n`);
} else {
  const { sab, rank, ranks, iters } = workerData;
  const yieldCore = WAIT === 'yield' ? createRequire(import.meta.url)(ADDON).schedYield : null;
  const rounds = Math.log2(ranks);
  // Flag words: barrier rounds, then allreduce rounds, one per (round, rank), each line apart.
  const flags = new Int32Array(sab, 0, 2 * rounds * ranks * 16);
  const vals = new Float64Array(sab, flags.byteLength, 2 * rounds * ranks * 8);
  const flag = (phase, round, r) => ((phase * rounds + round) * ranks + r) * 16;
  const waitFor = yieldCore !== null
    ? (at, seq) => { while (Atomics.load(flags, at) < seq) yieldCore(); }
    : (at, seq) => { for (let v; (v = Atomics.load(flags, at)) < seq;) Atomics.wait(flags, at, v); };
  const post = yieldCore !== null
    ? (at, seq) => { Atomics.store(flags, at, seq); }
    : (at, seq) => { Atomics.store(flags, at, seq); Atomics.notify(flags, at); };
  const lat = new Float64Array(iters);
  let t0 = 0;
  for (let i = 0, seq = 1; i < WARM + iters; i++, seq++) {
    if (i === WARM) t0 = performance.now();
    for (let round = 0, d = 1; round < rounds; round++, d <<= 1) {
      post(flag(0, round, rank), seq);
      waitFor(flag(0, round, (rank - d + ranks) % ranks), seq);
    }
    const start = performance.now();
    let acc = rank + i;
    for (let round = 0, d = 1; round < rounds; round++, d <<= 1) {
      const slot = flag(1, round, rank) >> 1;
      vals[slot + (seq & 1)] = acc;
      post(flag(1, round, rank), seq);
      const peer = rank ^ d;
      waitFor(flag(1, round, peer), seq);
      acc += vals[(flag(1, round, peer) >> 1) + (seq & 1)];
    }
    if (i >= WARM) lat[i - WARM] = (performance.now() - start) * 1000;
  }
  parentPort.postMessage({ lat, perIterUs: (performance.now() - t0) * 1000 / iters });
}
