/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Inputs of the operator commands (pfi capacity, pfi gate): a curves file
 * or a trace store, with each job's ratio PFI and its Monte Carlo interval
 * and the provenance the file states.
 */
#ifndef PFI_JOBCURVES_H
#define PFI_JOBCURVES_H

#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/index.h"

struct pfi_jobcurves {
  struct pfi_curveset cs;
  double *pfi, *pfi_lo, *pfi_hi; /* cs.n each when with_pfi, else NULL */
  int *pfi_ok;                   /* 1: the ratio PFI is defined */
  int *pfi_why; /* cs.n with_pfi: enum pfi_index_undefined when not */
  size_t n_undefined;            /* jobs without a ratio PFI */
  int emulated, measured;        /* what the file's source column says */
  /* with_pfi: the noise of points without sd columns behind pfi and its
   * interval: the caller's, else pfi_noise_estimate() of the curves (the
   * paper's repeatability when they give nothing to estimate it from). */
  struct pfi_noise noise;
};

/* Reads `path` (with `map`); with `with_pfi` also each job's ratio PFI
 * and its 95 % interval from `draws` draws seeded by `seed` (a job without
 * one gets 0, 0, 0 and pfi_ok 0). Release with pfi_jobcurves_release() (also
 * after a failure). */
int pfi_jobcurves_load(struct pfi_jobcurves *d, const char *path,
                       const char *map, int with_pfi, unsigned long draws,
                       unsigned long seed, struct pfi_error *err);
/* pfi_jobcurves_load() under the noise `given` (a command's --noise;
 * NULL: the curves' own, pfi_noise_estimate()). */
int pfi_jobcurves_load_noise(struct pfi_jobcurves *d, const char *path,
                             const char *map, int with_pfi, unsigned long draws,
                             unsigned long seed, const struct pfi_noise *given,
                             struct pfi_error *err);
void pfi_jobcurves_release(struct pfi_jobcurves *d);

/* "emulated", "measured" or "input" (the file does not say). */
const char *pfi_jobcurves_provenance(const struct pfi_jobcurves *d);

/* A curves file, or a trace store (an SQLite file) summarized into a
 * private temporary directory first (pfi_trace_summarize()); `map` applies
 * to a curves file only. On success *set holds the curves (release with
 * pfi_curveset_release()) and *emulated / *measured (each may be NULL) say
 * whether the data's `source` column says so. */
int pfi_curves_read_any(struct pfi_curveset *set, const char *path,
                        const char *map, int *emulated, int *measured,
                        struct pfi_error *err);
#endif
