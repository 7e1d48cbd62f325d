/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi gate REFERENCE NEW`: the replay gate (gate.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/alloc.h"
#include "pfi/gate.h"
#include "pfi/jobcurves.h"

/* The options, bound to these (src/base/opt.h); go holds the library's
 * defaults (pfi_gate_opts_init()) before parsing. */
static struct pfi_gate_opts go;
static const char *map, *new_map, *unit;
static int strict, fmt;
static struct pfi_noise given;

/* --tolerance pfi=R,tput=R. */
static int tol_cb(const struct pfi_opt *o, const char *s, char *why,
                  size_t n) {
  char *dup = strdup(s);
  if (!dup) {
    snprintf(why, n, "out of memory");
    return -1;
  }
  int rc = 0;
  char *save = NULL;
  for (char *t = strtok_r(dup, ",", &save); t && rc == 0;
       t = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(t, '=');
    double v;
    struct pfi_error e;
    if (!eq) {
      snprintf(why, n, "expected pfi=R or tput=R, got '%s'", t);
      rc = -1;
      break;
    }
    *eq = '\0';
    if (pfi_cut_parse(eq + 1, &v, &e) < 0) {
      snprintf(why, n, "%s: %s", t, e.msg);
      rc = -1;
      break;
    }
    if (strcmp(t, "pfi") == 0)
      go.pfi_tol = v;
    else if (strcmp(t, "tput") == 0)
      go.tput_tol = v;
    else {
      snprintf(why, n, "unknown '%s' (pfi or tput)", t);
      rc = -1;
    }
  }
  free(dup);
  return rc;
}

/* --noise P,T: two percentages. */
static int noise_cb(const struct pfi_opt *o, const char *v, char *why,
                    size_t n) {
  struct pfi_error err;
  double *x = NULL;
  size_t nx = 0;
  if (pfi_cli_parse_numlist(v, &x, &nx, &err) < 0 || nx != 2 ||
      !(x[0] >= 0) || !(x[1] >= 0) || x[0] > 100 || x[1] > 100) {
    free(x);
    snprintf(why, n, "expected P,T: two percentages from 0 to 100, got '%s'",
             v);
    return -1;
  }
  pfi_noise_given(&given, x[0] / 100.0, x[1] / 100.0);
  free(x);
  return 0;
}

static const struct pfi_opt opts[] = {
    PFI_OPT_CALLBACK("tolerance", NULL, tol_cb, "L",
                     "pfi=R (relative PFI change, default 10%) and/or tput=R "
                     "(throughput drop at a common cap, default 2%)"),
    {.lng = "ci", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "Monte Carlo draws", .type = PFI_OT_SIZE, .var = &go.draws,
     .lo = 1, .hi = 1000000, .def = "2000"},
    PFI_OPT_ULONG("seed", &go.seed, 0, 0, "S",
                  "seed (default 1; NEW is drawn with S + 1)"),
    PFI_OPT_FLAG("strict", 0, &strict,
                 "a job in only one of the files fails the gate (by default "
                 "it is listed and left out of the verdict)"),
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "column mapping of both curves files (formats.md)"),
    PFI_OPT_STRING("new-map", 0, &new_map, "MAP",
                   "column mapping of NEW when it differs"),
    PFI_OPT_STRING("unit", 0, &unit, "NAME",
                   "throughput unit in the output (default: as read)"),
    PFI_OPT_CALLBACK("noise", NULL, noise_cb, "P,T",
                     "relative noise, in %, of points without power_sd_w / "
                     "tokens_sd in both files (default: estimated from each "
                     "file, docs/index-and-stats.md)"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "gate",
    "usage: pfi gate REFERENCE NEW [--tolerance pfi=R,tput=R] [--ci N]\n"
    "                [--seed S] [--strict] [--map MAP] [--new-map MAP]\n"
    "                [--unit NAME] [--noise P,T] [--format F]\n",
    "After a driver, training-stack, hardware or policy change, compares a\n"
    "new sweep of representative jobs (NEW) with the reference (REFERENCE):\n"
    "each a curves CSV or a trace store. Jobs are matched by name. Per job:\n"
    "the ratio PFI of each sweep with its 95 % interval, the difference and\n"
    "whether it is beyond noise (its 95 % Monte Carlo interval excludes 0);\n"
    "the largest throughput drop at a cap both sweeps measured and whether\n"
    "it is beyond noise (more than z standard errors, z from a 2.5 % level\n"
    "split over the common caps); throughput\n"
    "per watt at the uncapped point; a verdict. A job fails when a change\n"
    "beyond noise is also beyond tolerance. docs/gate.md has the statistics.\n",
    opts,
    "Exit status 0: every compared job passes; 1: a job fails (or none\n"
    "could be compared); 2: bad usage or bad input.\n",
    0,
    NULL,
    NULL,
    2,
    2,
    "REFERENCE and NEW"};


static json_t *num(int ok, double v) {
  return ok && isfinite(v) ? json_real(v) : json_null();
}

/* The two sweeps, each one's noise, and the comparison of the jobs they
 * share. */
struct gate {
  const char *rpath, *npath;
  struct pfi_curveset rs, ns;
  const char *rprov, *nprov; /* emulated, measured or input */
  struct pfi_noise rnz, nnz;
  struct pfi_gate_job *res; /* per reference job */
  long *match;              /* its index in ns, or -1 */
  size_t ncmp, nfail, only_ref, only_new;
  int pass;
};

/* Both sweeps and their noise (--noise for both, or each one's own: the
 * PFI rule, the draws and the throughput check's standard errors). An exit
 * status, the message printed. */
static int load_sweeps(struct gate *g, int have_given) {
  struct pfi_error err;
  pfi_error_clear(&err);
  int rem = 0, rme = 0, nem = 0, nme = 0;
  if (pfi_curves_read_any(&g->rs, g->rpath, map, &rem, &rme, &err) < 0 ||
      pfi_curves_read_any(&g->ns, g->npath, new_map ? new_map : map, &nem,
                          &nme, &err) < 0)
    return pfi_cli_fail(&err);
  g->rprov = rem ? "emulated" : rme ? "measured" : "input";
  g->nprov = nem ? "emulated" : nme ? "measured" : "input";
  if (!unit)
    unit = g->rs.unit ? g->rs.unit : "tokens/s";
  if (have_given) {
    g->rnz = g->nnz = given;
  } else {
    pfi_noise_estimate(&g->rs, &g->rnz);
    pfi_noise_estimate(&g->ns, &g->nnz);
  }
  go.ref_noise = &g->rnz;
  go.new_noise = &g->nnz;
  return PFI_EXIT_OK;
}

/* Each reference job against the new sweep's job of its name, and the
 * verdict. An exit status, the message printed. */
static int compare(struct gate *g) {
  struct pfi_error err;
  pfi_error_clear(&err);
  g->res = calloc(g->rs.n + 1, sizeof *g->res);
  g->match = calloc(g->rs.n + 1, sizeof *g->match);
  if (!g->res || !g->match) {
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    return pfi_cli_fail(&err);
  }
  for (size_t i = 0; i < g->rs.n; i++) {
    struct pfi_curve *nc = pfi_curveset_find(&g->ns, g->rs.c[i].job);
    g->match[i] = nc ? (long)(nc - g->ns.c) : -1;
    if (!nc) {
      g->only_ref++;
      continue;
    }
    if (pfi_gate_compare(&g->rs.c[i], nc, &go, &g->res[i], &err) < 0)
      return pfi_cli_fail(&err);
    g->ncmp++;
    g->nfail += g->res[i].verdict == PFI_GATE_FAIL;
  }
  for (size_t j = 0; j < g->ns.n; j++)
    if (!pfi_curveset_find(&g->rs, g->ns.c[j].job))
      g->only_new++;
  g->pass = g->ncmp > 0 && g->nfail == 0 &&
            !(strict && (g->only_ref || g->only_new));
  return PFI_EXIT_OK;
}

/* One compared job's JSON object. */
static json_t *json_job(const char *job, const struct pfi_gate_job *g) {
  json_t *e = json_object();
  json_object_set_new(e, "job", pfi_cli_json_str(job));
  json_object_set_new(e, "pfi_ref", num(g->ref_ok, g->pfi_ref));
  json_object_set_new(e, "pfi_ref_ci95",
                      g->ref_ok ? json_pack("[ff]", g->ref_lo, g->ref_hi)
                                : json_null());
  json_object_set_new(e, "pfi_new", num(g->new_ok, g->pfi_new));
  json_object_set_new(e, "pfi_new_ci95",
                      g->new_ok ? json_pack("[ff]", g->new_lo, g->new_hi)
                                : json_null());
  json_object_set_new(e, "pfi_diff", num(g->diff_ok, g->diff));
  json_object_set_new(e, "pfi_diff_ci95",
                      g->diff_ok ? json_pack("[ff]", g->diff_lo, g->diff_hi)
                                 : json_null());
  json_object_set_new(e, "pfi_beyond_noise", json_boolean(g->pfi_beyond_noise));
  json_object_set_new(e, "pfi_ref_points",
                      json_integer((json_int_t)g->ref_points));
  json_object_set_new(e, "pfi_new_points",
                      json_integer((json_int_t)g->new_points));
  json_object_set_new(
      e, "pfi_ref_undefined",
      g->ref_ok ? json_null()
                : json_string(pfi_index_undefined_reason(g->ref_undef)));
  json_object_set_new(
      e, "pfi_new_undefined",
      g->new_ok ? json_null()
                : json_string(pfi_index_undefined_reason(g->new_undef)));
  json_object_set_new(e, "tput_z", num(g->ncommon, g->tput_z));
  json_object_set_new(e, "common_caps", json_integer((json_int_t)g->ncommon));
  json_object_set_new(e, "worst_cap_w", num(g->ncommon, g->worst_cap_w));
  json_object_set_new(e, "worst_tput_change", num(g->ncommon, g->worst_change));
  json_object_set_new(e, "worst_tput_sigma", num(g->ncommon, g->worst_sigma));
  json_object_set_new(e, "tput_beyond_noise",
                      json_boolean(g->tput_beyond_noise));
  json_object_set_new(e, "tput_per_w_ref", json_real(g->tpw_ref));
  json_object_set_new(e, "tput_per_w_new", json_real(g->tpw_new));
  json_object_set_new(e, "tput_per_w_change", json_real(g->tpw_change));
  json_object_set_new(
      e, "verdict", json_string(g->verdict == PFI_GATE_PASS ? "pass" : "fail"));
  return e;
}

static int print_json(const struct gate *g) {
  json_t *j = json_object(), *arr = json_array(), *miss = json_array();
  json_object_set_new(j, "reference", pfi_cli_json_str(g->rpath));
  json_object_set_new(j, "new", pfi_cli_json_str(g->npath));
  json_object_set_new(j, "reference_source", json_string(g->rprov));
  json_object_set_new(j, "new_source", json_string(g->nprov));
  json_object_set_new(j, "unit", pfi_cli_json_str(unit));
  json_object_set_new(j, "pfi_tolerance", json_real(go.pfi_tol));
  json_object_set_new(j, "tput_tolerance", json_real(go.tput_tol));
  json_object_set_new(j, "draws", json_integer((json_int_t)go.draws));
  json_object_set_new(j, "seed", json_integer((json_int_t)go.seed));
  for (int k = 0; k < 2; k++) {
    const struct pfi_noise *z = k ? &g->nnz : &g->rnz;
    json_object_set_new(j, k ? "new_noise" : "reference_noise",
                        json_pack("{sfsfsssI}", "rel_sd_power",
                                  z->rel_sd_power, "rel_sd_tokens",
                                  z->rel_sd_tokens, "source",
                                  pfi_noise_source_name(z->source), "dof",
                                  (json_int_t)z->dof));
  }
  for (size_t i = 0; i < g->rs.n; i++) {
    if (g->match[i] < 0)
      json_array_append_new(miss, pfi_cli_json_str(g->rs.c[i].job));
    else
      json_array_append_new(arr, json_job(g->rs.c[i].job, &g->res[i]));
  }
  json_object_set_new(j, "jobs", arr);
  json_object_set_new(j, "only_in_reference", miss);
  json_t *mn = json_array();
  for (size_t k = 0; k < g->ns.n; k++)
    if (!pfi_curveset_find(&g->rs, g->ns.c[k].job))
      json_array_append_new(mn, pfi_cli_json_str(g->ns.c[k].job));
  json_object_set_new(j, "only_in_new", mn);
  json_object_set_new(j, "compared", json_integer((json_int_t)g->ncmp));
  json_object_set_new(j, "failed", json_integer((json_int_t)g->nfail));
  json_object_set_new(j, "verdict", json_string(g->pass ? "pass" : "fail"));
  return pfi_cli_print_json(j) ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* One column list: the terminal's composite cells (value [interval]) and
 * the CSV's numbers are columns of their own, shown per format; '-' where
 * a value does not exist. */
enum {
  C_JOB, T_REF, T_NEW, T_DIFF, T_WORST, T_TPW, T_VERDICT, C_REF, C_REFLO,
  C_REFHI, C_NEW, C_NEWLO, C_NEWHI, C_DIFF, C_DIFFLO, C_DIFFHI, C_PBN,
  C_NCOMMON, C_WCAP, C_WCHG, C_WSIG, C_TBN, C_TPWREF, C_TPWNEW, C_TPWCHG,
  C_VERDICT, C_RPTS, C_NPTS, C_RWHY, C_NWHY, C_TZ, C_RNS, C_RNP, C_RNT,
  C_NNS, C_NNP, C_NNT, C_N
};
#define T(n, w)                                                                \
  {.name = n, .kind = PFI_RESTAB_TEXT, .formats = PFI_RESTAB_IN_TERM}
#define G(n)                                                                   \
  {.name = n, .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 10,                \
   .formats = PFI_RESTAB_IN_CSV}
#define I(n) {.name = n, .kind = PFI_RESTAB_INT, .formats = PFI_RESTAB_IN_CSV}
static const struct pfi_restab_col cols[C_N] = {
    [C_JOB] = {.name = "job", .kind = PFI_RESTAB_TEXT, .max_width = 36},
    [T_REF] = T("pfi ref [95%]", 22),
    [T_NEW] = T("pfi new [95%]", 22),
    [T_DIFF] = T("diff [95%]", 24),
    [T_WORST] = T("worst tput @cap", 24),
    [T_TPW] = T("tput/W", 10),
    [T_VERDICT] = T("verdict", 0),
    [C_REF] = G("pfi_ref"),
    [C_REFLO] = G("pfi_ref_lo"),
    [C_REFHI] = G("pfi_ref_hi"),
    [C_NEW] = G("pfi_new"),
    [C_NEWLO] = G("pfi_new_lo"),
    [C_NEWHI] = G("pfi_new_hi"),
    [C_DIFF] = G("pfi_diff"),
    [C_DIFFLO] = G("pfi_diff_lo"),
    [C_DIFFHI] = G("pfi_diff_hi"),
    [C_PBN] = I("pfi_beyond_noise"),
    [C_NCOMMON] = I("common_caps"),
    [C_WCAP] = G("worst_cap_w"),
    [C_WCHG] = G("worst_tput_change"),
    [C_WSIG] = G("worst_tput_sigma"),
    [C_TBN] = I("tput_beyond_noise"),
    [C_TPWREF] = G("tput_per_w_ref"),
    [C_TPWNEW] = G("tput_per_w_new"),
    [C_TPWCHG] = G("tput_per_w_change"),
    [C_VERDICT] = {.name = "verdict", .kind = PFI_RESTAB_TEXT,
                   .formats = PFI_RESTAB_IN_CSV},
    [C_RPTS] = I("pfi_ref_points"),
    [C_NPTS] = I("pfi_new_points"),
    [C_RWHY] = {.name = "pfi_ref_undefined", .kind = PFI_RESTAB_TEXT,
                .formats = PFI_RESTAB_IN_CSV},
    [C_NWHY] = {.name = "pfi_new_undefined", .kind = PFI_RESTAB_TEXT,
                .formats = PFI_RESTAB_IN_CSV},
    [C_TZ] = G("tput_z"),
    [C_RNS] = {.name = "ref_noise_source", .kind = PFI_RESTAB_TEXT,
               .formats = PFI_RESTAB_IN_CSV},
    [C_RNP] = G("ref_noise_rel_sd_power"),
    [C_RNT] = G("ref_noise_rel_sd_tokens"),
    [C_NNS] = {.name = "new_noise_source", .kind = PFI_RESTAB_TEXT,
               .formats = PFI_RESTAB_IN_CSV},
    [C_NNP] = G("new_noise_rel_sd_power"),
    [C_NNT] = G("new_noise_rel_sd_tokens"),
};
#undef T
#undef G
#undef I

/* A PFI with its interval into the terminal's column t and the CSV's
 * three columns from c. */
static void pfi_cells(struct pfi_restab *tab, int t, int c, double v,
                      double lo, double hi, size_t points) {
  pfi_restab_textf(tab, t, "%.3f [%.3f, %.3f]%s", v, lo, hi,
                   points == 1 ? " 1pt" : "");
  pfi_restab_num(tab, c, v);
  pfi_restab_num(tab, c + 1, lo);
  pfi_restab_num(tab, c + 2, hi);
}

/* The noise each sweep's points without sd columns used ('-' when every
 * point has its own). */
static void noise_cells(struct pfi_restab *tab, int c,
                        const struct pfi_noise *z) {
  pfi_restab_text(tab, c, pfi_noise_source_name(z->source));
  if (z->source != PFI_NOISE_COLUMNS) {
    pfi_restab_num(tab, c + 1, z->rel_sd_power);
    pfi_restab_num(tab, c + 2, z->rel_sd_tokens);
  }
}

/* One compared job's row. */
static void table_row(struct pfi_restab *tab, const struct gate *gt,
                      size_t i) {
  const struct pfi_gate_job *g = &gt->res[i];
  pfi_restab_row(tab);
  pfi_restab_text(tab, C_JOB, gt->rs.c[i].job);
  pfi_restab_int(tab, C_RPTS, (long long)g->ref_points);
  pfi_restab_int(tab, C_NPTS, (long long)g->new_points);
  if (!g->ref_ok)
    pfi_restab_text(tab, C_RWHY, pfi_index_undefined_reason(g->ref_undef));
  if (!g->new_ok)
    pfi_restab_text(tab, C_NWHY, pfi_index_undefined_reason(g->new_undef));
  if (g->ncommon)
    pfi_restab_num(tab, C_TZ, g->tput_z);
  noise_cells(tab, C_RNS, &gt->rnz);
  noise_cells(tab, C_NNS, &gt->nnz);
  if (g->ref_ok)
    pfi_cells(tab, T_REF, C_REF, g->pfi_ref, g->ref_lo, g->ref_hi,
              g->ref_points);
  if (g->new_ok)
    pfi_cells(tab, T_NEW, C_NEW, g->pfi_new, g->new_lo, g->new_hi,
              g->new_points);
  if (g->diff_ok) {
    pfi_restab_textf(tab, T_DIFF, "%+.3f [%+.3f, %+.3f]%s", g->diff,
                     g->diff_lo, g->diff_hi, g->pfi_beyond_noise ? " *" : "");
    pfi_restab_num(tab, C_DIFF, g->diff);
    pfi_restab_num(tab, C_DIFFLO, g->diff_lo);
    pfi_restab_num(tab, C_DIFFHI, g->diff_hi);
  } else {
    pfi_restab_text(tab, T_DIFF, "not comparable");
  }
  pfi_restab_int(tab, C_PBN, g->pfi_beyond_noise);
  pfi_restab_int(tab, C_NCOMMON, (long long)g->ncommon);
  if (g->ncommon) {
    pfi_restab_textf(tab, T_WORST, "%+.2f %% @%g W%s", 100 * g->worst_change,
                     g->worst_cap_w, g->tput_beyond_noise ? " *" : "");
    pfi_restab_num(tab, C_WCAP, g->worst_cap_w);
    pfi_restab_num(tab, C_WCHG, g->worst_change);
    pfi_restab_num(tab, C_WSIG, g->worst_sigma);
  } else {
    pfi_restab_text(tab, T_WORST, "no common cap");
  }
  pfi_restab_textf(tab, T_TPW, "%+.1f %%", 100 * g->tpw_change);
  pfi_restab_int(tab, C_TBN, g->tput_beyond_noise);
  pfi_restab_num(tab, C_TPWREF, g->tpw_ref);
  pfi_restab_num(tab, C_TPWNEW, g->tpw_new);
  pfi_restab_num(tab, C_TPWCHG, g->tpw_change);
  int ok = g->verdict == PFI_GATE_PASS;
  pfi_restab_text(tab, T_VERDICT, ok ? "pass" : "FAIL");
  pfi_restab_text(tab, C_VERDICT, ok ? "pass" : "fail");
}

/* The terminal's lines above the table: the sweeps, the tolerances and
 * each sweep's noise. */
static void print_head(const struct gate *g) {
  printf("gate: %s (%s) -> %s (%s); tolerance PFI %g %%, throughput %g "
         "%%; %zu draws, seed %lu\n",
         g->rpath, g->rprov, g->npath, g->nprov, 100 * go.pfi_tol,
         100 * go.tput_tol, go.draws, go.seed);
  for (int k = 0; k < 2; k++) {
    const struct pfi_noise *z = k ? &g->nnz : &g->rnz;
    if (z->source == PFI_NOISE_COLUMNS) {
      printf("noise, %s: each point's own (sd columns)\n",
             k ? "new" : "reference");
      continue;
    }
    printf("noise, %s: %.3g %% power, %.3g %% throughput (%s",
           k ? "new" : "reference", 100 * z->rel_sd_power,
           100 * z->rel_sd_tokens, pfi_noise_source_name(z->source));
    if (z->dof)
      printf(", %zu points, %zu degrees of freedom", z->points, z->dof);
    printf(")\n");
  }
}

/* The terminal's lines below the table: the key, the jobs not compared
 * and the verdict. */
static void print_foot(const struct gate *g) {
  printf("(* beyond noise; 1pt: a PFI from one capped point; tput/W: change "
         "of throughput per watt, uncapped; throughput in %s)\n",
         unit);
  if (g->only_ref || g->only_new)
    printf("%zu jobs only in the reference, %zu only in the new sweep%s\n",
           g->only_ref, g->only_new,
           strict ? " (fail: --strict)" : " (not compared)");
  printf("verdict: %s (%zu of %zu compared jobs fail)\n",
         g->pass ? "pass" : "FAIL", g->nfail, g->ncmp);
}

/* The terminal table or CSV. */
static int print_table(const struct gate *g) {
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  for (size_t i = 0; i < g->rs.n && !tab.failed; i++)
    if (g->match[i] >= 0)
      table_row(&tab, g, i);
  if (fmt == PFI_FMT_TABLE)
    print_head(g);
  int status = pfi_cli_print_table(&tab, fmt) != PFI_EXIT_OK ? PFI_EXIT_FAIL
                                                             : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  if (fmt == PFI_FMT_TABLE)
    print_foot(g);
  return status;
}

int cmd_gate(int argc, char **argv) {
  pfi_gate_opts_init(&go);
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct gate gt, *g = &gt;
  memset(g, 0, sizeof *g);
  g->rpath = argv[optind];
  g->npath = argv[optind + 1];
  if (pfi_cli_input("REFERENCE", g->rpath) || pfi_cli_input("NEW", g->npath))
    return PFI_EXIT_USAGE;
  pfi_curveset_init(&g->rs);
  pfi_curveset_init(&g->ns);
  int status = load_sweeps(g, pfi_opt_given(&op, "noise") > 0);
  if (status == PFI_EXIT_OK)
    status = compare(g);
  if (status == PFI_EXIT_OK) {
    /* The output's own failure is not the verdict's: the exit status is
     * the verdict unless standard output could not be written. */
    if (fmt == PFI_FMT_JSON)
      print_json(g);
    else
      print_table(g);
    status = fflush(stdout) != 0 ? PFI_EXIT_FAIL
             : g->pass           ? PFI_EXIT_OK
                                 : PFI_EXIT_FAIL;
  }
  free(g->res);
  free(g->match);
  pfi_curveset_release(&g->rs);
  pfi_curveset_release(&g->ns);
  return status;
}
