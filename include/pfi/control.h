/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The power controller: one call per control period takes the grid target,
 * per-GPU telemetry and per-job throughput and returns per-GPU caps and the
 * records of its decisions. No I/O of its own: `pfi control --emulate`
 * drives it against the emulated cluster (cluster.h), `pfid` against a
 * fleet. docs/control.md describes the algorithm and every rule.
 *
 * In one paragraph. Each job has a belief about its power-throughput curve
 * (aggregate realized power W -> tokens/s): a prior from its estimated PFI
 * (the telemetry model) and its uncapped operating point, replaced where
 * the job's own settled cap changes have produced (power, throughput)
 * points. During an event the exact oracle (oracle.h) allocates the power
 * budget on the believed curves (protected jobs valued by a lower
 * confidence bound), within each job's floor (minimum cap, tier). A
 * feedback loop on realized cluster power keeps the draw below the target
 * by a margin; caps change in two phases (decreases first, increases only
 * once the decreases show in the realized draw), increases ramp-limited. A
 * protected job losing more than believed gets its power back (rollback);
 * a job slower than its curve at its realized power for a reason other
 * than the cap is flagged as an anomaly and not learned from. At the end
 * of the event caps return in a seeded random order, ramp-limited, so that
 * cluster power stays at or below the pre-event baseline.
 *
 * Units: watts, seconds, tokens/s. API stability: fields and functions are
 * only ever appended; PFI_CTL_API_VERSION counts the additions.
 */
#ifndef PFI_CONTROL_H
#define PFI_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/phase.h"

#define PFI_CTL_API_VERSION 8

/* Why a job's caps changed (or why a record was written without a
 * change). Append only: values are stored in records databases. */
enum pfi_ctl_reason {
  PFI_CTL_CUT = 0,        /* allocation lowered the job's caps */
  PFI_CTL_RAISE = 1,      /* allocation raised them during an event */
  PFI_CTL_ROLLBACK = 2,   /* protected job steeper than believed */
  PFI_CTL_FLOOR = 3,      /* held at its floor (minimum cap or tier) */
  PFI_CTL_RECOVERY = 4,   /* returned toward the pre-event cap */
  PFI_CTL_ANOMALY = 5,    /* slower than its curve, not the cap: flagged */
  PFI_CTL_INFEASIBLE = 6, /* floors above the target: shortfall recorded */
  PFI_CTL_PROBE = 7,      /* cut below its allocation to learn its curve
                             there, the value of the information above the
                             throughput it costs (docs/control.md "Probes") */
  PFI_CTL_CONTRACT = 8,   /* held by the tier's contract: released at its
                             longest event (caps back up, ramp-limited) or
                             not cut (the event gave less notice than the
                             tier needs) (docs/control.md "Contract") */
  PFI_CTL_DEADLINE = 9,   /* held at the floor that keeps its deadline (a
                             minimum mean throughput over the event) */
  PFI_CTL_REASON__COUNT
};

/* "cut", "raise", "rollback", "floor", "recovery", "anomaly",
 * "infeasible", "probe", "contract", "deadline"; "?" for anything else. */
const char *pfi_ctl_reason_name(int reason);
/* Reason by name, or -1. */
int pfi_ctl_reason_parse(const char *name);

/* The range of a margin (margin, recovery_margin), the one every option
 * that sets one states: from PFI_CTL_MARGIN_MIN up to, not including,
 * PFI_CTL_MARGIN_MAX. */
#define PFI_CTL_MARGIN_MIN 0.0
#define PFI_CTL_MARGIN_MAX 0.5

