/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Replay of a grid event: a cluster power target over time (a trace of
 * timestamped samples) turned into a cut at each step and allocated across
 * a set of jobs by the strategies of alloc.h, step by step.
 *
 * The cut at step k is c_k = max(0, 1 - target_k / baseline), where the
 * baseline is the trace's pre-event level (pfi_target_baseline_auto(): the
 * median of the samples in the first 15 minutes) or given. The jobs' budget
 * is (1 - c_k) times the sum of their uncapped powers, so the jobs are cut
 * by the same fraction as the cluster was asked to be. A budget below the
 * sum of the jobs' floors cannot be met: every job then runs at its floor,
 * the step is counted as infeasible and the watts above the budget are
 * reported (never silently).
 *
 * Each sample holds until the next one (step-hold); the last sample holds
 * for the interval before it. Energy and every time-weighted mean use these
 * durations.
 */
#ifndef PFI_REPLAY_H
#define PFI_REPLAY_H

#include <stddef.h>

#include "pfi/alloc.h"
#include "pfi/error.h"
#include "pfi/oracle.h"

/* The three timestamp forms a trace may use (all its rows the same). */
enum pfi_time_kind {
  PFI_TIME_DATETIME = 1, /* "2025-05-04 14:40:00-07:00": seconds since the
                            Unix epoch, UTC (offset applied; none = UTC) */
  PFI_TIME_CLOCK = 2,    /* "14:00" or "14:00:30": seconds since midnight */
  PFI_TIME_SECONDS = 3   /* "90" or "90.5": seconds as given */
};

/*
 * Parses one timestamp (surrounding spaces allowed):
 *   YYYY-MM-DD[ T]HH:MM[:SS[.fff]][Z | +HH[:MM] | -HH[:MM]]
 *   HH:MM[:SS[.fff]]            (hours 0-23)
 *   a non-negative decimal number of seconds
 * Writes the kind and the seconds. Returns 0, or PFI_EPARSE with *bad set to
 * the 0-based offset of the first offending byte and a message in err
 * (no location: the caller knows the file).
 */
int pfi_time_parse(const char *s, enum pfi_time_kind *kind, double *seconds,
                   size_t *bad, struct pfi_error *err);

/* A power target: n samples in strictly increasing time order. */
struct pfi_target {
  char *name; /* file name for messages; owned */
  size_t n;   /* samples (at least 2) */
  enum pfi_time_kind kind;
  double *t_s;     /* n times (s, as parsed) */
  double *power_w; /* n target powers (W, >= 0) */
  char **label;    /* n timestamps as written in the file (trimmed); owned */
  long *line;      /* n input lines */
};

/*
 * Reads a target trace CSV. time_col / power_col name the columns (NULL:
 * the first of "timestamp", "time", "t" and of "total", "power_w",
 * "power"). Errors (PFI_EPARSE at file:line:column): a missing column, a
 * bad timestamp (column of the offending byte), a kind differing from the
 * first row's, time not strictly increasing, a power that is not a finite
 * number >= 0, fewer than 2 samples; PFI_ENOTFOUND, PFI_EIO, PFI_ENOMEM.
 * Release with pfi_target_release().
 */
int pfi_target_load(struct pfi_target *tg, const char *path,
                    const char *time_col, const char *power_col,
                    struct pfi_error *err);

/* Same from `len` bytes of memory; `name` is used in messages. */
int pfi_target_load_mem(struct pfi_target *tg, const char *name,
                        const char *data, size_t len, const char *time_col,
                        const char *power_col, struct pfi_error *err);

void pfi_target_release(struct pfi_target *tg);

/* Seconds the pre-event window of the automatic baseline spans. */
#define PFI_REPLAY_BASELINE_WINDOW_S 900.0

/*
 * The automatic baseline: the median of the target's samples with
 * t - t_0 < PFI_REPLAY_BASELINE_WINDOW_S (at least the first sample).
 */
double pfi_target_baseline_auto(const struct pfi_target *tg);

/* Duration (s) each sample holds, as described above. */
double pfi_target_dt(const struct pfi_target *tg, size_t k);

/* One strategy replayed over a target. Arrays are owned. */
struct pfi_replay {
  enum pfi_strategy strategy;
  size_t n, njobs;
  double *cut;          /* n: the cut asked at each step, in [0, inf) */
  double *budget_w;     /* n: (1 - cut) * sum of uncapped powers; may be
                           negative when the target is above nothing */
  double *power_w;      /* n: the jobs' total power */
  double *tokens_per_s; /* n: the jobs' total throughput */
  double *normalized;   /* n: tokens_per_s / the uncapped total */
  int *feasible;        /* n: 1 when the budget was met */
  double *short_w;      /* n: power - budget at infeasible steps, else 0 */
  double *job_power_w;  /* n * njobs, row-major by step */
  /* Totals (time-weighted with pfi_target_dt()). */
  double retained;          /* sum dt * tokens / sum dt * uncapped tokens */
  double retained_event;    /* the same over the event steps (cut >=
                               event_min_cut); 1 when there is none */
  size_t event_steps;       /* steps with cut >= event_min_cut */
  double energy_j;          /* sum dt * power_w */
  double max_cut, mean_cut; /* max over steps; time-weighted mean over the
                               event steps (0 when none) */
  size_t infeasible_steps;
  double infeasible_max_w;    /* largest short_w */
  double *job_retained;       /* njobs: sum dt T_i / sum dt T_i,max */
  double *job_retained_event; /* njobs: the same over the event steps */
  double *job_mean_power_w;   /* njobs: time-weighted mean power */
};

/* Default least cut of an event step: a trace wanders a few per cent
 * around its baseline outside an event, and those steps should not dilute
 * the event's figures. */
#define PFI_REPLAY_EVENT_MIN_CUT 0.05

/*
 * Replays strategy s over the target with the given baseline (W, > 0):
 * calls pfi_alloc_run() at each feasible step. Steps with a cut of at least
 * event_min_cut (in (0, 1]) are the event's. `in` as for pfi_alloc_run()
 * (may be NULL for oracle and equal). Errors: PFI_EINVAL (no job, baseline
 * not positive and finite, an input the strategy needs missing),
 * event_min_cut outside (0, 1], PFI_ENUMERIC (oracle), PFI_ENOMEM. Release with
 * pfi_replay_release().
 */
int pfi_replay_run(const struct pfi_problem *p, enum pfi_strategy s,
                   const struct pfi_alloc_inputs *in,
                   const struct pfi_target *tg, double baseline_w,
                   double event_min_cut, struct pfi_replay *out,
                   struct pfi_error *err);

void pfi_replay_release(struct pfi_replay *r);

#endif
