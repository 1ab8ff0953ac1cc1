/**
 * The blocking-collective benchmark job (`nbc bench <collective>`), NBCBench rules
 * (PERFORMANCE.md): a barrier before every measured operation, single-operation timing, and
 * latency = median over iterations of the maximum over ranks.
 */
import type { Communicator } from '../coll/communicator.js';

export interface CollJobArgs {
  op: string;
  sizes: number[];
  iters: number;
  warmup: number;
  algorithm?: string;
}

export interface CollRow {
  bytes: number;
  latencyUs: number;
  minUs: number;
  maxUs: number;
}

type Runner = (bytes: number) => () => void;

function runners(w: Communicator, opts: { algorithm?: string }): Record<string, Runner> {
  const p = w.size;
  const f64 = (bytes: number): Float64Array => w.alloc(Float64Array, Math.max(1, Math.floor(bytes / 8)));
  return {
    barrier: () => () => w.barrier(opts),
    bcast: (b) => { const x = f64(b); return () => w.bcast(x, 0, opts); },
    reduce: (b) => { const x = f64(b); const y = f64(b); return () => w.reduce(x, y, 'sum', 0, opts); },
    allreduce: (b) => { const x = f64(b); const y = f64(b); return () => w.allreduce(x, y, 'sum', opts); },
    gather: (b) => { const x = f64(b); const y = w.alloc(Float64Array, x.length * p); return () => w.gather(x, y, 0, opts); },
    scatter: (b) => { const y = f64(b); const x = w.alloc(Float64Array, y.length * p); return () => w.scatter(x, y, 0, opts); },
    allgather: (b) => { const x = f64(b); const y = w.alloc(Float64Array, x.length * p); return () => w.allgather(x, y, opts); },
    alltoall: (b) => { const n = Math.max(1, Math.floor(b / 8)); const x = w.alloc(Float64Array, n * p); const y = w.alloc(Float64Array, n * p); return () => w.alltoall(x, y, opts); },
    reduceScatterBlock: (b) => { const y = f64(b); const x = w.alloc(Float64Array, y.length * p); return () => w.reduceScatterBlock(x, y, 'sum', opts); },
    scan: (b) => { const x = f64(b); const y = f64(b); return () => w.scan(x, y, 'sum', opts); },
    exscan: (b) => { const x = f64(b); const y = f64(b); return () => w.exscan(x, y, 'sum', opts); },
  };
}

export const BENCH_COLLECTIVES = ['barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'scatter', 'allgather', 'alltoall', 'reduceScatterBlock', 'scan', 'exscan'];

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export default function collBench(w: Communicator, argv: string[]): CollRow[] | null {
  const a = JSON.parse(argv[0]!) as CollJobArgs;
  const make = runners(w, { algorithm: a.algorithm })[a.op];
  if (make === undefined) throw new Error(`no benchmark for ${a.op}`);
  const rows: CollRow[] = [];
  const t = new Float64Array(1);
  const tmax = new Float64Array(1);
  // Warm the whole path up (JIT, rings, the harness's own barrier and max) before any timing.
  {
    const run = make(a.op === 'barrier' ? 0 : a.sizes[0]!);
    for (let i = 0; i < 2000; i++) {
      w.barrier();
      run();
      w.allreduce(t, tmax, 'max');
    }
  }
  for (const bytes of a.op === 'barrier' ? [0] : a.sizes) {
    const run = make(bytes);
    const iters = bytes >= 1 << 20 ? Math.max(10, a.iters >> 4) : a.iters;
    const samples: number[] = [];
    for (let i = -a.warmup; i < iters; i++) {
      w.barrier();
      const t0 = performance.now();
      run();
      t[0] = (performance.now() - t0) * 1000;
      if (i < 0) continue;
      w.allreduce(t, tmax, 'max');
      samples.push(tmax[0]!);
    }
    rows.push({ bytes, latencyUs: median(samples), minUs: Math.min(...samples), maxUs: Math.max(...samples) });
  }
  return w.rank === 0 ? rows : null;
}
