// A plain blocking ping-pong between ranks 0 and 1, for A/B runs of the p2p path:
//   node dist/cli/nbc.js run -n 2 --ppn 1 --transport ucx scripts/pingpong-job.mjs [round trips] [bytes]
// Prints rank 0's median and 10th-percentile one-way time (half a round trip, us) after 2,000
// round trips of warm-up. `nbc bench p2p` measures the same with its limits beside it; this
// job starts in a second, so two builds can be interleaved many times.
export default function pingpong(world, argv) {
  const n = Number(argv[0] ?? 20000);
  const bytes = Number(argv[1] ?? 8);
  if (world.rank > 1) return;
  const peer = 1 - world.rank;
  const buf = new Uint8Array(bytes);
  const once = () => {
    if (world.rank === 0) {
      world.send(buf, peer, 2);
      world.recv(buf, peer, 2);
    } else {
      world.recv(buf, peer, 2);
      world.send(buf, peer, 2);
    }
  };
  for (let i = 0; i < 2000; i++) once();
  const oneWayUs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    once();
    oneWayUs[i] = (performance.now() - t0) * 500;
  }
  oneWayUs.sort();
  if (world.rank === 0) console.log(JSON.stringify({ bytes, medianUs: +oneWayUs[n >> 1].toFixed(2), p10Us: +oneWayUs[Math.floor(n / 10)].toFixed(2) }));
}
