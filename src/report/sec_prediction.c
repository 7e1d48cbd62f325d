/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Section 4 of the report: predicting PFI from telemetry. The predictor
 * ablation in and out of sample, the chosen model on the held-out and H100
 * groups, predicted against actual PFI.
 */
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pfi/alloc.h"
#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/data.h"
#include "pfi/features.h"
#include "pfi/index.h"
#include "pfi/model.h"
#include "pfi/oracle.h"
#include "pfi/report.h"
#include "pfi/sim.h"
#include "pfi/stats.h"

#include "report_int.h"

/* ---- section 4: prediction
 * ------------------------------------------------------ */

void pfi__core_release(struct pfi__core *c) {
  free(c->rows);
  free(c->gi);
  free(c->y);
  pfi_jobset_release(&c->js);
  pfi_fitrows_release(&c->fr);
  memset(c, 0, sizeof *c);
}

int pfi__core_build(struct pfi__report *r, struct pfi__core *c) {
  memset(c, 0, sizeof *c);
  size_t cap = r->ng + 1;
  c->rows = calloc(cap, sizeof *c->rows);
  c->gi = calloc(cap, sizeof *c->gi);
  c->y = calloc(cap, sizeof *c->y);
  unsigned char *keep = calloc(cap, 1);
  if (!c->rows || !c->gi || !c->y || !keep) {
    free(keep);
    return PFI_ENOMEM;
  }
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->core || !isfinite(g->pfi) || g->feat < 0 || g->cat < 0)
      continue;
    keep[i] = 1;
    c->rows[c->n] = (size_t)g->feat;
    c->gi[c->n] = i;
    c->y[c->n++] = g->pfi;
  }
  int rc = pfi_jobset_subset(&r->js, keep, &c->js, NULL);
  free(keep);
  if (rc)
    return rc;
  struct pfi_clusters cl;
  pfi_clusters_parse(&cl, r->o->clusters);
  struct pfi_error e;
  rc = pfi_fitrows_build(&c->js, NULL, NULL, &cl, &c->fr, &e);
  if (rc == PFI_ENOMEM)
    return rc;
  c->have_fr = rc == 0 && c->fr.n == c->n;
  /* Published values only beside ours on the paper's own population. */
  struct pfi_population pop;
  rc = pfi_jobset_population(&c->js, &pop, &e);
  if (rc == PFI_ENOMEM)
    return rc;
  c->paper = rc == 0 && pop.paper;
  return 0;
}

/* Fits `exprs` on the core set; in-sample, LOO and LOCO. `pred_loo` and
 * `pred_loco` (may be NULL) receive the out-of-sample predictions; *absent
 * is set when a feature is absent from features.csv. Returns 0 or a
 * negative error code. */
static int eval_set(struct pfi__report *r, const struct pfi__core *cs,
                    char **exprs, size_t k, double *r2_in, struct pfi_eval *loo,
                    struct pfi_eval *loco, double *pred_loo, double *pred_loco,
                    int *absent) {
  *absent = 0;
  if (!cs->have_fr)
    return pfi_error_set(r->err, PFI_EINVAL, "no fit rows");
  struct pfi_fit_result res;
  int rc = pfi_fitrows_evaluate(&r->js.f, &cs->fr, (const char *const *)exprs,
                                k, PFI_EVAL_LOO | PFI_EVAL_LOCO, &res, pred_loo,
                                pred_loco, r->err);
  if (rc == 0 && !res.ok)
    *absent = 1;
  if (rc == 0 && res.ok) {
    *r2_in = res.m.r2;
    *loo = res.loo;
    *loco = res.loco;
  }
  pfi_fit_result_release(&res);
  return rc;
}

