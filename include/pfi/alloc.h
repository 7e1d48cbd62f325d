/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Strategies that split a cluster-wide power cut across jobs
 * (docs/predict-allocate.md), all on a struct pfi_problem (oracle.h).
 *
 * Proportional strategies give job i a reduction proportional to a weight
 * w_i >= 0, each reduction limited to the job's room hi_i - lo_i: a job that
 * reaches its floor keeps it and the rest of its share goes to the others
 * in proportion to their weights ("water-filling" on the weights). When
 * every job with positive weight is at its floor and watts remain to be cut,
 * the remainder is spread over the remaining jobs in proportion to their
 * uncapped power. The budget is always met exactly, or the call fails with
 * PFI_EINFEASIBLE ("infeasible by X W").
 *
 *   equal            w_i = P_max_i (every job loses the same fraction)
 *   moe-ft-weighted  w_i = P_max_i, doubled for MoE fine-tuning jobs
 *   pfi-aware        w_i = P_max_i * PFI_i / T_max_i (PFI estimated;
 *                    a non-positive estimate gives weight 0)
 *   dram-copy        w_i = DRAM copy product of the uncapped run
 *   pfi-curve        ours: each job's estimated PFI becomes a whole curve
 *                    model T/T_max = 1 - (1 - u)^g (u = P/P_max), g chosen
 *                    so that the ratio PFI at the middle of the job's range
 *                    equals the estimate (g >= 1: concave); the exact oracle
 *                    then allocates on the model curves, i.e. water-filling
 *                    by marginal throughput per watt
 *   oracle           the exact optimum on the true curves (oracle.h)
 */
#ifndef PFI_ALLOC_H
#define PFI_ALLOC_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/oracle.h"

enum pfi_strategy {
  PFI_STRAT_ORACLE,
  PFI_STRAT_EQUAL,
  PFI_STRAT_MOE_FT_WEIGHTED,
  PFI_STRAT_PFI_AWARE,
  PFI_STRAT_DRAM_COPY,
  PFI_STRAT_PFI_CURVE,
  PFI_STRAT__COUNT
};

/* "oracle", "equal", "moe-ft-weighted", "pfi-aware", "dram-copy",
 * "pfi-curve". */
const char *pfi_strategy_name(enum pfi_strategy s);

/* Strategy by name; returns it or -1. */
int pfi_strategy_parse(const char *name);

/* What strategies other than oracle and equal need, per job (arrays of
 * njobs, caller-owned; a strategy reading a NULL array fails with
 * PFI_EINVAL naming what is missing). */
struct pfi_alloc_inputs {
  const double *pfi;       /* estimated PFI (pfi-aware, pfi-curve) */
  const double *dram_copy; /* DRAM copy product (dram-copy) */
  const int *moe_ft;       /* 1 for MoE fine-tuning jobs (moe-ft-weighted) */
};

/*
 * Proportional split: job i's power is hi_i - min(hi_i - lo_i, t w_i) with
 * t chosen so the powers sum to budget_w (then the fallback above). Writes
 * power_w[0..njobs-1]. Errors: PFI_EINFEASIBLE, PFI_EINVAL (negative or
 * non-finite weight), PFI_ENOMEM.
 */
int pfi_alloc_proportional(const struct pfi_problem *p, double budget_w,
                           const double *weight, double *power_w,
                           struct pfi_error *err);

/*
 * The model curve of pfi-curve for one job: exponent g of
 * T/T_max = 1 - (1 - u)^g such that (1 - u_m) / (1 - T(u_m)/T_max) = pfi at
 * u_m = (lo/hi + 1) / 2, limited to [1, 50]: g = 1 (a straight line, ratio
 * PFI 1) for estimates at or below 1, so that every model curve is concave.
 * Returns 1 when pfi is not positive or lo >= hi.
 */
double pfi_curve_model_exponent(double pfi, double lo_w, double hi_w);

/*
 * Runs strategy `s` on problem p with budget budget_w, writing the powers
 * to power_w[0..njobs-1]. Errors: PFI_EINFEASIBLE, PFI_EINVAL (an input the
 * strategy needs is NULL), PFI_ENUMERIC (oracle), PFI_ENOMEM.
 */
int pfi_alloc_run(const struct pfi_problem *p, enum pfi_strategy s,
                  double budget_w, const struct pfi_alloc_inputs *in,
                  double *power_w, struct pfi_error *err);

/*
 * Strategy s prepared for problem p, to be run at many budgets: the work
 * that does not depend on the budget (the oracle's hulls, sort and prefix
 * sums; pfi-curve's model curves; a proportional rule's weights and the
 * order of its water-filling) is done once by pfi_alloc_plan_new().
 * pfi_alloc_plan_run() then writes bit for bit what pfi_alloc_run() writes
 * for the same problem, strategy, inputs and budget, and returns the same
 * errors. p and `in` must not change while the plan lives. new returns 0
 * or PFI_ENOMEM (other errors come from each run); free with
 * pfi_alloc_plan_free() (NULL is fine). A plan is not for two threads at
 * once.
 */
struct pfi_alloc_plan;
int pfi_alloc_plan_new(struct pfi_alloc_plan **out, const struct pfi_problem *p,
                       enum pfi_strategy s, const struct pfi_alloc_inputs *in,
                       struct pfi_error *err);
int pfi_alloc_plan_run(struct pfi_alloc_plan *pl, double budget_w,
                       double *power_w, struct pfi_error *err);
void pfi_alloc_plan_free(struct pfi_alloc_plan *pl);

/* Sum over jobs of pfi_problem_eval(p, i, power_w[i]). */
double pfi_alloc_total_tokens(const struct pfi_problem *p,
                              const double *power_w);

/*
 * Parses a cut "0.3", "30%" or "30 %" into a fraction in [0, 1). Values
 * above 1 without '%' are an error (ambiguous). Returns 0 or PFI_EINVAL.
 */
int pfi_cut_parse(const char *s, double *fraction, struct pfi_error *err);

#endif
