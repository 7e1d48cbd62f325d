/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Section 1 of the report: characterization. Raw and normalized curves,
 * the PFI of every group by the three definitions with intervals beside
 * the published values, and PFI by class.
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

/* ---- section 1: characterization -------------------------------------------
 */

/* Most points of any group's curve: the stride of the per-group slices of
 * the figures' coordinate arrays (so that no point is left out). */
static size_t max_points(const struct pfi__report *r) {
  size_t m = 1;
  for (size_t i = 0; i < r->ng; i++)
    if (r->g[i].c->n > m)
      m = r->g[i].c->n;
  return m;
}

/* Small multiples stay readable up to about this many panels; a larger
 * campaign shows its first groups and says so. */
#define MAX_RAW_PANELS 60

static int fig_raw_curves(struct pfi__report *r) {
  size_t n = r->ng < MAX_RAW_PANELS ? r->ng : MAX_RAW_PANELS;
  if (n == 0)
    return 0;
  struct pfi_panel *p = calloc(n, sizeof *p);
  struct pfi_series *s = calloc(n, sizeof *s);
  size_t st = max_points(r);
  double *x = calloc(n * st, sizeof *x), *y = calloc(n * st, sizeof *y);
  int rc = 0;
  if (!p || !s || !x || !y) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const struct pfi_curve *c = r->g[i].c;
    size_t m = c->n;
    /* Thousands only where the values reach them: a user's throughput in
     * samples or steps per second would otherwise read 0.0001 k tokens/s. */
    double pmax = 0, tmax = 0;
    for (size_t k = 0; k < m; k++) {
      if (c->pts[k].power_w > pmax)
        pmax = c->pts[k].power_w;
      if (c->pts[k].tokens_per_s > tmax)
        tmax = c->pts[k].tokens_per_s;
    }
    double px = pmax >= 1000.0 ? 1000.0 : 1.0;
    double ty = tmax >= 1000.0 ? 1000.0 : 1.0;
    for (size_t k = 0; k < m; k++) {
      x[i * st + k] = c->pts[k].power_w / px;
      y[i * st + k] = c->pts[k].tokens_per_s / ty;
    }
    s[i] = (struct pfi_series){.x = x + i * st,
                               .y = y + i * st,
                               .n = m,
                               .color = r->g[i].cat >= 0 ? r->g[i].cat + 1 : 9};
    pfi_panel_init(&p[i]);
    p[i].title = r->g[i].name;
    p[i].xlabel = px > 1.0 ? "power (kW)" : "power (W)";
    p[i].ylabel = ty > 1.0 ? "k tokens/s" : "tokens/s";
    p[i].series = &s[i];
    p[i].nseries = 1;
  }
  int cols = 5;
  int rows = (int)((n + (size_t)cols - 1) / (size_t)cols);
  struct pfi_figure f = {.width = 1150,
                         .height = 190 * rows + 20,
                         .font_pt = 8,
                         .rows = rows,
                         .cols = cols,
                         .panels = p,
                         .npanels = n};
  char caption[512];
  snprintf(caption, sizeof caption,
           "Raw power-throughput curves of %s: aggregate realized GPU power "
           "against throughput, one point per cap (colour: blue dense, orange "
           "MoE pretraining, green MoE fine-tuning, grey unknown).",
           n == r->ng ? "every group"
                      : "the first 60 groups (see groups.csv "
                        "for all)");
  rc = pfi__report_figure(r, &f, caption);
out:
  free(p);
  free(s);
  free(x);
  free(y);
  return rc;
}

