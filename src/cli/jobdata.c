/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Curves joined with features, true PFI, and PFI estimates. */
#include "jobdata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/data.h"
#include "pfi/index.h"

int jobdata_load(struct jobdata *d, const char *cpath, const char *map,
                 const char *fpath, struct pfi_error *err) {
  memset(d, 0, sizeof *d);
  int rc = pfi_curveset_read(&d->cs, cpath, map, err);
  if (rc < 0)
    return rc;
  size_t n = d->cs.n;
  d->frow = calloc(n + 1, sizeof *d->frow);
  d->true_pfi = calloc(n + 1, sizeof *d->true_pfi);
  d->pfi_ok = calloc(n + 1, sizeof *d->pfi_ok);
  if (!d->frow || !d->true_pfi || !d->pfi_ok) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto fail;
  }
  size_t mmax = 1;
  for (size_t i = 0; i < n; i++)
    if (d->cs.c[i].n > mmax)
      mmax = d->cs.c[i].n;
  /* Every point of every curve: the PFI's reference is the highest cap,
   * which a truncated copy (the first 64 points) would miss. */
  double *cap = malloc(mmax * sizeof *cap), *pw = malloc(mmax * sizeof *pw),
         *tk = malloc(mmax * sizeof *tk);
  if (!cap || !pw || !tk) {
    free(cap);
    free(pw);
    free(tk);
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    const struct pfi_curve *c = &d->cs.c[i];
    size_t m = c->n;
    for (size_t k = 0; k < m; k++) {
      cap[k] = c->pts[k].cap_w;
      pw[k] = c->pts[k].power_w;
      tk[k] = c->pts[k].tokens_per_s;
    }
    double v;
    if (pfi_index_ratio(cap, pw, tk, m, &v, NULL) == 1) {
      d->true_pfi[i] = v;
      d->pfi_ok[i] = 1;
    }
    d->frow[i] = -1;
  }
  free(cap);
  free(pw);
  free(tk);
  if (fpath) {
    if ((rc = pfi_features_load(&d->f, fpath, err)) < 0)
      goto fail;
    d->have_features = 1;
    for (size_t i = 0; i < n; i++) {
      d->frow[i] = pfi_features_row(&d->f, d->cs.c[i].job);
      d->nmissing += d->frow[i] < 0;
    }
  } else {
    d->nmissing = n;
  }
  return 0;
fail:
  jobdata_release(d);
  return rc;
}

void jobdata_release(struct jobdata *d) {
  pfi_curveset_release(&d->cs);
  if (d->have_features)
    pfi_features_release(&d->f);
  free(d->frow);
  free(d->true_pfi);
  free(d->pfi_ok);
  memset(d, 0, sizeof *d);
}

int jobdata_require_features(const struct jobdata *d, const char *why,
                             struct pfi_error *err) {
  if (!d->have_features)
    return pfi_error_set(err, PFI_EINVAL, "%s needs --features FILE", why);
  if (d->nmissing == 0)
    return 0;
  char list[256] = "";
  size_t shown = 0;
  for (size_t i = 0; i < d->cs.n && shown < 5; i++)
    if (d->frow[i] < 0) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", shown ? ", " : "",
               d->cs.c[i].job);
      shown++;
    }
  return pfi_error_setloc(err, PFI_EPARSE, d->f.t.name, 0, 0,
                          "%zu of %zu jobs of %s have no row here (%s%s); %s "
                          "needs features for every job",
                          d->nmissing, d->cs.n,
                          d->cs.source ? d->cs.source : "the curves", list,
                          d->nmissing > shown ? ", ..." : "", why);
}