static int sec_ablation(struct pfi__report *r, const struct pfi__core *cs,
                        struct pfi__results *res) {
  static const char *const cols[] = {"set",
                                     "predictors",
                                     "p",
                                     "r2_in",
                                     "loo_r2",
                                     "loo_rmse",
                                     "loo_rho",
                                     "loco_r2",
                                     "loco_rmse",
                                     "loco_rho",
                                     "r2_in_published",
                                     "loo_r2_published",
                                     "loo_rho_published",
                                     "loco_r2_published",
                                     "loco_rho_published",
                                     "diff_loo_r2",
                                     "diff_loco_r2"};
  char title[400], cdesc[96];
  snprintf(title, sizeof title,
           "Predictor ablation: seven predictor sets, in-sample, "
           "leave-one-out (LOO) and leave-one-cluster-out (LOCO; clusters "
           "%s); R^2 out of sample is 1 - SSE_out/SST%s",
           pfi_clusters_describe(&cs->fr.clusters, cdesc, sizeof cdesc),
           cs->paper ? ""
                     : "; the paper's values (its 25 H200 headline "
                       "groups) are not shown: these groups are not "
                       "that population");
  struct pfi_rtable *t = pfi__report_table(r, "ablation", title, 17, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  pfi__set_dec(t, "p", 0);
  for (size_t s = 0; s < 7; s++) {
    const struct pfi_predictor_set *ps = &pfi_ablation_sets[s];
    char **exprs = NULL;
    size_t k = 0;
    int rc = pfi_strlist_split(ps->features, &exprs, &k, r->err);
    if (rc)
      return rc;
    double r2_in = NAN;
    struct pfi_eval loo, loco;
    memset(&loo, 0, sizeof loo);
    memset(&loco, 0, sizeof loco);
    double *pred = calloc(2 * (cs->n + 1), sizeof *pred);
    if (!pred) {
      pfi_strlist_free(exprs);
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    }
    double *pred_c = pred + cs->n + 1;
    int absent = 0;
    rc = eval_set(r, cs, exprs, k, &r2_in, &loo, &loco, pred, pred_c, &absent);
    pfi_strlist_free(exprs);
    if (rc == PFI_ENOMEM) {
      free(pred);
      return rc;
    }
    if (rc < 0) {
      /* A set that cannot be fitted (too few rows for its predictors) is
       * reported as such; the others still stand. */
      pfi_error_clear(r->err);
    }
    int ok = rc == 0 && !absent;
    if (ok && s == 0)
      for (size_t i = 0; i < cs->n; i++) {
        res->pred_loo[cs->gi[i]] = pred[i];
        res->pred_loco[cs->gi[i]] = loco.defined ? pred_c[i] : NAN;
      }
    free(pred);
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    long pr = cs->paper
                  ? pfi__pub_row(&r->pub_abl, r->have_pub_abl, "set", ps->id)
                  : -1;
    pfi__set_str(t, row, "set", ps->id);
    pfi__set_str(t, row, "predictors",
                 absent ? "(features absent)" : ps->label);
    pfi__set_num(t, row, "p", (double)k);
    pfi__set_num(t, row, "r2_in", ok ? r2_in : NAN);
    pfi__set_num(t, row, "loo_r2", ok && loo.defined ? loo.r2 : NAN);
    pfi__set_num(t, row, "loo_rmse", ok && loo.defined ? loo.rmse : NAN);
    pfi__set_num(t, row, "loo_rho",
                 ok && loo.defined && loo.rho_defined ? loo.rho : NAN);
    pfi__set_num(t, row, "loco_r2", ok && loco.defined ? loco.r2 : NAN);
    pfi__set_num(t, row, "loco_rmse", ok && loco.defined ? loco.rmse : NAN);
    pfi__set_num(t, row, "loco_rho",
                 ok && loco.defined && loco.rho_defined ? loco.rho : NAN);
    double p_in = pfi__pub_num(&r->pub_abl, pr, "r2_in");
    double p_loo = pfi__pub_num(&r->pub_abl, pr, "loo_r2");
    double p_loco = pfi__pub_num(&r->pub_abl, pr, "loco_r2");
    pfi__set_num(t, row, "r2_in_published", p_in);
    pfi__set_num(t, row, "loo_r2_published", p_loo);
    pfi__set_num(t, row, "loo_rho_published",
                 pfi__pub_num(&r->pub_abl, pr, "loo_rho"));
    pfi__set_num(t, row, "loco_r2_published", p_loco);
    pfi__set_num(t, row, "loco_rho_published",
                 pfi__pub_num(&r->pub_abl, pr, "loco_rho"));
    pfi__set_num(t, row, "diff_loo_r2",
                 pfi__diff(ok && loo.defined ? loo.r2 : NAN, p_loo));
    pfi__set_num(t, row, "diff_loco_r2",
                 pfi__diff(ok && loco.defined ? loco.r2 : NAN, p_loco));
    if (s == 0)
      pfi__headline(r, "LOO R^2, DRAM-copy-product model",
                    ok && loo.defined ? loo.r2 : NAN, p_loo, 3);
  }
  pfi__show_table(r, t);
  return 0;
}

static int sec_heldout(struct pfi__report *r, const struct pfi__core *cs,
                       struct pfi__results *res) {
  char **exprs = NULL;
  size_t k = 0;
  int rc = pfi_strlist_split(pfi_default_model_features, &exprs, &k, r->err);
  if (rc)
    return rc;
  struct pfi_model m;
  memset(&m, 0, sizeof m);
  double *x = calloc(cs->n * k + 1, sizeof *x);
  double xr[16];
  if (!x || k > 16) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t j = 0; j < k; j++)
    if (!pfi_features_has(&r->js.f, exprs[j])) {
      pfi__missing(r,
                   "the chosen model's feature is absent from features.csv.");
      goto out;
    }
  if ((rc = pfi_model_design(&r->js.f, cs->rows, cs->n,
                             (const char *const *)exprs, k, x, r->err)) ||
      (rc = pfi_model_fit(x, cs->n, k, cs->y, (const char *const *)exprs, &m,
                          r->err)))
    goto out;
  static const char *const cols[] = {
      "group", "gpu", "pfi_ratio", "predicted", "error", "pfi_ratio_published"};
  struct pfi_rtable *t = pfi__report_table(
      r, "heldout",
      "The chosen model (ratio PFI, 1 = proportional, on the DRAM copy "
      "product, fitted on the H200 headline groups) applied to the held-out "
      "H200 groups and the H100 groups",
      6, cols);
  if (!t) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  double sse[2] = {0}, sum[2] = {0}, sum2[2] = {0};
  size_t cnt[2] = {0};
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    res->pred_out[i] = NAN;
    if (g->core || g->feat < 0 || !isfinite(g->pfi))
      continue;
    /* A bad cell (NaN, text) is a located error here as in the headline
     * groups: dropping the group would move the R^2 without a word. */
    for (size_t j = 0; j < k; j++)
      if ((rc = pfi_features_value(&r->js.f, (size_t)g->feat, exprs[j], &xr[j],
                                   r->err)) != 0)
        goto out;
    double pr = pfi_model_predict(&m, xr);
    res->pred_out[i] = pr;
    long row = pfi_rtable_add_row(t);
    pfi__set_str(t, row, "group", g->name);
    pfi__set_str(t, row, "gpu", pfi__gpu_name(r, g));
    pfi__set_num(t, row, "pfi_ratio", g->pfi);
    pfi__set_num(t, row, "predicted", pr);
    pfi__set_num(t, row, "error", pr - g->pfi);
    pfi__set_num(t, row, "pfi_ratio_published", g->pub);
    int s = g->h100;
    sse[s] += (pr - g->pfi) * (pr - g->pfi);
    sum[s] += g->pfi;
    sum2[s] += g->pfi * g->pfi;
    cnt[s]++;
  }
  static const char *const vcols[] = {"groups",       "n",   "r2", "rmse",
                                      "r2_published", "diff"};
  struct pfi_rtable *v = pfi__report_table(
      r, "validation",
      "Out-of-sample fit of the chosen model: R^2 = 1 - SSE/SST over each "
      "set (published: the paper's text, data/paper/published_headlines.md)",
      6, vcols);
  if (!v) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  pfi__set_dec(v, "n", 0);
  static const char *const names[2] = {"H200 held-out groups",
                                       "H100 groups (H200 model transferred)"};
  const double pubs[2] = {r->pub_heldout_r2, r->pub_h100_r2};
  for (int s = 0; s < 2; s++) {
    double r2 = NAN, rmse = NAN;
    if (cnt[s] >= 2) {
      double sst = sum2[s] - sum[s] * sum[s] / (double)cnt[s];
      r2 = sst > 0 ? 1.0 - sse[s] / sst : NAN;
      rmse = sqrt(sse[s] / (double)cnt[s]);
    }
    long row = pfi_rtable_add_row(v);
    pfi__set_str(v, row, "groups", names[s]);
    pfi__set_num(v, row, "n", (double)cnt[s]);
    pfi__set_num(v, row, "r2", r2);
    pfi__set_num(v, row, "rmse", rmse);
    pfi__set_num(v, row, "r2_published", pubs[s]);
    pfi__set_num(v, row, "diff", pfi__diff(r2, pubs[s]));
    pfi__headline(r,
                  s ? "R^2 of the H200 model on H100 groups"
                    : "R^2 on the held-out H200 groups",
                  r2, pubs[s], 3);
  }
  if (t->nrows)
    pfi__show_table(r, t);
  else
    pfi__missing(r, "no held-out or H100 group with features in the input.");
  pfi__show_table(r, v);
