/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Linear PFI models: fit, out-of-sample evaluation, JSON, prediction. */
#include "pfi/model.h"

#include <ctype.h>
#include <float.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/stats.h"

const char pfi_dcgm_metrics[] =
    "dram_active,mem_copy_util,sm_active,tensor_active,nvlink_tx_gbps,"
    "nvlink_rx_gbps,pcie_tx_gbps,pcie_rx_gbps,power_w,sm_clock_mhz,gpu_util,"
    "fb_used_gib,gpu_temp_c";

const char pfi_default_model_features[] = "dram_copy_product";

#define META "arch=moe,task=ft,log2(gpus)"
#define DCGM                                                                   \
  "dram_active,mem_copy_util,sm_active,tensor_active,nvlink_tx_gbps,"          \
  "nvlink_rx_gbps,pcie_tx_gbps,pcie_rx_gbps,power_w,sm_clock_mhz,gpu_util,"    \
  "fb_used_gib,gpu_temp_c"

const struct pfi_predictor_set pfi_ablation_sets[7] = {
    {"i", "DRAM copy product", "dram_copy_product"},
    {"ii", "Arithmetic intensity", "arithmetic_intensity"},
    {"iii", "(i) + (ii)", "dram_copy_product,arithmetic_intensity"},
    {"iv", "Job metadata (architecture; task; log2 GPU count)", META},
    {"v", "(i) + (iv)", "dram_copy_product," META},
    {"vi", "All DCGM metrics", DCGM},
    {"vii", "All DCGM metrics + (iv)", DCGM "," META},
};

int pfi_strlist_split(const char *s, char ***out, size_t *n,
                      struct pfi_error *err) {
  size_t cap = 1;
  for (const char *q = s; *q; q++)
    cap += *q == ',';
  char **list = calloc(cap + 1, sizeof *list);
  if (!list)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  size_t k = 0;
  const char *p = s;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    while (len > 0 && isspace((unsigned char)*p)) {
      p++;
      len--;
    }
    while (len > 0 && isspace((unsigned char)p[len - 1]))
      len--;
    if (len == 0) {
      pfi_strlist_free(list);
      return pfi_error_set(err, PFI_EINVAL, "empty item in list '%s'", s);
    }
    list[k] = strndup(p, len);
    if (!list[k]) {
      pfi_strlist_free(list);
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    }
    k++;
    if (!e)
      break;
    p = e + 1;
  }
  *out = list;
  *n = k;
  return 0;
}

void pfi_strlist_free(char **list) {
  if (!list)
    return;
  for (char **p = list; *p; p++)
    free(*p);
  free(list);
}

/*
 * Power-of-two scale of each column: s_j = 2^-e with max_i |x_ij| in
 * [2^(e-1), 2^e), or 1 for a zero column. Least squares is invariant to
 * column scaling in exact arithmetic, but sums of squares of values near
 * 1e200 overflow and those near 1e-200 underflow; on columns scaled to at
 * most 1 in magnitude neither happens. Scaling by a power of two is exact,
 * so data of ordinary magnitude give the same coefficients to the last bit.
 */
static void col_scales(const double *x, size_t n, size_t k, double *sc) {
  for (size_t j = 0; j < k; j++) {
    double mx = 0;
    for (size_t i = 0; i < n; i++)
      if (fabs(x[i * k + j]) > mx)
        mx = fabs(x[i * k + j]);
    int e = 0;
    if (mx > 0 && isfinite(mx))
      (void)frexp(mx, &e);
    sc[j] = ldexp(1.0, -e);
  }
}

/* Significant decimal digits of the shortest representation of v that
 * reads back as v (1..17): the precision the value was printed with. */
