// How long an 8 B allreduce takes right after a compute phase (the inner product of a solver
// iteration), against back to back: for each compute length, 600 iterations of busy work then
// one allreduce; rank 0 prints the median allreduce time (max over ranks, us) per length.
// Usage: nbc run -n 4 scripts/compute-gap-job.mjs  (lengths in us: 0 20 100 500 2000)
export default function computeGap(world) {
  const x = new Float64Array(1);
  const y = new Float64Array(1);
  const mine = new Float64Array(1);
  const worst = new Float64Array(1);
  const busy = (us) => { const end = performance.now() + us / 1000; while (performance.now() < end); };
  const out = [];
  for (const us of [0, 20, 100, 500, 2000]) {
    const n = 600;
    const ts = new Float64Array(n);
    for (let i = 0; i < 200 + n; i++) {
      busy(us);
      const t0 = performance.now();
      world.allreduce(x, y, 'sum');
      mine[0] = (performance.now() - t0) * 1000;
      world.allreduce(mine, worst, 'max');
      if (i >= 200) ts[i - 200] = worst[0];
    }
    ts.sort();
    out.push(`${us} us: ${ts[n >> 1].toFixed(1)}`);
  }
  if (world.rank === 0) console.log(`${world.size} ranks, allreduce 8 B after compute (median of the max over ranks, us): ${out.join(', ')}`);
}
