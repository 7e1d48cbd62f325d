/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to libpfi: a problem's bounds kept for many budget checks. */
#ifndef PFI_PROBLEM_INT_H
#define PFI_PROBLEM_INT_H

#include "pfi/alloc.h"
#include "pfi/oracle.h"

struct pfi_bounds {
  double lo, hi; /* pfi_problem_bounds() */
  double tol;    /* the budget's tolerance: 1e-9 (sum |hi_i| + 1) */
};

void pfi__bounds(const struct pfi_problem *p, struct pfi_bounds *b);

/* pfi_problem_check_budget() on bounds computed once. */
int pfi__check_budget(const struct pfi_bounds *b, double budget_w,
                      struct pfi_error *err);

/* Problems whose jobs are copies of a library's jobs (a simulation's
 * sampled workloads): the library's hull segments, computed and sorted once,
 * serve every such problem. */
struct pfi__hull_lib;

/* The hull segments of every job of `lib`. 0, PFI_ENOMEM, or PFI_EINVAL (a
 * job with too many points). */
int pfi__hull_lib_new(struct pfi__hull_lib **out, const struct pfi_problem *lib,
                      struct pfi_error *err);
void pfi__hull_lib_free(struct pfi__hull_lib *h);

/* pfi_oracle_prepare() for p whose job i has the breakpoints of library job
 * from[i], bit for bit: the same prepared oracle (same runs, bit for bit),
 * its segments copied from h and sorted by one counting pass. */
int pfi__oracle_prepare_lib(struct pfi_oracle **out,
                            const struct pfi_problem *p,
                            const struct pfi__hull_lib *h, const size_t *from,
                            struct pfi_error *err);

/* pfi_alloc_plan_new() for such a problem: the oracle as above, and the
 * proportional strategies' ratios sorted by a counting pass over the
 * classes from[i] < nclass (jobs of one class have equal ratios; checked,
 * else the usual sort). Same plan, same runs, bit for bit. */
int pfi__alloc_plan_new_lib(struct pfi_alloc_plan **out,
                            const struct pfi_problem *p, enum pfi_strategy s,
                            const struct pfi_alloc_inputs *in,
                            const struct pfi__hull_lib *h, const size_t *from,
                            size_t nclass, struct pfi_error *err);

#endif
