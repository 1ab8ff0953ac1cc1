#!/usr/bin/env bash
# Interleaved A/B of two builds on the hot paths a structural change must not slow down:
#   - allreduce and barrier, 8 B, 2 ranks of one node (20000 iterations);
#   - point-to-point 8 B one way, 2 ranks of one node (20000 iterations);
#   - allreduce 8 B, 2 nodes x 1 rank over UCX (2000 iterations; skipped, saying so, where
#     the native addon has no UCX).
# Usage: scripts/ab-hot-paths.sh OLD_DIST NEW_DIST [RUNS] [OUT_DIR]. Each run measures old then
# new back to back (this VM drifts up to 2x in minutes, so only side-by-side pairs compare);
# prints every pair and the median of each side, and keeps the JSON in OUT_DIR. OLD_ARGS and
# NEW_ARGS give each side its own Node and V8 flags (NBC_NODE_ARGS), to A/B a flag on one build.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 runs=${3:-5} out=${4:-$(mktemp -d)}
mkdir -p "$out"
ucx=0
if node "$new/cli/nbc.js" info --json | node -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8"));process.exit(l.find(x=>x.what==="transport ucx")?.available?0:1)'; then
  ucx=1
else
  echo "UCX transport not available here (nbc info says why): the 2 x 1 UCX row is skipped"
fi
for i in $(seq 1 "$runs"); do
  for side in old new; do
    dist=$old; [ "$side" = new ] && dist=$new
    args=${OLD_ARGS:-}; [ "$side" = new ] && args=${NEW_ARGS:-}
    export NBC_NODE_ARGS=$args
    nbc="node $dist/cli/nbc.js"
    $nbc bench allreduce --ranks 2 --sizes 8 --iters 20000 --json "$out/allreduce-$side-$i.json" >/dev/null
    $nbc bench barrier --ranks 2 --iters 20000 --json "$out/barrier-$side-$i.json" >/dev/null
    $nbc bench p2p --ranks 2 --ppn 2 --sizes 8 --iters 20000 --json "$out/p2p-$side-$i.json" >/dev/null
    if [ "$ucx" = 1 ]; then
      $nbc bench allreduce --ranks 2 --ppn 1 --transport ucx --sizes 8 --iters 2000 --json "$out/ucx-allreduce-$side-$i.json" >/dev/null
    fi
  done
done
node -e '
  const fs = require("node:fs");
  const [dir, runs, ucx] = [process.argv[1], Number(process.argv[2]), process.argv[3] === "1"];
  const row = (f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).results[0];
  const lat = (f) => { const r = row(f); return r.latencyUs ?? r.oneWayUs ?? r.latency; };
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const names = { allreduce: "allreduce 8 B, 2 ranks", barrier: "barrier, 2 ranks", p2p: "p2p 8 B one way, 2 ranks", "ucx-allreduce": "allreduce 8 B, 2 x 1 over UCX" };
  for (const op of Object.keys(names)) {
    if (op === "ucx-allreduce" && !ucx) continue;
    const o = [], n = [];
    for (let i = 1; i <= runs; i++) { o.push(lat(`${op}-old-${i}.json`)); n.push(lat(`${op}-new-${i}.json`)); }
    const pairs = o.map((x, i) => (n[i] / x).toFixed(3)).join(" ");
    console.log(`${names[op]}: old ${o.map((x) => x.toFixed(2)).join(" ")} us | new ${n.map((x) => x.toFixed(2)).join(" ")} us | pair ratios ${pairs} | medians ${med(o).toFixed(2)} vs ${med(n).toFixed(2)} us (new/old ${(med(n) / med(o)).toFixed(3)})`);
  }' "$out" "$runs" "$ucx"
