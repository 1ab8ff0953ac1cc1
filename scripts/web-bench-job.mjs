/* global performance */
// A latency and bandwidth job that runs unchanged under `nbc run` (Node, Bun, Deno) and in a
// browser Web Worker: it imports nothing and uses only the communicator and performance.now().
//   nbc run -n 4 scripts/web-bench-job.mjs [quick]
// Measures, after warm-up:
//   barrierUs         barrier, us per call
//   allreduce8Us      allreduce of one Float64 (8 B, sum), us per call
//   allreduce8MiBGBs  allreduce of 8 MiB of Float64 (sum): 8 MiB / median call time, in GB/s
// The small calls are timed in batches of BATCH back-to-back calls (a single call is too short
// for the clock in a browser, which coarsens performance.now()), barrier and allreduce batches
// alternating: a rank's figure is its median batch / BATCH. The 8 MiB calls are timed one by
// one after 30 untimed ones (a fresh rank's first 8 MiB calls take 3-15x a warm one's, for 10
// calls in Node and up to 30 in a browser that is still starting): a rank's figure is their
// median. Each figure is then the maximum over ranks (an
// allreduce 'max', outside the timed regions): the slowest rank's view. Rank 0 returns
// { barrierUs, allreduce8Us, allreduce8MiBGBs }; the others return null. args[0] = 'quick'
// scales the counts down by 10 (the 8 MiB calls: 1 warm-up, 5 timed), for smoke tests.
const BATCH = 100;
const BIG_BYTES = 8 * 1024 * 1024;

export default function webBench(world, args) {
  const scale = args[0] === 'quick' ? 10 : 1;
  const warm = 500 / scale, calls = 2000 / scale, batch = BATCH / scale;
  const bigWarm = args[0] === 'quick' ? 1 : 30, bigCalls = args[0] === 'quick' ? 5 : 20;

  // Seconds per call of each of `fns`: the median of batches of `batch` back-to-back calls,
  // after `warm` untimed calls of each. The batches of the different calls alternate, so a
  // slow stretch of the machine (JIT, a neighbour's load) is shared rather than charged to
  // whichever call was timed first.
  const perCall = (fns) => {
    for (const fn of fns) for (let i = 0; i < warm; i++) fn();
    world.barrier();
    const batches = fns.map(() => []);
    for (let b = 0; b < calls / batch; b++) {
      fns.forEach((fn, k) => {
        const t0 = performance.now();
        for (let i = 0; i < batch; i++) fn();
        batches[k].push((performance.now() - t0) / 1000 / batch);
      });
    }
    return batches.map(median);
  };

  const one = new Float64Array([world.rank + 1]), oneOut = new Float64Array(1);
  const [barrierS, allreduce8S] = perCall([() => world.barrier(), () => world.allreduce(one, oneOut, 'sum')]);

  const big = new Float64Array(BIG_BYTES / 8).fill(1), bigOut = new Float64Array(BIG_BYTES / 8);
  for (let i = 0; i < bigWarm; i++) world.allreduce(big, bigOut, 'sum');
  world.barrier();
  const times = [];
  for (let i = 0; i < bigCalls; i++) {
    const t0 = performance.now();
    world.allreduce(big, bigOut, 'sum');
    times.push((performance.now() - t0) / 1000);
  }
  if (bigOut[0] !== world.size || bigOut[bigOut.length - 1] !== world.size) {
    throw new Error(`web-bench: 8 MiB allreduce gave ${bigOut[0]}, expected ${world.size}`);
  }

  // The slowest rank's figures.
  const mine = new Float64Array([barrierS, allreduce8S, median(times)]);
  const worst = new Float64Array(3);
  world.allreduce(mine, worst, 'max');
  if (world.rank !== 0) return null;
  return {
    barrierUs: round(worst[0] * 1e6, 2),
    allreduce8Us: round(worst[1] * 1e6, 2),
    allreduce8MiBGBs: round(BIG_BYTES / worst[2] / 1e9, 3),
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function round(x, digits) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
