/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The analysis behind the report (METHOD.md sections 1-5), on a summarized
 * campaign: curves.csv, features.csv and mechanism.csv. Each section adds
 * its result tables (written as CSV and JSON) and figures (inline SVG) to
 * the page, beside the published values of data/paper/ where the paper has
 * them. A section whose inputs are missing says what is missing.
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

enum { CAT_DENSE, CAT_MOE_PT, CAT_MOE_FT, CAT__N };
static const char *const cat_key[CAT__N] = {"dense", "moe-pt", "moe-ft"};
static const char *const cat_label[CAT__N] = {
    "dense (PT and FT)", "MoE pretraining", "MoE fine-tuning"};

/* The paper's noise when a point carries none: median standard errors of
 * the mean of power (0.04 %) and throughput (0.05 %), METHOD.md section 1. */
#define REL_SD_POWER 0.0004
#define REL_SD_TOKENS 0.0005

static const double coarse_caps[] = {200, 500, 600, 700};
#define N_COARSE 4

void pfi_report_opts_init(struct pfi_report_opts *o) {
  memset(o, 0, sizeof *o);
  o->ci_draws = 10000;
  o->seed = 1;
}

/* ---- helpers ------------------------------------------------------------ */

void pfi__report_progress(struct pfi__report *r, const char *fmt, ...) {
  if (!r->o->progress)
    return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  r->o->progress(buf, r->o->progress_arg);
}

/* A new result table, kept by the report for writing and display. */
struct pfi_rtable *pfi__report_table(struct pfi__report *r, const char *name,
                                     const char *title, size_t ncols,
                                     const char *const *cols) {
  if (r->ntabs == sizeof r->tabs / sizeof r->tabs[0])
    return NULL;
  /* Every table ends with a `source` column (emulated, measured...) so
   * that a CSV or JSON file taken alone still says where its numbers come
   * from; the page says it once, on its first screen. */
  const char *all[40];
  if (ncols + 1 > sizeof all / sizeof all[0])
    return NULL;
  for (size_t i = 0; i < ncols; i++)
    all[i] = cols[i];
  all[ncols] = "source";
  struct pfi_rtable *t = &r->tabs[r->ntabs];
  if (pfi_rtable_init(t, name, title, ncols + 1, all))
    return NULL;
  t->hidden_col = (long)ncols;
  r->ntabs++;
  return t;
}

static int set_num(struct pfi_rtable *t, long row, const char *col, double v) {
  long c = pfi_rtable_col(t, col);
  return c < 0 ? PFI_EINVAL : pfi_rtable_set_num(t, (size_t)row, (size_t)c, v);
}

static int set_str(struct pfi_rtable *t, long row, const char *col,
                   const char *s) {
  long c = pfi_rtable_col(t, col);
  return c < 0 ? PFI_EINVAL : pfi_rtable_set_str(t, (size_t)row, (size_t)c, s);
}

static void set_dec(struct pfi_rtable *t, const char *col, int d) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0)
    pfi_rtable_decimals(t, (size_t)c, d);
}

/* Difference ours - published, NaN when either is missing. */
static double diff(double ours, double pub) {
  return isfinite(ours) && isfinite(pub) ? ours - pub : NAN;
}

/* Appends a figure to the page (or a note when figures are off). */
int pfi__report_figure(struct pfi__report *r, const struct pfi_figure *f,
                       const char *caption) {
  int no = ++r->nfigs;
  struct pfi_html *b = &r->body;
  if (r->o->no_figures) {
    pfi_html_printf(b, "<p class=\"note\">Figure %d (", no);
    pfi_html_text(b, caption);
    pfi_html_puts(b, ") not drawn: figures were turned off.</p>\n");
    return 0;
  }
  char prefix[32];
  snprintf(prefix, sizeof prefix, "f%d-", no);
  char *svg = NULL;
  int rc = pfi_figure_svg(f, prefix, &svg, r->err);
  if (rc)
    return rc;
  pfi_html_printf(b, "<figure class=\"fig\" id=\"fig-%d\">\n", no);
  pfi_html_puts(b, svg);
  pfi_html_printf(b, "<figcaption>Figure %d. ", no);
  pfi_html_text(b, caption);
  pfi_html_puts(b, "</figcaption>\n</figure>\n");
  free(svg);
  return pfi_html_ok(b) ? 0
                        : pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
}

static void para(struct pfi__report *r, const char *text) {
  pfi_html_puts(&r->body, "<p>");
  pfi_html_text(&r->body, text);
  pfi_html_puts(&r->body, "</p>\n");
}

static void missing(struct pfi__report *r, const char *text) {
  pfi_html_puts(&r->body, "<p class=\"missing\">Not available: ");
  pfi_html_text(&r->body, text);
  pfi_html_puts(&r->body, "</p>\n");
}

static void show_table(struct pfi__report *r, const struct pfi_rtable *t) {
  pfi_html_puts(&r->body, "<div class=\"tabwrap\">");
  pfi_rtable_html(t, &r->body);
  pfi_html_puts(&r->body, "</div>\n");
}

/* Headline rows for the first screen: metric, ours, published, diff. */
static void headline(struct pfi__report *r, const char *metric, double ours,
                     double pub, int decimals) {
  struct pfi_rtable *t = r->headline;
  if (!t)
    return;
  long row = pfi_rtable_add_row(t);
  if (row < 0)
    return;
  set_str(t, row, "metric", metric);
  pfi_rtable_set_num_dec(t, (size_t)row, 1, ours, decimals);
  pfi_rtable_set_num_dec(t, (size_t)row, 2, pub, decimals);
  pfi_rtable_set_num_dec(t, (size_t)row, 3, diff(ours, pub), decimals);
}

/* Records an out-of-memory failure that a section otherwise treats as
 * "not available": the report then fails with PFI_ENOMEM instead of
 * presenting a page with a section missing for lack of memory. Returns rc. */
static int note_oom(struct pfi__report *r, int rc) {
  if (rc == PFI_ENOMEM)
    r->nomem = 1;
  return rc;
}

/* ---- published tables --------------------------------------------------- */

static int load_paper(struct pfi__report *r, const char *file,
                      struct pfi_table *t, int *have) {
  char rel[256], path[4096];
  snprintf(rel, sizeof rel, "paper/%s", file);
  *have = 0;
  if (pfi_data_path(rel, path, sizeof path, NULL) != 0)
    return 0; /* the page says the published values are missing */
  int rc = pfi_table_load(t, path, r->err);
  if (rc)
    return rc;
  *have = 1;
  return 0;
}

/* Row of `key` in column `keycol` of a published table, or -1. */
static long pub_row(const struct pfi_table *t, int have, const char *keycol,
                    const char *key) {
  if (!have)
    return -1;
  int c = pfi_table_find(t, keycol);
  if (c < 0)
    return -1;
  for (size_t i = 0; i < t->nrows; i++) {
    const char *v = pfi_table_cell(t, i, (size_t)c);
    if (v && strcmp(v, key) == 0)
      return (long)i;
  }
  return -1;
}

static double pub_num(const struct pfi_table *t, long row, const char *col) {
  if (row < 0)
    return NAN;
  int c = pfi_table_find(t, col);
  if (c < 0)
    return NAN;
  const char *v = pfi_table_cell(t, (size_t)row, (size_t)c);
  double d;
  if (!v || pfi_parse_double(v, &d) != 0)
    return NAN;
  return d;
}

