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

/* The model's estimates for the features file, and the curves' own PFI
 * where --curves gives one. */
struct pred {
  struct pfi_model m;
  struct pfi_features f;
  size_t n;      /* rows of f */
  double *pred;  /* per row */
  double *truth; /* per row, where has */
  int *has;
  size_t nv; /* rows with a curve and a defined PFI */
  struct pfi_validation v;
};

/* --curves: each row's job's ratio PFI where its curve has one. 0 or -1
 * with err set. */
static int load_truth(struct pred *p, struct pfi_error *err) {
  struct pfi_curveset cs;
  if (pfi_curveset_read(&cs, curves, map, err) < 0)
    return -1;
  for (size_t r = 0; r < p->n; r++) {
    const struct pfi_curve *c =
        pfi_curveset_find(&cs, pfi_features_job(&p->f, r));
    struct pfi_index ix;
    if (!c || pfi_index_compute(c, &ix, err) < 0)
      continue;
    if (ix.pfi_defined) {
      p->truth[r] = ix.pfi;
      p->has[r] = 1;
      p->nv++;
    }
    pfi_index_release(&ix);
  }
  pfi_curveset_release(&cs);
  return 0;
}

/* Validation on the jobs with a curve, R^2 around their own mean. 0 or -1
 * with err set, naming the job to blame where one is. */
static int validate(struct pred *p, struct pfi_error *err) {
  double *yt = malloc(p->nv * sizeof *yt), *yp = malloc(p->nv * sizeof *yp);
  if (!yt || !yp) {
    free(yt);
    free(yp);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  size_t q = 0;
  for (size_t r = 0; r < p->n; r++)
    if (p->has[r]) {
      yt[q] = p->truth[r];
      yp[q] = p->pred[r];
      q++;
    }
  int vrc = pfi_model_validate(yt, yp, p->nv, &p->v, err);
  free(yt);
  free(yp);
  if (vrc < 0 && err->code == PFI_EPARSE) {
    /* Name the job and its line for the row to blame. */
    size_t r = 0;
    for (size_t k = 0; r < p->n; r++)
      if (p->has[r] && k++ == p->v.worst)
        break;
    if (r < p->n)
      pfi_error_setloc(err, PFI_EPARSE, p->f.t.name,
                       p->f.t.line ? p->f.t.line[r] : 0, 0,
                       "job %s: its PFI estimate %g is too far from its "
                       "curve's PFI %g for the validation's R^2 and RMSE "
                       "to be represented",
                       pfi_features_job(&p->f, r), p->pred[r], p->truth[r]);
  }
  return vrc < 0 ? -1 : 0;
}

/* One table for the three formats; pfi_true only with curves, '-' in the
 * terminal and empty in CSV (null in JSON) where a job has none. */
static int print_table(const struct pred *p) {
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
  for (size_t r = 0; r < p->n && !tab.failed; r++) {
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, pfi_features_job(&p->f, r));
    pfi_restab_num(&tab, 1, p->pred[r]);
    if (curves && p->has[r])
      pfi_restab_num(&tab, 2, p->truth[r]);
  }
  int status = pfi_cli_print_table(&tab, fmt) != PFI_EXIT_OK ? PFI_EXIT_FAIL
                                                             : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  return status;
}

/* The terminal's line below the table. */
static void print_validation(const struct pred *p) {
  const struct pfi_validation *v = &p->v;
  if (p->nv < 2) {
    printf("\nvalidation: %zu job(s) with a curve and a defined PFI, "
           "too few\n",
           p->nv);
    return;
  }
  printf("\nvalidation on %zu jobs with curves: ", p->nv);
  if (v->r2_defined)
    printf("R^2 %.3f, ", v->r2);
  else
    printf("R^2 n/a (constant PFI), ");
  printf("RMSE %.3f, rho ", v->rmse);
  if (v->rho_defined)
    printf("%.3f\n", v->rho);
  else
    printf("n/a\n");
}

int cmd_predict(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pred pd, *p = &pd;
  memset(p, 0, sizeof *p);
  if (pfi_model_load(&p->m, argv[optind], &err) < 0)
    return pfi_cli_fail(&err);
  if (pfi_features_load(&p->f, argv[optind + 1], &err) < 0) {
    pfi_model_release(&p->m);
    return pfi_cli_fail(&err);
  }
  int status = PFI_EXIT_OK;
  p->n = p->f.t.nrows;
  p->pred = malloc((p->n + 1) * sizeof *p->pred);
  p->truth = malloc((p->n + 1) * sizeof *p->truth);
  p->has = calloc(p->n + 1, sizeof *p->has);
  /* Everything that can fail before anything is printed: an error must
   * not follow half a table. */
  if (!p->pred || !p->truth || !p->has)
    status = pfi_error_set(&err, PFI_ENOMEM, "out of memory");
  if (status < 0 || pfi_model_predict_features(&p->m, &p->f, p->pred, &err) < 0 ||
      (curves && load_truth(p, &err) < 0) ||
      (curves && fmt == PFI_FMT_TABLE && p->nv >= 2 && validate(p, &err) < 0)) {
    status = pfi_cli_fail(&err);
  } else {
    status = print_table(p);
    if (fmt == PFI_FMT_TABLE && curves)
      print_validation(p);
  }
  free(p->pred);
  free(p->truth);
  free(p->has);
  pfi_model_release(&p->m);
  pfi_features_release(&p->f);
  return status;
}
