// nbcoll's side of bench/peers/mpiexchange.c: `nbc run -n 2 --ppn 1 --transport ucx
// scripts/exchange-job.mjs`. The two ranks exchange 256 KiB and 512 KiB each way (sendrecv) and
// allreduce 512 KiB of doubles, each after a barrier, 300 times after 30 untimed; rank 0
// prints the medians, us, as JSON. Buffers from world.alloc, as nbc bench's.
export default function exchange(world) {
  const n = 65536;
  const x = world.alloc(Float64Array, n).fill(1);
  const y = world.alloc(Float64Array, n);
  const peer = 1 - world.rank;
  const t = [[], [], []];
  const timed = (k, i, fn) => {
    world.barrier();
    const t0 = performance.now();
    fn();
    if (i >= 0) t[k].push((performance.now() - t0) * 1000);
  };
  for (let i = -30; i < 300; i++) {
    timed(0, i, () => world.sendrecv(x.subarray(0, n / 2), peer, 1, y.subarray(0, n / 2), peer, 1));
    timed(1, i, () => world.sendrecv(x, peer, 2, y, peer, 2));
    timed(2, i, () => world.allreduce(x, y, 'sum'));
  }
  const median = (a) => +a.sort((p, q) => p - q)[a.length >> 1].toFixed(1);
  if (world.rank === 0) console.log(JSON.stringify({ exchange256KiBUs: median(t[0]), exchange512KiBUs: median(t[1]), allreduce512KiBUs: median(t[2]) }));
}
