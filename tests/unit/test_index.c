/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The three PFI definitions, the Monte Carlo interval and the cap
 * restriction, against values worked by hand, closed forms, and the
 * properties the method implies (proportional curve, unit scaling, row
 * order).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"
#include "pfi/index.h"
#include "testutil.h"

static struct pfi_curveset load(const char *csv, const char *map) {
  struct pfi_curveset set;
  struct pfi_error err;
  int rc = pfi_curveset_read_mem(&set, "t.csv", csv, strlen(csv), map, &err);
  if (rc != 0)
    fail_msg("read failed: %s", err.msg);
  return set;
}

/* Caps 300, 500, 700 W; P = 600, 800, 1000 W; T = 80, 95, 100. */
static const char three[] = "job,cap_w,power_w,tokens_per_s\n"
                            "a,700,1000,100\n"
                            "a,500,800,95\n"
                            "a,300,600,80\n";

static void ratio_area_ce_by_hand(void **state) {
  (void)state;
  struct pfi_curveset set = load(three, NULL);
  struct pfi_index ix;
  struct pfi_error err;
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, &err), 0);
  /* Ratio: (1 - 0.8)/(1 - 0.95) = 4 and (1 - 0.6)/(1 - 0.8) = 2, mean 3. */
  ASSERT_NEAR(ix.pfi, 3.0, 1e-12);
  assert_true(ix.pfi_defined);
  ASSERT_EQ_INT(ix.points_used, 2);
  ASSERT_EQ_INT(ix.n_excluded, 0);
  ASSERT_NEAR(ix.t_max, 100, 0);
  ASSERT_NEAR(ix.p_max, 1000, 0);
  /* Area: normalized (0.6, 0.8), (0.8, 0.95), (1, 1) from (0, 0):
   * 0.5*0.6*0.8 + 0.5*0.2*(0.8+0.95) + 0.5*0.2*(0.95+1)
   * = 0.24 + 0.175 + 0.195 = 0.61; minus 1/2 gives 0.11. */
  ASSERT_NEAR(ix.pfi_area, 0.11, 1e-12);
  /* CE: slope of log T on log P by the textbook formula
   * Sxy/Sxx with u = log P, v = log T, evaluated here independently. */
  double u[3] = {log(600), log(800), log(1000)};
  double v[3] = {log(80), log(95), log(100)};
  double mu = (u[0] + u[1] + u[2]) / 3, mv = (v[0] + v[1] + v[2]) / 3;
  double sxy = 0, sxx = 0;
  for (int i = 0; i < 3; i++) {
    sxy += (u[i] - mu) * (v[i] - mv);
    sxx += (u[i] - mu) * (u[i] - mu);
  }
  ASSERT_NEAR(ix.pfi_ce, 1.0 - sxy / sxx, 1e-12);
  assert_true(ix.ce_defined);
  pfi_index_release(&ix);
  pfi_curveset_release(&set);
}

static void ce_two_points_closed_form(void **state) {
  (void)state;
  /* Two points fix the line: a = log(T2/T1)/log(P2/P1). */
  const double p[] = {500, 1000}, t[] = {90, 100};
  double ce;
  assert_int_equal(pfi_index_ce(p, t, 2, &ce), 1);
  ASSERT_NEAR(ce, 1.0 - log(100.0 / 90.0) / log(2.0), 1e-14);
  const double pe[] = {800, 800};
  assert_int_equal(pfi_index_ce(pe, t, 2, &ce), 0); /* all powers equal */
}

