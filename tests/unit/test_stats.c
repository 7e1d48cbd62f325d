/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Statistics module against values computed independently of it: worked by
 * hand in the comments, closed forms evaluated with the C library (not
 * GSL), and published reference answers (cited where used).
 */
#include <string.h>

#include "pfi/stats.h"
#include "testutil.h"

#define PI 3.14159265358979323846

/* Two-sided normal p by the C library's erfc: independent of GSL. */
static double z_p_ref(double z) { return erfc(fabs(z) / sqrt(2.0)); }

/* Closed-form two-sided t p-values for 1 and 3 degrees of freedom (the
 * Student t CDF is elementary for odd df): df 1 is the Cauchy law,
 * F(t) = 1/2 + atan(t)/pi; df 3 has
 * F(t) = 1/2 + (1/pi) (t/(sqrt3 (1 + t^2/3)) + atan(t/sqrt3)). */
static double t1_p_ref(double t) { return 1.0 - 2.0 / PI * atan(fabs(t)); }
static double t3_p_ref(double t) {
  t = fabs(t);
  double u = t / sqrt(3.0);
  return 1.0 - 2.0 / PI * (u / (1.0 + t * t / 3.0) + atan(u));
}

static void ranks_average_ties(void **state) {
  (void)state;
  /* 10, 20, 20, 5: 5 is 1st, 10 is 2nd, the two 20s share 3 and 4. */
  const double x[] = {10, 20, 20, 5};
  double r[4], ts = -1;
  assert_int_equal(pfi_stats_ranks(x, 4, r, &ts, NULL), 0);
  ASSERT_NEAR(r[0], 2.0, 0);
  ASSERT_NEAR(r[1], 3.5, 0);
  ASSERT_NEAR(r[2], 3.5, 0);
  ASSERT_NEAR(r[3], 1.0, 0);
  ASSERT_NEAR(ts, 2 * 2 * 2 - 2, 0); /* one tie group of size 2 */
  const double bad[] = {1, NAN};
  assert_int_equal(pfi_stats_ranks(bad, 2, r, NULL, NULL), PFI_EINVAL);
}

static void pearson_hand(void **state) {
  (void)state;
  /* x = 1..5, y = 2,4,5,4,5: deviations (-2,-1,0,1,2), (-2,0,1,0,1);
   * Sxy = 6, Sxx = 10, Syy = 6, r = 6/sqrt(60) = sqrt(0.6).
   * t = r sqrt(3/(1 - r^2)) = sqrt(4.5), df = 3. */
  const double x[] = {1, 2, 3, 4, 5}, y[] = {2, 4, 5, 4, 5};
  double r, p;
  struct pfi_error err;
  assert_int_equal(pfi_stats_pearson(x, y, 5, &r, &p, &err), 0);
  ASSERT_NEAR(r, sqrt(0.6), 1e-14);
  /* Tolerance: GSL's t CDF against the closed form, both near 1e-15
   * relative; 1e-12 leaves room for rounding. */
  ASSERT_NEAR(p, t3_p_ref(sqrt(4.5)), 1e-12);
  ASSERT_NEAR(p, 0.12403, 1e-5); /* the closed form evaluated by hand */

  /* n = 3 (df 1, the Cauchy closed form): x = 1,2,3, y = 1,3,2:
   * deviations (-1,0,1), (-1,1,0): Sxy = 1, Sxx = Syy = 2, r = 1/2,
   * t = 0.5 sqrt(1/0.75) = 1/sqrt(3). */
  const double x3[] = {1, 2, 3}, y3[] = {1, 3, 2};
  assert_int_equal(pfi_stats_pearson(x3, y3, 3, &r, &p, &err), 0);
  ASSERT_NEAR(r, 0.5, 1e-15);
  ASSERT_NEAR(p, t1_p_ref(1.0 / sqrt(3.0)), 1e-12);
  ASSERT_NEAR(p, 2.0 / 3.0, 1e-12); /* 1 - (2/pi)(pi/6) */

  /* Perfect correlation: p = 0, never NaN. */
  const double yy[] = {3, 5, 7, 9, 11};
  assert_int_equal(pfi_stats_pearson(x, yy, 5, &r, &p, &err), 0);
  ASSERT_NEAR(r, 1.0, 0);
  ASSERT_NEAR(p, 0.0, 0);
}

