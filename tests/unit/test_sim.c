/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Simulation: gaps on a two-job library worked by hand, reproducibility
 * from the seed, and the production-mix sampling weights.
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/sim.h"
#include "testutil.h"

/*
 * Job A: (100 W, 100), (200 W, 150): one slope 0.5. Job B: (100, 100),
 * (150, 140), (200, 160): slopes 0.8 then 0.4. A 20 % cut of two jobs
 * leaves 320 W of 400, 120 W above the floors.
 *  AA: oracle = equal = 200 + 0.5 * 120 = 260, gap 0.
 *  BB: oracle 200 + 0.8 * 100 + 0.4 * 20 = 288; equal, 160 W each,
 *      2 * (140 + 0.4 * 10) = 288: gap 0.
 *  AB: oracle fills B's 0.8 segment (50 W) and 70 W of A's 0.5:
 *      200 + 40 + 35 = 275; equal gives A 130 and B 144 = 274: gap 1,
 *      0.5 tokens/s per job.
 */
static void make_lib(struct pfi_problem *lib) {
  struct pfi_error err;
  double xa[] = {100, 200}, ya[] = {100, 150};
  double xb[] = {100, 150, 200}, yb[] = {100, 140, 160};
  pfi_problem_init(lib);
  assert_int_equal(pfi_problem_add(lib, xa, ya, 2, 100, 200, &err), 0);
  assert_int_equal(pfi_problem_add(lib, xb, yb, 3, 100, 200, &err), 0);
}

static void test_gaps_by_hand(void **state) {
  (void)state;
  struct pfi_problem lib;
  make_lib(&lib);
  double cuts[] = {0.0, 0.2};
  struct pfi_sim_config cfg = {.workloads = 1000,
                               .size = 2,
                               .cuts = cuts,
                               .ncuts = 2,
                               .strategies = (1u << PFI_STRAT_ORACLE) |
                                             (1u << PFI_STRAT_EQUAL),
                               .seed = 42};
  struct pfi_sim_result res;
  struct pfi_error err;
  assert_int_equal(pfi_sim_run(&lib, NULL, &cfg, &res, &err), 0);
  /* The same draws as the simulation: MT19937 seeded 42, uniform over the
   * two jobs, two per workload, in order. */
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 42);
  size_t mixed = 0;
  for (size_t w = 0; w < 1000; w++) {
    unsigned long a = gsl_rng_uniform_int(r, 2), b = gsl_rng_uniform_int(r, 2);
    mixed += a != b;
  }
  gsl_rng_free(r);
  double p = mixed / 1000.0, mean = 0.5 * p;
  /* Sample sd of values 0.5 (mixed) and 0: 0.5 sqrt(p (1 - p) n/(n - 1)). */
  double sd = 0.5 * sqrt(p * (1 - p) * 1000.0 / 999.0);
  double h = gsl_cdf_tdist_Pinv(0.975, 999) * sd / sqrt(1000.0);
  const struct pfi_sim_cell *eq = res.cell[PFI_STRAT_EQUAL];
  /* Tolerance: sums of a thousand values of a few hundred tokens/s. */
  ASSERT_NEAR(eq[1].gap_mean, mean, 1e-9);
  ASSERT_NEAR(eq[1].gap_lo, mean - h, 1e-9);
  ASSERT_NEAR(eq[1].gap_hi, mean + h, 1e-9);
  assert_true(eq[1].closed_defined);
  ASSERT_NEAR(eq[1].closed_pct, 0.0, 1e-9);
  ASSERT_NEAR(res.cell[PFI_STRAT_ORACLE][1].closed_pct, 100.0, 1e-9);
  /* No cut: no gap, and no share of it to close. */
  ASSERT_NEAR(eq[0].gap_mean, 0.0, 0);
  assert_false(eq[0].closed_defined);
  /* Only the requested strategies come back. */
  assert_null(res.cell[PFI_STRAT_PFI_AWARE]);
  pfi_sim_result_release(&res);

  /* Same seed, same numbers, bit for bit; another seed differs. */
  struct pfi_sim_result r1, r2;
  assert_int_equal(pfi_sim_run(&lib, NULL, &cfg, &r1, &err), 0);
  assert_int_equal(pfi_sim_run(&lib, NULL, &cfg, &r2, &err), 0);
  assert_memory_equal(r1.cell[PFI_STRAT_EQUAL], r2.cell[PFI_STRAT_EQUAL],
                      2 * sizeof(struct pfi_sim_cell));
  pfi_sim_result_release(&r2);
  cfg.seed = 43;
  assert_int_equal(pfi_sim_run(&lib, NULL, &cfg, &r2, &err), 0);
  assert_true(r1.cell[PFI_STRAT_EQUAL][1].gap_mean !=
              r2.cell[PFI_STRAT_EQUAL][1].gap_mean);
  pfi_sim_result_release(&r1);
  pfi_sim_result_release(&r2);

  /* A workload count whose byte size wraps around (2^61 + 1 doubles are 8
   * bytes modulo 2^64) is refused before anything is allocated. */
  struct pfi_sim_config huge = cfg;
  huge.workloads = SIZE_MAX / sizeof(double) + 2;
  huge.ncuts = 1;
  assert_int_equal(pfi_sim_run(&lib, NULL, &huge, &res, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "too large"));

  /* A cut below the floors of every workload: 60 % leaves 160 W under
   * 200 W of floors. Not an error: no workload takes it, no values. */
  double deep[] = {0.6};
  cfg.cuts = deep;
  cfg.ncuts = 1;
  assert_int_equal(pfi_sim_run(&lib, NULL, &cfg, &res, &err), 0);
  assert_int_equal(res.workloads, 1000);
  assert_int_equal(res.cell[PFI_STRAT_EQUAL][0].feasible, 0);
  assert_true(isnan(res.cell[PFI_STRAT_EQUAL][0].gap_mean));
  assert_false(res.cell[PFI_STRAT_EQUAL][0].closed_defined);
  pfi_sim_result_release(&res);
  pfi_problem_release(&lib);
}