static void proportional_curve(void **state) {
  (void)state;
  /* T = 0.05 P exactly (values chosen exact in binary): ratio 1, area 0
   * (the curve is the diagonal), ce 0 (slope 1 in log-log). */
  const char csv[] = "job,cap_w,power_w,tokens_per_s\n"
                     "p,200,256,12.8\n"
                     "p,400,512,25.6\n"
                     "p,600,768,38.4\n"
                     "p,700,1024,51.2\n";
  struct pfi_curveset set = load(csv, NULL);
  struct pfi_index ix;
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, NULL), 0);
  /* Tolerance 1e-12: each term is (1 - x)/(1 - x') with x = x' up to one
   * rounding of the division. */
  ASSERT_NEAR(ix.pfi, 1.0, 1e-12);
  ASSERT_NEAR(ix.pfi_area, 0.0, 1e-12);
  ASSERT_NEAR(ix.pfi_ce, 0.0, 1e-12);
  pfi_index_release(&ix);
  pfi_curveset_release(&set);
}

static void excluded_caps_listed(void **state) {
  (void)state;
  /* The 600 W cap did not bind (T = T_max): left out of the ratio and
   * listed; 500 W has throughput above T_max (noise): also left out. The
   * 300 W point gives (1 - 0.6)/(1 - 0.8) = 2. */
  const char csv[] = "job,cap_w,power_w,tokens_per_s\n"
                     "a,700,1000,100\n"
                     "a,600,990,100\n"
                     "a,500,950,100.5\n"
                     "a,300,600,80\n";
  struct pfi_curveset set = load(csv, NULL);
  struct pfi_index ix;
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, NULL), 0);
  ASSERT_NEAR(ix.pfi, 2.0, 1e-12);
  ASSERT_EQ_INT(ix.points_used, 1);
  ASSERT_EQ_INT(ix.n_excluded, 2);
  ASSERT_NEAR(ix.excluded_caps[0], 500, 0);
  ASSERT_NEAR(ix.excluded_caps[1], 600, 0);
  pfi_index_release(&ix);
  pfi_curveset_release(&set);

  /* No capped point binds: the ratio is undefined, not a division by 0. */
  const char flat[] = "job,cap_w,power_w,tokens_per_s\n"
                      "f,700,1000,100\n"
                      "f,500,900,100\n";
  set = load(flat, NULL);
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, NULL), 0);
  assert_false(ix.pfi_defined);
  ASSERT_EQ_INT(ix.points_used, 0);
  double lo = -1, hi = -1;
  /* With zero noise every draw is undefined too: no interval. */
  const char flat0[] = "job,cap_w,power_w,tokens_per_s,power_sd_w,tokens_sd\n"
                       "f,700,1000,100,0,0\n"
                       "f,500,900,100,0,0\n";
  struct pfi_curveset s0 = load(flat0, NULL);
  assert_int_equal(
      pfi_index_ci(&s0.c[0], 100, 1, 0.0004, 0.0005, &lo, &hi, NULL), 0);
  ASSERT_NEAR(lo, -1, 0);
  pfi_curveset_release(&s0);
  pfi_index_release(&ix);
  pfi_curveset_release(&set);
}

/* Every definition of every job of two files agrees within `tol`. */
static void assert_same_indices(const struct pfi_curveset *a,
                                const struct pfi_curveset *b, double tol) {
  assert_int_equal(a->n, b->n);
  for (size_t i = 0; i < a->n; i++) {
    struct pfi_curve *cb = pfi_curveset_find(b, a->c[i].job);
    assert_non_null(cb);
    struct pfi_index x, y;
    assert_int_equal(pfi_index_compute(&a->c[i], &x, NULL), 0);
    assert_int_equal(pfi_index_compute(cb, &y, NULL), 0);
    ASSERT_NEAR(x.pfi, y.pfi, tol);
    ASSERT_NEAR(x.pfi_area, y.pfi_area, tol);
    ASSERT_NEAR(x.pfi_ce, y.pfi_ce, tol);
    ASSERT_EQ_INT(x.points_used, y.points_used);
    pfi_index_release(&x);
    pfi_index_release(&y);
  }
}

static const char two_jobs[] = "job,cap_w,power_w,tokens_per_s\n"
                               "a,700,5210,1000\n"
                               "a,500,4100,930\n"
                               "a,300,2600,700\n"
                               "b,700,5600,800\n"
                               "b,600,5000,790\n"
                               "b,200,1700,310\n"
                               "b,400,3500,640\n";