static int sig_digits(double v) {
  int lo = 1, hi = 17;
  char buf[330]; /* %g of any double with up to 17 digits fits */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    snprintf(buf, sizeof buf, "%.*g", mid, v);
    if (strtod(buf, NULL) == v)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/*
 * The relative rounding unit of each column of x as the input gives it:
 * 0.5 * 10^(1 - D), D the most significant digits any of its values needs
 * to read back exactly, so a column printed with 10 digits gives 5e-10
 * and computed values (17 digits) about DBL_EPSILON. A column whose values
 * all fit in PFI_MODEL_EXACT_DIGITS digits (whole numbers, indicators,
 * settings such as 0.25 or 1e200) is taken at face value: 0.
 */
static void col_rounding(const double *x, size_t n, size_t k, double *u) {
  for (size_t j = 0; j < k; j++) {
    int d = 1;
    for (size_t i = 0; i < n && d < 17; i++) {
      double v = x[i * k + j];
      int q = v == 0 || !isfinite(v) ? 1 : sig_digits(v);
      if (q > d)
        d = q;
    }
    u[j] = d <= PFI_MODEL_EXACT_DIGITS ? 0.0 : 0.5 * pow(10.0, 1.0 - d);
  }
}

/*
 * Minimum-norm least squares with an intercept: centers x and y, scales
 * the columns to unit standard deviation, solves the system by the SVD and
 * writes k + 1 coefficients. The rank rule (model.h): a singular value is
 * dropped when it is at most max(n, k) * DBL_EPSILON * s_max (the
 * arithmetic's own noise) or at most the size of the input's rounding in
 * the standardized design, 2 sqrt(sum_ij (u_j x_ij / sd_j)^2) with u_j the
 * column's rounding unit (`u`, from col_rounding(); NULL: computed here):
 * the Frobenius norm of the largest change rounding the inputs can make
 * to the centered, scaled matrix (the factor 2 covers the mean's share),
 * which bounds how far any singular value can move. A direction below it
 * is decided by the rounding of the inputs, not by the data.
 */
static int lstsq_minnorm(const double *x, size_t n, size_t k, const double *y,
                         const double *u, double *coef, size_t *dropped) {
  if (dropped)
    *dropped = 0;
  double ym = 0;
  for (size_t i = 0; i < n; i++)
    ym += y[i];
  ym /= (double)n;
  if (k == 0) {
    coef[0] = ym;
    return 0;
  }
  double *xm = calloc(k, sizeof *xm);
  double *sc = malloc(k * sizeof *sc);
  if (!xm || !sc) {
    free(xm);
    free(sc);
    return PFI_ENOMEM;
  }
  /* Below, x'_ij = x_ij * sc[j]; the solution for x' is scaled back at the
   * end. */
  col_scales(x, n, k, sc);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++)
      xm[j] += x[i * k + j] * sc[j];
  for (size_t j = 0; j < k; j++)
    xm[j] /= (double)n;
  /* Columns are scaled to unit standard deviation so that the rank cut-off
   * does not depend on units (watts next to fractions); a column that is
   * constant in these rows carries no information and gets coefficient 0. */
  double *xs = calloc(k, sizeof *xs);
  if (!xs) {
    free(xm);
    free(sc);
    return PFI_ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++) {
      double d = x[i * k + j] * sc[j] - xm[j];
      xs[j] += d * d;
    }
  for (size_t j = 0; j < k; j++) {
    xs[j] = sqrt(xs[j] / (double)n);
    if (!(xs[j] > 1e-12 * (fabs(xm[j]) + 1e-300)))
      xs[j] = 0;
  }
  double *uc = malloc((k + 1) * sizeof *uc);
  if (!uc) {
    free(xm);
    free(sc);
    free(xs);
    return PFI_ENOMEM;
  }
  if (u)
    memcpy(uc, u, k * sizeof *uc);
  else
    col_rounding(x, n, k, uc);
  double round2 = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++)
      if (xs[j] > 0 && uc[j] > 0) {
        double e = uc[j] * fabs(x[i * k + j] * sc[j]) / xs[j];
        round2 += e * e;
      }
  free(uc);
  int tall = n >= k;
  size_t M = tall ? n : k, N = tall ? k : n;
  gsl_matrix *A = gsl_matrix_alloc(M, N);
  gsl_matrix *V = gsl_matrix_alloc(N, N);
  gsl_vector *S = gsl_vector_alloc(N);
  gsl_vector *w = gsl_vector_alloc(N);
  int rc = 0;
  if (!A || !V || !S || !w) {
    rc = PFI_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++) {
      double v = xs[j] > 0 ? (x[i * k + j] * sc[j] - xm[j]) / xs[j] : 0.0;
      if (tall)
        gsl_matrix_set(A, i, j, v);
      else
        gsl_matrix_set(A, j, i, v);
    }
  if (gsl_linalg_SV_decomp(A, V, S, w) != 0) {
    rc = PFI_ENUMERIC;
    goto out;
  }
  double smax = gsl_vector_get(S, 0);
  double cut = (double)(n > k ? n : k) * DBL_EPSILON * smax;
  if (2.0 * sqrt(round2) > cut)
    cut = 2.0 * sqrt(round2);
  for (size_t j = 0; j < k; j++)
    coef[1 + j] = 0;
  /* tall:  Xc = U S V^T, beta = V S^+ U^T yc (U = A, n x k).
   * wide:  Xc^T = U S V^T, so Xc = V S U^T, beta = U S^+ V^T yc. */
  for (size_t s = 0; s < N; s++) {
    double sv = gsl_vector_get(S, s);
    if (!(sv > cut) || sv == 0) {
      if (dropped)
        (*dropped)++;
      continue;
    }
    double dot = 0;
    for (size_t i = 0; i < n; i++) {
      double u = tall ? gsl_matrix_get(A, i, s) : gsl_matrix_get(V, i, s);
      dot += u * (y[i] - ym);
    }
    dot /= sv;
    for (size_t j = 0; j < k; j++) {
      double v = tall ? gsl_matrix_get(V, j, s) : gsl_matrix_get(A, j, s);
      coef[1 + j] += v * dot;
    }
  }
  for (size_t j = 0; j < k; j++)
    coef[1 + j] = xs[j] > 0 ? coef[1 + j] / xs[j] : 0.0;
  coef[0] = ym;
  for (size_t j = 0; j < k; j++) {
    coef[0] -= coef[1 + j] * xm[j];
    coef[1 + j] *= sc[j];
  }
