#!/usr/bin/env bash
# `npm run bench:first-calls`: how a fresh job's calls speed up (issue 14, "the first second").
# Interleaved over ROUNDS rounds, each from a fresh job:
#   - 8000 back-to-back 8 B allreduces on 2 nodes x 1 rank (scripts/first-calls-job.mjs),
#     medians per 1000 calls: over TCP as V8 runs it by default; over TCP with V8 tiering up
#     early (NBC_NODE_ARGS="$EAGER": optimise after little profiling, not 500 calls after each
#     inline-cache change); over TCP with no optimising compiler (--no-opt); over UCX;
#   - beside them, plain Node TCP ping-pong of 8 B between two processes
#     (scripts/first-calls-tcp.mjs), one way, per 1000 round trips;
#   - nbc cg on 2 nodes over emulated GigE, 40^3 per rank, blocking halo: ms per iteration of
#     the solve timed after K = 0, 2, 5, 10 untimed solves (--warmup K).
# JSON in bench/results/first-calls/ (OUT), summary on stdout (scripts/first-calls-summary.mjs),
# chart docs/img/first-calls.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results/first-calls}
mkdir -p "$out" docs/img
rounds=${ROUNDS:-5}
nbc="node dist/cli/nbc.js"
EAGER="--interrupt-budget=4000 --minimum-invocations-after-ic-update=10"
sides="tcp tcp-eager tcp-noopt"
if $nbc info --json | node -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8"));process.exit(l.find(x=>x.what==="transport ucx")?.available?0:1)'; then
  sides="$sides ucx"
else
  echo "UCX transport not available here (nbc info says why): measuring the TCP path only"
fi
for r in $(seq 1 "$rounds"); do
  for s in $sides; do
    case $s in
      tcp) args=""; t=tcp ;;
      tcp-eager) args=$EAGER; t=tcp ;;
      tcp-noopt) args="--no-opt"; t=tcp ;;
      ucx) args=""; t=ucx ;;
    esac
    NBC_NODE_ARGS=$args $nbc run -n 2 --ppn 1 --transport "$t" scripts/first-calls-job.mjs "$out/loop-$s-r$r.json"
  done
  node scripts/first-calls-tcp.mjs "$out/node-tcp-r$r.json"
  for k in 0 2 5 10; do
    $nbc cg --ranks 2 --ppn 1 --n 40 --link gige --mode blocking --verify off --quiet --warmup "$k" --json "$out/cg-w$k-r$r.json"
  done
  echo "round $r of $rounds done"
done
node scripts/first-calls-summary.mjs "$out" "$rounds" "$sides"
