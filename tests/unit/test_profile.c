/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The steadiness rule of pfi profile (pfi_steady_check) on closed-form
 * series whose truth is known: a stationary series steady from the count
 * its standard error gives, a ramp that never settles, a step whose old
 * level never enters a steady window, and an exponential settling whose
 * steady mean lands within the rule's precision of its asymptote.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/profile.h"
#include "testutil.h"

#define A 1000.0
#define S 10.0
#define P 0.002

/* x_t = A + S (-1)^t: for n values the mean is A (n even) or A + S/n (n
 * odd), and the standard error of the mean S/sqrt(n - 1) (n even) or
 * S sqrt(n + 1)/n (n odd), worked by hand from the n deviations +-S. */
static double alt_mean(size_t n) { return n % 2 ? A + S / (double)n : A; }
static double alt_sem(size_t n) {
  return n % 2 ? S * sqrt((double)n + 1) / (double)n : S / sqrt((double)n - 1);
}

static void stationary_from_closed_form_count(void **state) {
  (void)state;
  double x[200];
  for (size_t t = 0; t < 200; t++)
    x[t] = A + (t % 2 ? -S : S);
  struct pfi_steady_rule r = {0, P, 8};
  /* The first count at which the closed form says the mean is known to P
   * (10 / sqrt(n - 1) <= 2 first holds at n = 26). */
  size_t want = 0;
  for (size_t n = 8; n < 200 && !want; n++)
    if (alt_sem(n) <= P * alt_mean(n))
      want = n;
  ASSERT_EQ_INT(want, 26);
  for (size_t n = 1; n <= 60; n++) {
    struct pfi_steady s;
    int got = pfi_steady_check(x, n, &r, &s);
    if (got != (n >= want)) {
      fail_msg("n = %zu: steady %d, expected %d", n, got, n >= want);
    }
    if (got) {
      /* No trend in a stationary series: the whole series is the window. */
      ASSERT_EQ_INT(s.start, 0);
      ASSERT_EQ_INT(s.n, n);
      ASSERT_NEAR(s.mean, alt_mean(n), 1e-9);
      ASSERT_NEAR(s.sem, alt_sem(n), 1e-9);
    }
  }
}

static void ramp_never_settles(void **state) {
  (void)state;
  /* x_t = A + 0.01 t: a noise-free ramp is never steady, however loose
   * the precision, since any two halves differ by more than their
   * standard errors (by sqrt(3 m) of them for m values). */
  size_t n = 2000;
  double *x = malloc(n * sizeof *x);
  assert_non_null(x);
  for (size_t t = 0; t < n; t++)
    x[t] = A + 0.01 * (double)t;
  struct pfi_steady_rule r = {0, 0.4, 8};
  for (size_t k = 1; k <= n; k++) {
    struct pfi_steady s;
    if (pfi_steady_check(x, k, &r, &s) != 0)
      fail_msg("a ramp of %zu values was found steady (window %zu..%zu)", k,
               s.start, s.start + s.n);
  }
  free(x);
}

static void step_never_in_window(void **state) {
  (void)state;
  /* 12 values at 1500 (before the cap bound), then the stationary series
   * around A. The first 12 alone are a steady series (of the old level);
   * once a value of the new level has come, a steady window never holds a
   * value of the old level, and
   * its mean is A within S / (its count), the bound of an alternating
   * tail. */
  size_t k = 12, n = 300;
  double x[300];
  for (size_t t = 0; t < n; t++)
    x[t] = t < k ? 1500.0 : A + ((t - k) % 2 ? -S : S);
  struct pfi_steady_rule r = {0, P, 8};
  size_t first = 0;
  for (size_t m = k + 1; m <= n; m++) {
    struct pfi_steady s;
    if (pfi_steady_check(x, m, &r, &s) != 1)
      continue;
    if (!first)
      first = m;
    if (s.start < k)
      fail_msg("m = %zu: the steady window starts at %zu, inside the step "
               "(%zu values)",
               m, s.start, k);
    ASSERT_NEAR(s.mean, A, S / (double)s.n + 1e-9);
  }
  /* It does settle: at the latest when the trend cuts leave the last half,
   * which needs 2 * 26 values past the step. */
  assert_true(first > 0 && first <= k + 2 * 26 + 2 * k);
}

static void exponential_to_asymptote(void **state) {
  (void)state;
  /* x_t = A + 200 exp(-t / 5) + S (-1)^t: settles on A. When the rule
   * first holds, the window's mean is within z P A of A (the precision
   * the rule asked for, at the z of the noise rule). */
  double x[400];
  for (size_t t = 0; t < 400; t++)
    x[t] = A + 200.0 * exp(-(double)t / 5.0) + (t % 2 ? -S : S);
  struct pfi_steady_rule r = {0, P, 8};
  for (size_t m = 1; m <= 400; m++) {
    struct pfi_steady s;
    if (pfi_steady_check(x, m, &r, &s) == 1) {
      ASSERT_NEAR(s.mean, A, PFI_INDEX_NOISE_Z * P * A);
      assert_true(s.trend_cuts >= 1);
      return;
    }
  }
  fail_msg("never steady");
}

static void bad_rule(void **state) {
  (void)state;
  double x[4] = {1, 2, 3, 4};
  struct pfi_steady s;
  struct pfi_steady_rule r0 = {0, 0, 8}, rn = {-1, 0.01, 8};
  ASSERT_EQ_INT(pfi_steady_check(x, 4, &r0, &s), PFI_EINVAL);
  ASSERT_EQ_INT(pfi_steady_check(x, 4, &rn, &s), PFI_EINVAL);
  ASSERT_EQ_INT(pfi_steady_check(x, 4, NULL, &s), PFI_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stationary_from_closed_form_count),
      cmocka_unit_test(ramp_never_settles),
      cmocka_unit_test(step_never_in_window),
      cmocka_unit_test(exponential_to_asymptote),
      cmocka_unit_test(bad_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
