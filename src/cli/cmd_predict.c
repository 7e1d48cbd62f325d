/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi predict`: apply a saved PFI model to a features file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/curve.h"
#include "pfi/features.h"
#include "pfi/fmt.h"
#include "pfi/index.h"
#include "pfi/model.h"
#include "pfi/stats.h"

/* The options, bound to these (src/base/opt.h). */
static const char *curves, *map;
static int fmt;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("curves", 0, &curves, "FILE",
                   "curves of (some of) the jobs, for validation"),
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "curves column mapping NAME=COLUMN,..."),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json (an array of {job, pfi [, pfi_true]})", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "predict",
    "usage: pfi predict MODEL.json FEATURES.csv [--curves CURVES.csv]\n"
    "                   [--map MAP] [--format F]\n",
    "Predicts each job's PFI with a model saved by 'pfi fit --output' from\n"
    "the features of its uncapped run (FEATURES.csv: a job column and the\n"
    "model's feature columns). A missing column or a bad cell is an error\n"
    "naming the file, line and column.\n"
    "\n"
    "With --curves (for example the held-out validation groups), each job\n"
    "that has a curve also gets its true ratio PFI (pfi_true), and the table\n"
    "ends with the validation R^2 = 1 - SSE/SST (SST around the mean of\n"
    "those jobs' PFI), RMSE and Spearman rho.\n",
    opts,
    NULL,
    0,
    NULL,
    NULL,
    2,
    2,
    "MODEL.json FEATURES.csv"};

int cmd_predict(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_model m;
  struct pfi_features f;
  if (pfi_model_load(&m, argv[optind], &err) < 0)
    return pfi_cli_fail(&err);
  if (pfi_features_load(&f, argv[optind + 1], &err) < 0) {
    pfi_model_release(&m);
    return pfi_cli_fail(&err);
  }
  int status = PFI_EXIT_OK;
  size_t n = f.t.nrows;
  double *x = malloc((m.k + 1) * sizeof *x);
  double *pred = malloc((n + 1) * sizeof *pred);
  double *truth = malloc((n + 1) * sizeof *truth);
  int *has = calloc(n + 1, sizeof *has);
  struct pfi_curveset cs;
  int have_cs = 0;
  if (!x || !pred || !truth || !has) {
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    goto fail;
  }
  for (size_t r = 0; r < n; r++) {
    if (pfi_model_design(&f, &r, 1, (const char *const *)m.features, m.k, x,
                         &err) < 0) {
      if (err.code == PFI_ENOTFOUND)
        err.code = PFI_EPARSE; /* a column the model needs: bad input */
      goto fail;
    }
    pred[r] = pfi_model_predict(&m, x);
    /* Coefficients times features can overflow (a model of huge
     * coefficients, features in the wrong units): an error, never inf or
     * NaN in the output. */
    if (!isfinite(pred[r])) {
      pfi_error_setloc(&err, PFI_EPARSE, f.t.name, f.t.line ? f.t.line[r] : 0,
                       0,
                       "job %s: the model's PFI estimate is not finite (its "
                       "terms overflow)",
                       pfi_features_job(&f, r));
      goto fail;
    }
  }
  size_t nv = 0;
  if (curves) {
    if (pfi_curveset_read(&cs, curves, map, &err) < 0)
      goto fail;
    have_cs = 1;
    for (size_t r = 0; r < n; r++) {
      const struct pfi_curve *c =
          pfi_curveset_find(&cs, pfi_features_job(&f, r));
      struct pfi_index ix;
      if (!c || pfi_index_compute(c, &ix, &err) < 0)
        continue;
      if (ix.pfi_defined) {
        truth[r] = ix.pfi;
        has[r] = 1;
        nv++;
      }
      pfi_index_release(&ix);
    }
  }
  /* Validation on the jobs with a curve, R^2 around their own mean,
   * before anything is printed: an error must not follow half a table. */
  struct pfi_validation v;
  memset(&v, 0, sizeof v);
  if (curves && fmt == PFI_FMT_TABLE && nv >= 2) {
    double *yt = malloc(nv * sizeof *yt), *yp = malloc(nv * sizeof *yp);
    if (!yt || !yp) {
      free(yt);
      free(yp);
      pfi_error_set(&err, PFI_ENOMEM, "out of memory");
      goto fail;
    }
    size_t q = 0;
    for (size_t r = 0; r < n; r++)
      if (has[r]) {
        yt[q] = truth[r];
        yp[q] = pred[r];
        q++;
      }
    int vrc = pfi_model_validate(yt, yp, nv, &v, &err);
    free(yt);
    free(yp);
    if (vrc < 0) {
      if (err.code == PFI_EPARSE) {
        /* Name the job and its line for the row to blame. */
        size_t r = 0;
        for (size_t k = 0; r < n; r++)
          if (has[r] && k++ == v.worst)
            break;
        if (r < n)
          pfi_error_setloc(&err, PFI_EPARSE, f.t.name,
                           f.t.line ? f.t.line[r] : 0, 0,
                           "job %s: its PFI estimate %g is too far from its "
                           "curve's PFI %g for the validation's R^2 and RMSE "
                           "to be represented",
                           pfi_features_job(&f, r), pred[r], truth[r]);
      }
      goto fail;
    }
  }
  /* One table for the three formats; pfi_true only with curves, '-' in
   * the terminal and empty in CSV (null in JSON) where a job has none. */
  static const struct pfi_restab_col cols[] = {
      {.name = "job", .kind = PFI_RESTAB_TEXT, .width = 40, .fixed = 1},
      {.name = "pfi", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3,
       .csv_style = 'f', .csv_prec = 6, .width = 10, .fixed = 1, .sep = 1},
      {.name = "pfi_true", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3,
       .csv_style = 'f', .csv_prec = 6, .width = 10, .fixed = 1, .sep = 1},
  };
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, curves ? 3 : 2);
  tab.csv_null = "";
  for (size_t r = 0; r < n && !tab.failed; r++) {
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, pfi_features_job(&f, r));
    pfi_restab_num(&tab, 1, pred[r]);
    if (curves && has[r])
      pfi_restab_num(&tab, 2, truth[r]);
  }
  if (pfi_cli_print_table(&tab, fmt) != PFI_EXIT_OK)
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&tab);
  if (fmt == PFI_FMT_TABLE) {
    if (curves) {
      if (nv < 2)
        printf("\nvalidation: %zu job(s) with a curve and a defined PFI, "
               "too few\n",
               nv);
      else {
        printf("\nvalidation on %zu jobs with curves: ", nv);
        if (v.r2_defined)
          printf("R^2 %.3f, ", v.r2);
        else
          printf("R^2 n/a (constant PFI), ");
        printf("RMSE %.3f, rho ", v.rmse);
        if (v.rho_defined)
          printf("%.3f\n", v.rho);
        else
          printf("n/a\n");
      }
    }
  }
  goto out;
fail:
  status = pfi_cli_fail(&err);
out:
  free(x);
  free(pred);
  free(truth);
  free(has);
  if (have_cs)
    pfi_curveset_release(&cs);
  pfi_model_release(&m);
  pfi_features_release(&f);
  return status;
}
