/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The report for an operator's own jobs: which jobs to cap first, how much
 * power the cluster can shed for what throughput, and the caps to set for
 * a ladder of cuts. No paper scaffolding: nothing here compares with the
 * paper, and nothing is shown that the input never had.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/alloc.h"
#include "pfi/capacity.h"
#include "pfi/index.h"
#include "pfi/monotone.h"
#include "pfi/objective.h"
#include "pfi/report.h"
#include "pfi/stats.h"
#include "pfi/version.h"

#include "report_int.h"

/* Rows of a table shown on the page; the rest are in its CSV. */
#define SCREEN_ROWS 15

static const double ladder[] = {0.05, 0.10, 0.20, 0.30, 0.40};
#define NLADDER (sizeof ladder / sizeof ladder[0])

struct job {
  size_t i;           /* curve index */
  int ok;             /* ratio PFI defined */
  double pfi, lo, hi; /* interval equals the estimate without draws */
  double area, ce;
  int ce_ok;
  size_t used;
  int why; /* enum pfi_index_undefined when !ok */
  char excluded[512];
};

/* The noise as this page states it: pfi_noise_describe(), except that the
 * default is named for what it is, not for where it was published (the
 * page has no paper scaffolding). */
static const char *noise_text(const struct pfi_noise *nz, char *buf, size_t n) {
  if (nz->source != PFI_NOISE_PAPER)
    return pfi_noise_describe(nz, buf, n);
  snprintf(buf, n,
           "%.3g %% of power, %.3g %% of throughput (the default "
           "repeatability of a point)",
           nz->rel_sd_power * 100.0, nz->rel_sd_tokens * 100.0);
  return buf;
}

static int by_pfi(const void *a, const void *b) {
  const struct job *x = a, *y = b;
  if (x->ok != y->ok)
    return y->ok - x->ok;
  if (x->ok && x->pfi != y->pfi)
    return x->pfi < y->pfi ? 1 : -1;
  if (x->area != y->area)
    return x->area < y->area ? 1 : -1;
  return (x->i > y->i) - (x->i < y->i);
}

int pfi_report_has_paper_groups(const char *curves, const char *map, int *paper,
                                struct pfi_error *err) {
  *paper = 0;
  struct pfi_curveset cs;
  int rc = pfi_curveset_read(&cs, curves, map, err);
  if (rc < 0)
    return rc;
  const char **names = malloc((cs.n + 1) * sizeof *names);
  if (!names) {
    pfi_curveset_release(&cs);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < cs.n; i++)
    names[i] = cs.c[i].job;
  struct pfi_population pop;
  struct pfi_error e;
  if (pfi_population_of(names, cs.n, &pop, &e) == 0)
    *paper = pop.headline > 0;
  free(names);
  pfi_curveset_release(&cs);
  return 0;
}

/* A trimmed copy of `t` (its first SCREEN_ROWS rows) shown on the page,
 * with a line naming the CSV that has them all. */
static int show(struct pfi__report *r, const struct pfi_rtable *t) {
  struct pfi_html *b = &r->body;
  if (t->nrows <= SCREEN_ROWS) {
    pfi_html_puts(b, "<div class=\"tabwrap\">");
    pfi_rtable_html(t, b);
    pfi_html_puts(b, "</div>\n");
    return 0;
  }
  struct pfi_rtable v;
  if (pfi_rtable_init(&v, t->name, t->title, t->ncols,
                      (const char *const *)t->cols) != 0)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  v.hidden_col = t->hidden_col;
  for (size_t c = 0; c < t->ncols; c++)
    pfi_rtable_decimals(&v, c, t->decimals[c]);
  for (size_t row = 0; row < SCREEN_ROWS; row++) {
    long k = pfi_rtable_add_row(&v);
    if (k < 0)
      break;
    for (size_t c = 0; c < t->ncols; c++) {
      const struct pfi_cell *cell = &t->cells[row * t->ncols + c];
      if (cell->kind == PFI_CELL_NUM)
        pfi_rtable_set_num_dec(&v, (size_t)k, c, cell->v,
                               cell->dec >= 0 ? cell->dec : t->decimals[c]);
      else if (cell->kind == PFI_CELL_STR)
        pfi_rtable_set_str(&v, (size_t)k, c, cell->s);
    }
  }
  pfi_html_puts(b, "<div class=\"tabwrap\">");
  pfi_rtable_html(&v, b);
  pfi_html_puts(b, "</div>\n");
  pfi_html_printf(b,
                  "<p class=\"note\">The first %d of %zu rows; all of them "
                  "are in <a href=\"%s.csv\">",
                  SCREEN_ROWS, t->nrows, t->name);
  pfi_html_text(b, t->name);
  pfi_html_puts(b, ".csv</a> beside this page.</p>\n");
  int failed = v.failed;
  pfi_rtable_release(&v);
  return failed ? pfi_error_set(r->err, PFI_ENOMEM, "out of memory") : 0;
}