out:
  pfi_model_release(&m);
  pfi_strlist_free(exprs);
  free(x);
  return rc;
}

static int fig_predicted(struct pfi__report *r,
                         const struct pfi__results *res) {
  size_t n = r->ng;
  double *x = calloc(3 * n + 3, sizeof *x), *y = calloc(3 * n + 3, sizeof *y);
  if (!x || !y) {
    free(x);
    free(y);
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  }
  size_t m[3] = {0};
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    const struct pfi__group *g = &r->g[i];
    int s = g->core ? 0 : g->h100 ? 2 : 1;
    double pr = g->core ? res->pred_loo[i] : res->pred_out[i];
    if (!isfinite(pr) || !isfinite(g->pfi))
      continue;
    x[s * (n + 1) + m[s]] = g->pfi;
    y[s * (n + 1) + m[s]++] = pr;
    lo = fmin(lo, fmin(pr, g->pfi));
    hi = fmax(hi, fmax(pr, g->pfi));
  }
  double diag[2] = {isfinite(lo) ? lo : 1, isfinite(hi) ? hi : 2};
  struct pfi_series s[4] = {{.title = "H200 headline (leave-one-out)",
                             .x = x,
                             .y = y,
                             .n = m[0],
                             .style = PFI_STYLE_POINTS,
                             .color = 1},
                            {.title = "H200 held out",
                             .x = x + (n + 1),
                             .y = y + (n + 1),
                             .n = m[1],
                             .style = PFI_STYLE_POINTS,
                             .color = 2},
                            {.title = "H100 (transfer)",
                             .x = x + 2 * (n + 1),
                             .y = y + 2 * (n + 1),
                             .n = m[2],
                             .style = PFI_STYLE_POINTS,
                             .color = 3},
                            {.title = "predicted = actual",
                             .x = diag,
                             .y = diag,
                             .n = 2,
                             .style = PFI_STYLE_LINES,
                             .color = 9,
                             .dashed = 1}};
  struct pfi_panel p;
  pfi_panel_init(&p);
  p.title = "Predicted against actual PFI (DRAM-copy-product model)";
  p.xlabel = "actual PFI";
  p.ylabel = "predicted PFI";
  p.series = s;
  p.nseries = 4;
  p.key = 1;
  p.key_pos = "top left";
  struct pfi_figure f = {.width = 640,
                         .height = 460,
                         .rows = 1,
                         .cols = 1,
                         .panels = &p,
                         .npanels = 1};
  int rc = pfi__report_figure(
      r, &f,
      "Predicted against actual PFI: headline groups predicted by models "
      "that did not see them (leave-one-out), held-out and H100 groups by "
      "the model fitted on all headline groups.");
  free(x);
  free(y);
  return rc;
}

