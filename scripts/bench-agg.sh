#!/usr/bin/env bash
# `npm run bench:agg`: the agg executor (aggregation fabric, seed 003) against the host
# executor's algorithms, side by side in each round (issue 13):
#  1. allreduce 8 B..4 KiB and barrier on 16 nodes x 1 rank, emulated link latency=20us on
#     every hop (node to node, node to daemon, daemon to daemon), fabric radix=4,levels=2;
#  2. allreduce 8 B on 4, 8 and 16 nodes (latency against node count).
# Each round runs every configuration once, back to back (this VM drifts up to 2x in minutes);
# the summary takes the median over rounds. JSON in bench/results/agg/, charts in docs/img/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results/agg}
rounds=${ROUNDS:-2} iters=${ITERS:-100} link=${LINK:-latency=20us} fabric=${FABRIC:-radix=4,levels=2}
sizes=${SIZES:-8,64,256,1K,2K,4K}
mkdir -p "$out" docs/img
nbc() { node dist/cli/nbc.js "$@" >/dev/null; }
for r in $(seq 1 "$rounds"); do
  for alg in agg recursive-doubling knomial:4 rabenseifner; do
    ex=host; [ "$alg" = agg ] && ex=agg
    nbc bench allreduce --ranks 16 --ppn 1 --sizes "$sizes" --iters "$iters" --executor "$ex" --algorithm "$alg" \
      --agg "$fabric" --link "$link" --label "$alg" --json "$out/allreduce-n16-$alg-r$r.json"
  done
  for alg in agg dissemination:1 dissemination:2; do
    ex=host; [ "$alg" = agg ] && ex=agg
    nbc bench barrier --ranks 16 --ppn 1 --iters "$iters" --executor "$ex" --algorithm "$alg" \
      --agg "$fabric" --link "$link" --label "$alg" --json "$out/barrier-n16-$alg-r$r.json"
  done
  for n in 4 8; do
    for alg in agg recursive-doubling knomial:4; do
      ex=host; [ "$alg" = agg ] && ex=agg
      nbc bench allreduce --ranks "$n" --ppn 1 --sizes 8 --iters "$iters" --executor "$ex" --algorithm "$alg" \
        --agg "$fabric" --link "$link" --label "$alg" --json "$out/allreduce-n$n-$alg-r$r.json"
    done
  done
done
node scripts/agg-summary.mjs "$out" "$rounds" | tee "$out/summary.txt"