static void setn(struct pfi_rtable *t, long row, const char *col, double v) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0)
    pfi_rtable_set_num(t, (size_t)row, (size_t)c, v);
}
static void sets(struct pfi_rtable *t, long row, const char *col,
                 const char *s) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0)
    pfi_rtable_set_str(t, (size_t)row, (size_t)c, s);
}
static void dec(struct pfi_rtable *t, const char *col, int d) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0)
    pfi_rtable_decimals(t, (size_t)c, d);
}

/* The jobs ranked, most flexible first. */
static int sec_ranked(struct pfi__report *r, struct job *jobs, size_t n,
                      const char *unit, size_t draws) {
  for (size_t k = 0; k < n; k++) {
    struct job *j = &jobs[k];
    const struct pfi_curve *c = &r->js.cs.c[k];
    j->i = k;
    struct pfi_index ix;
    /* The data's own noise (r->js.noise), as pfi index takes it. */
    int rc =
        pfi_index_compute_noise(c, PFI_INDEX_ALL, &r->js.noise, &ix, r->err);
    if (rc < 0)
      return rc;
    j->ok = ix.pfi_defined;
    j->why = ix.undefined_why;
    j->pfi = j->lo = j->hi = ix.pfi;
    j->area = ix.pfi_area;
    j->ce = ix.pfi_ce;
    j->ce_ok = ix.ce_defined;
    j->used = ix.points_used;
    size_t w = 0;
    j->excluded[0] = '\0';
    for (size_t e = 0; e < ix.n_excluded && w + 40 < sizeof j->excluded; e++)
      w += (size_t)snprintf(j->excluded + w, sizeof j->excluded - w,
                            "%s%g W %s", e ? "; " : "", ix.excluded_caps[e],
                            pfi_index_why_name(ix.excluded_why[e]));
    pfi_index_release(&ix);
    if (j->ok) {
      double lo, hi;
      rc = pfi_index_ci_noise(c, draws, r->o->seed, &r->js.noise, &lo, &hi,
                              r->err);
      if (rc < 0)
        return rc;
      if (rc > 0) {
        j->lo = lo;
        j->hi = hi;
      }
    }
  }
  qsort(jobs, n, sizeof *jobs, by_pfi);
  char tmax[96];
  snprintf(tmax, sizeof tmax, "t_max (%s)", unit);
  const char *cols[] = {"rank",        "job",      "pfi",      "pfi_lo",
                        "pfi_hi",      "note",     "pfi_area", "pfi_ce",
                        "points_used", "left_out", tmax,       "p_max_w"};
  const char *title =
      "Jobs from most to least flexible: cap the first ones first (ratio "
      "PFI with its 95 % interval at the noise stated above, or the note "
      "why it has none; area and constant-elasticity definitions beside it; "
      "points the noise rule left out, with the reason)";
  struct pfi_rtable *t = pfi__report_table(r, "jobs_ranked", title,
                                           sizeof cols / sizeof cols[0], cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  dec(t, "rank", 0);
  dec(t, "points_used", 0);
  dec(t, "p_max_w", 1);
  /* Throughput in its own unit, to about 5 significant digits. */
  double big = 0;
  for (size_t k = 0; k < n; k++)
    if (pfi_curve_uncapped(&r->js.cs.c[k])->tokens_per_s > big)
      big = pfi_curve_uncapped(&r->js.cs.c[k])->tokens_per_s;
  int d = big > 0 ? 4 - (int)floor(log10(big)) : 3;
  dec(t, tmax, d < 0 ? 0 : d > 12 ? 12 : d);
  for (size_t k = 0; k < n; k++) {
    const struct job *j = &jobs[k];
    const struct pfi_curve *c = &r->js.cs.c[j->i];
    long row = pfi_rtable_add_row(t);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    setn(t, row, "rank", (double)(k + 1));
    sets(t, row, "job", c->job);
    if (j->ok) {
      setn(t, row, "pfi", j->pfi);
      setn(t, row, "pfi_lo", j->lo);
      setn(t, row, "pfi_hi", j->hi);
    }
    sets(t, row, "note",
         !j->ok         ? pfi_index_undefined_reason(j->why)
         : j->used == 1 ? "one capped point"
                        : "");
    setn(t, row, "pfi_area", j->area);
    if (j->ce_ok)
      setn(t, row, "pfi_ce", j->ce);
    setn(t, row, "points_used", (double)j->used);
    sets(t, row, "left_out", j->excluded[0] ? j->excluded : "none");
    setn(t, row, tmax, pfi_curve_uncapped(c)->tokens_per_s);
    setn(t, row, "p_max_w", pfi_curve_uncapped(c)->power_w);
  }
  return show(r, t);
}

/* Capacity: figure, quote table; the ladder table goes below the first
 * screen. */
static int sec_capacity(struct pfi__report *r, const struct pfi_problem *p,
                        const double *pfi, const double *lo, const double *hi,
                        struct pfi_capacity *cap, size_t *ncap) {
  static const enum pfi_strategy strat[] = {PFI_STRAT_ORACLE, PFI_STRAT_EQUAL,
                                            PFI_STRAT_PFI_AWARE};
  struct pfi_alloc_inputs in = {pfi, NULL, NULL};
  *ncap = 0;
  for (size_t s = 0; s < 3; s++) {
    int rc =
        pfi_capacity_compute(p, strat[s], &in, lo, hi, 20, &cap[s], r->err);
    if (rc < 0)
      return rc;
    (*ncap)++;
  }
  struct pfi_series ser[6];
  double *buf = malloc(3 * 4 * cap[0].n * sizeof *buf);
  if (!buf)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  size_t ns = pfi_capacity_series(cap, 3, buf, ser);
  struct pfi_panel pan;
  pfi_panel_init(&pan);
  pan.title = "Flexibility capacity";
  pan.xlabel = "power shed, % of the jobs' uncapped power";
  char ylabel[360];
  snprintf(ylabel, sizeof ylabel, "throughput lost, %% (objective %s)",
           pfi_objective_name(r->o->objective.kind));
  pan.ylabel = ylabel;
  pan.series = ser;
  pan.nseries = ns;
  pan.key = 1;
  pan.key_pos = "top left";
  struct pfi_figure f = {680, 280, 0, 1, 1, &pan, 1};
  int rc = pfi__report_figure(
      r, &f,
      "Power the jobs can shed against the throughput they lose, by the "
      "exact oracle, the equal cut, and PFI-aware (bars: the range with every "
      "job's PFI at the ends of its interval).");
  free(buf);
  return rc;
}

/* The quote for a utility. */
static int sec_quote(struct pfi__report *r, const struct pfi_capacity *cap) {
  const char *qc[] = {"max_loss_pct",  "oracle_shed_w",    "oracle_shed_pct",
                      "equal_shed_w",  "pfi_aware_shed_w", "pfi_aware_lo_w",
                      "pfi_aware_hi_w"};
  struct pfi_rtable *q = pfi__report_table(
      r, "capacity_quote",
      "What to quote a utility: power shed at <= Y % throughput loss",
      sizeof qc / sizeof qc[0], qc);
  if (!q)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  dec(q, "max_loss_pct", 0);
  for (const char *const *c = qc + 1; c < qc + 7; c++)
    dec(q, *c, 1);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    long row = pfi_rtable_add_row(q);
    if (row < 0)
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    setn(q, row, "max_loss_pct", 100 * pfi_capacity_quotes[k]);
    setn(q, row, "oracle_shed_w", cap[0].quote_w[k]);
    setn(q, row, "oracle_shed_pct",
         100 * cap[0].quote_w[k] / cap[0].uncapped_w);
    setn(q, row, "equal_shed_w", cap[1].quote_w[k]);
    setn(q, row, "pfi_aware_shed_w", cap[2].quote_w[k]);
    setn(q, row, "pfi_aware_lo_w", cap[2].quote_lo_w[k]);
    setn(q, row, "pfi_aware_hi_w", cap[2].quote_hi_w[k]);
  }
  return show(r, q);
}