out:
  free(xm);
  free(sc);
  free(xs);
  gsl_matrix_free(A);
  gsl_matrix_free(V);
  gsl_vector_free(S);
  gsl_vector_free(w);
  return rc;
}

static double predict_coef(const double *coef, size_t k, const double *row) {
  double v = coef[0];
  for (size_t j = 0; j < k; j++)
    v += coef[1 + j] * row[j];
  return v;
}

void pfi_model_release(struct pfi_model *m) {
  if (!m)
    return;
  if (m->features)
    for (size_t j = 0; j < m->k; j++)
      free(m->features[j]);
  free(m->features);
  free(m->coef);
  free(m->se);
  free(m->cov);
  memset(m, 0, sizeof *m);
}

static int model_alloc(struct pfi_model *m, size_t k) {
  memset(m, 0, sizeof *m);
  m->k = k;
  m->features = calloc(k + 1, sizeof *m->features);
  m->coef = calloc(k + 1, sizeof *m->coef);
  m->se = calloc(k + 1, sizeof *m->se);
  m->cov = calloc((k + 1) * (k + 1), sizeof *m->cov);
  m->sigma = NAN;
  return (m->features && m->coef && m->se && m->cov) ? 0 : PFI_ENOMEM;
}

int pfi_model_fit(const double *x, size_t n, size_t k, const double *y,
                  const char *const *names, struct pfi_model *m,
                  struct pfi_error *err) {
  if (n < 2)
    return pfi_error_set(err, PFI_EINVAL, "a fit needs at least 2 rows");
  for (size_t i = 0; i < n * k; i++)
    if (!isfinite(x[i]))
      return pfi_error_set(err, PFI_EINVAL, "non-finite feature value");
  for (size_t i = 0; i < n; i++)
    if (!isfinite(y[i]))
      return pfi_error_set(err, PFI_EINVAL, "non-finite PFI value");
  if (model_alloc(m, k) < 0)
    goto nomem;
  for (size_t j = 0; j < k; j++)
    if (!(m->features[j] = strdup(names[j])))
      goto nomem;
  m->n = n;
  struct pfi_ols ols;
  memset(&ols, 0, sizeof ols);
  struct pfi_error e2;
  /* OLS on power-of-two scaled columns (see col_scales), coefficients and
   * standard errors scaled back. */
  double *xsc = malloc((n * k + 1) * sizeof *xsc);
  double *sc = malloc((k + 1) * sizeof *sc);
  if (!xsc || !sc) {
    free(xsc);
    free(sc);
    goto nomem;
  }
  col_scales(x, n, k, sc);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++)
      xsc[i * k + j] = x[i * k + j] * sc[j];
  /* The rank rule first (lstsq_minnorm): a design with a direction at the
   * level of the input's rounding is rank deficient, whatever the
   * factorization of pfi_ols_fit() would make of it; its minimum-norm
   * solution does not depend on that rounding. */
  size_t dropped = 0;
  int mrc = lstsq_minnorm(x, n, k, y, NULL, m->coef, &dropped);
  if (mrc < 0) {
    free(xsc);
    free(sc);
    pfi_model_release(m);
    return pfi_error_set(
        err, mrc, mrc == PFI_ENOMEM ? "out of memory" : "least squares failed");
  }
  int ols_rc = n > k + 1 && dropped == 0 ? pfi_ols_fit(xsc, n, k, y, &ols, &e2)
                                         : PFI_EINVAL;
  free(xsc);
  /* Out of memory is not a rank-deficient design: falling back would
   * return a model without standard errors. */
  if (ols_rc == PFI_ENOMEM) {
    free(sc);
    goto nomem;
  }
  int ols_ok = ols_rc == 0;
  if (ols_ok) {
    memcpy(m->coef, ols.coef, (k + 1) * sizeof *m->coef);
    memcpy(m->se, ols.se, (k + 1) * sizeof *m->se);
    for (size_t j = 0; j < k; j++) {
      m->coef[1 + j] *= sc[j];
      m->se[1 + j] *= sc[j];
    }
    m->has_se = 1;
    /* The covariance in the features' units: b_j = b'_j sc_j. */
    for (size_t a = 0; a <= k; a++)
      for (size_t b = 0; b <= k; b++)
        m->cov[a * (k + 1) + b] = ols.cov[a * (k + 1) + b] *
                                  (a ? sc[a - 1] : 1.0) * (b ? sc[b - 1] : 1.0);
    m->has_cov = 1;
    m->sigma = ols.sigma;
    m->df = n - k - 1;
    pfi_ols_release(&ols);
    free(sc);
  } else {
    free(sc);
    /* Rank-deficient or no residual degrees of freedom: the minimum-norm
     * solution (computed above) still predicts; standard errors do not
     * exist. */
    for (size_t j = 0; j <= k; j++)
      m->se[j] = NAN;
  }
  double ym = 0, sse = 0, sst = 0;
  for (size_t i = 0; i < n; i++)
    ym += y[i];
  ym /= (double)n;
  for (size_t i = 0; i < n; i++) {
    double r = y[i] - predict_coef(m->coef, k, x + i * k);
    sse += r * r;
    sst += (y[i] - ym) * (y[i] - ym);
  }
  m->r2 = sst > 0 ? 1 - sse / sst : NAN;
  m->rmse = sqrt(sse / (double)n);
  return 0;
