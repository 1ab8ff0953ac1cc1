/*
 * Every blocking collective `nbc bench` measures, under any MPI, with nbc bench's buffers and
 * rule, so that the two compare row by row (`npm run bench:ompi`, "every collective").
 *
 * BYTES is each rank's block, as nbc bench sizes it (src/bench/op-job.ts): bcast, reduce,
 * allreduce, scan and exscan move BYTES; gather, scatter and allgather BYTES per rank;
 * alltoall BYTES to each rank; reduce_scatter_block leaves BYTES on each rank. Doubles, sum,
 * root 0. Latency: a barrier before each call, the median over iterations of the max over
 * ranks (NBCBench), after as many untimed calls.
 *
 * Build: mpicc -O2 mpicolls.c -o mpicolls
 * Run:   mpirun -np 2 ./mpicolls 8 65536     (prints op,bytes,latency_us)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *OPS[] = {
  "barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
  "reduceScatterBlock", "scan", "exscan",
};

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void run(int op, double *s, double *r, int n, MPI_Comm c) {
  switch (op) {
    case 0: MPI_Barrier(c); break;
    case 1: MPI_Bcast(s, n, MPI_DOUBLE, 0, c); break;
    case 2: MPI_Reduce(s, r, n, MPI_DOUBLE, MPI_SUM, 0, c); break;
    case 3: MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, c); break;
    case 4: MPI_Gather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, c); break;
    case 5: MPI_Scatter(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, c); break;
    case 6: MPI_Allgather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, c); break;
    case 7: MPI_Alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, c); break;
    case 8: MPI_Reduce_scatter_block(s, r, n, MPI_DOUBLE, MPI_SUM, c); break;
    case 9: MPI_Scan(s, r, n, MPI_DOUBLE, MPI_SUM, c); break;
    case 10: MPI_Exscan(s, r, n, MPI_DOUBLE, MPI_SUM, c); break;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  long maxb = 8;
  for (int a = 1; a < argc; a++) if (atol(argv[a]) > maxb) maxb = atol(argv[a]);
  /* the largest buffer any op takes: BYTES from each of p ranks */
  size_t len = (size_t)(maxb / 8 + 1) * (size_t)p;
  double *s = malloc(len * sizeof(double)), *r = malloc(len * sizeof(double));
  for (size_t i = 0; i < len; i++) { s[i] = 1.0; r[i] = 0.0; }
  if (!rank) printf("op,bytes,latency_us\n");
  for (int op = 0; op < (int)(sizeof OPS / sizeof OPS[0]); op++) {
    for (int a = 1; a < argc; a++) {
      long bytes = atol(argv[a]);
      if (op == 0 && a > 1) break; /* a barrier has no size */
      int n = bytes / 8 > 0 ? (int)(bytes / 8) : 1;
      int iters = bytes <= 65536 ? 2000 : 200;
      double *t = malloc(sizeof(double) * iters), *tmax = malloc(sizeof(double) * iters);
      for (int i = 0; i < 2 * iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run(op, s, r, n, MPI_COMM_WORLD);
        if (i >= iters) t[i - iters] = MPI_Wtime() - t0;
      }
      MPI_Allreduce(t, tmax, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      qsort(tmax, iters, sizeof(double), cmpd);
      if (!rank) printf("%s,%ld,%.3f\n", OPS[op], op == 0 ? 8L : bytes, tmax[iters / 2] * 1e6);
      fflush(stdout);
      free(t);
      free(tmax);
    }
  }
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}