/* The caps to set for a ladder of cuts (the oracle's allocation). */
static int sec_plan(struct pfi__report *r, const struct pfi_problem *p,
                    const struct job *jobs, size_t n) {
  double lo, hi;
  pfi_problem_bounds(p, &lo, &hi);
  const char *cols[2 + 2 * NLADDER];
  char names[2 * NLADDER][32];
  size_t nc = 0, nl = 0;
  cols[nc++] = "job";
  cols[nc++] = "uncapped_cap_w";
  double cuts[NLADDER];
  for (size_t k = 0; k < NLADDER; k++) {
    if ((1 - ladder[k]) * hi < lo * (1 + 1e-12))
      continue; /* deeper than every job at its floor */
    cuts[nl] = ladder[k];
    snprintf(names[2 * nl], sizeof names[0], "cap_w_cut_%.0f", 100 * ladder[k]);
    snprintf(names[2 * nl + 1], sizeof names[0], "retained_cut_%.0f",
             100 * ladder[k]);
    cols[nc++] = names[2 * nl];
    cols[nc++] = names[2 * nl + 1];
    nl++;
  }
  struct pfi_rtable *t = pfi__report_table(
      r, "cap_plan",
      "The caps to set (W per GPU) for a ladder of cuts of the jobs' total "
      "uncapped power, by the exact oracle on the objective below (pfi "
      "allocate's default: the plan pfi cap --plan applies), with each job's "
      "throughput retained (fraction of uncapped); last row: the total",
      nc, cols);
  if (!t)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  dec(t, "uncapped_cap_w", 1);
  for (size_t k = 0; k < nl; k++) {
    dec(t, names[2 * k], 1);
    dec(t, names[2 * k + 1], 3);
  }
  double *pw = malloc((n + 1) * nl * sizeof *pw + sizeof *pw);
  if (!pw)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  double *tot = pw + n * nl;
  for (size_t k = 0; k < nl; k++) {
    int rc = pfi_alloc_run(p, PFI_STRAT_ORACLE, (1 - cuts[k]) * hi, NULL,
                           pw + k * n, r->err);
    if (rc < 0) {
      free(pw);
      return rc;
    }
  }
  double unc = 0;
  for (size_t i = 0; i < n; i++)
    unc += pfi_problem_eval(p, i, pfi_problem_hi(p, i));
  for (size_t k = 0; k < nl; k++) {
    tot[k] = 0;
    for (size_t i = 0; i < n; i++)
      tot[k] += pfi_problem_eval(p, i, pw[k * n + i]);
  }
  for (size_t q = 0; q < n; q++) {
    size_t i = jobs[q].i;
    const struct pfi_curve *c = &r->js.cs.c[i];
    long row = pfi_rtable_add_row(t);
    if (row < 0) {
      free(pw);
      return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    }
    sets(t, row, "job", c->job);
    setn(t, row, "uncapped_cap_w", pfi_curve_uncapped(c)->cap_w);
    for (size_t k = 0; k < nl; k++) {
      double x = pw[k * n + i];
      setn(t, row, names[2 * k],
           pfi_curve_fit_cap_at(c, (enum pfi_curve_fit)p->curve_fit, x));
      setn(t, row, names[2 * k + 1],
           pfi_problem_eval(p, i, x) /
               pfi_problem_eval(p, i, pfi_problem_hi(p, i)));
    }
  }
  long row = pfi_rtable_add_row(t);
  if (row >= 0) {
    char what[400];
    snprintf(what, sizeof what, "TOTAL (retained, %s)", r->objective);
    sets(t, row, "job", what);
    for (size_t k = 0; k < nl; k++)
      setn(t, row, names[2 * k + 1], tot[k] / unc);
  }
  free(pw);
  if (nl < NLADDER)
    pfi_html_printf(&r->body,
                    "<p class=\"note\">Cuts deeper than %.1f %% are not "
                    "feasible: every job would be below its lowest measured "
                    "cap.</p>\n",
                    100 * (1 - lo / hi));
  return show(r, t);
}


