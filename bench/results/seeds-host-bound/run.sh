#!/usr/bin/env bash
# Seed 003's host-based allreduce on 128 hosts (switchib2), every host algorithm the library
# has, 8 B to 4 KiB: how fast the latency may grow with size over the preset's links, against
# Table V's host column (5.82 us at 8 B, 46.93 at 4 KiB: 8.06x). Run from the repository root.
set -euo pipefail
out=bench/results/seeds-host-bound
for a in recursive-doubling knomial:2 knomial:4 knomial:8 rabenseifner; do
  node dist/cli/nbc.js sim allreduce --ranks 128 --ppn 1 --executor host --params switchib2 \
    --sizes 8,16,32,64,128,256,512,1K,2K,4K --algorithm "$a" --json "$out/${a/:/-}.json" 2>/dev/null >/dev/null
done
node -e '
const fs = require("fs");
const paper = { 8: 5.82, 256: 8.99, 512: 11.11, 1024: 18.04, 2048: 33.61, 4096: 46.93 };
const rows = [["algorithm", ...Object.keys(paper).map((b) => b + " B"), "4 KiB / 8 B"]];
rows.push(["Table V, host based", ...Object.values(paper).map((v) => v.toFixed(2)), (paper[4096] / paper[8]).toFixed(2)]);
for (const f of fs.readdirSync(process.argv[1]).filter((f) => f.endsWith(".json")).sort()) {
  const r = JSON.parse(fs.readFileSync(process.argv[1] + "/" + f, "utf8"));
  const at = (b) => r.results.find((x) => x.bytes === b).latencyUs;
  rows.push([f.replace(".json", ""), ...Object.keys(paper).map((b) => at(+b).toFixed(2)), (at(4096) / at(8)).toFixed(2)]);
}
for (const row of rows) console.log("| " + row.join(" | ") + " |");
' "$out" | tee "$out/summary.md"