/* Tunables. pfi_ctl_config_init() sets the documented defaults. */
struct pfi_ctl_config {
  double period_s;      /* control period, s (default 1) */
  double margin;        /* aim this share below the target (0.002) */
  double ramp_up_w_s;   /* most a GPU's cap rises per second, W/s (100) */
  double ramp_down_w_s; /* most it falls per second, W/s; 0: no limit (0) */
  double settle_s;      /* after a job's cap change, seconds before its
                           points are learned or judged (3) */
  double learn_s;       /* seconds of settled samples averaged into one
                           learned point (5) */
  double rollback_z;    /* rollback when a protected job's throughput is
                           this many standard errors below its predicted
                           value (4) */
  double anomaly_frac;  /* anomaly when throughput is this share below the
                           believed curve at the realized power with no
                           cap change to explain it (0.05) */
  double tokens_cv;     /* run-to-run noise of throughput, share (0.005) */
  double recovery_s;    /* the recovery window: every job is back at its
                           pre-event caps within it, s (900) */
  unsigned long seed;   /* randomized recovery order (1) */
  int strategy;         /* 0: the exact oracle on the believed curves
                           (default); 1: equal-weight cuts (every job's
                           power cut by the same share of its uncapped
                           power, same loop, floors and rules), the
                           baseline the controller is measured against */
  double probe_horizon_s; /* seconds over which what a probe teaches is
                             valued (docs/control.md "Probes"; 600 turns
                             them on); 0 (default): no probes */
  int draw_learn;         /* 1 (default): the draw per cap learned per job
                             from its periods under a binding cap
                             (docs/control.md "Draw"); 0: a single
                             draw-per-cap ratio, smoothed */
  int target_over_tiers; /* 0 (default): the tiers hold; a budget below
                            the tier floors is infeasible, every job held
                            at its floor and the shortfall recorded.
                            1: the target wins over the tiers (they are
                            dropped while the budget is below them) */
  /* Appended in API version 6. */
  double recovery_margin; /* the recovery's raises aim this share of the
                             ceiling below the cluster's ramp line (the
                             readings' noise; 0.004). Once the line passes
                             the ceiling every job comes back */
  /* Appended in API version 7 (docs/control.md "Recovery"). */
  double recovery_ramp_w_s; /* the cluster's ramp after an event, W/s:
                               its committed draw rises at most this fast;
                               0 (default): 5 % of the ceiling (the draw
                               of the jobs at their pre-event caps) per
                               second. Never slower than what reaches the
                               ceiling by half the recovery window */
  /* Appended in API version 8. */
  /* What the oracle's split maximizes (enum pfi_objective_kind,
   * objective.h): PFI_OBJ_WORK (the default), each job's believed share
   * of its uncapped throughput times its GPUs (unit-free);
   * PFI_OBJ_THROUGHPUT, the believed tokens/s summed across jobs (the
   * default before API version 8's validation, docs/control.md);
   * PFI_OBJ_JOBS, the share alone. */
  int objective;
};

void pfi_ctl_config_init(struct pfi_ctl_config *c);

/* A job as the controller is told about it (all strings copied). */
struct pfi_ctl_job {
  const char *id;     /* unique among the controller's jobs */
  const char *family; /* model family ("Llama-3.1-70B"), may be NULL */
  size_t ngpus;       /* 1.. */
  const size_t *gpu;  /* its GPUs: indices 0..ngpus_cluster-1 */
  double pfi;         /* estimated PFI (telemetry model); NaN unknown */
  double pfi_lo;      /* lower end of its interval; NaN unknown */
  double pfi_hi;      /* upper end; NaN unknown */
  double max_loss;    /* tier: largest tolerated throughput loss, 0..1
                         (Flex 0 / 10 / 25 / 50 % = 0, .1, .25, .5) */
  double min_cap_w;   /* floor: lowest cap per GPU, W (0: the GPU's) */
  int protect;        /* 1: valued by a lower confidence bound and
                         subject to the rollback rule */
  double pmax_w;      /* uncapped realized power of the whole job, W, as
                         its uncapped telemetry showed; NaN: learned
                         from the job's own uncapped periods */
  double tmax;        /* uncapped throughput, tokens/s; NaN: learned */
  /* The rest of the tier's contract (docs/control.md "Contract"); 0 or
   * NaN: none. Appended in API version 3. */
  double max_event_s;   /* the tier's longest event, s: from this long
                           after the event's start the job is released
                           (its caps back up to the pre-event ones,
                           ramp-limited; the others absorb it) */
  double notice_s;      /* the notice the tier needs, s: an event that gave
                           less does not cut the job at all */
  double deadline_tput; /* the job's deadline: the least mean throughput
                           over the event, tokens/s; each period its floor
                           is the power where its believed curve (lower
                           confidence bound) keeps that mean, given what
                           it has delivered so far */
};

