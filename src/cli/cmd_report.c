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

static const struct pfi_opt opts[] = {
    {"out", 'o', 'o', PFI_ARG_REQ, "DIR",
     "output directory, created with its parents when absent (default: DIR "
     "itself; for a DB, its path without .db plus -report)"},
    {"seed", 's', 0, PFI_ARG_REQ, "S",
     "seed of the intervals and the simulation (default 1); the same seed "
     "gives the same bytes"},
    {"draws", 'd', 0, PFI_ARG_REQ, "N",
     "Monte Carlo draws per group for the 95 % intervals (default 10000)"},
    {"workloads", 'w', 0, PFI_ARG_REQ, "N",
     "allocation simulation workloads (default " PFI_STR(
         PFI_SIM_DEFAULT_WORKLOADS) ")"},
    {"jobs-per-workload", 'j', 0, PFI_ARG_REQ, "N",
     "jobs per workload (default " PFI_STR(PFI_SIM_DEFAULT_SIZE) ")"},
    {"cluster", 'C', 0, PFI_ARG_REQ, "C",
     "leave-one-cluster-out clusters: archtask (default, the paper's 4 "
     "architecture x task clusters) or pooled (3 classes, dense pretraining "
     "and fine-tuning pooled)"},
    {"no-figures", 'n', 0, PFI_ARG_NONE, NULL,
     "tables only (figures need gnuplot)"},
    {"map", 'M', 0, PFI_ARG_REQ, "MAP",
     "curves column mapping (docs/formats.md), for a FILE.csv or the "
     "operator's page"},
    {"unit", 'U', 0, PFI_ARG_REQ, "NAME",
     "the throughput's unit on the operator's page"},
    {"paper", 'P', 0, PFI_ARG_NONE, NULL,
     "the paper-reproduction page even without the paper's groups (DIR or DB)"},
    {"gate", 'G', 0, PFI_ARG_REQ, "REF.csv",
     "on the operator's page, a replay-gate section: the input against the "
     "reference sweep REF.csv (read with --map; docs/gate.md)"},
    {"quiet", 'q', 'q', PFI_ARG_NONE, NULL, "no progress on stderr"},
    {"objective", OBJ_OPT_OBJECTIVE, 0, PFI_ARG_REQ, "O",
     "the operator's page: " OBJ_OPT_HELP_OBJECTIVE
     " (the paper's report always sums raw throughput, as the paper does)"},
    {"normalize", OBJ_OPT_NORMALIZE, 0, PFI_ARG_NONE, NULL,
     "the same as --objective jobs"},
    {"min-share", OBJ_OPT_MIN_SHARE, 0, PFI_ARG_REQ, "R",
     "the operator's page: every job keeps at least R (0.5 or 50%) of its "
     "uncapped throughput"},
    {"weights", OBJ_OPT_WEIGHTS, 0, PFI_ARG_REQ, "FILE",
     "the operator's page: per-job weights (a priority, a price per unit): "
     "CSV with columns job and weight (the curves file itself when it has "
     "them); they scale any objective"},
    {"curve", 'K', 0, PFI_ARG_REQ, "FIT",
     "the operator's page: monotone (default: a curve whose power or "
     "throughput falls as the cap rises is decided on by its monotone fit) "
     "or raw"},
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
    NULL};

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