/* ---- inputs ---------------------------------------------------------------
 */

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int load_inputs(struct pfi__report *r, const char *in_dir) {
  char path[4096], fpath[4096];
  snprintf(path, sizeof path, "%s/curves.csv", in_dir);
  if (!file_exists(path))
    return pfi_error_set(r->err, PFI_ENOTFOUND,
                         "%s: no curves.csv (run pfi trace summarize first, or "
                         "give a trace store)",
                         in_dir);
  snprintf(fpath, sizeof fpath, "%s/features.csv", in_dir);
  /* Curves and features joined, and their provenance, by the job set. */
  int rc = pfi_jobset_load(&r->js, path, NULL,
                           file_exists(fpath) ? fpath : NULL, r->err);
  if (rc)
    return rc;
  snprintf(r->source, sizeof r->source, "%s", pfi_jobset_provenance(&r->js));
  snprintf(path, sizeof path, "%s/mechanism.csv", in_dir);
  if (file_exists(path)) {
    rc = pfi_table_load(&r->mech, path, r->err);
    if (rc)
      return rc;
    r->have_mech = 1;
    /* Every clock row must be numbers: a bad cell is bad input (file:line:
     * column, exit status 2), not a run quietly left out of the figure.
     * Without these columns the section says so instead. */
    static const char *const mcols[] = {"cap_w", "sm_clock_mhz",
                                        "mem_clock_mhz"};
    for (size_t k = 0; k < 3; k++) {
      int col = pfi_table_find(&r->mech, mcols[k]);
      double v;
      for (size_t row = 0; col >= 0 && row < r->mech.nrows; row++)
        if ((rc = pfi_table_double(&r->mech, row, (size_t)col, &v, r->err)))
          return rc;
    }
  }
  if ((rc = load_paper(r, "h200_headline_groups.csv", &r->pub_head,
                       &r->have_pub_head)) ||
      (rc = load_paper(r, "h200_heldout_groups.csv", &r->pub_held,
                       &r->have_pub_held)) ||
      (rc = load_paper(r, "h100_h200_matched_groups.csv", &r->pub_h100,
                       &r->have_pub_h100)) ||
      (rc = load_paper(r, "h200_grid_sensitivity.csv", &r->pub_grid,
                       &r->have_pub_grid)) ||
      (rc = load_paper(r, "h200_predictor_ablation.csv", &r->pub_abl,
                       &r->have_pub_abl)))
    return rc;
  return 0;
}

/* ---- per-group indices ------------------------------------------------------
 */

/* Ratio PFI on the caps of `caps` only; NaN when a cap is missing. */
static double pfi_on_caps(const struct pfi_curve *c, const double *caps,
                          size_t ncaps) {
  double cw[16], pw[16], tk[16];
  if (ncaps > 16)
    return NAN;
  for (size_t k = 0; k < ncaps; k++) {
    size_t i;
    for (i = 0; i < c->n; i++)
      if (fabs(c->pts[i].cap_w - caps[k]) < 1e-6)
        break;
    if (i == c->n)
      return NAN;
    cw[k] = c->pts[i].cap_w;
    pw[k] = c->pts[i].power_w;
    tk[k] = c->pts[i].tokens_per_s;
  }
  double v;
  size_t used;
  return pfi_index_ratio(cw, pw, tk, ncaps, &v, &used) == 1 ? v : NAN;
}

static int is_fine_grid(const struct pfi_curve *c) {
  if (c->n != 6)
    return 0;
  for (size_t i = 0; i < 6; i++)
    if (fabs(c->pts[i].cap_w - (200.0 + 100.0 * (double)i)) > 1e-6)
      return 0;
  return 1;
}

/*
 * 95 % Monte Carlo intervals of the area and constant-elasticity
 * definitions, by the same noise model as pfi_index_ci() (each point's power
 * and throughput drawn from a normal with its standard error, or the
 * paper's median relative noise when the curve has none): the paper reports
 * intervals for the ratio definition only; these show how the other two
 * move under the same noise. NaN when no draw gave a value.
 */
static int ci_area_ce(const struct pfi_curve *c, size_t draws,
                      unsigned long seed, double *alo, double *ahi, double *clo,
                      double *chi, struct pfi_error *err) {
  size_t n = c->n;
  *alo = *ahi = *clo = *chi = NAN;
  double *buf = malloc(3 * n * sizeof *buf);
  double *sa = malloc(draws * sizeof *sa), *sc = malloc(draws * sizeof *sc);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  int rc = 0;
  if (!buf || !sa || !sc || !rng) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  gsl_rng_set(rng, seed);
  double *cap = buf, *pw = buf + n, *tk = buf + 2 * n;
  size_t na = 0, nc = 0;
  for (size_t d = 0; d < draws; d++) {
    for (size_t i = 0; i < n; i++) {
      const struct pfi_point *pt = &c->pts[i];
      double sdp =
          pt->power_sd_w >= 0 ? pt->power_sd_w : REL_SD_POWER * pt->power_w;
      double sdt =
          pt->tokens_sd >= 0 ? pt->tokens_sd : REL_SD_TOKENS * pt->tokens_per_s;
      cap[i] = pt->cap_w;
      pw[i] = pt->power_w + gsl_ran_gaussian(rng, sdp);
      tk[i] = pt->tokens_per_s + gsl_ran_gaussian(rng, sdt);
    }
    double v;
    if (pfi_index_area(cap, pw, tk, n, &v) == 0 && isfinite(v))
      sa[na++] = v;
    if (pfi_index_ce(pw, tk, n, &v) == 1 && isfinite(v))
      sc[nc++] = v;
  }
  if (na) {
    gsl_sort(sa, 1, na);
    *alo = gsl_stats_quantile_from_sorted_data(sa, 1, na, 0.025);
    *ahi = gsl_stats_quantile_from_sorted_data(sa, 1, na, 0.975);
  }
  if (nc) {
    gsl_sort(sc, 1, nc);
    *clo = gsl_stats_quantile_from_sorted_data(sc, 1, nc, 0.025);
    *chi = gsl_stats_quantile_from_sorted_data(sc, 1, nc, 0.975);
  }
out:
  free(buf);
  free(sa);
  free(sc);
  if (rng)
    gsl_rng_free(rng);
  return rc;
}

