/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Isotonic regression by pool-adjacent-violators (monotone.h) against
 * values worked by hand and against the min-max formula of isotonic
 * regression, evaluated here independently: for weighted least squares
 * under a non-decreasing order, fit_i = max over j <= i of min over k >= i
 * of the weighted mean of y[j..k] (Barlow et al., "Statistical inference
 * under order restrictions", 1972, theorem 1.4.4).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/monotone.h"
#include "pfi/oracle.h"
#include "testutil.h"

static void by_hand(void **state) {
  (void)state;
  double y[4] = {1, 3, 2, 4}, out[5];
  assert_int_equal(pfi_isotonic(y, NULL, 4, out), 0);
  /* 3 > 2: pooled to 2.5. */
  ASSERT_NEAR(out[0], 1, 0);
  ASSERT_NEAR(out[1], 2.5, 1e-15);
  ASSERT_NEAR(out[2], 2.5, 1e-15);
  ASSERT_NEAR(out[3], 4, 0);
  /* Falling throughout: one block, the mean 3. */
  double f[5] = {5, 4, 3, 2, 1};
  assert_int_equal(pfi_isotonic(f, NULL, 5, f), 0);
  for (int i = 0; i < 5; i++)
    ASSERT_NEAR(f[i], 3, 1e-15);
  /* Weights: 3 (weight 1) and 2 (weight 3) pool to (3 + 6)/4 = 2.25. */
  double a[3] = {1, 3, 2}, w[3] = {1, 1, 3};
  assert_int_equal(pfi_isotonic(a, w, 3, out), 0);
  ASSERT_NEAR(out[0], 1, 0);
  ASSERT_NEAR(out[1], 2.25, 1e-15);
  ASSERT_NEAR(out[2], 2.25, 1e-15);
  /* A later violation pools back through an earlier block: {1, 4, 3, 0}
   * -> 4,3 pool to 3.5, then 0 pulls it to (4+3+0)/3 = 7/3, which is
   * above 1: {1, 7/3, 7/3, 7/3}. */
  double b[4] = {1, 4, 3, 0};
  assert_int_equal(pfi_isotonic(b, NULL, 4, out), 0);
  ASSERT_NEAR(out[0], 1, 0);
  for (int i = 1; i < 4; i++)
    ASSERT_NEAR(out[i], 7.0 / 3.0, 1e-15);
  /* Bad input. */
  double bad[2] = {1, NAN};
  assert_int_equal(pfi_isotonic(bad, NULL, 2, out), PFI_EINVAL);
  double wz[2] = {1, 0};
  assert_int_equal(pfi_isotonic(y, wz, 2, out), PFI_EINVAL);
  assert_int_equal(pfi_isotonic(y, NULL, 0, out), 0);
}

static double minmax(const double *y, const double *w, size_t n, size_t i) {
  double best = -INFINITY;
  for (size_t j = 0; j <= i; j++) {
    double lo = INFINITY;
    for (size_t k = i; k < n; k++) {
      double s = 0, sw = 0;
      for (size_t m = j; m <= k; m++) {
        s += w[m] * y[m];
        sw += w[m];
      }
      if (s / sw < lo)
        lo = s / sw;
    }
    if (lo > best)
      best = lo;
  }
  return best;
}

static void against_minmax_formula(void **state) {
  (void)state;
  /* Random vectors of 1 to 100 values (the n > 64 path included), random
   * weights; a fixed generator so that the test is deterministic.
   * Tolerance 1e-9: sums of up to 100 terms of order 1. */
  unsigned long long s = 88172645463325252ULL;
  for (int rep = 0; rep < 200; rep++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    size_t n = 1 + (size_t)(s % 100);
    double *y = malloc(n * sizeof *y), *w = malloc(n * sizeof *w),
           *out = malloc(n * sizeof *out);
    assert_non_null(y);
    assert_non_null(w);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      /* A rising trend plus noise: violations of every length. */
      y[i] = 0.02 * (double)i + (double)(s % 1000) / 1000.0;
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      w[i] = 0.5 + (double)(s % 100) / 50.0;
    }
    assert_int_equal(pfi_isotonic(y, w, n, out), 0);
    for (size_t i = 0; i < n; i++) {
      ASSERT_NEAR(out[i], minmax(y, w, n, i), 1e-9);
      if (i)
        assert_true(out[i - 1] <= out[i]);
    }
    free(y);
    free(w);
    free(out);
  }
}

