/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Phase segmentation and the top-10 % aggregate, on series worked by hand. */
#include "testutil.h"

#include "pfi/phase.h"

static void test_segment_by_hand(void **state) {
  (void)state;
  /* Two samples below 10 GiB (warmup), two loaded at 0 % (startup), then
   * training at 80 and 90 %, a checkpoint dip to 10 % (pause) and training
   * again. */
  const double fb[] = {100, 5000, 12000, 12000, 12000, 12000, 12000, 12000};
  const double util[] = {0, 0, 0, 0, 80, 90, 10, 95};
  const enum pfi_phase want[] = {PFI_PHASE_WARMUP,   PFI_PHASE_WARMUP,
                                 PFI_PHASE_STARTUP,  PFI_PHASE_STARTUP,
                                 PFI_PHASE_TRAINING, PFI_PHASE_TRAINING,
                                 PFI_PHASE_PAUSE,    PFI_PHASE_TRAINING};
  enum pfi_phase ph[8];
  struct pfi_error e;
  assert_int_equal(pfi_phase_segment(fb, util, 8, NULL, ph, &e), 0);
  for (int i = 0; i < 8; i++)
    ASSERT_EQ_INT(ph[i], want[i]);
  /* Training values 10, 20, 40: the top 10 % of 3 samples is ceil(0.3) = 1
   * sample, 40; with top_frac 0.5 it is ceil(1.5) = 2 samples, (40+20)/2. */
  const double v[] = {999, 999, 999, 999, 10, 20, 30, 40};
  double m;
  size_t used;
  assert_int_equal(pfi_phase_top_mean(v, ph, 8, NULL, &m, &used, &e), 0);
  ASSERT_NEAR(m, 40.0, 0);
  ASSERT_EQ_INT(used, 1);
  struct pfi_phase_params p;
  pfi_phase_params_init(&p);
  p.top_frac = 0.5;
  assert_int_equal(pfi_phase_top_mean(v, ph, 8, &p, &m, &used, &e), 0);
  ASSERT_NEAR(m, 30.0, 1e-12);
  ASSERT_EQ_INT(used, 2);
}

static void test_defaults_and_thresholds(void **state) {
  (void)state;
  struct pfi_phase_params p;
  pfi_phase_params_init(&p);
  ASSERT_NEAR(p.loaded_mib, 10240, 0);
  ASSERT_NEAR(p.train_util, 50, 0);
  ASSERT_NEAR(p.top_frac, 0.10, 0);
  /* Exactly 10 GiB is loaded; exactly 50 % is training. */
  const double fb[] = {10239.9, 10240, 10240};
  const double util[] = {0, 0, 50};
  enum pfi_phase ph[3];
  struct pfi_error e;
  assert_int_equal(pfi_phase_segment(fb, util, 3, &p, ph, &e), 0);
  ASSERT_EQ_INT(ph[0], PFI_PHASE_WARMUP);
  ASSERT_EQ_INT(ph[1], PFI_PHASE_STARTUP);
  ASSERT_EQ_INT(ph[2], PFI_PHASE_TRAINING);
  assert_string_equal(pfi_phase_name(PFI_PHASE_PAUSE), "pause");
}

static void test_missing_values(void **state) {
  (void)state;
  /* No frame-buffer series: every sample counts as loaded. NaN utilization
   * is not training; NaN values are skipped by the aggregate. */
  const double util[] = {NAN, 0, 70, 60, 65};
  const double v[] = {1, 2, NAN, 5, 7};
  enum pfi_phase ph[5];
  struct pfi_error e;
  assert_int_equal(pfi_phase_segment(NULL, util, 5, NULL, ph, &e), 0);
  ASSERT_EQ_INT(ph[0], PFI_PHASE_STARTUP);
  ASSERT_EQ_INT(ph[2], PFI_PHASE_TRAINING);
  double m;
  size_t used;
  assert_int_equal(pfi_phase_top_mean(v, ph, 5, NULL, &m, &used, &e), 0);
  ASSERT_NEAR(m, 7.0, 0);
  /* No training sample at all. */
  const double idle[] = {0, 0, 0};
  assert_int_equal(pfi_phase_segment(NULL, idle, 3, NULL, ph, &e), 0);
  assert_int_equal(pfi_phase_top_mean(v, ph, 3, NULL, &m, &used, &e),
                   PFI_ENOTFOUND);
}

