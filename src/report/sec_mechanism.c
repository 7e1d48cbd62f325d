/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Section 2 of the report: mechanism. Clocks against cap (mechanism.csv)
 * and the matched H100 and H200 groups.
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

static int fig_mechanism(struct pfi__report *r) {
  int jc = pfi_table_find(&r->mech, "job");
  int cc = pfi_table_find(&r->mech, "cap_w");
  int sc = pfi_table_find(&r->mech, "sm_clock_mhz");
  int mc = pfi_table_find(&r->mech, "mem_clock_mhz");
  if (jc < 0 || cc < 0 || sc < 0 || mc < 0) {
    pfi__missing(r, "mechanism.csv lacks one of the columns job, cap_w, "
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

int pfi__sec_mechanism(struct pfi__report *r, struct pfi__results *res) {
  pfi_html_puts(&r->body, "<section id=\"mechanism\"><h2>2. Mechanism: "
                          "clocks under a cap, and H100 against H200</h2>\n");
  pfi__para(
      r, "A capped GPU lowers its SM clock; the memory clock does not move. "
         "Work bound by memory bandwidth therefore loses less throughput per "
         "watt removed, which is why memory-heavy jobs have the higher PFI.");
  int rc = 0;
  if (r->have_mech)
    rc = fig_mechanism(r);
  else
    pfi__missing(r, "mechanism.csv (per-run clocks) is not in the input; "
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
  /* The matched pairs' PFI, for the rank correlation. */
  double *a = calloc(r->ng + 1, sizeof *a), *b = calloc(r->ng + 1, sizeof *b);
  size_t n = 0;
  if (!a || !b) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < r->ng; i++) {
    const struct pfi__group *g = &r->g[i];
    if (!g->h100)
      continue;
    long mr = pfi__pub_row(&r->pub_h100, r->have_pub_h100, "group", g->base);
    double ph200 = pfi__pub_num(&r->pub_h100, mr, "pfi_h200");
    const struct pfi__group *h = h200_twin(r, g, ph200);
    long row = pfi_rtable_add_row(t);
    if (row < 0) {
      rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    pfi__set_str(t, row, "group", g->base);
    pfi__set_str(t, row, "h200_group", h ? h->name : NULL);
    pfi__set_num(t, row, "pfi_h200", h ? h->pfi : NAN);
    pfi__set_num(t, row, "pfi_h100", g->pfi);
    pfi__set_num(t, row, "pfi_h200_published", ph200);
    pfi__set_num(t, row, "pfi_h100_published", g->pub);
    pfi__set_num(t, row, "diff_h200", pfi__diff(h ? h->pfi : NAN, ph200));
    pfi__set_num(t, row, "diff_h100", pfi__diff(g->pfi, g->pub));
    if (h && isfinite(h->pfi) && isfinite(g->pfi)) {
      a[n] = h->pfi;
      b[n++] = g->pfi;
    }
  }
  if (t->nrows == 0) {
    pfi__missing(r, "no H100 groups (ids ending in @h100) in the input.");
  } else {
    pfi__show_table(r, t);
  }
  res->h100.rho = pfi__rho_of(r, a, b, n);
  res->h100.n = n;
  /* The published rank correlation, recomputed from the published table. */
  res->h100.rho_pub =
      pfi__pub_rho(r, r->have_pub_h100, &r->pub_h100, "pfi_h200", "pfi_h100");
  pfi_html_puts(&r->body, "</section>\n");
out:
  free(a);
  free(b);
  return rc;
}