/* Past an infeasible cut: workloads of one job, A of make_lib (floor
 * 100 W, top 200 W) or C, (190 W, 90) to (200 W, 100). A 10 % cut leaves
 * 180 W: A takes it (100 + 0.5 * 80 = 140 tokens/s, oracle and equal
 * alike), C cannot (180 < 190). Each cut's values are over the A
 * workloads only, their count from the same draws; no cut has them all
 * but the first. */
static void test_past_infeasible(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_problem lib;
  double xa[] = {100, 200}, ya[] = {100, 150};
  double xc[] = {190, 200}, yc[] = {90, 100};
  pfi_problem_init(&lib);
  assert_int_equal(pfi_problem_add(&lib, xa, ya, 2, 100, 200, &err), 0);
  assert_int_equal(pfi_problem_add(&lib, xc, yc, 2, 190, 200, &err), 0);
  double cuts[] = {0.0, 0.1, 0.5};
  struct pfi_sim_config cfg = {.workloads = 200,
                               .size = 1,
                               .cuts = cuts,
                               .ncuts = 3,
                               .strategies = (1u << PFI_STRAT_ORACLE) |
                                             (1u << PFI_STRAT_EQUAL),
                               .seed = 7};
  struct pfi_sim_result res;
  assert_int_equal(pfi_sim_run(&lib, NULL, &cfg, &res, &err), 0);
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 7);
  size_t na = 0;
  for (size_t w = 0; w < 200; w++)
    na += gsl_rng_uniform_int(r, 2) == 0;
  gsl_rng_free(r);
  assert_true(na >= 2 && na < 200);
  for (int s = PFI_STRAT_ORACLE; s <= PFI_STRAT_EQUAL; s++) {
    if (!res.cell[s])
      continue;
    const struct pfi_sim_cell *e = res.cell[s];
    /* No cut: every workload, A at 150 and C at 100 tokens/s. */
    assert_int_equal(e[0].feasible, 200);
    ASSERT_NEAR(e[0].tokens_mean, (150.0 * na + 100.0 * (200 - na)) / 200.0,
                1e-9);
    /* 10 % and 50 %: the A workloads, at 140 and 100 tokens/s. */
    assert_int_equal(e[1].feasible, na);
    ASSERT_NEAR(e[1].tokens_mean, 140, 1e-9);
    ASSERT_NEAR(e[1].gap_mean, 0, 1e-9);
    assert_int_equal(e[2].feasible, na);
    ASSERT_NEAR(e[2].tokens_mean, 100, 1e-9);
  }
  assert_non_null(res.cell[PFI_STRAT_EQUAL]);
  pfi_sim_result_release(&res);
  pfi_problem_release(&lib);
}