int pfi__sec_prediction(struct pfi__report *r, struct pfi__results *res) {
  pfi_html_puts(&r->body, "<section id=\"prediction\"><h2>4. Predicting PFI "
                          "from telemetry</h2>\n");
  pfi__para(r, "Linear models of PFI on features of the uncapped run, "
               "compared in and out of sample. The chosen model is the "
               "paper's single feature, the DRAM copy product (DRAM "
               "activity times memory-copy utilization); it is then applied "
               "to groups no model saw.");
  int rc = 0;
  size_t cap = r->ng + 1;
  res->pred_loo = malloc(cap * sizeof *res->pred_loo);
  res->pred_loco = malloc(cap * sizeof *res->pred_loco);
  res->pred_out = malloc(cap * sizeof *res->pred_out);
  if (!res->pred_loo || !res->pred_loco || !res->pred_out)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < r->ng; i++)
    res->pred_loo[i] = res->pred_loco[i] = res->pred_out[i] = NAN;
  if (!r->js.have_features) {
    pfi__missing(r, "features.csv is not in the input.");
    goto done;
  }
  /* The core set: built here, handed on to the allocation section. */
  res->have_core = 1;
  if (pfi__core_build(r, &res->core) < 0)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  const struct pfi__core *cs = &res->core;
  if (cs->n < 5) {
    pfi__missing(r, "fewer than 5 H200 headline groups with features and a "
                    "defined PFI.");
  } else {
    rc = sec_ablation(r, cs, res);
    if (rc == 0)
      rc = sec_heldout(r, cs, res);
    if (rc == 0)
      rc = fig_predicted(r, res);
  }
done:
  pfi_html_puts(&r->body, "</section>\n");
  return rc;
}
