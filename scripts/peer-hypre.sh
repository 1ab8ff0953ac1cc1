#!/usr/bin/env bash
# hypre's own DS-PCG on the problem of `nbc pcg` (27-point Laplacian, N^3 unknowns per process,
# b = ones, x0 = 0, 2-norm tolerance), side by side with `nbc pcg --variant alg1` on the same
# process counts, for the per-iteration comparison of issue 14 (target: nbcoll <= 1.5x hypre).
# Needs Debian's libhypre-dev and an MPI (openmpi-bin, libopenmpi-dev); says so and exits 0
# when they are missing. N=${N:-40} PROCS="${PROCS:-1 2}" TOL=${TOL:-1e-8}.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-40}
tol=${TOL:-1e-8}
read -r -a procs <<<"${PROCS:-1 2}"
src=${HYPRE_PEER:-${NBC_PEERS:-../shared/peers}/hypre_pcg.c}
if ! dpkg -s libhypre-dev >/dev/null 2>&1; then
  echo "peer-hypre: libhypre-dev is not installed (apt-get install libhypre-dev); hypre not measured."
  hypre=""
elif ! command -v mpicc >/dev/null 2>&1; then
  echo "peer-hypre: mpicc not found (apt-get install libopenmpi-dev openmpi-bin); hypre not measured."
  hypre=""
elif [ ! -f "$src" ]; then
  echo "peer-hypre: $src not found (set NBC_PEERS, or HYPRE_PEER, to the peer programs); hypre not measured."
  hypre=""
else
  hypre=$(mktemp -d)/hypre_pcg
  mpicc -O2 "$src" -o "$hypre" -I/usr/include/hypre -lHYPRE -lm
fi
for p in "${procs[@]}"; do
  if [ -n "$hypre" ]; then
    mpirun --oversubscribe --allow-run-as-root -np "$p" "$hypre" "$n" "$tol"
  fi
  node dist/cli/nbc.js pcg --ranks "$p" --n "$n" --tol "$tol" --variant alg1 --verify off --quiet --json "bench/results/apps/peer-nbc-pcg-$p.json"
  node -e "const r=require('./bench/results/apps/peer-nbc-pcg-$p.json'); console.log('nbc pcg alg1: procs ' + r.ranks + ' iterations ' + r.iterations + ' final_rel_res ' + r.finalRelResidual.toExponential(3) + ' per_iter_ms ' + r.perIterationMs.toFixed(4) + ' matvec_GBs ' + r.matvecGBs.toFixed(2))"
done
