/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Allocation problems and the exact oracle (docs/predict-allocate.md, "Why
 * the oracle is exact").
 *
 * An allocation problem is a list of jobs, each with a throughput function
 * of its aggregate power: the linear interpolation of its measured points
 * (power W, tokens/s), restricted to the job's range [lo, hi] = [power at
 * its lowest measured cap, uncapped power]. A budget B (W) must be met
 * exactly: sum_i x_i = B with lo_i <= x_i <= hi_i.
 *
 * The oracle maximizes sum_i f_i(x_i) exactly (to a stated floating-point
 * tolerance), also when a curve is not concave, by branch and bound on the
 * concave envelopes; docs/predict-allocate.md proves why the answer is the
 * true optimum. Concave instances are solved at the root in one pass
 * (water-filling by segment slope, a weighted selection, linear time).
 */
#ifndef PFI_ORACLE_H
#define PFI_ORACLE_H

#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"

/*
 * Jobs as piecewise-linear functions. Job i owns breakpoints
 * off[i] .. off[i+1]-1 of x (power, W, strictly increasing) and y
 * (tokens/s). x[off[i]] is the job's floor lo_i and x[off[i+1]-1] its
 * ceiling hi_i; a job with one breakpoint has a fixed power. All arrays are
 * owned by the struct.
 */
struct pfi_problem {
  size_t njobs, jobs_cap;
  size_t *off; /* njobs + 1 offsets */
  size_t npts, pts_cap;
  double *x, *y; /* npts breakpoints */
  /* What pfi_problem_add_curve() reads of a curve: enum pfi_curve_fit
   * (monotone.h); 0, the default of pfi_problem_init(), is the monotone
   * fit. Kept by pfi_problem_clear(). */
  int curve_fit;
};

/* Initializes an empty problem (no allocation). */
void pfi_problem_init(struct pfi_problem *p);

/* Frees everything; safe on an initialized or zeroed struct. */
void pfi_problem_release(struct pfi_problem *p);

/*
 * Divides each job's throughput by its value at the top of its range (its
 * uncapped throughput, pfi_problem_eval at pfi_problem_hi), so that every
 * job counts as one unit: jobs whose units of work differ (epochs of
 * different datasets) become comparable. PFI_EINVAL (naming the job, from
 * 1) when that value is not positive; `p` is then unchanged.
 */
int pfi_problem_normalize(struct pfi_problem *p, struct pfi_error *err);

/* Removes every job but keeps the memory (for reuse in loops). */
void pfi_problem_clear(struct pfi_problem *p);

/*
 * Appends a job from n raw breakpoints (power W, tokens/s) in any order,
 * restricted to [lo_w, hi_w] (end points interpolated). Points with equal
 * power keep the first one given. Errors: PFI_EINVAL (n == 0, a non-finite
 * value, lo_w > hi_w, or the range outside the points' power span),
 * PFI_ENOMEM.
 */
int pfi_problem_add(struct pfi_problem *p, const double *power_w,
                    const double *tokens, size_t n, double lo_w, double hi_w,
                    struct pfi_error *err);

/*
 * Appends a measured curve: its points ordered by power, range
 * [power at the lowest cap, power at the highest (uncapped) cap] (the two
 * swapped if realized power fell with the cap raised). Under p->curve_fit
 * PFI_CURVE_MONOTONE (the default) a curve whose power or throughput falls
 * as the cap rises is replaced by its monotone fit (pfi_curve_monotone(),
 * monotone.h) first, and of points the fit gives equal power the highest
 * cap's is kept: no lower budget then yields more throughput, and the top
 * of the range is the fit's uncapped point. A curve without such a fall is
 * added as it is, bit for bit. This is the one place where curves become
 * the jobs allocation, the oracle, capacity, plans, simulate and replay
 * decide on. Errors as pfi_problem_add().
 */
int pfi_problem_add_curve(struct pfi_problem *p, const struct pfi_curve *c,
                          struct pfi_error *err);

static inline double pfi_problem_lo(const struct pfi_problem *p, size_t i) {
  return p->x[p->off[i]];
}
static inline double pfi_problem_hi(const struct pfi_problem *p, size_t i) {
  return p->x[p->off[i + 1] - 1];
}

/* Throughput of job i at power_w (clamped to the job's range). */
double pfi_problem_eval(const struct pfi_problem *p, size_t i, double power_w);

/* Sum of the floors and of the ceilings (W). */
void pfi_problem_bounds(const struct pfi_problem *p, double *sum_lo,
                        double *sum_hi);

/*
 * Checks budget_w against the bounds, with a relative tolerance of 1e-9:
 * returns 0, or PFI_EINFEASIBLE with "infeasible by X W" (X the watts the
 * budget lies below the floors' sum or above the ceilings' sum).
 */
int pfi_problem_check_budget(const struct pfi_problem *p, double budget_w,
                             struct pfi_error *err);

struct pfi_oracle_stats {
  size_t nodes;       /* branch-and-bound nodes evaluated (1: concave) */
  double upper_bound; /* envelope bound at the root */
};

/*
 * Maximizes sum_i f_i(x_i) subject to sum_i x_i = budget_w and each x_i in
 * its range. Writes the powers to power_w[0..njobs-1] (caller-allocated)
 * and the optimum to *total_tokens. The result is within an absolute
 * 1e-9 * (sum of |max y_i|) of the true optimum. Errors: PFI_EINFEASIBLE
 * (budget outside the bounds, message "infeasible by X W"), PFI_ENUMERIC
 * (branch and bound exceeded 2,000,000 nodes: an adversarial non-concave
 * instance; never an inexact answer), PFI_ENOMEM. `stats` may be NULL.
 */
int pfi_oracle_solve(const struct pfi_problem *p, double budget_w,
                     double *power_w, double *total_tokens,
                     struct pfi_oracle_stats *stats, struct pfi_error *err);

/*
 * The oracle for many budgets on one problem: pfi_oracle_prepare() does
 * the work that does not depend on the budget (each job's concave hull,
 * one sort of all hull segments by slope, their prefix sums, the groups of
 * identical jobs) once; each pfi_oracle_run() then costs a binary search
 * and one pass (plus the branch and bound of non-concave instances).
 * pfi_oracle_run() gives bit for bit what pfi_oracle_solve() gives for the
 * same problem and budget, errors included (an error met while preparing
 * is returned by each run, after the budget's own check). The problem must
 * not change while prepared. prepare returns 0 or PFI_ENOMEM; free with
 * pfi_oracle_free() (NULL is fine). One prepared oracle is not for two
 * threads at once.
 */
struct pfi_oracle;
int pfi_oracle_prepare(struct pfi_oracle **out, const struct pfi_problem *p,
                       struct pfi_error *err);
int pfi_oracle_run(struct pfi_oracle *o, double budget_w, double *power_w,
                   double *total_tokens, struct pfi_oracle_stats *stats,
                   struct pfi_error *err);
void pfi_oracle_free(struct pfi_oracle *o);

#endif
