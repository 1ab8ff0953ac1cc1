#!/usr/bin/env bash
# Interleaved A/B of the offload engine's waiting, on a machine where every rank and engine has a
# core: "park" (the engine parks after each poll and a waiting rank spins 5 us:
# NBC_ENGINE_SPIN_US=0 NBC_OFFLOAD_SPIN_US=5) against "poll" (the defaults there: the engine
# keeps polling for 1 ms after work, a waiting rank spins 2 ms). Each round runs both sides back
# to back; the summary gives per cell the median over rounds of each side.
# Usage: ROUNDS=3 ITERS=100 scripts/ab-engine-spin.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/offload-16core/engine-spin}
rounds=${ROUNDS:-3} iters=${ITERS:-100}
mkdir -p "$out"
nbc() { node dist/cli/nbc.js "$@" >/dev/null; }
for i in $(seq 1 "$rounds"); do
  for side in park poll; do
    env=()
    [ "$side" = park ] && env=(NBC_ENGINE_SPIN_US=0 NBC_OFFLOAD_SPIN_US=5)
    for cfg in "2x1:2:1" "2x2:4:2"; do
      IFS=: read -r name ranks ppn <<<"$cfg"
      for op in iallreduce ialltoall; do
        env "${env[@]}" node dist/cli/nbc.js bench "$op" --ranks "$ranks" --ppn "$ppn" --sizes 8,1K,16K,256K --iters "$iters" \
          --executor offload --json "$out/$op-$name-$side-$i.json" >/dev/null
      done
      env "${env[@]}" node dist/cli/nbc.js bench allreduce --ranks "$ranks" --ppn "$ppn" --sizes 8,1K,64K --iters "$iters" \
        --executor offload --json "$out/allreduce-$name-$side-$i.json" >/dev/null
      [ "$side" = park ] && nbc bench allreduce --ranks "$ranks" --ppn "$ppn" --sizes 8,1K,64K --iters "$iters" \
        --executor host --json "$out/allreduce-$name-host-$i.json"
    done
  done
done
node scripts/engine-spin-summary.mjs "$out" "$rounds" | tee "$out/summary.txt"
