/**
 * The nbcbench job: every rank runs it (launched by `nbc bench <op>`). For each message size it
 * measures, by the NBCBench rules (a barrier before every measured operation, single-operation
 * timing, per-iteration maximum over ranks, then a statistic over iterations):
 * - blocking ops: the latency;
 * - non-blocking and persistent ops: the pure latency (start, then wait at once), then, with a
 *   compute phase as long as the pure latency between start and wait (OSU's method), the
 *   overall time, the compute time, and the overhead split into the initiating call, test()
 *   calls and wait(); overlap follows (metrics.ts).
 */
import type { Communicator } from '../coll/communicator.js';
import { dimsCreate } from '../comm/topology.js';
import type { Request } from '../p2p/request.js';
import type { BenchRow } from './result.js';
import { Computer, dgemmChecksum, type Testable } from './compute.js';
import { STATS, statOf, summarizeNb, type Noise, type Stat, type TestInterval } from './metrics.js';

export interface OpJobArgs {
  op: string;
  sizes: number[];
  iters: number;
  warmup: number;
  /**
   * Warm-up also lasts at least this long (rank 0's clock), since a fresh job's JIT takes
   * time as well as calls to settle: on 2 ranks of the 2-core VM an 8 B allreduce measured
   * 2.8-4.7 us after 2,000 calls of warm-up and 1.3-1.7 us after 20,000 (the first 0.4 s).
   * Absent: count only.
   */
  warmupMs?: number;
  algorithm?: string;
  executor: 'host' | 'offload' | 'agg';
  compute: 'busy' | 'dgemm';
  testInterval: TestInterval;
  noise: Noise | null;
  stat: Stat;
  perRank: boolean;
}

export interface OpJobResult {
  rows: BenchRow[];
  checksum: number;
}

/** A started operation: something to wait on and to test. */
type Started = Request | { wait(): unknown; test(): boolean };

interface Bench {
  /** Runs one blocking operation. */
  run(): void;
  /** Starts one non-blocking (or persistent) operation. */
  start(): Started;
}

type Maker = (w: Communicator, bytes: number, opts: { algorithm?: string; executor?: 'host' | 'offload' | 'agg' }) => Bench;

const f64 = (w: Communicator, bytes: number, times = 1): Float64Array => w.alloc(Float64Array, Math.max(1, Math.floor(bytes / 8)) * times);

