#!/usr/bin/env bash
# `npm run bench:apps`: the proof applications on emulated nodes (issue 14).
#  1. seed 001: CG with a blocking vs a non-blocking (overlapped) halo, $CG_RANKS ranks at one
#     rank per node, on emulated Gigabit Ethernet and InfiniBand (--link gige | ib);
#  2. seed 000 Table I and runtime comparison: PCG Algorithm 1, Algorithm 2 and Overlap-PCG
#     with the host and offload executors (and agg when NBC_AGG is set up), $PCG_RANKS ranks;
#  3. seed 000 noise study: Algorithm 2 vs Overlap-PCG under noise 50..200 us at 20 Hz..1 kHz.
# Every configuration runs $ROUNDS times (the summary takes medians), each timing a solve after
# $WARMUP untimed ones (--warmup: a fresh job's first few thousand calls are slow while V8 tiers
# up, BENCHMARKS.md "First calls and warm-up"). JSON in $OUT (bench/results/apps/), charts
# in $CHARTS (docs/img/) (scripts/apps-summary.mjs). PCG_PPN ranks per node (default 2);
# CG_RANKS="" skips the CG, NOISES="" the noise study.
# Tiny check: ROUNDS=1 WARMUP=0 CG_N=8 PCG_N=8 CG_RANKS="2" PCG_RANKS=2 NOISES="100us@1kHz" bash scripts/bench-apps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
nbc() { node dist/cli/nbc.js "$@"; }
out=${OUT:-bench/results/apps}
rounds=${ROUNDS:-3}
warmup=${WARMUP:-3}
charts=${CHARTS:-docs/img}
mkdir -p "$out" "$charts"
pcg_ppn=${PCG_PPN:-2}
cg_n=${CG_N:-40}
pcg_n=${PCG_N:-30}
read -r -a cg_ranks <<<"${CG_RANKS-2 4 8 16}"
read -r -a pcg_ranks <<<"${PCG_RANKS:-4 8}"
read -r -a noises <<<"${NOISES-50us@20Hz 200us@20Hz 50us@1kHz 200us@1kHz}"
executors=(host offload)
[ -n "${NBC_AGG:-}" ] && executors+=(agg)

for round in $(seq 1 "$rounds"); do
  # 1. CG, one rank per node, so every halo message crosses the emulated link.
  for link in gige ib; do
    for ranks in ${cg_ranks[@]+"${cg_ranks[@]}"}; do
      for mode in blocking nonblocking; do
        nbc cg --ranks "$ranks" --ppn 1 --n "$cg_n" --link "$link" --mode "$mode" --test-interval 2000 --verify off --quiet \
          --warmup "$warmup" --json "$out/cg-$link-$ranks-$mode-r$round.json"
      done
    done
  done
  # 2. PCG variants x executors ($pcg_ppn ranks per node).
  for ranks in "${pcg_ranks[@]}"; do
    for variant in alg1 alg2 overlap; do
      for ex in "${executors[@]}"; do
        [ "$variant" != overlap ] && [ "$ex" != host ] && continue   # the blocking variants' allreduce: host only
        nbc pcg --ranks "$ranks" --ppn "$pcg_ppn" --n "$pcg_n" --link ib --variant "$variant" --executor "$ex" --verify off --quiet \
          --warmup "$warmup" --json "$out/pcg-$ranks-$variant-$ex-r$round.json"
      done
    done
  done
  # 3. Noise: Algorithm 2 vs Overlap-PCG (offload) on the largest PCG rank count.
  ranks=${pcg_ranks[-1]}
  for noise in ${noises[@]+"${noises[@]}"}; do
    for variant in alg2 overlap; do
      ex=$([ "$variant" = overlap ] && echo offload || echo host)
      nbc pcg --ranks "$ranks" --ppn "$pcg_ppn" --n "$pcg_n" --link ib --variant "$variant" --executor "$ex" --noise "$noise" --verify off --quiet \
        --warmup "$warmup" --json "$out/noise-$ranks-$variant-$noise-r$round.json"
    done
  done
done
node scripts/apps-summary.mjs "$out" "$charts"