static void pearson_errors(void **state) {
  (void)state;
  const double x[] = {1, 2, 3, 4}, c[] = {0.1, 0.1, 0.1, 0.1};
  double r, p;
  struct pfi_error err;
  assert_int_equal(pfi_stats_pearson(x, c, 4, &r, &p, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "constant"));
  assert_int_equal(pfi_stats_spearman(c, x, 4, &r, &p, &err), PFI_EINVAL);
  assert_int_equal(pfi_stats_pearson(x, x, 2, &r, &p, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "at least 3"));
}

static void spearman_published(void **state) {
  (void)state;
  /* The worked example of the Wikipedia article "Spearman's rank
   * correlation coefficient" (IQ against hours of television per week):
   * rho = -29/165 = -0.175757..., p = 0.627188 "using the
   * t-distribution". No ties, so rho = 1 - 6 sum d^2/(n(n^2-1)) with
   * sum d^2 = 194 (the article's table). */
  const double iq[] = {106, 100, 86, 101, 99, 103, 97, 113, 112, 110};
  const double tv[] = {7, 27, 2, 50, 28, 29, 20, 12, 6, 17};
  double rho, p;
  struct pfi_error err;
  assert_int_equal(pfi_stats_spearman(iq, tv, 10, &rho, &p, &err), 0);
  ASSERT_NEAR(rho, -29.0 / 165.0, 1e-14);
  ASSERT_NEAR(p, 0.627188, 1e-6); /* published to 6 decimals */
}

static void spearman_ties_hand(void **state) {
  (void)state;
  /* x = 1,2,2,3 has ranks 1,2.5,2.5,4; y = 1,2,3,4 has ranks 1..4. Both
   * mean 2.5; deviations (-1.5,0,0,1.5), (-1.5,-0.5,0.5,1.5):
   * Sxy = 4.5, Sxx = 4.5, Syy = 5, rho = 4.5/sqrt(22.5) = 3/sqrt(10).
   * (The no-ties shortcut 1 - 6 sum d^2/(n(n^2-1)) would give 0.95: the
   * average-rank Pearson form is the tie-correct one.) */
  const double x[] = {1, 2, 2, 3}, y[] = {1, 2, 3, 4};
  double rho;
  assert_int_equal(pfi_stats_spearman(x, y, 4, &rho, NULL, NULL), 0);
  ASSERT_NEAR(rho, 3.0 / sqrt(10.0), 1e-14);
  /* Invariant under a monotone transform of x. */
  const double ex[] = {exp(1), exp(2), exp(2), exp(3)};
  double rho2;
  assert_int_equal(pfi_stats_spearman(ex, y, 4, &rho2, NULL, NULL), 0);
  ASSERT_NEAR(rho2, rho, 0);
}

static void ols_simple_closed_form(void **state) {
  (void)state;
  /* Same data as pearson_hand. Simple regression closed forms:
   * slope = Sxy/Sxx = 0.6, intercept = 4 - 0.6*3 = 2.2; fitted 2.8, 3.4,
   * 4.0, 4.6, 5.2; residuals -0.8, 0.6, 1.0, -0.6, -0.2; SSE = 2.4,
   * SST = 6, r2 = 0.6, adj_r2 = 1 - 0.4*4/3; rmse = sqrt(2.4/5);
   * s^2 = 2.4/3 = 0.8; se(slope) = sqrt(0.8/10);
   * se(intercept) = sqrt(0.8 (1/5 + 9/10)); leverage
   * 1/n + (x - 3)^2/10 = 0.6, 0.3, 0.2, 0.3, 0.6. */
  const double x[] = {1, 2, 3, 4, 5}, y[] = {2, 4, 5, 4, 5};
  struct pfi_ols m;
  struct pfi_error err;
  assert_int_equal(pfi_ols_fit(x, 5, 1, y, &m, &err), 0);
  /* Tolerance 1e-12: an SVD solution of a 5x2 system is accurate to a few
   * ulps times the condition number (about 10 here). */
  const double tol = 1e-12;
  ASSERT_NEAR(m.coef[0], 2.2, tol);
  ASSERT_NEAR(m.coef[1], 0.6, tol);
  ASSERT_NEAR(m.se[0], sqrt(0.88), tol);
  ASSERT_NEAR(m.se[1], sqrt(0.08), tol);
  ASSERT_NEAR(m.r2, 0.6, tol);
  ASSERT_NEAR(m.adj_r2, 1.0 - 0.4 * 4.0 / 3.0, tol);
  ASSERT_NEAR(m.rmse, sqrt(0.48), tol);
  ASSERT_NEAR(m.sigma, sqrt(0.8), tol);
  const double lev[] = {0.6, 0.3, 0.2, 0.3, 0.6};
  const double res[] = {-0.8, 0.6, 1.0, -0.6, -0.2};
  for (int i = 0; i < 5; i++) {
    ASSERT_NEAR(m.leverage[i], lev[i], tol);
    ASSERT_NEAR(m.resid[i], res[i], tol);
  }
  const double x6 = 6;
  ASSERT_NEAR(pfi_ols_predict(&m, &x6), 2.2 + 0.6 * 6, tol);
  pfi_ols_release(&m);
}

