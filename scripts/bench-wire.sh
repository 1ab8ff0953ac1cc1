#!/usr/bin/env bash
# `npm run bench:wire`: the emulated network (--link) measured against what it imitates:
# 8 B one way with and without --link ib (TCP, and UCX where the addon has it), 1 MiB under
# gige against 125 MB/s, and the CPU a rank's wait for a 1 ms latency costs with the stamps
# (NBC_WIRE=stamp) and with the engines' timer queue (NBC_WIRE=queue); ROUNDS interleaved
# rounds (default 3). Writes bench/results/wire/summary.json and summary.md (scripts/bench-wire.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/bench-wire.mjs
