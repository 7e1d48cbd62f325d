/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Benchmark: the default simulation (500 workloads x 100 jobs, 9 cuts
 * 0..40 %, all six strategies including the oracle) on a library of 25
 * synthetic jobs with six-point concave curves, on one core. Prints wall and
 * CPU seconds of pfi_sim_run alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pfi/sim.h"

static unsigned long long rs = 0x9E3779B97F4A7C15ULL;
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

int main(void) {
  struct pfi_problem lib;
  pfi_problem_init(&lib);
  struct pfi_error err;
  double pfi[25], dram[25];
  int moe[25];
  for (int i = 0; i < 25; i++) {
    double x[6], y[6], tmax = 1000 + 4000 * urand(), k = 1.1 + 1.5 * urand();
    double gpus = (i % 3 == 0) ? 32 : (i % 3 == 1) ? 16 : 8;
    double pmax = gpus * (600 + 80 * urand());
    for (int j = 0; j < 6; j++) {
      double u = (200.0 + 100.0 * j) / 700.0;
      x[j] = pmax * u;
      y[j] = tmax * (1 - (1 - u) / k * (1 + 0.5 * (1 - u)));
    }
    if (pfi_problem_add(&lib, x, y, 6, x[0], x[5], &err) != 0)
      return 1;
    pfi[i] = k * (0.9 + 0.2 * urand());
    dram[i] = 0.1 + 0.3 * urand();
    moe[i] = i % 4 == 3;
  }
  double cuts[9];
  for (int c = 0; c < 9; c++)
    cuts[c] = 0.05 * c;
  struct pfi_alloc_inputs in = {pfi, dram, moe};
  struct pfi_sim_config cfg = {.workloads = 500,
                               .size = 100,
                               .cuts = cuts,
                               .ncuts = 9,
                               .strategies = (1u << PFI_STRAT__COUNT) - 1,
                               .seed = 1};
  struct pfi_sim_result res;
  double t0 = now();
  clock_t c0 = clock();
  if (pfi_sim_run(&lib, &in, &cfg, &res, &err) != 0) {
    fprintf(stderr, "bench_sim: %s\n", err.msg);
    return 1;
  }
  double t1 = now();
  clock_t c1 = clock();
  printf("default simulation (500 x 100 jobs, 9 cuts, 6 strategies incl. "
         "oracle): %.3f s wall, %.3f s CPU\n",
         t1 - t0, (double)(c1 - c0) / CLOCKS_PER_SEC);
  printf("check: pfi-aware gap at 40 %%: %.3f tokens/s per job\n",
         res.cell[PFI_STRAT_PFI_AWARE][8].gap_mean);
  pfi_sim_result_release(&res);
  pfi_problem_release(&lib);
  return 0;
}
