#!/usr/bin/env bash
# Interleaved A/B of two builds on the pure-JS TCP path between emulated nodes on this host:
# BASE (another checkout, built: `git worktree add /tmp/base <commit> && (cd /tmp/base && npm ci
# && npm run build)`) against this checkout. Per round, each side runs back to back:
#   p2p 2 x 1 (8 B, 4 KiB, 64 KiB), allreduce 2 x 1 on --link gige (8 B, 16 KiB),
#   allreduce 2 x 2 (8 B, 64 KiB), iallreduce 2 x 1 with compute (8 B, 64 KiB),
#   compute 500 us then allreduce 8 B, 1000 times after 2500 untimed (scripts/allreduce-loop-job.mjs)
#   on --link gige,
#   CG 2 x 1 on --link gige, blocking and non-blocking halo (--n 40).
# Raw results in OUT (default bench/results/tcp-engine); the summary (medians over rounds, the
# loopback TCP ping-pong of the same runs beside them) goes to OUT/summary.md, the chart to
# docs/img/tcp-engine.svg.
# Usage: BASE=/tmp/base ROUNDS=5 bash scripts/ab-tcp-engine.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${BASE:?set BASE to a built checkout to compare with}
out=${1:-bench/results/tcp-engine}
rounds=${ROUNDS:-5}
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for side in base new; do
    nbc=dist/cli/nbc.js
    [ "$side" = base ] && nbc=$base/dist/cli/nbc.js
    b() { node "$nbc" bench "$@" --transport tcp --plain >/dev/null; }
    b p2p --ranks 2 --ppn 1 --sizes 8,4K,64K --iters 500 --json "$out/p2p-2x1-$side-$i.json"
    b allreduce --ranks 2 --ppn 1 --link latency=50us,bandwidth=1gbit --sizes 8,16K --iters 200 --json "$out/allreduce-2x1-gige-$side-$i.json"
    b allreduce --ranks 4 --ppn 2 --sizes 8,64K --iters 200 --json "$out/allreduce-2x2-$side-$i.json"
    b iallreduce --ranks 2 --ppn 1 --sizes 8,64K --iters 200 --json "$out/iallreduce-2x1-$side-$i.json"
    node "$nbc" run -n 2 --ppn 1 --link latency=50us,bandwidth=1gbit scripts/allreduce-loop-job.mjs 500 "$out/loop-2x1-gige-$side-$i.json" >/dev/null
    for mode in blocking nonblocking; do
      node "$nbc" cg --ranks 2 --ppn 1 --link gige --n 40 --mode "$mode" --test-interval 2000 --quiet \
        --json "$out/cg-2x1-gige-$mode-$side-$i.json" >/dev/null
    done
  done
done
node scripts/tcp-engine-summary.mjs "$out" "$rounds" | tee "$out/summary.md"