int jobdata_estimate_pfi(const struct jobdata *d, const struct pfi_model *model,
                         const char *feature_list, int holdout, double *est,
                         struct pfi_error *err) {
  size_t n = d->cs.n;
  int rc = 0;
  char **names = NULL;
  size_t k = 0;
  double *x = NULL, *y = NULL, *pred = NULL;
  size_t *rows = NULL, *fold = NULL, *map = NULL;
  if (model) {
    names = NULL;
    k = model->k;
  } else {
    if ((rc = pfi_strlist_split(feature_list ? feature_list
                                             : pfi_default_model_features,
                                &names, &k, err)) < 0)
      return rc;
  }
  const char *const *exprs =
      model ? (const char *const *)model->features : (const char *const *)names;
  rows = malloc((n + 1) * sizeof *rows);
  x = malloc((n * k + 1) * sizeof *x);
  y = malloc((n + 1) * sizeof *y);
  pred = malloc((n + 1) * sizeof *pred);
  fold = malloc((n + 1) * sizeof *fold);
  map = malloc((n + 1) * sizeof *map);
  if (!rows || !x || !y || !pred || !fold || !map) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    rows[i] = (size_t)d->frow[i];
  if ((rc = pfi_model_design(&d->f, rows, n, exprs, k, x, err)) < 0)
    goto out;
  if (model) {
    for (size_t i = 0; i < n; i++)
      est[i] = pfi_model_predict(model, x + i * k);
    goto out;
  }
  /* Fit on the jobs whose PFI is defined (compact copies). */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (d->pfi_ok[i]) {
      memmove(x + m * k, x + i * k, k * sizeof *x);
      y[m] = d->true_pfi[i];
      map[m] = i;
      m++;
    }
  if (m < 3) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "only %zu jobs have a defined PFI: too few to fit the "
                       "telemetry model",
                       m);
    goto out;
  }
  /* Design rows of every job (again, in curve order) for prediction. */
  double *xall = malloc((n * k + 1) * sizeof *xall);
  if (!xall) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = pfi_model_design(&d->f, rows, n, exprs, k, xall, err)) < 0) {
    free(xall);
    goto out;
  }
  struct pfi_model fit;
  if ((rc = pfi_model_fit(x, m, k, y, (const char *const *)names, &fit, err)) <
      0) {
    free(xall);
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    est[i] = pfi_model_predict(&fit, xall + i * k);
  pfi_model_release(&fit);
  if (holdout) {
    /* Out-of-sample estimates for the fitted jobs: each predicted by a
     * model that never saw it (or its cluster). */
    const char *cl[4] = {"dense-pt", "dense-ft", "moe-pt", "moe-ft"};
    size_t nf = m;
    for (size_t q = 0; q < m; q++) {
      if (holdout == 1) {
        fold[q] = q;
      } else {
        const char *c = pfi_features_archtask(&d->f, rows[map[q]], err);
        if (!c) {
          rc = PFI_ENOTFOUND;
          free(xall);
          goto out;
        }
        fold[q] = 0;
        for (size_t z = 0; z < 4; z++)
          if (strcmp(c, cl[z]) == 0)
            fold[q] = z;
        nf = 4;
      }
    }
    struct pfi_eval ev;
    if ((rc = pfi_model_eval_folds(x, m, k, y, fold, nf, &ev, pred, err)) < 0) {
      free(xall);
      goto out;
    }
    if (!ev.defined) {
      rc = pfi_error_set(err, PFI_EINVAL, "hold-out estimates undefined: %s",
                         ev.why);
      free(xall);
      goto out;
    }
    for (size_t q = 0; q < m; q++)
      est[map[q]] = pred[q];
  }
  free(xall);
out:
  /* Coefficients times features can overflow: an estimate of inf or NaN
   * would silently become weight 0 (or a straight-line curve) in the
   * strategies, so it is bad input. */
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (!isfinite(est[i])) {
      long fr = d->frow[i];
      rc = pfi_error_setloc(
          err, PFI_EPARSE, d->f.t.name,
          fr >= 0 && d->f.t.line ? d->f.t.line[fr] : 0, 0,
          "job %s: the model's PFI estimate is not finite (its terms overflow)",
          d->cs.c[i].job);
    }
  pfi_strlist_free(names);
  free(rows);
  free(x);
  free(y);
  free(pred);
  free(fold);
  free(map);
  return rc;
}

