/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The replay gate as a section of the operator's page (include/pfi/gate.h):
 * the page's jobs (new) against a reference sweep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/gate.h"

#include "report_int.h"

static void num(struct pfi_rtable *t, long row, const char *col, int ok,
                double v) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0 && ok)
    pfi_rtable_set_num(t, (size_t)row, (size_t)c, v);
}

static void str(struct pfi_rtable *t, long row, const char *col,
                const char *s) {
  long c = pfi_rtable_col(t, col);
  if (c >= 0)
    pfi_rtable_set_str(t, (size_t)row, (size_t)c, s);
}

int pfi__report_gate(struct pfi__report *r, const char *ref_path,
                     const char *map, size_t draws) {
  struct pfi_curveset ref;
  int rc = pfi_curveset_read(&ref, ref_path, map, r->err);
  if (rc < 0)
    return rc;
  struct pfi_gate_opts go;
  pfi_gate_opts_init(&go);
  go.draws = draws;
  go.seed = r->o->seed;
  /* Each sweep's own noise, as pfi gate estimates it (docs/gate.md). */
  struct pfi_noise rnz, nnz;
  pfi_noise_estimate(&ref, &rnz);
  pfi_noise_estimate(&r->js.cs, &nnz);
  go.ref_noise = &rnz;
  go.new_noise = &nnz;
  static const char *const cols[] = {"job",
                                     "pfi_ref",
                                     "pfi_new",
                                     "pfi_diff",
                                     "pfi_diff_lo",
                                     "pfi_diff_hi",
                                     "pfi_beyond_noise",
                                     "worst_cap_w",
                                     "worst_tput_change_pct",
                                     "tput_beyond_noise",
                                     "tput_per_w_change_pct",
                                     "verdict"};
  struct pfi_rtable *t = pfi__report_table(
      r, "gate",
      "Replay gate: these jobs (new) against the reference sweep, per job "
      "(docs/gate.md: beyond noise, and beyond the default tolerances of 10 "
      "% PFI and 2 % throughput)",
      sizeof cols / sizeof cols[0], cols);
  if (!t) {
    pfi_curveset_release(&ref);
    return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
  }
  long c;
  if ((c = pfi_rtable_col(t, "worst_cap_w")) >= 0)
    pfi_rtable_decimals(t, (size_t)c, 1);
  if ((c = pfi_rtable_col(t, "worst_tput_change_pct")) >= 0)
    pfi_rtable_decimals(t, (size_t)c, 2);
  if ((c = pfi_rtable_col(t, "tput_per_w_change_pct")) >= 0)
    pfi_rtable_decimals(t, (size_t)c, 2);
  size_t ncmp = 0, nfail = 0, only = 0;
  for (size_t i = 0; i < r->js.cs.n && rc == 0; i++) {
    const struct pfi_curve *nc = &r->js.cs.c[i];
    const struct pfi_curve *rc_ = pfi_curveset_find(&ref, nc->job);
    if (!rc_) {
      only++;
      continue;
    }
    struct pfi_gate_job g;
    rc = pfi_gate_compare(rc_, nc, &go, &g, r->err);
    if (rc < 0)
      break;
    ncmp++;
    nfail += g.verdict == PFI_GATE_FAIL;
    long row = pfi_rtable_add_row(t);
    if (row < 0) {
      rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      break;
    }
    str(t, row, "job", nc->job);
    num(t, row, "pfi_ref", g.ref_ok, g.pfi_ref);
    num(t, row, "pfi_new", g.new_ok, g.pfi_new);
    num(t, row, "pfi_diff", g.diff_ok, g.diff);
    num(t, row, "pfi_diff_lo", g.diff_ok, g.diff_lo);
    num(t, row, "pfi_diff_hi", g.diff_ok, g.diff_hi);
    str(t, row, "pfi_beyond_noise",
        !g.diff_ok           ? "not comparable"
        : g.pfi_beyond_noise ? "yes"
                             : "no");
    num(t, row, "worst_cap_w", g.ncommon > 0, g.worst_cap_w);
    num(t, row, "worst_tput_change_pct", g.ncommon > 0, 100 * g.worst_change);
    str(t, row, "tput_beyond_noise",
        g.ncommon == 0        ? "no common cap"
        : g.tput_beyond_noise ? "yes"
                              : "no");
    num(t, row, "tput_per_w_change_pct", 1, 100 * g.tpw_change);
    str(t, row, "verdict", g.verdict == PFI_GATE_PASS ? "pass" : "fail");
  }
  if (rc == 0) {
    struct pfi_html *b = &r->body;
    pfi_html_puts(b, "<section id=\"gate\"><h2>Replay gate</h2>\n<p "
                     "id=\"gate-verdict\"><strong>Verdict: ");
    pfi_html_puts(b, ncmp > 0 && nfail == 0 ? "pass" : "FAIL");
    pfi_html_printf(b, "</strong> (%zu of %zu compared jobs fail; ", nfail,
                    ncmp);
    pfi_html_printf(b, "%zu of this page's jobs are not in the reference ",
                    only);
    pfi_html_text(b, ref_path);
    pfi_html_puts(b, "). <code>pfi gate REFERENCE NEW</code> gives the same "
                     "with exit status 0 or 1 for a pipeline.</p>\n");
    pfi_html_puts(b, "<div class=\"tabwrap\">");
    pfi_rtable_html(t, b);
    pfi_html_puts(b, "</div>\n</section>\n");
  }
  pfi_curveset_release(&ref);
  return rc;
}
