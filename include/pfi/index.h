/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The Power Flexibility Index of one power-throughput curve, by the paper's
 * three definitions (docs/index-and-stats.md):
 *
 *  ratio  PFI = mean over capped points i with T_i < T_max of
 *               (1 - P_i/P_max) / (1 - T_i/T_max)
 *  area   integral_0^1 (T/T_max) d(P/P_max) - 1/2, trapezoids over the
 *         points sorted by power plus the boundary point (0, 0)
 *  ce     1 - a, where log T = a log P + log k is fitted by least squares
 *
 * The uncapped reference (T_max, P_max) is the point with the highest cap.
 *
 * Which capped points enter the ratio (the noise rule, docs/index-and-stats.md;
 * the same in every function here). Point i enters only when its cap bound
 * beyond the noise, on both axes:
 *   loss_i = 1 - T_i/T_max > max(z s_T,i, R_T)  and
 *   save_i = 1 - P_i/P_max > max(z s_P,i, R_P)
 * with z = PFI_INDEX_NOISE_Z (2), s_T,i the standard error of T_i/T_max
 * ((T_i/T_max) sqrt(r_i^2 + r_max^2), r the points' relative standard
 * errors, from tokens_sd or the noise (struct pfi_noise below; the
 * paper's 0.05 % by default), s_P,i the same for power (default 0.04 %),
 * and R_T, R_P the curve's own noise floor: the largest
 * rise of throughput (power) from any cap to a lower one, relative to
 * T_max (P_max); 0 on a monotone curve. A cap cannot speed a job up, so a
 * rise measures the noise of the curve. Points left out are reported with
 * the reason (enum pfi_index_why); nothing is divided by zero or by a loss
 * that is only noise. On the paper's grids every capped point binds by far
 * more than the noise and the rule leaves the paper's ratio unchanged.
 */
#ifndef PFI_INDEX_H
#define PFI_INDEX_H

#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"

struct pfi_index {
  double pfi;            /* ratio definition; meaningful only if pfi_defined */
  int pfi_defined;       /* 0 when no capped point bound (nothing to average) */
  double pfi_area;       /* area-between-curves definition */
  double pfi_ce;         /* constant-elasticity definition */
  int ce_defined;        /* 0 when all points share one power value */
  size_t points_used;    /* capped points averaged by the ratio definition */
  size_t n_excluded;     /* capped points left out (cap did not bind) */
  double *excluded_caps; /* n_excluded caps in W; owned, free with
                            pfi_index_release() */
  double t_max, p_max;   /* uncapped reference */
  int *excluded_why;     /* n_excluded reasons (enum pfi_index_why); owned */
  double loss_floor;     /* R_T of the rule: largest throughput reversal */
  double power_floor;    /* R_P: largest power reversal */
  size_t points_bound;   /* capped points where the cap bound: power fell
                            below P_max by more than the noise (the power
                            half of the rule) */
  int undefined_why;     /* enum pfi_index_undefined; 0 when pfi_defined */
};

/* Why the ratio PFI of a job is undefined (pfi_index_undefined_reason()). */
enum pfi_index_undefined {
  PFI_UNDEF_NONE = 0,
  PFI_UNDEF_NEVER_BOUND, /* no capped point drew less power than P_max by
                            more than the noise: the cap never bound */
  PFI_UNDEF_NO_LOSS      /* the cap bound, but throughput never fell by more
                            than the noise (flexible beyond what the sweep
                            can measure) */
};

/* "the cap never bound", "throughput never fell beyond the noise", or ""
 * for PFI_UNDEF_NONE. */
const char *pfi_index_undefined_reason(int why);

#define PFI_INDEX_NOISE_Z 2.0

/* Why a capped point is left out of the ratio PFI. */
enum pfi_index_why {
  PFI_WHY_USED = 0,
  PFI_WHY_NOT_SLOWER,     /* T_i >= T_max: the cap did not bind */
  PFI_WHY_LOSS_IN_NOISE,  /* 0 < loss within the noise (z s_T or R_T) */
  PFI_WHY_POWER_IN_NOISE, /* the power saved is within the noise */
  PFI_WHY_REFERENCE       /* the uncapped reference itself */
};

/* "used", "no-loss", "loss-in-noise", "power-in-noise", "reference". */
const char *pfi_index_why_name(int why);

/*
 * Computes all three definitions for curve `c` (n >= 2, positive values, as
 * pfi_curveset_read() guarantees). Returns 0, PFI_EINVAL for a curve with
 * fewer than 2 points, PFI_ERANGE when a defined index is not a finite
 * number (values so far apart that a ratio overflows, e.g. a capped power
 * 1e300 times P_max), or PFI_ENOMEM. Release `out` with pfi_index_release()
 * (on an error there is nothing to release).
 */
int pfi_index_compute(const struct pfi_curve *c, struct pfi_index *out,
                      struct pfi_error *err);

/* The definitions, for pfi_index_compute_defs(). */
#define PFI_INDEX_RATIO 1u
#define PFI_INDEX_AREA 2u
#define PFI_INDEX_CE 4u
#define PFI_INDEX_ALL 7u

/*
 * pfi_index_compute() for a caller that needs only the definitions in
 * `defs`: without PFI_INDEX_CE the ce definition is not computed (its
 * logarithms are most of the cost; ce_defined and pfi_ce are 0). The ratio
 * and area definitions are always computed, so the errors are those of
 * pfi_index_compute() (the ce slope of positive finite values is always
 * finite: leaving it out hides none). Everything else is the same, bit for
 * bit.
 */
int pfi_index_compute_defs(const struct pfi_curve *c, unsigned defs,
                           struct pfi_index *out, struct pfi_error *err);

/*
 * The noise of a sweep (docs/index-and-stats.md, "The noise model"): the
 * relative standard deviation of a point's power and throughput where the
 * file gives no power_sd_w / tokens_sd, and where it came from. One noise
 * drives the rule above, the Monte Carlo intervals and pfi gate.
 */
enum pfi_noise_source {
  PFI_NOISE_PAPER = 0,  /* nothing to estimate it from: the paper's
                           repeatability (a point's standard error) */
  PFI_NOISE_COLUMNS,    /* every point has power_sd_w and tokens_sd */
  PFI_NOISE_REPLICATES, /* the scatter of replicate runs of one point */
  PFI_NOISE_UNBOUND,    /* the scatter of a job's points whose power stays
                           well below the cap (the cap cannot bind them) */
  PFI_NOISE_GIVEN       /* given by the caller (--noise) */
};

struct pfi_noise {
  double rel_sd_power; /* relative standard deviation, 0.0004 = 0.04 % */
  double rel_sd_tokens;
  int source;    /* enum pfi_noise_source */
  int per_run;   /* 1: the sd of one run, a point of `runs` runs has
                    sd / sqrt(runs) (estimates); 0: a point's own
                    standard error (paper default, given) */
  size_t dof;    /* degrees of freedom of an estimate (the draws
                    propagate its uncertainty); 0: taken as known */
  size_t points; /* points behind an estimate */
};

/* A power-to-cap ratio below this (per GPU) is a point the cap cannot bind. */
#define PFI_NOISE_UNBOUND_FRAC 0.7
/* An estimate from fewer degrees of freedom is not used. */
#define PFI_NOISE_MIN_DOF 3

/* The paper's repeatability: PFI_INDEX_DEFAULT_REL_SD_* (below), known. */
void pfi_noise_paper(struct pfi_noise *n);

/* Noise given by the caller: relative sds (fractions, finite, >= 0), each
 * a point's standard error, taken as known. */
void pfi_noise_given(struct pfi_noise *n, double rel_sd_power,
                     double rel_sd_tokens);

/* Parses a --noise value "P,T": the relative noise of power and
 * throughput in % (each from 0 to 100, finite) into *n by
 * pfi_noise_given(). PFI_EINVAL with the expected form otherwise (*n
 * untouched). */
int pfi_noise_parse(const char *s, struct pfi_noise *n, struct pfi_error *err);

/* "sd columns", "replicate runs", "points the cap cannot bind", "paper
 * default", "given". */
const char *pfi_noise_source_name(int source);

/*
 * The noise as outputs state it, into buf (len bytes; returns buf):
 * "each point's sd columns" (PFI_NOISE_COLUMNS), else "2.08 % of power,
 * 3.71 % of throughput (points the cap cannot bind, 162 degrees of
 * freedom)", the source by pfi_noise_source_name(), the degrees of
 * freedom only for an estimate.
 */
const char *pfi_noise_describe(const struct pfi_noise *n, char *buf,
                               size_t len);

/*
 * Pooled scatter of groups of values that measure the same thing
 * (replicate runs of one point; the points of one job that no cap binds):
 * the sum of squared deviations of log power and log throughput from
 * their group means, and the degrees of freedom (group size - 1, summed).
 * Zero-initialize, add groups, then finish.
 */
struct pfi_noise_acc {
  double ss_power, ss_tokens;
  size_t dof, points;
};

/* Adds one group of k positive values (k < 2 adds nothing). */
void pfi_noise_acc_add(struct pfi_noise_acc *a, const double *power_w,
                       const double *tokens, size_t k);

/* The estimate, with `source`, into *n when the pool has at least
 * PFI_NOISE_MIN_DOF degrees of freedom: returns 1; else 0 (*n untouched). */
int pfi_noise_acc_finish(const struct pfi_noise_acc *a, int source,
                         struct pfi_noise *n);

/*
 * The noise of a set of curves, in order: PFI_NOISE_COLUMNS when every
 * point has both sd columns; else the pooled scatter of replicate rows
 * (set->rep_ss_*, curve.h) when it has PFI_NOISE_MIN_DOF degrees of
 * freedom; else the scatter of the points the cap cannot
 * bind (power per GPU, gpus or 1, below PFI_NOISE_UNBOUND_FRAC of the cap;
 * two or more in a job) when it has PFI_NOISE_MIN_DOF degrees of freedom;
 * else the paper's default. Deterministic, O(points).
 */
void pfi_noise_estimate(const struct pfi_curveset *set, struct pfi_noise *n);

/*
 * The noise of a set of curves by its provenance: an emulated set (any
 * row says so; `emulated` 1) is the emulator's, the paper's repeatability
 * (pfi_noise_paper(), or PFI_NOISE_COLUMNS when every point has sd
 * columns), known by construction; any other set is pfi_noise_estimate()'s.
 */
void pfi_noise_of(const struct pfi_curveset *set, int emulated,
                  struct pfi_noise *n);

/*
 * pfi_index_compute_defs() with the rule's noise for points without sd
 * columns taken from `noise` (NULL: the paper's default, what
 * pfi_index_compute_defs() uses, bit for bit).
 */
int pfi_index_compute_noise(const struct pfi_curve *c, unsigned defs,
                            const struct pfi_noise *noise,
                            struct pfi_index *out, struct pfi_error *err);

/* Frees out->excluded_caps and excluded_why. Safe on a zeroed struct. */
void pfi_index_release(struct pfi_index *out);

/*
 * Ratio PFI of raw arrays (points in any order; the one with the highest cap
 * is the reference), by the noise rule above with the default noise for
 * every point. No allocation, for inner loops (Monte Carlo, oracle
 * analysis). Returns 1 and sets *pfi when defined, 0 when no capped point
 * bound, PFI_EINVAL when n < 2.
 */
int pfi_index_ratio(const double *cap_w, const double *power_w,
                    const double *tokens, size_t n, double *pfi,
                    size_t *points_used);

/* Area definition on raw arrays; returns 0 or PFI_EINVAL (n < 2). */
int pfi_index_area(const double *cap_w, const double *power_w,
                   const double *tokens, size_t n, double *area);

/* Constant-elasticity definition; returns 1 when defined, 0 when all powers
 * are equal, PFI_EINVAL when n < 2 or a value is not positive. */
int pfi_index_ce(const double *power_w, const double *tokens, size_t n,
                 double *ce);

/*
 * Default relative noise of a point whose standard errors are unknown: the
 * paper's median standard errors of the mean (docs/index-and-stats.md), 0.04 %
 * of power and 0.05 % of throughput.
 */
#define PFI_INDEX_DEFAULT_REL_SD_POWER 0.0004
#define PFI_INDEX_DEFAULT_REL_SD_TOKENS 0.0005

/*
 * Monte Carlo 95 % interval of the ratio PFI of curve `c`. Each of `draws`
 * draws resamples every point's power and throughput independently from a
 * normal centred on the measured value with standard deviation power_sd_w /
 * tokens_sd, or default_rel_sd_power * power_w / default_rel_sd_tokens *
 * tokens_per_s for a point whose column is unknown (< 0), then recomputes
 * the ratio PFI over the capped points the measured curve binds at (the
 * same points as pfi_index_compute() averages; a draw that divides by zero
 * is left out). The
 * interval is the 2.5 and 97.5 percentiles of the defined draws (GSL's
 * quantile of the sorted sample, linear between order statistics).
 * Random numbers: GSL's MT19937 seeded with `seed`; the same seed and curve
 * give the same interval bit for bit, whatever other curves exist.
 * Returns the number of draws that gave a finite PFI (> 0: *lo, *hi set;
 * 0: no interval, *lo and *hi untouched, as when no capped point binds), or
 * PFI_EINVAL (draws == 0, a curve with fewer than 2 points, a negative or
 * non-finite noise level), PFI_ENOMEM.
 */
int pfi_index_ci(const struct pfi_curve *c, size_t draws, unsigned long seed,
                 double default_rel_sd_power, double default_rel_sd_tokens,
                 double *lo, double *hi, struct pfi_error *err);

/*
 * The draws behind pfi_index_ci(), in draw order: sample[d] (caller's
 * array of `draws`) is draw d's ratio PFI, NAN for a draw that divided by
 * zero and for every draw when no capped point binds. Same random stream
 * and noise model as pfi_index_ci() with the same arguments, so that two
 * curves' draws can be combined (pfi gate: the difference of two PFI).
 * Returns the number of finite draws, or PFI_EINVAL, PFI_ENOMEM.
 */
int pfi_index_draws(const struct pfi_curve *c, size_t draws, unsigned long seed,
                    double default_rel_sd_power, double default_rel_sd_tokens,
                    double *sample, struct pfi_error *err);

/*
 * The draws and interval with the noise `noise` (NULL: the paper's
 * default) for points without sd columns, for both the rule that picks the
 * points and the draws (the functions above are these with
 * pfi_noise_given()). When noise->dof > 0 the noise is an estimate: each
 * draw first scales it by sqrt(dof / X), X a chi-square draw with dof
 * degrees of freedom (its posterior under a flat prior on log sd), so that
 * the interval carries the uncertainty of a noise estimated from few
 * points.
 */
int pfi_index_draws_noise(const struct pfi_curve *c, size_t draws,
                          unsigned long seed, const struct pfi_noise *noise,
                          double *sample, struct pfi_error *err);
int pfi_index_ci_noise(const struct pfi_curve *c, size_t draws,
                       unsigned long seed, const struct pfi_noise *noise,
                       double *lo, double *hi, struct pfi_error *err);

#endif
