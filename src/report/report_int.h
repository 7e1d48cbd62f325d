/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to src/report/: the state the report's sections share. */
#ifndef PFI_REPORT_INT_H
#define PFI_REPORT_INT_H

#include <stdarg.h>

#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/features.h"
#include "pfi/jobset.h"
#include "pfi/report.h"

struct pfi__group {
  const struct pfi_curve *c;
  const char *name;   /* the curve's job id (borrowed) */
  char base[160];     /* the id without an "@h100" suffix */
  int h100;           /* an H100 group */
  int cat;            /* class 0 dense, 1 MoE PT, 2 MoE FT; -1 unknown */
  long feat;          /* row in features.csv, -1 when absent */
  int heldout;        /* one of the paper's held-out validation groups */
  int core;           /* H200, not held out: the set models are fitted on */
  double pfi, lo, hi; /* ratio PFI and its 95 % interval (NaN: undefined) */
  double area, ce;    /* the other two definitions */
  double area_lo, area_hi, ce_lo, ce_hi; /* their 95 % intervals */
  double coarse; /* ratio PFI on the coarse grid; NaN when not fine */
  int fine;      /* swept on the fine grid 200..700 W */
  double t_max, p_max;
  double pub, pub_lo, pub_hi; /* published PFI and interval (NaN: none) */
};

struct pfi__report {
  const struct pfi_report_opts *o;
  struct pfi_error *err;
  struct pfi_jobset js; /* curves.csv joined with features.csv */
  struct pfi_table mech;
  int have_mech;
  struct pfi_table pub_head, pub_held, pub_h100, pub_grid, pub_abl;
  int have_pub_head, have_pub_held, have_pub_h100, have_pub_grid, have_pub_abl;
  char source[16]; /* pfi_provenance_name() of the job set */
  char objective[300]; /* the operator page's objective, described */
  /* The paper's headline numbers (data/paper/published_headlines.csv; NaN
   * when absent): held-out and H100-transfer R^2, share of the gap closed
   * and tokens/s per job over equal at a 30 % cut, production mix. */
  double pub_heldout_r2, pub_h100_r2, pub_gap30, pub_tok30;
  const struct pfi__group *g; /* computed once, before the sections */
  size_t ng;
  struct pfi_rtable tabs[32];
  size_t ntabs;
  struct pfi_rtable *headline; /* first-screen numbers */
  struct pfi_html body;        /* the sections */
  int nfigs;
  int nomem; /* an allocation failed where a section would degrade */
  /* No section writes here but through the page, the tables and nomem:
   * what one section gives another is in struct pfi__results. */
};

/* Classes of the paper's Kruskal-Wallis test: dense (pretraining and
 * fine-tuning pooled), MoE pretraining, MoE fine-tuning. */
enum { CAT_DENSE, CAT_MOE_PT, CAT_MOE_FT, CAT__N };
extern const char *const pfi__cat_key[CAT__N];   /* "dense", ... */
extern const char *const pfi__cat_label[CAT__N]; /* for figures */

/* The H200 headline groups with a finite PFI, a features row and a class:
 * the job set the models are fitted on (js, a subset of the report's),
 * their features rows, PFI and group index, and the fit rows with their
 * LOCO clusters (the report's cluster definition). */
struct pfi__core {
  size_t n;
  size_t *rows, *gi;
  double *y;
  struct pfi_jobset js;
  struct pfi_fitrows fr;
  int have_fr;
  int paper; /* the paper's population: its 25 H200 headline groups */
};

/* A rank correlation beside the published one, over n pairs. */
struct pfi__rank {
  double rho, rho_pub;
  size_t n;
};

/*
 * What the sections hand on, each part written by one section only and
 * read by the later ones.
 */
struct pfi__results {
  struct pfi__rank h100; /* mechanism: matched H100 against H200 PFI */
  struct pfi__rank grid; /* statistics: fine against coarse grid */
  /* prediction: per group (r->ng), NaN where none: the chosen model's
   * leave-one-out and leave-one-cluster-out predictions (core groups) and
   * the prediction of the model fitted on the core (the others). */
  double *pred_loo, *pred_loco, *pred_out;
  /* prediction: the core set the models are fitted on, which the
   * allocation section simulates (have_core 0 without features). */
  struct pfi__core core;
  int have_core;
};

/* Builds / frees the core set (sec_prediction.c). Returns 0 or
 * PFI_ENOMEM. */
int pfi__core_build(struct pfi__report *r, struct pfi__core *c);
void pfi__core_release(struct pfi__core *c);

/* Result-table cells by column name (PFI_EINVAL for an unknown column). */
int pfi__set_num(struct pfi_rtable *t, long row, const char *col, double v);
int pfi__set_str(struct pfi_rtable *t, long row, const char *col,
                 const char *s);
void pfi__set_dec(struct pfi_rtable *t, const char *col, int d);
/* ours - published, NaN when either is missing. */
double pfi__diff(double ours, double pub);
/* Page text: a paragraph, a "not available" note, a table. */
void pfi__para(struct pfi__report *r, const char *text);
void pfi__missing(struct pfi__report *r, const char *text);
void pfi__show_table(struct pfi__report *r, const struct pfi_rtable *t);
/* A first-screen row: metric, ours, published, diff. */
void pfi__headline(struct pfi__report *r, const char *metric, double ours,
                   double pub, int decimals);
/* Records PFI_ENOMEM (the report then fails); returns rc. */
int pfi__note_oom(struct pfi__report *r, int rc);
/* Row of `key` in column `keycol` of a published table, or -1; a number of
 * that row (NaN when absent). */
long pfi__pub_row(const struct pfi_table *t, int have, const char *keycol,
                  const char *key);
double pfi__pub_num(const struct pfi_table *t, long row, const char *col);
/* Spearman rho, NaN when undefined; of two columns of a published table. */
double pfi__rho_of(struct pfi__report *r, const double *x, const double *y,
                   size_t n);
double pfi__pub_rho(struct pfi__report *r, int have, const struct pfi_table *t,
                    const char *colx, const char *coly);
/* The GPU of a group as the tables show it (NULL: unknown). */
const char *pfi__gpu_name(const struct pfi__report *r,
                          const struct pfi__group *g);

/* The sections, in the order of the page (the list is in analysis.c). */
int pfi__sec_characterization(struct pfi__report *r, struct pfi__results *res);
int pfi__sec_mechanism(struct pfi__report *r, struct pfi__results *res);
int pfi__sec_statistics(struct pfi__report *r, struct pfi__results *res);
int pfi__sec_prediction(struct pfi__report *r, struct pfi__results *res);
int pfi__sec_allocation(struct pfi__report *r, struct pfi__results *res);

void pfi__report_progress(struct pfi__report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct pfi_rtable *pfi__report_table(struct pfi__report *r, const char *name,
                                     const char *title, size_t ncols,
                                     const char *const *cols);
int pfi__report_page(struct pfi__report *r, const char *out_dir);
int pfi__report_figure(struct pfi__report *r, const struct pfi_figure *f,
                       const char *caption);
/* The page's style sheet, render-check script and provenance banner, for
 * pages other than the paper's (operator.c). */
const char *pfi__report_style(void);
const char *pfi__report_check_script(void);
void pfi__report_notice(struct pfi__report *r, struct pfi_html *b);
/* The replay gate section of the operator's page: the page's jobs against
 * the reference curves file `ref_path` (gate_section.c). */
int pfi__report_gate(struct pfi__report *r, const char *ref_path,
                     const char *map, size_t draws);

#endif
