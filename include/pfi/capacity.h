/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Flexibility capacity of a set of jobs: how much power the cluster can
 * shed for how much throughput lost, by an allocation strategy (alloc.h)
 * or the exact oracle, from no cut to the largest feasible one (every job
 * at its floor); and the quote an operator gives a utility, "shed X W at
 * <= Y % throughput loss", for Y in PFI_CAPACITY_QUOTES.
 *
 * Throughput lost at a shed S is L(S) = T0 - F(H - S), T0 the jobs' total
 * uncapped throughput, H their total uncapped power and F(B) the total
 * throughput the strategy's allocation of budget B yields (read off the
 * true curves). The quote for a loss Y is the largest S such that
 * L(S')/T0 <= Y for every S' in [0, S]: the ladder is scanned upward and
 * the first crossing refined by bisection (to 1e-9 of H). A strategy that
 * reads PFI estimates (pfi-aware, pfi-curve) is also run with every job's
 * PFI at the low and at the high end of its interval; the loss and the
 * quote are then given as the range over the three runs.
 */
#ifndef PFI_CAPACITY_H
#define PFI_CAPACITY_H

#include <stddef.h>

#include "pfi/alloc.h"
#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/objective.h"
#include "pfi/oracle.h"

#define PFI_CAPACITY_NQUOTE 5
/* The losses quoted: 1, 2, 5, 10, 20 % of the uncapped throughput. */
extern const double pfi_capacity_quotes[PFI_CAPACITY_NQUOTE];

struct pfi_capacity_point {
  double shed_w;                     /* power shed, W */
  double shed_frac;                  /* of the total uncapped power */
  double tokens;                     /* total throughput after the cut */
  double loss;                       /* throughput lost (the curves' unit) */
  double loss_frac;                  /* of the total uncapped throughput */
  double loss_lo_frac, loss_hi_frac; /* range over the PFI interval's ends
                                        (= loss_frac without one) */
};

struct pfi_capacity {
  enum pfi_strategy strategy;
  double uncapped_w;      /* H */
  double floor_w;         /* sum of the floors: the largest cut leaves it */
  double uncapped_tokens; /* T0 */
  int has_interval;       /* the PFI interval was propagated */
  size_t n;               /* ladder points, shed 0 .. H - floor */
  struct pfi_capacity_point *pts;         /* owned */
  double quote_w[PFI_CAPACITY_NQUOTE];    /* shed at <= quote loss, W */
  double quote_lo_w[PFI_CAPACITY_NQUOTE]; /* range over the interval */
  double quote_hi_w[PFI_CAPACITY_NQUOTE];
};

/*
 * Adds every curve of `cs` to `p` (pfi_problem_add_curve), with its
 * throughput divided by the job's uncapped throughput when `normalize` is
 * set: each job then counts as one unit (jobs whose units of work differ,
 * such as epochs of different datasets, are then comparable). Errors as
 * pfi_problem_add().
 */
int pfi_capacity_problem(const struct pfi_curveset *cs, int normalize,
                         struct pfi_problem *p, struct pfi_error *err);

/*
 * Computes the capacity of strategy `s` on `p` at `steps` + 1 evenly
 * spaced sheds from 0 to H - floor (steps >= 1), and the quotes. `in` as
 * pfi_alloc_run() (may be NULL for oracle and equal); `pfi_lo`, `pfi_hi`
 * (both or neither, p->njobs each) the ends of each job's PFI interval.
 * Errors: PFI_EINVAL (steps 0, no jobs, a missing input), the strategy's
 * errors (PFI_ENUMERIC from the oracle), PFI_ENOMEM. Release `out` with
 * pfi_capacity_release() (also after a failure).
 */
int pfi_capacity_compute(const struct pfi_problem *p, enum pfi_strategy s,
                         const struct pfi_alloc_inputs *in,
                         const double *pfi_lo, const double *pfi_hi,
                         size_t steps, struct pfi_capacity *out,
                         struct pfi_error *err);

void pfi_capacity_release(struct pfi_capacity *c);

/*
 * The problem of `cs` under objective `o` (objective.h): every curve
 * added (pfi_capacity_problem, raw), then pfi_objective_problem() with
 * each job's GPU count from the curves' gpus column, T_i its throughput
 * at its highest cap and its name for messages. `p` initialized by the
 * caller. Errors as those two.
 */
int pfi_capacity_problem_objective(const struct pfi_curveset *cs,
                                   const struct pfi_objective *o,
                                   struct pfi_problem *p, int *gpus_known,
                                   struct pfi_error *err);

#endif
