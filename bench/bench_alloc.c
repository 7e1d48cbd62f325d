/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Benchmark: the exact oracle and the equal-weight strategy on 1,000,000
 * jobs with six-point curves (a 30 % cut), once with concave curves and once
 * with noisy curves of which about half are not concave. Curves are drawn
 * from a fixed seed; only the solve is timed. Prints wall and CPU seconds.
 * Usage: bench_alloc [JOBS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pfi/alloc.h"
#include "pfi/oracle.h"

static unsigned long long rs = 88172645463325252ULL;
static double urand(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (double)(rs >> 11) / 9007199254740992.0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int build(struct pfi_problem *p, size_t n, int noisy) {
  struct pfi_error err;
  pfi_problem_clear(p);
  for (size_t i = 0; i < n; i++) {
    /* A job of 8 GPUs at caps 200..700 W: power about 0.95 of the cap,
     * throughput concave in power with a job-specific PFI-like bend. */
    double x[6], y[6], tmax = 1000 + 4000 * urand(), k = 1.1 + 1.5 * urand();
    double pmax = 8 * (600 + 80 * urand());
    for (int j = 0; j < 6; j++) {
      double u = (200.0 + 100.0 * j) / 700.0;
      x[j] = pmax * u;
      double t = 1 - (1 - u) / k * (1 + 0.5 * (1 - u));
      if (noisy)
        t *= 1 + 0.01 * (urand() - 0.5);
      y[j] = tmax * t;
    }
    if (pfi_problem_add(p, x, y, 6, x[0], x[5], &err) != 0) {
      fprintf(stderr, "bench_alloc: %s\n", err.msg);
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
  struct pfi_problem p;
  pfi_problem_init(&p);
  double *pw = malloc(n * sizeof *pw);
  if (!pw)
    return 1;
  for (int noisy = 0; noisy <= 1; noisy++) {
    if (build(&p, n, noisy) < 0)
      return 1;
    double lo, hi;
    pfi_problem_bounds(&p, &lo, &hi);
    double B = 0.7 * hi, tot;
    struct pfi_error err;
    struct pfi_oracle_stats st;
    double t0 = now();
    clock_t c0 = clock();
    if (pfi_oracle_solve(&p, B, pw, &tot, &st, &err) != 0) {
      fprintf(stderr, "bench_alloc: %s\n", err.msg);
      return 1;
    }
    double t1 = now();
    clock_t c1 = clock();
    if (pfi_alloc_run(&p, PFI_STRAT_EQUAL, B, NULL, pw, &err) != 0) {
      fprintf(stderr, "bench_alloc: %s\n", err.msg);
      return 1;
    }
    double t2 = now();
    clock_t c2 = clock();
    printf("%zu jobs, %s curves, 30 %% cut: oracle %.3f s wall %.3f s CPU "
           "(%zu nodes), equal %.3f s wall %.3f s CPU\n",
           n, noisy ? "noisy (non-concave)" : "concave", t1 - t0,
           (double)(c1 - c0) / CLOCKS_PER_SEC, st.nodes, t2 - t1,
           (double)(c2 - c1) / CLOCKS_PER_SEC);
  }
  free(pw);
  pfi_problem_release(&p);
  return 0;
}
