/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Shared by fit, predict, allocate, replay and simulate: a curves file joined with a
 * features file by job id, each job's true PFI, and PFI estimates from a
 * telemetry model.
 */
#ifndef PFI_CLI_JOBDATA_H
#define PFI_CLI_JOBDATA_H

#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/features.h"
#include "pfi/model.h"
#include "pfi/oracle.h"

struct jobdata {
  struct pfi_curveset cs; /* curves, one per job */
  int have_features;
  struct pfi_features f; /* valid when have_features */
  long *frow;            /* cs.n: features row of each curve, -1 if none */
  size_t nmissing;       /* curves without a features row */
  double *true_pfi;      /* cs.n: ratio PFI of each curve */
  int *pfi_ok;           /* cs.n: 1 when the ratio PFI is defined */
};

/* Loads curves (with optional --map) and, when fpath is not NULL, a
 * features file. Returns 0 or an error (bad input: file:line:column). */
int jobdata_load(struct jobdata *d, const char *cpath, const char *map,
                 const char *fpath, struct pfi_error *err);
void jobdata_release(struct jobdata *d);

/* Fails (PFI_EPARSE, exit 2) when a job lacks features, naming the first
 * ones and the count. `why` says what needs them. */
int jobdata_require_features(const struct jobdata *d, const char *why,
                             struct pfi_error *err);

/*
 * PFI estimates for every curve job into est[cs.n]: from `model` when not
 * NULL, else from a model on `feature_list` (default
 * pfi_default_model_features) fitted on the jobs' true PFI. With `holdout`
 * 1 each job is predicted by a fit without it, with 2 by a fit without its
 * architecture x task cluster. Needs features for every
 * job. Returns 0 or an error.
 */
int jobdata_estimate_pfi(const struct jobdata *d, const struct pfi_model *model,
                         const char *feature_list, int holdout, double *est,
                         struct pfi_error *err);

/*
 * The PFI that allocate, replay and simulate give the PFI-based strategies,
 * into est[cs.n]. With `true_pfi` the curves' own ratio PFI; a job whose PFI
 * is undefined is an error (PFI_EPARSE at its first curves line, "job J: PFI
 * undefined" followed by `undefined_note`, which may be ""). Otherwise
 * estimates from the telemetry model (features needed for every job): the
 * model saved at `model_path` when not NULL (loaded into `model`, *have_model
 * set to 1; release it with pfi_model_release()), else `model` when
 * *have_model is already 1, else a model on `feature_list` fitted on the
 * jobs' true PFI, with `holdout` as for jobdata_estimate_pfi(). Returns 0 or
 * an error.
 */
int jobdata_pfi_estimates(const struct jobdata *d, int true_pfi,
                          const char *undefined_note, const char *model_path,
                          const char *feature_list, int holdout,
                          struct pfi_model *model, int *have_model, double *est,
                          struct pfi_error *err);

/* Fails (PFI_EPARSE, naming the curves file: d->cs.source, else `cpath`)
 * when the jobs' uncapped powers or their throughputs, summed over the
 * allocation problem `p` built from d's curves, exceed the floating-point
 * range: values near DBL_MAX are bad input, named here rather than inf in
 * the totals or a missing JSON key. Returns 0 or the error. */
int jobdata_check_totals(const struct jobdata *d, const char *cpath,
                         const struct pfi_problem *p, struct pfi_error *err);

/* Fits a model on `feature_list` (NULL: the default) to the jobs' true PFI
 * (jobs with a defined PFI; features needed for every job). Release `m`
 * with pfi_model_release(). */
int jobdata_fit_model(const struct jobdata *d, const char *feature_list,
                      struct pfi_model *m, struct pfi_error *err);

/* 1 when the data are emulated: a provenance column (provenance, source
 * or origin) of the features, or of the first row of the curves file at
 * `cpath` (only its first 64 KiB are read), contains "emulated". */
int jobdata_emulated(const struct jobdata *d, const char *cpath);

/* Path of a data file (data/REL), for defaults; NULL when absent. */
const char *jobdata_default(const char *rel, char *buf, size_t n);

#endif