static int compute_groups(struct pfi__report *r) {
  r->ng = r->js.cs.n;
  r->g = calloc(r->ng ? r->ng : 1, sizeof *r->g);
  if (!r->g)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  size_t draws = r->o->ci_draws ? r->o->ci_draws : 10000;
  for (size_t i = 0; i < r->ng; i++) {
    struct pfi__group *g = &r->g[i];
    g->c = &r->js.cs.c[i];
    g->name = g->c->job;
    snprintf(g->base, sizeof g->base, "%s", g->name);
    char *at = strstr(g->base, "@h100");
    if (at && at[5] == '\0') {
      *at = '\0';
      g->h100 = 1;
    }
    g->cat = -1;
    g->feat = r->js.have_features ? pfi_features_row(&r->js.f, g->name) : -1;
    if (g->feat >= 0) {
      int moe, ft;
      if (pfi_features_class(&r->js.f, (size_t)g->feat, &moe, &ft, NULL) == 0)
        g->cat = !moe ? CAT_DENSE : ft ? CAT_MOE_FT : CAT_MOE_PT;
    }
    long hr = pub_row(&r->pub_head, r->have_pub_head, "group", g->base);
    long lr = pub_row(&r->pub_held, r->have_pub_held, "group", g->base);
    if (g->cat < 0) {
      /* Without features, a published group's class is the paper's. */
      const struct pfi_table *t = hr >= 0 ? &r->pub_head : &r->pub_held;
      long row = hr >= 0 ? hr : lr;
      int ac = pfi_table_find(t, "arch"), tc = pfi_table_find(t, "task");
      if (row >= 0 && ac >= 0 && tc >= 0) {
        const char *a = pfi_table_cell(t, (size_t)row, (size_t)ac);
        const char *k = pfi_table_cell(t, (size_t)row, (size_t)tc);
        if (a && k)
          g->cat = strcmp(a, "moe") != 0  ? CAT_DENSE
                   : strcmp(k, "ft") == 0 ? CAT_MOE_FT
                                          : CAT_MOE_PT;
      }
    }
    g->heldout = !g->h100 && lr >= 0;
    if (!g->h100) {
      g->pub = hr >= 0 ? pub_num(&r->pub_head, hr, "pfi")
                       : pub_num(&r->pub_held, lr, "pfi");
      g->pub_lo = pub_num(&r->pub_head, hr, "ci95_lo");
      g->pub_hi = pub_num(&r->pub_head, hr, "ci95_hi");
    } else {
      long mr = pub_row(&r->pub_h100, r->have_pub_h100, "group", g->base);
      g->pub = pub_num(&r->pub_h100, mr, "pfi_h100");
      g->pub_lo = g->pub_hi = NAN;
    }
    struct pfi_index idx;
    memset(&idx, 0, sizeof idx);
    int rc = pfi_index_compute(g->c, &idx, r->err);
    if (rc)
      return rc;
    g->pfi = idx.pfi_defined ? idx.pfi : NAN;
    g->area = idx.pfi_area;
    g->ce = idx.ce_defined ? idx.pfi_ce : NAN;
    g->t_max = idx.t_max;
    g->p_max = idx.p_max;
    pfi_index_release(&idx);
    double lo, hi;
    /* Each group's stream is seeded from the run's seed and the group's id
     * (FNV-1a), so a group's interval depends neither on the draws of the
     * others nor on the order of the input. */
    uint64_t h = 14695981039346656037u;
    for (const char *p = g->name; *p; p++)
      h = (h ^ (unsigned char)*p) * 1099511628211u;
    rc = pfi_index_ci(g->c, draws, (unsigned long)(h ^ r->o->seed),
                      REL_SD_POWER, REL_SD_TOKENS, &lo, &hi, r->err);
    if (rc < 0)
      return rc;
    g->lo = rc > 0 ? lo : NAN;
    g->hi = rc > 0 ? hi : NAN;
    /* A stream of its own (the id hash with the seed's bits inverted), so
     * these draws do not repeat the ratio interval's. */
    rc = ci_area_ce(g->c, draws, (unsigned long)(h ^ ~(uint64_t)r->o->seed),
                    &g->area_lo, &g->area_hi, &g->ce_lo, &g->ce_hi, r->err);
    if (rc < 0)
      return rc;
    g->fine = is_fine_grid(g->c);
    g->coarse = g->fine ? pfi_on_caps(g->c, coarse_caps, N_COARSE) : NAN;
    /* The screened set: H200 groups the models are fitted on. */
    g->core = !g->h100 && !g->heldout;
  }
  return 0;
}

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
    missing(r, "PFI by class: no H200 group of a known class with a defined "
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
  p.xtic_label = cat_label;
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

/* The GPU of a group as the tables show it. Ids ending in @h100 are H100
 * groups; the others are H200 only where that is known: an emulated
 * campaign (the emulator's H200) or one of the paper's own groups. A
 * user's own sweep on another GPU is not called H200; its cell is empty. */
static const char *gpu_name(const struct pfi__report *r,
                            const struct pfi__group *g) {
  if (g->h100)
    return "H100";
  if (strcmp(r->source, "emulated") == 0 || isfinite(g->pub) || g->heldout)
    return "H200";
  return NULL;
}

static int sec_characterization(struct pfi__report *r) {
  pfi_html_puts(&r->body, "<section id=\"characterization\"><h2>1. "
                          "Characterization: power-throughput curves and PFI"
                          "</h2>\n");
  para(r, "Every group's sweep gives one (power, throughput) point per cap. "
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
  set_dec(t, "gpus", 0);
  set_dec(t, "caps", 0);
  set_dec(t, "pfi_ratio_ci95_lo", 3);
  set_dec(t, "pfi_area", 4);
  set_dec(t, "pfi_area_ci95_lo", 4);
  set_dec(t, "pfi_area_ci95_hi", 4);
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    set_str(t, row, "group", g->name);
    set_str(t, row, "gpu", gpu_name(r, g));
    set_str(t, row, "class", g->cat >= 0 ? cat_key[g->cat] : NULL);
    set_num(t, row, "gpus", g->c->gpus > 0 ? g->c->gpus : NAN);
    set_num(t, row, "caps", (double)g->c->n);
    set_num(t, row, "pfi_ratio", g->pfi);
    set_num(t, row, "pfi_ratio_ci95_lo", g->lo);
    set_num(t, row, "pfi_ratio_ci95_hi", g->hi);
    set_num(t, row, "pfi_area", g->area);
    set_num(t, row, "pfi_area_ci95_lo", g->area_lo);
    set_num(t, row, "pfi_area_ci95_hi", g->area_hi);
    set_num(t, row, "pfi_ce", g->ce);
    set_num(t, row, "pfi_ce_ci95_lo", g->ce_lo);
    set_num(t, row, "pfi_ce_ci95_hi", g->ce_hi);
    set_num(t, row, "pfi_ratio_published", g->pub);
    set_num(t, row, "pfi_ratio_ci95_lo_published", g->pub_lo);
    set_num(t, row, "pfi_ratio_ci95_hi_published", g->pub_hi);
    set_num(t, row, "diff_pfi_ratio", diff(g->pfi, g->pub));
  }
  show_table(r, t);
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
  set_dec(ct, "n", 0);
  double all_min = INFINITY, all_max = -INFINITY;
  double pub_min = INFINITY, pub_max = -INFINITY;
  for (int c = 0; c < CAT__N; c++) {
    /* Scratch arrays sized for every group and every published row. */
    double *v = r->sa, *pv = r->sb;
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
        double d = pub_num(&r->pub_head, (long)i, "pfi");
        if (pc == c && isfinite(d)) {
          pv[pn++] = d;
          pub_min = fmin(pub_min, d);
          pub_max = fmax(pub_max, d);
        }
      }
    }
    long row = pfi_rtable_add_row(ct);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    double med = NAN, mean = NAN, mn = NAN, mx = NAN, pmed = NAN, pmean = NAN;
    if (n) {
      note_oom(r, pfi_stats_median(v, n, &med, NULL));
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
      note_oom(r, pfi_stats_median(pv, pn, &pmed, NULL));
      double s = 0;
      for (size_t k = 0; k < pn; k++)
        s += pv[k];
      pmean = s / (double)pn;
    }
    set_str(ct, row, "class", cat_key[c]);
    set_num(ct, row, "n", (double)n);
    set_num(ct, row, "median", med);
    set_num(ct, row, "mean", mean);
    set_num(ct, row, "min", mn);
    set_num(ct, row, "max", mx);
    set_num(ct, row, "median_published", pmed);
    set_num(ct, row, "mean_published", pmean);
    set_num(ct, row, "diff_median", diff(med, pmed));
    set_num(ct, row, "diff_mean", diff(mean, pmean));
    char metric[64];
    snprintf(metric, sizeof metric, "median PFI, %s", cat_label[c]);
    headline(r, metric, med, pmed, 2);
  }
  headline(r, "lowest PFI (H200 headline groups)",
           isfinite(all_min) ? all_min : NAN, isfinite(pub_min) ? pub_min : NAN,
           2);
  headline(r, "highest PFI (H200 headline groups)",
           isfinite(all_max) ? all_max : NAN, isfinite(pub_max) ? pub_max : NAN,
           2);
  int rc2 = fig_categories(r);
  if (rc2)
    return rc2;
  show_table(r, ct);
  pfi_html_puts(&r->body, "</section>\n");
  return 0;
}

/* ---- section 2: mechanism
 * ---------------------------------------------------- */

/* The H200 group of the same configuration as H100 group g. Candidates
 * share the id, or one id extends the other ("x8" and "x8-ep8", "x8" and
 * "x8-nocompile"). Several candidates (an H100 group matched to one of two
 * H200 variants) are told apart by the paper's own Table 8, which gives the
 * matched H200 group's published PFI (`pub_h200`): the candidate whose
 * published PFI equals it. This identifies the pair; no value is fitted. */
static int extends(const char *longer, const char *shorter) {
  size_t n = strlen(shorter);
  return strncmp(longer, shorter, n) == 0 && longer[n] == '-';
}

static const struct pfi__group *h200_twin(const struct pfi__report *r,
                                          const struct pfi__group *g,
                                          double pub_h200) {
  const struct pfi__group *only = NULL, *by_pub = NULL;
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *h = &r->g[i];
    if (h->h100)
      continue;
    if (strcmp(h->name, g->base) == 0)
      return h;
    if (!extends(g->base, h->name) && !extends(h->name, g->base))
      continue;
    n++;
    only = h;
    if (isfinite(pub_h200) && isfinite(h->pub) &&
        fabs(h->pub - pub_h200) < 0.005 && !by_pub)
      by_pub = h;
  }
  return n == 1 ? only : by_pub;
}

/* Spearman rho, NaN when undefined. */
static double rho_of(struct pfi__report *r, const double *x, const double *y,
                     size_t n) {
  double rho;
  if (n < 3 || note_oom(r, pfi_stats_spearman(x, y, n, &rho, NULL, NULL)) != 0)
    return NAN;
  return rho;
}

/* Spearman rho between two columns of a published table (rows where both
 * are numbers), recomputed from the paper's values; NAN when absent. Uses
 * the report's scratch arrays r->sc and r->sd. */
static double pub_rho(struct pfi__report *r, int have,
                      const struct pfi_table *t, const char *colx,
                      const char *coly) {
  double *pa = r->sc, *pb = r->sd;
  size_t pn = 0;
  for (size_t i = 0; have && i < t->nrows; i++) {
    double x = pub_num(t, (long)i, colx);
    double y = pub_num(t, (long)i, coly);
    if (isfinite(x) && isfinite(y)) {
      pa[pn] = x;
      pb[pn++] = y;
    }
  }
  return rho_of(r, pa, pb, pn);
}

