/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Linear models of PFI on telemetry features (docs/predict-allocate.md):
 * fitting, out-of-sample evaluation, JSON persistence, prediction.
 *
 * Out-of-sample R^2 is defined as 1 - SSE_out / SST, where SSE_out sums the
 * squared errors of predictions made by models that did not see the row
 * (leave-one-out: one row held out per fit; leave-one-cluster-out: one
 * cluster), and SST = sum (y_i - mean(y))^2 over all rows with the mean of
 * all rows. RMSE is sqrt(SSE_out / n); rho is Spearman's rank correlation
 * of y and the out-of-sample predictions.
 *
 * Fits used for prediction center the predictors, scale them to unit
 * standard deviation (a column constant in the rows gets coefficient 0) and
 * solve least squares by the SVD with the minimum-norm solution when the
 * design is rank deficient, so out-of-sample fits with more predictors
 * than rows still predict.
 *
 * The rank rule: a singular value s of the standardized design is dropped
 * when s <= max(n, k) * DBL_EPSILON * s_max (NumPy's lstsq default: the
 * arithmetic's own noise) or s <= 2 sqrt(sum_ij (u_j x_ij / sd_j)^2), the
 * largest change rounding the inputs can make to that matrix (Frobenius
 * norm; the factor 2 covers the column means), which bounds how far any
 * singular value can move (Weyl). u_j is column j's rounding unit: 0.5 *
 * 10^(1 - D) for a column whose values need D > PFI_MODEL_EXACT_DIGITS
 * significant digits (a features.csv printed with 10 digits: 5e-10); a
 * column of shorter values (counts, indicators, settings) is taken as
 * exact. A direction below the cut is decided by how the inputs were
 * rounded, not by the data: with it, re-printing features.csv with 9
 * instead of 10 digits changed LOCO R^2 of the 13-metric set by orders of
 * magnitude. An in-sample fit whose design loses a direction by this rule
 * is rank deficient: minimum-norm solution, no standard errors.
 * Standard errors come from pfi_ols_fit() (stats.h) and exist only for a
 * full-rank design with residual degrees of freedom.
 */

/* Values with at most this many significant digits are taken as exact by
 * the rank rule. */
#define PFI_MODEL_EXACT_DIGITS 5
#ifndef PFI_MODEL_H
#define PFI_MODEL_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/features.h"

struct pfi_model {
  size_t k;        /* predictors */
  char **features; /* k feature expressions (features.h); owned */
  double *coef;    /* k + 1: intercept, then one per feature; owned */
  double *se;      /* k + 1 standard errors; owned; valid when has_se */
  int has_se;
  size_t n;    /* rows fitted */
  double r2;   /* in-sample R^2 (NaN when y is constant) */
  double rmse; /* in-sample sqrt(SSE / n) */
  /* With has_se: the residual standard error s = sqrt(SSE / df), df = n -
   * k - 1, and the (k+1) x (k+1) covariance of the coefficients s^2
   * (X'X)^-1 (row-major, intercept first, in the features' own units). A
   * loaded model has them when its file does (has_cov); sigma is NaN and
   * df 0 when unknown. */
  double sigma;
  size_t df;
  double *cov; /* owned; valid when has_cov */
  int has_cov;
};

/*
 * Fits y = b0 + sum_j b_j x_j on n rows of k predictors (row-major x).
 * `names` gives the k feature expressions (copied). Errors: PFI_EINVAL
 * (n < 2, non-finite value), PFI_ENUMERIC, PFI_ENOMEM. Release with
 * pfi_model_release().
 */
int pfi_model_fit(const double *x, size_t n, size_t k, const double *y,
                  const char *const *names, struct pfi_model *m,
                  struct pfi_error *err);

void pfi_model_release(struct pfi_model *m);

/* Prediction for one row of k predictors. */
double pfi_model_predict(const struct pfi_model *m, const double *xrow);

/*
 * The 95 % prediction interval of a new job's PFI from one row of k
 * predictors: with x0 = (1, xrow) and t the 0.975 quantile of Student's t
 * with df = n - k - 1 degrees of freedom,
 *
 *   yhat +- t * sqrt(s^2 + x0' C x0),   C = s^2 (X'X)^-1 (m->cov),
 *
 * the residual variance of the new job plus the variance of the fitted
 * mean at x0. A model without its covariance (a file that stores only s)
 * gets yhat +- t * s * sqrt(1 + 1/n): the variance of the intercept at the
 * mean of the predictors only, which understates the interval away from
 * it; the function then returns 1 (0 with the covariance). Writes *yhat,
 * *lo, *hi. PFI_EINVAL when the model has neither (a rank-deficient design
 * or no residual degree of freedom: no standard errors).
 */
int pfi_model_predict_interval(const struct pfi_model *m, const double *xrow,
                               double *yhat, double *lo, double *hi,
                               struct pfi_error *err);

/* Out-of-sample evaluation. */
struct pfi_eval {
  int defined; /* 0 when no fold could be fitted; see `why` */
  double r2, rmse, rho;
  int rho_defined; /* 0 when predictions or y are constant */
  size_t nfolds;
  char why[160];
};

/*
 * Evaluates by holding out each fold in turn: fold[i] in 0..nfolds-1 is the
 * fold of row i (fold[i] = i gives leave-one-out). Each held-out row is
 * predicted by the minimum-norm fit on the other rows. A fold whose
 * complement has fewer than 2 rows makes the evaluation undefined.
 * `pred` (may be NULL) receives the n out-of-sample predictions.
 * Errors: PFI_EINVAL, PFI_ENOMEM, PFI_ENUMERIC.
 */
int pfi_model_eval_folds(const double *x, size_t n, size_t k, const double *y,
                         const size_t *fold, size_t nfolds,
                         struct pfi_eval *out, double *pred,
                         struct pfi_error *err);

/* Validation of predictions `pred` against true values `y` (n rows). */
struct pfi_validation {
  size_t n;
  int r2_defined;  /* 0 when y is constant (SST = 0) */
  double r2;       /* 1 - SSE/SST, SST around the mean of these y */
  double rmse;     /* sqrt(SSE / n) */
  int rho_defined; /* 0 below 3 rows or when either side is constant */
  double rho;      /* Spearman's rank correlation of y and pred */
  size_t worst;    /* the row whose estimate is farthest from y */
};

/* Fills `v`, in sums of squares scaled so that values near DBL_MAX give
 * finite results wherever the results are representable. Errors:
 * PFI_EINVAL (n < 2), PFI_ENOMEM, PFI_EPARSE when R^2 or the RMSE is
 * beyond the floating-point range (v->worst names the row to blame). */
int pfi_model_validate(const double *y, const double *pred, size_t n,
                       struct pfi_validation *v, struct pfi_error *err);

/*
 * Fills x (n * k, caller-allocated) from the features rows rows[0..n-1] and
 * the k expressions. Errors as pfi_features_value().
 */
int pfi_model_design(const struct pfi_features *f, const size_t *rows, size_t n,
                     const char *const *exprs, size_t k, double *x,
                     struct pfi_error *err);

/*
 * The model's prediction for every row of f, into pred[0..f->t.nrows)
 * (caller-allocated). A column the model needs that f lacks is bad input:
 * PFI_EPARSE (pfi_features_value()'s PFI_ENOTFOUND, its message kept). A
 * prediction that is not finite (coefficients times features that
 * overflow) is PFI_EPARSE located at its row's line, naming the job:
 * never inf or NaN in pred. Other errors as pfi_features_value();
 * PFI_ENOMEM.
 */
int pfi_model_predict_features(const struct pfi_model *m,
                               const struct pfi_features *f, double *pred,
                               struct pfi_error *err);

/*
 * Saves to / loads from a JSON file: {"kind": "pfi-linear-model",
 * "target": "pfi", "features": [...], "intercept": b0, "intercept_se",
 * "coefficients": [{"feature", "estimate", "se"}], "n", "r2_in", "sigma",
 * "df_resid", "covariance": [[...], ...] ((k+1) x (k+1), intercept first)}
 * (the last three null without standard errors; files without them load,
 * with no prediction interval). Loading checks every key
 * and type (PFI_EPARSE with the file name and the key). `path` "-" is
 * standard output / input.
 */
int pfi_model_save(const struct pfi_model *m, const char *path,
                   struct pfi_error *err);
int pfi_model_load(struct pfi_model *m, const char *path,
                   struct pfi_error *err);
int pfi_model_load_mem(struct pfi_model *m, const char *name, const char *data,
                       size_t len, struct pfi_error *err);

/* The paper's seven predictor sets (docs/predict-allocate.md, --ablation;
 * its published results: data/paper/h200_predictor_ablation.csv). */
struct pfi_predictor_set {
  const char *id;       /* "i" .. "vii" */
  const char *label;    /* "DRAM copy product", ... */
  const char *features; /* comma-separated feature expressions */
};
extern const struct pfi_predictor_set pfi_ablation_sets[7];

/* The 13 DCGM metrics of sets (vi) and (vii), comma-separated. */
extern const char pfi_dcgm_metrics[];

/* The default telemetry model's features: "dram_copy_product". */
extern const char pfi_default_model_features[];

/*
 * Splits a comma-separated list into a NULL-terminated array of trimmed
 * copies (*out; free with pfi_strlist_free). Empty items are PFI_EINVAL.
 */
int pfi_strlist_split(const char *s, char ***out, size_t *n,
                      struct pfi_error *err);
void pfi_strlist_free(char **list);

#endif
