#!/usr/bin/env bash
# `npm run bench:overlap`: iallreduce and ialltoall, 8 B .. 1 MiB, on 1 node x 2 ranks (shared
# memory) and 2 nodes x 1 rank (TCP), host executor, with no test() calls and with test()
# every 10 us during the compute; JSON in bench/results/, charts in docs/img/.
set -euo pipefail
cd "$(dirname "$0")/.."
nbc() { node dist/cli/nbc.js "$@"; }
out=bench/results
mkdir -p "$out" docs/img
for op in iallreduce ialltoall; do
  for cfg in "1x2:2:2:shared memory" "2x1:2:1:TCP"; do
    IFS=: read -r name ranks ppn path <<<"$cfg"
    for ti in 0 10us; do
      label="$name $path, $([ "$ti" = 0 ] && echo 'no test()' || echo "test() every $ti")"
      nbc bench "$op" --ranks "$ranks" --ppn "$ppn" --sizes 8:1M --iters "${ITERS:-200}" \
        --test-interval "$ti" --label "$label" --json "$out/$op-$name-test$ti.json"
    done
  done
  nbc bench chart "docs/img/$op-overlap.svg" "$out/$op"-*.json --metric overlap
  nbc bench chart "docs/img/$op-latency.svg" "$out/$op"-*.json --metric latency
  nbc bench chart "docs/img/$op-overlap.png" "$out/$op"-*.json --metric overlap
done