/* One row of the before/after table: a measure, its value before and
 * after, shown to `d` decimals; NAN leaves a cell empty. */
static void ba_row(struct pfi_rtable *t, const char *what, double before,
                   double after, int d) {
  long row = pfi_rtable_add_row(t);
  if (row < 0)
    return;
  pfi_rtable_set_str(t, (size_t)row, 0, what);
  if (!isnan(before))
    pfi_rtable_set_num_dec(t, (size_t)row, 1, before, d);
  if (!isnan(after))
    pfi_rtable_set_num_dec(t, (size_t)row, 2, after, d);
}

/* Median of the n values of x (NAN when n is 0). */
static double median_of(const double *x, size_t n, struct pfi_error *err) {
  double m;
  return n && pfi_stats_median(x, n, &m, err) == 0 ? m : NAN;
}

/* Negative-loss steps of the oracle's and the equal cut's ladders, and
 * the lowest loss (%) among them (NAN when none). */
static size_t negative_steps(const struct pfi_capacity *cap, double *lowest) {
  size_t neg = 0;
  *lowest = NAN;
  for (size_t s = 0; s < 2; s++)
    for (size_t k = 0; k < cap[s].n; k++)
      if (cap[s].pts[k].loss_frac < -1e-9) { /* below rounding */
        neg++;
        if (isnan(*lowest) || 100 * cap[s].pts[k].loss_frac < *lowest)
          *lowest = 100 * cap[s].pts[k].loss_frac;
      }
  return neg;
}

