/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/stats.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int all_finite(const double *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i]))
      return 0;
  return 1;
}

static int is_constant(const double *x, size_t n, size_t stride) {
  for (size_t i = 1; i < n; i++)
    if (x[i * stride] != x[0])
      return 0;
  return 1;
}

double pfi_stats_t_p(double t, double df) {
  if (isnan(t) || !(df > 0))
    return NAN;
  if (isinf(t))
    return 0.0;
  double p = 2.0 * gsl_cdf_tdist_Q(fabs(t), df);
  return p > 1.0 ? 1.0 : p;
}

double pfi_stats_z_p(double z) {
  if (isnan(z))
    return NAN;
  if (isinf(z))
    return 0.0;
  double p = 2.0 * gsl_cdf_ugaussian_Q(fabs(z));
  return p > 1.0 ? 1.0 : p;
}

/* Median of sorted finite data. GSL's (a + b) / 2 of the middle pair is
 * infinite when both are near the largest double; a/2 + b/2 is then the
 * same midpoint without the overflow. */
static double median_sorted(const double *c, size_t n) {
  if (n % 2)
    return c[n / 2];
  double a = c[n / 2 - 1], b = c[n / 2];
  double m = (a + b) / 2.0;
  return isfinite(m) ? m : a / 2.0 + b / 2.0;
}

/* Mean of finite data; the plain sum when it is finite, else the sum of
 * x/n, which cannot overflow (|x/n| summed n times is at most max |x|). */
static double mean_of(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += x[i];
  if (isfinite(s))
    return s / (double)n;
  s = 0;
  for (size_t i = 0; i < n; i++)
    s += x[i] / (double)n;
  return s;
}

int pfi_stats_median(const double *x, size_t n, double *median,
                     struct pfi_error *err) {
  if (n == 0)
    return pfi_error_set(err, PFI_EINVAL, "median of no values");
  double *c = malloc(n * sizeof *c);
  if (!c)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  memcpy(c, x, n * sizeof *c);
  gsl_sort(c, 1, n);
  *median = median_sorted(c, n);
  free(c);
  return 0;
}

int pfi_stats_ranks(const double *x, size_t n, double *ranks, double *tie_sum,
                    struct pfi_error *err) {
  if (n == 0)
    return pfi_error_set(err, PFI_EINVAL, "ranks of no values");
  if (!all_finite(x, n))
    return pfi_error_set(err, PFI_EINVAL, "ranks: value is not finite");
  size_t *ix = malloc(n * sizeof *ix);
  if (!ix)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  gsl_sort_index(ix, x, 1, n);
  double ts = 0.0;
  size_t i = 0;
  while (i < n) {
    size_t j = i + 1;
    while (j < n && x[ix[j]] == x[ix[i]])
      j++;
    /* Positions i..j-1 (0-based) share ranks i+1..j: their average. */
    double avg = 0.5 * ((double)(i + 1) + (double)j);
    for (size_t k = i; k < j; k++)
      ranks[ix[k]] = avg;
    double t = (double)(j - i);
    ts += t * t * t - t;
    i = j;
  }
  free(ix);
  if (tie_sum)
    *tie_sum = ts;
  return 0;
}

static int check_pair(const double *x, const double *y, size_t n,
                      const char *what, struct pfi_error *err) {
  if (n < 3)
    return pfi_error_set(err, PFI_EINVAL, "%s: needs at least 3 pairs, got %zu",
                         what, n);
  if (!all_finite(x, n) || !all_finite(y, n))
    return pfi_error_set(err, PFI_EINVAL, "%s: value is not finite", what);
  if (is_constant(x, n, 1))
    return pfi_error_set(err, PFI_EINVAL,
                         "%s: x is constant, correlation undefined", what);
  if (is_constant(y, n, 1))
    return pfi_error_set(err, PFI_EINVAL,
                         "%s: y is constant, correlation undefined", what);
  return 0;
}

/*
 * The power of two that brings the largest |x[i]| near 1. r is invariant
 * under scaling either variable, and scaling by a power of two is exact, so
 * r of normal-range data is bit for bit what it was unscaled; but sums of
 * squares of values near 1e300 (or 1e-300) no longer overflow to infinity
 * (or underflow to 0), which gave r = 0 or r = 1 for such data.
 */
