#!/usr/bin/env bash
# Two of V8's tiering budgets against the default on crowded cores: `nbc pcg` cold (--warmup 0)
# and warm (--warmup 5) on 4 x 16^3 and 3 x 20^3, all three variants, 3 interleaved rounds;
# ms per iteration per round. Usage: bash bench/results/cold-bound/budgets/run.sh (after npm run build)
cd "$(dirname "$0")/../../../.."
out=bench/results/cold-bound/budgets/rounds.txt; : > $out
for r in 1 2 3; do
 for shape in "4 16" "3 20"; do set -- $shape; R=$1; N=$2
  for variant in alg1 alg2 overlap; do
   for warm in 0 5; do
    for c in "" "--always-sparkplug --interrupt-budget=200000" "--always-sparkplug --interrupt-budget=400000"; do
      v=$(NBC_NODE_ARGS="$c" node dist/cli/nbc.js pcg --ranks $R --n $N --variant $variant --warmup $warm --verify off 2>&1 | grep -o "[0-9.]* ms per iteration" | cut -d' ' -f1)
      echo "${R}x$N|$variant|w$warm|$c|$v" >> $out
    done
   done
  done
 done
done
awk -F'|' '{k=$1" "$2" "$3" ["$4"]"; a[k]=a[k]" "$5} END {for (k in a) print k, a[k]}' $out | sort
