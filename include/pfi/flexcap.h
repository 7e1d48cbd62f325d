/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Live flexible capacity under the tier contract: how much power the
 * cluster could shed now at <= 1, 2, 5, 10, 20 % throughput loss, for an
 * event of a given length, with every job kept within its tier
 * (include/pfi/compliance.h). This is the number an operator quotes in a
 * bid and the VEN reports as LOAD_SHED_DELTA_AVAILABLE.
 *
 * Each job brings its power-throughput curve (the controller's belief, or
 * a measured curve) and, optionally, the low and high ends of the curve's
 * interval (throughput at the same powers). For an event of `duration_s`:
 *   - a job whose tier's longest event is shorter than duration_s, or whose
 *     notice is longer than `notice_s`, cannot be cut: its floor is its
 *     uncapped power;
 *   - otherwise its floor is the least power at which its throughput stays
 *     >= (1 - max_loss) x uncapped, on its curve (linear between points),
 *     and no lower than its own lowest point.
 * The capacity is then the exact oracle's (include/pfi/capacity.h) over
 * these ranges; with intervals, it is computed on the low and on the high
 * curves too, and the quote is given as that range.
 */
#ifndef PFI_FLEXCAP_H
#define PFI_FLEXCAP_H

#include <stddef.h>

#include "pfi/capacity.h"
#include "pfi/compliance.h"
#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/monotone.h"
#include "pfi/objective.h"

struct pfi_flex_job {
  const char *job;
  const double *power_w; /* n points, increasing power */
  const double *tput;    /* throughput at each point; the last is uncapped */
  const double *tput_lo, *tput_hi; /* the interval's ends, or both NULL */
  size_t n;
  const struct pfi_tier *tier;
  int gpus; /* the job's GPU count, for the work objective; 0 unknown */
};

struct pfi_flexcap {
  double duration_s;
  size_t eligible;   /* jobs that may be cut for this duration */
  double uncapped_w; /* every job uncapped */
  double floor_w;    /* every job at its tier floor */
  double quote_w[PFI_CAPACITY_NQUOTE];
  double quote_lo_w[PFI_CAPACITY_NQUOTE], quote_hi_w[PFI_CAPACITY_NQUOTE];
  int has_interval;
};

/*
 * The tier floor of one job (W), as defined above. PFI_EINVAL for a curve
 * with fewer than 2 points, powers not increasing, or a value not finite
 * and >= 0.
 */
int pfi_flex_floor(const struct pfi_flex_job *j, double duration_s,
                   double notice_s, const double *tput, double *floor_w,
                   struct pfi_error *err);

/*
 * Capacity for one event length. `steps` as pfi_capacity_compute (e.g.
 * 200). The loss is the objective's (include/pfi/objective.h): each job's
 * throughput is turned into its value by pfi_objective_problem() with the
 * jobs' `gpus` (all or none known) and, for the interval's ends, each
 * end's own uncapped throughput; `obj` NULL sums raw throughput (the
 * objective throughput without weights). Under work or jobs the quotes do
 * not depend on the unit a job reports in. A minimum share raises the
 * floors (and floor_w). Errors: pfi_objective_problem's besides the
 * curves'.
 *
 * pfi_flexcap_compute is pfi_flexcap_compute_objective with obj NULL
 * (pfid's live quote, pfi_flex_live, whose jobs have no GPU counts).
 */
int pfi_flexcap_compute_objective(const struct pfi_flex_job *jobs, size_t nj,
                                  double duration_s, double notice_s,
                                  size_t steps, const struct pfi_objective *obj,
                                  struct pfi_flexcap *out,
                                  struct pfi_error *err);
int pfi_flexcap_compute(const struct pfi_flex_job *jobs, size_t nj,
                        double duration_s, double notice_s, size_t steps,
                        struct pfi_flexcap *out, struct pfi_error *err);

/*
 * Live capacity of a fleet whose jobs are known only by their operating
 * point (pfid: each job's draw and throughput from the agents, the sum of
 * its GPUs' lowest caps, its tier). Each job's curve is sampled at 9
 * powers on [min_w, power_w]:
 *   - central: `believe(believe_arg, P)` where given (pfid: the control
 *     module's belief, include/pfi/control.h: learned points over the
 *     prior), else the pfi-curve model T = T_max (1 - (1 - u)^g), u =
 *     P / P_max (alloc.h's pfi_curve_model_exponent) with `pfi` (NaN: the
 *     controller's prior, 1.5);
 *   - the interval's low end: the model with `pfi_lo` (NaN: 1.0,
 *     throughput falling in proportion to power), high end: the model with
 *     `pfi_hi` (NaN: the central curve), each point no higher (low) or
 *     lower (high) than the central one. With an estimate, these are its
 *     95 % prediction interval's ends (include/pfi/model.h).
 * Tier: max_loss in [0, 1) bounds the loss, < 0 or >= 1 none;
 * max_event_s > 0 and finite the tier's longest event (0, negative or not
 * finite: none); no notice is required. Jobs with power_w or tput not
 * positive and finite are left out and counted in *skipped. PFI_EINVAL
 * when none is left, or for a believed throughput that is not finite and
 * >= 0.
 *
 * pfi_flex_live_event: for an event of `duration_s` (>= 0): a job whose
 * tier's longest event is shorter is held at its draw. out->duration_s is
 * the longest event the quote holds for: the shortest longest event among
 * the jobs that may be cut (>= duration_s; INFINITY when none is bounded).
 * pfi_flex_live: the same for an event of any length up to that
 * (duration_s 0).
 */
