#!/usr/bin/env bash
# `npm run bench:hier`: issue 11's hierarchy figures (seed 004). For barrier, allreduce and
# alltoall on 8 ranks as 2 nodes x 4 and 4 nodes x 2 (--ppn 4, --ppn 2), sizes 8 B .. 64 KiB,
# `hier` against every flat algorithm, ROUNDS times with the algorithms interleaved (this VM's
# timings drift, so each round measures all of them back to back), then per size the median
# over rounds, the best flat algorithm and the factor. JSON per run in bench/results/hier/,
# the summary in bench/results/hier/summary.json, charts in docs/img/hier-*.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
nbc() { node dist/cli/nbc.js "$@"; }
out=${OUT:-bench/results/hier}
mkdir -p "$out" docs/img
# Between the nodes, seed 004's network (docs/wire.md); LINK=none for the host's own path.
link=${LINK:-ddr}
link_arg=(--link "$link")
[ "$link" = none ] && link_arg=()
rounds=${ROUNDS:-2}
iters=${ITERS:-300}
sizes=${SIZES:-8,64,512,2K,8K,64K}
declare -A algs=(
  [barrier]="hier dissemination:1 dissemination:2"
  [allreduce]="hier recursive-doubling knomial:4 rabenseifner ring"
  [alltoall]="hier bruck pairwise scattered"
)
for round in $(seq 1 "$rounds"); do
  for ppn in 4 2; do
    for op in barrier allreduce alltoall; do
      size_arg=(--sizes "$sizes")
      [ "$op" = barrier ] && size_arg=()
      for alg in ${algs[$op]}; do
        nbc bench "$op" --ranks 8 --ppn "$ppn" "${size_arg[@]}" "${link_arg[@]}" --algorithm "$alg" --iters "$iters" \
          --label "$op $alg ppn $ppn" --json "$out/$op-ppn$ppn-${alg//:/_}-r$round.json" >/dev/null
      done
    done
  done
done
node scripts/hier-summary.mjs "$out" "$rounds"