/** For a collective name, the blocking call and the non-blocking one, on buffers made once. */
const MAKERS: Record<string, Maker> = {
  barrier: (w, _b, o) => ({ run: () => w.barrier(o), start: () => w.ibarrier(o) }),
  bcast: (w, b, o) => { const x = f64(w, b); return { run: () => w.bcast(x, 0, o), start: () => w.ibcast(x, 0, o) }; },
  reduce: (w, b, o) => {
    const x = f64(w, b); const y = f64(w, b);
    return { run: () => w.reduce(x, y, 'sum', 0, o), start: () => w.ireduce(x, y, 'sum', 0, o) };
  },
  allreduce: (w, b, o) => {
    const x = f64(w, b); const y = f64(w, b);
    return { run: () => w.allreduce(x, y, 'sum', o), start: () => w.iallreduce(x, y, 'sum', o) };
  },
  gather: (w, b, o) => {
    const x = f64(w, b); const y = f64(w, b, w.size);
    return { run: () => w.gather(x, y, 0, o), start: () => w.igather(x, y, 0, o) };
  },
  scatter: (w, b, o) => {
    const y = f64(w, b); const x = f64(w, b, w.size);
    return { run: () => w.scatter(x, y, 0, o), start: () => w.iscatter(x, y, 0, o) };
  },
  allgather: (w, b, o) => {
    const x = f64(w, b); const y = f64(w, b, w.size);
    return { run: () => w.allgather(x, y, o), start: () => w.iallgather(x, y, o) };
  },
  alltoall: (w, b, o) => {
    const x = f64(w, b, w.size); const y = f64(w, b, w.size);
    return { run: () => w.alltoall(x, y, o), start: () => w.ialltoall(x, y, o) };
  },
  reduceScatterBlock: (w, b, o) => {
    const y = f64(w, b); const x = f64(w, b, w.size);
    return { run: () => w.reduceScatterBlock(x, y, 'sum', o), start: () => w.ireduceScatterBlock(x, y, 'sum', o) };
  },
  scan: (w, b, o) => { const x = f64(w, b); const y = f64(w, b); return { run: () => w.scan(x, y, 'sum', o), start: () => w.iscan(x, y, 'sum', o) }; },
  exscan: (w, b, o) => { const x = f64(w, b); const y = f64(w, b); return { run: () => w.exscan(x, y, 'sum', o), start: () => w.iexscan(x, y, 'sum', o) }; },
  gatherv: (w, b, o) => {
    const n = Math.max(1, Math.floor(b / 8)); const x = f64(w, b); const y = f64(w, b, w.size);
    const c = new Array<number>(w.size).fill(n); const d = c.map((_, i) => i * n);
    return { run: () => w.gatherv(x, y, c, d, 0, o), start: () => w.igatherv(x, y, c, d, 0, o) };
  },
  scatterv: (w, b, o) => {
    const n = Math.max(1, Math.floor(b / 8)); const x = f64(w, b, w.size); const y = f64(w, b);
    const c = new Array<number>(w.size).fill(n); const d = c.map((_, i) => i * n);
    return { run: () => w.scatterv(x, c, d, y, 0, o), start: () => w.iscatterv(x, c, d, y, 0, o) };
  },
  allgatherv: (w, b, o) => {
    const n = Math.max(1, Math.floor(b / 8)); const x = f64(w, b); const y = f64(w, b, w.size);
    const c = new Array<number>(w.size).fill(n); const d = c.map((_, i) => i * n);
    return { run: () => w.allgatherv(x, y, c, d, o), start: () => w.iallgatherv(x, y, c, d, o) };
  },
  alltoallv: (w, b, o) => {
    const n = Math.max(1, Math.floor(b / 8)); const x = f64(w, b, w.size); const y = f64(w, b, w.size);
    const c = new Array<number>(w.size).fill(n); const d = c.map((_, i) => i * n);
    return { run: () => w.alltoallv(x, c, d, y, c, d, o), start: () => w.ialltoallv(x, c, d, y, c, d, o) };
  },
  reduceScatter: (w, b, o) => {
    const n = Math.max(1, Math.floor(b / 8)); const y = f64(w, b); const x = f64(w, b, w.size);
    const c = new Array<number>(w.size).fill(n);
    return { run: () => w.reduceScatter(x, y, c, 'sum', o), start: () => w.ireduceScatter(x, y, c, 'sum', o) };
  },
  neighborAllgather: (w, b, o) => {
    const cart = w.cartCreate(dimsCreate(w.size, 2), [true, true])!;
    const x = f64(w, b); const y = f64(w, b, 4);
    return { run: () => cart.neighborAllgather(x, y, o), start: () => cart.ineighborAllgather(x, y, o) };
  },
  neighborAlltoall: (w, b, o) => {
    const cart = w.cartCreate(dimsCreate(w.size, 2), [true, true])!;
    const x = f64(w, b, 4); const y = f64(w, b, 4);
    return { run: () => cart.neighborAlltoall(x, y, o), start: () => cart.ineighborAlltoall(x, y, o) };
  },
};

/** Every op nbcbench measures: blocking names, their `i` forms, and allreduce-persistent. */
export const BENCH_OPS: readonly string[] = [
  ...Object.keys(MAKERS),
  ...Object.keys(MAKERS).map((n) => `i${n}`),
  'allreduce-persistent',
];

export function opKind(op: string): 'blocking' | 'nonblocking' | 'persistent' {
  if (op.endsWith('-persistent')) return 'persistent';
  return MAKERS[op] !== undefined ? 'blocking' : 'nonblocking';
}

/** The collective a benchmark op runs: 'iallreduce' and 'allreduce-persistent' run allreduce. */
export function baseName(op: string): string {
  if (op.endsWith('-persistent')) return op.slice(0, -'-persistent'.length);
  return MAKERS[op] !== undefined ? op : op.slice(1);
}