struct pfi_flex_live_job {
  const char *job;
  double power_w; /* its uncapped draw, W */
  double tput;    /* its uncapped throughput, tokens/s */
  double min_w;   /* the sum of its GPUs' lowest caps, W */
  double pfi, pfi_lo;
  double max_loss;
  /* appended: */
  double pfi_hi;
  double max_event_s;
  double (*believe)(const void *arg, double power_w);
  const void *believe_arg;
};
int pfi_flex_live(const struct pfi_flex_live_job *jobs, size_t nj,
                  size_t steps, struct pfi_flexcap *out, size_t *skipped,
                  struct pfi_error *err);
int pfi_flex_live_event(const struct pfi_flex_live_job *jobs, size_t nj,
                        double duration_s, size_t steps,
                        struct pfi_flexcap *out, size_t *skipped,
                        struct pfi_error *err);

/*
 * Each job's PFI estimate with its 95 % prediction interval, from a model
 * saved by `pfi fit --output` and a features file (a job column and the
 * model's feature columns): pfi_model_predict_interval (include/pfi/
 * model.h) on each row. A row whose features are missing or not finite
 * is an error naming it; a model without standard errors is PFI_EINVAL.
 * *out is malloc'd (caller frees), *n rows, sorted by job for
 * pfi_flex_estimate_find.
 */
struct pfi_flex_estimate {
  char job[128];
  double pfi, lo, hi;
};
int pfi_flex_estimates_load(const char *model, const char *features,
                            struct pfi_flex_estimate **out, size_t *n,
                            struct pfi_error *err);
/* The estimate of `job`, or NULL. */
const struct pfi_flex_estimate *
pfi_flex_estimate_find(const struct pfi_flex_estimate *e, size_t n,
                       const char *job);

/*
 * Tiers from CSV: header `tier,max_loss` and optional `max_event_s`
 * (default no bound) and `notice_s` (default 0); max_loss a fraction in
 * [0, 1] or a percentage ("25%"). Located errors (file:line:column),
 * PFI_EPARSE. *out is malloc'd (caller frees), *n tiers.
 */
int pfi_tiers_load_mem(const char *name, const char *data, size_t len,
                       struct pfi_tier **out, size_t *n, struct pfi_error *err);
int pfi_tiers_load(const char *path, struct pfi_tier **out, size_t *n,
                   struct pfi_error *err);

/*
 * The jobs of a curves file with their tiers, for pfi_flexcap(): each
 * job's points sorted by realized power (equal powers keep the first), the
 * monotone fit's points (include/pfi/monotone.h) instead for a curve whose
 * power or throughput falls as the cap rises unless `fit` is
 * PFI_CURVE_RAW (pfi_flex_jobs_load: the fit, the decisions' default;
 * tier floors are then read down the fit too), its GPU count, and,
 * when every point has a throughput SD, the 95 % band t +- 1.96 SD
 * (floored at 0). Each job's tier is `tier`, or its row of the `contract`
 * CSV (columns job and tier), looked up in the `tiers` file. Release with
 * pfi_flex_jobs_release() (also after a failure).
 */
struct pfi_flex_jobs {
  struct pfi_curveset cs;
  struct pfi_tier *tiers;
  size_t ntiers, n;
  struct pfi_flex_job *jobs; /* n */
  double *buf;
  int has_sd;
  enum pfi_curve_fit curve_fit; /* the fit the points are of */
};
int pfi_flex_jobs_load(struct pfi_flex_jobs *c, const char *curves,
                       const char *map, const char *tiers, const char *contract,
                       const char *tier, struct pfi_error *err);
int pfi_flex_jobs_load_fit(struct pfi_flex_jobs *c, const char *curves,
                           const char *map, const char *tiers,
                           const char *contract, const char *tier,
                           enum pfi_curve_fit fit, struct pfi_error *err);
void pfi_flex_jobs_release(struct pfi_flex_jobs *c);

/*
 * Restates the jobs' curves at `level` (enum pfi_power_level,
 * include/pfi/timeline.h): each point's GPU power becomes the power of
 * the job's nodes (PFI_LEVEL_NODE) or of their share of the meter
 * (PFI_LEVEL_METER), pfi_meter_job_power_w with the job's GPUs (its
 * curve's gpus, 1 when not given) spread over ceil(gpus /
 * gpus_per_node) nodes; PFI_LEVEL_GPU leaves them. The capacity computed
 * next (pfi_flexcap_compute) is then the power shed at that level, tier
 * floors read down the restated curves (linear between their points).
 * PFI_EINVAL for gpus_per_node 0, or when a job's restated power does not
 * increase with its GPU power (a supplies' curve whose efficiency rises
 * faster than the load), naming the job and the point.
 */
struct pfi_meter_config;
int pfi_flex_jobs_at_level(struct pfi_flex_jobs *c,
                           const struct pfi_meter_config *cfg, int level,
                           unsigned gpus_per_node, struct pfi_error *err);

#endif
