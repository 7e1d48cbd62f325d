/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Phase segmentation of one GPU telemetry time series, and the steady-state
 * aggregate of a run (docs/sweep.md, "`pfi trace`").
 *
 * A training run's samples fall into phases:
 *   warmup    frame-buffer use below `loaded_mib` (10 GiB): the process is
 *             starting, the weights are not in GPU memory yet;
 *   startup   weights loaded, before the first training sample (GPU
 *             utilization 0 while data loaders, compilation and the first
 *             collectives are set up);
 *   training  from the first sample with GPU utilization >= `train_util`
 *             (50 %) on: every such sample;
 *   pause     after training began, a sample whose utilization fell below
 *             `train_util` (the evaluation at 10 min, the checkpoint at
 *             20 min, the end of the run).
 * The steady-state value of a metric is the mean of the top `top_frac`
 * (10 %) of its training-phase samples, which drops evaluations and
 * checkpoints that slip through the utilization threshold.
 *
 * `pfi emulate sweep` and `pfi trace summarize` both use this module, so an
 * emulated sweep and a recorded-then-summarized one agree.
 */
#ifndef PFI_PHASE_H
#define PFI_PHASE_H

#include <stddef.h>

#include "pfi/error.h"

enum pfi_phase {
  PFI_PHASE_WARMUP,
  PFI_PHASE_STARTUP,
  PFI_PHASE_TRAINING,
  PFI_PHASE_PAUSE
};

struct pfi_phase_params {
  double loaded_mib; /* frame buffer at or above which weights are loaded,
                        MiB; default 10240 (10 GiB) */
  double train_util; /* GPU utilization (%) at or above which a sample is
                        training; default 50 */
  double top_frac;   /* share of training samples averaged, 0 < f <= 1;
                        default 0.10 */
};

/* Fills `p` with the paper's defaults (10 GiB, 50 %, 10 %). */
void pfi_phase_params_init(struct pfi_phase_params *p);

/* "warmup", "startup", "training", "pause"; NULL for an unknown value. */
const char *pfi_phase_name(enum pfi_phase ph);

/*
 * Classifies the n samples of one GPU, in time order. `fb_used_mib` may be
 * NULL or hold NaN for samples without a valid frame-buffer reading (then
 * the sample counts as loaded: warmup cannot be told apart); `gpu_util`
 * NaN counts as "not training". `p` NULL means the defaults. Writes n
 * phases to `out` (caller's array). Returns 0, or PFI_EINVAL for NULL
 * arrays with n > 0 or parameters out of range.
 */
int pfi_phase_segment(const double *fb_used_mib, const double *gpu_util,
                      size_t n, const struct pfi_phase_params *p,
                      enum pfi_phase *out, struct pfi_error *err);

/*
 * Steady-state aggregate: the mean of the top ceil(top_frac * m) values
 * among the m training-phase samples of `values` (NaN values skipped).
 * `used` (may be NULL) receives how many values were averaged. Returns 0,
 * PFI_ENOTFOUND when no training-phase sample has a finite value, PFI_EINVAL
 * for bad arguments, PFI_ENOMEM.
 */
int pfi_phase_top_mean(const double *values, const enum pfi_phase *phase,
                       size_t n, const struct pfi_phase_params *p, double *mean,
                       size_t *used, struct pfi_error *err);

/*
 * Standard error of that aggregate: the sample standard deviation of the
 * same top ceil(top_frac * m) training-phase values divided by the square
 * root of their count (the intra-run variation the paper's Monte Carlo
 * intervals resample). *sem is -1 (unknown) when fewer than 2 values are
 * averaged. Returns 0 or the errors of pfi_phase_top_mean().
 */
int pfi_phase_top_sem(const double *values, const enum pfi_phase *phase,
                      size_t n, const struct pfi_phase_params *p, double *sem,
                      struct pfi_error *err);

#endif
