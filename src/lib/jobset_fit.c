/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A job set's PFI estimates and model fits (jobset.h): out-of-sample
 * estimates for the jobs without a true PFI, prediction intervals, and the
 * fit rows and folds a model is fitted and evaluated on. */
#include "pfi/jobset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/index.h"

/* ---- estimates ----------------------------------------------------------- */

void pfi_estimate_opts_init(struct pfi_estimate_opts *o) {
  memset(o, 0, sizeof *o);
  pfi_clusters_init(&o->clusters);
}

/* Out-of-sample estimates for the m fitted jobs (design rows x, targets y,
 * curve indices map) into est. */
static int holdout_estimates(const struct pfi_jobset *js,
                             const struct pfi_estimate_opts *o, const double *x,
                             size_t m, size_t k, const double *y,
                             const size_t *map, double *est,
                             struct pfi_error *err) {
  size_t *fold = malloc((m + 1) * sizeof *fold);
  const char **names = malloc((m + 1) * sizeof *names);
  double *pred = malloc((m + 1) * sizeof *pred);
  int rc = 0;
  if (!fold || !names || !pred) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t nf = 0;
  for (size_t q = 0; q < m; q++) {
    if (o->holdout == PFI_HOLDOUT_JOB) {
      fold[q] = q;
      nf = m;
      continue;
    }
    const char *c =
        pfi_clusters_of(&o->clusters, &js->f, (size_t)js->frow[map[q]], err);
    if (!c) {
      rc = err ? err->code : PFI_ENOTFOUND;
      goto out;
    }
    size_t z = 0;
    while (z < nf && strcmp(names[z], c) != 0)
      z++;
    if (z == nf)
      names[nf++] = c;
    fold[q] = z;
  }
  struct pfi_eval ev;
  if ((rc = pfi_model_eval_folds(x, m, k, y, fold, nf, &ev, pred, err)) < 0)
    goto out;
  if (!ev.defined) {
    rc = pfi_error_set(err, PFI_EINVAL, "hold-out estimates undefined: %s",
                       ev.why);
    goto out;
  }
  for (size_t q = 0; q < m; q++)
    est[map[q]] = pred[q];
out:
  free(fold);
  free(names);
  free(pred);
  return rc;
}

static int estimate_model(const struct pfi_jobset *js,
                          const struct pfi_estimate_opts *o, double *est,
                          struct pfi_error *err) {
  size_t n = js->cs.n, k = 0;
  int rc = 0;
  char **names = NULL;
  double *x = NULL, *xfit = NULL, *y = NULL;
  size_t *rows = NULL, *map = NULL;
  if (o->model) {
    k = o->model->k;
  } else if ((rc = pfi_strlist_split(o->features ? o->features
                                                 : pfi_default_model_features,
                                     &names, &k, err)) < 0) {
    return rc;
  }
  const char *const *exprs = o->model ? (const char *const *)o->model->features
                                      : (const char *const *)names;
  rows = malloc((n + 1) * sizeof *rows);
  map = malloc((n + 1) * sizeof *map);
  x = malloc((n * k + 1) * sizeof *x);
  xfit = malloc((n * k + 1) * sizeof *xfit);
  y = malloc((n + 1) * sizeof *y);
  if (!rows || !map || !x || !xfit || !y) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    rows[i] = (size_t)js->frow[i];
  if ((rc = pfi_model_design(&js->f, rows, n, exprs, k, x, err)) < 0)
    goto out;
  if (o->model) {
    for (size_t i = 0; i < n; i++)
      est[i] = pfi_model_predict(o->model, x + i * k);
    goto out;
  }
  /* Fit on the selected jobs whose PFI is defined (compact copies). */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (js->pfi_ok[i] && (!o->fit_on || o->fit_on[i])) {
      memcpy(xfit + m * k, x + i * k, k * sizeof *x);
      y[m] = js->true_pfi[i];
      map[m++] = i;
    }
  if (m < 3) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "only %zu jobs have a defined PFI: too few to fit the "
                       "telemetry model",
                       m);
    goto out;
  }
  struct pfi_model fit;
  if ((rc = pfi_model_fit(xfit, m, k, y, exprs, &fit, err)) < 0)
    goto out;
  for (size_t i = 0; i < n; i++)
    est[i] = pfi_model_predict(&fit, x + i * k);
  pfi_model_release(&fit);
  if (o->holdout != PFI_HOLDOUT_NONE)
    rc = holdout_estimates(js, o, xfit, m, k, y, map, est, err);