/* Values near DBL_MAX (a job reporting nonsense): the top mean of 1.5e308
 * and 1.7e308 is 1.6e308, not an overflowed sum; exact to one rounding of
 * each halved value (relative 1e-15). */
static void test_top_mean_huge(void **state) {
  (void)state;
  const double v[] = {1.5e308, 1.7e308, 1.0, 2.0, 3.0, 4.0,
                      5.0,     6.0,     7.0, 8.0, 9.0, 10.0,
                      11.0,    12.0,    13.0, 14.0, 15.0, 16.0,
                      17.0,    18.0};
  enum pfi_phase ph[20];
  for (int i = 0; i < 20; i++)
    ph[i] = PFI_PHASE_TRAINING;
  double m;
  size_t used;
  struct pfi_error e;
  assert_int_equal(pfi_phase_top_mean(v, ph, 20, NULL, &m, &used, &e), 0);
  ASSERT_EQ_INT(used, 2);
  assert_true(isfinite(m));
  ASSERT_NEAR(m / 1.6e308, 1.0, 1e-15);
}

static void test_top_sem_by_hand(void **state) {
  (void)state;
  /* 20 training samples 1..20 and two non-training ones that must be
   * ignored: the top ceil(0.1 * 20) = 2 are 20 and 19, mean 19.5, sample
   * sd sqrt(((0.5)^2 + (0.5)^2) / 1) = 0.70711, sem = 0.70711 / sqrt(2) =
   * 0.5 (by hand). With top_frac 0.25, the top 5 are 16..20: sd of
   * 16..20 is sqrt(2.5) = 1.58114, sem 1.58114 / sqrt(5) = 0.70711. */
  double v[22];
  enum pfi_phase ph[22];
  for (int i = 0; i < 20; i++) {
    v[i] = i + 1;
    ph[i] = PFI_PHASE_TRAINING;
  }
  v[20] = 1000, ph[20] = PFI_PHASE_STARTUP;
  v[21] = 2000, ph[21] = PFI_PHASE_WARMUP;
  double sem = 0;
  struct pfi_error e;
  assert_int_equal(pfi_phase_top_sem(v, ph, 22, NULL, &sem, &e), 0);
  ASSERT_NEAR(sem, 0.5, 1e-12);
  struct pfi_phase_params p;
  pfi_phase_params_init(&p);
  p.top_frac = 0.25;
  assert_int_equal(pfi_phase_top_sem(v, ph, 22, &p, &sem, &e), 0);
  ASSERT_NEAR(sem, sqrt(2.5) / sqrt(5.0), 1e-12);
  /* One training sample: the aggregate has no standard error (-1). */
  assert_int_equal(pfi_phase_top_sem(v, ph, 1, NULL, &sem, &e), 0);
  ASSERT_NEAR(sem, -1, 0);
  /* No training sample at all: the same error as the mean. */
  assert_int_equal(pfi_phase_top_sem(v + 20, ph + 20, 2, NULL, &sem, &e),
                   PFI_ENOTFOUND);
}

static void test_bad_params(void **state) {
  (void)state;
  struct pfi_phase_params p;
  enum pfi_phase ph[1];
  const double u[] = {60};
  double m;
  struct pfi_error e;
  pfi_phase_params_init(&p);
  p.top_frac = 0;
  assert_int_equal(pfi_phase_segment(NULL, u, 1, &p, ph, &e), PFI_EINVAL);
  pfi_phase_params_init(&p);
  p.train_util = NAN;
  assert_int_equal(pfi_phase_top_mean(u, ph, 1, &p, &m, NULL, &e), PFI_EINVAL);
  assert_int_equal(pfi_phase_segment(NULL, NULL, 1, NULL, ph, &e), PFI_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segment_by_hand),
      cmocka_unit_test(test_defaults_and_thresholds),
      cmocka_unit_test(test_missing_values),
      cmocka_unit_test(test_top_mean_huge),
      cmocka_unit_test(test_top_sem_by_hand),
      cmocka_unit_test(test_bad_params),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
