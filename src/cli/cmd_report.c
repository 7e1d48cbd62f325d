/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi report`: the HTML report and result tables of a campaign. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "objective_opt.h"
#include "opt.h"
#include "pfi/campaign.h"
#include "pfi/monotone.h"
#include "pfi/report.h"
#include "pfi/sim.h"
#include "pfi/store.h"
#include "pfi/trace.h"

/* The options, bound to these (src/base/opt.h); ro holds the library's
 * defaults (pfi_report_opts_init()) before parsing. */
static struct pfi_report_opts ro;
static struct obj_opt rob; /* the operator's page's objective */
static const char *out, *map, *unit;
static int quiet, paper, cluster_k;

static const struct pfi_opt_word clusters[] = {
    {"archtask", 0}, {"pooled", 1}, {NULL, 0}};

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("out", 'o', &out, "DIR",
                   "output directory, created with its parents when absent "
                   "(default: DIR itself; for a DB, its path without .db plus "
                   "-report)"),
    PFI_OPT_ULONG("seed", &ro.seed, 0, 0, "S",
                  "seed of the intervals and the simulation (default 1); the "
                  "same seed gives the same bytes"),
    PFI_OPT_SIZE("draws", &ro.ci_draws, 1, 10000000, "N",
                 "Monte Carlo draws per group for the 95 % intervals "
                 "(default 10000)"),
    PFI_OPT_SIZE("workloads", &ro.sim_workloads, 2, 1000000, "N",
                 "allocation simulation workloads (default " PFI_STR(
                     PFI_SIM_DEFAULT_WORKLOADS) ")"),
    PFI_OPT_SIZE("jobs-per-workload", &ro.sim_jobs, 1, 1000000, "N",
                 "jobs per workload (default " PFI_STR(PFI_SIM_DEFAULT_SIZE) ")"),
    {.lng = "cluster", .arg = PFI_ARG_REQ, .argname = "C",
     .help = "leave-one-cluster-out clusters: archtask (default, the paper's "
             "4 architecture x task clusters) or pooled (3 classes, dense "
             "pretraining and fine-tuning pooled)",
     .type = PFI_OT_CHOICE, .var = &cluster_k, .var2 = &ro.clusters,
     .words = clusters},
    PFI_OPT_FLAG("no-figures", 0, &ro.no_figures,
                 "tables only (figures need gnuplot)"),
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "curves column mapping (docs/formats.md), for a FILE.csv "
                   "or the operator's page"),
    PFI_OPT_STRING("unit", 0, &unit, "NAME",
                   "the throughput's unit on the operator's page"),
    PFI_OPT_FLAG("paper", 0, &paper,
                 "the paper-reproduction page even without the paper's "
                 "groups (DIR or DB)"),
    PFI_OPT_STRING("gate", 0, &ro.gate_reference, "REF.csv",
                   "on the operator's page, a replay-gate section: the input "
                   "against the reference sweep REF.csv (read with --map; "
                   "docs/gate.md)"),
    PFI_OPT_FLAG("quiet", 'q', &quiet, "no progress on stderr"),
    PFI_OPT_CALLBACK("objective", &rob, obj_opt_cb, "O",
                     "the operator's page: " OBJ_OPT_HELP_OBJECTIVE
                     " (the paper's report always sums raw throughput, as the "
                     "paper does)"),
    {.lng = "normalize", .arg = PFI_ARG_NONE,
     .help = "the same as --objective jobs", .type = PFI_OT_CALLBACK,
     .var = &rob, .cb = obj_opt_cb},
    PFI_OPT_CALLBACK("min-share", &rob, obj_opt_cb, "R",
                     "the operator's page: every job keeps at least R (0.5 or "
                     "50%) of its uncapped throughput"),
    PFI_OPT_STRING("weights", 0, &ro.weights, "FILE",
                   "the operator's page: per-job weights (a priority, a price "
                   "per unit): CSV with columns job and weight (the curves "
                   "file itself when it has them); they scale any objective"),
    {.lng = "curve", .arg = PFI_ARG_REQ, .argname = "FIT",
     .help = "the operator's page: monotone (a curve whose power or "
             "throughput falls as the cap rises is decided on by its "
             "monotone fit) or raw",
     .type = PFI_OT_CHOICE, .var = &ro.curve_fit, .words = obj_opt_curve_fits,
     .def = "monotone"},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "report",
    "usage: pfi report [options] FILE.csv|DB|DIR\n",
    "Builds report.html (one self-contained page: figures inline, no network)\n"
    "and every result table as NAME.csv and NAME.json, from\n"
    "  DIR  a directory holding curves.csv (required), features.csv and\n"
    "       mechanism.csv (optional: sections needing them say so), as\n"
    "       `pfi trace summarize` and `pfi reproduce` write them; or\n"
    "  DB   a trace store (pfi sweep --db): summarized first into the output\n"
    "       directory (curves.csv, features.csv, mechanism.csv).\n"
    "  FILE.csv  a curves file (any columns, with --map)\n"
    "Works for emulated campaigns and for a user's own sweeps on real GPUs;\n"
    "the first screen says which (curves.csv's source column). When none\n"
    "of the paper's groups is in the input (or for a FILE.csv), the page is\n"
    "the operator's: jobs ranked from most to least flexible, the\n"
    "flexibility capacity and the cap plan for a ladder of cuts, with no\n"
    "comparison to the paper; --paper builds the paper-reproduction page.\n",
    opts,
    "Exit status: 0 ok, 1 run-time failure (gnuplot missing or failing),\n"
    "2 bad usage or bad input (FILE:LINE:COLUMN).\n",
    0,
    NULL,
    NULL,
    1,
    1,
    "DB or DIR"};

/* A trace store is an SQLite file. */
static int is_store(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return 0;
  char m[16];
  size_t n = fread(m, 1, sizeof m, fp);
  fclose(fp);
  return n == 16 && memcmp(m, "SQLite format 3", 16) == 0;
}

static void progress(const char *msg, void *arg) {
  (void)arg;
  /* The library names its stage ("report: reading ..."), which under pfi
   * reproduce tells the report from the campaign; here the stage is the
   * command, which pfi_cli_err() names already. */
  static const char stage[] = "report: ";
  if (strncmp(msg, stage, sizeof stage - 1) == 0)
    msg += sizeof stage - 1;
  pfi_cli_err("%s", msg);
}

/* A directory of summaries: the paper's page when its groups are there
 * (or --paper), else the operator's. An exit status. */
static int report_dir(const char *in, const struct pfi_report_opts *o) {
  struct pfi_error err;
  pfi_error_clear(&err);
  char cpath[4200];
  snprintf(cpath, sizeof cpath, "%s/curves.csv", in);
  int is_paper = paper;
  if (!paper && pfi_report_has_paper_groups(cpath, map, &is_paper, &err) < 0)
    return pfi_cli_fail(&err);
  int rc = is_paper
               ? pfi_report_build(in, out ? out : in, o, &err)
               : pfi_report_operator(cpath, map, unit, out ? out : in, o, &err);
  return rc < 0 ? pfi_cli_fail(&err) : 0;
}

/* --out, or IN without `ext` and with "-report" in defout (n bytes). 0 or
 * PFI_EXIT_USAGE. */
static int default_out(const char *in, const char *ext, char *defout,
                       size_t size) {
  if (out)
    return 0;
  size_t n = strlen(in), l = strlen(ext);
  if (n > l && strcmp(in + n - l, ext) == 0)
    n -= l;
  if (n + 8 > size)
    return pfi_cli_usage("report", "path too long");
  snprintf(defout, size, "%.*s-report", (int)n, in);
  out = defout;
  return 0;
}

/* A trace store: summarized into the output directory first (curves.csv,
 * features.csv, mechanism.csv); the page is the paper's only when the
 * paper's groups are there. An exit status. */
static int report_store(const char *in, const struct pfi_report_opts *o) {
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_store *st = NULL;
  int rc = pfi_store_open(&st, in, PFI_STORE_READONLY, &err);
  if (rc >= 0 && (rc = pfi_report_mkdirs(out, &err)) < 0) {
    pfi_store_close(st);
    return pfi_cli_fail(&err);
  }
  if (rc < 0) {
    /* A file that is not a trace store is bad input, not a failure. */
    if (err.code == PFI_EDB)
      err.code = PFI_EPARSE;
    return pfi_cli_fail(&err);
  }
  if (!quiet)
    pfi_cli_err("summarizing %s into %s", in, out);
  struct pfi_summary_opts so;
  pfi_summary_opts_init(&so);
  rc = pfi_trace_summarize(st, out, &so, &err);
  pfi_store_close(st);
  int is_paper = paper;
  char cpath[8300];
  snprintf(cpath, sizeof cpath, "%s/curves.csv", out);
  if (rc >= 0 && !paper)
    rc = pfi_report_has_paper_groups(cpath, NULL, &is_paper, &err);
  if (rc >= 0)
    rc = is_paper ? pfi_report_build(out, out, o, &err)
                  : pfi_report_operator(cpath, NULL, unit, out, o, &err);
  return rc < 0 ? pfi_cli_fail(&err) : 0;
}

int cmd_report(int argc, char **argv) {
  pfi_report_opts_init(&ro);
  obj_opt_init(&rob);
  rob.obj = ro.objective;
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  ro.objective = rob.obj;
  struct pfi_report_opts o = ro;
  const char *in = argv[optind];
  if (!quiet)
    o.progress = progress;
  struct stat stbuf;
  if (stat(in, &stbuf) != 0) {
    struct pfi_error err;
    pfi_error_set(&err, PFI_ENOTFOUND, "%s: no such file or directory", in);
    return pfi_cli_fail(&err);
  }
  /* The default output directory for a file; at function scope because
   * `out` points into it until the path is printed at the end. */
  char defout[4096];
  int status;
  if (S_ISDIR(stbuf.st_mode)) {
    status = report_dir(in, &o);
  } else if (!is_store(in) &&
             !(strlen(in) > 3 && strcmp(in + strlen(in) - 3, ".db") == 0)) {
    /* A curves file: the operator's page, beside it by default. */
    if (paper)
      return pfi_cli_usage("report", "--paper needs a DIR or a DB");
    status = default_out(in, ".csv", defout, sizeof defout);
    if (!status) {
      struct pfi_error err;
      pfi_error_clear(&err);
      if (pfi_report_operator(in, map, unit, out, &o, &err) < 0)
        status = pfi_cli_fail(&err);
    }
  } else {
    status = default_out(in, ".db", defout, sizeof defout);
    if (!status)
      status = report_store(in, &o);
  }
  if (status)
    return status;
  printf("%s/report.html\n", out ? out : in);
  return 0;
}