out:
  /* Coefficients times features can overflow: an estimate of inf or NaN
   * would silently become weight 0 (or a straight-line curve) in the
   * strategies, so it is bad input. */
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (!isfinite(est[i])) {
      long fr = js->frow[i];
      rc = pfi_error_setloc(
          err, PFI_EPARSE, js->f.t.name,
          fr >= 0 && js->f.t.line ? js->f.t.line[fr] : 0, 0,
          "job %s: the model's PFI estimate is not finite (its terms overflow)",
          js->cs.c[i].job);
    }
  pfi_strlist_free(names);
  free(rows);
  free(map);
  free(x);
  free(xfit);
  free(y);
  return rc;
}

const char *pfi_jobset_undefined_reason(const struct pfi_jobset *js, size_t i) {
  if (js->pfi_ok[i])
    return "";
  const char *r = pfi_index_undefined_reason(js->pfi_why ? js->pfi_why[i] : 0);
  return r && r[0] ? r : "no capped point beyond the noise";
}

size_t pfi_jobset_undefined_note(const struct pfi_jobset *js, char *buf,
                                 size_t n) {
  size_t k = 0, used = 0;
  if (n)
    buf[0] = 0;
  for (size_t i = 0; i < js->cs.n; i++) {
    if (js->pfi_ok[i])
      continue;
    if (k < 3 && used < n) {
      int w = snprintf(buf + used, n - used, "%s%s (%s)", k ? ", " : "",
                       js->cs.c[i].job, pfi_jobset_undefined_reason(js, i));
      used += w > 0 ? (size_t)w : 0;
    } else if (k == 3 && used < n) {
      int w = snprintf(buf + used, n - used, ", ...");
      used += w > 0 ? (size_t)w : 0;
    }
    k++;
  }
  if (k && used < n) {
    /* The noise that decided it, as pfi index states it. */
    char nz[200];
    snprintf(buf + used, n - used, "; noise %s",
             pfi_noise_describe(&js->noise, nz, sizeof nz));
  }
  return k;
}

int pfi_jobset_estimate(const struct pfi_jobset *js,
                        const struct pfi_estimate_opts *o, double *est,
                        struct pfi_error *err) {
  if (o->true_pfi) {
    /* One rule for every command: an undefined PFI is 0, the least
     * flexible (pfi-aware takes no power from the job; pfi-curve's model
     * is flat). pfi_jobset_undefined_note() says which and why. */
    for (size_t i = 0; i < js->cs.n; i++)
      est[i] = js->pfi_ok[i] ? js->true_pfi[i] : 0.0;
    return 0;
  }
  int rc = pfi_jobset_require_features(js, "PFI estimation", err);
  if (rc < 0)
    return rc;
  return estimate_model(js, o, est, err);
}

int pfi_jobset_predict_interval(const struct pfi_jobset *js,
                                const struct pfi_model *m, double *est,
                                double *lo, double *hi, int *approx,
                                struct pfi_error *err) {
  int rc = pfi_jobset_require_features(js, "a PFI prediction interval", err);
  if (rc < 0)
    return rc;
  double *x = malloc((m->k + 1) * sizeof *x);
  if (!x)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int ap = 0;
  for (size_t i = 0; i < js->cs.n && rc >= 0; i++) {
    size_t row = (size_t)js->frow[i];
    rc = pfi_model_design(&js->f, &row, 1, (const char *const *)m->features,
                          m->k, x, err);
    if (rc >= 0)
      rc = pfi_model_predict_interval(m, x, &est[i], &lo[i], &hi[i], err);
    if (rc > 0)
      ap = 1;
  }
  free(x);
  if (rc < 0)
    return rc;
  if (approx)
    *approx = ap;
  return 0;
}