nomem:
  pfi_model_release(m);
  return pfi_error_set(err, PFI_ENOMEM, "out of memory");
}

int pfi_model_predict_interval(const struct pfi_model *m, const double *xrow,
                               double *yhat, double *lo, double *hi,
                               struct pfi_error *err) {
  size_t k = m->k;
  if (!(m->df > 0) || !isfinite(m->sigma))
    return pfi_error_set(err, PFI_EINVAL,
                         "the model has no residual standard error (a "
                         "rank-deficient design or no residual degree of "
                         "freedom): no prediction interval");
  double y = pfi_model_predict(m, xrow), var;
  int approx = 0;
  if (m->has_cov) {
    double q = 0;
    for (size_t a = 0; a <= k; a++)
      for (size_t b = 0; b <= k; b++)
        q += (a ? xrow[a - 1] : 1.0) * m->cov[a * (k + 1) + b] *
             (b ? xrow[b - 1] : 1.0);
    var = m->sigma * m->sigma + (q > 0 ? q : 0);
  } else {
    if (m->n == 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "the model states no row count: no prediction "
                           "interval");
    var = m->sigma * m->sigma * (1 + 1.0 / (double)m->n);
    approx = 1;
  }
  double h = gsl_cdf_tdist_Pinv(0.975, (double)m->df) * sqrt(var);
  if (!isfinite(y) || !isfinite(h))
    return pfi_error_set(err, PFI_ENUMERIC,
                         "the prediction interval is not finite");
  *yhat = y;
  *lo = y - h;
  *hi = y + h;
  return approx;
}