/*
 * Before and after the noise model and the monotone fit, on this file:
 * "before" reads every file at the fixed default noise (pfi_noise_paper())
 * and decides on the raw points; "after" is this page (the data's own
 * noise, the curves decisions read). `jobs` are the page's PFIs, `cap`
 * its oracle and equal-cut capacity (cap[0], cap[1]).
 */
static int sec_before_after(struct pfi__report *r,
                            const struct pfi_objective *obj,
                            const struct job *jobs, size_t n, size_t draws,
                            const struct pfi_capacity *cap) {
  struct pfi_noise paper;
  pfi_noise_paper(&paper);
  struct pfi_problem pb;
  pfi_problem_init(&pb);
  struct pfi_capacity cb[2];
  memset(cb, 0, sizeof cb);
  double *v = malloc(3 * (n + 1) * sizeof *v);
  if (!v)
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  double *pb_pfi = v, *pf = v + (n + 1), *wd = v + 2 * (n + 1);
  size_t def_b = 0, one_b = 0, def_a = 0, one_a = 0;
  int rc = 0;
  /* Before: the ratio PFI and its interval at the fixed noise. */
  for (size_t i = 0; i < n; i++) {
    const struct pfi_curve *c = &r->js.cs.c[i];
    struct pfi_index ix;
    pb_pfi[i] = 0;
    if ((rc = pfi_index_compute_noise(c, PFI_INDEX_ALL, &paper, &ix,
                                      r->err)) < 0)
      goto out;
    int ok = ix.pfi_defined;
    double x = ix.pfi, lo = x, hi = x;
    one_b += ok && ix.points_used == 1;
    pfi_index_release(&ix);
    if (!ok)
      continue;
    if ((rc = pfi_index_ci_noise(c, draws, r->o->seed, &paper, &lo, &hi,
                                 r->err)) < 0)
      goto out;
    if (rc == 0)
      lo = hi = x;
    rc = 0;
    pb_pfi[i] = x;
    pf[def_b] = x;
    wd[def_b] = x != 0 ? 100 * (hi - lo) / fabs(x) : 0;
    def_b++;
  }
  double med_b = median_of(pf, def_b, r->err);
  double wid_b = median_of(wd, def_b, r->err);
  for (size_t k = 0; k < n; k++) {
    if (!jobs[k].ok)
      continue;
    pf[def_a] = jobs[k].pfi;
    wd[def_a] = jobs[k].pfi != 0
                    ? 100 * (jobs[k].hi - jobs[k].lo) / fabs(jobs[k].pfi)
                    : 0;
    one_a += jobs[k].used == 1;
    def_a++;
  }
  double med_a = median_of(pf, def_a, r->err);
  double wid_a = median_of(wd, def_a, r->err);
  /* Before: capacity on the raw points, same objective and ladder. */
  int gk = 0;
  pb.curve_fit = PFI_CURVE_RAW;
  if ((rc = pfi_capacity_problem_objective(&r->js.cs, obj, &pb, &gk,
                                           r->err)) < 0)
    goto out;
  static const enum pfi_strategy strat[] = {PFI_STRAT_ORACLE,
                                            PFI_STRAT_EQUAL};
  struct pfi_alloc_inputs in = {pb_pfi, NULL, NULL};
  for (size_t s = 0; s < 2; s++)
    if ((rc = pfi_capacity_compute(&pb, strat[s], &in, NULL, NULL, 20, &cb[s],
                                   r->err)) < 0)
      goto out;

  pfi_html_puts(&r->body, "<section id=\"before-after\"><h2>Before and after "
                          "the noise model</h2>\n<p><strong>Before</strong> "
                          "reads this file as every file was read before "
                          "the noise model: ");
  char nb[200];
  pfi_html_text(&r->body, noise_text(&paper, nb, sizeof nb));
  pfi_html_printf(
      &r->body,
      " for every point without sd columns, and decisions (capacity) on the "
      "raw points. <strong>After</strong> is this page: the noise stated on "
      "its first screen, and decisions on %s. PFIs always read the raw "
      "points; intervals: %zu draws, seed %lu; capacity: the oracle and "
      "the equal cut, 20 steps, by the objective the first screen "
      "names.</p>\n",
      r->o->curve_fit == PFI_CURVE_RAW ? "the raw points (--curve raw)"
                                       : "each curve's monotone fit",
      draws, r->o->seed);
  const char *cols[] = {"measure", "before", "after"};
  struct pfi_rtable *t = pfi__report_table(
      r, "before_after",
      "This file before and after the noise model and the monotone fit",
      3, cols);
  if (!t) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  ba_row(t, "noise of power, % (points without sd columns)",
         100 * paper.rel_sd_power, 100 * r->js.noise.rel_sd_power, 3);
  ba_row(t, "noise of throughput, %", 100 * paper.rel_sd_tokens,
         100 * r->js.noise.rel_sd_tokens, 3);
  char what[120];
  snprintf(what, sizeof what, "jobs with a ratio PFI (of %zu)", n);
  ba_row(t, what, (double)def_b, (double)def_a, 0);
  ba_row(t, "PFIs from one capped point", (double)one_b, (double)one_a, 0);
  ba_row(t, "median ratio PFI", med_b, med_a, 3);
  ba_row(t, "median 95 % interval width, % of the PFI", wid_b, wid_a, 1);
  snprintf(what, sizeof what, "curves that fall as the cap rises (of %zu)",
           n);
  double fall = (double)pfi_curveset_violations(&r->js.cs);
  ba_row(t, what, fall, fall, 0);
  double low_b, low_a;
  size_t neg_b = negative_steps(cb, &low_b), neg_a = negative_steps(cap, &low_a);
  ba_row(t, "capacity ladder steps with a negative loss (oracle, equal)",
         (double)neg_b, (double)neg_a, 0);
  if (neg_b || neg_a)
    ba_row(t, "lowest loss on those ladders, %", low_b, low_a, 2);
  for (int q = 0; q < PFI_CAPACITY_NQUOTE; q++) {
    double y = pfi_capacity_quotes[q];
    if (fabs(y - 0.01) > 1e-12 && fabs(y - 0.05) > 1e-12)
      continue;
    snprintf(what, sizeof what, "capacity quote at <= %.0f %% loss, oracle, W",
             100 * y);
    ba_row(t, what, cb[0].quote_w[q], cap[0].quote_w[q], 1);
    snprintf(what, sizeof what,
             "capacity quote at <= %.0f %% loss, equal cut, W", 100 * y);
    ba_row(t, what, cb[1].quote_w[q], cap[1].quote_w[q], 1);
  }
  if ((rc = show(r, t)) < 0)
    goto out;
  pfi_html_puts(&r->body, "</section>\n");
out:
  for (size_t s = 0; s < 2; s++)
    pfi_capacity_release(&cb[s]);
  pfi_problem_release(&pb);
  free(v);
  return rc;
}