int pfi_jobset_fit_model(const struct pfi_jobset *js, const char *features,
                         struct pfi_model *m, struct pfi_error *err) {
  char **names = NULL;
  size_t k = 0, n = js->cs.n, q = 0;
  int rc = pfi_strlist_split(features ? features : pfi_default_model_features,
                             &names, &k, err);
  if (rc < 0)
    return rc;
  size_t *rows = malloc((n + 1) * sizeof *rows);
  double *x = malloc((n * k + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
  if (!rows || !x || !y) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    if (js->pfi_ok[i] && js->frow[i] >= 0) {
      rows[q] = (size_t)js->frow[i];
      y[q] = js->true_pfi[i];
      q++;
    }
  if (q < 3) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "only %zu library jobs have a defined PFI and "
                       "features: too few to fit the telemetry model",
                       q);
    goto out;
  }
  if ((rc = pfi_model_design(&js->f, rows, q, (const char *const *)names, k, x,
                             err)) < 0)
    goto out;
  rc = pfi_model_fit(x, q, k, y, (const char *const *)names, m, err);
out:
  pfi_strlist_free(names);
  free(rows);
  free(x);
  free(y);
  return rc;
}

/* ---- fit rows ------------------------------------------------------------ */

void pfi_fitrows_release(struct pfi_fitrows *r) {
  free(r->row);
  free(r->job);
  free(r->y);
  free(r->fold);
  free(r->fold_name);
  free(r->fold_n);
  memset(r, 0, sizeof *r);
}

static int fitrows_folds(const struct pfi_features *f, struct pfi_fitrows *r,
                         struct pfi_error *err) {
  const struct pfi_clusters *cl = &r->clusters;
  if (cl->kind == PFI_CLUSTERS_COLUMN &&
      (!cl->column || pfi_table_find(&f->t, cl->column) < 0))
    /* A cluster column asked for by name and missing is a mistake to
     * report, not a LOCO row of n/a. */
    return pfi_table_missing(&f->t, err, "--cluster: no column '%s'",
                             cl->column ? cl->column : "");
  for (size_t i = 0; i < r->n; i++) {
    struct pfi_error e2;
    const char *name = pfi_clusters_of(cl, f, r->row[i], &e2);
    if (!name && cl->kind == PFI_CLUSTERS_POOLED)
      return pfi_error_setloc(err, PFI_EPARSE, f->t.name, 1, 1,
                              "--cluster pooled needs arch and task columns");
    if (!name) {
      snprintf(r->loco_why, sizeof r->loco_why,
               "no arch and task columns (use --cluster COL)");
      r->nfolds = 0;
      return 0;
    }
    size_t k = 0;
    while (k < r->nfolds && strcmp(r->fold_name[k], name) != 0)
      k++;
    if (k == r->nfolds)
      r->fold_name[r->nfolds++] = name;
    r->fold[i] = k;
    r->fold_n[k]++;
  }
  if (r->nfolds < 2)
    snprintf(r->loco_why, sizeof r->loco_why, "fewer than 2 clusters");
  return 0;
}