export default function opJob(w: Communicator, argv: string[]): OpJobResult | null {
  const a = JSON.parse(argv[0]!) as OpJobArgs;
  if (!STATS.includes(a.stat)) throw new Error(`unknown stat ${a.stat}`);
  const kind = opKind(a.op);
  const make = MAKERS[baseName(a.op)];
  if (make === undefined) throw new Error(`no benchmark for ${a.op}`);
  const opts = { algorithm: a.algorithm, executor: a.executor };
  const computer = new Computer(a.compute, a.testInterval, a.noise, w.rank);
  const rows: BenchRow[] = [];
  const sizes = baseName(a.op) === 'barrier' ? [0] : a.sizes;
  let warmed = false;
  for (const bytes of sizes) {
    const bench = make(w, bytes, opts);
    let start: () => Started = bench.start;
    if (kind === 'persistent') {
      const p = w.allreduceInit(f64(w, bytes), f64(w, bytes), 'sum', opts);
      start = () => p.start();
    }
    const iters = bytes >= 1 << 20 ? Math.max(10, a.iters >> 4) : a.iters;
    const warmup = warmed ? a.warmup : Math.max(a.warmup, 500); // first size: also warm the JIT
    warmed = true;
    if (kind === 'blocking') {
      warmUp(w, warmup, a.warmupMs ?? 0, () => { w.barrier(); bench.run(); });
      const lat = new Float64Array(iters);
      for (let i = 0; i < iters; i++) {
        w.barrier();
        const t0 = performance.now();
        bench.run();
        lat[i] = (performance.now() - t0) * 1000;
      }
      const mine = statOf(lat, a.stat);
      const maxLat = maxOverRanks(w, lat);
      rows.push({ bytes, latencyUs: statOf(maxLat, a.stat), ...(a.perRank ? { perRank: allValues(w, mine) } : {}) });
      continue;
    }
    // 1. pure: start, then wait at once
    warmUp(w, warmup, a.warmupMs ?? 0, () => { w.barrier(); start().wait(); });
    const pure = new Float64Array(iters);
    for (let i = 0; i < iters; i++) {
      w.barrier();
      const t0 = performance.now();
      start().wait();
      pure[i] = (performance.now() - t0) * 1000;
    }
    const pureMax = maxOverRanks(w, pure);
    const target = statOf(pureMax, a.stat); // the same on every rank
    // 2. with compute as long as the pure latency between start and wait
    const init = new Float64Array(iters);
    const test = new Float64Array(iters);
    const wait = new Float64Array(iters);
    const overall = new Float64Array(iters);
    const compute = new Float64Array(iters);
    for (let i = -Math.min(warmup, 50); i < iters; i++) {
      w.barrier();
      const t0 = performance.now();
      const req = start();
      const t1 = performance.now();
      const c = computer.run(target, req as Testable);
      const t2 = performance.now();
      req.wait();
      const t3 = performance.now();
      if (i < 0) continue;
      init[i] = (t1 - t0) * 1000;
      test[i] = c.testUs;
      wait[i] = (t3 - t2) * 1000;
      overall[i] = (t3 - t0) * 1000;
      compute[i] = c.computeUs;
    }
    const mineOverall = statOf(overall, a.stat);
    const s = summarizeNb({
      pure: pureMax, init: maxOverRanks(w, init), test: maxOverRanks(w, test), wait: maxOverRanks(w, wait),
      overall: maxOverRanks(w, overall), compute: maxOverRanks(w, compute),
    }, a.stat);
    rows.push({ bytes, ...s, ...(a.perRank ? { perRank: allValues(w, mineOverall) } : {}) });
  }
  return w.rank === 0 ? { rows, checksum: dgemmChecksum() } : null;
}

/**
 * Runs `once` `count` times, then on until `ms` have passed on rank 0's clock: rank 0 decides
 * every 64 calls and broadcasts the decision, so every rank makes the same calls.
 */
function warmUp(w: Communicator, count: number, ms: number, once: () => void): void {
  for (let i = 0; i < count; i++) once();
  if (!(ms > 0)) return;
  const until = performance.now() + ms;
  const more = new Int32Array(1);
  for (;;) {
    more[0] = w.rank === 0 && performance.now() < until ? 1 : 0;
    w.bcast(more, 0);
    if (more[0] === 0) return;
    for (let i = 0; i < 64; i++) once();
  }
}

/** Element-wise maximum over ranks of per-iteration times (one allreduce for all iterations). */
function maxOverRanks(w: Communicator, xs: Float64Array): Float64Array {
  const out = new Float64Array(xs.length);
  w.allreduce(xs, out, 'max');
  return out;
}

/** Every rank's value, in rank order. */
function allValues(w: Communicator, mine: number): number[] {
  const all = new Float64Array(w.size);
  w.allgather(Float64Array.of(mine), all);
  return Array.from(all);
}

