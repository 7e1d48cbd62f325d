/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Benchmark: the default simulation (500 workloads x 100 jobs, 9 cuts
 * 0..40 %, all six strategies including the oracle) on a library of 25
 * synthetic jobs with six-point concave curves, on one worker. Prints wall
 * and CPU seconds of pfi_sim_run alone; then the same for the strategies
 * equal, pfi-aware and oracle, beside the one-sort-one-pass limit of that
 * work: the same workloads drawn from the same stream, each workload's
 * hull segments sorted once (a radix sort) with prefix sums, and per cut
 * one binary search for the oracle and one pass over the jobs per strategy
 * (a proportional cut and the throughput at it), nothing else. The ratio
 * says how close the simulation comes to that limit.
 */
#include <gsl/gsl_rng.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The limit kernel (see the head of the file); returns a checksum. */
static double limit_kernel(const struct pfi_problem *lib, const double *pfi,
                           size_t W, size_t S, const double *cuts, size_t C,
                           unsigned long seed) {
  size_t L = lib->njobs, maxseg = 0;
  for (size_t j = 0; j < L; j++)
    maxseg += lib->off[j + 1] - lib->off[j];
  maxseg *= S;
  uint64_t *key = malloc(maxseg * sizeof *key), *k2 = malloc(maxseg * 8);
  double *len = malloc(maxseg * sizeof *len), *pre = malloc((maxseg + 1) * 8);
  double *val = malloc((maxseg + 1) * sizeof *val);
  size_t *pick = malloc(S * sizeof *pick);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, seed);
  double check = 0;
  for (size_t w = 0; w < W; w++) {
    size_t m = 0;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < S; i++) {
      size_t j = pick[i] = (size_t)gsl_rng_uniform_int(rng, L);
      size_t a = lib->off[j], b = lib->off[j + 1];
      lo += lib->x[a];
      hi += lib->x[b - 1];
      for (size_t k = a; k + 1 < b; k++, m++) {
        double sl = (lib->y[k + 1] - lib->y[k]) / (lib->x[k + 1] - lib->x[k]);
        uint64_t u;
        memcpy(&u, &sl, 8);
        /* descending slope, segment number in the low 20 bits */
        key[m] = (~u & ~((1ULL << 20) - 1)) | m;
      }
    }
    /* LSD radix sort, 8 bits a pass, on the keys. */
    for (int sh = 0; sh < 64; sh += 8) {
      size_t cnt[256] = {0};
      for (size_t i = 0; i < m; i++)
        cnt[(key[i] >> sh) & 255]++;
      size_t sum = 0;
      for (int d = 0; d < 256; d++) {
        size_t t = cnt[d];
        cnt[d] = sum;
        sum += t;
      }
      for (size_t i = 0; i < m; i++)
        k2[cnt[(key[i] >> sh) & 255]++] = key[i];
      uint64_t *t = key;
      key = k2;
      k2 = t;
    }
    pre[0] = val[0] = 0;
    for (size_t i = 0; i < m; i++) {
      len[i] = 1.0 + (double)(key[i] & 1023); /* stands for the lengths */
      pre[i + 1] = pre[i] + len[i];
      val[i + 1] = val[i] + len[i] * 0.5;
    }
    for (size_t c = 0; c < C; c++) {
      double B = (1 - cuts[c]) * hi, R = B - lo;
      size_t a = 0, b = m;
      while (b - a > 1) {
        size_t mid = (a + b) / 2;
        if (pre[mid] <= R)
          a = mid;
        else
          b = mid;
      }
      check += val[a];
      for (int s = 0; s < 2; s++) {
        double t = 0, cut = hi - B;
        for (size_t i = 0; i < S; i++) {
          size_t j = pick[i];
          double h = pfi_problem_hi(lib, j);
          double wgt = s ? h * pfi[j] : h;
          t += pfi_problem_eval(lib, j, h - cut * wgt / (hi + 1e-300));
        }
        check += t;
      }
    }
  }
  gsl_rng_free(rng);
  free(key);
  free(k2);
  free(len);
  free(pre);
  free(val);
  free(pick);
  return check;
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
  /* The table's work on one worker, and its limit. */
  cfg.strategies = (1u << PFI_STRAT_EQUAL) | (1u << PFI_STRAT_PFI_AWARE) |
                   (1u << PFI_STRAT_ORACLE);
  cfg.threads = 1;
  double best_sim = 1e9, best_lim = 1e9, chk = 0;
  for (int rep = 0; rep < 3; rep++) {
    double a = cpu_now();
    if (pfi_sim_run(&lib, &in, &cfg, &res, &err) != 0) {
      fprintf(stderr, "bench_sim: %s\n", err.msg);
      return 1;
    }
    double b = cpu_now();
    pfi_sim_result_release(&res);
    chk = limit_kernel(&lib, pfi, 500, 100, cuts, 9, 1);
    double c = cpu_now();
    if (b - a < best_sim)
      best_sim = b - a;
    if (c - b < best_lim)
      best_lim = c - b;
  }
  printf("equal, pfi-aware, oracle (500 x 100 jobs, 9 cuts), one worker: "
         "%.4f s CPU; one-sort-one-pass limit %.4f s CPU (checksum %.3g): "
         "%.2fx the limit\n",
         best_sim, best_lim, chk, best_sim / best_lim);
  pfi_problem_release(&lib);
  return 0;
}