static int fig_mechanism(struct pfi__report *r) {
  int jc = pfi_table_find(&r->mech, "job");
  int cc = pfi_table_find(&r->mech, "cap_w");
  int sc = pfi_table_find(&r->mech, "sm_clock_mhz");
  int mc = pfi_table_find(&r->mech, "mem_clock_mhz");
  if (jc < 0 || cc < 0 || sc < 0 || mc < 0) {
    missing(r, "mechanism.csv lacks one of the columns job, cap_w, "
               "sm_clock_mhz, mem_clock_mhz.");
    return 0;
  }
  size_t n = r->ng;
  struct pfi_series *s = calloc(2 * n + 2, sizeof *s);
  /* The stride: the most rows any group has in mechanism.csv. */
  size_t st = 1;
  for (size_t i = 0; i < n; i++) {
    size_t cnt = 0;
    for (size_t row = 0; row < r->mech.nrows; row++) {
      const char *j = pfi_table_cell(&r->mech, row, (size_t)jc);
      cnt += j && strcmp(j, r->g[i].name) == 0;
    }
    if (cnt > st)
      st = cnt;
  }
  double *x = calloc(n * st, sizeof *x), *ys = calloc(n * st, sizeof *ys),
         *ym = calloc(n * st, sizeof *ym);
  int rc = 0;
  if (!s || !x || !ys || !ym) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t ns = 0;
  for (size_t i = 0; i < n; i++) {
    size_t m = 0;
    for (size_t row = 0; row < r->mech.nrows && m < st; row++) {
      const char *j = pfi_table_cell(&r->mech, row, (size_t)jc);
      double cap, sm, mem;
      if (!j || strcmp(j, r->g[i].name) != 0)
        continue;
      if (pfi_table_double(&r->mech, row, (size_t)cc, &cap, NULL) ||
          pfi_table_double(&r->mech, row, (size_t)sc, &sm, NULL) ||
          pfi_table_double(&r->mech, row, (size_t)mc, &mem, NULL))
        continue;
      x[i * st + m] = cap;
      ys[i * st + m] = sm;
      ym[i * st + m] = mem;
      m++;
    }
    if (m == 0)
      continue;
    int color = r->g[i].h100 ? 9 : r->g[i].cat >= 0 ? r->g[i].cat + 1 : 7;
    s[ns] = (struct pfi_series){.x = x + i * st,
                                .y = ys + i * st,
                                .n = m,
                                .color = color,
                                .dashed = r->g[i].h100};
    s[n + ns] = s[ns];
    s[n + ns].y = ym + i * st;
    ns++;
  }
  struct pfi_panel p[2];
  pfi_panel_init(&p[0]);
  pfi_panel_init(&p[1]);
  p[0].title = "SM clock against cap";
  p[0].xlabel = "per-GPU power cap (W)";
  p[0].ylabel = "SM clock (MHz)";
  p[0].series = s;
  p[0].nseries = ns;
  p[1].title = "memory clock against cap";
  p[1].xlabel = "per-GPU power cap (W)";
  p[1].ylabel = "memory clock (MHz)";
  p[1].ymin = 0;
  p[1].series = s + n;
  p[1].nseries = ns;
  struct pfi_figure f = {.width = 1000,
                         .height = 360,
                         .rows = 1,
                         .cols = 2,
                         .panels = p,
                         .npanels = 2};
  rc = pfi__report_figure(
      r, &f,
      "Mechanism: steady-state SM and memory clocks of every run against its "
      "cap (one line per group; colour by class, H100 groups dashed grey). "
      "Under a cap the SM clock falls while the memory clock stays put.");
out:
  free(s);
  free(x);
  free(ys);
  free(ym);
  return rc;
}

static int sec_mechanism(struct pfi__report *r) {
  pfi_html_puts(&r->body, "<section id=\"mechanism\"><h2>2. Mechanism: "
                          "clocks under a cap, and H100 against H200</h2>\n");
  para(r, "A capped GPU lowers its SM clock; the memory clock does not move. "
          "Work bound by memory bandwidth therefore loses less throughput per "
          "watt removed, which is why memory-heavy jobs have the higher PFI.");
  int rc = 0;
  if (r->have_mech)
    rc = fig_mechanism(r);
  else
    missing(r, "mechanism.csv (per-run clocks) is not in the input; "
               "`pfi report` on a trace store writes it.");
  if (rc)
    return rc;

  static const char *const cols[] = {
      "group",     "h200_group",         "pfi_h200",
      "pfi_h100",  "pfi_h200_published", "pfi_h100_published",
      "diff_h200", "diff_h100"};
  struct pfi_rtable *t = pfi__report_table(
      r, "h100_h200",
      "Matched H100 and H200 groups, ratio PFI (1 = proportional; the H200 "
      "group of each pair as the paper's Table 8 matches it)",
      8, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  double *a = r->sa, *b = r->sb;
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->h100)
      continue;
    long mr = pub_row(&r->pub_h100, r->have_pub_h100, "group", g->base);
    double ph200 = pub_num(&r->pub_h100, mr, "pfi_h200");
    const struct pfi__group *h = h200_twin(r, g, ph200);
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    set_str(t, row, "group", g->base);
    set_str(t, row, "h200_group", h ? h->name : NULL);
    set_num(t, row, "pfi_h200", h ? h->pfi : NAN);
    set_num(t, row, "pfi_h100", g->pfi);
    set_num(t, row, "pfi_h200_published", ph200);
    set_num(t, row, "pfi_h100_published", g->pub);
    set_num(t, row, "diff_h200", diff(h ? h->pfi : NAN, ph200));
    set_num(t, row, "diff_h100", diff(g->pfi, g->pub));
    if (h && isfinite(h->pfi) && isfinite(g->pfi)) {
      a[n] = h->pfi;
      b[n++] = g->pfi;
    }
  }
  if (t->nrows == 0) {
    missing(r, "no H100 groups (ids ending in @h100) in the input.");
  } else {
    show_table(r, t);
  }
  r->rho_h100 = rho_of(r, a, b, n);
  r->n_h100 = n;
  /* The published rank correlation, recomputed from the published table. */
  r->rho_h100_pub =
      pub_rho(r, r->have_pub_h100, &r->pub_h100, "pfi_h200", "pfi_h100");
  pfi_html_puts(&r->body, "</section>\n");
  return 0;
}

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

static int sec_kruskal(struct pfi__report *r) {
  double *v = r->sa;
  size_t *grp = r->sg, n = 0;
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
    missing(r, msg);
    return 0;
  }
  struct pfi_kruskal k;
  memset(&k, 0, sizeof k);
  struct pfi_error e;
  if (note_oom(r, pfi_stats_kruskal(v, grp, n, CAT__N, &k, &e)) != 0) {
    char msg[700];
    snprintf(msg, sizeof msg, "Kruskal-Wallis test over the classes: %s",
             e.msg);
    missing(r, msg);
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
  set_dec(t, "n", 0);
  set_dec(t, "df", 0);
  set_dec(t, "p", 5);
  set_dec(d, "p", 5);
  set_dec(d, "p_holm", 5);
  long row = pfi_rtable_add_row(t);
  set_str(t, row, "test", "Kruskal-Wallis");
  set_num(t, row, "n", (double)n);
  set_num(t, row, "H", k.H);
  set_num(t, row, "df", k.df);
  set_num(t, row, "p", k.p);
  for (size_t i = 0; i < k.npairs; i++) {
    row = pfi_rtable_add_row(d);
    set_str(d, row, "a", cat_key[k.pairs[i].a]);
    set_str(d, row, "b", cat_key[k.pairs[i].b]);
    set_num(d, row, "z", k.pairs[i].z);
    set_num(d, row, "p", k.pairs[i].p);
    set_num(d, row, "p_holm", k.pairs[i].p_holm);
  }
  pfi_kruskal_release(&k);
  show_table(r, t);
  show_table(r, d);
  return 0;
}

static int sec_grid(struct pfi__report *r) {
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
  double *a = r->sa, *b = r->sb;
  size_t n = 0;
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->core || !g->fine)
      continue;
    long pr = pub_row(&r->pub_grid, r->have_pub_grid, "group", g->name);
    double pf = pub_num(&r->pub_grid, pr, "pfi_fine_6caps");
    double pc = pub_num(&r->pub_grid, pr, "pfi_coarse_4caps");
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    set_str(t, row, "group", g->name);
    set_num(t, row, "pfi_fine", g->pfi);
    set_num(t, row, "pfi_coarse", g->coarse);
    set_num(t, row, "pfi_fine_published", pf);
    set_num(t, row, "pfi_coarse_published", pc);
    set_num(t, row, "diff_fine", diff(g->pfi, pf));
    set_num(t, row, "diff_coarse", diff(g->coarse, pc));
    if (isfinite(g->pfi) && isfinite(g->coarse)) {
      a[n] = g->pfi;
      b[n++] = g->coarse;
    }
  }
  r->rho_grid = rho_of(r, a, b, n);
  r->n_grid = n;
  r->rho_grid_pub = pub_rho(r, r->have_pub_grid, &r->pub_grid, "pfi_fine_6caps",
                            "pfi_coarse_4caps");
  if (t->nrows)
    show_table(r, t);
  else
    missing(r, "no H200 group swept on the fine grid (200..700 W in 100 W "
               "steps), so the grid comparison cannot be made.");
  return 0;
}

