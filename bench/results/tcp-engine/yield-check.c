// Does a sched_yield spinner take time from a compute loop on the same core? Both pinned to
// CPU 0: mode 0 compute alone, 1 beside a sched_yield spinner, 2 beside a plain spinner (for 2 s).
// gcc -O1 -o yield-check yield-check.c && for m in 0 1 2; do ./yield-check $m; done
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int mode = argc > 1 ? atoi(argv[1]) : 0;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(0, &s);
  sched_setaffinity(0, sizeof s, &s);
  pid_t p = fork();
  if (p == 0) {
    double t0 = now();
    while (now() - t0 < 2.0)
      if (mode == 1) sched_yield();
    return 0;
  }
  if (mode == 0) kill(p, SIGKILL);
  double t0 = now();
  volatile double x = 0;
  for (long i = 0; i < 400000000; i++) x += i * 0.5;
  printf("mode %d compute %.3f s\n", mode, now() - t0);
  if (mode != 0) kill(p, SIGKILL);
  wait(0);
  return 0;
}