double pfi_model_predict(const struct pfi_model *m, const double *xrow) {
  return predict_coef(m->coef, m->k, xrow);
}

int pfi_model_eval_folds(const double *x, size_t n, size_t k, const double *y,
                         const size_t *fold, size_t nfolds,
                         struct pfi_eval *out, double *pred,
                         struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  out->nfolds = nfolds;
  if (n < 3) {
    snprintf(out->why, sizeof out->why, "fewer than 3 rows");
    return 0;
  }
  double *xt = malloc((n * k + 1) * sizeof *xt);
  double *yt = malloc(n * sizeof *yt);
  double *pr = malloc(n * sizeof *pr);
  double *coef = malloc((k + 1) * sizeof *coef);
  double *u = malloc((k + 1) * sizeof *u);
  int rc = 0;
  if (!xt || !yt || !pr || !coef || !u) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  /* The rounding of the inputs, once for every fold: the precision of a
   * column is that of the whole input. */
  col_rounding(x, n, k, u);
  for (size_t f = 0; f < nfolds; f++) {
    size_t nt = 0, nheld = 0;
    for (size_t i = 0; i < n; i++) {
      if (fold[i] == f) {
        nheld++;
        continue;
      }
      memcpy(xt + nt * k, x + i * k, k * sizeof *xt);
      yt[nt] = y[i];
      nt++;
    }
    if (nheld == 0)
      continue;
    if (nt < 2) {
      snprintf(out->why, sizeof out->why,
               "holding out fold %zu leaves %zu rows", f, nt);
      goto out;
    }
    int r = lstsq_minnorm(xt, nt, k, yt, u, coef, NULL);
    if (r < 0) {
      rc = pfi_error_set(err, r, "least squares failed");
      goto out;
    }
    for (size_t i = 0; i < n; i++)
      if (fold[i] == f)
        pr[i] = predict_coef(coef, k, x + i * k);
  }
  double ym = 0, sse = 0, sst = 0;
  for (size_t i = 0; i < n; i++)
    ym += y[i];
  ym /= (double)n;
  for (size_t i = 0; i < n; i++) {
    sse += (y[i] - pr[i]) * (y[i] - pr[i]);
    sst += (y[i] - ym) * (y[i] - ym);
  }
  if (!(sst > 0)) {
    snprintf(out->why, sizeof out->why, "PFI is constant (SST = 0)");
    goto out;
  }
  double rho;
  struct pfi_error e2;
  int rho_rc = pfi_stats_spearman(y, pr, n, &rho, NULL, &e2);
  /* Constant predictions leave rho undefined; out of memory is an error,
   * not an undefined rho. */
  if (rho_rc == PFI_ENOMEM) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  out->defined = 1;
  out->r2 = 1 - sse / sst;
  out->rmse = sqrt(sse / (double)n);
  if (rho_rc == 0 && isfinite(rho)) {
    out->rho = rho;
    out->rho_defined = 1;
  }
  if (pred)
    memcpy(pred, pr, n * sizeof *pred);
out:
  free(xt);
  free(yt);
  free(pr);
  free(coef);
  free(u);
  return rc;
}