static int sec_rank_table(struct pfi__report *r) {
  static const char *const cols[] = {"comparison", "n", "rho", "rho_published",
                                     "diff"};
  struct pfi_rtable *t = pfi__report_table(
      r, "rank_correlations",
      "Rank stability: Spearman rho between PFI on the fine and coarse grid, "
      "and between H100 and H200 (published: recomputed from data/paper)",
      5, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  set_dec(t, "n", 0);
  long row = pfi_rtable_add_row(t);
  set_str(t, row, "comparison", "fine vs coarse grid (8-GPU H200 groups)");
  set_num(t, row, "n", (double)r->n_grid);
  set_num(t, row, "rho", r->rho_grid);
  set_num(t, row, "rho_published", r->rho_grid_pub);
  set_num(t, row, "diff", diff(r->rho_grid, r->rho_grid_pub));
  row = pfi_rtable_add_row(t);
  set_str(t, row, "comparison", "H100 vs H200 (matched groups)");
  set_num(t, row, "n", (double)r->n_h100);
  set_num(t, row, "rho", r->rho_h100);
  set_num(t, row, "rho_published", r->rho_h100_pub);
  set_num(t, row, "diff", diff(r->rho_h100, r->rho_h100_pub));
  show_table(r, t);
  headline(r, "rank correlation, fine vs coarse grid", r->rho_grid,
           r->rho_grid_pub, 3);
  headline(r, "rank correlation, H100 vs H200", r->rho_h100, r->rho_h100_pub,
           3);
  return 0;
}

static int sec_screening(struct pfi__report *r) {
  if (!r->js.have_features) {
    missing(r, "features.csv is not in the input, so telemetry screening, "
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
        note_oom(r, pfi_stats_spearman(x, y, n, &rh, &pv, NULL)) != 0) {
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
    missing(r, "no numeric telemetry column in features.csv covers every "
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
  set_dec(t, "n", 0);
  set_dec(t, "p", 4);
  set_dec(t, "q", 4);
  for (size_t i = 0; i < nskip; i++) {
    long row = pfi_rtable_add_row(t);
    set_str(t, row, "feature", ft->header[skipped[i]]);
    set_str(t, row, "note",
            skip_few[i] ? "fewer than 4 groups: not screened"
                        : "constant over the groups: rho undefined");
  }
  for (size_t i = 0; i < m; i++) {
    long row = pfi_rtable_add_row(t);
    set_str(t, row, "feature", ft->header[which[i]]);
    set_num(t, row, "n", (double)nn[i]);
    set_num(t, row, "rho", rho[i]);
    set_num(t, row, "p", p[i]);
    set_num(t, row, "q", q[i]);
    if (strcmp(ft->header[which[i]], "dram_copy_product") == 0)
      headline(r, "Spearman rho, PFI vs DRAM copy product", rho[i], NAN, 3);
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
    show_table(r, t);
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
    missing(r, "leverage analysis needs the DRAM copy product of at least 6 "
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
  set_dec(t, "step", 0);
  set_dec(t, "n", 0);
  /* Step 0 fits every group; each later step first finds the group with
   * the highest leverage in the current fit, drops it and refits. */
  const char *dropped = NULL;
  double lev = NAN;
  for (int step = 0; step <= 5 && n >= 4; step++) {
    struct pfi_ols ols;
    memset(&ols, 0, sizeof ols);
    if (note_oom(r, pfi_ols_fit(x, n, 1, y, &ols, NULL)) != 0)
      break;
    long row = pfi_rtable_add_row(t);
    if (row < 0) {
      pfi_ols_release(&ols);
      rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    set_num(t, row, "step", step);
    set_str(t, row, "dropped_group", dropped);
    set_num(t, row, "leverage", lev);
    set_num(t, row, "n", (double)n);
    set_num(t, row, "slope", ols.coef[1]);
    set_num(t, row, "rho", rho_of(r, x, y, n));
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
  show_table(r, t);
out:
  free(x);
  free(y);
  free(idx);
  return rc;
}

/* ---- section 4: prediction
 * ------------------------------------------------------ */

/* Published values quoted in the paper's text (data/paper/
 * published_headlines.md), shown beside ours only. */
#define PUB_HELDOUT_R2 0.28
#define PUB_H100_TRANSFER_R2 0.56
#define PUB_GAP_CLOSED_PCT 63.0
#define PUB_TOKENS_OVER_EQUAL 1500.0

/* The H200 headline groups with a finite PFI, a features row and a class:
 * the job set the models are fitted on (js, a subset of the report's),
 * their features rows, PFI and group index, and the fit rows with their
 * LOCO clusters (the report's cluster definition). */
struct core_set {
  size_t n;
  size_t *rows, *gi;
  double *y;
  struct pfi_jobset js;
  struct pfi_fitrows fr;
  int have_fr;
};

static void core_release(struct core_set *c) {
  free(c->rows);
  free(c->gi);
  free(c->y);
  pfi_jobset_release(&c->js);
  pfi_fitrows_release(&c->fr);
  memset(c, 0, sizeof *c);
}

static int core_build(struct pfi__report *r, struct core_set *c) {
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
  return 0;
}

/* Fits `exprs` on the core set; in-sample, LOO and LOCO. `pred_loo` and
 * `pred_loco` (may be NULL) receive the out-of-sample predictions. Returns
 * 0, 1 when a feature is absent, or an error. */
static int eval_set(struct pfi__report *r, const struct core_set *cs,
                    char **exprs, size_t k, double *r2_in, struct pfi_eval *loo,
                    struct pfi_eval *loco, double *pred_loo,
                    double *pred_loco) {
  if (!cs->have_fr)
    return pfi_error_set(r->err, PFI_EINVAL, "no fit rows");
  struct pfi_fit_result res;
  int rc = pfi_fitrows_evaluate(&r->js.f, &cs->fr, (const char *const *)exprs,
                                k, PFI_EVAL_LOO | PFI_EVAL_LOCO, &res, pred_loo,
                                pred_loco, r->err);
  if (rc == 0 && !res.ok)
    rc = 1;
  if (rc == 0) {
    *r2_in = res.m.r2;
    *loo = res.loo;
    *loco = res.loco;
  }
  pfi_fit_result_release(&res);
  return rc;
}

static int sec_ablation(struct pfi__report *r, const struct core_set *cs) {
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
           "%s); R^2 out of sample is 1 - SSE_out/SST",
           pfi_clusters_describe(&cs->fr.clusters, cdesc, sizeof cdesc));
  struct pfi_rtable *t = pfi__report_table(r, "ablation", title, 17, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  set_dec(t, "p", 0);
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
    rc = eval_set(r, cs, exprs, k, &r2_in, &loo, &loco, pred, pred_c);
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
    if (rc == 0 && s == 0)
      for (size_t i = 0; i < cs->n; i++) {
        r->g[cs->gi[i]].pred_loo = pred[i];
        r->g[cs->gi[i]].pred_loco = loco.defined ? pred_c[i] : NAN;
      }
    free(pred);
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    long pr = pub_row(&r->pub_abl, r->have_pub_abl, "set", ps->id);
    set_str(t, row, "set", ps->id);
    set_str(t, row, "predictors", rc == 1 ? "(features absent)" : ps->label);
    set_num(t, row, "p", (double)k);
    int ok = rc == 0;
    set_num(t, row, "r2_in", ok ? r2_in : NAN);
    set_num(t, row, "loo_r2", ok && loo.defined ? loo.r2 : NAN);
    set_num(t, row, "loo_rmse", ok && loo.defined ? loo.rmse : NAN);
    set_num(t, row, "loo_rho",
            ok && loo.defined && loo.rho_defined ? loo.rho : NAN);
    set_num(t, row, "loco_r2", ok && loco.defined ? loco.r2 : NAN);
    set_num(t, row, "loco_rmse", ok && loco.defined ? loco.rmse : NAN);
    set_num(t, row, "loco_rho",
            ok && loco.defined && loco.rho_defined ? loco.rho : NAN);
    double p_in = pub_num(&r->pub_abl, pr, "r2_in");
    double p_loo = pub_num(&r->pub_abl, pr, "loo_r2");
    double p_loco = pub_num(&r->pub_abl, pr, "loco_r2");
    set_num(t, row, "r2_in_published", p_in);
    set_num(t, row, "loo_r2_published", p_loo);
    set_num(t, row, "loo_rho_published", pub_num(&r->pub_abl, pr, "loo_rho"));
    set_num(t, row, "loco_r2_published", p_loco);
    set_num(t, row, "loco_rho_published", pub_num(&r->pub_abl, pr, "loco_rho"));
    set_num(t, row, "diff_loo_r2",
            diff(ok && loo.defined ? loo.r2 : NAN, p_loo));
    set_num(t, row, "diff_loco_r2",
            diff(ok && loco.defined ? loco.r2 : NAN, p_loco));
    if (s == 0)
      headline(r, "LOO R^2, DRAM-copy-product model",
               ok && loo.defined ? loo.r2 : NAN, p_loo, 3);
  }
  show_table(r, t);
  return 0;
}

static int sec_heldout(struct pfi__report *r, const struct core_set *cs) {
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
      missing(r, "the chosen model's feature is absent from features.csv.");
      goto out;
    }
  if ((rc = pfi_model_design(&r->js.f, cs->rows, cs->n,
                             (const char *const *)exprs, k, x, r->err)) ||
      (rc = pfi_model_fit(x, cs->n, k, cs->y, (const char *const *)exprs, &m,
                          r->err)))
    goto out;
  r->model_k = k;
  static const char *const cols[] = {"group",     "gpu",   "pfi",
                                     "predicted", "error", "pfi_published"};
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
    struct pfi__group *g = &r->g[i];
    g->pred_out = NAN;
    if (g->core || g->feat < 0 || !isfinite(g->pfi))
      continue;
    int bad = 0;
    for (size_t j = 0; j < k; j++)
      bad |= pfi_features_value(&r->js.f, (size_t)g->feat, exprs[j], &xr[j],
                                NULL) != 0;
    if (bad)
      continue;
    double pr = pfi_model_predict(&m, xr);
    g->pred_out = pr;
    long row = pfi_rtable_add_row(t);
    set_str(t, row, "group", g->name);
    set_str(t, row, "gpu", gpu_name(r, g));
    set_num(t, row, "pfi_ratio", g->pfi);
    set_num(t, row, "predicted", pr);
    set_num(t, row, "error", pr - g->pfi);
    set_num(t, row, "pfi_published", g->pub);
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
  set_dec(v, "n", 0);
  static const char *const names[2] = {"H200 held-out groups",
                                       "H100 groups (H200 model transferred)"};
  static const double pubs[2] = {PUB_HELDOUT_R2, PUB_H100_TRANSFER_R2};
  for (int s = 0; s < 2; s++) {
    double r2 = NAN, rmse = NAN;
    if (cnt[s] >= 2) {
      double sst = sum2[s] - sum[s] * sum[s] / (double)cnt[s];
      r2 = sst > 0 ? 1.0 - sse[s] / sst : NAN;
      rmse = sqrt(sse[s] / (double)cnt[s]);
    }
    long row = pfi_rtable_add_row(v);
    set_str(v, row, "groups", names[s]);
    set_num(v, row, "n", (double)cnt[s]);
    set_num(v, row, "r2", r2);
    set_num(v, row, "rmse", rmse);
    set_num(v, row, "r2_published", pubs[s]);
    set_num(v, row, "diff", diff(r2, pubs[s]));
    headline(r,
             s ? "R^2 of the H200 model on H100 groups"
               : "R^2 on the held-out H200 groups",
             r2, pubs[s], 3);
  }
  if (t->nrows)
    show_table(r, t);
  else
    missing(r, "no held-out or H100 group with features in the input.");
  show_table(r, v);
out:
  pfi_model_release(&m);
  pfi_strlist_free(exprs);
  free(x);
  return rc;
}

static int fig_predicted(struct pfi__report *r) {
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
    double pr = g->core ? g->pred_loo : g->pred_out;
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

static int sec_prediction(struct pfi__report *r) {
  pfi_html_puts(&r->body, "<section id=\"prediction\"><h2>4. Predicting PFI "
                          "from telemetry</h2>\n");
  para(r, "Linear models of PFI on features of the uncapped run, compared "
          "in and out of sample. The chosen model is the paper's single "
          "feature, the DRAM copy product (DRAM activity times memory-copy "
          "utilization); it is then applied to groups no model saw.");
  int rc = 0;
  if (!r->js.have_features) {
    missing(r, "features.csv is not in the input.");
    goto done;
  }
  struct core_set cs;
  if (core_build(r, &cs)) {
    core_release(&cs);
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < r->ng; i++)
    r->g[i].pred_loo = r->g[i].pred_loco = r->g[i].pred_out = NAN;
  if (cs.n < 5) {
    missing(r, "fewer than 5 H200 headline groups with features and a "
               "defined PFI.");
  } else {
    rc = sec_ablation(r, &cs);
    if (!rc)
      rc = sec_heldout(r, &cs);
    if (!rc)
      rc = fig_predicted(r);
  }
  core_release(&cs);
done:
  pfi_html_puts(&r->body, "</section>\n");
  return rc;
}

/* ---- section 3 wrapper
 * ---------------------------------------------------------- */

static int sec_statistics(struct pfi__report *r) {
  pfi_html_puts(&r->body, "<section id=\"statistics\"><h2>3. Statistics: "
                          "classes, grid, telemetry</h2>\n");
  para(r, "Do the classes differ (Kruskal-Wallis, Dunn with Holm)? Is the "
          "rank order robust to the cap grid and to the GPU generation? "
          "Which telemetry of the uncapped run goes with PFI (Spearman, "
          "Benjamini-Hochberg), and does the chosen predictor's correlation "
          "rest on a few high-leverage groups?");
  int rc = sec_kruskal(r);
  if (!rc)
    rc = sec_grid(r);
  if (!rc)
    rc = sec_rank_table(r);
  if (!rc)
    rc = sec_screening(r);
  if (!rc)
    rc = sec_leverage(r);
  pfi_html_puts(&r->body, "</section>\n");
  return rc;
}

/* ---- section 5: allocation
 * ---------------------------------------------------------- */

static const double sim_cuts[] = {0.0,  0.05, 0.10, 0.15, 0.20,
                                  0.25, 0.30, 0.35, 0.40};
#define N_SIM_CUTS (sizeof sim_cuts / sizeof sim_cuts[0])

static void sim_progress(size_t done, size_t total, void *arg) {
  struct pfi__report *r = arg;
  if (done == total || done % 100 == 0)
    pfi__report_progress(r, "allocation simulation: workload %zu of %zu", done,
                         total);
}

/* Adds the rows of one simulation to the allocation table. */
static int sim_rows(struct pfi__report *r, struct pfi_rtable *t,
                    const char *mix, const char *est,
                    const struct pfi_sim_result *res, unsigned strategies,
                    double *closed30, double *gain30) {
  for (size_t c = 0; c < N_SIM_CUTS; c++)
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      if (!(strategies & (1u << s)) || !res->cell[s])
        continue;
      const struct pfi_sim_cell *cell = &res->cell[s][c];
      long row = pfi_rtable_add_row(t);
      if (row < 0)
        return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      int pub_row30 =
          strcmp(mix, "production") == 0 && strcmp(est, "in-sample") == 0 &&
          s == PFI_STRAT_PFI_AWARE && fabs(sim_cuts[c] - 0.3) < 1e-9;
      set_str(t, row, "mix", mix);
      set_str(t, row, "pfi_estimate", est);
      set_num(t, row, "cut_pct", 100.0 * sim_cuts[c]);
      set_str(t, row, "strategy", pfi_strategy_name((enum pfi_strategy)s));
      set_num(t, row, "gap_tokens_per_s_per_job", cell->gap_mean);
      set_num(t, row, "gap_ci95_lo", cell->gap_lo);
      set_num(t, row, "gap_ci95_hi", cell->gap_hi);
      set_num(t, row, "gap_closed_pct",
              cell->closed_defined ? cell->closed_pct : NAN);
      set_num(t, row, "vs_pfi_aware",
              cell->vs_aware_defined ? cell->vs_aware_mean : NAN);
      set_num(t, row, "vs_pfi_aware_lo",
              cell->vs_aware_defined ? cell->vs_aware_lo : NAN);
      set_num(t, row, "vs_pfi_aware_hi",
              cell->vs_aware_defined ? cell->vs_aware_hi : NAN);
      set_num(t, row, "gap_closed_pct_published",
              pub_row30 ? PUB_GAP_CLOSED_PCT : NAN);
      set_num(t, row, "diff",
              pub_row30 && cell->closed_defined
                  ? cell->closed_pct - PUB_GAP_CLOSED_PCT
                  : NAN);
      if (pub_row30) {
        *closed30 = cell->closed_defined ? cell->closed_pct : NAN;
        if (res->cell[PFI_STRAT_EQUAL])
          *gain30 = res->cell[PFI_STRAT_EQUAL][c].gap_mean - cell->gap_mean;
      }
    }
  return 0;
}

static int fig_allocation(struct pfi__report *r,
                          const struct pfi_sim_result *res, int nres,
                          const char *const *mixes) {
  struct pfi_panel p[2];
  struct pfi_series s[2][PFI_STRAT__COUNT];
  double x[N_SIM_CUTS], y[2][PFI_STRAT__COUNT][N_SIM_CUTS];
  for (size_t c = 0; c < N_SIM_CUTS; c++)
    x[c] = 100.0 * sim_cuts[c];
  for (int m = 0; m < nres; m++) {
    size_t ns = 0;
    for (int st = 0; st < PFI_STRAT__COUNT; st++) {
      if (st == PFI_STRAT_ORACLE || !res[m].cell[st])
        continue;
      for (size_t c = 0; c < N_SIM_CUTS; c++)
        y[m][st][c] = res[m].cell[st][c].gap_mean;
      s[m][ns++] =
          (struct pfi_series){.title = pfi_strategy_name((enum pfi_strategy)st),
                              .x = x,
                              .y = y[m][st],
                              .n = N_SIM_CUTS,
                              .color = st};
    }
    pfi_panel_init(&p[m]);
    p[m].title = mixes[m];
    p[m].xlabel = "cluster power cut (%)";
    p[m].ylabel = "gap to oracle (tokens/s per job)";
    p[m].series = s[m];
    p[m].nseries = ns;
    p[m].key = 1;
    p[m].key_pos = "top left";
  }
  struct pfi_figure f = {.width = 1000,
                         .height = 400,
                         .rows = 1,
                         .cols = nres,
                         .panels = p,
                         .npanels = (size_t)nres};
  return pfi__report_figure(
      r, &f,
      "Throughput gap to the oracle against the cluster-wide power cut, per "
      "mix and strategy (mean over workloads; PFI estimated in sample by the "
      "DRAM-copy-product model).");
}

static int sec_allocation(struct pfi__report *r) {
  pfi_html_puts(&r->body, "<section id=\"allocation\"><h2>5. Allocating a "
                          "power cut across jobs</h2>\n");
  para(r, "Synthetic workloads of jobs drawn with replacement from the H200 "
          "headline groups, each scored at cluster-wide cuts of 0 to 40 % by "
          "every strategy against the exact oracle. PFI-aware uses PFI "
          "estimated by the telemetry model; pfi-curve (ours) turns that "
          "estimate into a whole curve. The out-of-sample rows estimate each "
          "job's PFI with a model that did not see the job (leave-one-out "
          "and leave-one-cluster-out are the same model family).");
  int rc = 0;
  struct core_set cs;
  memset(&cs, 0, sizeof cs);
  struct pfi_jobset_inputs ai;
  memset(&ai, 0, sizeof ai);
  pfi_problem_init(&ai.prob);
  double *pfi_loo = NULL, *pfi_loco = NULL, *weight_prod = NULL;
  struct pfi_sim_result res[2], res_loo[2], res_loco[2];
  memset(res, 0, sizeof res);
  memset(res_loo, 0, sizeof res_loo);
  memset(res_loco, 0, sizeof res_loco);
  char loco_label[64];
  struct pfi_clusters cl;
  pfi_clusters_parse(&cl, r->o->clusters);
  snprintf(loco_label, sizeof loco_label, "leave-one-cluster-out (%s)",
           pfi_clusters_name(&cl));
  if (!r->js.have_features) {
    missing(r, "features.csv is not in the input (the strategies need the "
               "telemetry of each job).");
    goto done;
  }
  if (core_build(r, &cs)) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto done;
  }
  size_t cap = cs.n + 1;
  pfi_loo = calloc(cap, sizeof *pfi_loo);
  pfi_loco = calloc(cap, sizeof *pfi_loco);
  weight_prod = calloc(cap, sizeof *weight_prod);
  if (!pfi_loo || !pfi_loco || !weight_prod) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto done;
  }
  char mixpath[4096];
  int have_prod =
      pfi_data_path("mixes/production.csv", mixpath, sizeof mixpath, NULL) == 0;
  unsigned all = 0;
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    all |= 1u << s;
  /* The in-sample estimate: the chosen model fitted on all library jobs;
   * the inputs as `pfi simulate` builds them from the same job set. */
  struct pfi_estimate_opts eo;
  pfi_estimate_opts_init(&eo);
  eo.clusters = cl;
  struct pfi_error e;
  if (cs.n < 5 || !pfi_features_has(&r->js.f, pfi_default_model_features)) {
    missing(r, "the telemetry model (PFI on the DRAM copy product) could not "
               "be fitted on the headline groups.");
    goto done;
  }
  if (note_oom(r, pfi_jobset_inputs_build(&cs.js, all, have_prod, &eo, &ai,
                                          &e)) != 0) {
    char msg[PFI_ERROR_MSG_MAX + 128];
    snprintf(msg, sizeof msg,
             "the allocation inputs could not be built from the headline "
             "groups: %s",
             e.msg);
    missing(r, msg);
    goto done;
  }
  /* Out of sample: each job's PFI estimated by a model that did not see
   * it (leave-one-out) or its cluster (leave-one-cluster-out). */
  eo.holdout = PFI_HOLDOUT_JOB;
  int have_loo =
      note_oom(r, pfi_jobset_estimate(&cs.js, &eo, pfi_loo, &e)) == 0;
  eo.holdout = PFI_HOLDOUT_CLUSTER;
  int have_loco =
      note_oom(r, pfi_jobset_estimate(&cs.js, &eo, pfi_loco, &e)) == 0;
  if (r->nomem)
    goto done;
  size_t fallbacks = 0;
  if (have_prod &&
      note_oom(r, pfi_mix_weights(mixpath, ai.is_ft, ai.gpus, cs.n, weight_prod,
                                  &fallbacks, NULL)) != 0)
    have_prod = 0;
  static const char *const mixes[2] = {"random", "production"};
  int nmix = have_prod ? 2 : 1;
  unsigned est_only = (1u << PFI_STRAT_ORACLE) | (1u << PFI_STRAT_EQUAL) |
                      (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE);
  for (int mi = 0; mi < nmix; mi++) {
    struct pfi_sim_config cfg = {
        .workloads = r->o->sim_workloads ? r->o->sim_workloads : 500,
        .size = r->o->sim_jobs ? r->o->sim_jobs : 100,
        .cuts = sim_cuts,
        .ncuts = N_SIM_CUTS,
        .strategies = all,
        .seed = r->o->seed,
        .sample_weight = mi == 1 ? weight_prod : NULL,
        .progress = sim_progress,
        .progress_arg = r};
    struct pfi_alloc_inputs in = ai.in;
    pfi__report_progress(r, "allocation simulation: %s mix", mixes[mi]);
    rc = pfi_sim_run(&ai.prob, &in, &cfg, &res[mi], r->err);
    /* Out of sample: each job's PFI estimated by a model that did not see
     * the job (leave-one-out) or its architecture-task cluster (LOCO).
     * Only the strategies that read the estimate change. */
    cfg.strategies = est_only;
    if (rc == 0 && have_loo) {
      in.pfi = pfi_loo;
      pfi__report_progress(
          r, "allocation simulation: %s mix, leave-one-out estimates",
          mixes[mi]);
      rc = pfi_sim_run(&ai.prob, &in, &cfg, &res_loo[mi], r->err);
    }
    if (rc == 0 && have_loco) {
      in.pfi = pfi_loco;
      pfi__report_progress(
          r, "allocation simulation: %s mix, leave-one-cluster-out estimates",
          mixes[mi]);
      rc = pfi_sim_run(&ai.prob, &in, &cfg, &res_loco[mi], r->err);
    }
    if (rc == PFI_ENOMEM)
      goto done;
    if (rc) {
      /* The oracle or a strategy could not solve a sampled workload: the
       * page and the progress output say so, and the rest of the report
       * stands; no partial numbers are shown. */
      char msg[PFI_ERROR_MSG_MAX + 128];
      snprintf(msg, sizeof msg,
               "the allocation simulation (%s mix) failed: "
               "%s",
               mixes[mi], r->err->msg);
      pfi__report_progress(r, "warning: %s", msg);
      missing(r, msg);
      pfi_error_clear(r->err);
      rc = 0;
      goto done;
    }
  }
  if ((rc = fig_allocation(r, res, nmix, mixes)) != 0)
    goto done;
  static const char *const cols[] = {"mix",
                                     "pfi_estimate",
                                     "cut_pct",
                                     "strategy",
                                     "gap_tokens_per_s_per_job",
                                     "gap_ci95_lo",
                                     "gap_ci95_hi",
                                     "gap_closed_pct",
                                     "vs_pfi_aware",
                                     "vs_pfi_aware_lo",
                                     "vs_pfi_aware_hi",
                                     "gap_closed_pct_published",
                                     "diff"};
  char title[512], cdesc[96];
  snprintf(title, sizeof title,
           "Allocation simulation: gap to the oracle (tokens/s per job, 95 %% "
           "interval), share of the equal-weight gap closed, and the "
           "difference to pfi-aware (positive: better); leave-one-cluster-out "
           "clusters %s; published: the paper's 63 %% at a 30 %% cut, "
           "production mix",
           pfi_clusters_describe(&cl, cdesc, sizeof cdesc));
  struct pfi_rtable *t = pfi__report_table(r, "allocation", title, 13, cols);
  if (!t) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto done;
  }
  set_dec(t, "cut_pct", 0);
  set_dec(t, "gap_tokens_per_s_per_job", 1);
  set_dec(t, "gap_ci95_lo", 1);
  set_dec(t, "gap_ci95_hi", 1);
  set_dec(t, "gap_closed_pct", 1);
  set_dec(t, "vs_pfi_aware", 1);
  set_dec(t, "vs_pfi_aware_lo", 1);
  set_dec(t, "vs_pfi_aware_hi", 1);
  set_dec(t, "gap_closed_pct_published", 1);
  set_dec(t, "diff", 1);
  double closed30 = NAN, gain30 = NAN, d1 = NAN, d2 = NAN;
  for (int mi = 0; mi < nmix && !rc; mi++) {
    rc = sim_rows(r, t, mixes[mi], "in-sample", &res[mi], all, &closed30,
                  &gain30);
    if (!rc)
      rc = sim_rows(r, t, mixes[mi], "leave-one-out", &res_loo[mi],
                    (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE),
                    &d1, &d2);
    if (!rc)
      rc = sim_rows(r, t, mixes[mi], loco_label, &res_loco[mi],
                    (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE),
                    &d1, &d2);
  }
  if (!have_loo || !have_loco)
    missing(r, "out-of-sample rows: the chosen model could not be evaluated "
               "leaving one job or one cluster out (see the prediction "
               "section), so those rows are absent.");
  if (rc)
    goto done;
  if (!have_prod)
    missing(r, "data/mixes/production.csv was not found or did not apply, "
               "so only the random mix was simulated.");
  show_table(r, t);
  headline(r,
           "production mix, 30 % cut: share of the equal-to-oracle gap "
           "closed by PFI-aware (%)",
           closed30, PUB_GAP_CLOSED_PCT, 1);
  headline(r,
           "production mix, 30 % cut: PFI-aware over equal weight "
           "(tokens/s per job)",
           gain30, PUB_TOKENS_OVER_EQUAL, 0);
  r->have_sim = 1;
done:
  for (int i = 0; i < 2; i++) {
    pfi_sim_result_release(&res[i]);
    pfi_sim_result_release(&res_loo[i]);
    pfi_sim_result_release(&res_loco[i]);
  }
  core_release(&cs);
  pfi_jobset_inputs_release(&ai);
  free(pfi_loo);
  free(pfi_loco);
  free(weight_prod);
  pfi_html_puts(&r->body, "</section>\n");
  return rc;
}

/* ---- the whole report
 * -------------------------------------------------------------- */

int pfi_report_mkdirs(const char *dir, struct pfi_error *err) {
  /* Like mkdir -p: `--out results/today` works when results/ is absent
   * too. Each prefix ending before a '/' is created in turn. */
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path)
    return pfi_error_set(err, PFI_EINVAL, "%s: bad directory name", dir);
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0')
      continue;
    char saved = path[i];
    path[i] = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
    path[i] = saved;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return pfi_error_set(err, PFI_EINVAL, "%s: not a directory", dir);
  return 0;
}

int pfi_report_build(const char *in_dir, const char *out_dir,
                     const struct pfi_report_opts *o, struct pfi_error *err) {
  struct pfi_report_opts defaults;
  if (!o) {
    pfi_report_opts_init(&defaults);
    o = &defaults;
  }
  struct pfi__report r;
  memset(&r, 0, sizeof r);
  r.o = o;
  r.err = err;
  pfi_html_init(&r.body);
  int rc = pfi_report_mkdirs(out_dir, err);
  if (rc)
    goto out;
  pfi__report_progress(&r, "report: reading %s", in_dir);
  if ((rc = load_inputs(&r, in_dir)) != 0)
    goto out;
  pfi__report_progress(&r, "report: PFI and 95 %% intervals of %zu groups",
                       r.js.cs.n);
  if ((rc = compute_groups(&r)) != 0)
    goto out;
  /* Scratch arrays of the sections: one slot per group or published row,
   * whichever is more. */
  size_t scap = r.ng;
  const struct pfi_table *pubs[] = {&r.pub_head, &r.pub_held, &r.pub_h100,
                                    &r.pub_grid, &r.pub_abl};
  for (size_t i = 0; i < sizeof pubs / sizeof pubs[0]; i++)
    if (pubs[i]->nrows > scap)
      scap = pubs[i]->nrows;
  scap++;
  r.sa = calloc(scap, sizeof *r.sa);
  r.sb = calloc(scap, sizeof *r.sb);
  r.sc = calloc(scap, sizeof *r.sc);
  r.sd = calloc(scap, sizeof *r.sd);
  r.sg = calloc(scap, sizeof *r.sg);
  if (!r.sa || !r.sb || !r.sc || !r.sd || !r.sg) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  static const char *const hcols[] = {"metric", "ours", "published", "diff"};
  r.headline = pfi__report_table(
      &r, "headline", "Headline numbers: ours beside the paper's", 4, hcols);
  if (!r.headline) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  pfi__report_progress(&r, "report: characterization");
  if ((rc = sec_characterization(&r)) != 0)
    goto out;
  pfi__report_progress(&r, "report: mechanism");
  if ((rc = sec_mechanism(&r)) != 0)
    goto out;
  pfi__report_progress(&r, "report: statistics");
  if ((rc = sec_statistics(&r)) != 0)
    goto out;
  pfi__report_progress(&r, "report: prediction");
  if ((rc = sec_prediction(&r)) != 0)
    goto out;
  pfi__report_progress(&r, "report: allocation");
  if ((rc = sec_allocation(&r)) != 0)
    goto out;
  /* A section that lost an allocation must not pass for one without data:
   * the whole report fails instead. */
  if (r.nomem || !pfi_html_ok(&r.body)) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < r.ntabs; i++) {
    struct pfi_rtable *t = &r.tabs[i];
    for (size_t row = 0; row < t->nrows; row++)
      if (pfi_rtable_set_str(t, row, t->ncols - 1, r.source) != 0) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
    if ((rc = pfi_rtable_write(t, out_dir, err)) != 0)
      goto out;
  }
  pfi__report_progress(&r, "report: writing %s/report.html", out_dir);
  rc = pfi__report_page(&r, out_dir);
out:
  for (size_t i = 0; i < r.ntabs; i++)
    pfi_rtable_release(&r.tabs[i]);
  free(r.g);
  free(r.sa);
  free(r.sb);
  free(r.sc);
  free(r.sd);
  free(r.sg);
  pfi_jobset_release(&r.js);
  if (r.have_mech)
    pfi_table_release(&r.mech);
  if (r.have_pub_head)
    pfi_table_release(&r.pub_head);
  if (r.have_pub_held)
    pfi_table_release(&r.pub_held);
  if (r.have_pub_h100)
    pfi_table_release(&r.pub_h100);
  if (r.have_pub_grid)
    pfi_table_release(&r.pub_grid);
  if (r.have_pub_abl)
    pfi_table_release(&r.pub_abl);
  pfi_html_release(&r.body);
  return rc;
}
