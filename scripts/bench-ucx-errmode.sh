#!/usr/bin/env bash
# The UCX error mode's price and gain, interleaved over ROUNDS rounds: `nbc bench p2p` between
# 2 emulated nodes over UCX with NBC_UCX_ERR_MODE=peer (default) and none, bandwidth of single
# messages (window 1) and of streams (window 16) from 128 KiB to 4 MiB. With peer error
# handling UCX 1.13 sends rendezvous payloads over tcp as active messages copied on arrival;
# without it by put_zcopy (docs/p2p.md, "Between nodes over UCX"). JSON in
# bench/results/ucx/err-mode/; summary (GB/s per round, none / peer) on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/ucx/err-mode
mkdir -p "$out"
rounds=${ROUNDS:-3}
for r in $(seq 1 "$rounds"); do
  for w in 1 16; do
    for m in peer none; do
      NBC_UCX_ERR_MODE=$m node dist/cli/nbc.js bench p2p --ranks 2 --ppn 1 --transport ucx --sizes 128K,512K,1M,4M \
        --iters 400 --window "$w" --json "$out/w$w-$m-r$r.json" > /dev/null
    done
  done
done
node -e '
const [dir, rounds] = process.argv.slice(1);
const j = (f) => JSON.parse(require("fs").readFileSync(`${dir}/${f}`, "utf8"));
for (const w of [1, 16]) for (const bytes of [131072, 524288, 1048576, 4194304]) {
  const cells = [];
  for (let r = 1; r <= Number(rounds); r++) {
    const bw = (m) => j(`w${w}-${m}-r${r}.json`).results.find((x) => x.bytes === bytes).bandwidthGBs;
    cells.push(`${bw("peer").toFixed(2)} -> ${bw("none").toFixed(2)} (${(bw("none") / bw("peer")).toFixed(2)}x)`);
  }
  console.log(`window ${w}, ${bytes} B: peer -> none GB/s: ${cells.join(" | ")}`);
}' "$out" "$rounds"
