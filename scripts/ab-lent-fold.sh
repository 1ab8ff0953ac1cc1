#!/usr/bin/env bash
# Interleaved A/B of two builds on the one-node allreduce of comm.alloc buffers (what nbc bench
# measures), the case the private fold of the host executor is for (bench/HISTORY.md, "Folding
# into lent memory"), with Open MPI's shared-memory allreduce (btl vader) at the same sizes in
# the same run as the peer.
# Usage: [OUT=dir] scripts/ab-lent-fold.sh OLD_DIST NEW_DIST [RUNS]   (RUNS pairs, default 3)
# Prints, per layout and size, each side's latency per run and the medians; JSON rows and the
# summary under OUT (default bench/results/lent-fold/).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 runs=${3:-3}
out=${OUT:-bench/results/lent-fold}
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.csv
source scripts/peer-mpibench.sh
sizes=8K,32K,128K  # the sizes mpibench measures (powers of 4 from 8 B)
for i in $(seq 1 "$runs"); do
  for layout in 2:2 4:4; do
    ranks=${layout%:*}
    for side in old new; do
      dist=$old; [ "$side" = new ] && dist=$new
      node "$dist/cli/nbc.js" bench allreduce --ranks "$ranks" --ppn "$ranks" --algorithm recursive-doubling --sizes "$sizes" \
        --iters 500 --warmup 2000 --plain --json "$out/$ranks-$side-r$i.json" > /dev/null
    done
    if [ -n "$mpi" ]; then
      mpirun -np "$ranks" --oversubscribe --mca btl self,vader "$mpi" allreduce 131072 | grep -E '^allreduce,(8192|32768|131072),' > "$out/$ranks-openmpi-r$i.csv"
    fi
  done
done
node -e '
  const fs = require("node:fs");
  const [dir, runs] = [process.argv[1], Number(process.argv[2])];
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const f = (x) => x.toFixed(1);
  for (const ranks of [2, 4]) {
    for (const bytes of [8192, 32768, 131072]) {
      const side = (s) => Array.from({ length: runs }, (_, i) =>
        JSON.parse(fs.readFileSync(`${dir}/${ranks}-${s}-r${i + 1}.json`, "utf8")).results.find((r) => r.bytes === bytes).latencyUs);
      const o = side("old"), n = side("new");
      let peer = "";
      const csv = Array.from({ length: runs }, (_, i) => `${dir}/${ranks}-openmpi-r${i + 1}.csv`).filter((p) => fs.existsSync(p));
      if (csv.length > 0) {
        const v = csv.map((p) => fs.readFileSync(p, "utf8").split("\n").map((l) => l.split(",")).find((c) => Number(c[1]) === bytes)).filter(Boolean).map((c) => Number(c[2]));
        if (v.length > 0) peer = ` | Open MPI (vader) ${v.map(f).join(" ")} us, median ${f(med(v))}`;
      }
      console.log(`${ranks} ranks, 1 node, ${bytes / 1024} KiB: old ${o.map(f).join(" ")} | new ${n.map(f).join(" ")} us | medians ${f(med(o))} -> ${f(med(n))} (new/old ${(med(n) / med(o)).toFixed(2)})${peer}`);
    }
  }' "$out" "$runs" | tee "$out/summary.txt"
