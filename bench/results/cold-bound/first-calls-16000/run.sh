#!/usr/bin/env bash
# A fresh job's 16000 back-to-back 8 B allreduces on 4 ranks of one node (2 cores), by default
# and with V8's tiering budget x3 and x6, in 2 interleaved rounds; summary.md as
# `npm run bench:first-calls` prints it. Usage: bash bench/results/cold-bound/first-calls-16000/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
out=bench/results/cold-bound/first-calls-16000
for r in 1 2; do
  for s in shm4 shm4-b3 shm4-b6; do
    case $s in shm4) a="" ;; shm4-b3) a="--always-sparkplug --interrupt-budget=200000" ;; shm4-b6) a="--always-sparkplug --interrupt-budget=400000" ;; esac
    NBC_NODE_ARGS="$a" node dist/cli/nbc.js run -n 4 --ppn 4 scripts/first-calls-job.mjs "$out/loop-$s-r$r.json" 16000 100
  done
  node scripts/first-calls-tcp.mjs "$out/node-tcp-r$r.json" 1000 100
done
node scripts/first-calls-summary.mjs "$out" 2 "shm4 shm4-b3 shm4-b6" |
  sed '/^nbc cg,/,$d; /plain Node TCP/d; s/not within 8000/not within 16000/' |
  awk '/\| undefined \|/ { n++; sub(/\| undefined \|/, n == 1 ? "| the same, --always-sparkplug --interrupt-budget=200000 |" : "| the same, --always-sparkplug --interrupt-budget=400000 |") } { print }' > "$out/summary.md"
