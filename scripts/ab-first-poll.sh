#!/usr/bin/env bash
# Interleaved A/B of two builds on crowded hosts (more ranks than cores), where a waiting rank
# yields its core (bench/HISTORY.md, "Yield from the first empty poll"): 8 B allreduce over UCX on
# 2 nodes x 4, 4 x 1 and 3 x 1 ranks, and on one node of 4 (allreduce 8 B and barrier), with
# Open MPI's mpibench (../shared/peers) oversubscribed in the same round: btl tcp for the
# inter-node layouts (every process over TCP), btl vader for the one-node one.
# Usage: [OUT=dir] scripts/ab-first-poll.sh OLD_DIST NEW_DIST [RUNS]   (RUNS rounds, default 3)
# JSON rows and summary.txt under OUT (default bench/results/ucx/first-poll/).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 runs=${3:-3}
out=${OUT:-bench/results/ucx/first-poll}
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.csv
source scripts/peer-mpibench.sh
export OMPI_MCA_btl_tcp_if_include=lo
# case: name, nbc bench arguments, Open MPI processes, Open MPI btl, mpibench op
cases=(
  "allreduce-2x4|allreduce --ranks 8 --ppn 4 --transport ucx --sizes 8|8|tcp|allreduce"
  "allreduce-4x1|allreduce --ranks 4 --ppn 1 --transport ucx --sizes 8|4|tcp|allreduce"
  "allreduce-3x1|allreduce --ranks 3 --ppn 1 --transport ucx --sizes 8|3|tcp|allreduce"
  "allreduce-1x4|allreduce --ranks 4 --ppn 4 --sizes 8|4|vader|allreduce"
  "barrier-1x4|barrier --ranks 4 --ppn 4|4|vader|barrier"
)
for i in $(seq 1 "$runs"); do
  for c in "${cases[@]}"; do
    IFS='|' read -r name args np btl op <<< "$c"
    for side in old new; do
      dist=$old; [ "$side" = new ] && dist=$new
      # shellcheck disable=SC2086
      node "$dist/cli/nbc.js" bench $args --iters 1000 --json "$out/$name-$side-r$i.json" > /dev/null
    done
    if [ -n "$mpi" ]; then
      mpirun -np "$np" --oversubscribe --mca btl "self,$btl" "$mpi" "$op" 8 | grep -E "^$op,(0|8)," > "$out/$name-openmpi-r$i.csv" || true
    fi
  done
done
node -e '
  const fs = require("node:fs");
  const [dir, runs, names] = [process.argv[1], Number(process.argv[2]), process.argv.slice(3)];
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const f = (x) => x.toFixed(1);
  for (const name of names) {
    const side = (s) => Array.from({ length: runs }, (_, i) =>
      JSON.parse(fs.readFileSync(`${dir}/${name}-${s}-r${i + 1}.json`, "utf8")).results[0].latencyUs);
    const o = side("old"), n = side("new");
    let peer = "";
    const csv = Array.from({ length: runs }, (_, i) => `${dir}/${name}-openmpi-r${i + 1}.csv`).filter((p) => fs.existsSync(p));
    const v = csv.map((p) => fs.readFileSync(p, "utf8").trim().split(",")).filter((c) => c.length >= 3).map((c) => Number(c[2]));
    if (v.length > 0) peer = ` | Open MPI ${v.map(f).join(" ")} us, median ${f(med(v))}; new/Open MPI ${(med(n) / med(v)).toFixed(2)}x`;
    console.log(`${name}: old ${o.map(f).join(" ")} | new ${n.map(f).join(" ")} us | medians ${f(med(o))} -> ${f(med(n))} (new/old ${(med(n) / med(o)).toFixed(2)})${peer}`);
  }' "$out" "$runs" $(for c in "${cases[@]}"; do echo "${c%%|*}"; done) | tee "$out/summary.txt"
