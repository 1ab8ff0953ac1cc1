// Beside a compute loop pinned to the same core, how often does a poller get the core back?
// Both on CPU 0 for 1 s: mode 1 polls with sched_yield between polls (as a yielding engine or
// wire does), mode 2 sleeps 20 us between polls (nanosleep), mode 3 the same with a timer slack
// of 1 us. Prints the gaps between the poller's polls and how many blocks the compute loop did.
// gcc -O1 -o wake-beside wake-beside.c && for m in 1 2 3; do ./wake-beside $m; done
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  int mode = atoi(argv[1]);
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); sched_setaffinity(0, sizeof s, &s);
  pid_t p = fork();
  if (p == 0) { double t0 = now(); volatile double x = 0; long i = 0; while (now() - t0 < 1.5) { for (int k = 0; k < 10000; k++) x += k * 0.5; i++; } printf("hog %ld blocks\n", i); return 0; }
  if (mode == 3) prctl(PR_SET_TIMERSLACK, 1000);
  static double gaps[2000000]; int n = 0;
  double t0 = now(), last = t0;
  struct timespec ts = {0, 20000};
  while (now() - t0 < 1.0 && n < 2000000) {
    if (mode == 1) sched_yield(); else nanosleep(&ts, 0);
    double t = now(); gaps[n++] = (t - last) * 1e6; last = t;
  }
  qsort(gaps, n, sizeof(double), cmp);
  printf("mode %d polls %d gap us p50 %.1f p90 %.1f p99 %.1f max %.1f\n", mode, n, gaps[n/2], gaps[n*9/10], gaps[n*99/100], gaps[n-1]);
  wait(0);
  return 0;
}
