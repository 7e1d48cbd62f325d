/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The report on a summarized campaign (curves.csv, features.csv and
 * mechanism.csv): its inputs and the published tables of data/paper/, the
 * groups (PFI by the three definitions with intervals, computed once), the
 * helpers the sections share, the list of sections (sec_*.c, the method's
 * sections 1 to 5) and the build that runs them and writes every table
 * (CSV, JSON) and the page. A section whose inputs are missing says what
 * is missing.
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

const char *const pfi__cat_key[CAT__N] = {"dense", "moe-pt", "moe-ft"};
const char *const pfi__cat_label[CAT__N] = {
    "dense (PT and FT)", "MoE pretraining", "MoE fine-tuning"};

/* The paper's noise when a point carries none: median standard errors of
 * the mean of power (0.04 %) and throughput (0.05 %)
 * (docs/index-and-stats.md). */
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

int pfi__set_num(struct pfi_rtable *t, long row, const char *col, double v) {
  long c = pfi_rtable_col(t, col);
  return c < 0 ? PFI_EINVAL : pfi_rtable_set_num(t, (size_t)row, (size_t)c, v);
}

int pfi__set_str(struct pfi_rtable *t, long row, const char *col,
                 const char *s) {
  long c = pfi_rtable_col(t, col);
  return c < 0 ? PFI_EINVAL : pfi_rtable_set_str(t, (size_t)row, (size_t)c, s);
}

void pfi__set_dec(struct pfi_rtable *t, const char *col, int d) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0)
    pfi_rtable_decimals(t, (size_t)c, d);
}