int pfi_model_validate(const double *y, const double *pred, size_t n,
                       struct pfi_validation *v, struct pfi_error *err) {
  memset(v, 0, sizeof *v);
  v->n = n;
  if (n < 2)
    return pfi_error_set(err, PFI_EINVAL, "validation needs 2 rows, got %zu",
                         n);
  /* Sums of squares scaled by the largest term, halves first, so that
   * values near DBL_MAX do not overflow where the results do not: with
   * d_i = y_i/2 - p_i/2 and M = max |d_i|, SSE = 4 M^2 sum (d_i/M)^2. */
  double mean = 0, me = 0, mt = 0;
  size_t worst = 0;
  for (size_t i = 0; i < n; i++)
    mean += y[i];
  mean /= (double)n;
  if (!isfinite(mean)) {
    mean = 0;
    for (size_t i = 0; i < n; i++)
      mean += y[i] / (double)n;
  }
  for (size_t i = 0; i < n; i++) {
    double d = fabs(0.5 * y[i] - 0.5 * pred[i]);
    if (d > me) {
      me = d;
      worst = i;
    }
    mt = fmax(mt, fabs(0.5 * y[i] - 0.5 * mean));
  }
  double se = 0, st = 0;
  for (size_t i = 0; i < n; i++) {
    if (me > 0) {
      double d = (0.5 * y[i] - 0.5 * pred[i]) / me;
      se += d * d;
    }
    if (mt > 0) {
      double d = (0.5 * y[i] - 0.5 * mean) / mt;
      st += d * d;
    }
  }
  v->worst = worst;
  v->r2_defined = mt > 0;
  v->r2 = mt > 0 ? 1 - (me / mt) * (me / mt) * (se / st) : NAN;
  v->rmse = me > 0 ? 2 * me * sqrt(se / (double)n) : 0;
  if (!isfinite(v->rmse) || (v->r2_defined && !isfinite(v->r2)))
    return pfi_error_set(err, PFI_EPARSE,
                         "validation: the estimate of row %zu (%g against "
                         "%g) is too far from the truth for R^2 and RMSE to "
                         "be represented",
                         worst + 1, pred[worst], y[worst]);
  double rho;
  struct pfi_error e2;
  if (n >= 3) {
    int rc = pfi_stats_spearman(y, pred, n, &rho, NULL, &e2);
    if (rc == PFI_ENOMEM)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    v->rho_defined = rc == 0 && isfinite(rho);
  }
  v->rho = v->rho_defined ? rho : NAN;
  return 0;
}

int pfi_model_design(const struct pfi_features *f, const size_t *rows, size_t n,
                     const char *const *exprs, size_t k, double *x,
                     struct pfi_error *err) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++) {
      int rc = pfi_features_value(f, rows[i], exprs[j], &x[i * k + j], err);
      if (rc < 0)
        return rc;
    }
  return 0;
}

int pfi_model_predict_features(const struct pfi_model *m,
                               const struct pfi_features *f, double *pred,
                               struct pfi_error *err) {
  double *x = malloc((m->k + 1) * sizeof *x);
  if (!x)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t r = 0; r < f->t.nrows && rc == 0; r++) {
    rc = pfi_model_design(f, &r, 1, (const char *const *)m->features, m->k, x,
                          err);
    if (rc == PFI_ENOTFOUND)
      rc = err->code = PFI_EPARSE; /* a column the model needs: bad input */
    if (rc < 0)
      break;
    pred[r] = pfi_model_predict(m, x);
    if (!isfinite(pred[r]))
      rc = pfi_error_setloc(err, PFI_EPARSE, f->t.name,
                            f->t.line ? f->t.line[r] : 0, 0,
                            "job %s: the model's PFI estimate is not finite "
                            "(its terms overflow)",
                            pfi_features_job(f, r));
  }
  free(x);
  return rc;
}

/* ---- JSON ---- */

static json_t *num_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

