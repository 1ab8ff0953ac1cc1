#!/usr/bin/env bash
# UCX's tcp segment sizes, interleaved over ROUNDS rounds (default 5): the 2-rank allreduce
# between 2 emulated nodes over UCX with UCX's own segments (UCX_TCP_RX_SEG_SIZE=64k,
# UCX_TCP_TX_SEG_SIZE=8k) and with nbcoll's (runtime/native.ts UCX_TCP_TUNING: 64 KiB send segments),
# beside Open MPI's mpibench under `mpirun --mca btl self,tcp` in the same round.
# JSON and CSV in bench/results/ucx/segments/; one line per round on stdout (mpibench has no
# 64 KiB row). SUMMARY_ONLY=1 prints the summary of the files already there.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/peer-mpibench.sh
out=bench/results/ucx/segments
mkdir -p "$out"
rounds=${ROUNDS:-5}
bench() {
  node dist/cli/nbc.js bench allreduce --ranks 2 --ppn 1 --transport ucx --sizes 8,64K,512K --iters 500 --json "$1" > /dev/null
}
for r in $(seq 1 "$rounds"); do
  [ -n "${SUMMARY_ONLY:-}" ] && break
  UCX_TCP_RX_SEG_SIZE=64k UCX_TCP_TX_SEG_SIZE=8k bench "$out/ucx-default-r$r.json"
  bench "$out/nbcoll-r$r.json"
  if [ -n "$mpi" ]; then
    mpirun -np 2 --mca btl self,tcp "$mpi" allreduce 524288 | grep -E '^allreduce,(8|65536|524288),' > "$out/openmpi-r$r.csv"
  fi
done
node -e '
const fs = require("fs");
const [dir, rounds] = process.argv.slice(1);
const lat = (f) => Object.fromEntries(JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).results.map((x) => [x.bytes, x.latencyUs]));
const ompi = (r) => { const f = `${dir}/openmpi-r${r}.csv`; if (!fs.existsSync(f)) return null;
  return Object.fromEntries(fs.readFileSync(f, "utf8").trim().split("\n").map((l) => l.split(",")).map(([, b, us]) => [Number(b), Number(us)])); };
for (let r = 1; r <= Number(rounds); r++) {
  const a = lat(`ucx-default-r${r}.json`), b = lat(`nbcoll-r${r}.json`), o = ompi(r);
  const cell = (n) => `${a[n].toFixed(1)} -> ${b[n].toFixed(1)} us` + (o?.[n] !== undefined ? ` (Open MPI ${o[n].toFixed(1)}: ${(a[n] / o[n]).toFixed(2)}x -> ${(b[n] / o[n]).toFixed(2)}x)` : "");
  console.log(`round ${r}: 8 B ${cell(8)} | 64 KiB ${cell(65536)} | 512 KiB ${cell(524288)}`);
}' "$out" "$rounds"
