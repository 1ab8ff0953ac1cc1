#!/usr/bin/env bash
# `npm run bench:ucx`: issue 12's "inter-node traffic at C speed", measured side by side in one
# run, interleaved over ROUNDS rounds (this VM drifts; compare ratios within a round):
#   - p2p 2 nodes x 1 rank, UCX transport, with ucx_perftest's tag_lat / tag_bw (tcp on
#     loopback; tag_bw also with peer error handling, -e) measured in the same run by
#     `nbc bench p2p` itself;
#   - the UCX rows twice: as nbcoll runs by default (NBC_UCX_ERR_MODE=peer) and without peer
#     error handling (`ucx-none`: NBC_UCX_ERR_MODE=none, as MPI runs UCX);
#   - p2p over the pure-JS TCP path, beside the raw Node TCP ping-pong;
#   - allreduce 2 nodes x 1 rank (8 B, 512 KiB) and 2 nodes x 4 ranks (8 B), nbcoll over UCX
#     and over TCP, beside Open MPI's mpibench (../shared/peers) under
#     `mpirun --mca btl self,tcp` (8 processes, --oversubscribe, for the 8-rank row).
# Open MPI rows are skipped, saying so, where mpicc/mpirun are missing; UCX rows where the
# native addon has no UCX. JSON in bench/results/ucx/; summary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/ucx
mkdir -p "$out"
rounds=${ROUNDS:-3}
nbc="node dist/cli/nbc.js"
. scripts/peer-mpibench.sh
transports="tcp"
if $nbc info --json | node -e 'const l=JSON.parse(require("fs").readFileSync(0,"utf8"));process.exit(l.find(x=>x.what==="transport ucx")?.available?0:1)'; then
  transports="ucx ucx-none tcp"
else
  echo "UCX transport not available here (nbc info says why): measuring the TCP path only"
fi
export OMPI_MCA_btl_tcp_if_include=lo
for r in $(seq 1 "$rounds"); do
  for v in $transports; do
    t=${v%%-*}
    mode=peer
    if [ "$v" = ucx-none ]; then mode=none; fi
    export NBC_UCX_ERR_MODE=$mode
    $nbc bench p2p --ranks 2 --ppn 1 --transport "$t" --sizes 8,1M --iters 2000 --json "$out/p2p-$v-r$r.json" | tee "$out/p2p-$v-r$r.txt" | grep -E "^UCX limit" || true
    $nbc bench allreduce --ranks 2 --ppn 1 --transport "$t" --sizes 8,512K --iters 1000 --json "$out/allreduce-2x1-$v-r$r.json" >/dev/null
    $nbc bench allreduce --ranks 8 --ppn 4 --transport "$t" --sizes 8 --iters 1000 --json "$out/allreduce-2x4-$v-r$r.json" >/dev/null
  done
  unset NBC_UCX_ERR_MODE
  if [ -n "$mpi" ]; then
    mpirun -np 2 --mca btl self,tcp "$mpi" allreduce 524288 | grep -E '^allreduce,(8|524288),' > "$out/allreduce-2x1-openmpi-r$r.csv"
    mpirun -np 8 --oversubscribe --mca btl self,tcp "$mpi" allreduce 8 | grep -E '^allreduce,8,' > "$out/allreduce-2x4-openmpi-r$r.csv"
  fi
done
node scripts/ucx-summary.mjs "$out" "$rounds" "$transports"
