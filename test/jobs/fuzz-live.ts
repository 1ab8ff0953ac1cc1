/**
 * The job the live fuzzer attacks (test/fuzz/live.ts): verified collectives in a loop until the
 * stop file appears. Every iteration checks, on every rank, an allreduce (host executor, and
 * offloaded to the engines), an alltoall and, with `agg`, an allreduce reduced by the
 * aggregation fabric, against values computed here. Integers in float64: exact.
 *
 *   args: <stop file> [agg]
 * After its first verified iteration, rank 0 creates `<stop file>.running`: the fuzzer starts then.
 * Result per rank: { iterations, mismatches, first } (first: the first mismatch, or null).
 */
import { existsSync, writeFileSync } from 'node:fs';
import type { Communicator } from 'nbcoll';

export default function main(w: Communicator, args: string[]): unknown {
  const stopFile = args[0]!;
  const agg = args[1] === 'agg';
  const n = 64;
  const size = w.size;
  const flag = new Int32Array(1);
  const send = new Float64Array(n);
  const recv = new Float64Array(n);
  const a2aSend = new Int32Array(4 * size);
  const a2aRecv = new Int32Array(4 * size);
  let iterations = 0;
  let mismatches = 0;
  let first: string | null = null;
  const miss = (what: string, got: number, want: number): void => {
    mismatches++;
    first ??= `iteration ${iterations}: ${what}: got ${got}, expected ${want}`;
  };
  const checkSum = (what: string, t: number): void => {
    // sum over ranks r of (1000 r + i + t)
    for (let i = 0; i < n; i++) {
      const want = 1000 * (size * (size - 1)) / 2 + size * (i + t);
      if (recv[i] !== want) miss(`${what}[${i}]`, recv[i]!, want);
    }
  };
  for (;;) {
    // Rank 0 decides when to stop; everyone learns it in the same iteration.
    flag[0] = w.rank === 0 && existsSync(stopFile) ? 1 : 0;
    w.bcast(flag, 0);
    if (flag[0] === 1) break;
    const t = iterations;
    for (let i = 0; i < n; i++) send[i] = 1000 * w.rank + i + t;
    recv.fill(-1);
    w.allreduce(send, recv, 'sum');
    checkSum('allreduce', t);
    recv.fill(-1);
    w.allreduce(send, recv, 'sum', { executor: 'offload' });
    checkSum('offloaded allreduce', t);
    if (agg) {
      recv.fill(-1);
      w.allreduce(send, recv, 'sum', { executor: 'agg' });
      checkSum('agg allreduce', t);
    }
    for (let j = 0; j < size; j++) for (let k = 0; k < 4; k++) a2aSend[4 * j + k] = 100_000 * w.rank + 100 * j + k + t;
    a2aRecv.fill(-1);
    w.alltoall(a2aSend, a2aRecv);
    for (let j = 0; j < size; j++) {
      for (let k = 0; k < 4; k++) {
        const want = 100_000 * j + 100 * w.rank + k + t;
        if (a2aRecv[4 * j + k] !== want) miss(`alltoall[${4 * j + k}]`, a2aRecv[4 * j + k]!, want);
      }
    }
    iterations++;
    if (iterations === 1 && w.rank === 0) writeFileSync(`${stopFile}.running`, '');
  }
  return { iterations, mismatches, first };
}