int pfi_fitrows_build(const struct pfi_jobset *js, const char *pfi_column,
                      const unsigned char *select,
                      const struct pfi_clusters *clusters,
                      struct pfi_fitrows *r, struct pfi_error *err) {
  memset(r, 0, sizeof *r);
  if (clusters)
    r->clusters = *clusters;
  else
    pfi_clusters_init(&r->clusters);
  if (!js->have_features)
    return pfi_error_set(err, PFI_EINVAL, "a fit needs a features file");
  const struct pfi_features *f = &js->f;
  size_t cap = f->t.nrows + js->cs.n + 1;
  r->row = malloc(cap * sizeof *r->row);
  r->job = malloc(cap * sizeof *r->job);
  r->y = malloc(cap * sizeof *r->y);
  r->fold = calloc(cap, sizeof *r->fold);
  r->fold_name = calloc(cap, sizeof *r->fold_name);
  r->fold_n = calloc(cap, sizeof *r->fold_n);
  if (!r->row || !r->job || !r->y || !r->fold || !r->fold_name || !r->fold_n)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (pfi_column) {
    int c = pfi_table_find(&f->t, pfi_column);
    if (c < 0)
      return pfi_table_missing(&f->t, err, "no column '%s'", pfi_column);
    for (size_t i = 0; i < f->t.nrows; i++) {
      int rc = pfi_table_double(&f->t, i, (size_t)c, &r->y[r->n], err);
      if (rc < 0)
        return rc;
      r->job[r->n] = (size_t)-1;
      r->row[r->n++] = i;
    }
  } else {
    for (size_t i = 0; i < js->cs.n; i++) {
      if (select && !select[i])
        continue;
      if (js->frow[i] < 0) {
        r->no_features++;
        continue;
      }
      if (!js->pfi_ok[i]) {
        r->undefined++;
        continue;
      }
      r->row[r->n] = (size_t)js->frow[i];
      r->job[r->n] = i;
      r->y[r->n++] = js->true_pfi[i];
    }
    for (size_t q = 0; q < f->t.nrows; q++) {
      int found = 0;
      for (size_t i = 0; i < js->cs.n && !found; i++)
        found = js->frow[i] == (long)q;
      r->no_curve += !found;
    }
  }
  return fitrows_folds(f, r, err);
}

void pfi_fit_result_release(struct pfi_fit_result *res) {
  if (res->ok)
    pfi_model_release(&res->m);
  memset(res, 0, sizeof *res);
}

int pfi_fitrows_evaluate(const struct pfi_features *f,
                         const struct pfi_fitrows *r, const char *const *exprs,
                         size_t k, unsigned what, struct pfi_fit_result *res,
                         double *pred_loo, double *pred_loco,
                         struct pfi_error *err) {
  memset(res, 0, sizeof *res);
  for (size_t j = 0; j < k; j++)
    if (!pfi_features_has(f, exprs[j])) {
      size_t l = strlen(res->absent);
      snprintf(res->absent + l, sizeof res->absent - l, "%s%s", l ? ", " : "",
               exprs[j]);
    }
  if (res->absent[0])
    return 0;
  double *x = malloc((r->n * k + 1) * sizeof *x);
  size_t *loo = malloc((r->n + 1) * sizeof *loo);
  int rc = 0;
  if (!x || !loo) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = pfi_model_design(f, r->row, r->n, exprs, k, x, err)) < 0)
    goto out;
  if ((rc = pfi_model_fit(x, r->n, k, r->y, exprs, &res->m, err)) < 0)
    goto out;
  res->ok = 1;
  for (size_t i = 0; i < r->n; i++)
    loo[i] = i;
  if ((what & PFI_EVAL_LOO) &&
      (rc = pfi_model_eval_folds(x, r->n, k, r->y, loo, r->n, &res->loo,
                                 pred_loo, err)) < 0)
    goto out;
  if (!(what & PFI_EVAL_LOO))
    snprintf(res->loo.why, sizeof res->loo.why, "not requested");
  if ((what & PFI_EVAL_LOCO) && r->nfolds >= 2) {
    if ((rc = pfi_model_eval_folds(x, r->n, k, r->y, r->fold, r->nfolds,
                                   &res->loco, pred_loco, err)) < 0)
      goto out;
  } else {
    snprintf(res->loco.why, sizeof res->loco.why, "%s",
             (what & PFI_EVAL_LOCO) ? r->loco_why : "not requested");
  }
out:
  free(x);
  free(loo);
  return rc;
}