static void unit_scaling_invariance(void **state) {
  (void)state;
  /* Power in kW and throughput in tokens per hour: ratios of power to
   * P_max and of tokens to T_max are unchanged, so is every PFI (up to
   * rounding of the scaled inputs: 1e-12). */
  const char scaled[] = "job,cap_w,power_w,tokens_per_s\n"
                        "a,700,5.210,3600000\n"
                        "a,500,4.100,3348000\n"
                        "a,300,2.600,2520000\n"
                        "b,700,5.600,2880000\n"
                        "b,600,5.000,2844000\n"
                        "b,200,1.700,1116000\n"
                        "b,400,3.500,2304000\n";
  struct pfi_curveset a = load(two_jobs, NULL), b = load(scaled, NULL);
  assert_same_indices(&a, &b, 1e-12);
  pfi_curveset_release(&a);
  pfi_curveset_release(&b);
}

static void row_order_invariance(void **state) {
  (void)state;
  /* The same rows reversed and interleaved. Points are sorted by cap on
   * reading, so the results are identical bit for bit. */
  const char shuffled[] = "job,cap_w,power_w,tokens_per_s\n"
                          "b,400,3500,640\n"
                          "a,300,2600,700\n"
                          "b,200,1700,310\n"
                          "a,500,4100,930\n"
                          "b,600,5000,790\n"
                          "b,700,5600,800\n"
                          "a,700,5210,1000\n";
  struct pfi_curveset a = load(two_jobs, NULL), b = load(shuffled, NULL);
  assert_same_indices(&a, &b, 0);
  /* The interval too: it depends on the seed and the curve only. */
  double lo1, hi1, lo2, hi2;
  assert_int_equal(
      pfi_index_ci(&a.c[0], 500, 7, 0.0004, 0.0005, &lo1, &hi1, NULL), 500);
  assert_int_equal(pfi_index_ci(pfi_curveset_find(&b, "a"), 500, 7, 0.0004,
                                0.0005, &lo2, &hi2, NULL),
                   500);
  ASSERT_NEAR(lo1, lo2, 0);
  ASSERT_NEAR(hi1, hi2, 0);
  pfi_curveset_release(&a);
  pfi_curveset_release(&b);
}

static void ci_linear_case_closed_form(void **state) {
  (void)state;
  /* Two points, noise on the capped power only (sd 8 W, everything else
   * measured exactly): PFI = (1 - P1/P0)/(1 - T1/T0) is linear in P1, so
   * it is normal with sd s/(P0 d), d = 1 - T1/T0 = 0.1. Its 95 % interval
   * is PFI -/+ 1.959964 * 8/(1000 * 0.1) = PFI -/+ 0.156797.
   * Tolerance: with 100000 draws the standard error of a 2.5 % sample
   * quantile is sqrt(0.025*0.975/1e5)/phi(1.96) = 0.0085 sd = 0.00068
   * here; 0.004 is about 6 standard errors. */
  const char csv[] = "job,cap_w,power_w,tokens_per_s,power_sd_w,tokens_sd\n"
                     "a,700,1000,100,0,0\n"
                     "a,400,800,90,8,0\n";
  struct pfi_curveset set = load(csv, NULL);
  double lo, hi;
  struct pfi_error err;
  int rc = pfi_index_ci(&set.c[0], 100000, 42, 0.0004, 0.0005, &lo, &hi, &err);
  assert_int_equal(rc, 100000);
  double half = 1.959963984540054 * 8.0 / (1000.0 * 0.1);
  ASSERT_NEAR(lo, 2.0 - half, 0.004);
  ASSERT_NEAR(hi, 2.0 + half, 0.004);

  /* Same seed, same bytes; another seed, another sample. */
  double lo2, hi2;
  assert_int_equal(pfi_index_ci(&set.c[0], 1000, 42, 0, 0, &lo, &hi, NULL),
                   1000);
  assert_int_equal(pfi_index_ci(&set.c[0], 1000, 42, 0, 0, &lo2, &hi2, NULL),
                   1000);
  assert_memory_equal(&lo, &lo2, sizeof lo);
  assert_memory_equal(&hi, &hi2, sizeof hi);
  assert_int_equal(pfi_index_ci(&set.c[0], 1000, 43, 0, 0, &lo2, &hi2, NULL),
                   1000);
  assert_true(lo != lo2);
  assert_int_equal(pfi_index_ci(&set.c[0], 0, 1, 0, 0, &lo, &hi, &err),
                   PFI_EINVAL);
  pfi_curveset_release(&set);
}