static void ols_longley_nist(void **state) {
  (void)state;
  /* NIST Statistical Reference Datasets, linear regression "Longley"
   * (higher difficulty): y = Employed on 6 predictors, 16 rows. The
   * certified values are quoted from the NIST StRD page (15 significant
   * digits). Tolerance 1e-7 relative: the design is ill-conditioned
   * (condition number about 1e8 after scaling), so double precision keeps
   * about 8 of the 15 digits. */
  static const double d[16][7] = {
      {60323, 83.0, 234289, 2356, 1590, 107608, 1947},
      {61122, 88.5, 259426, 2325, 1456, 108632, 1948},
      {60171, 88.2, 258054, 3682, 1616, 109773, 1949},
      {61187, 89.5, 284599, 3351, 1650, 110929, 1950},
      {63221, 96.2, 328975, 2099, 3099, 112075, 1951},
      {63639, 98.1, 346999, 1932, 3594, 113270, 1952},
      {64989, 99.0, 365385, 1870, 3547, 115094, 1953},
      {63761, 100.0, 363112, 3578, 3350, 116219, 1954},
      {66019, 101.2, 397469, 2904, 3048, 117388, 1955},
      {67857, 104.6, 419180, 2822, 2857, 118734, 1956},
      {68169, 108.4, 442769, 2936, 2798, 120445, 1957},
      {66513, 110.8, 444546, 4681, 2637, 121950, 1958},
      {68655, 112.6, 482704, 3813, 2552, 123366, 1959},
      {69564, 114.2, 502601, 3931, 2514, 125368, 1960},
      {69331, 115.7, 518173, 4806, 2572, 127852, 1961},
      {70551, 116.9, 554894, 4007, 2827, 130081, 1962}};
  static const double cert[7] = {-3482258.63459582,      15.0618722713733,
                                 -0.358191792925910E-01, -2.02022980381683,
                                 -1.03322686717359,      -0.511041056535807E-01,
                                 1829.15146461355};
  static const double cert_se[7] = {890420.383607373,      84.9149257747669,
                                    0.334910077722432E-01, 0.488399681651699,
                                    0.214274163161675,     0.226073200069370,
                                    455.478499142212};
  double x[16 * 6], y[16];
  for (int i = 0; i < 16; i++) {
    y[i] = d[i][0];
    for (int j = 0; j < 6; j++)
      x[i * 6 + j] = d[i][j + 1];
  }
  struct pfi_ols m;
  struct pfi_error err;
  assert_int_equal(pfi_ols_fit(x, 16, 6, y, &m, &err), 0);
  for (int j = 0; j < 7; j++) {
    ASSERT_NEAR(m.coef[j], cert[j], 1e-7 * fabs(cert[j]));
    ASSERT_NEAR(m.se[j], cert_se[j], 1e-7 * fabs(cert_se[j]));
  }
  ASSERT_NEAR(m.sigma, 304.854073561965, 1e-7 * 304.85);
  ASSERT_NEAR(m.r2, 0.995479004577296, 1e-9);
  /* The hat matrix is a projection of rank 7: its trace is 7. */
  double tr = 0;
  for (int i = 0; i < 16; i++)
    tr += m.leverage[i];
  ASSERT_NEAR(tr, 7.0, 1e-9);
  pfi_ols_release(&m);
}

