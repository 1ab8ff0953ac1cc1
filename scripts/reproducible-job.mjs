// A job for `nbc run` (scripts/bench-reproducible.mjs): allreduce of float64 sums, plain and
// with { reproducible: true }, interleaved call by call at each size (after 2000 untimed calls
// of each at sizes to 64 KiB); rank 0 prints one JSON
// line: per size and side the median us over the iterations (the max over ranks of each call),
// and the bytes rank 0 sends per element.
// Usage: nbc run -n 2 scripts/reproducible-job.mjs SIZES_BYTES ITERS
export default function (world, argv) {
  const sizes = (argv[0] ?? '8,1048576').split(',').map(Number);
  const iters = Number(argv[1] ?? 200);
  const out = {};
  const t = new Float64Array(1);
  const tmax = new Float64Array(1);
  for (const bytes of sizes) {
    const n = Math.max(1, bytes / 8);
    const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i + world.rank) * 2 ** ((i % 40) - 20));
    const y = new Float64Array(n);
    const times = { plain: [], reproducible: [], reproducible3: [] };
    const reps = bytes >= 4 << 20 ? Math.max(3, iters >> 6) : iters;
    // Warm: a call's first thousands run in V8's lower tiers (BENCHMARKS.md, "First calls and
    // warm-up"), the reproducible path's longer code for longer; small sizes get 2000 untimed
    // calls of each side first.
    if (bytes <= 65536) {
      for (let w = 0; w < 2000; w++) {
        world.allreduce(x, y, 'sum');
        world.allreduce(x, y, 'sum', { reproducible: true, folds: 2 });
        world.allreduce(x, y, 'sum', { reproducible: true, folds: 3 });
      }
    }
    for (let k = 0; k < reps + 5; k++) {
      for (const side of Object.keys(times)) {
        const opts = side === 'plain' ? undefined : { reproducible: true, folds: side === 'reproducible' ? 2 : 3 };
        world.barrier();
        const t0 = performance.now();
        world.allreduce(x, y, 'sum', opts);
        t[0] = (performance.now() - t0) * 1000;
        world.allreduce(t, tmax, 'max');
        if (k >= 5) times[side].push(tmax[0]);
      }
    }
    const med = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];
    out[bytes] = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, med(v)]));
    // The bytes this rank sends per element, once per side (after the timed calls).
    for (const side of Object.keys(times)) {
      const opts = side === 'plain' ? undefined : { reproducible: true, folds: side === 'reproducible' ? 2 : 3 };
      world.barrier();
      const before = world.stats().host.bytesSent;
      world.allreduce(x, y, 'sum', opts);
      out[bytes][`${side}BytesPerElement`] = (world.stats().host.bytesSent - before) / n;
    }
  }
  if (world.rank === 0) console.log(JSON.stringify(out));
}
