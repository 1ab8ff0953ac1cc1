#!/usr/bin/env bash
# Interleaved A/B of two builds on the figures `npm run bench:coll` guards: the 2-rank 8 B
# allreduce and barrier (20000 iterations each). Usage: scripts/ab-coll.sh OLD_DIST NEW_DIST
# [RUNS]. Each run measures old then new back to back (this VM drifts up to 2x in minutes, so
# only side-by-side pairs compare); prints every pair and the median of each side.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 runs=${3:-5}
out=$(mktemp -d)
for i in $(seq 1 "$runs"); do
  for side in old new; do
    dist=$old; [ "$side" = new ] && dist=$new
    node "$dist/cli/nbc.js" bench allreduce --ranks 2 --sizes 8 --iters 20000 --json "$out/allreduce-$side-$i.json" >/dev/null
    node "$dist/cli/nbc.js" bench barrier --ranks 2 --iters 20000 --json "$out/barrier-$side-$i.json" >/dev/null
  done
done
node -e '
  const fs = require("node:fs");
  const [dir, runs] = [process.argv[1], Number(process.argv[2])];
  const lat = (f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).results[0].latencyUs;
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  for (const op of ["allreduce", "barrier"]) {
    const o = [], n = [];
    for (let i = 1; i <= runs; i++) { o.push(lat(`${op}-old-${i}.json`)); n.push(lat(`${op}-new-${i}.json`)); }
    console.log(`${op} 2 ranks: old ${o.map((x) => x.toFixed(2)).join(" ")} us | new ${n.map((x) => x.toFixed(2)).join(" ")} us | medians ${med(o).toFixed(2)} vs ${med(n).toFixed(2)} us (new/old ${(med(n) / med(o)).toFixed(2)})`);
  }' "$out" "$runs"
