// A job for `nbc run -n 2 --ppn 1 --transport ucx scripts/exchange-chunks-job.mjs BYTES [ITERS]`:
// the two ranks exchange BYTES each way, as one message or split into 2, 4 and 8 (all posted at
// once, then waited for), after a barrier; rank 0 prints the median of ITERS exchanges per
// split, us, twice over in rotation: {"1": [a, b], "2": [...], ...}. It asks whether pipelining
// a large message in pieces would beat UCX's own rendezvous between emulated nodes
// (bench/HISTORY.md, "Pieces do not help").
import { waitAll } from '../dist/p2p/request.js';

export default function exchangeChunks(world, argv) {
  const total = Number(argv[0]);
  const iters = Number(argv[1] ?? 300);
  const peer = world.rank ^ 1;
  const out = world.alloc(Uint8Array, total).fill(1);
  const inb = world.alloc(Uint8Array, total);
  const res = {};
  for (const k of [1, 2, 4, 8, 1, 2, 4, 8]) {
    const piece = total / k;
    const times = [];
    for (let i = -50; i < iters; i++) {
      world.barrier();
      const t0 = performance.now();
      const reqs = [];
      for (let j = 0; j < k; j++) reqs.push(world.irecv(inb.subarray(j * piece, (j + 1) * piece), peer, 100 + j));
      for (let j = 0; j < k; j++) reqs.push(world.isend(out.subarray(j * piece, (j + 1) * piece), peer, 100 + j));
      waitAll(reqs);
      if (i >= 0) times.push((performance.now() - t0) * 1000);
    }
    times.sort((a, b) => a - b);
    (res[k] ??= []).push(+times[times.length >> 1].toFixed(1));
  }
  if (world.rank === 0) console.log(JSON.stringify(res));
}