/* One GPU's observation over the last period. */
struct pfi_ctl_gpu_obs {
  int valid;      /* 0: no telemetry this period (node silent) */
  double power_w; /* mean realized power over the period, W */
  double cap_w;   /* enforced cap read back, W */
};

/* One job's observation over the last period. */
struct pfi_ctl_job_obs {
  int valid;           /* 0: no throughput report this period */
  double tokens_per_s; /* mean throughput over the period */
  int phase;           /* enum pfi_phase, or -1 unknown; evaluation and
                          checkpoints are PFI_PHASE_PAUSE */
  /* Appended in API version 6: the trainer's announcement of its next
   * pause (an evaluation or a checkpoint due on its schedule, which a
   * trainer knows in steps), for a job that gives one (docs/control.md
   * "Announced pauses"). A job that has announced once is held for its
   * announced pauses only, not for pauses foreseen from its history. */
  int pause_announced; /* 1: pause_in_s and pause_len_s are given */
  double pause_in_s;   /* its next pause starts this long after t_s, s
                          (>= 0) */
  double pause_len_s;  /* and is expected to last this long, s (NaN or
                          <= 0: unknown) */
  int end_announced;   /* 1: end_in_s is given */
  double end_in_s;     /* the job ends (its last step) this long after t_s,
                          s (>= 0): its GPUs fall to idle */
};

/* A recovery in progress, to hand to a controller that takes over. */
struct pfi_ctl_recovery {
  char event[64];    /* the event recovered from */
  double baseline_w; /* the pre-event baseline, W, for the records (NaN or
                        0: unknown; the recovery does not depend on it) */
  double t0_s;       /* when it began, on the saving controller's clock:
                        its window counts from there */
};

/* Input of one period. Arrays are borrowed for the call. */
struct pfi_ctl_input {
  double t_s;           /* time at the end of the period, s */
  int event;            /* nonzero while a grid event asks for less. The
                           caps returned are in force during the next
                           period, so an event (announced) is passed from
                           the call at its start, not the one after */
  const char *event_id; /* name of the event (records), may be NULL */
  double target_w;      /* the cluster's GPU power target, W (event) */
  const struct pfi_ctl_gpu_obs *gpu; /* pfi_ctl_ngpus() entries */
  const struct pfi_ctl_job_obs *job; /* pfi_ctl_nslots() entries, by slot;
                                        unused slots are ignored */
  double baseline_w; /* pre-event baseline, W, read when the event starts
                        (reported, pfi_ctl_baseline; the recovery does not
                        depend on it); NaN or 0: the median realized power
                        of the last 300 periods before it */
  /* The event's terms (appended in API version 3), read when it starts. */
  double event_start_s; /* the event's start on the t_s clock, s (may be
                           negative: before the clock's origin); NaN or
                           0: the period it is first passed in */
  double notice_s;      /* notice the event gave (its start less the time
                           it became known), s; NaN or 0: none */
  double event_end_s;   /* its planned end on the t_s clock, s; NaN or 0:
                           unknown (a deadline is then kept on the mean
                           so far, period by period) */
  /* Each GPU's cap before the event (pfi_ctl_ngpus() entries, or NULL),
   * read when the event starts: the ceiling the event's caps return to,
   * for a controller opened while an event was already in force (its
   * caps in force are not the pre-event ones: pfid rebuilding its module).
   * NULL, or an entry that is NaN or outside the GPU's range: the cap in
   * force. */
  const double *pre_cap_w;
  /* A recovery another controller began (pfi_ctl_recovery_save; appended
   * in API version 5), its t0_s shifted to this controller's clock: read
   * on this controller's first period, when `event` is 0, it recovers as
   * if its own event had ended, from the caps in force up to pre_cap_w
   * (its ceilings), staggered and ramp-limited under the baseline given.
   * pfid passes it when it rebuilds its module after an event's end (else
   * the new module, outside any event, would hand every cap back at once).
   * NULL: none. */
  const struct pfi_ctl_recovery *resume;
};


