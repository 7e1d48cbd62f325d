/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi fit`: a linear model of PFI on telemetry features, evaluated out of
 * sample; `--ablation` runs the paper's seven predictor sets. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/csv.h"
#include "pfi/features.h"
#include "pfi/jobset.h"
#include "pfi/model.h"

/* The options, bound to these (src/base/opt.h). */
static const char *curves, *pfi_col, *feats, *evals, *cluster, *output, *map;
static int abl, fmt;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("curves", 0, &curves, "FILE",
                   "curves CSV; PFI of each job from its curve"),
    PFI_OPT_STRING("pfi-column", 0, &pfi_col, "COL",
                   "read PFI from this column of FEATURES.csv instead"),
    PFI_OPT_STRING("features", 0, &feats, "LIST",
                   "predictors (comma-separated)"),
    {.lng = "eval", .arg = PFI_ARG_REQ, .argname = "LIST",
     .help = "loo, loco or both", .type = PFI_OT_STRING, .var = &evals,
     .def = "loo,loco"},
    PFI_OPT_STRING("cluster", 0, &cluster, "C",
                   "LOCO clusters: archtask (default, the 4 arch x task "
                   "clusters), pooled (3), or a column name"),
    PFI_OPT_STRING("output", 'o', &output, "FILE",
                   "save the model as JSON (pfi predict reads it)"),
    PFI_OPT_FLAG("ablation", 0, &abl,
                 "the seven-set table instead of one model"),
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "curves column mapping NAME=COLUMN,..."),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_ONE_OF("curves", "pfi-column"),
    PFI_RULE_EXCLUSIVE("ablation", "features"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "fit",
    "usage: pfi fit FEATURES.csv (--curves CURVES.csv | --pfi-column COL)\n"
    "               [--features COL[,COL...]] [--eval loo,loco]\n"
    "               [--cluster COL] [--output MODEL.json] [--ablation]\n"
    "               [--map MAP] [--format F]\n",
    "Fits PFI = b0 + sum b_j x_j by least squares on feature columns of the\n"
    "uncapped runs (FEATURES.csv, one row per job, a job column). PFI comes\n"
    "from each job's curve (--curves; ratio definition) or from a column.\n"
    "Prints coefficients with standard errors, the in-sample R^2 and the\n"
    "out-of-sample R^2, RMSE and Spearman rho of leave-one-out (LOO) and\n"
    "leave-one-cluster-out (LOCO) predictions. Out-of-sample R^2 is\n"
    "1 - SSE_out/SST: SSE_out sums squared errors of predictions by fits\n"
    "that did not see the row, SST the squared deviations from the mean of\n"
    "all rows. Out-of-sample fits use the minimum-norm least-squares\n"
    "solution, so they exist even with more predictors than rows.\n"
    "\n"
    "Features: column names, COL=VALUE indicators (arch=moe, task=ft) and\n"
    "log2(COL). Default: dram_copy_product.\n"
    "Clusters (LOCO), from the arch and task columns. The method holds out\n"
    "one architecture x task cluster at a time; the paper's text also\n"
    "describes the clusters with dense pretraining and fine-tuning pooled.\n"
    "Both are offered: by default (archtask) the four clusters dense-pt,\n"
    "dense-ft, moe-pt, moe-ft; --cluster pooled gives the three clusters\n"
    "dense, moe-pt, moe-ft (the paper's Kruskal-Wallis groups). --cluster\n"
    "COL groups by any column. The same definition is used by pfi simulate\n"
    "--holdout=cluster and pfi report, and every table names it.\n"
    "\n"
    "--ablation: the paper's seven predictor sets (i) DRAM copy product,\n"
    "(ii) arithmetic intensity, (iii) both, (iv) job metadata (arch=moe,\n"
    "task=ft, log2(gpus)), (v) (i)+(iv), (vi) the 13 DCGM metrics\n"
    "dram_active, mem_copy_util, sm_active, tensor_active, nvlink_tx_gbps,\n"
    "nvlink_rx_gbps, pcie_tx_gbps, pcie_rx_gbps, power_w, sm_clock_mhz,\n"
    "gpu_util, fb_used_gib, gpu_temp_c, (vii) (vi)+(iv); each beside the\n"
    "paper's published values when the rows are the paper's population\n"
    "(its 25 H200 headline groups; the first line says which population\n"
    "was used). A set whose columns are absent is reported as absent,\n"
    "naming them.\n",
    opts,
    NULL,
    0,
    NULL,
    rules,
    1,
    1,
    "FEATURES.csv"};

static json_t *jnum(double v, int ok) {
  return ok && isfinite(v) ? json_real(v) : json_null();
}

static json_t *eval_json(const struct pfi_eval *e) {
  if (!e->defined)
    return json_null();
  json_t *j = json_object();
  /* A collapsed out-of-sample fit can overflow SSE: null, never a key that
   * jansson silently drops (json_real refuses non-finite values). */
  json_object_set_new(j, "r2", jnum(e->r2, 1));
  json_object_set_new(j, "rmse", jnum(e->rmse, 1));
  json_object_set_new(j, "rho", jnum(e->rho, e->rho_defined));
  json_object_set_new(j, "folds", json_integer((json_int_t)e->nfolds));
  return j;
}

static void fmt_num(char *buf, size_t n, double v, int ok) {
  /* Collapsed out-of-sample fits can reach huge values: keep the column
   * width with three significant digits. */
  if (ok && isfinite(v) && fabs(v) >= 1e5)
    snprintf(buf, n, "%.3g", v);
  else if (ok && isfinite(v))
    snprintf(buf, n, "%.3f", v);
  else
    snprintf(buf, n, "n/a");
}

/* Standard errors with significant digits: a coefficient of a column in
 * large units (watts, MHz) has an SE below 0.0005, which %.3f would print
 * as 0.000. `prec` is 3 for the table, 9 for CSV. */
static void fmt_se(char *buf, size_t n, double v, int ok, int prec) {
  if (ok && isfinite(v))
    snprintf(buf, n, "%.*g", prec, v);
  else
    snprintf(buf, n, "n/a");
}

/* Published ablation rows (data/paper/h200_predictor_ablation.csv). */
struct published {
  int have;
  struct pfi_table t;
};

static void published_load(struct published *p) {
  char path[4096];
  struct pfi_error e;
  memset(p, 0, sizeof *p);
  if (!pfi_data_default("paper/h200_predictor_ablation.csv", path, sizeof path))
    return;
  if (pfi_table_load(&p->t, path, &e) == 0)
    p->have = 1;
}

static const char *pub_cell(const struct published *p, const char *set,
                            const char *col) {
  if (!p->have)
    return NULL;
  int cs = pfi_table_find(&p->t, "set"), cc = pfi_table_find(&p->t, col);
  if (cs < 0 || cc < 0)
    return NULL;
  for (size_t r = 0; r < p->t.nrows; r++) {
    const char *s = pfi_table_cell(&p->t, r, (size_t)cs);
    if (s && strcmp(s, set) == 0)
      return pfi_table_cell(&p->t, r, (size_t)cc);
  }
  return NULL;
}

static const char *const pub_cols[] = {"r2_in",   "loo_r2",  "loo_rmse",
                                       "loo_rho", "loco_r2", "loco_rmse",
                                       "loco_rho"};

static int ablation(const struct pfi_features *f, const struct pfi_fitrows *r,
                    const char *label, const struct pfi_population *pop,
                    enum pfi_format fmt, struct pfi_error *err) {
  struct published pub;
  published_load(&pub);
  struct pfi_fit_result res[7];
  size_t ks[7];
  int rc = 0;
  memset(res, 0, sizeof res);
  for (int s = 0; s < 7; s++) {
    char **ex;
    if ((rc = pfi_strlist_split(pfi_ablation_sets[s].features, &ex, &ks[s],
                                err)) < 0)
      goto out;
    rc = pfi_fitrows_evaluate(f, r, (const char *const *)ex, ks[s],
                              PFI_EVAL_LOO | PFI_EVAL_LOCO, &res[s], NULL, NULL,
                              err);
    pfi_strlist_free(ex);
    if (rc < 0)
      goto out;
  }
  /* Published values only beside ours on the paper's population. */
  int show_pub = pub.have && pop->paper;
  char pop_desc[160], cl_desc[96];
  pfi_population_describe(pop, pop_desc, sizeof pop_desc);
  pfi_clusters_describe(&r->clusters, cl_desc, sizeof cl_desc);
  if (fmt == PFI_FMT_JSON) {
    json_t *arr = json_array();
    for (int s = 0; s < 7; s++) {
      json_t *o = json_object();
      json_object_set_new(o, "set", json_string(pfi_ablation_sets[s].id));
      json_object_set_new(o, "predictors",
                          json_string(pfi_ablation_sets[s].label));
      json_object_set_new(o, "features",
                          json_string(pfi_ablation_sets[s].features));
      json_object_set_new(o, "p", json_integer((json_int_t)ks[s]));
      json_object_set_new(o, "n", json_integer((json_int_t)r->n));
      json_object_set_new(o, "data", json_string(label));
      if (res[s].ok) {
        json_object_set_new(o, "absent", json_null());
        json_object_set_new(o, "r2_in", jnum(res[s].m.r2, 1));
        json_object_set_new(o, "loo", eval_json(&res[s].loo));
        json_object_set_new(o, "loco", eval_json(&res[s].loco));
      } else {
        json_object_set_new(o, "absent", json_string(res[s].absent));
      }
      json_t *pj = json_object();
      for (int c = 0; c < 7; c++) {
        const char *v = pub_cell(&pub, pfi_ablation_sets[s].id, pub_cols[c]);
        double d;
        json_object_set_new(pj, pub_cols[c],
                            v && pfi_parse_double(v, &d) == 0 ? json_real(d)
                                                              : json_null());
      }
      json_object_set_new(o, "population", json_string(pop_desc));
      json_object_set_new(o, "clusters",
                          json_string(pfi_clusters_name(&r->clusters)));
      json_object_set_new(o, "published", show_pub ? pj : json_null());
      if (!show_pub)
        json_decref(pj);
      json_array_append_new(arr, o);
    }
    if (pfi_cli_print_json(arr))
      rc = PFI_EIO;
    goto out;
  }
  int csv = fmt == PFI_FMT_CSV;
  /* CSV: the metrics as the table's text (fmt_num), empty where a set is
   * absent or the paper gives none; absent always quoted, and blank on
   * the published rows. */
  enum { A_SET, A_SRC, A_P, A_M0, A_ABSENT = A_M0 + 7, A_N };
#define TXT(n) {.name = n, .kind = PFI_RESTAB_TEXT}
  static const struct pfi_restab_col acols[A_N] = {
      [A_SET] = TXT("set"),
      [A_SRC] = TXT("source"),
      [A_P] = {.name = "p", .kind = PFI_RESTAB_INT},
      [A_M0] = TXT("r2_in"),
      [A_M0 + 1] = TXT("loo_r2"),
      [A_M0 + 2] = TXT("loo_rmse"),
      [A_M0 + 3] = TXT("loo_rho"),
      [A_M0 + 4] = TXT("loco_r2"),
      [A_M0 + 5] = TXT("loco_rmse"),
      [A_M0 + 6] = TXT("loco_rho"),
      [A_ABSENT] = {.name = "absent", .kind = PFI_RESTAB_TEXT,
                    .csv_quote = 1},
  };
#undef TXT
  struct pfi_restab tab;
  pfi_restab_init(&tab, acols, A_N);
  if (!csv)
    printf("Predictor ablation, n = %zu jobs (%s): %s\n"
           "LOCO clusters: %s\n%s"
           "%-4s %-10s %3s %7s %7s %8s %7s %8s %9s %8s\n",
           r->n, label, pop_desc, cl_desc,
           show_pub   ? "Beside the paper's published values (the same "
                        "population).\n"
           : pub.have ? "The paper's published values are not shown: they "
                        "are over its 25 H200 headline groups.\n"
                      : "",
           "set", "source", "p", "r2_in", "loo_r2", "loo_rmse", "loo_rho",
           "loco_r2", "loco_rmse", "loco_rho");
  for (int s = 0; s < 7; s++) {
    char v[7][32];
    const struct pfi_fit_result *q = &res[s];
    fmt_num(v[0], 32, q->m.r2, q->ok);
    fmt_num(v[1], 32, q->loo.r2, q->ok && q->loo.defined);
    fmt_num(v[2], 32, q->loo.rmse, q->ok && q->loo.defined);
    fmt_num(v[3], 32, q->loo.rho,
            q->ok && q->loo.defined && q->loo.rho_defined);
    fmt_num(v[4], 32, q->loco.r2, q->ok && q->loco.defined);
    fmt_num(v[5], 32, q->loco.rmse, q->ok && q->loco.defined);
    fmt_num(v[6], 32, q->loco.rho,
            q->ok && q->loco.defined && q->loco.rho_defined);
    if (csv) {
      pfi_restab_row(&tab);
      pfi_restab_text(&tab, A_SET, pfi_ablation_sets[s].id);
      pfi_restab_text(&tab, A_SRC, label);
      pfi_restab_int(&tab, A_P, (long long)ks[s]);
      for (int c = 0; c < 7; c++)
        pfi_restab_text(&tab, A_M0 + (size_t)c, q->ok ? v[c] : "");
      pfi_restab_text(&tab, A_ABSENT, q->absent);
    } else if (q->ok) {
      printf("%-4s %-10s %3zu %7s %7s %8s %7s %8s %9s %8s\n",
             pfi_ablation_sets[s].id, label, ks[s], v[0], v[1], v[2], v[3],
             v[4], v[5], v[6]);
    } else {
      printf("%-4s %-10s %3zu absent from the features file: %s\n",
             pfi_ablation_sets[s].id, label, ks[s], q->absent);
    }
    if (show_pub) {
      if (csv) {
        pfi_restab_row(&tab);
        pfi_restab_text(&tab, A_SET, pfi_ablation_sets[s].id);
        pfi_restab_text(&tab, A_SRC, "published");
        pfi_restab_int(&tab, A_P, (long long)ks[s]);
        for (int c = 0; c < 7; c++) {
          const char *pv = pub_cell(&pub, pfi_ablation_sets[s].id, pub_cols[c]);
          pfi_restab_text(&tab, A_M0 + (size_t)c, pv ? pv : "");
        }
        pfi_restab_blank(&tab, A_ABSENT);
      } else {
        const char *pv[7];
        for (int c = 0; c < 7; c++) {
          pv[c] = pub_cell(&pub, pfi_ablation_sets[s].id, pub_cols[c]);
          if (!pv[c])
            pv[c] = "-";
        }
        printf("%-4s %-10s %3zu %7s %7s %8s %7s %8s %9s %8s\n", "", "published",
               ks[s], pv[0], pv[1], pv[2], pv[3], pv[4], pv[5], pv[6]);
      }
    }
  }
  if (csv && pfi_cli_print_table(&tab, fmt) != PFI_EXIT_OK)
    rc = PFI_EIO;
  pfi_restab_release(&tab);
  if (!csv) {
    printf("\nSets: ");
    for (int s = 0; s < 7; s++)
      printf("(%s) %s%s", pfi_ablation_sets[s].id, pfi_ablation_sets[s].label,
             s < 6 ? "; " : ".\n");
    printf("DCGM metrics of (vi): %s.\n", pfi_dcgm_metrics);
    if (r->nfolds >= 2) {
      printf("LOCO clusters (%s):", pfi_clusters_name(&r->clusters));
      for (size_t k = 0; k < r->nfolds; k++)
        printf(" %s (%zu)", r->fold_name[k], r->fold_n[k]);
      printf(".\n");
    } else {
      printf("LOCO: %s.\n", r->loco_why);
    }
    printf("n/a: an evaluation that does not exist for these rows (for "
           "example a constant prediction has no rank correlation).\n");
  }
out:
  for (int s = 0; s < 7; s++)
    pfi_fit_result_release(&res[s]);
  if (pub.have)
    pfi_table_release(&pub.t);
  return rc;
}

/* --eval as two flags. 0 or PFI_EXIT_USAGE. */
static int parse_evals(int *do_loo, int *do_loco) {
  char **ev;
  size_t ne;
  struct pfi_error e;
  if (pfi_strlist_split(evals, &ev, &ne, &e) < 0)
    return pfi_cli_usage("fit", "%s", e.msg);
  int rc = 0;
  for (size_t i = 0; i < ne && !rc; i++) {
    if (strcmp(ev[i], "loo") == 0)
      *do_loo = 1;
    else if (strcmp(ev[i], "loco") == 0)
      *do_loco = 1;
    else
      rc = pfi_cli_usage("fit", "--eval takes loo and/or loco, not '%s'",
                         ev[i]);
  }
  pfi_strlist_free(ev);
  return rc ? PFI_EXIT_USAGE : 0;
}

/* The jobs left out of the fit, on standard error: a curve without a
 * features row, a PFI that is not defined, a features row without a
 * curve. */
static void note_left_out(const struct pfi_jobset *d,
                          const struct pfi_fitrows *r) {
  size_t shown = 0;
  for (size_t i = 0; i < d->cs.n; i++) {
    if (d->frow[i] < 0) {
      if (shown++ < 5)
        fprintf(stderr, "pfi fit: job %s has a curve but no features row\n",
                d->cs.c[i].job);
    } else if (!d->pfi_ok[i]) {
      fprintf(stderr,
              "pfi fit: job %s left out: PFI undefined (no capped point "
              "lowered throughput)\n",
              d->cs.c[i].job);
    }
  }
  if (r->no_features)
    fprintf(stderr,
            "pfi fit: %zu job(s) of %s have no features row and "
            "are left out\n",
            r->no_features, d->cs.source ? d->cs.source : "the curves");
  if (r->no_curve)
    fprintf(stderr,
            "pfi fit: %zu features row(s) have no curve and are "
            "left out\n",
            r->no_curve);
}

/* The rows of the fit (jobs with both PFI and features), at least 3, and
 * the population they are. 0 or -1 with err set. */
static int load_rows(struct pfi_jobset *d, struct pfi_fitrows *r,
                     struct pfi_population *pop, struct pfi_error *err) {
  struct pfi_clusters cl;
  pfi_clusters_parse(&cl, cluster);
  if (pfi_fitrows_build(d, pfi_col, NULL, &cl, r, err) < 0)
    return -1;
  if (!pfi_col)
    note_left_out(d, r);
  if (r->n < 3)
    return pfi_error_set(err, PFI_EINVAL,
                         "only %zu jobs with both PFI and features: a fit "
                         "needs at least 3",
                         r->n);
  const char **ids = malloc((r->n + 1) * sizeof *ids);
  struct pfi_error pe;
  if (!ids)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < r->n; i++)
    ids[i] = pfi_features_job(&d->f, r->row[i]);
  int prc = pfi_population_of(ids, r->n, pop, &pe);
  free(ids);
  if (prc == PFI_ENOMEM) {
    *err = pe;
    return -1;
  }
  return 0;
}

/* One model: its rows, its features and the fit with its evaluations. */
struct fit {
  const struct pfi_fitrows *r;
  char **ex; /* the features */
  size_t k;
  struct pfi_fit_result res;
  const char *label; /* "emulated" or "this data" */
};

static int print_json(const struct fit *f) {
  const struct pfi_fit_result *res = &f->res;
  json_t *j = json_object(), *co = json_array(), *fe = json_array();
  json_object_set_new(j, "n", json_integer((json_int_t)f->r->n));
  json_object_set_new(j, "data", json_string(f->label));
  for (size_t q = 0; q < f->k; q++) {
    json_array_append_new(fe, pfi_cli_json_str(f->ex[q]));
    json_t *c = json_object();
    json_object_set_new(c, "feature", pfi_cli_json_str(f->ex[q]));
    json_object_set_new(c, "estimate", json_real(res->m.coef[1 + q]));
    json_object_set_new(c, "se", jnum(res->m.se[1 + q], res->m.has_se));
    json_array_append_new(co, c);
  }
  json_object_set_new(j, "features", fe);
  json_object_set_new(j, "intercept", json_real(res->m.coef[0]));
  json_object_set_new(j, "intercept_se", jnum(res->m.se[0], res->m.has_se));
  json_object_set_new(j, "coefficients", co);
  json_object_set_new(j, "r2_in", jnum(res->m.r2, 1));
  json_object_set_new(j, "loo", eval_json(&res->loo));
  json_t *lo = eval_json(&res->loco);
  if (json_is_object(lo)) {
    json_t *cl = json_object();
    for (size_t q = 0; q < f->r->nfolds; q++)
      json_object_set_new(cl, f->r->fold_name[q],
                          json_integer((json_int_t)f->r->fold_n[q]));
    json_object_set_new(lo, "clusters", cl);
    json_object_set_new(lo, "cluster_definition",
                        json_string(pfi_clusters_name(&f->r->clusters)));
  }
  json_object_set_new(j, "loco", lo);
  return pfi_cli_print_json(j) ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* Coefficient rows, then the fit's rows: one table, the columns a row does
 * not have blank. The evaluations' cells are fmt_num()'s text. */
static int print_csv(const struct fit *f) {
  const struct pfi_fit_result *res = &f->res;
  enum { C_TERM, C_EST, C_SE, C_R2, C_RMSE, C_RHO, C_N };
  static const struct pfi_restab_col cols[C_N] = {
      [C_TERM] = {.name = "term", .kind = PFI_RESTAB_TEXT},
      [C_EST] = {.name = "estimate", .kind = PFI_RESTAB_NUM, .style = 'g',
                 .prec = 9},
      [C_SE] = {.name = "se", .kind = PFI_RESTAB_TEXT},
      [C_R2] = {.name = "r2", .kind = PFI_RESTAB_TEXT},
      [C_RMSE] = {.name = "rmse", .kind = PFI_RESTAB_TEXT},
      [C_RHO] = {.name = "rho", .kind = PFI_RESTAB_TEXT},
  };
  char a[32], b[32], c[32];
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  for (size_t q = 0; q <= f->k; q++) {
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, C_TERM, q ? f->ex[q - 1] : "(intercept)");
    pfi_restab_num(&tab, C_EST, res->m.coef[q]);
    fmt_se(a, 32, res->m.se[q], res->m.has_se, 9);
    pfi_restab_text(&tab, C_SE, a);
    for (int col = C_R2; col <= C_RHO; col++)
      pfi_restab_blank(&tab, (size_t)col);
  }
  fmt_num(a, 32, res->m.r2, 1);
  pfi_restab_row(&tab);
  pfi_restab_text(&tab, C_TERM, "in-sample");
  pfi_restab_blank(&tab, C_EST);
  pfi_restab_blank(&tab, C_SE);
  pfi_restab_text(&tab, C_R2, a);
  pfi_restab_textf(&tab, C_RMSE, "%.6f", res->m.rmse);
  pfi_restab_blank(&tab, C_RHO);
  const struct pfi_eval *evs[2] = {&res->loo, &res->loco};
  for (int q = 0; q < 2; q++) {
    fmt_num(a, 32, evs[q]->r2, evs[q]->defined);
    fmt_num(b, 32, evs[q]->rmse, evs[q]->defined);
    fmt_num(c, 32, evs[q]->rho, evs[q]->defined && evs[q]->rho_defined);
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, C_TERM, q ? "loco" : "loo");
    pfi_restab_blank(&tab, C_EST);
    pfi_restab_blank(&tab, C_SE);
    pfi_restab_text(&tab, C_R2, a);
    pfi_restab_text(&tab, C_RMSE, b);
    pfi_restab_text(&tab, C_RHO, c);
  }
  int status = pfi_cli_print_table(&tab, PFI_FMT_CSV) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  return status;
}

/* The coefficients' table, then the fit and its evaluations. */
static int print_terminal(const struct fit *f) {
  const struct pfi_fit_result *res = &f->res;
  char a[32], b[32], c[32];
  printf("PFI model on %zu jobs (%s)\n", f->r->n, f->label);
  static const struct pfi_restab_col cols[] = {
      {.name = "term", .kind = PFI_RESTAB_TEXT, .width = 28, .fixed = 1},
      {.name = "estimate", .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 6,
       .width = 12, .fixed = 1, .sep = 1},
      {.name = "se", .kind = PFI_RESTAB_TEXT, .align = PFI_RESTAB_RIGHT,
       .width = 12, .fixed = 1, .sep = 1},
  };
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, 3);
  for (size_t q = 0; q <= f->k; q++) {
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, q ? f->ex[q - 1] : "(intercept)");
    pfi_restab_num(&tab, 1, res->m.coef[q]);
    fmt_se(a, 32, res->m.se[q], res->m.has_se, 3);
    pfi_restab_text(&tab, 2, a);
  }
  int status = pfi_cli_print_table(&tab, PFI_FMT_TABLE) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  fmt_num(a, 32, res->m.r2, 1);
  printf("\n%-10s %8s %8s %8s\n", "", "R^2", "RMSE", "rho");
  printf("%-10s %8s %8.3f %8s\n", "in-sample", a, res->m.rmse, "");
  const struct pfi_eval *evs[2] = {&res->loo, &res->loco};
  for (int q = 0; q < 2; q++) {
    if (!evs[q]->defined) {
      printf("%-10s n/a: %s\n", q ? "LOCO" : "LOO", evs[q]->why);
      continue;
    }
    fmt_num(a, 32, evs[q]->r2, 1);
    fmt_num(b, 32, evs[q]->rmse, 1);
    fmt_num(c, 32, evs[q]->rho, evs[q]->rho_defined);
    printf("%-10s %8s %8s %8s\n", q ? "LOCO" : "LOO", a, b, c);
  }
  if (res->loco.defined) {
    printf("LOCO clusters (%s):", pfi_clusters_name(&f->r->clusters));
    for (size_t q = 0; q < f->r->nfolds; q++)
      printf(" %s (%zu)", f->r->fold_name[q], f->r->fold_n[q]);
    printf("\n");
  }
  if (output)
    printf("model saved to %s\n", output);
  return status;
}

/* Fits the model of --features (saved to --output) and evaluates it. 0 or
 * -1 with err set. */
static int fit_model(const struct pfi_jobset *d, struct fit *f, int do_loo,
                     int do_loco, struct pfi_error *err) {
  if (pfi_strlist_split(feats ? feats : pfi_default_model_features, &f->ex,
                        &f->k, err) < 0)
    return -1;
  if (pfi_fitrows_evaluate(&d->f, f->r, (const char *const *)f->ex, f->k,
                           (do_loo ? PFI_EVAL_LOO : 0) |
                               (do_loco ? PFI_EVAL_LOCO : 0),
                           &f->res, NULL, NULL, err) < 0)
    return -1;
  if (!f->res.ok)
    return pfi_table_missing(&d->f.t, err, "features absent from the file: %s",
                             f->res.absent);
  if (output && pfi_model_save(&f->res.m, output, err) < 0)
    return -1;
  return 0;
}

int cmd_fit(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  int do_loo = 0, do_loco = 0;
  if (parse_evals(&do_loo, &do_loco))
    return PFI_EXIT_USAGE;
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_jobset d;
  struct pfi_fitrows r;
  memset(&r, 0, sizeof r);
  struct fit f;
  memset(&f, 0, sizeof f);
  f.r = &r;
  if (pfi_jobset_load(&d, curves, map, argv[optind], &err) < 0)
    return pfi_cli_fail(&err);
  f.label = d.any_emulated ? "emulated" : "this data";
  struct pfi_population pop;
  int status = PFI_EXIT_OK;
  if (load_rows(&d, &r, &pop, &err) < 0)
    status = pfi_cli_fail(&err);
  else if (abl) {
    if (ablation(&d.f, &r, f.label, &pop, fmt, &err) < 0)
      status = pfi_cli_fail(&err);
  } else if (fit_model(&d, &f, do_loo, do_loco, &err) < 0)
    status = pfi_cli_fail(&err);
  else
    status = fmt == PFI_FMT_JSON  ? print_json(&f)
             : fmt == PFI_FMT_CSV ? print_csv(&f)
                                  : print_terminal(&f);
  pfi_fit_result_release(&f.res);
  pfi_strlist_free(f.ex);
  pfi_fitrows_release(&r);
  pfi_jobset_release(&d);
  return status;
}
