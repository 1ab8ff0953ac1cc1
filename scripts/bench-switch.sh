#!/usr/bin/env bash
# npm run bench:switch: the selection table (src/coll/select.ts, RULES) against every algorithm
# forced, measured side by side.
#
# For each collective and layout (ranks:ppn), every host algorithm a call can name is measured
# with `nbc bench --algorithm`, and the call without one ("auto": what a user gets, lean paths
# included) beside them, in ROUNDS rounds; each round runs the layout's variants back to back in
# a rotated order (this VM drifts up to 2x in minutes, so only neighbours in time compare). The
# summary (scripts/switch-summary.mjs) takes each variant's median over rounds and reports, per
# size, the fastest forced algorithm, what the rules pick, and auto / fastest: the selection's
# regret. JSON in OUT (default bench/results/switch), summary.json and summary.md there, charts
# in OUT/charts.
#
# COLLS, CONFIGS, SIZES, ROUNDS (default 3) and ITERS (default 300) replace the defaults;
# SUMMARY_ONLY=1 summarises what OUT holds.
set -euo pipefail
cd "$(dirname "$0")/.."
NBC="node dist/cli/nbc.js"
OUT=${OUT:-bench/results/switch}
COLLS=${COLLS:-"allreduce bcast reduce allgather alltoall reduceScatterBlock"}
CONFIGS=${CONFIGS:-"2:2 4:4 2:1 4:2"}
SIZES=${SIZES:-"8,1K,4K,16K,64K,256K,1M"}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-300}
mkdir -p "$OUT"

. scripts/host-algorithms.sh

if [[ -z "${SUMMARY_ONLY:-}" ]]; then
  for r in $(seq 1 "$ROUNDS"); do
    for coll in $COLLS; do
      for cfg in $CONFIGS; do
        ranks=${cfg%:*}; ppn=${cfg#*:}; nodes=$(( (ranks + ppn - 1) / ppn ))
        read -r -a variants <<< "auto $(host_algorithms "$coll" "$nodes")"
        n=${#variants[@]}
        line="round $r $coll $cfg:"
        for k in $(seq 0 $((n - 1))); do
          alg=${variants[$(( (k + r - 1) % n ))]}
          force=(); [[ $alg != auto ]] && force=(--algorithm "$alg")
          f="$OUT/$coll-$ranks-$ppn-$alg-r$r.json"
          if $NBC bench "$coll" --ranks "$ranks" --ppn "$ppn" "${force[@]}" --sizes "$SIZES" --iters "$ITERS" \
              --label "$alg" --json "$f" > /dev/null 2> "$OUT/last.err"; then
            line+=" $alg"
          else
            line+=" $alg(failed: $(tail -1 "$OUT/last.err"))"
            rm -f "$f"
          fi
        done
        echo "$line"
      done
    done
  done
  rm -f "$OUT/last.err"
fi
node scripts/switch-summary.mjs "$OUT"
