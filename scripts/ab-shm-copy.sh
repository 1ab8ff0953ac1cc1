#!/usr/bin/env bash
# Interleaved A/B of two builds on one node, where payloads of 2 KiB and more move between a
# rank's buffers and the node's shared arena (bench/HISTORY.md, "Shared-memory copies"): allreduce,
# bcast and alltoall (the library's own selection) of 8 KiB .. 512 KiB on one node of 2 and of
# 4 ranks, with Open MPI's mpibench (../shared/peers) over btl vader in the same round (its
# sizes are 8 B times powers of 4, so these are too).
# Usage: [OUT=dir] scripts/ab-shm-copy.sh OLD_DIST NEW_DIST [RUNS]   (RUNS rounds, default 3)
# JSON rows and summary.txt under OUT (default bench/results/shm-copy/).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 runs=${3:-3}
out=${OUT:-bench/results/shm-copy}
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.csv
source scripts/peer-mpibench.sh
sizes="8192 32768 131072 524288"
layouts="2 4"
ops="allreduce bcast alltoall"
for i in $(seq 1 "$runs"); do
  for n in $layouts; do
    for op in $ops; do
      for side in old new; do
        dist=$old; [ "$side" = new ] && dist=$new
        node "$dist/cli/nbc.js" bench "$op" --ranks "$n" --ppn "$n" --sizes 8K,32K,128K,512K --iters 500 --warmup 2000 \
          --json "$out/$op-1x$n-$side-r$i.json" > /dev/null
      done
      if [ -n "$mpi" ]; then
        mpirun -np "$n" --oversubscribe --mca btl self,vader "$mpi" "$op" 524288 | grep -E "^$op,[0-9]+," > "$out/$op-1x$n-openmpi-r$i.csv" || true
      fi
    done
  done
done
node -e '
  const fs = require("node:fs");
  const [dir, runs, sizes, layouts, ops] = [process.argv[1], Number(process.argv[2]), process.argv[3].split(" ").map(Number), process.argv[4].split(" "), process.argv[5].split(" ")];
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const f = (x) => x.toFixed(1);
  const lines = ["median of " + runs + " interleaved rounds, us: old -> new (new/old); Open MPI btl vader in the same rounds", ""];
  for (const n of layouts) for (const op of ops) {
    const side = (s, b) => Array.from({ length: runs }, (_, i) =>
      JSON.parse(fs.readFileSync(`${dir}/${op}-1x${n}-${s}-r${i + 1}.json`, "utf8")).results.find((r) => r.bytes === b).latencyUs);
    const peer = (b) => Array.from({ length: runs }, (_, i) => `${dir}/${op}-1x${n}-openmpi-r${i + 1}.csv`).filter((p) => fs.existsSync(p))
      .flatMap((p) => fs.readFileSync(p, "utf8").trim().split("\n").map((l) => l.split(","))).filter((c) => Number(c[1]) === b).map((c) => Number(c[2]));
    for (const b of sizes) {
      const o = med(side("old", b)), w = med(side("new", b)), v = peer(b);
      lines.push(`${op} 1x${n} ${b} B: ${f(o)} -> ${f(w)} us (${(w / o).toFixed(2)}x)` + (v.length ? `; Open MPI ${f(med(v))} us, new/Open MPI ${(w / med(v)).toFixed(2)}x` : ""));
    }
  }
  fs.writeFileSync(`${dir}/summary.txt`, lines.join("\n") + "\n");
  console.log(lines.join("\n"));
' "$out" "$runs" "$sizes" "$layouts" "$ops"
