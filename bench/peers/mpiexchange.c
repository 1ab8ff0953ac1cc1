/* Two processes exchange 256 KiB and 512 KiB each way (MPI_Sendrecv) and allreduce 512 KiB of
 * doubles, each after a barrier, 300 times; prints the medians, us, as JSON. Run over Open
 * MPI's TCP transport and over its UCX one, beside nbcoll's exchange (scripts/exchange-job.mjs),
 * it says what moving the data costs on each. BENCHMARKS.md, "Collectives next to Open MPI".
 * Build: mpicc -O2 mpiexchange.c -o mpiexchange
 * Run:   mpirun -np 2 --mca btl self,tcp ./mpiexchange
 *        mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self ./mpiexchange */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 300
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double median_us(double *t) { qsort(t, ITERS, sizeof(double), cmpd); return t[ITERS / 2] * 1e6; }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int peer = 1 - rank, n = 65536; /* 512 KiB of doubles */
  double *x = calloc(n, sizeof(double)), *y = calloc(n, sizeof(double));
  static double t[3][ITERS];
  for (int i = -30; i < ITERS; i++) {
    double t0;
    MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
    MPI_Sendrecv(x, n / 2, MPI_DOUBLE, peer, 1, y, n / 2, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (i >= 0) t[0][i] = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
    MPI_Sendrecv(x, n, MPI_DOUBLE, peer, 2, y, n, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (i >= 0) t[1][i] = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
    MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (i >= 0) t[2][i] = MPI_Wtime() - t0;
  }
  if (rank == 0) printf("{\"exchange256KiBUs\":%.1f,\"exchange512KiBUs\":%.1f,\"allreduce512KiBUs\":%.1f}\n", median_us(t[0]), median_us(t[1]), median_us(t[2]));
  free(x); free(y);
  MPI_Finalize();
  return 0;
}