/* Difference ours - published, NaN when either is missing. */
double pfi__diff(double ours, double pub) {
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

void pfi__para(struct pfi__report *r, const char *text) {
  pfi_html_puts(&r->body, "<p>");
  pfi_html_text(&r->body, text);
  pfi_html_puts(&r->body, "</p>\n");
}

void pfi__missing(struct pfi__report *r, const char *text) {
  pfi_html_puts(&r->body, "<p class=\"missing\">Not available: ");
  pfi_html_text(&r->body, text);
  pfi_html_puts(&r->body, "</p>\n");
}

void pfi__show_table(struct pfi__report *r, const struct pfi_rtable *t) {
  pfi_html_puts(&r->body, "<div class=\"tabwrap\">");
  pfi_rtable_html(t, &r->body);
  pfi_html_puts(&r->body, "</div>\n");
}

/* Headline rows for the first screen: metric, ours, published, diff. */
void pfi__headline(struct pfi__report *r, const char *metric, double ours,
                   double pub, int decimals) {
  struct pfi_rtable *t = r->headline;
  if (!t)
    return;
  long row = pfi_rtable_add_row(t);
  if (row < 0)
    return;
  pfi__set_str(t, row, "metric", metric);
  pfi_rtable_set_num_dec(t, (size_t)row, 1, ours, decimals);
  pfi_rtable_set_num_dec(t, (size_t)row, 2, pub, decimals);
  pfi_rtable_set_num_dec(t, (size_t)row, 3, pfi__diff(ours, pub), decimals);
}

/* Records an out-of-memory failure that a section otherwise treats as
 * "not available": the report then fails with PFI_ENOMEM instead of
 * presenting a page with a section missing for lack of memory. Returns rc. */
int pfi__note_oom(struct pfi__report *r, int rc) {
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
long pfi__pub_row(const struct pfi_table *t, int have, const char *keycol,
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

double pfi__pub_num(const struct pfi_table *t, long row, const char *col) {
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

/* Spearman rho, NaN when undefined. */
double pfi__rho_of(struct pfi__report *r, const double *x, const double *y,
                   size_t n) {
  double rho;
  if (n < 3 ||
      pfi__note_oom(r, pfi_stats_spearman(x, y, n, &rho, NULL, NULL)) != 0)
    return NAN;
  return rho;
}

/* Spearman rho between two columns of a published table (rows where both
 * are numbers), recomputed from the paper's values; NAN when absent (out
 * of memory is recorded: the report then fails). */
double pfi__pub_rho(struct pfi__report *r, int have, const struct pfi_table *t,
                    const char *colx, const char *coly) {
  double *pa = calloc(t->nrows + 1, sizeof *pa);
  double *pb = calloc(t->nrows + 1, sizeof *pb);
  size_t pn = 0;
  if (!pa || !pb) {
    free(pa);
    free(pb);
    pfi__note_oom(r, PFI_ENOMEM);
    return NAN;
  }
  for (size_t i = 0; have && i < t->nrows; i++) {
    double x = pfi__pub_num(t, (long)i, colx);
    double y = pfi__pub_num(t, (long)i, coly);
    if (isfinite(x) && isfinite(y)) {
      pa[pn] = x;
      pb[pn++] = y;
    }
  }
  double rho = pfi__rho_of(r, pa, pb, pn);
  free(pa);
  free(pb);
  return rho;
}

/* The GPU of a group as the tables show it. Ids ending in @h100 are H100
 * groups; the others are H200 only where that is known: an emulated
 * campaign (the emulator's H200) or one of the paper's own groups. A
 * user's own sweep on another GPU is not called H200; its cell is empty. */
const char *pfi__gpu_name(const struct pfi__report *r,
                          const struct pfi__group *g) {
  if (g->h100)
    return "H100";
  if (strcmp(r->source, "emulated") == 0 || isfinite(g->pub) || g->heldout)
    return "H200";
  return NULL;
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
  /* The numbers the paper gives only in its text and figures. */
  static const char *const keys[4] = {"heldout_r2", "h100_transfer_r2",
                                      "gap_closed_pct_production_30",
                                      "tokens_over_equal_production_30"};
  double *dst[4] = {&r->pub_heldout_r2, &r->pub_h100_r2, &r->pub_gap30,
                    &r->pub_tok30};
  for (int k = 0; k < 4; k++) {
    *dst[k] = NAN;
    rc = pfi_paper_headline(keys[k], dst[k], r->err);
    if (rc < 0 && rc != PFI_ENOTFOUND)
      return rc;
    if (rc < 0) {
      *dst[k] = NAN;
      pfi_error_clear(r->err);
    }
  }
  rc = 0;
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
  /* Written here only; the sections read them (r->g is const). */
  struct pfi__group *gs = calloc(r->ng ? r->ng : 1, sizeof *gs);
  r->g = gs;
  if (!gs)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  size_t draws = r->o->ci_draws ? r->o->ci_draws : 10000;
  for (size_t i = 0; i < r->ng; i++) {
    struct pfi__group *g = &gs[i];
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
    long hr = pfi__pub_row(&r->pub_head, r->have_pub_head, "group", g->base);
    long lr = pfi__pub_row(&r->pub_held, r->have_pub_held, "group", g->base);
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
      g->pub = hr >= 0 ? pfi__pub_num(&r->pub_head, hr, "pfi")
                       : pfi__pub_num(&r->pub_held, lr, "pfi");
      g->pub_lo = pfi__pub_num(&r->pub_head, hr, "ci95_lo");
      g->pub_hi = pfi__pub_num(&r->pub_head, hr, "ci95_hi");
    } else {
      long mr = pfi__pub_row(&r->pub_h100, r->have_pub_h100, "group", g->base);
      g->pub = pfi__pub_num(&r->pub_h100, mr, "pfi_h100");
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

/* The report's sections, in the order of the page: the one list. Each adds
 * its tables and figures to the page and its first-screen numbers to the
 * headline table, reads the groups (computed once, read-only) and what the
 * earlier sections handed on in `res`, writes its own part of `res`, and
 * returns 0 or a negative error code. */
static const struct {
  const char *name;
  int (*run)(struct pfi__report *r, struct pfi__results *res);
} sections[] = {
    {"characterization", pfi__sec_characterization},
    {"mechanism", pfi__sec_mechanism},
    {"statistics", pfi__sec_statistics},
    {"prediction", pfi__sec_prediction},
    {"allocation", pfi__sec_allocation},
};

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
  /* What the sections hand on to each other. */
  struct pfi__results res;
  memset(&res, 0, sizeof res);
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
  static const char *const hcols[] = {"metric", "ours", "published", "diff"};
  r.headline = pfi__report_table(
      &r, "headline", "Headline numbers: ours beside the paper's", 4, hcols);
  if (!r.headline) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    pfi__report_progress(&r, "report: %s", sections[i].name);
    if ((rc = sections[i].run(&r, &res)) < 0)
      goto out;
  }
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
  free((void *)r.g);
  free(res.pred_loo);
  free(res.pred_loco);
  free(res.pred_out);
  if (res.have_core)
    pfi__core_release(&res.core);
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
