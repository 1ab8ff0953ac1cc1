#!/usr/bin/env bash
# The UCX transport's own bound on the 2 x 1 allreduce at 8 B, measured side by side in
# ROUNDS interleaved rounds (default 5): ucx_perftest's tag_lat (8 B one way, median, over
# UCX_TLS=tcp on loopback, as nbcoll's emulated nodes run UCX), Open MPI's 2-process allreduce
# of 8 B over btl tcp (the target's peer) and over pml ucx (UCX_TLS=tcp,self, like for like),
# and nbcoll's `nbc bench allreduce --ranks 2 --ppn 1 --transport ucx`.
# A 2-rank allreduce is one exchange: each rank's call lasts at least one message's one-way
# latency, so tag_lat is a floor for any allreduce over UCX's tcp transport.
# Usage: bash bench/results/ucx-bound/run.sh   (from the repository root, after npm run build)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=bench/results/ucx-bound
rounds=${ROUNDS:-5}
. scripts/peer-mpibench.sh
[ -n "$mpi" ] || { echo "Open MPI is needed for this run"; exit 1; }
command -v ucx_perftest >/dev/null || { echo "ucx_perftest is needed (ucx-utils)"; exit 1; }
export OMPI_MCA_btl_tcp_if_include=lo
: > "$out/rounds.txt"
for r in $(seq 1 "$rounds"); do
  port=$((20000 + RANDOM % 20000))
  UCX_TLS=tcp ucx_perftest -p $port >/dev/null 2>&1 &
  srv=$!
  lat=""
  for a in $(seq 1 40); do
    lat=$(UCX_TLS=tcp ucx_perftest 127.0.0.1 -p $port -t tag_lat -s 8 -n 20000 2>/dev/null | awk '/^Final:/{print $3}') && [ -n "$lat" ] && break
    sleep 0.1
  done
  kill $srv 2>/dev/null || true; wait $srv 2>/dev/null || true
  tcp=$(mpirun -np 2 --mca btl self,tcp "$mpi" allreduce 8 | awk -F, '$1=="allreduce" && $2==8 {print $3}')
  pml=$(mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self "$mpi" allreduce 8 | awk -F, '$1=="allreduce" && $2==8 {print $3}')
  node dist/cli/nbc.js bench allreduce --ranks 2 --ppn 1 --transport ucx --sizes 8 --iters 20000 --json "$out/nbc-r$r.json" >/dev/null
  nbc=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).results[0].latencyUs.toFixed(2))' "$out/nbc-r$r.json")
  echo "round $r: ucx_perftest tag_lat 8 B one way $lat us; Open MPI allreduce 8 B btl tcp $tcp us, pml ucx $pml us; nbcoll over UCX $nbc us" | tee -a "$out/rounds.txt"
done
