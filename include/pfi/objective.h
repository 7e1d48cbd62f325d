/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What an allocation maximizes (docs/predict-allocate.md, "The objective").
 *
 * Jobs report throughput in their own units (tokens/s, samples/s,
 * images/s, kimages/s); summing those numbers across jobs makes a plan
 * depend on the unit a job happens to report in. An objective turns each
 * job's throughput f_i(x) into a value v_i(x) = s_i f_i(x), one factor s_i
 * per job, and every strategy then works on the values (the oracle
 * maximizes sum_i v_i(x_i); pfi-aware and pfi-curve read the values'
 * uncapped level):
 *
 *   work        s_i = w_i g_i / T_i (the default): the work kept, each job
 *               counted by its share of its own uncapped throughput T_i
 *               times its GPU count g_i (a 32-GPU job weighs four 8-GPU
 *               ones). Unit-free: scaling a job's throughput by any factor
 *               changes no plan. Values are in GPU-equivalents.
 *   throughput  s_i = w_i: the sum of raw throughput, the paper's
 *               objective (meaningful when every job reports one unit).
 *   jobs        s_i = w_i / T_i: each job counts once (job-equivalents).
 *
 * w_i is the job's weight (a priority, a price per unit of its work): 1
 * when none is given. A minimum retained share m keeps every job at
 * f_i(x) >= m T_i: the job's floor rises to the lowest power above which
 * its curve never falls below m T_i. Weights and the minimum share are
 * applied in one place, pfi_objective_problem(); the CLIs parse and pass.
 */
#ifndef PFI_OBJECTIVE_H
#define PFI_OBJECTIVE_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/oracle.h"

enum pfi_objective_kind {
  PFI_OBJ_WORK = 0, /* the default */
  PFI_OBJ_THROUGHPUT,
  PFI_OBJ_JOBS,
  PFI_OBJ__COUNT
};

struct pfi_objective {
  enum pfi_objective_kind kind;
  const double *weight; /* njobs weights >= 0, finite; NULL: all 1. Not
                           owned */
  double min_share;     /* in [0, 1): 0 for none */
};

/*
 * The factor s_i of one job (see above): w g / tmax (work), w (throughput),
 * w / tmax (jobs); w the weight, g the GPU count (0 or less: 1). 1 when
 * tmax is not positive and finite and the kind needs it (nothing to scale
 * by yet). For callers that hold one job's curve at a time (the
 * controller's beliefs).
 */
double pfi_objective_factor(enum pfi_objective_kind k, double weight,
                            double gpus, double tmax);

/* work, no weights, no minimum share. */
void pfi_objective_init(struct pfi_objective *o);

/* "work", "throughput", "jobs". */
const char *pfi_objective_name(enum pfi_objective_kind k);

/* Kind by name ("work", "throughput", "jobs"); returns it or -1. */
int pfi_objective_parse(const char *name);

/*
 * The unit of values under `o`: "GPU-equivalents" (work with GPU counts),
 * "job-equivalents" (jobs; work without any GPU count), or
 * `throughput_unit` (throughput). With weights, "weighted " is prefixed
 * (written into buf, n bytes). Returns buf.
 */
const char *pfi_objective_unit(const struct pfi_objective *o, int gpus_known,
                               const char *throughput_unit, char *buf,
                               size_t n);

/*
 * One line for tables and pages saying which objective was used, e.g.
 * "objective work: work kept, each job's share of its uncapped throughput
 * x its GPUs" plus ", weighted", ", each job keeps >= 50 %" and, for work
 * without GPU counts, "(no GPU counts: each job counted once)". Written
 * into buf (n bytes); returns buf.
 */
const char *pfi_objective_describe(const struct pfi_objective *o,
                                   int gpus_known, char *buf, size_t n);

/*
 * The GPU counts the work objective uses: gpus[0..n) (0 = unknown; gpus
 * may be NULL). Sets *known to 1 when every job has one, 0 when none has
 * (each job then counts as one GPU: the work objective equals jobs).
 * Some known and some not is PFI_EINVAL naming the first job without one
 * (names[i] when names is not NULL, else its number from 1).
 */
int pfi_objective_gpus(const int *gpus, size_t n, const char *const *names,
                       int *known, struct pfi_error *err);

/*
 * The factor s_i of every job of `raw` into scale[0..njobs) (see above).
 * T_i is tmax[i], the job's throughput at its highest cap
 * (pfi_curve_uncapped), when tmax is not NULL; else its throughput at the
 * top of its range, pfi_problem_eval(raw, i, pfi_problem_hi(raw, i)) (the
 * same unless realized power fell with the cap raised). gpus and names as
 * pfi_objective_gpus(). Errors (PFI_EINVAL, naming the job): work or
 * jobs with T_i not positive, a weight negative or not finite, min_share
 * outside [0, 1), GPU counts given for some jobs only, every weight 0.
 */
int pfi_objective_scale(const struct pfi_problem *raw,
                        const struct pfi_objective *o, const int *gpus,
                        const double *tmax, const char *const *names,
                        double *scale, struct pfi_error *err);

/*
 * The problem the strategies solve under `o`: `raw`'s jobs with each
 * throughput multiplied by s_i and, with a minimum share m > 0, each
 * job's floor raised to the lowest power x such that f_i(x') >= m T_i for
 * every x' in [x, hi_i] (the job's range then starts there; powers are
 * unchanged, so an allocation on `out` applies to `raw`). `out` must be
 * initialized (pfi_problem_init) and is cleared first. tmax as
 * pfi_objective_scale(); *gpus_known (may be NULL) as pfi_objective_gpus().
 * Errors as pfi_objective_scale(), PFI_ENOMEM.
 */
int pfi_objective_problem(const struct pfi_problem *raw,
                          const struct pfi_objective *o, const int *gpus,
                          const double *tmax, const char *const *names,
                          struct pfi_problem *out, int *gpus_known,
                          struct pfi_error *err);

/*
 * Per-job weights from a CSV with columns `job` and `weight` (other
 * columns ignored: the curves file itself may carry them): w[i] is the
 * weight of jobs[i]. A job may have several rows (a curves file has one
 * per cap) that must agree. Errors, PFI_EPARSE at file:line:column: no
 * job or weight column, a weight not a finite number >= 0, two rows of a
 * job that disagree; a job of `jobs` without a row. Rows of other jobs
 * are ignored. `_mem` reads from memory with `name` for messages.
 */
int pfi_objective_weights_read(const char *path, const char *const *jobs,
                               size_t n, double *w, struct pfi_error *err);
int pfi_objective_weights_read_mem(const char *name, const char *data,
                                   size_t len, const char *const *jobs,
                                   size_t n, double *w, struct pfi_error *err);

/*
 * Parses a power "150kW", "150 kW", "2.5MW", "90000W" or "90000" (watts)
 * into watts, > 0 and at most 1e12. Returns 0 or PFI_EINVAL naming it.
 */
int pfi_power_parse(const char *s, double *watts, struct pfi_error *err);

#endif
