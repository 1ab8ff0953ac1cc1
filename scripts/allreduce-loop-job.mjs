// A job for `nbc run` (scripts/ab-tcp-engine.sh): the pattern of a solver's inner products,
// C us of busy compute then an 8 B allreduce, 400 times with no barrier between; rank 0 writes
// the allreduce's median, 10th and 90th percentile (us) as JSON to OUT.
// Usage: nbc run -n 2 --ppn 1 --link gige scripts/allreduce-loop-job.mjs C OUT
import { writeFileSync } from 'node:fs';

export default function (world, argv) {
  const computeUs = Number(argv[0] ?? 500);
  const x = new Float64Array(1);
  const y = new Float64Array(1);
  const ts = [];
  for (let i = 0; i < 400; i++) {
    const t0 = performance.now();
    while ((performance.now() - t0) * 1000 < computeUs);
    const t = performance.now();
    world.allreduce(x, y, 'sum');
    ts.push((performance.now() - t) * 1000);
  }
  ts.sort((a, b) => a - b);
  if (world.rank === 0 && argv[1] !== undefined) {
    writeFileSync(argv[1], JSON.stringify({ computeUs, medianUs: ts[200], p10Us: ts[40], p90Us: ts[360] }));
  }
}
