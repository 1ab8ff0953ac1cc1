// N back-to-back offloaded 8 B allreduces, each timed from start to the end of its wait; prints
// per rank the median, the 99th percentile, the slowest and how many took over 40 ms (a wait
// that slept through its completion until the park's 100 ms timeout). bench/HISTORY.md, "A
// completion between the last poll and the park".
//   node dist/cli/nbc.js run -n 4 --ppn 2 scripts/offload-waits-job.mjs 3000
export default function main(world, argv) {
  const n = Number(argv[0] ?? 3000);
  const send = new Float64Array(1);
  const recv = new Float64Array(1);
  const ms = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    send[0] = world.rank + i;
    const t = performance.now();
    world.iallreduce(send, recv, 'sum', { executor: 'offload' }).wait();
    ms[i] = performance.now() - t;
  }
  ms.sort();
  const over40 = ms.filter((x) => x > 40).length;
  console.log(JSON.stringify({ rank: world.rank, calls: n, medianMs: +ms[n >> 1].toFixed(3), p99Ms: +ms[Math.floor(n * 0.99)].toFixed(2), maxMs: +ms[n - 1].toFixed(1), over40ms: over40 }));
}