static int fig_normalized(struct pfi__report *r) {
  /* One panel per class, one for H100 groups and one for groups of no known
   * class (a user's own jobs): P/P_max against T/T_max, with the
   * proportional line T/T_max = P/P_max for reference. Panels without a
   * group are left out, so that a user's own sweeps do not show four empty
   * frames. */
  enum { NPANEL = CAT__N + 2, PANEL_H100 = CAT__N, PANEL_OTHER = CAT__N + 1 };
  struct pfi_panel p[NPANEL];
  size_t n = r->ng;
  struct pfi_series *s = calloc(n + NPANEL, sizeof *s);
  size_t st = max_points(r);
  double *x = calloc(n * st, sizeof *x), *y = calloc(n * st, sizeof *y);
  static const double diag[] = {0, 1};
  int rc = 0;
  if (!s || !x || !y) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  static const char *const titles[NPANEL] = {
      "dense (H200)", "MoE pretraining (H200)", "MoE fine-tuning (H200)",
      "H100 groups", "other groups (no known class)"};
  /* The axes start at 0.2 (the paper's lowest cap over its highest) unless
   * a point lies below, so that no point of a user's wider grid is cut. */
  double lo = 0.2;
  for (size_t i = 0; i < n; i++) {
    const struct pfi__group *g = &r->g[i];
    for (size_t k = 0; k < g->c->n; k++) {
      double px = g->c->pts[k].power_w / g->p_max;
      double ty = g->c->pts[k].tokens_per_s / g->t_max;
      if (isfinite(px) && px < lo)
        lo = px;
      if (isfinite(ty) && ty < lo)
        lo = ty;
    }
  }
  lo = lo < 0.2 ? floor(lo * 10.0) / 10.0 : 0.2;
  if (lo < 0)
    lo = 0;
  size_t ns = 0, np = 0;
  for (int c = 0; c < NPANEL; c++) {
    struct pfi_panel *pc = &p[np];
    pfi_panel_init(pc);
    pc->title = titles[c];
    pc->xlabel = "P / P_max";
    pc->ylabel = "T / T_max";
    pc->xmin = lo;
    pc->xmax = 1.02;
    pc->ymin = lo;
    pc->ymax = 1.02;
    pc->series = s + ns;
    size_t first = ns;
    s[ns++] = (struct pfi_series){.x = diag,
                                  .y = diag,
                                  .n = 2,
                                  .style = PFI_STYLE_LINES,
                                  .color = 9,
                                  .dashed = 1};
    for (size_t i = 0; i < n; i++) {
      const struct pfi__group *g = &r->g[i];
      int panel = g->h100 ? PANEL_H100 : g->cat >= 0 ? g->cat : PANEL_OTHER;
      if (panel != c)
        continue;
      size_t m = g->c->n;
      for (size_t k = 0; k < m; k++) {
        x[i * st + k] = g->c->pts[k].power_w / g->p_max;
        y[i * st + k] = g->c->pts[k].tokens_per_s / g->t_max;
      }
      s[ns++] = (struct pfi_series){.x = x + i * st,
                                    .y = y + i * st,
                                    .n = m,
                                    .color = c < CAT__N        ? c + 1
                                             : c == PANEL_H100 ? 4
                                                               : 9};
    }
    pc->nseries = ns - first;
    if (pc->nseries > 1)
      np++;
    else
      ns = first; /* No group in this panel: drop it. */
  }
  if (np == 0)
    goto out;
  struct pfi_figure f = {.width = 40 + 275 * (int)np,
                         .height = 320,
                         .rows = 1,
                         .cols = (int)np,
                         .panels = p,
                         .npanels = np};
  rc = pfi__report_figure(
      r, &f,
      "Normalized curves: throughput and power as fractions of the uncapped "
      "run, one panel per class (panels without a group are left out). "
      "Points above the dashed proportional line lose less throughput than "
      "power (PFI above 1).");
out:
  free(s);
  free(x);
  free(y);
  return rc;
}

static int fig_categories(struct pfi__report *r) {
  /* PFI of each H200 group by class, ours beside published (offset). */
  size_t n = r->ng;
  double *x = calloc(n + 1, sizeof *x), *y = calloc(n + 1, sizeof *y);
  double *px = calloc(n + 1, sizeof *px), *py = calloc(n + 1, sizeof *py);
  int rc = 0;
  if (!x || !y || !px || !py) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t m = 0, pm = 0, per[CAT__N] = {0};
  for (size_t i = 0; i < n; i++) {
    const struct pfi__group *g = &r->g[i];
    if (g->h100 || g->cat < 0 || !isfinite(g->pfi))
      continue;
    /* Spread points of a class sideways so that equal values stay
     * visible; deterministic (by order), no random jitter. */
    double off = -0.25 + 0.03 * (double)(per[g->cat]++ % 8);
    x[m] = g->cat + 1 + off;
    y[m++] = g->pfi;
    if (isfinite(g->pub)) {
      px[pm] = g->cat + 1 + off + 0.3;
      py[pm++] = g->pub;
    }
  }
  if (m == 0) {
    /* An empty frame would look like a failed drawing; say why instead. */
    pfi__missing(r,
                 "PFI by class: no H200 group of a known class with a defined "
                 "PFI (a group's class comes from the architecture and task "
                 "columns of features.csv, or from the paper's table for the "
                 "paper's own groups).");
    goto out;
  }
  struct pfi_series s[2] = {{.title = "ours",
                             .x = x,
                             .y = y,
                             .n = m,
                             .style = PFI_STYLE_POINTS,
                             .color = 1},
                            {.title = "published",
                             .x = px,
                             .y = py,
                             .n = pm,
                             .style = PFI_STYLE_POINTS,
                             .color = 2}};
  static const double tp[] = {1, 2, 3};
  struct pfi_panel p;
  pfi_panel_init(&p);
  p.title = "PFI by architecture-task class (H200)";
  p.ylabel = "PFI (ratio definition)";
  p.xmin = 0.5;
  p.xmax = 3.5;
  p.series = s;
  p.nseries = 2;
  p.xtic_pos = tp;
  p.xtic_label = pfi__cat_label;
  p.nxtics = 3;
  p.key = 1;
  p.key_pos = "top left";
  struct pfi_figure f = {.width = 700,
                         .height = 380,
                         .rows = 1,
                         .cols = 1,
                         .panels = &p,
                         .npanels = 1};
  rc = pfi__report_figure(r, &f,
                          "PFI by class: each point one group (ours left, the "
                          "published value of the same group right).");
out:
  free(x);
  free(y);
  free(px);
  free(py);
  return rc;
}

