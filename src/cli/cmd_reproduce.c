/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi reproduce`: the paper's campaign on the emulator, with the report. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/reproduce.h"
#include "pfi/sim.h"

/* The options, bound to these (src/base/opt.h); ro holds the library's
 * defaults (pfi_reproduce_opts_init()) before parsing. */
static struct pfi_reproduce_opts ro;
static int quiet, cluster_k;

static const struct pfi_opt_word clusters[] = {
    {"archtask", 0}, {"pooled", 1}, {NULL, 0}};

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("out", 'o', &ro.out_dir, "DIR",
                   "output directory (default out)"),
    PFI_OPT_ULONG("seed", &ro.seed, 0, 0, "S",
                  "seed of the emulator, intervals and simulation (default "
                  "1)"),
    PFI_OPT_STRING("jobs", 0, &ro.jobs_path, "FILE",
                   "job library (default data/jobs/jobs.csv)"),
    PFI_OPT_DURATION("duration", &ro.duration_s, PFI_DUR_DURATION, 0, 0, "D",
                     "run length in device time with its unit (default 30m; "
                     "90s, 1h also work; a bare 30 is refused)"),
    PFI_OPT_DURATION("interval", &ro.interval_s, PFI_DUR_INTERVAL, 0, 0, "D",
                     "sampling interval (default 5s)"),
    PFI_OPT_SIZE("draws", &ro.report.ci_draws, 1, 10000000, "N",
                 "Monte Carlo draws per group (default 10000)"),
    PFI_OPT_SIZE("workloads", &ro.report.sim_workloads, 2, 1000000, "N",
                 "simulation workloads (default " PFI_STR(
                     PFI_SIM_DEFAULT_WORKLOADS) ")"),
    PFI_OPT_SIZE("jobs-per-workload", &ro.report.sim_jobs, 1, 1000000, "N",
                 "jobs per workload (default " PFI_STR(PFI_SIM_DEFAULT_SIZE) ")"),
    {.lng = "cluster", .arg = PFI_ARG_REQ, .argname = "C",
     .help = "leave-one-cluster-out clusters: archtask (default, the paper's "
             "4 architecture x task clusters) or pooled (3 classes, dense "
             "pretraining and fine-tuning pooled)",
     .type = PFI_OT_CHOICE, .var = &cluster_k, .var2 = &ro.report.clusters,
     .words = clusters},
    PFI_OPT_FLAG("no-figures", 0, &ro.report.no_figures,
                 "tables only (figures need gnuplot)"),
    PFI_OPT_FLAG("quiet", 'q', &quiet, "no progress on stderr"),
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "reproduce",
    "usage: pfi reproduce [options]\n",
    "Runs the paper's whole campaign on the built-in H200/H100 emulator and\n"
    "writes a report. Every group of the job library is swept through the\n"
    "sweep harness (emu backend, virtual time: a 30-minute run takes\n"
    "milliseconds) into one trace store, summarized into curves and\n"
    "features, and analysed: PFI per group with 95 % intervals (three\n"
    "definitions), class medians and means, Kruskal-Wallis with Dunn/Holm,\n"
    "grid sensitivity, H100 vs H200, telemetry screening with\n"
    "Benjamini-Hochberg q-values, leverage, the predictor ablation (LOO and\n"
    "LOCO), the chosen model on held-out groups, and the allocation\n"
    "simulation for both mixes and every strategy.\n"
    "\n"
    "All results are EMULATED (the emulator is calibrated to the paper's\n"
    "published PFI values only) and are labelled so in every output.\n"
    "\n"
    "Writes into DIR: campaign.db (trace store), curves.csv, features.csv,\n"
    "mechanism.csv, every table as NAME.csv and NAME.json, and report.html\n"
    "(self-contained; opens from disk). The same seed gives the same bytes\n"
    "(except campaign.db, which records wall-clock times of cap changes).\n",
    opts,
    "Prints the report's path on standard output. Exit status: 0 ok,\n"
    "1 run-time failure, 2 bad usage or bad input (FILE:LINE:COLUMN).\n",
    0,
    NULL};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static void progress(const char *msg, void *arg) {
  (void)arg;
  pfi_cli_err("%s", msg);
}

int cmd_reproduce(int argc, char **argv) {
  pfi_reproduce_opts_init(&ro);
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_reproduce_opts o = ro;
  if (!quiet)
    o.progress = progress;
  /* The handlers only set a flag; the sweep notices it between samples and
   * restores the (emulated) caps before returning. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  o.stop = &stop_flag;
  int rc = pfi_reproduce_run(&o, &err);
  if (rc < 0)
    return pfi_cli_fail(&err);
  printf("%s/report.html\n", o.out_dir);
  return 0;
}