static int scale_exp(const double *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(x[i]) > m)
      m = fabs(x[i]);
  int e = 0;
  if (m > 0)
    frexp(m, &e);
  return e;
}

/* Pearson r of arrays already checked; p from t with n - 2 df. */
static void pearson_core(const double *x, const double *y, size_t n, double *r,
                         double *p) {
  int ex = scale_exp(x, n), ey = scale_exp(y, n);
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; i++) {
    mx += ldexp(x[i], -ex);
    my += ldexp(y[i], -ey);
  }
  mx /= (double)n;
  my /= (double)n;
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    double dx = ldexp(x[i], -ex) - mx, dy = ldexp(y[i], -ey) - my;
    sxx += dx * dx;
    syy += dy * dy;
    sxy += dx * dy;
  }
  double rr = sxy / sqrt(sxx * syy);
  /* Rounding can push |r| a hair above 1 for perfectly linear data. */
  if (rr > 1.0)
    rr = 1.0;
  if (rr < -1.0)
    rr = -1.0;
  *r = rr;
  if (p) {
    double df = (double)n - 2.0;
    double one_minus = 1.0 - rr * rr;
    *p = one_minus <= 0.0 ? 0.0 : pfi_stats_t_p(rr * sqrt(df / one_minus), df);
  }
}

int pfi_stats_pearson(const double *x, const double *y, size_t n, double *r,
                      double *p, struct pfi_error *err) {
  int rc = check_pair(x, y, n, "pearson", err);
  if (rc < 0)
    return rc;
  pearson_core(x, y, n, r, p);
  return 0;
}

int pfi_stats_spearman(const double *x, const double *y, size_t n, double *rho,
                       double *p, struct pfi_error *err) {
  int rc = check_pair(x, y, n, "spearman", err);
  if (rc < 0)
    return rc;
  double *rx = malloc(2 * n * sizeof *rx);
  if (!rx)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  double *ry = rx + n;
  rc = pfi_stats_ranks(x, n, rx, NULL, err);
  if (rc == 0)
    rc = pfi_stats_ranks(y, n, ry, NULL, err);
  if (rc == 0)
    pearson_core(rx, ry, n, rho, p);
  free(rx);
  return rc;
}

/* ---- OLS ---- */

void pfi_ols_release(struct pfi_ols *m) {
  if (!m)
    return;
  free(m->coef);
  free(m->se);
  free(m->cov);
  free(m->fitted);
  free(m->resid);
  free(m->leverage);
  memset(m, 0, sizeof *m);
}

double pfi_ols_predict(const struct pfi_ols *m, const double *xrow) {
  double v = m->coef[0];
  for (size_t j = 0; j < m->k; j++)
    v += m->coef[j + 1] * xrow[j];
  return v;
}