/* Mix weights by hand: pt share 0.06 over pretraining jobs with >= 16
 * GPUs, ft 0.94 over fine-tuning jobs with <= 8 GPUs. */
static void test_mix_weights(void **state) {
  (void)state;
  char path[] = "/tmp/pfi-test-mix-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  static const char mix[] = "task,min_gpus,max_gpus,share\n"
                            "pt,16,1000,0.06\nft,1,8,0.94\n";
  assert_int_equal(write(fd, mix, strlen(mix)), (int)strlen(mix));
  close(fd);
  /* jobs: pt x8, pt x16, pt x32, ft x8, ft x8, ft x16 */
  int ft[] = {0, 0, 0, 1, 1, 1}, gpus[] = {8, 16, 32, 8, 8, 16};
  double w[6];
  size_t fb;
  struct pfi_error err;
  assert_int_equal(pfi_mix_weights(path, ft, gpus, 6, w, &fb, &err), 0);
  ASSERT_NEAR(w[0], 0.0, 0);
  ASSERT_NEAR(w[1], 0.03, 1e-15);
  ASSERT_NEAR(w[2], 0.03, 1e-15);
  ASSERT_NEAR(w[3], 0.47, 1e-15);
  ASSERT_NEAR(w[4], 0.47, 1e-15);
  ASSERT_NEAR(w[5], 0.0, 0);
  ASSERT_EQ_INT(fb, 0);
  /* No pretraining job with 16+ GPUs: its share falls back to every
   * pretraining job. */
  int g2[] = {8, 8, 8, 8, 8, 16};
  assert_int_equal(pfi_mix_weights(path, ft, g2, 6, w, &fb, &err), 0);
  ASSERT_NEAR(w[0], 0.02, 1e-15);
  ASSERT_EQ_INT(fb, 1);
  /* No fine-tuning job at all: an error. */
  int none[] = {0, 0, 0, 0, 0, 0};
  assert_int_equal(pfi_mix_weights(path, none, gpus, 6, w, &fb, &err),
                   PFI_EINVAL);
  unlink(path);
}

/* The cut ladder is stated once, as text for the command line and help and
 * as fractions for the library: the two say the same. */
static void test_default_cuts(void **state) {
  (void)state;
  const char *p = PFI_SIM_DEFAULT_CUTS;
  size_t n = 0;
  while (*p) {
    char *end;
    double v = strtod(p, &end);
    assert_true(end != p);
    assert_true(n < PFI_SIM_DEFAULT_NCUTS);
    ASSERT_NEAR(v / 100.0, pfi_sim_default_cuts[n], 1e-15);
    ASSERT_NEAR(v, 5.0 * (double)n, 0); /* 0, 5, ..., 40 */
    n++;
    p = *end == ',' ? end + 1 : end;
  }
  ASSERT_EQ_INT(n, PFI_SIM_DEFAULT_NCUTS);
  assert_string_equal(PFI_STR(PFI_SIM_DEFAULT_WORKLOADS), "500");
  assert_string_equal(PFI_STR(PFI_SIM_DEFAULT_SIZE), "100");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_cuts),
      cmocka_unit_test(test_gaps_by_hand),
      cmocka_unit_test(test_past_infeasible),
      cmocka_unit_test(test_mix_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