int pfi__sec_characterization(struct pfi__report *r, struct pfi__results *res) {
  (void)res; /* hands nothing on */
  pfi_html_puts(&r->body, "<section id=\"characterization\"><h2>1. "
                          "Characterization: power-throughput curves and PFI"
                          "</h2>\n");
  pfi__para(r,
            "Every group's sweep gives one (power, throughput) point per cap. "
            "The Power Flexibility Index (ratio definition) averages, over the "
            "capped points, the fraction of power given up divided by the "
            "fraction of throughput lost; 95 % intervals come from Monte Carlo "
            "resampling of each point within its noise. The area and "
            "constant-elasticity definitions are shown beside it.");
  int rc = fig_raw_curves(r);
  if (!rc)
    rc = fig_normalized(r);
  if (rc)
    return rc;
  /* The three definitions are named apart (pfi_ratio, pfi_area, pfi_ce):
   * their reference points differ (1 and 0 mean proportional). */
  static const char *const cols[] = {"group",
                                     "gpu",
                                     "class",
                                     "gpus",
                                     "caps",
                                     "pfi_ratio",
                                     "pfi_ratio_ci95_lo",
                                     "pfi_ratio_ci95_hi",
                                     "pfi_area",
                                     "pfi_area_ci95_lo",
                                     "pfi_area_ci95_hi",
                                     "pfi_ce",
                                     "pfi_ce_ci95_lo",
                                     "pfi_ce_ci95_hi",
                                     "pfi_ratio_published",
                                     "pfi_ratio_ci95_lo_published",
                                     "pfi_ratio_ci95_hi_published",
                                     "diff_pfi_ratio"};
  struct pfi_rtable *t = pfi__report_table(
      r, "groups",
      "PFI of every group, three definitions with 95 % intervals: "
      "pfi_ratio (ratio definition; 1 = throughput falls in proportion to "
      "power), pfi_area and pfi_ce (area and constant-elasticity "
      "definitions; 0 = proportional); above the reference, more flexible. "
      "Published: the paper's ratio PFI",
      18, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  pfi__set_dec(t, "gpus", 0);
  pfi__set_dec(t, "caps", 0);
  pfi__set_dec(t, "pfi_ratio_ci95_lo", 3);
  pfi__set_dec(t, "pfi_area", 4);
  pfi__set_dec(t, "pfi_area_ci95_lo", 4);
  pfi__set_dec(t, "pfi_area_ci95_hi", 4);
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    pfi__set_str(t, row, "group", g->name);
    pfi__set_str(t, row, "gpu", pfi__gpu_name(r, g));
    pfi__set_str(t, row, "class", g->cat >= 0 ? pfi__cat_key[g->cat] : NULL);
    pfi__set_num(t, row, "gpus", g->c->gpus > 0 ? g->c->gpus : NAN);
    pfi__set_num(t, row, "caps", (double)g->c->n);
    pfi__set_num(t, row, "pfi_ratio", g->pfi);
    pfi__set_num(t, row, "pfi_ratio_ci95_lo", g->lo);
    pfi__set_num(t, row, "pfi_ratio_ci95_hi", g->hi);
    pfi__set_num(t, row, "pfi_area", g->area);
    pfi__set_num(t, row, "pfi_area_ci95_lo", g->area_lo);
    pfi__set_num(t, row, "pfi_area_ci95_hi", g->area_hi);
    pfi__set_num(t, row, "pfi_ce", g->ce);
    pfi__set_num(t, row, "pfi_ce_ci95_lo", g->ce_lo);
    pfi__set_num(t, row, "pfi_ce_ci95_hi", g->ce_hi);
    pfi__set_num(t, row, "pfi_ratio_published", g->pub);
    pfi__set_num(t, row, "pfi_ratio_ci95_lo_published", g->pub_lo);
    pfi__set_num(t, row, "pfi_ratio_ci95_hi_published", g->pub_hi);
    pfi__set_num(t, row, "diff_pfi_ratio", pfi__diff(g->pfi, g->pub));
  }
  pfi__show_table(r, t);
  pfi_html_puts(&r->body,
                "<p class=\"note\">pfi_ratio: 1 = throughput falls in "
                "proportion to power, above 1 = more flexible. pfi_area and "
                "pfi_ce: 0 = proportional, above 0 = more flexible. The "
                "other tables' PFI is the ratio definition.</p>\n");

  /* Class medians and means over the H200 headline groups (core), ours
   * and published (recomputed from the published per-group table). */
  static const char *const ccols[] = {
      "class",       "n",        "median",           "mean",
      "min",         "max",      "median_published", "mean_published",
      "diff_median", "diff_mean"};
  struct pfi_rtable *ct = pfi__report_table(
      r, "categories",
      "Ratio PFI (1 = proportional) by class over the H200 headline groups "
      "(published: recomputed from the paper's per-group table)",
      10, ccols);
  if (!ct)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  pfi__set_dec(ct, "n", 0);
  double all_min = INFINITY, all_max = -INFINITY;
  double pub_min = INFINITY, pub_max = -INFINITY;
  /* The values of one class: ours (a group each) and published (a row
   * each). */
  double *v = calloc(r->ng + 1, sizeof *v);
  double *pv = calloc(r->pub_head.nrows + 1, sizeof *pv);
  if (!v || !pv) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (int c = 0; c < CAT__N; c++) {
    size_t n = 0, pn = 0;
    for (size_t i = 0; i < r->ng; i++) {
      const struct pfi__group *g = &r->g[i];
      if (!g->core || g->cat != c || !isfinite(g->pfi))
        continue;
      v[n++] = g->pfi;
      all_min = fmin(all_min, g->pfi);
      all_max = fmax(all_max, g->pfi);
    }
    int ac = r->have_pub_head ? pfi_table_find(&r->pub_head, "arch") : -1;
    int tc = r->have_pub_head ? pfi_table_find(&r->pub_head, "task") : -1;
    if (ac >= 0 && tc >= 0) {
      for (size_t i = 0; i < r->pub_head.nrows; i++) {
        const char *a = pfi_table_cell(&r->pub_head, i, (size_t)ac);
        const char *k = pfi_table_cell(&r->pub_head, i, (size_t)tc);
        int pc = (!a || strcmp(a, "moe") != 0) ? CAT_DENSE
                 : (k && strcmp(k, "ft") == 0) ? CAT_MOE_FT
                                               : CAT_MOE_PT;
        double d = pfi__pub_num(&r->pub_head, (long)i, "pfi");
        if (pc == c && isfinite(d)) {
          pv[pn++] = d;
          pub_min = fmin(pub_min, d);
          pub_max = fmax(pub_max, d);
        }
      }
    }
    long row = pfi_rtable_add_row(ct);
    if (row < 0) {
      rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    double med = NAN, mean = NAN, mn = NAN, mx = NAN, pmed = NAN, pmean = NAN;
    if (n) {
      pfi__note_oom(r, pfi_stats_median(v, n, &med, NULL));
      double s = 0;
      mn = INFINITY;
      mx = -INFINITY;
      for (size_t k = 0; k < n; k++) {
        s += v[k];
        mn = fmin(mn, v[k]);
        mx = fmax(mx, v[k]);
      }
      mean = s / (double)n;
    }
    if (pn) {
      pfi__note_oom(r, pfi_stats_median(pv, pn, &pmed, NULL));
      double s = 0;
      for (size_t k = 0; k < pn; k++)
        s += pv[k];
      pmean = s / (double)pn;
    }
    pfi__set_str(ct, row, "class", pfi__cat_key[c]);
    pfi__set_num(ct, row, "n", (double)n);
    pfi__set_num(ct, row, "median", med);
    pfi__set_num(ct, row, "mean", mean);
    pfi__set_num(ct, row, "min", mn);
    pfi__set_num(ct, row, "max", mx);
    pfi__set_num(ct, row, "median_published", pmed);
    pfi__set_num(ct, row, "mean_published", pmean);
    pfi__set_num(ct, row, "diff_median", pfi__diff(med, pmed));
    pfi__set_num(ct, row, "diff_mean", pfi__diff(mean, pmean));
    char metric[64];
    snprintf(metric, sizeof metric, "median PFI, %s", pfi__cat_label[c]);
    pfi__headline(r, metric, med, pmed, 2);
  }
  pfi__headline(r, "lowest PFI (H200 headline groups)",
                isfinite(all_min) ? all_min : NAN,
                isfinite(pub_min) ? pub_min : NAN, 2);
  pfi__headline(r, "highest PFI (H200 headline groups)",
                isfinite(all_max) ? all_max : NAN,
                isfinite(pub_max) ? pub_max : NAN, 2);
  if ((rc = fig_categories(r)) < 0)
    goto out;
  pfi__show_table(r, ct);
  pfi_html_puts(&r->body, "</section>\n");
out:
  free(v);
  free(pv);
  return rc;
}
