#!/usr/bin/env bash
# `npm run bench:yield`: issue 12's "waits that yield", measured. One node, 4 ranks on this
# 2-core machine (oversubscribed): allreduce 8 B and barrier with the yield phase off (the
# pure-JS wait: spin 20 us, park), with yields after a 20 us spin (NBC_YIELD_US=1000, spin20),
# and yielding from the first idle poll for NBC_YIELD_US = 50, 200, 1000, 5000, interleaved
# over ROUNDS rounds, beside Open MPI's `mpirun -np 4 --oversubscribe` in the same rounds when
# mpicc is present (../shared/peers/mpibench.c). JSON in bench/results/yield/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/yield
mkdir -p "$out"
rounds=${ROUNDS:-3}
iters=${ITERS:-2000}
. scripts/peer-mpibench.sh
for r in $(seq 1 "$rounds"); do
  for cfg in off spin20 50 200 1000 5000; do
    env=(NBC_YIELD_US="$cfg" NBC_SPIN_US=0)
    [ "$cfg" = off ] && env=(NBC_NO_NATIVE=1)
    [ "$cfg" = spin20 ] && env=(NBC_YIELD_US=1000 NBC_SPIN_US=20)
    env "${env[@]}" node dist/cli/nbc.js bench allreduce --ranks 4 --sizes 8 --iters "$iters" --json "$out/allreduce-$cfg-r$r.json" >/dev/null
    env "${env[@]}" node dist/cli/nbc.js bench barrier --ranks 4 --iters "$iters" --json "$out/barrier-$cfg-r$r.json" >/dev/null
  done
  if [ -n "$mpi" ]; then
    mpirun -np 4 --oversubscribe --mca btl self,vader "$mpi" allreduce 8 | tail -1 | cut -d, -f3 > "$out/allreduce-openmpi-r$r.txt"
    mpirun -np 4 --oversubscribe --mca btl self,vader "$mpi" barrier 8 | tail -1 | cut -d, -f3 > "$out/barrier-openmpi-r$r.txt"
  fi
done
node -e '
  const fs = require("node:fs");
  const [dir, rounds] = [process.argv[1], Number(process.argv[2])];
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  for (const op of ["allreduce", "barrier"]) {
    const mpi = [];
    for (let r = 1; r <= rounds; r++) if (fs.existsSync(`${dir}/${op}-openmpi-r${r}.txt`)) mpi.push(Number(fs.readFileSync(`${dir}/${op}-openmpi-r${r}.txt`, "utf8")));
    const peer = mpi.length ? med(mpi) : null;
    const line = [`${op} 4 ranks / 2 cores:`];
    for (const cfg of ["off", "spin20", "50", "200", "1000", "5000"]) {
      const xs = [];
      for (let r = 1; r <= rounds; r++) xs.push(JSON.parse(fs.readFileSync(`${dir}/${op}-${cfg}-r${r}.json`, "utf8")).results[0].latencyUs);
      line.push(`yield ${cfg} ${xs.map((x) => x.toFixed(1)).join("/")} us${peer ? ` (${(med(xs) / peer).toFixed(2)}x)` : ""}`);
    }
    if (peer) line.push(`Open MPI ${mpi.map((x) => x.toFixed(1)).join("/")} us`);
    console.log(line.join(" | "));
  }' "$out" "$rounds"
