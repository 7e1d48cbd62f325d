/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Section 3 of the report: statistics. Kruskal-Wallis with Dunn/Holm
 * across the classes, grid sensitivity and rank correlations, telemetry
 * screening with Benjamini-Hochberg q-values, and leverage.
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

/* ---- section 3: statistics
 * ---------------------------------------------------- */

static int is_meta_col(const char *name) {
  static const char *const meta[] = {"job",     "arch",   "task",
                                     "gpus",    "source", "model",
                                     "variant", "grid",   "gpu"};
  for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++)
    if (strcmp(name, meta[i]) == 0)
      return 1;
  return 0;
}

/* Values of features column `col` and PFI over the core groups; returns the
 * count, 0 when a core group lacks a numeric value. */
static size_t feature_column(struct pfi__report *r, const char *col, double *x,
                             double *y, int *cls) {
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->core || !isfinite(g->pfi))
      continue;
    double v;
    if (g->feat < 0 ||
        pfi_features_value(&r->js.f, (size_t)g->feat, col, &v, NULL) != 0 ||
        !isfinite(v))
      return 0;
    x[n] = v;
    y[n] = g->pfi;
    if (cls)
      cls[n] = g->cat;
    n++;
  }
  return n;
}

/* The test on PFI values v and classes grp (room for every group). */
static int kruskal_on(struct pfi__report *r, double *v, size_t *grp) {
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->core || g->cat < 0 || !isfinite(g->pfi))
      continue;
    v[n] = g->pfi;
    grp[n++] = (size_t)g->cat;
  }
  /* A class without a group (a user's own jobs are often of one class, or
   * of none the library knows) is said in the reader's terms rather than
   * with the statistics module's message about an empty group. */
  size_t per[CAT__N] = {0};
  for (size_t i = 0; i < n; i++)
    per[grp[i]]++;
  if (per[CAT_DENSE] == 0 || per[CAT_MOE_PT] == 0 || per[CAT_MOE_FT] == 0) {
    char msg[400];
    snprintf(msg, sizeof msg,
             "the Kruskal-Wallis and Dunn tests need H200 headline groups of "
             "all three classes with a PFI; the input has %zu dense, %zu MoE "
             "pretraining and %zu MoE fine-tuning.",
             per[CAT_DENSE], per[CAT_MOE_PT], per[CAT_MOE_FT]);
    pfi__missing(r, msg);
    return 0;
  }
  struct pfi_kruskal k;
  memset(&k, 0, sizeof k);
  struct pfi_error e;
  if (pfi__note_oom(r, pfi_stats_kruskal(v, grp, n, CAT__N, &k, &e)) != 0) {
    char msg[700];
    snprintf(msg, sizeof msg, "Kruskal-Wallis test over the classes: %s",
             e.msg);
    pfi__missing(r, msg);
    return 0;
  }
  static const char *const cols[] = {"test", "n", "H", "df", "p"};
  struct pfi_rtable *t = pfi__report_table(
      r, "kruskal",
      "Kruskal-Wallis H test of PFI across dense, MoE pretraining and MoE "
      "fine-tuning (H200 headline groups; the paper's statistic is not in "
      "data/paper)",
      5, cols);
  static const char *const dcols[] = {"a", "b", "z", "p", "p_holm"};
  struct pfi_rtable *d = pfi__report_table(
      r, "dunn", "Dunn's post-hoc test with Holm-Bonferroni correction", 5,
      dcols);
  if (!t || !d) {
    pfi_kruskal_release(&k);
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  }
  pfi__set_dec(t, "n", 0);
  pfi__set_dec(t, "df", 0);
  pfi__set_dec(t, "p", 5);
  pfi__set_dec(d, "p", 5);
  pfi__set_dec(d, "p_holm", 5);
  long row = pfi_rtable_add_row(t);
  pfi__set_str(t, row, "test", "Kruskal-Wallis");
  pfi__set_num(t, row, "n", (double)n);
  pfi__set_num(t, row, "H", k.H);
  pfi__set_num(t, row, "df", k.df);
  pfi__set_num(t, row, "p", k.p);
  for (size_t i = 0; i < k.npairs; i++) {
    row = pfi_rtable_add_row(d);
    pfi__set_str(d, row, "a", pfi__cat_key[k.pairs[i].a]);
    pfi__set_str(d, row, "b", pfi__cat_key[k.pairs[i].b]);
    pfi__set_num(d, row, "z", k.pairs[i].z);
    pfi__set_num(d, row, "p", k.pairs[i].p);
    pfi__set_num(d, row, "p_holm", k.pairs[i].p_holm);
  }
  pfi_kruskal_release(&k);
  pfi__show_table(r, t);
  pfi__show_table(r, d);
  return 0;
}