const char *jobdata_default(const char *rel, char *buf, size_t n) {
  struct pfi_error e;
  if (pfi_data_path(rel, buf, n, &e) < 0)
    return NULL;
  return access(buf, R_OK) == 0 ? buf : NULL;
}

int jobdata_pfi_estimates(const struct jobdata *d, int true_pfi,
                          const char *undefined_note, const char *model_path,
                          const char *feature_list, int holdout,
                          struct pfi_model *model, int *have_model, double *est,
                          struct pfi_error *err) {
  int rc;
  if (true_pfi) {
    for (size_t i = 0; i < d->cs.n; i++) {
      if (!d->pfi_ok[i])
        return pfi_error_setloc(err, PFI_EPARSE, d->cs.source,
                                d->cs.c[i].first_line, 0,
                                "job %s: PFI undefined%s", d->cs.c[i].job,
                                undefined_note);
      est[i] = d->true_pfi[i];
    }
    return 0;
  }
  if ((rc = jobdata_require_features(d, "PFI estimation", err)) < 0)
    return rc;
  if (model_path) {
    if ((rc = pfi_model_load(model, model_path, err)) < 0)
      return rc;
    *have_model = 1;
  }
  return jobdata_estimate_pfi(d, *have_model ? model : NULL, feature_list,
                              holdout, est, err);
}

int jobdata_check_totals(const struct jobdata *d, const char *cpath,
                         const struct pfi_problem *p, struct pfi_error *err) {
  double sum_lo, sum_hi, st = 0;
  pfi_problem_bounds(p, &sum_lo, &sum_hi);
  for (size_t q = 0; q < p->npts; q++)
    st += fabs(p->y[q]);
  if (isfinite(sum_hi) && isfinite(st))
    return 0;
  return pfi_error_setloc(err, PFI_EPARSE, d->cs.source ? d->cs.source : cpath,
                          0, 0,
                          "the jobs' total %s exceeds the floating-point range",
                          isfinite(sum_hi) ? "throughput" : "uncapped power");
}

int jobdata_fit_model(const struct jobdata *d, const char *feature_list,
                      struct pfi_model *m, struct pfi_error *err) {
  char **names = NULL;
  size_t k = 0, n = d->cs.n, q = 0;
  int rc = pfi_strlist_split(feature_list ? feature_list
                                          : pfi_default_model_features,
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
    if (d->pfi_ok[i] && d->frow[i] >= 0) {
      rows[q] = (size_t)d->frow[i];
      y[q] = d->true_pfi[i];
      q++;
    }
  if (q < 3) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "only %zu library jobs have a defined PFI and "
                       "features: too few to fit the telemetry model",
                       q);
    goto out;
  }
  if ((rc = pfi_model_design(&d->f, rows, q, (const char *const *)names, k, x,
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

static int col_says_emulated(const struct pfi_table *t) {
  static const char *const cols[] = {"provenance", "source", "origin", NULL};
  for (size_t k = 0; cols[k]; k++) {
    int c = pfi_table_find(t, cols[k]);
    if (c < 0)
      continue;
    for (size_t r = 0; r < t->nrows; r++) {
      const char *v = pfi_table_cell(t, r, (size_t)c);
      if (v && strstr(v, "emulated"))
        return 1;
    }
  }
  return 0;
}

int jobdata_emulated(const struct jobdata *d, const char *cpath) {
  if (d->have_features && col_says_emulated(&d->f.t))
    return 1;
  if (!cpath || strcmp(cpath, "-") == 0)
    return 0;
  FILE *fp = fopen(cpath, "rb");
  if (!fp)
    return 0;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf, fp);
  fclose(fp);
  /* The header and the first complete rows only. */
  size_t end = n;
  while (end > 0 && buf[end - 1] != '\n')
    end--;
  struct pfi_table t;
  struct pfi_error e;
  if (end == 0 || pfi_table_load_mem(&t, cpath, buf, end, &e) < 0)
    return 0;
  int em = col_says_emulated(&t);
  pfi_table_release(&t);
  return em;
}