int pfi_model_save(const struct pfi_model *m, const char *path,
                   struct pfi_error *err) {
  json_t *j = json_object();
  json_t *feats = json_array(), *coefs = json_array();
  json_object_set_new(j, "kind", json_string("pfi-linear-model"));
  json_object_set_new(j, "target", json_string("pfi"));
  for (size_t q = 0; q < m->k; q++) {
    json_array_append_new(feats, json_string(m->features[q]));
    json_t *c = json_object();
    json_object_set_new(c, "feature", json_string(m->features[q]));
    json_object_set_new(c, "estimate", json_real(m->coef[1 + q]));
    json_object_set_new(c, "se",
                        m->has_se ? num_or_null(m->se[1 + q]) : json_null());
    json_array_append_new(coefs, c);
  }
  json_object_set_new(j, "features", feats);
  json_object_set_new(j, "intercept", json_real(m->coef[0]));
  json_object_set_new(j, "intercept_se",
                      m->has_se ? num_or_null(m->se[0]) : json_null());
  json_object_set_new(j, "coefficients", coefs);
  json_object_set_new(j, "n", json_integer((json_int_t)m->n));
  json_object_set_new(j, "r2_in", num_or_null(m->r2));
  json_object_set_new(j, "sigma", num_or_null(m->sigma));
  json_object_set_new(
      j, "df_resid", m->df > 0 ? json_integer((json_int_t)m->df) : json_null());
  if (m->has_cov) {
    json_t *cv = json_array();
    for (size_t a = 0; a <= m->k; a++) {
      json_t *row = json_array();
      for (size_t b = 0; b <= m->k; b++)
        json_array_append_new(row, num_or_null(m->cov[a * (m->k + 1) + b]));
      json_array_append_new(cv, row);
    }
    json_object_set_new(j, "covariance", cv);
  } else {
    json_object_set_new(j, "covariance", json_null());
  }
  int rc = 0;
  int flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17);
  if (strcmp(path, "-") == 0) {
    if (json_dumpf(j, stdout, flags) != 0 || fputc('\n', stdout) == EOF)
      rc = pfi_error_set(err, PFI_EIO, "cannot write the model");
  } else {
    FILE *fp = fopen(path, "w");
    if (!fp) {
      rc = pfi_error_set(err, PFI_EIO, "cannot write %s", path);
    } else {
      if (json_dumpf(j, fp, flags) != 0)
        rc = pfi_error_set(err, PFI_EIO, "cannot write %s", path);
      fputc('\n', fp);
      if (fclose(fp) != 0 && rc == 0)
        rc = pfi_error_set(err, PFI_EIO, "cannot write %s", path);
    }
  }
  json_decref(j);
  return rc;
}

static int bad(struct pfi_error *err, const char *name, const char *what) {
  return pfi_error_setloc(err, PFI_EPARSE, name, 0, 0, "model: %s", what);
}

