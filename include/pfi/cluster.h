/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The emulated cluster in virtual time (EMULATED: nothing here is a
 * measurement), and the closed-loop run of the controller (control.h)
 * against it. docs/control.md "The emulated cluster" describes the model.
 *
 * Jobs come from the emulator's job library and, out of sample, from its
 * parameter space (drawn, in no library file: the controller knows only
 * their uncapped telemetry and the telemetry model's PFI estimate). They
 * arrive and finish; a multi-GPU job runs at its slowest GPU's pace
 * (emu.h's synchronous steady state, per-GPU caps). Realized power follows
 * a cap change with the dead time and first-order lag fitted to the real
 * V100 step response (data/real/gridpilot-v100), separately for decreases
 * and increases; throughput follows at the job's next step. Run-to-run
 * noise as in the paper (CV 0.4 % power, 0.5 % tokens/s) plus
 * period-to-period noise; evaluations and checkpoints cut power and
 * throughput; faults (data-loader stall, slow or failed worker, a job that
 * does not use its cap, a node whose telemetry stops) are injected on a
 * seeded schedule. The same seed gives the same bytes.
 */
#ifndef PFI_CLUSTER_H
#define PFI_CLUSTER_H

#include <stddef.h>
#include <stdio.h>

#include "pfi/control.h"
#include "pfi/emu.h"
#include "pfi/error.h"

/* Step-response fit (scripts/fit-step-response.py on the V100 trace):
 * dead time and time constant, s, for a decrease and an increase. */
#define PFI_CLUSTER_DOWN_DELAY_S 0.006
#define PFI_CLUSTER_DOWN_TAU_S 0.0074
#define PFI_CLUSTER_UP_DELAY_S 0.090
#define PFI_CLUSTER_UP_TAU_S 0.1443

struct pfi_cluster_config {
  unsigned nodes;              /* default 125 */
  unsigned gpus_per_node;      /* default 8 */
  char profile[8];             /* "h200" (default) or "h100" */
  unsigned long seed;          /* default 1 */
  double library_share;        /* share of jobs from the library, 0..1 (0: all
                                  drawn out of sample; default 0) */
  double fill;                 /* share of GPUs busy at t = 0 (0.95) */
  double job_hours;            /* mean job length, h (exponential; 6) */
  double eval_every_s, eval_s; /* evaluation cadence and length (1800, 60) */
  double ckpt_every_s, ckpt_s; /* checkpoint cadence and length (2400, 45) */
  int faults;                  /* 1: inject one fault of each kind per 250 GPUs
                                  per 3 hours (default 1) */
  double protect_share;        /* share of jobs protected (0.1) */
  double tiered_share;         /* share of jobs with a tier below 100 % (0.5);
                                  tiers drawn from Flex 10 / 25 / 50 % */
  /* The rest of the contract (docs/control.md "Contract"), for the
   * controller to keep live: */
  double tier_max_event_s; /* the tiered jobs' longest event, s (0: none) */
  double tier_notice_s;    /* the notice their tiers need, s (0: none) */
  double deadline_share;   /* share of jobs with a deadline (0) */
  double deadline_frac;    /* their deadline: this share of their uncapped
                              throughput as mean over the event (0.9) */
  double event_notice_s;   /* the notice the event gives, s (0) */
  double announce_s; /* each trainer announces its next pause this long
                        before it starts, s (0: none, the default;
                        docs/control.md "Announced pauses") */
  double announce_err_s; /* each announced start (of a pause, of the end)
                            is off by up to this many seconds, uniform,
                            one draw per pause and per end (0: exact) */
  int cold_start;        /* 1: the jobs running at t = 0 all start then (their
                            start-up, 150 s, first); 0 (default): they started
                            earlier, past their start-up */
  double ckpt_wave_s;    /* a checkpoint wave: every job's checkpoints aligned
                            so that one begins at this time, s (0: none; each
                            job's schedule has its own phase) */
};

void pfi_cluster_config_init(struct pfi_cluster_config *c);

/*
 * Sets one "key=value" pair (keys as the struct fields: nodes,
 * gpus_per_node, profile, seed, library_share, fill, job_hours,
 * eval_every_s, eval_s, ckpt_every_s, ckpt_s, faults, protect_share,
 * tiered_share, tier_max_event_s, tier_notice_s, deadline_share,
 * deadline_frac, event_notice_s, announce_s, announce_err_s, cold_start,
 * ckpt_wave_s). Returns 0 or PFI_EINVAL naming the key.
 */
int pfi_cluster_config_set(struct pfi_cluster_config *c, const char *key,
                           const char *value, struct pfi_error *err);

/*
 * Reads a cluster file: one "key = value" per line, '#' comments, blank
 * lines ignored; or, when `spec` contains '=' and names no file, the same
 * pairs comma-separated ("nodes=4,gpus_per_node=8"). Errors name the file,
 * line and key (PFI_EPARSE, PFI_EIO); a file without a single pair is
 * PFI_EPARSE (the default cluster is not read from a file).
 */
int pfi_cluster_config_read(struct pfi_cluster_config *c, const char *spec,
                            struct pfi_error *err);

struct pfi_cluster;

/* A job of the cluster, as the controller is told about it, plus the
 * truth the evaluation may use (never the controller). */
struct pfi_cluster_job {
  int id;          /* 0, 1, ... in order of arrival */
  char name[96];   /* "j0007-dense-ft-llama70b-x8" or "j0012-new-moe-ft" */
  char family[64]; /* model name */
  int library;     /* 1: a library entry; 0: drawn out of sample */
  size_t ngpus;
  size_t gpu[PFI_EMU_MAX_GPUS];
  double start_s, end_s;
  /* What the controller gets: telemetry-model estimate and uncapped point. */
  double pfi_est, pfi_lo, pfi_hi;
  double pmax_w, tmax;
  double max_loss, min_cap_w;
  int protect;
  double max_event_s, notice_s, deadline_tput; /* 0: none */
  /* Truth (evaluation only). */
  double true_pfi;           /* ratio PFI of its emulated sweep, fine grid */
  struct pfi_emu_job params; /* the emulator's parameters */
};

/* Per-period observation. Arrays owned by the cluster, valid until the
 * next step. */
struct pfi_cluster_obs {
  double t_s;                        /* end of the period */
  const struct pfi_ctl_gpu_obs *gpu; /* one per GPU */
  double power_w;       /* cluster GPU power, the sum of the readings */
  size_t njobs;         /* jobs running (indices into pfi_cluster_job_at) */
  const int *job;       /* their ids */
  const double *tokens; /* observed mean tokens/s, per running job */
  const double *true_tokens; /* noise-free tokens/s, per running job */
  const int *phase;          /* enum pfi_phase, per running job */
  const int *tvalid;         /* throughput reported (0: worker failed to log) */
  /* The trainer's announcement (config announce_s > 0), per running job:
   * its next pause starts this long after t_s, s, and lasts pause_len s;
   * NaN when none is announced (not training, or none due within
   * announce_s). */
  const double *pause_in, *pause_len;
  /* ... and its end (its GPUs idle from then: the emulated job stops at
   * the start of the period its end falls in), s after t_s; NaN when not
   * within announce_s. */
  const double *end_in;
  const int *started;        /* ids that started this period */
  size_t nstarted;
  const int *ended; /* ids that ended this period */
  size_t nended;
};

/*
 * Builds the cluster: loads the job library (`jobs_path` NULL: default),
 * fits the telemetry model (PFI ~ DRAM copy product of the uncapped run)
 * on the library, draws the job schedule for `horizon_s` seconds. Errors:
 * PFI_EINVAL, PFI_ENOMEM, the library's. Close with pfi_cluster_close().
 */
int pfi_cluster_open(struct pfi_cluster **cl,
                     const struct pfi_cluster_config *c, const char *jobs_path,
                     double horizon_s, struct pfi_error *err);
void pfi_cluster_close(struct pfi_cluster *cl);

size_t pfi_cluster_ngpus(const struct pfi_cluster *cl);
/* Power-limit range of every GPU, W. */
void pfi_cluster_limits(const struct pfi_cluster *cl, double *min_w,
                        double *max_w);
size_t pfi_cluster_njobs_total(const struct pfi_cluster *cl);
/* Job by id, or NULL. */
const struct pfi_cluster_job *pfi_cluster_job_at(const struct pfi_cluster *cl,
                                                 int id);

/*
 * Advances virtual time by `dt_s` with the caps `cap_w` (one per GPU, W,
 * clamped to the limits) set at the start of the period, and fills `obs`.
 * Returns 0, PFI_EINVAL (dt_s not in (0, 3600]), PFI_ENOMEM.
 */
int pfi_cluster_step(struct pfi_cluster *cl, const double *cap_w, double dt_s,
                     struct pfi_cluster_obs *obs, struct pfi_error *err);

/*
 * The true curve of job `id` at uniform caps: n points (n <= 64) from the
 * lowest cap to the highest, aggregate power W and noise-free tokens/s in
 * training. Returns the number written, or a negative error.
 */
int pfi_cluster_true_curve(const struct pfi_cluster *cl, int id,
                           double *power_w, double *tokens, size_t n);

/* ---- targets ------------------------------------------------------------ */

/*
 * The event's target over time. Forms:
 *   "75%"  / "0.75"     a constant share of the pre-event baseline
 *   "300000W" / "300kW" a constant power
 *   a timeline file     lines "start_s ramp_s hold_s target" (target W or
 *                       % of baseline), '#' comments
 *   "trace:FILE[:COL]"  a power trace to follow (CSV with a time column of
 *                       minutes or timestamps and a power column), scaled
 *                       so its first value is the baseline
 * Outside the event the target is NaN.
 */
struct pfi_event {
  int kind; /* 0 constant share, 1 constant W, 2 timeline, 3 trace */
  double value;
  double start_s, ramp_s, hold_s;
  size_t n;
  double *t_s, *frac; /* trace: times from its start and shares of its
                         baseline; owned */
  char desc[128];
};

/* Parses a target spec; `start_s`, `ramp_s`, `hold_s` apply to the
 * constant forms. Errors name the file and line (PFI_EPARSE, PFI_EIO,
 * PFI_EINVAL). Release with pfi_event_release(). */
int pfi_event_parse(struct pfi_event *t, const char *spec, double start_s,
                    double ramp_s, double hold_s, struct pfi_error *err);
void pfi_event_release(struct pfi_event *t);
/* Target at time t_s for baseline `baseline_w`: NaN outside the event. */
double pfi_event_target(const struct pfi_event *t, double t_s,
                        double baseline_w);
/* End of the event, s. */
double pfi_event_end(const struct pfi_event *t);

/*
 * Reads the Phoenix event from an SRP cluster-power CSV (columns
 * "timestamp" local time and "total_power_W"... see docs): the window
 * [from, to) local time on `date`, the baseline the median of its first 15
 * minutes, and each minute's power as a share of it (written to `t`, kind
 * 3). `emerald` (may be NULL) receives the delivered-cut summary:
 * mean cut, minutes above target (power > (1 - cut) baseline).
 */
struct pfi_emerald {
  double baseline_w, mean_cut, minutes, minutes_above;
};
int pfi_event_srp(struct pfi_event *t, const char *path, const char *date,
                  const char *from, const char *to, double cut,
                  struct pfi_emerald *emerald, struct pfi_error *err);

/* ---- the closed-loop run ------------------------------------------------ */

enum pfi_ctl_strategy {
  PFI_RUN_CONTROLLER = 0, /* the controller as configured */
  PFI_RUN_EQUAL = 1,      /* equal-weight cuts in the same closed loop */
  PFI_RUN_ORACLE = 2      /* the true curves, perfect tracking (no loop) */
};

struct pfi_run_result {
  double baseline_w; /* median realized power of the pre-event minutes */
  double event_s, ramp_end_s, end_s; /* event start, end of ramp, end */
  double track_mean, track_p99;      /* |P - T| / T after the ramp, share */
  double within_1pct;      /* share of seconds after the ramp within 1 % */
  double secs_above;       /* seconds above the target (event) */
  double secs_above_1pct;  /* seconds above target + 1 % */
  double ws_above;         /* W.s above the target */
  double time_to_target_s; /* from the event start to the first second
                              within 1 % (NaN never) */
  double tokens_event;     /* tokens produced during the event (observed) */
  double tokens_after10;   /* the same from 10 min after the start */
  double tokens_oracle;    /* the oracle on the true curves with perfect
                              tracking, same seconds, same jobs */
  double tokens_oracle_after10;
  double recovery_peak_w; /* highest second from event end to caps back */
  double recovery_s;      /* time until every cap is back */
  double cap_changes_per_gpu_h;
  size_t records, anomalies, rollbacks, infeasible_s;
  size_t floor_violations, tier_violations;
  double mean_shortfall_w;
  double mean_cut;      /* 1 - mean realized power over the event / baseline */
  double minutes_above; /* minutes whose mean power is above their mean
                           target (as a one-minute meter would see it) */
  /* The same oracle held to every job's tier (not below the power where
   * its true curve keeps 1 - max_loss of its uncapped throughput): the
   * best any allocation within the tiers does, where tokens_oracle is
   * not bound by them. */
  double tokens_oracle_tiers, tokens_oracle_tiers_after10;
  /* The contract: records naming it (reasons contract, deadline); jobs
   * with a deadline that ran the whole event, and those of them whose
   * mean observed throughput over it fell below their deadline. */
  size_t contract_records, deadline_records, deadline_jobs, deadline_missed;
  /* The tokens above valued by the controller's objective (objective.h:
   * each job's true tokens times its factor, work: its GPUs over its true
   * uncapped throughput; throughput: 1, the same numbers), the oracle's
   * maximizing that objective: what the gap closed is measured in. */
  double value_event, value_after10, value_oracle, value_oracle_after10;
  double value_oracle_tiers, value_oracle_tiers_after10;
};

/* Per-second callback (figures, JSON): t, target (NaN outside), realized,
 * and the records of the period. May be NULL. Returns 0 or an error that
 * stops the run. */
typedef int (*pfi_run_cb)(void *ctx, double t_s, double target_w,
                          double realized_w, const struct pfi_ctl_output *out,
                          struct pfi_error *err);

/*
 * Runs the cluster from t = 0 to the event's end plus `tail_s`, the
 * controller (or strategy) closing the loop each period. Returns 0 or an
 * error.
 */
int pfi_run_closed_loop(const struct pfi_cluster_config *cc,
                        const char *jobs_path, const struct pfi_ctl_config *cfg,
                        const struct pfi_event *target, double tail_s,
                        enum pfi_ctl_strategy strategy, pfi_run_cb cb,
                        void *ctx, struct pfi_run_result *res,
                        struct pfi_error *err);

#endif
