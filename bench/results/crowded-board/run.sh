#!/usr/bin/env bash
# The flag board against the rings on 4 ranks of 2 cores, beside Open MPI and the floor:
# a loop of barriers and 8 B allreduces (scripts/barrier-allreduce-loop-job.mjs, nbcoll with
# the board, the default, and with NBC_FLAT=0), Open MPI's same loop (bench/peers/mpiloop.c,
# vader, oversubscribed) and the floor (scripts/yield-floor.mjs), ROUNDS rounds in rotation;
# then 8 and 16 ranks, board against rings. Run from the repository root after npm run build.
set -euo pipefail
out=bench/results/crowded-board
rounds=${ROUNDS:-5}
iters=${ITERS:-30000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bin=$(mktemp -d)
mpicc -O2 bench/peers/mpiloop.c -o "$bin/mpiloop"
nbc="node dist/cli/nbc.js"
: > "$out/rounds.txt"
for r in $(seq 1 "$rounds"); do
  echo "round $r" >> "$out/rounds.txt"
  echo "floor $(node scripts/yield-floor.mjs "$iters" 4)" >> "$out/rounds.txt"
  echo "ompi $(mpirun --oversubscribe -np 4 --mca btl self,vader "$bin/mpiloop" "$iters" 2>/dev/null | tail -1)" >> "$out/rounds.txt"
  echo "nbc-board $($nbc run -n 4 scripts/barrier-allreduce-loop-job.mjs "$iters" | tail -1)" >> "$out/rounds.txt"
  echo "nbc-rings $(NBC_FLAT=0 $nbc run -n 4 scripts/barrier-allreduce-loop-job.mjs "$iters" | tail -1)" >> "$out/rounds.txt"
done
for n in 8 16; do
  for r in 1 2; do
    echo "$n ranks, board $($nbc run -n "$n" scripts/barrier-allreduce-loop-job.mjs $((iters / 3)) | tail -1)" >> "$out/rounds.txt"
    echo "$n ranks, rings $(NBC_FLAT=0 $nbc run -n "$n" scripts/barrier-allreduce-loop-job.mjs $((iters / 3)) | tail -1)" >> "$out/rounds.txt"
  done
done
rm -rf "$bin"
cat "$out/rounds.txt"
