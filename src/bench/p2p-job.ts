/**
 * The p2p benchmark job (run by `nbc bench p2p` on 2 ranks). Rank 0 and rank 1:
 * - latency: ping-pong, one message each way per iteration; one-way = round trip / 2,
 *   median over iterations (after warm-up);
 * - bandwidth: osu_bw style, a window of back-to-back isends answered by one small ACK;
 *   bandwidth = window * bytes / time, median over repetitions.
 * Buffers come from comm.alloc (registered), as an MPI benchmark's would from MPI_Alloc_mem,
 * unless `plain` is asked for.
 */
import type { Comm } from '../comm/comm.js';
import { waitAll, type Request } from '../p2p/request.js';

export interface P2pJobArgs {
  sizes: number[];
  iters: number;
  warmup: number;
  /** The first warm-up (5000 round trips) also lasts at least this long: the JIT settles in time (op-job.ts). */
  warmupMs?: number;
  window: number;
  plain: boolean;
}

export interface P2pRow {
  bytes: number;
  latencyUs: number;
  bandwidthGBs: number;
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Fewer iterations for big messages so a sweep stays short. */
function itersFor(bytes: number, iters: number): number {
  if (bytes >= 4 << 20) return Math.max(5, iters >> 6);
  if (bytes >= 256 << 10) return Math.max(10, iters >> 4);
  return iters;
}

export default function p2pBench(world: Comm, argv: string[]): P2pRow[] | null {
  const a = JSON.parse(argv[0]!) as P2pJobArgs;
  if (world.rank > 1) return null;
  const peer = 1 - world.rank;
  const maxBytes = Math.max(...a.sizes);
  const out = a.plain ? new Uint8Array(maxBytes) : world.alloc(Uint8Array, maxBytes);
  const inb = a.plain ? new Uint8Array(maxBytes) : world.alloc(Uint8Array, maxBytes);
  out.fill(7);
  const ack = new Uint8Array(1);
  const rows: P2pRow[] = [];
  // Warm the whole path up (JIT, rings, arena pages) so the first size is not penalised:
  // 5000 round trips and at least warmupMs; rank 0 says in each ping whether another follows.
  const until = performance.now() + (a.warmupMs ?? 0);
  for (let i = 0; ; i++) {
    if (world.rank === 0) {
      ack[0] = i < 5000 || performance.now() < until ? 1 : 0;
      world.send(ack, peer, 9);
      world.recv(ack, peer, 9);
    } else {
      world.recv(ack, peer, 9);
      world.send(ack, peer, 9);
    }
    if (ack[0] === 0) break;
  }
  for (const bytes of a.sizes) {
    const s = out.subarray(0, bytes);
    const r = inb.subarray(0, bytes);
    const iters = itersFor(bytes, a.iters);
    const samples: number[] = [];
    // Align both ranks before each size.
    world.sendrecv(ack, peer, 1, ack, peer, 1);
    for (let i = -a.warmup; i < iters; i++) {
      if (world.rank === 0) {
        const t0 = performance.now();
        world.send(s, peer, 2);
        world.recv(r, peer, 2);
        if (i >= 0) samples.push(((performance.now() - t0) * 1000) / 2);
      } else {
        world.recv(r, peer, 2);
        world.send(s, peer, 2);
      }
    }
    const bwSamples: number[] = [];
    const reps = Math.max(3, Math.min(20, Math.floor(iters / 10)));
    const reqs: Request[] = new Array(a.window);
    for (let k = -1; k < reps; k++) {
      if (world.rank === 0) {
        const t0 = performance.now();
        for (let w = 0; w < a.window; w++) reqs[w] = world.isend(s, peer, 3);
        waitAll(reqs);
        world.recv(ack, peer, 4);
        const sec = (performance.now() - t0) / 1000;
        if (k >= 0) bwSamples.push((a.window * bytes) / sec / 1e9);
      } else {
        for (let w = 0; w < a.window; w++) reqs[w] = world.irecv(r, peer, 3);
        waitAll(reqs);
        world.send(ack, peer, 4);
      }
    }
    rows.push({ bytes, latencyUs: median(samples), bandwidthGBs: median(bwSamples) });
  }
  return world.rank === 0 ? rows : null;
}