int pfi_model_load_mem(struct pfi_model *m, const char *name, const char *data,
                       size_t len, struct pfi_error *err) {
  memset(m, 0, sizeof *m);
  json_error_t je;
  memset(&je, 0, sizeof je);
  json_t *j = json_loadb(data, len, 0, &je);
  /* jansson says out of memory by its error code, or, when its first
   * buffer cannot be allocated, by returning with no message at all. */
  if (!j &&
      (json_error_code(&je) == json_error_out_of_memory || je.text[0] == '\0'))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (!j)
    return pfi_error_setloc(err, PFI_EPARSE, name, je.line > 0 ? je.line : 0,
                            je.column > 0 ? je.column : 0, "%s", je.text);
  int rc = 0;
  json_t *kind = json_object_get(j, "kind");
  json_t *feats = json_object_get(j, "features");
  json_t *icpt = json_object_get(j, "intercept");
  json_t *coefs = json_object_get(j, "coefficients");
  if (!json_is_object(j)) {
    rc = bad(err, name, "not a JSON object");
    goto out;
  }
  if (!json_is_string(kind) ||
      strcmp(json_string_value(kind), "pfi-linear-model") != 0) {
    rc = bad(err, name, "key \"kind\" must be \"pfi-linear-model\"");
    goto out;
  }
  if (!json_is_array(feats) || !json_is_array(coefs) ||
      json_array_size(feats) != json_array_size(coefs)) {
    rc = bad(err, name,
             "keys \"features\" and \"coefficients\" must be arrays of equal "
             "length");
    goto out;
  }
  if (!json_is_number(icpt) || !isfinite(json_number_value(icpt))) {
    rc = bad(err, name, "key \"intercept\" must be a finite number");
    goto out;
  }
  size_t k = json_array_size(feats);
  if (model_alloc(m, k) < 0) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  m->coef[0] = json_number_value(icpt);
  m->se[0] = NAN;
  for (size_t q = 0; q < k; q++) {
    json_t *f = json_array_get(feats, q), *c = json_array_get(coefs, q);
    json_t *est = json_is_object(c) ? json_object_get(c, "estimate") : NULL;
    json_t *cf = json_is_object(c) ? json_object_get(c, "feature") : NULL;
    if (!json_is_string(f) || !*json_string_value(f)) {
      rc = bad(err, name, "\"features\" must hold non-empty strings");
      goto out;
    }
    if (!est || !json_is_number(est) || !isfinite(json_number_value(est))) {
      rc =
          bad(err, name, "each coefficient needs a finite number \"estimate\"");
      goto out;
    }
    if (cf && (!json_is_string(cf) ||
               strcmp(json_string_value(cf), json_string_value(f)) != 0)) {
      rc = bad(err, name, "coefficient \"feature\" differs from \"features\"");
      goto out;
    }
    if (!(m->features[q] = strdup(json_string_value(f)))) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    m->coef[1 + q] = json_number_value(est);
    m->se[1 + q] = NAN;
  }
  json_t *n = json_object_get(j, "n");
  if (json_is_integer(n) && json_integer_value(n) >= 0)
    m->n = (size_t)json_integer_value(n);
  json_t *r2 = json_object_get(j, "r2_in");
  m->r2 = json_is_number(r2) ? json_number_value(r2) : NAN;
  m->rmse = NAN;
  /* The prediction interval's inputs, when the file has them. */
  json_t *sg = json_object_get(j, "sigma"),
         *df = json_object_get(j, "df_resid");
  if (sg && !json_is_null(sg) &&
      (!json_is_number(sg) || !(json_number_value(sg) >= 0) ||
       !isfinite(json_number_value(sg)))) {
    rc = bad(err, name, "key \"sigma\" must be a finite number >= 0");
    goto out;
  }
  if (df && !json_is_null(df) &&
      (!json_is_integer(df) || json_integer_value(df) < 1)) {
    rc = bad(err, name, "key \"df_resid\" must be a whole number >= 1");
    goto out;
  }
  if (json_is_number(sg) && json_is_integer(df)) {
    m->sigma = json_number_value(sg);
    m->df = (size_t)json_integer_value(df);
  }
  json_t *cv = json_object_get(j, "covariance");
  if (cv && !json_is_null(cv)) {
    int ok = json_is_array(cv) && json_array_size(cv) == k + 1;
    for (size_t a = 0; ok && a <= k; a++) {
      json_t *row = json_array_get(cv, a);
      ok = json_is_array(row) && json_array_size(row) == k + 1;
      for (size_t b = 0; ok && b <= k; b++) {
        json_t *v = json_array_get(row, b);
        ok = json_is_number(v) && isfinite(json_number_value(v));
        if (ok)
          m->cov[a * (k + 1) + b] = json_number_value(v);
      }
    }
    if (!ok) {
      rc = bad(err, name,
               "key \"covariance\" must be a (k+1) x (k+1) array of finite "
               "numbers, k the number of features");
      goto out;
    }
    m->has_cov = m->df > 0;
  }
out:
  if (rc < 0)
    pfi_model_release(m);
  json_decref(j);
  return rc;
}

int pfi_model_load(struct pfi_model *m, const char *path,
                   struct pfi_error *err) {
  char *buf;
  size_t len;
  memset(m, 0, sizeof *m);
  int rc = pfi_read_file(path, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = pfi_model_load_mem(m, strcmp(path, "-") == 0 ? "<stdin>" : path, buf,
                          len, err);
  free(buf);
  return rc;
}