int pfi_ols_fit(const double *x, size_t n, size_t k, const double *y,
                struct pfi_ols *out, struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  size_t p = k + 1;
  if (n <= p)
    return pfi_error_set(err, PFI_EINVAL,
                         "ols: %zu rows for %zu coefficients: needs more "
                         "than %zu rows",
                         n, p, p);
  if ((k && !all_finite(x, n * k)) || !all_finite(y, n))
    return pfi_error_set(err, PFI_EINVAL, "ols: value is not finite");
  for (size_t j = 0; j < k; j++)
    if (is_constant(x + j, n, k))
      return pfi_error_set(err, PFI_EINVAL,
                           "ols: predictor %zu is constant (collinear with "
                           "the intercept): singular design",
                           j + 1);

  int rc = 0;
  gsl_matrix *X = gsl_matrix_alloc(n, p);
  gsl_matrix *U = gsl_matrix_alloc(n, p);
  gsl_matrix *V = gsl_matrix_alloc(p, p);
  gsl_vector *S = gsl_vector_alloc(p);
  gsl_vector *work = gsl_vector_alloc(p);
  gsl_vector *yv = gsl_vector_alloc(n);
  gsl_vector *c = gsl_vector_alloc(p);
  gsl_matrix *gcov = gsl_matrix_alloc(p, p);
  gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, p);
  out->coef = malloc(p * sizeof *out->coef);
  out->se = malloc(p * sizeof *out->se);
  out->cov = malloc(p * p * sizeof *out->cov);
  out->fitted = malloc(n * sizeof *out->fitted);
  out->resid = malloc(n * sizeof *out->resid);
  out->leverage = malloc(n * sizeof *out->leverage);
  if (!X || !U || !V || !S || !work || !yv || !c || !gcov || !ws ||
      !out->coef || !out->se || !out->cov || !out->fitted || !out->resid ||
      !out->leverage) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    gsl_matrix_set(X, i, 0, 1.0);
    for (size_t j = 0; j < k; j++)
      gsl_matrix_set(X, i, j + 1, x[i * k + j]);
    gsl_vector_set(yv, i, y[i]);
  }

  /* Coefficients by GSL's truncated SVD solver: columns are balanced first,
   * so the rank test below is scale-free. A rank below p means collinear
   * predictors; GSL would silently return a minimum-norm solution, which is
   * not a least-squares fit anyone asked for. */
  gsl_error_handler_t *old = gsl_set_error_handler_off();
  double chisq = 0;
  size_t rank = 0;
  int g = gsl_multifit_linear_tsvd(X, yv, 1e-10, c, gcov, &chisq, &rank, ws);
  if (g == 0) {
    gsl_matrix_memcpy(U, X);
    g = gsl_linalg_SV_decomp(U, V, S, work);
  }
  gsl_set_error_handler(old);
  if (g != 0) {
    rc = pfi_error_set(err, PFI_ENUMERIC, "ols: least squares failed: %s",
                       gsl_strerror(g));
    goto out;
  }
  if (rank < p) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "ols: singular design (rank %zu of %zu): predictors "
                       "are collinear",
                       rank, p);
    goto out;
  }
  double smax = gsl_vector_get(S, 0);
  for (size_t j = 0; j < p; j++)
    if (!(gsl_vector_get(S, j) > 1e-13 * smax)) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "ols: singular design: predictors are collinear");
      goto out;
    }
  for (size_t j = 0; j < p; j++)
    out->coef[j] = gsl_vector_get(c, j);

  /* With X = U S V', the hat matrix is U U' (leverage = squared row norms
   * of U) and (X'X)^-1 = V S^-2 V'. */
  out->n = n;
  out->k = k;
  double my = 0;
  for (size_t i = 0; i < n; i++)
    my += y[i];
  my /= (double)n;
  double sse = 0, sst = 0;
  for (size_t i = 0; i < n; i++) {
    double f = out->coef[0];
    for (size_t j = 0; j < k; j++)
      f += out->coef[j + 1] * x[i * k + j];
    out->fitted[i] = f;
    out->resid[i] = y[i] - f;
    sse += out->resid[i] * out->resid[i];
    sst += (y[i] - my) * (y[i] - my);
    double h = 0;
    for (size_t j = 0; j < p; j++) {
      double u = gsl_matrix_get(U, i, j);
      h += u * u;
    }
    out->leverage[i] = h;
  }
  double dof = (double)(n - p);
  double s2 = sse / dof;
  for (size_t a = 0; a < p; a++)
    for (size_t b = 0; b < p; b++) {
      double v = 0;
      for (size_t j = 0; j < p; j++) {
        double sj = gsl_vector_get(S, j);
        v += gsl_matrix_get(V, a, j) * gsl_matrix_get(V, b, j) / (sj * sj);
      }
      out->cov[a * p + b] = s2 * v;
    }
  for (size_t j = 0; j < p; j++)
    out->se[j] = sqrt(out->cov[j * p + j]);
  out->sse = sse;
  out->sst = sst;
  out->rmse = sqrt(sse / (double)n);
  out->sigma = sqrt(s2);
  if (sst > 0) {
    out->r2 = 1.0 - sse / sst;
    out->adj_r2 = 1.0 - (1.0 - out->r2) * ((double)n - 1.0) / dof;
  } else {
    out->r2 = NAN;
    out->adj_r2 = NAN;
  }
  /* Finite input can still overflow (y near 1e308: its squares, or a
   * coefficient beyond the double range). A fit with an infinite or NaN
   * coefficient, standard error, leverage or rmse is no fit. */
  for (size_t j = 0; j < p && rc == 0; j++)
    if (!isfinite(out->coef[j]) || !isfinite(out->se[j]))
      rc = pfi_error_set(err, PFI_ERANGE,
                         "ols: the %s%.0zu coefficient or its standard error "
                         "is not a finite number (values too large or too "
                         "small)",
                         j ? "predictor " : "intercept", j);
  for (size_t i = 0; i < n && rc == 0; i++)
    if (!isfinite(out->leverage[i]) || !isfinite(out->fitted[i]))
      rc = pfi_error_set(err, PFI_ERANGE,
                         "ols: row %zu's fit is not a finite number (values "
                         "too large or too small)",
                         i + 1);
  if (rc == 0 && !isfinite(out->rmse))
    rc = pfi_error_set(err, PFI_ERANGE,
                       "ols: the residuals' rmse is not a finite number "
                       "(values too large)");
