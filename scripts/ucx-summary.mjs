// Summary of `npm run bench:ucx` (scripts/bench-ucx.sh): per row, every round's figure and
// the median ratio to the limit or peer of the same round.
import { existsSync, readFileSync } from 'node:fs';

const [dir, roundsText, transportsText] = process.argv.slice(2);
const rounds = Number(roundsText);
const transports = transportsText.split(' ');
const json = (f) => JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (xs, d = 1) => xs.map((x) => x.toFixed(d)).join(' / ');
const openmpi = (file, bytes) => {
  const path = `${dir}/${file}`;
  if (!existsSync(path)) return null;
  const line = readFileSync(path, 'utf8').split('\n').find((l) => l.startsWith(`allreduce,${bytes},`));
  return line === undefined ? null : Number(line.split(',')[2]);
};
const lines = [];
for (const t of transports) {
  const lat = [], bw = [], latRatio = [], bwPct = [], bwPeerPct = [], tcpLimit = [];
  for (let r = 1; r <= rounds; r++) {
    const p = json(`p2p-${t}-r${r}.json`);
    const small = p.results.find((x) => x.bytes === 8);
    const big = p.results.find((x) => x.bytes === 1 << 20);
    lat.push(small.latencyUs);
    bw.push(big.bandwidthGBs);
    tcpLimit.push(p.limits.latencyUs);
    const u = p.limits.ucxPerftest;
    if (u) {
      latRatio.push(small.latencyUs / u.tagLatUs);
      bwPct.push((100 * big.bandwidthGBs) / u.tagBwGBs);
      if (u.tagBwPeerGBs !== undefined) bwPeerPct.push((100 * big.bandwidthGBs) / u.tagBwPeerGBs);
    }
  }
  lines.push(`p2p 8 B one way, ${t}: ${fmt(lat, 2)} us` + (latRatio.length ? ` = ${fmt(latRatio, 2)} x ucx_perftest tag_lat (median ${med(latRatio).toFixed(2)}x)` : ` (raw Node TCP ping-pong ${fmt(tcpLimit, 2)} us; median ${med(lat.map((x, i) => x / tcpLimit[i])).toFixed(2)}x)`));
  lines.push(`p2p 1 MiB bandwidth, ${t}: ${fmt(bw, 2)} GB/s` + (bwPct.length ? ` = ${fmt(bwPct, 0)} % of ucx_perftest tag_bw (median ${med(bwPct).toFixed(0)} %)` : '') +
    (bwPeerPct.length ? `, ${fmt(bwPeerPct, 0)} % of tag_bw -e (median ${med(bwPeerPct).toFixed(0)} %)` : ''));
}
for (const [shape, sizes] of [['2x1', [8, 524288]], ['2x4', [8]]]) {
  for (const bytes of sizes) {
    const peer = [];
    for (let r = 1; r <= rounds; r++) peer.push(openmpi(`allreduce-${shape}-openmpi-r${r}.csv`, bytes));
    const havePeer = peer.every((x) => x !== null);
    for (const t of transports) {
      const xs = [];
      for (let r = 1; r <= rounds; r++) xs.push(json(`allreduce-${shape}-${t}-r${r}.json`).results.find((x) => x.bytes === bytes).latencyUs);
      lines.push(`allreduce ${bytes} B, ${shape === '2x1' ? '2 nodes x 1 rank' : '2 nodes x 4 ranks'}, ${t}: ${fmt(xs)} us` +
        (havePeer ? ` | Open MPI (btl tcp${shape === '2x4' ? ', 8 processes' : ''}) ${fmt(peer)} us | median ratio ${med(xs.map((x, i) => x / peer[i])).toFixed(2)}x` : ''));
    }
  }
}
console.log(lines.join('\n'));