static int write_page(struct pfi__report *r, const char *out_dir,
                      const char *first, size_t first_len, const char *rest,
                      size_t rest_len) {
  struct pfi_html b;
  pfi_html_init(&b);
  pfi_html_printf(&b,
                  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                  "<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width\">\n"
                  "<meta name=\"generator\" content=\"pfi %s\">\n"
                  "<title>pfi report: power flexibility of %zu jobs</title>\n"
                  "<style>\n%s</style>\n</head>\n<body>\n",
                  PFI_VERSION_STRING, r->js.cs.n, pfi__report_style());
  pfi_html_raw(&b, first, first_len);
  pfi_html_raw(&b, rest, rest_len);
  pfi_html_puts(&b, pfi__report_check_script());
  pfi_html_puts(&b, "</body>\n</html>\n");
  int rc = 0;
  if (!pfi_html_ok(&b)) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/report.html", out_dir);
  FILE *fp = fopen(path, "w");
  if (!fp) {
    rc = pfi_error_set(r->err, PFI_EIO, "%s: %s", path, strerror(errno));
    goto out;
  }
  size_t w = fwrite(b.s, 1, b.len, fp);
  if (fclose(fp) != 0 || w != b.len)
    rc = pfi_error_set(r->err, PFI_EIO, "%s: write failed", path);
out:
  pfi_html_release(&b);
  return rc;
}