out:
  gsl_matrix_free(X);
  gsl_matrix_free(U);
  gsl_matrix_free(V);
  gsl_vector_free(S);
  gsl_vector_free(work);
  gsl_vector_free(yv);
  gsl_vector_free(c);
  gsl_matrix_free(gcov);
  if (ws)
    gsl_multifit_linear_free(ws);
  if (rc < 0)
    pfi_ols_release(out);
  return rc;
}

/* ---- Kruskal-Wallis and Dunn ---- */

void pfi_kruskal_release(struct pfi_kruskal *k) {
  if (!k)
    return;
  free(k->n);
  free(k->median);
  free(k->mean);
  free(k->mean_rank);
  free(k->pairs);
  memset(k, 0, sizeof *k);
}

int pfi_stats_kruskal(const double *value, const size_t *group, size_t n,
                      size_t ngroups, struct pfi_kruskal *out,
                      struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  if (ngroups < 2)
    return pfi_error_set(err, PFI_EINVAL,
                         "kruskal: needs at least 2 groups, got %zu", ngroups);
  if (ngroups > PFI_STATS_KRUSKAL_MAX_GROUPS)
    return pfi_error_set(err, PFI_EINVAL,
                         "kruskal: %zu groups, at most %d (Dunn's test "
                         "compares every pair)",
                         ngroups, PFI_STATS_KRUSKAL_MAX_GROUPS);
  if (!all_finite(value, n))
    return pfi_error_set(err, PFI_EINVAL, "kruskal: value is not finite");
  for (size_t i = 0; i < n; i++)
    if (group[i] >= ngroups)
      return pfi_error_set(err, PFI_EINVAL,
                           "kruskal: group index %zu out of range", group[i]);
  int rc = 0;
  double *ranks = malloc((n ? n : 1) * sizeof *ranks);
  double *buf = malloc((n ? n : 1) * sizeof *buf);
  size_t npairs = ngroups * (ngroups - 1) / 2;
  out->ngroups = ngroups;
  out->n = calloc(ngroups, sizeof *out->n);
  out->median = calloc(ngroups, sizeof *out->median);
  out->mean = calloc(ngroups, sizeof *out->mean);
  out->mean_rank = calloc(ngroups, sizeof *out->mean_rank);
  out->pairs = calloc(npairs, sizeof *out->pairs);
  double *praw = malloc(npairs * sizeof *praw);
  if (!ranks || !buf || !out->n || !out->median || !out->mean ||
      !out->mean_rank || !out->pairs || !praw) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    out->n[group[i]]++;
  for (size_t g = 0; g < ngroups; g++)
    if (out->n[g] == 0) {
      rc = pfi_error_set(err, PFI_EINVAL, "kruskal: group %zu is empty", g);
      goto out;
    }
  double ties = 0;
  rc = pfi_stats_ranks(value, n, ranks, &ties, err);
  if (rc < 0)
    goto out;
  double N = (double)n;
  double corr = 1.0 - ties / (N * N * N - N);
  if (!(corr > 0)) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "kruskal: every value is equal: H is undefined");
    goto out;
  }
  for (size_t g = 0; g < ngroups; g++) {
    size_t m = 0;
    double rsum = 0;
    for (size_t i = 0; i < n; i++)
      if (group[i] == g) {
        buf[m++] = value[i];
        rsum += ranks[i];
      }
    out->mean[g] = mean_of(buf, m);
    gsl_sort(buf, 1, m);
    out->median[g] = median_sorted(buf, m);
    out->mean_rank[g] = rsum / (double)m;
  }
  double h = 0;
  for (size_t g = 0; g < ngroups; g++)
    h += (double)out->n[g] * out->mean_rank[g] * out->mean_rank[g];
  h = 12.0 / (N * (N + 1.0)) * h - 3.0 * (N + 1.0);
  h /= corr;
  if (h < 0)
    h = 0; /* rounding when every group has the same mean rank */
  out->H = h;
  out->df = (double)(ngroups - 1);
  out->p = gsl_cdf_chisq_Q(h, out->df);

  /* Dunn (1964) with the tie-corrected variance of a mean rank. */
  double var = N * (N + 1.0) / 12.0 - ties / (12.0 * (N - 1.0));
  size_t q = 0;
  for (size_t a = 0; a < ngroups; a++)
    for (size_t b = a + 1; b < ngroups; b++, q++) {
      struct pfi_dunn_pair *pp = &out->pairs[q];
      pp->a = a;
      pp->b = b;
      double se =
          sqrt(var * (1.0 / (double)out->n[a] + 1.0 / (double)out->n[b]));
      pp->z = (out->mean_rank[a] - out->mean_rank[b]) / se;
      pp->p = pfi_stats_z_p(pp->z);
      praw[q] = pp->p;
    }
  out->npairs = npairs;
  rc = pfi_stats_holm(praw, npairs, praw, err);
  if (rc < 0)
    goto out;
  for (q = 0; q < npairs; q++)
    out->pairs[q].p_holm = praw[q];
