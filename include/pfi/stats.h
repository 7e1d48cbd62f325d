/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The statistics the paper uses (docs/index-and-stats.md), on plain arrays of
 * doubles: ranks, Spearman and Pearson correlation, ordinary least squares
 * with an intercept, Kruskal-Wallis with Dunn's post-hoc test and
 * Holm-Bonferroni correction, and Benjamini-Hochberg q-values.
 *
 * Conventions shared by every function here:
 *  - Inputs must be finite; a NaN or infinity is PFI_EINVAL (the CSV layer
 *    already rejects them, this guards direct callers).
 *  - p-values are two-sided.
 *  - `err` may be NULL. Functions never print, never exit and never call
 *    GSL in a way that can reach GSL's default (aborting) error handler.
 *  - Arrays are caller-owned unless a comment says otherwise.
 */
#ifndef PFI_STATS_H
#define PFI_STATS_H

#include <stddef.h>

#include "pfi/error.h"

/*
 * Ranks of x[0..n-1] (1 = smallest) with ties given the average of the ranks
 * they span ("fractional ranking"), written to ranks[0..n-1] (may not alias
 * x). If `tie_sum` is not NULL it receives sum over tie groups of (t^3 - t),
 * t the size of the group: the quantity tie corrections need.
 * Returns 0, PFI_EINVAL (n == 0, non-finite value) or PFI_ENOMEM.
 */
int pfi_stats_ranks(const double *x, size_t n, double *ranks, double *tie_sum,
                    struct pfi_error *err);

/*
 * Pearson correlation r of (x, y) and its two-sided p-value from the t
 * distribution with n - 2 degrees of freedom, t = r sqrt((n-2)/(1-r^2))
 * (exact under bivariate normality). `p` may be NULL. |r| = 1 gives p = 0.
 * Errors: PFI_EINVAL when n < 3, a value is not finite, or x or y is
 * constant (r undefined).
 */
int pfi_stats_pearson(const double *x, const double *y, size_t n, double *r,
                      double *p, struct pfi_error *err);

/*
 * Spearman rank correlation rho: the Pearson correlation of the average
 * ranks (so ties are handled exactly as the usual tie-corrected formula).
 * The two-sided p-value uses the same t approximation with n - 2 degrees of
 * freedom as pfi_stats_pearson() (what SciPy's spearmanr does); it is an
 * approximation, rough for n below about 10. `p` may be NULL.
 * Errors as pfi_stats_pearson() (a constant column has undefined rho),
 * plus PFI_ENOMEM.
 */
int pfi_stats_spearman(const double *x, const double *y, size_t n, double *rho,
                       double *p, struct pfi_error *err);

/* Two-sided p-value of a t statistic with `df` degrees of freedom. */
double pfi_stats_t_p(double t, double df);

/* The mean of v[0..n) and the half-width of its 95 % t interval,
 * t(0.975, n - 1) * s / sqrt(n) (NaN below 2 values; both NaN at 0). */
void pfi_stats_mean_t95(const double *v, size_t n, double *mean,
                        double *half);

/* Two-sided p-value of a standard normal z: 2 (1 - Phi(|z|)). */
double pfi_stats_z_p(double z);

/* Median of x[0..n-1] (mean of the two middle values when n is even), from a
 * sorted copy. Returns 0, PFI_EINVAL (n == 0) or PFI_ENOMEM. */
int pfi_stats_median(const double *x, size_t n, double *median,
                     struct pfi_error *err);

/* ---- ordinary least squares with an intercept ---- */

/*
 * A fitted linear model y = b0 + b1 x1 + ... + bk xk. All arrays are owned
 * by the struct and freed by pfi_ols_release().
 */
struct pfi_ols {
  size_t n;         /* rows used */
  size_t k;         /* predictors, not counting the intercept */
  double *coef;     /* k + 1 coefficients: coef[0] intercept, coef[j] x_j */
  double *se;       /* k + 1 standard errors, sqrt(s^2 (X'X)^-1 diagonal) */
  double *cov;      /* (k+1) x (k+1) row-major covariance, s^2 (X'X)^-1 */
  double *fitted;   /* n fitted values */
  double *resid;    /* n residuals y - fitted */
  double *leverage; /* n diagonal entries of the hat matrix X (X'X)^-1 X' */
  double r2;        /* 1 - SSE/SST */
  double adj_r2;    /* 1 - (1 - r2) (n - 1)/(n - k - 1) */
  double rmse;      /* sqrt(SSE / n): root mean square of the residuals */
  double sigma;     /* sqrt(SSE / (n - k - 1)): residual standard error */
  double sse, sst;  /* residual and total sums of squares */
};

