// A job for `nbc run` (scripts/ab-tcp-engine.sh): the pattern of a solver's inner products,
// C us of busy compute then an 8 B allreduce, with no barrier between. The first WARMUP
// iterations are not timed: on the 2-core VM such a loop settles only after about 1500 of
// them (medians per quarter of 3000 at C = 500: 420-506, 365-413, 174-307, 158-260 us), so
// timing the first few hundred measured the ramp (bench/HISTORY.md, "The pure-JS path"). Then
// ITERS timed iterations; rank 0 writes the allreduce's median, 10th and 90th percentile (us)
// as JSON to OUT.
// Usage: nbc run -n 2 --ppn 1 --link gige scripts/allreduce-loop-job.mjs C OUT [ITERS [WARMUP]]
import { writeFileSync } from 'node:fs';

export default function (world, argv) {
  const computeUs = Number(argv[0] ?? 500);
  const iters = Number(argv[2] ?? 1000);
  const warmup = Number(argv[3] ?? 2500);
  const x = new Float64Array(1);
  const y = new Float64Array(1);
  const ts = [];
  for (let i = 0; i < warmup + iters; i++) {
    const t0 = performance.now();
    while ((performance.now() - t0) * 1000 < computeUs);
    const t = performance.now();
    world.allreduce(x, y, 'sum');
    if (i >= warmup) ts.push((performance.now() - t) * 1000);
  }
  ts.sort((a, b) => a - b);
  const at = (p) => ts[Math.min(ts.length - 1, Math.floor(p * ts.length))];
  if (world.rank === 0 && argv[1] !== undefined) {
    writeFileSync(argv[1], JSON.stringify({ computeUs, iters, warmup, medianUs: at(0.5), p10Us: at(0.1), p90Us: at(0.9) }));
  }
}