static int grid_on(struct pfi__report *r, struct pfi__rank *out, double *a,
                   double *b) {
  static const char *const cols[] = {"group",
                                     "pfi_fine",
                                     "pfi_coarse",
                                     "pfi_fine_published",
                                     "pfi_coarse_published",
                                     "diff_fine",
                                     "diff_coarse"};
  struct pfi_rtable *t = pfi__report_table(
      r, "grid_sensitivity",
      "Grid sensitivity: ratio PFI (1 = proportional) of the 8-GPU groups "
      "on the fine grid (200..700 W, 6 caps) and recomputed on the coarse "
      "grid (200, 500, 600, 700 W)",
      7, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->core || !g->fine)
      continue;
    long pr = pfi__pub_row(&r->pub_grid, r->have_pub_grid, "group", g->name);
    double pf = pfi__pub_num(&r->pub_grid, pr, "pfi_fine_6caps");
    double pc = pfi__pub_num(&r->pub_grid, pr, "pfi_coarse_4caps");
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    pfi__set_str(t, row, "group", g->name);
    pfi__set_num(t, row, "pfi_fine", g->pfi);
    pfi__set_num(t, row, "pfi_coarse", g->coarse);
    pfi__set_num(t, row, "pfi_fine_published", pf);
    pfi__set_num(t, row, "pfi_coarse_published", pc);
    pfi__set_num(t, row, "diff_fine", pfi__diff(g->pfi, pf));
    pfi__set_num(t, row, "diff_coarse", pfi__diff(g->coarse, pc));
    if (isfinite(g->pfi) && isfinite(g->coarse)) {
      a[n] = g->pfi;
      b[n++] = g->coarse;
    }
  }
  out->rho = pfi__rho_of(r, a, b, n);
  out->n = n;
  out->rho_pub = pfi__pub_rho(r, r->have_pub_grid, &r->pub_grid,
                              "pfi_fine_6caps", "pfi_coarse_4caps");
  if (t->nrows)
    pfi__show_table(r, t);
  else
    pfi__missing(r, "no H200 group swept on the fine grid (200..700 W in 100 W "
                    "steps), so the grid comparison cannot be made.");
  return 0;
}

static int sec_kruskal(struct pfi__report *r) {
  double *v = calloc(r->ng + 1, sizeof *v);
  size_t *grp = calloc(r->ng + 1, sizeof *grp);
  int rc = v && grp ? kruskal_on(r, v, grp)
                    : pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  free(v);
  free(grp);
  return rc;
}

/* The fine and coarse PFI of the 8-GPU groups (room for every group). */
static int sec_grid(struct pfi__report *r, struct pfi__rank *out) {
  double *a = calloc(r->ng + 1, sizeof *a), *b = calloc(r->ng + 1, sizeof *b);
  int rc = a && b ? grid_on(r, out, a, b)
                  : pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  free(a);
  free(b);
  return rc;
}