int pfi_report_operator(const char *curves, const char *map, const char *unit,
                        const char *out_dir, const struct pfi_report_opts *o,
                        struct pfi_error *err) {
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
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_capacity cap[3];
  memset(cap, 0, sizeof cap);
  size_t ncap = 0;
  struct job *jobs = NULL;
  double *pfi = NULL, *weights = NULL;
  struct pfi_html first;
  pfi_html_init(&first);
  int rc = pfi_report_mkdirs(out_dir, err);
  if (rc)
    goto out;
  pfi__report_progress(&r, "report: reading %s", curves);
  if ((rc = pfi_jobset_load(&r.js, curves, map, NULL, err)) < 0)
    goto out;
  snprintf(r.source, sizeof r.source, "%s", pfi_jobset_provenance(&r.js));
  if (!unit)
    unit = r.js.cs.unit ? r.js.cs.unit : "tokens/s";
  size_t n = r.js.cs.n;
  size_t draws = o->ci_draws ? o->ci_draws : 10000;
  jobs = calloc(n + 1, sizeof *jobs);
  pfi = calloc(3 * n + 1, sizeof *pfi);
  if (!jobs || !pfi) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  int gpus_known = 0;
  struct pfi_objective obj = o->objective;
  if (o->weights) {
    const char **names = calloc(n + 1, sizeof *names);
    weights = calloc(n + 1, sizeof *weights);
    if (!names || !weights) {
      free(names);
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    for (size_t i = 0; i < n; i++)
      names[i] = r.js.cs.c[i].job;
    rc = pfi_objective_weights_read(o->weights, names, n, weights, err);
    free(names);
    if (rc < 0)
      goto out;
    obj.weight = weights;
  }
  p.curve_fit = o->curve_fit;
  if ((rc = pfi_capacity_problem_objective(&r.js.cs, &obj, &p, &gpus_known,
                                           err)) < 0)
    goto out;
  pfi_objective_describe(&obj, gpus_known, r.objective, sizeof r.objective);

  /* First screen: what this is, then the answers. */
  pfi_html_puts(&r.body, "<header id=\"first-screen\">\n<h1>Power "
                         "flexibility of your jobs</h1>\n");
  pfi__report_notice(&r, &r.body);
  pfi_html_puts(&r.body, "<p id=\"what-ran\"><strong>What was read.</strong> ");
  pfi_html_printf(&r.body, "%zu jobs from ", n);
  pfi_html_text(&r.body, curves);
  pfi_html_puts(&r.body, "; throughput in ");
  pfi_html_text(&r.body, unit);
  char noise[200];
  noise_text(&r.js.noise, noise, sizeof noise);
  /* The noise decides which capped points enter each PFI and the
   * intervals' width: stated where the page says what it read, short
   * enough to keep the cap plan on the first screen. */
  pfi_html_puts(&r.body, ". <span id=\"noise\"><strong>Run-to-run "
                         "noise</strong> ");
  pfi_html_puts(&r.body, r.js.noise.source == PFI_NOISE_COLUMNS
                             ? ": "
                             : "of points without sd columns: ");
  pfi_html_text(&r.body, noise);
  pfi_html_puts(&r.body, r.js.noise.source == PFI_NOISE_PAPER
                             ? ", as the data gives nothing to estimate it from"
                             : "");
  pfi_html_printf(&r.body,
                  ".</span> "
                  "PFI intervals: %zu Monte Carlo draws, seed %lu. "
                  "Throughput lost, quotes and the cap plan count by the ",
                  draws, o->seed);
  pfi_html_text(&r.body, r.objective);
  pfi_html_puts(&r.body, " (docs/predict-allocate.md); pfi allocate, pfi "
                         "capacity and pfi cap --plan count the same by "
                         "default.</p>\n");
  pfi__report_progress(&r, "report: PFI of %zu jobs", n);
  if ((rc = sec_ranked(&r, jobs, n, unit, draws)) < 0)
    goto out;
  size_t nundef = 0;
  for (size_t k = 0; k < n; k++) {
    size_t i = jobs[k].i;
    pfi[i] = jobs[k].ok ? jobs[k].pfi : 0;
    pfi[n + i] = jobs[k].ok ? jobs[k].lo : 0;
    pfi[2 * n + i] = jobs[k].ok ? jobs[k].hi : 0;
    nundef += !jobs[k].ok;
  }
  if (nundef) {
    size_t never = 0;
    for (size_t k = 0; k < n; k++)
      never += !jobs[k].ok && jobs[k].why == PFI_UNDEF_NEVER_BOUND;
    pfi_html_printf(&r.body,
                    "<p class=\"note\">%zu job%s no ratio PFI at this "
                    "noise (their note says why: %zu the cap never bound, "
                    "%zu throughput never fell beyond the noise; "
                    "docs/index-and-stats.md, the noise rule). They are "
                    "ranked last by the area definition, and PFI-aware "
                    "takes nothing from them first.</p>\n",
                    nundef, nundef == 1 ? " has" : "s have", never,
                    nundef - never);
  }
  pfi__report_progress(&r, "report: capacity");
  if ((rc = sec_capacity(&r, &p, pfi, pfi + n, pfi + 2 * n, cap, &ncap)) < 0)
    goto out;
  pfi__report_progress(&r, "report: cap plan");
  if ((rc = sec_plan(&r, &p, jobs, n)) < 0 || (rc = sec_quote(&r, cap)) < 0)
    goto out;
  pfi_html_puts(&r.body, "<p id=\"render-check\">Render check: not run (the "
                         "page's script is off).</p>\n</header>\n");
  /* Below the first screen: the whole capacity ladder and how to act. */
  pfi_html_puts(&r.body, "<section id=\"capacity\"><h2>Capacity, step by "
                         "step</h2>\n");
  const char *lc[] = {"strategy", "shed_w",      "shed_pct",
                      "loss_pct", "loss_lo_pct", "loss_hi_pct"};
  struct pfi_rtable *lt = pfi__report_table(
      &r, "capacity",
      "Throughput lost (%, by the objective the first screen names) at each "
      "power shed, by strategy",
      6, lc);
  if (!lt) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  dec(lt, "shed_w", 1);
  dec(lt, "shed_pct", 1);
  for (size_t s = 0; s < ncap; s++)
    for (size_t k = 0; k < cap[s].n; k++) {
      long row = pfi_rtable_add_row(lt);
      if (row < 0)
        break;
      const struct pfi_capacity_point *pt = &cap[s].pts[k];
      sets(lt, row, "strategy", pfi_strategy_name(cap[s].strategy));
      setn(lt, row, "shed_w", pt->shed_w);
      setn(lt, row, "shed_pct", 100 * pt->shed_frac);
      setn(lt, row, "loss_pct", 100 * pt->loss_frac);
      setn(lt, row, "loss_lo_pct", 100 * pt->loss_lo_frac);
      setn(lt, row, "loss_hi_pct", 100 * pt->loss_hi_frac);
    }
  if ((rc = show(&r, lt)) < 0)
    goto out;
  pfi_html_puts(&r.body, "</section>\n");
  pfi__report_progress(&r, "report: before and after");
  if ((rc = sec_before_after(&r, &obj, jobs, n, draws, cap)) < 0)
    goto out;
  if (o->gate_reference) {
    pfi__report_progress(&r, "report: gate against %s", o->gate_reference);
    if ((rc = pfi__report_gate(&r, o->gate_reference, map,
                               draws < 2000 ? draws : 2000)) < 0)
      goto out;
  }
  pfi_html_puts(
      &r.body,
      "<section id=\"act\"><h2>Acting on it</h2>\n<p>A cap plan "
      "for one cut, with each job's GPUs: <code>pfi allocate --curves FILE "
      "--cut 20% --plan plan.csv --gpu-map gpus.csv</code>; applied all or "
      "none, with every GPU's limit recorded first: <code>pfi cap --plan "
      "plan.csv --db plan.db</code>; undone: <code>pfi restore --db "
      "plan.db</code>. After a driver, software or hardware change, sweep the "
      "jobs again and compare: <code>pfi gate OLD NEW</code>. Every table "
      "above is also in this directory as NAME.csv and NAME.json.</p>\n"
      "</section>\n");
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
  rc = write_page(&r, out_dir, r.body.s ? r.body.s : "", r.body.len, "", 0);
out:
  for (size_t i = 0; i < r.ntabs; i++)
    pfi_rtable_release(&r.tabs[i]);
  for (size_t s = 0; s < 3; s++)
    pfi_capacity_release(&cap[s]);
  pfi_problem_release(&p);
  free(weights);
  pfi_jobset_release(&r.js);
  pfi_html_release(&r.body);
  pfi_html_release(&first);
  free(jobs);
  free(pfi);
  return rc;
}
