/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The oracle's hull segments, shared by oracle.c and oracle_hull.c. */
#ifndef PFI_ORACLE_INT_H
#define PFI_ORACLE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/oracle.h"

/* A hull segment of one job between original breakpoints a < b (indices
 * relative to the job). */
struct seg {
  double len, slope;
  uint32_t a, b;
  size_t job;
};

/* Hull segments of a library's jobs, sorted once (pfi__hull_lib_new). */
struct pfi__hull_lib {
  size_t njobs;
  size_t *off;     /* njobs + 1 offsets into seg and rank */
  struct seg *seg; /* each job's root hull segments, in hull order */
  uint32_t *rank;  /* of each segment's slope key among the distinct keys,
                      in sort order (equal keys, equal rank) */
  size_t nrank;
  double *ymax; /* job_ymax() of each job */
};

/* Upper concave hull of job `job`'s breakpoints [a, b] (relative indices);
 * appends its segments to *out (n used, cap allocated). 0 or -1 (memory). */
int pfi__oracle_hull(const struct pfi_problem *p, size_t job, uint32_t a,
                     uint32_t b, struct seg **out, size_t *n, size_t *cap);
/* Sorts n segments by slope, descending, ties in build order; *sp is
 * replaced by the sorted copy. 0 or -1 (memory). */
int pfi__oracle_sort_segs(struct seg **sp, size_t n);
/* The largest |y| of job i's breakpoints. */
double pfi__oracle_job_ymax(const struct pfi_problem *p, size_t i);

#endif
