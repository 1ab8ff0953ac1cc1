// Summary of scripts/ab-engine-spin.sh: per op, configuration and size, the median over rounds
// of each side (park, poll) and, for blocking allreduce, of the host executor beside them.
import { readFileSync } from 'node:fs';

const [dir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const load = (name) => JSON.parse(readFileSync(`${dir}/${name}.json`, 'utf8'));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const size = (b) => (b < 1024 ? `${b} B` : `${b / 1024} KiB`);
const over = (side, name, pick) => {
  const runs = Array.from({ length: rounds }, (_, i) => load(`${name}-${side}-${i + 1}`).results);
  return runs[0].map((_, k) => median(runs.map((r) => pick(r[k]))));
};

const limits = [];
for (let i = 1; i <= rounds; i++) limits.push(load(`iallreduce-2x1-poll-${i}`).limits?.tcpPingPongOneWayUs);
console.log(`${rounds} interleaved rounds; loopback TCP ping-pong one way in the same runs: ${limits.map((x) => x?.toFixed(1)).join(', ')} us`);
console.log('\nnon-blocking, offload: pure us / overall us / overlap %, park -> poll');
for (const cfg of ['2x1', '2x2']) {
  for (const op of ['iallreduce', 'ialltoall']) {
    const name = `${op}-${cfg}`;
    const sizes = load(`${name}-poll-1`).results.map((r) => r.bytes);
    const cells = (side) => {
      const pure = over(side, name, (r) => r.pureUs);
      const overall = over(side, name, (r) => r.overallUs);
      const ovl = over(side, name, (r) => r.overlapPct);
      return sizes.map((_, k) => `${pure[k].toFixed(0)} / ${overall[k].toFixed(0)} / ${ovl[k].toFixed(0)} %`);
    };
    const park = cells('park');
    const poll = cells('poll');
    console.log(`${name}: ${sizes.map((b, k) => `${size(b)} ${park[k]} -> ${poll[k]}`).join(' | ')}`);
  }
}
console.log('\nblocking allreduce, us: host | offload park -> poll');
for (const cfg of ['2x1', '2x2']) {
  const name = `allreduce-${cfg}`;
  const sizes = load(`${name}-poll-1`).results.map((r) => r.bytes);
  const [host, park, poll] = ['host', 'park', 'poll'].map((s) => over(s, name, (r) => r.latencyUs));
  console.log(`${name}: ${sizes.map((b, k) => `${size(b)} ${host[k].toFixed(0)} | ${park[k].toFixed(0)} -> ${poll[k].toFixed(0)}`).join(' | ')}`);
}