static void ols_errors(void **state) {
  (void)state;
  struct pfi_ols m;
  struct pfi_error err;
  /* n <= k + 1. */
  const double x[] = {1, 2}, y[] = {1, 2};
  assert_int_equal(pfi_ols_fit(x, 2, 1, y, &m, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "rows"));
  /* A constant predictor is collinear with the intercept. */
  const double xc[] = {1, 5, 2, 5, 3, 5, 4, 5}, y4[] = {1, 2, 3, 5};
  assert_int_equal(pfi_ols_fit(xc, 4, 2, y4, &m, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "predictor 2 is constant"));
  /* Two predictors with x2 = 2 x1: rank 2 of 3. */
  const double xl[] = {1, 2, 2, 4, 3, 6, 4, 8, 5, 10};
  const double y5[] = {1, 3, 2, 5, 4};
  assert_int_equal(pfi_ols_fit(xl, 5, 2, y5, &m, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "singular"));
  pfi_ols_release(&m); /* safe after failure */
}

static void kruskal_ties_closed_form(void **state) {
  (void)state;
  /* Groups {1,1,1}, {2,2,2}, {2,2}: pooled ranks 2 for the 1s and
   * (4+8)/2 = 6 for the 2s. Mean ranks 2, 6, 6; N = 8.
   * H0 = 12/(8*9) (3*4 + 3*36 + 2*36) - 3*9 = 32 - 27 = 5.
   * Ties: (27-3) + (125-5) = 144; C = 1 - 144/504 = 5/7; H = 7.
   * Chi-square with 2 df has survival exp(-x/2): p = exp(-3.5).
   * (SciPy's scipy.stats.kruskal documentation shows the same example:
   * statistic 7.0, p 0.0301973834223185.)
   * Dunn: var = N(N+1)/12 - 144/(12*7) = 6 - 12/7 = 30/7.
   *   (0,1): z = (2-6)/sqrt(30/7 * 2/3), (0,2): z = -4/sqrt(30/7 * 5/6),
   *   (1,2): z = 0. Holm over 3 pairs: 3 p01, max(that, 2 p02), 1. */
  const double v[] = {1, 1, 1, 2, 2, 2, 2, 2};
  const size_t g[] = {0, 0, 0, 1, 1, 1, 2, 2};
  struct pfi_kruskal k;
  struct pfi_error err;
  assert_int_equal(pfi_stats_kruskal(v, g, 8, 3, &k, &err), 0);
  ASSERT_NEAR(k.H, 7.0, 1e-12);
  ASSERT_NEAR(k.df, 2.0, 0);
  ASSERT_NEAR(k.p, exp(-3.5), 1e-14);
  ASSERT_NEAR(k.p, 0.0301973834223185, 1e-15);
  ASSERT_EQ_INT(k.n[2], 2);
  ASSERT_NEAR(k.median[0], 1.0, 0);
  ASSERT_NEAR(k.mean[1], 2.0, 0);
  ASSERT_NEAR(k.mean_rank[0], 2.0, 1e-15);
  assert_int_equal(k.npairs, 3);
  double z01 = -4.0 / sqrt(30.0 / 7.0 * 2.0 / 3.0);
  double z02 = -4.0 / sqrt(30.0 / 7.0 * 5.0 / 6.0);
  ASSERT_EQ_INT(k.pairs[0].a, 0);
  ASSERT_EQ_INT(k.pairs[0].b, 1);
  ASSERT_NEAR(k.pairs[0].z, z01, 1e-12);
  ASSERT_NEAR(k.pairs[1].z, z02, 1e-12);
  ASSERT_NEAR(k.pairs[2].z, 0.0, 1e-12);
  /* Tolerance 1e-12: GSL's normal tail against the C library's erfc. */
  ASSERT_NEAR(k.pairs[0].p, z_p_ref(z01), 1e-12);
  ASSERT_NEAR(k.pairs[1].p, z_p_ref(z02), 1e-12);
  ASSERT_NEAR(k.pairs[2].p, 1.0, 1e-12);
  double h0 = 3 * z_p_ref(z01);
  double h1 = fmax(h0, 2 * z_p_ref(z02));
  ASSERT_NEAR(k.pairs[0].p_holm, h0, 1e-12);
  ASSERT_NEAR(k.pairs[1].p_holm, h1, 1e-12);
  ASSERT_NEAR(k.pairs[2].p_holm, 1.0, 1e-12);
  pfi_kruskal_release(&k);
}