/* One decision about one job. Written before its caps are applied (the
 * *_after fields NaN) and completed in a later period (complete = 1). */
struct pfi_ctl_record {
  uint64_t seq;    /* unique per controller, from 1 */
  double t_s;      /* decision time */
  char event[64];  /* "" outside an event */
  double target_w; /* the target at the decision, NaN when none */
  char job[96];
  char family[64];            /* "" when unknown */
  char phase[16];             /* training phase when known ("training"), "" */
  double cap_req_w;           /* requested cap (mean over the job's GPUs) */
  double cap_enf_w;           /* enforced cap read back after (NaN pending) */
  double draw_w;              /* the job's realized draw after (NaN pending) */
  double pfi, pfi_lo, pfi_hi; /* belief: PFI on the job's current range */
  double tput_before;         /* tokens/s before the decision */
  double tput_pred;           /* predicted by the belief at the new caps */
  double tput_after;          /* observed after settling (NaN pending) */
  int reason;                 /* enum pfi_ctl_reason */
  double max_loss;            /* the job's tier */
  int protect;
  double shortfall_w; /* infeasible: watts the floors exceed the
                         target by; 0 otherwise */
  int complete;
};

/* Output of one period. Arrays are the controller's, valid until the next
 * call of pfi_ctl_step() or pfi_ctl_close(). */
struct pfi_ctl_output {
  const double *cap_w;              /* pfi_ctl_ngpus() caps to apply, W */
  const struct pfi_ctl_record *rec; /* decisions of this period */
  size_t nrec;
  const struct pfi_ctl_record *done; /* earlier decisions now complete */
  size_t ndone;
  double aim_w;       /* the power the loop aims at, W (NaN: no event) */
  double budget_w;    /* what the oracle allocated, W */
  int infeasible;     /* 1: the floors exceed the target */
  double shortfall_w; /* by how many watts */
  double pred_tokens; /* believed total value at the new caps, by the
                         config's objective (tokens/s under throughput,
                         GPU-equivalents under work) */
  int recovering;     /* 1 while the staggered recovery runs */
  int infeasible_reason; /* the term whose floors exceed the target:
                            PFI_CTL_FLOOR (minimum caps, tiers),
                            PFI_CTL_CONTRACT (longest event, notice) or
                            PFI_CTL_DEADLINE; -1 when feasible */
  /* Appended in API version 7: while recovering (NaN otherwise). */
  double recovery_limit_w;   /* the cluster's ramp line for the next
                                period, at most the ceiling, W */
  double recovery_ceiling_w; /* the draw with every job at its pre-event
                                caps, as believed, W */
  double recovery_rate_w_s;  /* the line's slope, W/s */
  double recovery_left_s;    /* the window left, s */
  int recovery_held;         /* 1: no job could rise this period (the
                                committed draw is on the line: a paused
                                job's return or a raise still to show) */
};

struct pfi_ctl;

/*
 * Creates a controller for a cluster of `ngpus` GPUs with power-limit
 * ranges min_w[g]..max_w[g] (W; copied). `cfg` NULL means the defaults.
 * Errors: PFI_EINVAL (a bad range or tunable, named), PFI_ENOMEM. Close
 * with pfi_ctl_close().
 */
