#!/usr/bin/env bash
# `npm run bench:coll`: the blocking collectives of issue #3, 2 ranks in one node.
#  1. allreduce, barrier, bcast, alltoall at 8 B, 2 KiB, 32 KiB and 512 KiB (automatic
#     algorithm selection), the sizes PERFORMANCE.md gives Open MPI's figures for;
#  2. the targets again, RUNS separate runs each (this VM's figures move between runs, so the
#     spread is the result): allreduce 8 B, barrier, allreduce 512 KiB.
# JSON in bench/results/coll/, chart in docs/img/coll-latency.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
nbc() { node dist/cli/nbc.js "$@"; }
out=bench/results/coll
mkdir -p "$out" docs/img
iters=${ITERS:-5000}
runs=${RUNS:-5}
for op in allreduce barrier bcast alltoall; do
  nbc bench "$op" --ranks 2 --sizes 8,2K,32K,512K --iters "$iters" --label "$op" --json "$out/$op-n2.json"
done
nbc bench chart docs/img/coll-latency.svg "$out"/{allreduce,bcast,alltoall}-n2.json --metric latency
for i in $(seq 1 "$runs"); do
  nbc bench allreduce --ranks 2 --sizes 8 --iters 20000 --label "allreduce 8 B, run $i" --json "$out/allreduce-8B-run$i.json"
  nbc bench barrier --ranks 2 --iters 20000 --label "barrier, run $i" --json "$out/barrier-run$i.json"
  nbc bench allreduce --ranks 2 --sizes 512K --iters 1000 --label "allreduce 512 KiB, run $i" --json "$out/allreduce-512K-run$i.json"
done
node -e '
  const fs = require("node:fs");
  const dir = process.argv[1];
  for (const op of ["allreduce-8B", "barrier", "allreduce-512K"]) {
    const runs = fs.readdirSync(dir).filter((f) => f.startsWith(op + "-run")).sort()
      .map((f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).results[0].latencyUs);
    const sorted = [...runs].sort((a, b) => a - b);
    console.log(`${op}: runs ${runs.map((x) => x.toFixed(2)).join(", ")} us; median of runs ${sorted[sorted.length >> 1].toFixed(2)} us`);
  }' "$out"
