#!/usr/bin/env bash
# The other side of a later tier-up: a fresh job's 8000 back-to-back 8 B allreduces on 4 ranks
# of one node (2 cores), as started by default and with V8's budget x6
# (--always-sparkplug --interrupt-budget=400000, the cold-bound run's "budget x6"), in ROUNDS
# interleaved rounds (default 3); summary as `npm run bench:first-calls` prints it.
# Usage: bash bench/results/cold-bound/first-calls.sh   (from the repository root, after npm run build)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=bench/results/cold-bound/first-calls
rounds=${ROUNDS:-3}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  NBC_NODE_ARGS= node dist/cli/nbc.js run -n 4 --ppn 4 scripts/first-calls-job.mjs "$out/loop-shm4-r$r.json" 8000 100
  NBC_NODE_ARGS="--always-sparkplug --interrupt-budget=400000" node dist/cli/nbc.js run -n 4 --ppn 4 scripts/first-calls-job.mjs "$out/loop-shm4-budget-r$r.json" 8000 100
  node scripts/first-calls-tcp.mjs "$out/node-tcp-r$r.json" 8000 100
done
node scripts/first-calls-summary.mjs "$out" "$rounds" "shm4 shm4-budget" | sed 's/| undefined |/| the same, budget x6 |/' | sed '/^nbc cg,/,$d' | tee "$out/summary.md"
