/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi report`: the HTML report and result tables of a campaign. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfi/campaign.h"
#include "pfi/report.h"
#include "pfi/store.h"
#include "pfi/trace.h"

static const char usage_text[] =
    "usage: pfi report [options] FILE.csv|DB|DIR\n"
    "\n"
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
    "comparison to the paper; --paper builds the paper-reproduction page.\n"
    "\n"
    "Options:\n"
    "  --out DIR          output directory, created with its parents when\n"
    "                     absent (default: DIR itself; for a DB, its path\n"
    "                     without .db plus -report)\n"
    "  --seed S           seed of the intervals and the simulation (default "
    "1);\n"
    "                     the same seed gives the same bytes\n"
    "  --draws N          Monte Carlo draws per group for the 95 %% intervals\n"
    "                     (default 10000)\n"
    "  --workloads N      allocation simulation workloads (default 500)\n"
    "  --jobs-per-workload N\n"
    "                     jobs per workload (default 100)\n"
    "  --cluster C        leave-one-cluster-out clusters: archtask (default,\n"
    "                     the paper's 4 architecture x task clusters) or\n"
    "                     pooled (3 classes, dense pretraining and\n"
    "                     fine-tuning pooled)\n"
    "  --no-figures       tables only (figures need gnuplot)\n"
    "  --map MAP          curves column mapping (docs/formats.md), for a\n"
    "                     FILE.csv or the operator's page\n"
    "  --unit NAME        the throughput's unit on the operator's page\n"
    "  --paper            the paper-reproduction page even without the\n"
    "                     paper's groups (DIR or DB)\n"
    "  --gate REF.csv     on the operator's page, a replay-gate section:\n"
    "                     the input against the reference sweep REF.csv\n"
    "                     (read with --map; docs/gate.md)\n"
    "  -q, --quiet        no progress on stderr\n"
    "  -h, --help         this text\n"
    "\n"
    "Exit status: 0 ok, 1 run-time failure (gnuplot missing or failing),\n"
    "2 bad usage or bad input (FILE:LINE:COLUMN).\n";

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
  fprintf(stderr, "pfi: %s\n", msg);
}

int cmd_report(int argc, char **argv) {
  static const struct option opts[] = {
      {"out", required_argument, NULL, 'o'},
      {"seed", required_argument, NULL, 's'},
      {"draws", required_argument, NULL, 'd'},
      {"workloads", required_argument, NULL, 'w'},
      {"jobs-per-workload", required_argument, NULL, 'j'},
      {"cluster", required_argument, NULL, 'C'},
      {"no-figures", no_argument, NULL, 'n'},
      {"map", required_argument, NULL, 'M'},
      {"unit", required_argument, NULL, 'U'},
      {"paper", no_argument, NULL, 'P'},
      {"gate", required_argument, NULL, 'G'},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *cmd = "report";
  const char *out = NULL, *map = NULL, *unit = NULL;
  int quiet = 0, paper = 0;
  struct pfi_report_opts o;
  pfi_report_opts_init(&o);
  optind = 1;
  opterr = 0;
  int c;
  unsigned long u;
  while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
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
    case 'h':
      fputs(usage_text, stdout);
      return 0;
    case ':':
      return pfi_cli_usage(cmd, "option '%s' needs a value", argv[optind - 1]);
    default:
      return pfi_cli_usage(cmd, "unknown option '%s'", argv[optind - 1]);
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
      fprintf(stderr, "pfi: summarizing %s into %s\n", in, out);
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
