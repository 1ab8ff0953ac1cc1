// nbcoll's side of scripts/yield-floor.mjs and bench/peers/mpiloop.c: `nbc run -n 4
// scripts/barrier-allreduce-loop-job.mjs [ITERS]`. ITERS iterations of a barrier then an 8 B
// allreduce, back to back after 2000 untimed ones; rank 0 prints the time per iteration, us.
export default function loop(world, argv) {
  const iters = Number(argv[0] ?? 30000);
  const x = new Float64Array(1);
  const y = new Float64Array(1);
  for (let i = 0; i < 2000; i++) {
    world.barrier();
    world.allreduce(x, y, 'sum');
  }
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) {
    world.barrier();
    world.allreduce(x, y, 'sum');
  }
  const us = (performance.now() - t0) * 1000 / iters;
  if (world.rank === 0) console.log(JSON.stringify({ ranks: world.size, iters, perIterationUs: +us.toFixed(2) }));
}
