/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * `pfi reproduce` as a library call: the paper's whole campaign on the
 * emulator, end to end. Every job-library group is swept through the real
 * sweep harness (sweep.h) on the `emu` backend in virtual time into one
 * trace store, the store is summarized (trace.h: curves, features and the
 * per-run clocks of mechanism.csv) and the report with every table is
 * built (pfi_report_build), both through pfi_campaign_report() (campaign.h,
 * the one module that joins the stages).
 *
 * Everything it produces is EMULATED and labelled so. The same options and
 * seed give the same bytes in every table and in report.html; the trace
 * store itself (campaign.db) records wall-clock times of cap changes (a
 * safety record) and is excluded from that promise.
 */
#ifndef PFI_REPRODUCE_H
#define PFI_REPRODUCE_H

#include <signal.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/report.h"

struct pfi_reproduce_opts {
  const char *out_dir;   /* output directory (created); default "out" */
  unsigned long seed;    /* campaign seed (emulator, intervals, simulation) */
  const char *jobs_path; /* job library; NULL: data/jobs/jobs.csv */
  double duration_s;     /* per run, device seconds; 0: 1800 (the paper's) */
  double interval_s;     /* sampling interval; 0: 5 s (the paper's) */
  struct pfi_report_opts report; /* report options; its seed is set from
                                    `seed` and progress from below */
  /* Optional progress messages (the CLI prints them on stderr). */
  void (*progress)(const char *msg, void *arg);
  void *progress_arg;
  /* Set by the caller's signal handlers: the sweep stops, caps restored. */
  volatile sig_atomic_t *stop;
};

/* Fills the defaults (out, seed 1, the paper's run length and interval). */
void pfi_reproduce_opts_init(struct pfi_reproduce_opts *o);

/*
 * Runs the campaign into o->out_dir: campaign.db (the trace store; a
 * previous one there is replaced), curves.csv, features.csv,
 * mechanism.csv, every result table (NAME.csv, NAME.json) and
 * report.html. Returns 0, PFI_EINTR when *stop interrupted the sweep, or
 * the first error of the job library (PFI_EPARSE with file:line:column),
 * the sweep, the summaries or the report.
 */
int pfi_reproduce_run(const struct pfi_reproduce_opts *o,
                      struct pfi_error *err);

#endif
