// A job for `nbc run` (scripts/bench-first-calls.sh): CALLS back-to-back 8 B allreduces from
// the first call of the job on, timed one by one; rank 0 writes the median of every BUCKET
// consecutive calls (us) as JSON to OUT, so the run shows how a fresh job's calls speed up.
// Usage: nbc run -n 2 --ppn 1 scripts/first-calls-job.mjs OUT [CALLS [BUCKET]]
import { writeFileSync } from 'node:fs';

export default function (world, argv) {
  const calls = Number(argv[1] ?? 8000);
  const bucket = Number(argv[2] ?? 1000);
  const x = new Float64Array(1);
  const y = new Float64Array(1);
  const ts = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    world.allreduce(x, y, 'sum');
    ts[i] = (performance.now() - t) * 1000;
  }
  if (world.rank !== 0) return;
  const medians = [];
  for (let s = 0; s < calls; s += bucket) {
    const b = Array.from(ts.subarray(s, s + bucket)).sort((a, c) => a - c);
    medians.push(b[b.length >> 1]);
  }
  writeFileSync(argv[0], JSON.stringify({ calls, bucket, medians }));
}
