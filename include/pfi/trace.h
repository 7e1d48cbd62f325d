/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * From a trace store to the files the analysis reads: curves.csv (one row
 * per complete run: job, cap_w, power_w, tokens_per_s, gpus, power_sd_w,
 * tokens_sd, runs, source) and features.csv (one row per job from its
 * uncapped run, the columns of docs/sweep.md), and a CSV export of the raw
 * samples.
 *
 * Each run is segmented into the paper's phases (include/pfi/phase.h):
 * warmup (frame buffer under `warmup_fb_gib`), startup (loaded, utilization
 * 0) and training (utilization >= `train_util_pct`); aggregates are the
 * mean of the top `top_fraction` of training-phase samples.
 */
#ifndef PFI_TRACE_H
#define PFI_TRACE_H

#include <stdio.h>

#include "pfi/error.h"
#include "pfi/store.h"

struct pfi_summary_opts {
  double warmup_fb_gib;  /* default 10 GiB */
  double train_util_pct; /* default 50 % */
  double top_fraction;   /* default 0.10 */
  /* Optional outputs (NULL when not wanted): complete runs left out for
   * want of training-phase samples or throughput, and jobs left out of
   * curves.csv for having fewer than two usable runs. */
  long *runs_skipped;
  long *jobs_without_curve;
  /* Summarized runs marked as having lost throughput reports (meta key
   * run.ID.tput_lost, written by the sweep), and the first such run's id. */
  long *runs_tput_lost;
  long long *first_tput_lost;
  /* 1 when curves.csv was written, 0 when no job had a curve (then no
   * curves.csv is written, and one left from an earlier summary is
   * removed: an output file is never empty). */
  int *curves_written;
};

/* Fills the paper's defaults. */
void pfi_summary_opts_init(struct pfi_summary_opts *o);

/*
 * Writes the summaries of a store into `out_dir` (created when absent):
 * curves.csv, features.csv and mechanism.csv (pfi_trace_mechanism()). Runs
 * that are not complete are ignored; a job needs at least one complete
 * run. Returns the number of jobs written, PFI_ENOTFOUND when the store
 * holds no complete run or no run with training-phase samples (then no
 * file is written; the message says why), PFI_EIO, PFI_EDB.
 */
int pfi_trace_summarize(struct pfi_store *st, const char *out_dir,
                        const struct pfi_summary_opts *o,
                        struct pfi_error *err);

/* Writes every sample as CSV (run_id, job, cap_w, gpu, t_s, then one
 * column per field, empty when not valid) to `out`. Returns the row count
 * or an error. */
long pfi_trace_export(struct pfi_store *st, FILE *out, struct pfi_error *err);

/*
 * Writes `path` (CSV: job, cap_w, sm_clock_mhz, mem_clock_mhz, power_w,
 * source) from the complete runs of a trace store: for the newest complete
 * run of each (job, cap), the steady-state value of each clock on the
 * run's first recorded GPU (the paper samples local rank 0), by the same
 * phase segmentation and top-10 % mean as the summaries (phase.h). A clock
 * without any valid training-phase sample is left empty. Rows are sorted by
 * job, then cap. Returns the number of rows, or PFI_EDB, PFI_EIO,
 * PFI_ENOMEM.
 */
int pfi_trace_mechanism(struct pfi_store *st, const char *path,
                        struct pfi_error *err);

#endif