int pfi_ctl_open(struct pfi_ctl **ctl, const struct pfi_ctl_config *cfg,
                 size_t ngpus, const double *min_w, const double *max_w,
                 struct pfi_error *err);
void pfi_ctl_close(struct pfi_ctl *ctl);

size_t pfi_ctl_ngpus(const struct pfi_ctl *ctl);
/* The cap GPU g returns to after the event in force (its pre-event cap),
 * W; NaN outside an event and its recovery or for g out of range. */
double pfi_ctl_pre_cap(const struct pfi_ctl *ctl, size_t g);
/* While ctl recovers from an event: fills *r and returns 1; else 0 (*r
 * untouched). With pfi_ctl_pre_cap of each GPU, what a new controller
 * needs to go on with the recovery (pfi_ctl_input.resume). */
int pfi_ctl_recovery_save(const struct pfi_ctl *ctl,
                          struct pfi_ctl_recovery *r);
/* The pre-event baseline of the event in force or recovered from, W; NaN
 * outside an event and its recovery. */
double pfi_ctl_baseline(const struct pfi_ctl *ctl);
/* Number of job slots (the length of pfi_ctl_input.job). */
size_t pfi_ctl_nslots(const struct pfi_ctl *ctl);

/*
 * Adds a job; returns its slot (>= 0), stable until the job is removed, or
 * PFI_EINVAL (duplicate id, GPU out of range or already in a job, bad
 * tier or PFI), PFI_ENOMEM. Slots of removed jobs are reused.
 */
int pfi_ctl_job_add(struct pfi_ctl *ctl, const struct pfi_ctl_job *job,
                    struct pfi_error *err);
/* Removes the job in `slot` (finished); its GPUs become free. Returns 0 or
 * PFI_ENOTFOUND. */
int pfi_ctl_job_remove(struct pfi_ctl *ctl, int slot, struct pfi_error *err);
/* Slot of job `id`, or PFI_ENOTFOUND. */
int pfi_ctl_job_find(const struct pfi_ctl *ctl, const char *id);

/*
 * One control period. Reads `in` (its arrays sized as above), updates the
 * beliefs and writes `out`. Outside an event the caps are the ones read
 * back (nothing changes) until an event has ended, when the staggered
 * recovery returns every GPU to the cap it had before the event. Errors:
 * PFI_EINVAL (time not increasing, non-finite target or observation),
 * PFI_ENUMERIC, PFI_ENOMEM; on error the caps in `out` are the current
 * ones (no change).
 */
int pfi_ctl_step(struct pfi_ctl *ctl, const struct pfi_ctl_input *in,
                 struct pfi_ctl_output *out, struct pfi_error *err);

/* What the controller believes about one job (for tests, the CLI). */
struct pfi_ctl_belief {
  double pmax_w;    /* uncapped realized power, W (NaN unknown yet) */
  double tmax;      /* uncapped throughput (NaN unknown yet) */
  double floor_w;   /* current floor, W */
  double pfi;       /* believed PFI over the job's range */
  size_t npoints;   /* learned (power, throughput) points */
  int anomaly;      /* 1 while flagged */
  size_t anomalies; /* periods flagged so far */
  size_t rollbacks; /* rollbacks so far */
  double cap_w;     /* current requested cap (mean over its GPUs) */
  double draw_w;    /* modelled draw in training at that cap, W */
  int contract;     /* this event: PFI_CTL_CONTRACT (released or not cut),
                       PFI_CTL_DEADLINE (a deadline floor binds) or -1 */
  double delivered; /* tokens delivered since the event's start (its
                       first period under the controller) */
  double cap_hi_w;  /* its ceiling, W per GPU: during an event and its
                       recovery its pre-event caps; outside them the caps
                       in force (an operator's own limit under the GPU's
                       maximum is the top of the job's range) */
};