static int sec_rank_table(struct pfi__report *r,
                          const struct pfi__results *res) {
  static const char *const cols[] = {"comparison", "n", "rho", "rho_published",
                                     "diff"};
  struct pfi_rtable *t = pfi__report_table(
      r, "rank_correlations",
      "Rank stability: Spearman rho between PFI on the fine and coarse grid, "
      "and between H100 and H200 (published: recomputed from data/paper)",
      5, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  pfi__set_dec(t, "n", 0);
  long row = pfi_rtable_add_row(t);
  pfi__set_str(t, row, "comparison", "fine vs coarse grid (8-GPU H200 groups)");
  pfi__set_num(t, row, "n", (double)res->grid.n);
  pfi__set_num(t, row, "rho", res->grid.rho);
  pfi__set_num(t, row, "rho_published", res->grid.rho_pub);
  pfi__set_num(t, row, "diff", pfi__diff(res->grid.rho, res->grid.rho_pub));
  row = pfi_rtable_add_row(t);
  pfi__set_str(t, row, "comparison", "H100 vs H200 (matched groups)");
  pfi__set_num(t, row, "n", (double)res->h100.n);
  pfi__set_num(t, row, "rho", res->h100.rho);
  pfi__set_num(t, row, "rho_published", res->h100.rho_pub);
  pfi__set_num(t, row, "diff", pfi__diff(res->h100.rho, res->h100.rho_pub));
  pfi__show_table(r, t);
  pfi__headline(r, "rank correlation, fine vs coarse grid", res->grid.rho,
                res->grid.rho_pub, 3);
  pfi__headline(r, "rank correlation, H100 vs H200", res->h100.rho,
                res->h100.rho_pub, 3);
  return 0;
}

static int sec_screening(struct pfi__report *r) {
  if (!r->js.have_features) {
    pfi__missing(r, "features.csv is not in the input, so telemetry screening, "
                    "leverage analysis and prediction are skipped.");
    return 0;
  }
  const struct pfi_table *ft = &r->js.f.t;
  size_t ncol = ft->ncols;
  double *rho = calloc(ncol, sizeof *rho), *p = calloc(ncol, sizeof *p);
  double *q = calloc(ncol, sizeof *q);
  size_t *nn = calloc(ncol, sizeof *nn), *which = calloc(ncol, sizeof *which);
  size_t *skipped = calloc(ncol, sizeof *skipped), nskip = 0;
  int *skip_few = calloc(ncol, sizeof *skip_few);
  double *x = calloc(r->ng + 1, sizeof *x), *y = calloc(r->ng + 1, sizeof *y);
  int *cls = calloc(r->ng + 1, sizeof *cls);
  struct pfi_panel *pn = calloc(ncol, sizeof *pn);
  struct pfi_series *ser = calloc(ncol * CAT__N, sizeof *ser);
  double *xs = calloc(ncol * (r->ng + 1), sizeof *xs);
  double *ysv = calloc(ncol * (r->ng + 1), sizeof *ysv);
  char(*titles)[96] = calloc(ncol, sizeof *titles);
  int rc = 0;
  if (!rho || !p || !q || !nn || !which || !skipped || !skip_few || !x || !y ||
      !cls || !pn || !ser || !xs || !ysv || !titles) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t m = 0;
  for (size_t c = 0; c < ncol; c++) {
    const char *name = ft->header[c];
    if (is_meta_col(name))
      continue;
    size_t n = feature_column(r, name, x, y, cls);
    double rh, pv;
    if (n == 0)
      continue; /* not numeric for every group: not a telemetry column */
    if (n < 4 ||
        pfi__note_oom(r, pfi_stats_spearman(x, y, n, &rh, &pv, NULL)) != 0) {
      /* Listed with the reason, left out of the FDR family. */
      if (nskip < ncol) {
        skip_few[nskip] = n < 4;
        skipped[nskip++] = c;
      }
      continue;
    }
    which[m] = c;
    rho[m] = rh;
    p[m] = pv;
    nn[m] = n;
    /* The scatter panel: PFI against the feature, one series per class,
     * points laid out class after class in this panel's slice. */
    double *px = xs + m * (r->ng + 1), *py = ysv + m * (r->ng + 1);
    size_t off = 0;
    for (int k = 0; k < CAT__N; k++) {
      size_t start = off;
      for (size_t i = 0; i < n; i++)
        if (cls[i] == k) {
          px[off] = x[i];
          py[off++] = y[i];
        }
      ser[m * CAT__N + (size_t)k] =
          (struct pfi_series){.x = px + start,
                              .y = py + start,
                              .n = off - start,
                              .style = PFI_STYLE_POINTS,
                              .color = k + 1};
    }
    snprintf(titles[m], sizeof titles[m], "%s (rho = %.2f)", name, rh);
    pfi_panel_init(&pn[m]);
    pn[m].title = titles[m];
    pn[m].xlabel = name;
    pn[m].ylabel = "PFI";
    pn[m].series = &ser[m * CAT__N];
    pn[m].nseries = CAT__N;
    m++;
  }
  if (m == 0) {
    pfi__missing(r, "no numeric telemetry column in features.csv covers every "
                    "H200 headline group.");
    goto out;
  }
  if ((rc = pfi_stats_bh(p, m, q, r->err)) != 0)
    goto out;
  static const char *const cols[] = {"feature", "n", "rho", "p", "q", "note"};
  struct pfi_rtable *t = pfi__report_table(
      r, "screening",
      "Telemetry screening: Spearman rho of PFI against each feature of the "
      "uncapped run, Benjamini-Hochberg q-values (the paper quotes rho about "
      "0.5 for the DRAM copy product; per-feature values are not in "
      "data/paper)",
      6, cols);
  if (!t) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  pfi__set_dec(t, "n", 0);
  pfi__set_dec(t, "p", 4);
  pfi__set_dec(t, "q", 4);
  for (size_t i = 0; i < nskip; i++) {
    long row = pfi_rtable_add_row(t);
    pfi__set_str(t, row, "feature", ft->header[skipped[i]]);
    pfi__set_str(t, row, "note",
                 skip_few[i] ? "fewer than 4 groups: not screened"
                             : "constant over the groups: rho undefined");
  }
  for (size_t i = 0; i < m; i++) {
    long row = pfi_rtable_add_row(t);
    pfi__set_str(t, row, "feature", ft->header[which[i]]);
    pfi__set_num(t, row, "n", (double)nn[i]);
    pfi__set_num(t, row, "rho", rho[i]);
    pfi__set_num(t, row, "p", p[i]);
    pfi__set_num(t, row, "q", q[i]);
    if (strcmp(ft->header[which[i]], "dram_copy_product") == 0)
      pfi__headline(r, "Spearman rho, PFI vs DRAM copy product", rho[i], NAN,
                    3);
  }
  int cols_n = 4;
  int rows_n = (int)((m + 3) / 4);
  struct pfi_figure f = {.width = 1100,
                         .height = 230 * rows_n + 20,
                         .font_pt = 8,
                         .rows = rows_n,
                         .cols = cols_n,
                         .panels = pn,
                         .npanels = m};
  rc = pfi__report_figure(
      r, &f,
      "PFI against each telemetry feature of the uncapped run, H200 headline "
      "groups (blue dense, orange MoE pretraining, green MoE fine-tuning), "
      "with Spearman rho in each title.");
  if (!rc)
    pfi__show_table(r, t);
out:
  free(rho);
  free(p);
  free(q);
  free(nn);
  free(which);
  free(skipped);
  free(skip_few);
  free(x);
  free(y);
  free(cls);
  free(pn);
  free(ser);
  free(xs);
  free(ysv);
  free(titles);
  return rc;
}

static int sec_leverage(struct pfi__report *r) {
  if (!r->js.have_features)
    return 0;
  const char *feat = pfi_default_model_features;
  size_t n0 = r->ng;
  double *x = calloc(n0 + 1, sizeof *x), *y = calloc(n0 + 1, sizeof *y);
  size_t *idx = calloc(n0 + 1, sizeof *idx);
  int rc = 0;
  if (!x || !y || !idx) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    double v;
    if (!g->core || !isfinite(g->pfi) || g->feat < 0 ||
        pfi_features_value(&r->js.f, (size_t)g->feat, feat, &v, NULL) != 0)
      continue;
    x[n] = v;
    y[n] = g->pfi;
    idx[n++] = i;
  }
  if (n < 6) {
    pfi__missing(r,
                 "leverage analysis needs the DRAM copy product of at least 6 "
                 "H200 headline groups.");
    goto out;
  }
  static const char *const cols[] = {"step", "dropped_group", "leverage",
                                     "n",    "slope",         "rho"};
  struct pfi_rtable *t = pfi__report_table(
      r, "leverage",
      "Leverage analysis of the chosen predictor (DRAM copy product): the "
      "highest-leverage group dropped one at a time, rho recomputed",
      6, cols);
  if (!t) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  pfi__set_dec(t, "step", 0);
  pfi__set_dec(t, "n", 0);
  /* Step 0 fits every group; each later step first finds the group with
   * the highest leverage in the current fit, drops it and refits. */
  const char *dropped = NULL;
  double lev = NAN;
  for (int step = 0; step <= 5 && n >= 4; step++) {
    struct pfi_ols ols;
    memset(&ols, 0, sizeof ols);
    if (pfi__note_oom(r, pfi_ols_fit(x, n, 1, y, &ols, NULL)) != 0)
      break;
    long row = pfi_rtable_add_row(t);
    if (row < 0) {
      pfi_ols_release(&ols);
      rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    pfi__set_num(t, row, "step", step);
    pfi__set_str(t, row, "dropped_group", dropped);
    pfi__set_num(t, row, "leverage", lev);
    pfi__set_num(t, row, "n", (double)n);
    pfi__set_num(t, row, "slope", ols.coef[1]);
    pfi__set_num(t, row, "rho", pfi__rho_of(r, x, y, n));
    size_t worst = 0;
    for (size_t i = 1; i < n; i++)
      if (ols.leverage[i] > ols.leverage[worst])
        worst = i;
    lev = ols.leverage[worst];
    dropped = r->g[idx[worst]].name;
    pfi_ols_release(&ols);
    /* Remove the point, keeping the others' order (ties in leverage then
     * resolve the same way on every run). */
    memmove(x + worst, x + worst + 1, (n - worst - 1) * sizeof *x);
    memmove(y + worst, y + worst + 1, (n - worst - 1) * sizeof *y);
    memmove(idx + worst, idx + worst + 1, (n - worst - 1) * sizeof *idx);
    n--;
  }
  pfi__show_table(r, t);
out:
  free(x);
  free(y);
  free(idx);
  return rc;
}

/* ---- section 3 wrapper
 * ---------------------------------------------------------- */

int pfi__sec_statistics(struct pfi__report *r, struct pfi__results *res) {
  pfi_html_puts(&r->body, "<section id=\"statistics\"><h2>3. Statistics: "
                          "classes, grid, telemetry</h2>\n");
  pfi__para(r,
            "Do the classes differ (Kruskal-Wallis, Dunn with Holm)? Is the "
            "rank order robust to the cap grid and to the GPU generation? "
            "Which telemetry of the uncapped run goes with PFI (Spearman, "
            "Benjamini-Hochberg), and does the chosen predictor's correlation "
            "rest on a few high-leverage groups?");
  int rc = sec_kruskal(r);
  if (!rc)
    rc = sec_grid(r, &res->grid);
  if (!rc)
    rc = sec_rank_table(r, res);
  if (!rc)
    rc = sec_screening(r);
  if (!rc)
    rc = sec_leverage(r);
  pfi_html_puts(&r->body, "</section>\n");
  return rc;
}
