/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared by the operator commands (capacity, gate): a curves file with
 * each job's ratio PFI and its Monte Carlo interval, the provenance of the
 * file, and a strategy list. */
#ifndef PFI_CLI_OPSDATA_H
#define PFI_CLI_OPSDATA_H

#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"

struct ops_jobs {
  struct pfi_curveset cs;
  double *pfi, *pfi_lo, *pfi_hi; /* cs.n each when with_pfi, else NULL */
  int *pfi_ok;                   /* 1: the ratio PFI is defined */
  size_t n_undefined;            /* jobs without a ratio PFI */
  int emulated, measured;        /* what the file's source column says */
};

/* Reads `path` (with `map`); with `with_pfi` also each job's ratio PFI
 * and its 95 % interval from `draws` draws seeded by `seed` (a job without
 * one gets 0, 0, 0 and pfi_ok 0). Release with ops_jobs_release() (also
 * after a failure). */
int ops_jobs_load(struct ops_jobs *d, const char *path, const char *map,
                  int with_pfi, unsigned long draws, unsigned long seed,
                  struct pfi_error *err);
void ops_jobs_release(struct ops_jobs *d);

/* "emulated", "measured" or "input" (the file does not say). */
const char *ops_provenance(const struct ops_jobs *d);

/* Parses a comma-separated strategy list into strat[] (at most
 * PFI_STRAT__COUNT, no repeats); NULL gives the default: oracle, equal and,
 * with `have_pfi`, pfi-aware and pfi-curve. Prints a usage error for `cmd`
 * and returns -1 on a bad name. */
int ops_parse_strategies(const char *s, int have_pfi, int *strat, size_t *n,
                         const char *cmd);

/* A curves file, or a trace store (an SQLite file) summarized into a
 * private temporary directory first (pfi_trace_summarize()); `map` applies
 * to a curves file only. On success *set holds the curves (release with
 * pfi_curveset_release()) and *emulated / *measured (each may be NULL) say
 * whether the data's `source` column says so. */
int ops_read_curves(struct pfi_curveset *set, const char *path, const char *map,
                    int *emulated, int *measured, struct pfi_error *err);
#endif
