#!/usr/bin/env bash
# `npm run bench:offload`: the offload executor against the host executor (issue #5).
#  1. iallreduce and ialltoall on 2 nodes x 1 rank and 2 nodes x 2 ranks ($CONFIGS), no test()
#     calls while computing, host and offload interleaved, with and without 100us@1kHz noise;
#  2. blocking allreduce, host and offload, on 1x2, 2x1 and 2x2;
#  3. two-level against flat offload for every collective with a two-level form, on 2x2.
# JSON in bench/results/offload/, charts in docs/img/.
set -euo pipefail
cd "$(dirname "$0")/.."
nbc() { node dist/cli/nbc.js "$@"; }
out=${OUT:-bench/results/offload}
mkdir -p "$out" docs/img
# Between the nodes, seed 000's network (docs/wire.md); LINK=none for the host's own path.
link=${LINK:-ib}
link_arg=(--link "$link")
[ "$link" = none ] && link_arg=()
iters=${ITERS:-100}
# NODESxPPN:RANKS:PPN for the overlap runs; on a machine with cores to spare keep ranks plus
# one engine per node below the core count, e.g. CONFIGS="2x1:2:1 2x2:4:2 2x4:8:4".
read -r -a configs <<<"${CONFIGS:-2x1:2:1 2x2:4:2}"
for op in iallreduce ialltoall; do
  for cfg in "${configs[@]}"; do
    IFS=: read -r name ranks ppn <<<"$cfg"
    for noise in none 100us@1kHz; do
      for ex in host offload; do
        tag="$op-$name-$ex$([ "$noise" = none ] || echo -noise)"
        label="$name $ex$([ "$noise" = none ] || echo ", noise $noise")"
        nbc bench "$op" --ranks "$ranks" --ppn "$ppn" --sizes 8,1K,16K,256K --iters "$iters" --executor "$ex" "${link_arg[@]}" \
          $([ "$noise" = none ] || echo --noise "$noise") --label "$label" --json "$out/$tag.json"
      done
    done
  done
  nbc bench chart "docs/img/offload-$op-overlap.svg" "$out/$op"-*.json --metric overlap
  nbc bench chart "docs/img/offload-$op-latency.svg" "$out/$op"-*.json --metric latency
done
for cfg in "1x2:2:2" "2x1:2:1" "2x2:4:2"; do
  IFS=: read -r name ranks ppn <<<"$cfg"
  for ex in host offload; do
    nbc bench allreduce --ranks "$ranks" --ppn "$ppn" --sizes 8,1K,64K,1M --iters "$iters" --executor "$ex" "${link_arg[@]}" \
      --label "$name $ex" --json "$out/allreduce-$name-$ex.json"
  done
done
nbc bench chart docs/img/offload-allreduce-blocking.svg "$out"/allreduce-*.json --metric latency
for op in ibarrier ibcast ireduce iallreduce iallgather ialltoall; do
  for alg in two-level flat; do
    nbc bench "$op" --ranks 4 --ppn 2 --sizes 8,1K,64K --iters "$iters" --executor offload "${link_arg[@]}" \
      $([ "$alg" = flat ] || echo --algorithm two-level) --label "$op $alg" --json "$out/twolevel-$op-$alg.json"
  done
done