static void ci_default_noise(void **state) {
  (void)state;
  /* No sd columns: the default relative noise applies. Take throughput
   * noise 0 and power noise r = 1 % on both points: to first order
   * PFI = (1 - P1/P0)/d has sd (P1/P0) r sqrt(2) / d (the two relative
   * errors add in quadrature). P1/P0 = 0.8, d = 0.1, r = 0.01: sd 0.1131,
   * 95 % half width 0.2217. The first-order error is of order r (1 %
   * relative, 0.002 here); the sampling error with 100000 draws is about
   * 0.001; tolerance 0.01. */
  const char csv[] = "job,cap_w,power_w,tokens_per_s\n"
                     "a,700,1000,100\n"
                     "a,400,800,90\n";
  struct pfi_curveset set = load(csv, NULL);
  double lo, hi;
  assert_int_equal(pfi_index_ci(&set.c[0], 100000, 3, 0.01, 0, &lo, &hi, NULL),
                   100000);
  double half = 1.959963984540054 * 0.8 * 0.01 * sqrt(2.0) / 0.1;
  ASSERT_NEAR(hi - lo, 2 * half, 0.01);
  ASSERT_NEAR(0.5 * (lo + hi), 2.0, 0.01);
  /* Zero noise: a degenerate interval at the point estimate. */
  assert_int_equal(pfi_index_ci(&set.c[0], 10, 3, 0, 0, &lo, &hi, NULL), 10);
  ASSERT_NEAR(lo, 2.0, 1e-12);
  ASSERT_NEAR(hi, 2.0, 1e-12);
  pfi_curveset_release(&set);
}

static void ci_keeps_measured_exclusions(void **state) {
  (void)state;
  /* The 600 W cap did not bind (T = T_max). Noise would put its throughput
   * below T_max in about half of the draws; it must stay out of every draw,
   * as it is out of the estimate, or its near-zero denominator would
   * dominate the interval. Only the 300 W point counts: PFI 2 with the
   * default noise, whose interval is a few % wide at most (by the delta
   * method: sd about 2 * 0.0005 * sqrt(2) * 0.8/0.2 ~ 0.006). */
  const char csv[] = "job,cap_w,power_w,tokens_per_s\n"
                     "a,700,1000,100\n"
                     "a,600,990,100\n"
                     "a,300,600,80\n";
  struct pfi_curveset set = load(csv, NULL);
  double lo, hi;
  assert_int_equal(
      pfi_index_ci(&set.c[0], 2000, 1, PFI_INDEX_DEFAULT_REL_SD_POWER,
                   PFI_INDEX_DEFAULT_REL_SD_TOKENS, &lo, &hi, NULL),
      2000);
  assert_true(lo > 1.95 && lo < 2.0);
  assert_true(hi > 2.0 && hi < 2.05);
  pfi_curveset_release(&set);
}