static void monotone_curve(void **state) {
  (void)state;
  /* Caps 100, 200, 300 W with runs 1 (unknown), 3, 1. Power 150 at 200 W
   * (weight 3) above the 140 of 300 W: pooled to (450 + 140)/4 = 147.5 at
   * both; throughput 10 and 9 (weight 3) pool to (10 + 27)/4 = 9.25. The caps,
   * runs and order stay; the highest cap is still the reference. */
  struct pfi_point pts[3] = {{.cap_w = 100,
                              .power_w = 90,
                              .tokens_per_s = 10,
                              .power_sd_w = -1,
                              .tokens_sd = -1,
                              .runs = 0},
                             {.cap_w = 200,
                              .power_w = 150,
                              .tokens_per_s = 9,
                              .power_sd_w = -1,
                              .tokens_sd = -1,
                              .runs = 3},
                             {.cap_w = 300,
                              .power_w = 140,
                              .tokens_per_s = 12,
                              .power_sd_w = -1,
                              .tokens_sd = -1,
                              .runs = 1}};
  struct pfi_curve c = {.job = "a", .n = 3, .cap = 3, .pts = pts};
  struct pfi_point out[3];
  assert_int_equal(pfi_curve_monotone(&c, out), 0);
  ASSERT_NEAR(out[0].power_w, 90, 0);
  ASSERT_NEAR(out[1].power_w, (150 * 3 + 140) / 4.0, 1e-12);
  ASSERT_NEAR(out[2].power_w, (150 * 3 + 140) / 4.0, 1e-12);
  ASSERT_NEAR(out[0].tokens_per_s, 9.25, 1e-12);
  ASSERT_NEAR(out[1].tokens_per_s, 9.25, 1e-12);
  ASSERT_NEAR(out[2].tokens_per_s, 12, 0);
  for (int i = 0; i < 3; i++) {
    ASSERT_NEAR(out[i].cap_w, pts[i].cap_w, 0);
    assert_int_equal(out[i].runs, pts[i].runs);
  }
  /* The raw points are untouched. */
  ASSERT_NEAR(pts[1].power_w, 150, 0);
}

/* The jobs decisions read (pfi_problem_add_curve) from the curve of
 * monotone_curve: the fit's power 90, 147.5, 147.5 and throughput 9.25,
 * 9.25, 12 become breakpoints (90, 9.25) and (147.5, 12), the pooled pair
 * standing as the highest cap's point; the raw points are (90, 10) and
 * (140, 12), the top of the range the 300 W cap's 140 W (150 W at 200 W
 * lies beyond it). A curve without a fall is the same problem, bit for
 * bit, under either setting. */
static void problem_of_curve(void **state) {
  (void)state;
  struct pfi_point pts[3] = {
      {.cap_w = 100, .power_w = 90, .tokens_per_s = 10, .runs = 0},
      {.cap_w = 200, .power_w = 150, .tokens_per_s = 9, .runs = 3},
      {.cap_w = 300, .power_w = 140, .tokens_per_s = 12, .runs = 1}};
  struct pfi_curve c = {.job = "a", .n = 3, .cap = 3, .pts = pts};
  struct pfi_error err;
  struct pfi_problem m, r;
  pfi_problem_init(&m);
  pfi_problem_init(&r);
  r.curve_fit = PFI_CURVE_RAW;
  assert_int_equal(pfi_curve_violates(&c), 1);
  assert_int_equal(pfi_problem_add_curve(&m, &c, &err), 0);
  assert_int_equal(pfi_problem_add_curve(&r, &c, &err), 0);
  assert_int_equal(m.npts, 2);
  ASSERT_NEAR(m.x[0], 90, 0);
  ASSERT_NEAR(m.y[0], 9.25, 1e-12);
  ASSERT_NEAR(m.x[1], 147.5, 1e-12);
  ASSERT_NEAR(m.y[1], 12, 0);
  assert_int_equal(r.npts, 2);
  ASSERT_NEAR(r.x[0], 90, 0);
  ASSERT_NEAR(r.y[0], 10, 0);
  ASSERT_NEAR(r.x[1], 140, 0);
  ASSERT_NEAR(r.y[1], 12, 0);
  /* No lower budget yields more: 9.25 at the floor, 12 at the top. */
  ASSERT_NEAR(pfi_curve_fit_top(&c, PFI_CURVE_MONOTONE), 12, 0);
  /* Caps: 118.75 W is halfway from 90 W (100 W cap) to 147.5 W, first
   * reached at the 200 W cap: 150 W. On the raw points by power, 115 W
   * is halfway from 90 W (100 W) to 140 W (300 W): 200 W. */
  ASSERT_NEAR(pfi_curve_fit_cap_at(&c, PFI_CURVE_MONOTONE, 118.75), 150, 1e-12);
  ASSERT_NEAR(pfi_curve_fit_cap_at(&c, PFI_CURVE_RAW, 115), 200, 1e-12);
  pfi_problem_release(&m);
  pfi_problem_release(&r);

  /* Monotone already: identical problems. */
  pts[1].power_w = 120;
  pts[1].tokens_per_s = 11;
  assert_int_equal(pfi_curve_violates(&c), 0);
  pfi_problem_init(&m);
  pfi_problem_init(&r);
  r.curve_fit = PFI_CURVE_RAW;
  assert_int_equal(pfi_problem_add_curve(&m, &c, &err), 0);
  assert_int_equal(pfi_problem_add_curve(&r, &c, &err), 0);
  assert_int_equal(m.npts, r.npts);
  assert_int_equal(memcmp(m.x, r.x, m.npts * sizeof *m.x), 0);
  assert_int_equal(memcmp(m.y, r.y, m.npts * sizeof *m.y), 0);
  pfi_problem_release(&m);
  pfi_problem_release(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(by_hand),
      cmocka_unit_test(against_minmax_formula),
      cmocka_unit_test(monotone_curve),
      cmocka_unit_test(problem_of_curve),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