/*
 * Fits by least squares (GSL's SVD solver, gsl_multifit_linear_tsvd).
 * `x` is n rows of k predictors, row-major (x[i*k + j]); k may be 0 (a
 * mean-only model). `y` has n values.
 * Errors (PFI_EINVAL, message says which): n <= k + 1 (no residual degree of
 * freedom), a non-finite value, a singular design (a constant or collinear
 * predictor: the design's rank is below k + 1; the message names the
 * offending predictor index when it is a constant column); PFI_ERANGE when
 * finite input overflows (a coefficient, standard error, fitted value,
 * leverage or the rmse is not finite: values near the double range);
 * PFI_ENOMEM. When y is constant, SST = 0 and r2 and adj_r2 are set to NaN:
 * callers that print must check (isnan). On failure `out` holds nothing to
 * release (but pfi_ols_release() is safe on it).
 */
int pfi_ols_fit(const double *x, size_t n, size_t k, const double *y,
                struct pfi_ols *out, struct pfi_error *err);

/* Prediction b0 + sum_j b_j xrow[j] for one row of k predictors. */
double pfi_ols_predict(const struct pfi_ols *m, const double *xrow);

/* Frees the arrays; safe on a zeroed or released struct. */
void pfi_ols_release(struct pfi_ols *m);

/* ---- Kruskal-Wallis and Dunn ---- */

struct pfi_dunn_pair {
  size_t a, b;   /* group indices, a < b */
  double z;      /* (mean rank a - mean rank b) / its tie-corrected SE */
  double p;      /* two-sided, unadjusted */
  double p_holm; /* Holm-Bonferroni adjusted over all g(g-1)/2 pairs */
};

/*
 * Result of pfi_stats_kruskal(). Arrays owned, freed by
 * pfi_kruskal_release().
 */
/* Most groups pfi_stats_kruskal() compares. Dunn's test has g(g-1)/2 pairs:
 * 32640 at this bound; an identifier column given as the group (one group
 * per row) would otherwise ask for billions of pairs. */
#define PFI_STATS_KRUSKAL_MAX_GROUPS 256

struct pfi_kruskal {
  size_t ngroups;
  size_t *n;                   /* per group: observations */
  double *median;              /* per group: median value */
  double *mean;                /* per group: mean value */
  double *mean_rank;           /* per group: mean of the pooled average ranks */
  double H;                    /* tie-corrected statistic */
  double df;                   /* ngroups - 1 */
  double p;                    /* upper tail of chi-square(df) at H */
  size_t npairs;               /* ngroups (ngroups - 1) / 2 */
  struct pfi_dunn_pair *pairs; /* in order (0,1), (0,2), ..., (1,2), ... */
};

/*
 * Kruskal-Wallis H test of `n` values in `ngroups` groups; group[i] in
 * 0..ngroups-1 says the group of value[i]. H is divided by the tie
 * correction 1 - sum(t^3 - t)/(N^3 - N); p from chi-square with
 * ngroups - 1 degrees of freedom. Dunn's test compares every pair with
 * z = (R_a - R_b) / sqrt((N(N+1)/12 - sum(t^3 - t)/(12(N-1)))
 *                       (1/n_a + 1/n_b)).
 * Errors (PFI_EINVAL): ngroups < 2 or above PFI_STATS_KRUSKAL_MAX_GROUPS,
 * an empty group, a group index out of range, a non-finite value, or every
 * value equal (H undefined); PFI_ENOMEM.
 */
int pfi_stats_kruskal(const double *value, const size_t *group, size_t n,
                      size_t ngroups, struct pfi_kruskal *out,
                      struct pfi_error *err);

void pfi_kruskal_release(struct pfi_kruskal *k);

/* ---- multiple testing ---- */

/*
 * Holm-Bonferroni adjusted p-values of p[0..m-1], written in input order
 * to adj (may alias p): sorted ascending, adj_(i) = max over j <= i of
 * min(1, (m - j + 1) p_(j)). Errors: PFI_EINVAL (m == 0, p outside [0, 1]
 * or not finite), PFI_ENOMEM.
 */
int pfi_stats_holm(const double *p, size_t m, double *adj,
                   struct pfi_error *err);

/*
 * Benjamini-Hochberg q-values of p[0..m-1], written in input order to q
 * (may alias p): q_(i) = min over j >= i of min(1, m p_(j) / j) for p
 * sorted ascending, so q is monotone in p. Errors as pfi_stats_holm().
 */
int pfi_stats_bh(const double *p, size_t m, double *q, struct pfi_error *err);

#endif
