/* Open MPI's side of scripts/yield-floor.mjs: ITERS iterations of MPI_Barrier then an 8 B
 * MPI_Allreduce, back to back after 2000 untimed ones; prints the time per iteration, us.
 * BENCHMARKS.md, "Collectives next to Open MPI" (4 ranks on 2 cores).
 * Build: mpicc -O2 mpiloop.c -o mpiloop
 * Run:   mpirun --oversubscribe -np 4 --mca btl self,vader ./mpiloop [ITERS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int iters = argc > 1 ? atoi(argv[1]) : 30000;
  double x = 1.0, y;
  for (int i = 0; i < 2000; i++) { MPI_Barrier(MPI_COMM_WORLD); MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) { MPI_Barrier(MPI_COMM_WORLD); MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
  double us = (MPI_Wtime() - t0) * 1e6 / iters;
  if (rank == 0) printf("{\"ranks\":4,\"iters\":%d,\"perIterationUs\":%.2f}\n", iters, us);
  MPI_Finalize();
  return 0;
}