/* Belief of the job in `slot`; returns 0 or PFI_ENOTFOUND. */
int pfi_ctl_job_belief(const struct pfi_ctl *ctl, int slot,
                       struct pfi_ctl_belief *b, struct pfi_error *err);

/* Believed throughput of the job in `slot` at aggregate power `power_w`
 * (NaN when unknown). */
double pfi_ctl_job_predict(const struct pfi_ctl *ctl, int slot, double power_w);

/*
 * A job's memory, carried from one controller to the next (appended in API
 * version 4): a controller's GPUs are fixed when it is opened, so a user
 * whose cluster changes (a node or job comes or goes) opens a new one and
 * carries each remaining job's memory into it. Saved with
 * pfi_ctl_job_save() before the old one is closed, restored with
 * pfi_ctl_job_restore() once the job is added to the new one.
 *
 * The rule: a memory restores into the job of the same id with the same
 * GPU count and the same tier (max_loss); a job whose GPU count or tier
 * changed starts again (its curve is not the one learned). What it
 * carries: the learned (power, throughput) points, the uncapped point when
 * it was learned from the job's own uncapped periods (not a hint given in
 * pfi_ctl_job: the new job's hint stands until it is), the draw model
 * learned under binding caps, and, when it was saved during an event, the
 * tokens delivered since the job's start in that event and that start: the
 * new controller keeps counting them when the same event (by id) starts
 * in it. Not carried: the pause kinds, anomaly and rollback state, the
 * pending record, probes (the new controller learns them again).
 */
#define PFI_CTL_MEMORY_POINTS 24
#define PFI_CTL_MEMORY_DRAWS 8

struct pfi_ctl_memory {
  char id[96];
  size_t ngpus;    /* the job's GPU count when saved */
  double max_loss; /* its tier when saved */
  double pmax_w;   /* uncapped realized power learned, W (NaN: none) */
  double tmax;     /* uncapped throughput learned (NaN: none) */
  double nmax;     /* uncapped periods behind them (0: not learned) */
  size_t npoints;  /* learned (power, throughput) points */
  struct {
    double cap_w, power_w, tokens; /* per-GPU cap, mean power, tokens/s */
    double n, m2; /* periods averaged; sum of squared deviations of tokens */
  } point[PFI_CTL_MEMORY_POINTS];
  double draw_ratio; /* first-guess draw / (GPUs x cap) */
  size_t ndraws;     /* learned draw points */
  struct {
    double cap_w, draw_w, n; /* per-GPU cap, mean aggregate draw, periods */
  } draw[PFI_CTL_MEMORY_DRAWS];
  char event[64];   /* the event the delivered tokens count in ("": none) */
  double delivered; /* tokens delivered since delivered_t0 in it */
  double delivered_t0, delivered_tlast; /* their start and the time they
                                           were counted to, on the saving
                                           controller's clock, s */
  int contract_noted; /* its contract record written in that event */
  int delivered_own;  /* 1: the job started during the event (its longest
                         event counts from delivered_t0) */
};

/* Saves the memory of the job in `slot`. Returns 0 or PFI_ENOTFOUND. */
int pfi_ctl_job_save(const struct pfi_ctl *ctl, int slot,
                     struct pfi_ctl_memory *m, struct pfi_error *err);
/*
 * Restores `m` into the job in `slot` of a controller (one that has not
 * yet learned anything of its own about the job: its memory is replaced).
 * `t_shift_s` is this controller's clock minus the saving one's at the
 * same instant (each controller's t_s is the caller's). Returns 1 when
 * restored, 0 when the rule above starts the job again (GPU count or tier
 * changed: nothing restored), PFI_ENOTFOUND (no job in `slot`) or
 * PFI_EINVAL (another job's id, a memory out of range: named).
 */
int pfi_ctl_job_restore(struct pfi_ctl *ctl, int slot,
                        const struct pfi_ctl_memory *m, double t_shift_s,
                        struct pfi_error *err);

#endif