out:
  free(ranks);
  free(buf);
  free(praw);
  if (rc < 0)
    pfi_kruskal_release(out);
  return rc;
}

/* ---- multiple testing ---- */

static int check_p(const double *p, size_t m, const char *what,
                   struct pfi_error *err) {
  if (m == 0)
    return pfi_error_set(err, PFI_EINVAL, "%s: no p-values", what);
  for (size_t i = 0; i < m; i++)
    if (!(p[i] >= 0.0 && p[i] <= 1.0))
      return pfi_error_set(err, PFI_EINVAL,
                           "%s: p-value %zu is %g, outside [0, 1]", what, i + 1,
                           p[i]);
  return 0;
}

int pfi_stats_holm(const double *p, size_t m, double *adj,
                   struct pfi_error *err) {
  int rc = check_p(p, m, "holm", err);
  if (rc < 0)
    return rc;
  size_t *ix = malloc(m * sizeof *ix);
  double *tmp = malloc(m * sizeof *tmp);
  if (!ix || !tmp) {
    free(ix);
    free(tmp);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  gsl_sort_index(ix, p, 1, m);
  double run = 0.0;
  for (size_t j = 0; j < m; j++) {
    double v = (double)(m - j) * p[ix[j]];
    if (v > 1.0)
      v = 1.0;
    if (v > run)
      run = v;
    tmp[ix[j]] = run + 0.0; /* a p-value of -0 adjusts to 0, not -0 */
  }
  memcpy(adj, tmp, m * sizeof *adj);
  free(ix);
  free(tmp);
  return 0;
}

int pfi_stats_bh(const double *p, size_t m, double *q, struct pfi_error *err) {
  int rc = check_p(p, m, "fdr", err);
  if (rc < 0)
    return rc;
  size_t *ix = malloc(m * sizeof *ix);
  double *tmp = malloc(m * sizeof *tmp);
  if (!ix || !tmp) {
    free(ix);
    free(tmp);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  gsl_sort_index(ix, p, 1, m);
  double run = 1.0;
  for (size_t j = m; j-- > 0;) {
    double v = (double)m * p[ix[j]] / (double)(j + 1);
    if (v < run)
      run = v;
    tmp[ix[j]] = run + 0.0; /* a p-value of -0 gives q = 0, not -0 */
  }
  memcpy(q, tmp, m * sizeof *q);
  free(ix);
  free(tmp);
  return 0;
}

void pfi_stats_mean_t95(const double *v, size_t n, double *mean,
                        double *half) {
  if (n == 0) {
    *mean = *half = NAN;
    return;
  }
  double m = 0, s2 = 0;
  for (size_t i = 0; i < n; i++)
    m += v[i];
  m /= (double)n;
  for (size_t i = 0; i < n; i++)
    s2 += (v[i] - m) * (v[i] - m);
  *mean = m;
  *half = n > 1 ? gsl_cdf_tdist_Pinv(0.975, (double)(n - 1)) *
                      sqrt(s2 / (double)(n - 1) / (double)n)
                : NAN;
}