static void restrict_caps(void **state) {
  (void)state;
  struct pfi_curveset set = load(two_jobs, NULL);
  struct pfi_error err;
  /* Job a lacks 400 W (line 2 is its first row). The set is unchanged. */
  const double want[] = {700, 400, 300};
  assert_int_equal(pfi_curveset_restrict(&set, want, 3, &err), PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  ASSERT_EQ_INT(err.column, 1);
  assert_non_null(strstr(err.msg, "job 'a' has no point at cap 400 W"));
  ASSERT_EQ_INT(set.c[0].n, 3);
  /* One distinct cap is not a curve. */
  const double one[] = {700, 700.0};
  assert_int_equal(pfi_curveset_restrict(&set, one, 2, &err), PFI_EINVAL);
  /* A successful restriction, on job b alone (a and b share only 700 W). */
  const char bonly[] = "job,cap_w,power_w,tokens_per_s\n"
                       "b,700,5600,800\n"
                       "b,600,5000,790\n"
                       "b,200,1700,310\n"
                       "b,400,3500,640\n";
  struct pfi_curveset b = load(bonly, NULL);
  const double keep[] = {200, 700.0000000001, 600}; /* "700" within 1e-9 */
  assert_int_equal(pfi_curveset_restrict(&b, keep, 3, &err), 0);
  ASSERT_EQ_INT(b.c[0].n, 3);
  ASSERT_NEAR(b.c[0].pts[0].cap_w, 200, 0);
  ASSERT_NEAR(b.c[0].pts[1].cap_w, 600, 0);
  ASSERT_NEAR(b.c[0].pts[2].cap_w, 700, 0);
  /* On the kept grid: (1 - 5000/5600)/(1 - 790/800) = 8.5714... and
   * (1 - 1700/5600)/(1 - 310/800) = 1.1370..., by hand below. */
  struct pfi_index ix;
  assert_int_equal(pfi_index_compute(&b.c[0], &ix, NULL), 0);
  double t1 = (1 - 5000.0 / 5600) / (1 - 790.0 / 800);
  double t2 = (1 - 1700.0 / 5600) / (1 - 310.0 / 800);
  ASSERT_NEAR(ix.pfi, 0.5 * (t1 + t2), 1e-12);
  pfi_index_release(&ix);
  /* Restricting to a cap subset whose top is below the original top makes
   * that cap the reference. */
  pfi_curveset_release(&b);
  b = load(bonly, NULL);
  const double low[] = {200, 400};
  assert_int_equal(pfi_curveset_restrict(&b, low, 2, &err), 0);
  assert_int_equal(pfi_index_compute(&b.c[0], &ix, NULL), 0);
  ASSERT_NEAR(ix.p_max, 3500, 0);
  ASSERT_NEAR(ix.pfi, (1 - 1700.0 / 3500) / (1 - 310.0 / 640), 1e-12);
  pfi_index_release(&ix);
  pfi_curveset_release(&b);
  pfi_curveset_release(&set);
}

static void real_sweep_mapped(void **state) {
  (void)state;
  /* The A100 sweep shipped in data/real reads through --map and gives a
   * defined ratio PFI for each of its 8 workloads (tests run from the
   * source directory). */
  struct pfi_curveset set;
  struct pfi_error err;
  int rc = pfi_curveset_read(&set, "data/real/dvfs_sweep.csv",
                             "job=Workload,cap_w=GPU power cap,"
                             "power_w=total GPU power,tokens_per_s=throughput",
                             &err);
  if (rc != 0)
    fail_msg("%s:%ld:%ld: %s", err.file, err.line, err.column, err.msg);
  assert_int_equal(set.n, 8);
  for (size_t i = 0; i < set.n; i++) {
    struct pfi_index ix;
    assert_int_equal(pfi_index_compute(&set.c[i], &ix, NULL), 0);
    assert_true(ix.pfi_defined);
    assert_true(isfinite(ix.pfi) && ix.pfi > 0);
    pfi_index_release(&ix);
  }
  pfi_curveset_release(&set);
}

/* Positive finite values whose ratios overflow: an error, never an index
 * of inf or nan (nor "undefined"). */
static void overflow_is_an_error(void **state) {
  (void)state;
  struct pfi_index ix;
  struct pfi_error err;
  /* P_max = 1e-300 and a capped power of 1e308: P/P_max = inf. The ratio
   * leaves the point out (its power rose above P_max: power-in-noise), but
   * the area integrates P/P_max = inf. With the noise rule no ratio term
   * can overflow (loss and saving are at most 1 and above 2e-16). */
  const char r[] = "job,cap_w,power_w,tokens_per_s\n"
                   "a,100,1e308,1\n"
                   "a,200,1e-300,2\n";
  struct pfi_curveset set = load(r, NULL);
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, &err), PFI_ERANGE);
  assert_non_null(strstr(err.msg, "job 'a': the area PFI is not a finite"));
  assert_null(ix.excluded_caps);
  pfi_curveset_release(&set);
  /* T_max = 1e-308 and a capped throughput of 1e308: the cap did not bind
   * (left out of the ratio) but T/T_max = inf makes the area nan. */
  const char a[] = "job,cap_w,power_w,tokens_per_s\n"
                   "a,100,1,1e308\n"
                   "a,200,2,1e-308\n";
  set = load(a, NULL);
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, &err), PFI_ERANGE);
  assert_non_null(strstr(err.msg, "the area PFI is not a finite"));
  pfi_curveset_release(&set);
  /* Large but representable ratios are fine: 1e300 and 1e-300 W (P/P_max
   * = 1e-300 is finite), T/T_max = 1/2: ratio (1 - 1e-300)/(1/2) = 2. */
  const char ok[] = "job,cap_w,power_w,tokens_per_s\n"
                    "a,100,1e-300,1\n"
                    "a,200,1e300,2\n";
  set = load(ok, NULL);
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, &err), 0);
  ASSERT_NEAR(ix.pfi, 2.0, 1e-15);
  pfi_index_release(&ix);
  pfi_curveset_release(&set);
}

