#!/usr/bin/env bash
# A non-root's working recv from the pool (reduce): interleaved A/B of two builds over ROUNDS
# rounds (default 3), beside the new build's allreduce of the same size, which does the same
# reduction and more messages (a ceiling a reduce should stay under).
#   bash scripts/ab-reduce-work.sh OLD_DIST NEW_DIST [ROUNDS]
# JSON in bench/results/reduce-work/; one line per round, layout and size.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-3}
out=bench/results/reduce-work
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for cfg in 2:2 2:1; do
    ranks=${cfg%:*}; ppn=${cfg#*:}
    node "$old/cli/nbc.js" bench reduce --ranks "$ranks" --ppn "$ppn" --sizes 256K,1M,2M --iters 300 --json "$out/reduce-old-$ranks-$ppn-r$r.json" > /dev/null
    node "$new/cli/nbc.js" bench reduce --ranks "$ranks" --ppn "$ppn" --sizes 256K,1M,2M --iters 300 --json "$out/reduce-new-$ranks-$ppn-r$r.json" > /dev/null
    node "$new/cli/nbc.js" bench allreduce --ranks "$ranks" --ppn "$ppn" --sizes 256K,1M,2M --iters 300 --json "$out/allreduce-new-$ranks-$ppn-r$r.json" > /dev/null
    node -e '
      const [dir, tag] = process.argv.slice(1);
      const lat = (f) => JSON.parse(require("fs").readFileSync(`${dir}/${f}-${tag}.json`, "utf8")).results.map((x) => [x.bytes, x.latencyUs]);
      const o = lat("reduce-old"), n = lat("reduce-new"), a = lat("allreduce-new");
      console.log(`${tag}: ` + o.map(([b, u], i) => `${b >> 10} KiB reduce ${u.toFixed(0)} -> ${n[i][1].toFixed(0)} us (allreduce ${a[i][1].toFixed(0)})`).join(" | "));
    ' "$out" "$ranks-$ppn-r$r"
  done
done
