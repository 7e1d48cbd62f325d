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
  double pred_loo;            /* LOO prediction of the chosen model (core) */
  double pred_loco;           /* LOCO prediction of the chosen model (core) */
  double pred_out;            /* prediction of the model fitted on the core */
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
  struct pfi__group *g;
  size_t ng;
  struct pfi_rtable tabs[32];
  size_t ntabs;
  struct pfi_rtable *headline; /* first-screen numbers */
  struct pfi_html body;        /* the sections */
  int nfigs;
  int nomem; /* an allocation failed where a section would degrade */
  /* Scratch arrays for the sections, each with room for every group and
   * every published row (never more at once than a section's pair of
   * ours and published columns). */
  double *sa, *sb, *sc, *sd;
  size_t *sg;
  double rho_grid, rho_grid_pub, rho_h100, rho_h100_pub;
  size_t n_grid, n_h100;
  size_t model_k;
  int have_sim; /* the allocation section ran */
};

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