/* A job whose SDs are 0: every draw is its PFI, and the interval is that
 * point, never a 2.5 % bound above the 97.5 % one (interpolation between
 * equal draws rounded it one ulp up; the fuzzer's input). */
static void ci_zero_sd_point(void **state) {
  (void)state;
  static const char csv[] =
      "job,cap_w,power_w,tokens_per_s,power_sd_w,tokens_sd\n"
      "b,700,1000,900,0,0\nb,300,990,110,0,0\n";
  struct pfi_curveset set;
  struct pfi_error err;
  assert_int_equal(
      pfi_curveset_read_mem(&set, "z", csv, sizeof csv - 1, NULL, &err), 0);
  struct pfi_index ix;
  assert_int_equal(pfi_index_compute(&set.c[0], &ix, &err), 0);
  double lo, hi;
  int rc = pfi_index_ci(&set.c[0], 8, 1, PFI_INDEX_DEFAULT_REL_SD_POWER,
                        PFI_INDEX_DEFAULT_REL_SD_TOKENS, &lo, &hi, &err);
  assert_true(rc > 0);
  assert_true(lo <= hi);
  ASSERT_NEAR(lo, ix.pfi, 1e-12 * fabs(ix.pfi));
  ASSERT_NEAR(hi, ix.pfi, 1e-12 * fabs(ix.pfi));
  pfi_index_release(&ix);
  pfi_curveset_release(&set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ratio_area_ce_by_hand),
      cmocka_unit_test(ce_two_points_closed_form),
      cmocka_unit_test(proportional_curve),
      cmocka_unit_test(excluded_caps_listed),
      cmocka_unit_test(unit_scaling_invariance),
      cmocka_unit_test(row_order_invariance),
      cmocka_unit_test(ci_linear_case_closed_form),
      cmocka_unit_test(ci_default_noise),
      cmocka_unit_test(ci_keeps_measured_exclusions),
      cmocka_unit_test(restrict_caps),
      cmocka_unit_test(real_sweep_mapped),
      cmocka_unit_test(overflow_is_an_error),
      cmocka_unit_test(ci_zero_sd_point),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