int cmd_report(int argc, char **argv) {
  const char *cmd = "report";
  const char *out = NULL, *map = NULL, *unit = NULL;
  int quiet = 0, paper = 0, kind_given = 0;
  struct pfi_report_opts o;
  pfi_report_opts_init(&o);
  int c;
  unsigned long u;
  struct pfi_optparse op;
  pfi_opt_start(&op, &help, argc, argv);
  while ((c = pfi_opt_next(&op)) != -1) {
    switch (c) {
    case 'o':
      out = optarg;
      break;
    case 's':
      if (pfi_cli_parse_ulong(optarg, &u))
        return pfi_cli_usage(cmd, "--seed: not a non-negative integer: '%s'",
                             optarg);
      o.seed = u;
      break;
    case 'd':
      if (pfi_cli_parse_ulong(optarg, &u) || u == 0 || u > 10000000)
        return pfi_cli_usage(cmd, "--draws: expected 1..10000000, got '%s'",
                             optarg);
      o.ci_draws = u;
      break;
    case 'w':
      if (pfi_cli_parse_ulong(optarg, &u) || u < 2 || u > 1000000)
        return pfi_cli_usage(cmd, "--workloads: expected 2..1000000, got '%s'",
                             optarg);
      o.sim_workloads = u;
      break;
    case 'j':
      if (pfi_cli_parse_ulong(optarg, &u) || u == 0 || u > 1000000)
        return pfi_cli_usage(
            cmd, "--jobs-per-workload: expected 1..1000000, got '%s'", optarg);
      o.sim_jobs = u;
      break;
    case 'C':
      if (strcmp(optarg, "archtask") != 0 && strcmp(optarg, "pooled") != 0)
        return pfi_cli_usage(cmd,
                             "--cluster takes archtask or pooled, not "
                             "'%s'",
                             optarg);
      o.clusters = optarg;
      break;
    case 'n':
      o.no_figures = 1;
      break;
    case 'M':
      map = optarg;
      break;
    case 'U':
      unit = optarg;
      break;
    case 'P':
      paper = 1;
      break;
    case 'G':
      o.gate_reference = optarg;
      break;
    case 'q':
      quiet = 1;
      break;
    case OBJ_OPT_WEIGHTS:
      o.weights = optarg;
      break;
    case 'K': {
      enum pfi_curve_fit f;
      if (pfi_curve_fit_parse(optarg, &f) < 0)
        return pfi_cli_usage(cmd, "--curve must be monotone or raw, not '%s'",
                             optarg);
      o.curve_fit = (int)f;
      break;
    }
    case OBJ_OPT_OBJECTIVE:
    case OBJ_OPT_NORMALIZE:
    case OBJ_OPT_MIN_SHARE: {
      struct obj_opt ob;
      obj_opt_init(&ob);
      ob.obj = o.objective;
      ob.kind_given = kind_given;
      if (obj_opt_handle(&ob, c, optarg, cmd) != 0)
        return PFI_EXIT_USAGE;
      kind_given = ob.kind_given;
      o.objective = ob.obj;
      break;
    }
    case 'h':
      pfi_opt_print_help(&help, stdout);
      return 0;
    default: /* said by pfi_opt_next() */
      return PFI_EXIT_USAGE;
    }
  }
  if (optind != argc - 1)
    return pfi_cli_usage(cmd, "expected one DB-or-DIR argument");
  const char *in = argv[optind];
  if (!quiet)
    o.progress = progress;

  struct pfi_error err;
  pfi_error_clear(&err);
  struct stat stbuf;
  if (stat(in, &stbuf) != 0) {
    pfi_error_set(&err, PFI_ENOTFOUND, "%s: no such file or directory", in);
    return pfi_cli_fail(&err);
  }
  int rc;
  /* The default output directory for a store; at function scope because
   * `out` points into it until the path is printed at the end. */
  char defout[4096];
  if (S_ISDIR(stbuf.st_mode)) {
    char cpath[4200];
    snprintf(cpath, sizeof cpath, "%s/curves.csv", in);
    int is_paper = paper;
    if (!paper &&
        (rc = pfi_report_has_paper_groups(cpath, map, &is_paper, &err)) < 0)
      return pfi_cli_fail(&err);
    rc = is_paper
             ? pfi_report_build(in, out ? out : in, &o, &err)
             : pfi_report_operator(cpath, map, unit, out ? out : in, &o, &err);
  } else if (!is_store(in) &&
             !(strlen(in) > 3 && strcmp(in + strlen(in) - 3, ".db") == 0)) {
    /* A curves file: the operator's page, beside it by default. */
    if (paper)
      return pfi_cli_usage(cmd, "--paper needs a DIR or a DB");
    if (!out) {
      size_t n = strlen(in);
      if (n > 4 && strcmp(in + n - 4, ".csv") == 0)
        n -= 4;
      if (n + 8 > sizeof defout)
        return pfi_cli_usage(cmd, "path too long");
      snprintf(defout, sizeof defout, "%.*s-report", (int)n, in);
      out = defout;
    }
    rc = pfi_report_operator(in, map, unit, out, &o, &err);
  } else {
    /* A trace store: summarize into the output directory first. */
    if (!out) {
      size_t n = strlen(in);
      if (n > 3 && strcmp(in + n - 3, ".db") == 0)
        n -= 3;
      if (n + 8 > sizeof defout)
        return pfi_cli_usage(cmd, "path too long");
      snprintf(defout, sizeof defout, "%.*s-report", (int)n, in);
      out = defout;
    }
    struct pfi_store *st = NULL;
    rc = pfi_store_open(&st, in, PFI_STORE_READONLY, &err);
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
    /* The summaries first (curves.csv, features.csv, mechanism.csv); the
     * page is the paper's only when the paper's groups are there. */
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
      rc = is_paper ? pfi_report_build(out, out, &o, &err)
                    : pfi_report_operator(cpath, NULL, unit, out, &o, &err);
  }
  if (rc < 0)
    return pfi_cli_fail(&err);
  printf("%s/report.html\n", out ? out : in);
  return 0;
}
