#!/usr/bin/env bash
# `npm run bench:first-calls`: how a fresh job's calls speed up, and how many it takes to be warm.
# Interleaved over ROUNDS rounds, each side a fresh job:
#   - 8000 back-to-back 8 B allreduces (scripts/first-calls-job.mjs), the median of every 100
#     calls: on 2 nodes x 1 rank over TCP and over UCX, and on 4 ranks of one node (2 cores: the
#     strong-scaling layout); the UCX and 4-rank jobs three ways: as started by default, with
#     V8's helper threads kept (NBC_V8_THREADS=on, the default before they were dropped where
#     the ranks fill the cores) and trained (NBC_TRAIN=300, runtime/train.ts); the 4-rank job
#     also on the rings instead of the flag board (NBC_FLAT=0, coll/flat.ts);
#   - beside them, plain Node TCP ping-pong of 8 B between two processes
#     (scripts/first-calls-tcp.mjs), one way, per 100 round trips;
#   - nbc cg on 2 nodes over emulated GigE, 40^3 per rank, blocking halo: ms per iteration of
#     the solve timed after K = 0, 2, 5, 10 untimed solves (--warmup K).
# JSON in bench/results/first-calls/ (OUT), summary on stdout (scripts/first-calls-summary.mjs):
# per side the medians of calls 1-100, 101-1000, then per 1000, and the calls until warm (the
# first 100 whose median, and every later one's, is within 1.2x of the last 1000's); chart
# docs/img/first-calls.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results/first-calls}
mkdir -p "$out" docs/img
rounds=${ROUNDS:-5}
nbc="node dist/cli/nbc.js"
sides="tcp shm4 shm4-rings shm4-helpers shm4-trained"
if $nbc info --json | node -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8"));process.exit(l.find(x=>x.what==="transport ucx")?.available?0:1)'; then
  sides="$sides ucx ucx-helpers ucx-trained"
else
  echo "UCX transport not available here (nbc info says why): measuring the TCP path and one node only"
fi
for r in $(seq 1 "$rounds"); do
  for s in $sides; do
    case $s in
      tcp) flat=auto; v8=auto; train=0; layout="-n 2 --ppn 1 --transport tcp" ;;
      ucx) flat=auto; v8=auto; train=0; layout="-n 2 --ppn 1 --transport ucx" ;;
      ucx-helpers) flat=auto; v8=on; train=0; layout="-n 2 --ppn 1 --transport ucx" ;;
      ucx-trained) flat=auto; v8=auto; train=300; layout="-n 2 --ppn 1 --transport ucx" ;;
      shm4) flat=auto; v8=auto; train=0; layout="-n 4 --ppn 4" ;;
      shm4-rings) flat=0; v8=auto; train=0; layout="-n 4 --ppn 4" ;;
      shm4-helpers) flat=auto; v8=on; train=0; layout="-n 4 --ppn 4" ;;
      shm4-trained) flat=auto; v8=auto; train=300; layout="-n 4 --ppn 4" ;;
    esac
    # shellcheck disable=SC2086
    NBC_FLAT=$flat NBC_V8_THREADS=$v8 NBC_TRAIN=$train $nbc run $layout scripts/first-calls-job.mjs "$out/loop-$s-r$r.json" 8000 100
  done
  node scripts/first-calls-tcp.mjs "$out/node-tcp-r$r.json" 8000 100
  for k in 0 2 5 10; do
    $nbc cg --ranks 2 --ppn 1 --n 40 --link gige --mode blocking --verify off --quiet --warmup "$k" --json "$out/cg-w$k-r$r.json"
  done
  echo "round $r of $rounds done"
done
node scripts/first-calls-summary.mjs "$out" "$rounds" "$sides" | tee "$out/summary.md"