static void kruskal_no_ties(void **state) {
  (void)state;
  /* Odd 1..9 against even 2..10: ranks are the values; mean ranks 5 and 6;
   * H = 12/110 (5*25 + 5*36) - 33 = 3/11 (no ties, C = 1). Chi-square with
   * 1 df: p = erfc(sqrt(H/2)). (SciPy's documentation: statistic
   * 0.2727272727272734, p 0.6015081344405895.) */
  const double v[] = {1, 3, 5, 7, 9, 2, 4, 6, 8, 10};
  const size_t g[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  struct pfi_kruskal k;
  assert_int_equal(pfi_stats_kruskal(v, g, 10, 2, &k, NULL), 0);
  ASSERT_NEAR(k.H, 3.0 / 11.0, 1e-12);
  ASSERT_NEAR(k.p, erfc(sqrt(1.5 / 11.0)), 1e-12);
  ASSERT_NEAR(k.p, 0.6015081344405895, 1e-12);
  /* Dunn on 2 groups: z^2 equals H when there are no ties. */
  ASSERT_NEAR(k.pairs[0].z * k.pairs[0].z, k.H, 1e-12);
  ASSERT_NEAR(k.pairs[0].p_holm, k.pairs[0].p, 0);
  pfi_kruskal_release(&k);
}

static void kruskal_errors(void **state) {
  (void)state;
  struct pfi_kruskal k;
  struct pfi_error err;
  const double v[] = {1, 1, 1, 1};
  const size_t g[] = {0, 0, 1, 1};
  assert_int_equal(pfi_stats_kruskal(v, g, 4, 2, &k, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "equal"));
  const double w[] = {1, 2, 3, 4};
  assert_int_equal(pfi_stats_kruskal(w, g, 4, 3, &k, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "empty"));
  assert_int_equal(pfi_stats_kruskal(w, g, 4, 1, &k, &err), PFI_EINVAL);
  /* One group more than the bound: refused before any pair is allocated. */
  enum { NG = PFI_STATS_KRUSKAL_MAX_GROUPS + 1 };
  static double vv[NG];
  static size_t gg[NG];
  for (size_t i = 0; i < NG; i++) {
    vv[i] = (double)i;
    gg[i] = i;
  }
  assert_int_equal(pfi_stats_kruskal(vv, gg, NG, NG, &k, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "at most 256"));
  assert_int_equal(pfi_stats_kruskal(vv, gg, NG - 1, NG - 1, &k, &err), 0);
  ASSERT_EQ_INT(k.npairs, 256 * 255 / 2);
  pfi_kruskal_release(&k);
}

/* Benjamini-Hochberg by its definition, O(m^2): q_i is the least
 * m p_j / rank_j over all j with p_j >= p_i, capped at 1 (ties share the
 * highest rank of their group). */
static double bh_ref(const double *p, size_t m, size_t i) {
  double best = 1.0;
  for (size_t j = 0; j < m; j++) {
    if (p[j] < p[i])
      continue;
    size_t rank = 0;
    for (size_t l = 0; l < m; l++)
      rank += p[l] <= p[j];
    double v = (double)m * p[j] / (double)rank;
    if (v < best)
      best = v;
  }
  return best;
}

static void bh_published_and_brute_force(void **state) {
  (void)state;
  /* The 15 p-values of Benjamini & Hochberg (1995), J. R. Stat. Soc. B 57,
   * p. 297 (the example of section 4): at FDR level 0.05 the procedure
   * rejects the four smallest. */
  const double p[15] = {0.0001, 0.0004, 0.0019, 0.0095, 0.0201,
                        0.0278, 0.0298, 0.0344, 0.0459, 0.3240,
                        0.4262, 0.5719, 0.6528, 0.7590, 1.0000};
  double q[15];
  assert_int_equal(pfi_stats_bh(p, 15, q, NULL), 0);
  for (int i = 0; i < 15; i++) {
    ASSERT_NEAR(q[i], bh_ref(p, 15, (size_t)i), 1e-15);
    assert_true((q[i] <= 0.05) == (i < 4));
  }
  /* By hand: p = 0.04, 0.01, 0.03 (m = 3). Sorted 0.01, 0.03, 0.04 give
   * m p / rank = 0.03, 0.045, 0.04; minima from the top: 0.04, 0.04, 0.03.
   * In input order: 0.04, 0.03, 0.04. */
  const double p3[] = {0.04, 0.01, 0.03};
  double q3[3];
  assert_int_equal(pfi_stats_bh(p3, 3, q3, NULL), 0);
  ASSERT_NEAR(q3[0], 0.04, 1e-15);
  ASSERT_NEAR(q3[1], 0.03, 1e-15);
  ASSERT_NEAR(q3[2], 0.04, 1e-15);
  /* Ties and aliasing (q written over p). */
  double pt[] = {0.02, 0.02, 0.5, 0.02};
  assert_int_equal(pfi_stats_bh(pt, 4, pt, NULL), 0);
  ASSERT_NEAR(pt[0], 4 * 0.02 / 3, 1e-15);
  ASSERT_NEAR(pt[1], 4 * 0.02 / 3, 1e-15);
  ASSERT_NEAR(pt[2], 0.5, 1e-15);
  const double bad[] = {0.5, 1.5};
  assert_int_equal(pfi_stats_bh(bad, 2, q3, NULL), PFI_EINVAL);
}

static void holm_hand(void **state) {
  (void)state;
  /* p = 0.01, 0.04, 0.03 (m = 3). Sorted 0.01, 0.03, 0.04 times 3, 2, 1:
   * 0.03, 0.06, 0.04; running maximum 0.03, 0.06, 0.06. In input order:
   * 0.03, 0.06, 0.06. And 0.6 times 3 caps at 1. */
  const double p[] = {0.01, 0.04, 0.03};
  double a[3];
  assert_int_equal(pfi_stats_holm(p, 3, a, NULL), 0);
  ASSERT_NEAR(a[0], 0.03, 1e-15);
  ASSERT_NEAR(a[1], 0.06, 1e-15);
  ASSERT_NEAR(a[2], 0.06, 1e-15);
  const double p2[] = {0.6, 0.9};
  assert_int_equal(pfi_stats_holm(p2, 2, a, NULL), 0);
  ASSERT_NEAR(a[0], 1.0, 0);
  ASSERT_NEAR(a[1], 1.0, 0);
}

static void median_and_tails(void **state) {
  (void)state;
  const double x[] = {5, 1, 4, 2};
  double m;
  assert_int_equal(pfi_stats_median(x, 4, &m, NULL), 0);
  ASSERT_NEAR(m, 3.0, 0);
  assert_int_equal(pfi_stats_median(x, 3, &m, NULL), 0);
  ASSERT_NEAR(m, 4.0, 0);
  ASSERT_NEAR(pfi_stats_z_p(1.959963984540054), 0.05, 1e-12);
  ASSERT_NEAR(pfi_stats_t_p(1.0, 1.0), 0.5, 1e-12); /* Cauchy quartile */
  ASSERT_NEAR(pfi_stats_t_p(INFINITY, 3.0), 0.0, 0);
}

/* Values near the double's limits give the numbers their scaled-down
 * copies give (r is invariant under scaling); the sums of squares used to
 * overflow (r read 0) or underflow (r read 1). */
/* Mean and 95 % t interval of 1, 2, 3, 4, 5: mean 3, s = sqrt(2.5),
 * t(0.975, 4) = 2.776445105 (tables), half-width 2.776445105 sqrt(2.5/5)
 * = 1.963243. Tolerance: the table's digits. */
static void mean_t95_hand(void **state) {
  (void)state;
  const double v[5] = {1, 2, 3, 4, 5};
  double m, h;
  pfi_stats_mean_t95(v, 5, &m, &h);
  ASSERT_NEAR(m, 3, 1e-15);
  ASSERT_NEAR(h, 2.776445105 * sqrt(0.5), 1e-8);
  pfi_stats_mean_t95(v, 1, &m, &h);
  ASSERT_NEAR(m, 1, 0);
  assert_true(isnan(h));
  pfi_stats_mean_t95(v, 0, &m, &h);
  assert_true(isnan(m) && isnan(h));
}

static void extreme_magnitudes(void **state) {
  (void)state;
  struct pfi_error err;
  double r, p, r1, p1;
  /* x = (1, -1, 1, 0), y = (1, 2, 4, 3): means 0.25 and 2.5, Sxy = 0.5,
   * Sxx = 2.75, Syy = 5, so r = 0.5 / sqrt(13.75). */
  const double x[] = {1, -1, 1, 0}, y[] = {1, 2, 4, 3};
  const double xb[] = {1e308, -1e308, 1e308, 0};
  assert_int_equal(pfi_stats_pearson(x, y, 4, &r1, &p1, &err), 0);
  ASSERT_NEAR(r1, 0.5 / sqrt(13.75), 1e-15);
  assert_int_equal(pfi_stats_pearson(xb, y, 4, &r, &p, &err), 0);
  ASSERT_NEAR(r, 0.5 / sqrt(13.75), 1e-15);
  ASSERT_NEAR(p, p1, 1e-15);
  /* x = (1, 2, 3, 0) e-300: Sxy = 2, Sxx = Syy = 5, r = 0.4. */
  const double xt[] = {1e-300, 2e-300, 3e-300, 0};
  assert_int_equal(pfi_stats_pearson(xt, y, 4, &r, &p, &err), 0);
  ASSERT_NEAR(r, 0.4, 1e-15);
  /* Spearman ranks first, so only Pearson's sums needed the scaling; both
   * arguments scaled at once as a check of the y side. */
  const double yb[] = {1e-310, 2e-310, 4e-310, 3e-310};
  assert_int_equal(pfi_stats_pearson(xb, yb, 4, &r, &p, &err), 0);
  ASSERT_NEAR(r, 0.5 / sqrt(13.75), 1e-15);

  /* Group means and medians of values near DBL_MAX: 1e308, not inf. */
  const double v[] = {1e308, 1e308, 1, 2, -1e308, 1e308};
  const size_t g[] = {0, 0, 1, 1, 2, 2};
  struct pfi_kruskal k;
  assert_int_equal(pfi_stats_kruskal(v, g, 6, 3, &k, &err), 0);
  ASSERT_NEAR(k.mean[0], 1e308, 0);
  ASSERT_NEAR(k.median[0], 1e308, 0);
  ASSERT_NEAR(k.mean[2], 0, 0);
  ASSERT_NEAR(k.median[2], 0, 0);
  pfi_kruskal_release(&k);
  double m;
  assert_int_equal(pfi_stats_median(xb, 4, &m, &err), 0);
  ASSERT_NEAR(m, 5e307, 0); /* sorted -1e308, 0, 1e308, 1e308 */

  /* y near the limit overflows the fit: an error, not inf coefficients. */
  const double ox[] = {1, 2, 3, 4}, oy[] = {1e308, -1e308, 1e308, 3};
  struct pfi_ols o;
  assert_int_equal(pfi_ols_fit(ox, 4, 1, oy, &o, &err), PFI_ERANGE);
  assert_non_null(strstr(err.msg, "not a finite number"));

  /* A p-value of -0 (a valid input) adjusts to +0, not -0. */
  const double pz[] = {-0.0, 0.5};
  double q[2];
  assert_int_equal(pfi_stats_bh(pz, 2, q, &err), 0);
  assert_false(signbit(q[0]));
  assert_int_equal(pfi_stats_holm(pz, 2, q, &err), 0);
  assert_false(signbit(q[0]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ranks_average_ties),
      cmocka_unit_test(pearson_hand),
      cmocka_unit_test(pearson_errors),
      cmocka_unit_test(spearman_published),
      cmocka_unit_test(spearman_ties_hand),
      cmocka_unit_test(ols_simple_closed_form),
      cmocka_unit_test(ols_longley_nist),
      cmocka_unit_test(ols_errors),
      cmocka_unit_test(kruskal_ties_closed_form),
      cmocka_unit_test(kruskal_no_ties),
      cmocka_unit_test(kruskal_errors),
      cmocka_unit_test(bh_published_and_brute_force),
      cmocka_unit_test(holm_hand),
      cmocka_unit_test(median_and_tails),
      cmocka_unit_test(extreme_magnitudes),
      cmocka_unit_test(mean_t95_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
