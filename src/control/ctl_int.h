/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal state of the controller (control.h), shared by controller.c
 * (the period) and belief.c (the curve a job is believed to have). */
#ifndef PFI_CTL_INT_H
#define PFI_CTL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/control.h"
#include "pfi/oracle.h"

/* Learned points per job: one per distinct cap (1 W bins), at most. */
#define PFI__CTL_MAXPTS 24

struct pfi__ctl_pt {
  double cap_w;   /* per-GPU cap the point was measured at */
  double power_w; /* mean aggregate realized power */
  double tokens;  /* mean throughput */
  double n;       /* periods averaged */
  double m2;      /* sum of squared deviations of tokens (Welford) */
};

/* Draw points per job: realized draw at a cap (caps within DRAW_BIN_W of
 * one another share a point). */
#define PFI__CTL_MAXDPTS 8

struct pfi__ctl_dpt {
  double cap_w;  /* per-GPU cap */
  double draw_w; /* mean aggregate realized draw there, W */
  double n;      /* periods in the mean (at most 10: it follows drift) */
};

/* A kind of pause a job has shown (docs/control.md "Foreseen pauses"):
 * pauses of about the same length (an evaluation, a checkpoint) come on
 * the trainer's schedule, every `period_s` from the last one's start. */
#define PFI__CTL_KINDS 4

struct pfi__ctl_kind {
  double len_s;    /* length of its last pause end to end, s */
  double last_s;   /* when its last pause was first seen (call time) */
  double period_s; /* start to start (NaN: not yet seen twice) */
  double ratio;    /* draw in a pause's first period / draw before it */
  double depth;    /* draw in its second period / draw before it began (in
                      the cluster's kinds, and the ratio: the last any job
                      showed) */
  /* The cluster's kinds: a GPU's draw in a pause's second period y
   * against its draw before it x, y = a + b x fitted by least squares
   * over the pauses seen, each weighted 0.9 of the one after it. */
  double fw, fx, fy, fxx, fxy;
};

/* The least paused share of a period from which the pause's depth is
 * taken (observe.c, classify()): below it, the throughput's noise (0.5 %)
 * makes the depth too uncertain. */
#define PAUSE_F_MIN 0.15

struct pfi__ctl_job {
  int used;
  char id[96], family[64];
  size_t ngpus;
  size_t *gpu; /* owned */
  double pfi, pfi_lo, pfi_hi, max_loss, min_cap_w;
  double cap_lo; /* its lowest cap: the floor or its GPUs' minimum */
  double g_pfi[3], g_lo[3], g_hi[3], g_val[3]; /* prior exponent cache */
  int protect;
  /* Uncapped operating point: hint, then running means of uncapped
   * training periods. */
  double pmax, tmax;
  double nmax; /* periods in the running means (0: only the hint) */
  int pmax_hint, tmax_hint;
  double ratio; /* the prior's draw / (GPUs x cap) where the cap binds */
  /* Draw learned under binding caps (belief.c pfi__ctl_draw_at). */
  struct pfi__ctl_dpt dpts[PFI__CTL_MAXDPTS];
  size_t ndpts;
  double cap; /* requested cap, mean over the job's GPUs */
  double last_change_t;
  int last_dir;   /* that change: 1 an increase, -1 a decrease */
  double win_cap; /* cap at the start of the window being settled */
  /* The settled window being accumulated. */
  double acc_p, acc_t, acc_t2, acc_n, acc_cap;
  int acc_after_change; /* 1: first window after a cap change */
  struct pfi__ctl_pt pts[PFI__CTL_MAXPTS];
  size_t npts;
  int anomaly, anom_run, clear_run;
  size_t anomalies, rollbacks;
  double rollback_floor;  /* aggregate power floor set by a rollback, W */
  double draw_before_cut; /* the job's draw before its last decrease, W */
  int rollback_now;       /* 1: a rollback fired this period */
  /* Probe (docs/control.md "Probes"): held at probe_p W until probe_until
   * (0: none), not probed again before probe_next. */
  double probe_p, probe_until, probe_next;
  size_t probes;
  int in_order; /* 1: in the recovery order */
  /* Last period. */
  double draw, tput;
  int tput_valid, phase, blind;
  /* Pauses (evaluation, checkpoint): when the current one began (NaN while
   * training) and the shortest one seen end to end (NaN: none yet), so that
   * a resumption is provided for only when it can come. */
  double pause_t0, pause_min;
  /* Its pause kinds, and the pause in progress: the draw of the training
   * period before it and of its first period (ratio NaN when the period
   * before was held for a foreseen pause: not its training draw). */
  struct pfi__ctl_kind kinds[PFI__CTL_KINDS];
  size_t nkinds;
  double pause_ratio;
  double pause_len;  /* expected length of the pause in progress (NaN: of a
                        kind not due, the shortest seen is assumed) */
  int foreseen;      /* 1: the caps set last were held for a foreseen pause */
  int foreseen_prev; /* the same for the period before */
  double start_t0;   /* when its startup was first seen (NaN: not starting) */
  /* Its trainer's announcements (docs/control.md "Announced pauses"):
   * whether it has announced one; the announced pause's start on the t_s
   * clock (NaN: none pending), length (NaN: unknown) and the job's draw in
   * the last period before that start. */
  int announces;
  double ann_at, ann_len, ann_pre;
  /* The announced start the controller acted on for the pause to come
   * (NaN: none), and how late its trainer's pauses began after it: the
   * latest, decaying (0.8 a pause; 0 until one is seen; a pause that did
   * not come counts two periods late). */
  double ann_acted, ann_late;
  int ann_seen;
  /* Its announced end on the t_s clock (NaN: none) and its draw in the
   * last period before it. */
  double end_at, end_pre;
  /* Its draw one and two periods back; the pause in progress: the draw
   * before it began and its depth (the draw of its second paused period
   * over that one). */
  double draw_1, draw_2, pause_pre, pause_depth;
  /* The share of a pause's first reported period that was paused, from
   * the throughput it kept against the training period before (NAN: not
   * known: caps changed, too small a share to tell). */
  double pause_f;
  /* Its last raise in an event: when (call time), its draw before it and
   * its modelled draw at the new caps, W. */
  double raise_t, raise_d0, raise_m1;
  double pred_at_change; /* belief at the caps of the last change */
  double tput_before_change;
  /* The pending record (index in the controller's pending list + 1). */
  size_t pending;
  /* The rest of the tier's contract (contract.c); 0: none. */
  double max_event_s, notice_s, deadline_tput;
  /* This event: tokens delivered since ct_t0 (NaN: not yet counted), the
   * time they were counted to, the term that holds it (-1: none) and
   * whether its exemption was recorded. */
  double ct_tokens, ct_t0, ct_tlast;
  int ct_term, ct_noted;
  int ct_late; /* 1: started during the event (counts from ct_t0) */
  /* A count restored from another controller (memory.c): the event it
   * counts in, kept when that event starts here ("": none). */
  char ct_event[64];
};

struct pfi_ctl {
  struct pfi_ctl_config cfg;
  /* The shortest pause and startup seen on any job (NaN: none yet): the
   * earliest a job without its own history resumes. */
  double pause_min_all, startup_min_all;
  /* How late any trainer's announced pauses began after their announced
   * start, s: the latest, decaying (0.95 a pause; 0 until one is seen).
   * A job's first announced pause, and every announced end, take it. */
  double ann_late_all;
  double idle_w; /* a free GPU's draw, the newest mean (NaN: none seen) */
  /* The cluster's pause kinds: length and the period last shown by a
   * job's pauses of that length (len_s and period_s used). */
  struct pfi__ctl_kind pop[PFI__CTL_KINDS];
  size_t npop;
  /* Share of a raise that shows in the period after it (learned, 1 until
   * raises are seen; docs/control.md "Feedback"). */
  double raise_share;
  size_t ngpus;
  double *min_w, *max_w, *cap, *pre, *draw;
  int *slot;     /* job slot of each GPU, -1 free */
  int *pend_dec; /* 1: a decrease not yet seen in the realized draw */
  double *out_cap;
  struct pfi__ctl_job *job;
  size_t nslots, slots_cap;
  double t_last;
  int started;
  /* Event state. */
  int in_event, recovering;
  char event[64];
  double baseline;  /* median realized power before the event, W */
  double hist[300]; /* realized totals of the last periods before it */
  size_t nhist, hist_pos;
  double bias; /* realized minus modelled power, W (feedback) */
  int *order;  /* recovery order of slots */
  size_t norder, order_cap;
  double recovery_t0;
  /* The recovery's line (recovery.c): from rec_p0 W at rec_tl0 s rising
   * at rec_rate W/s (NaN: to start at its next period); this period's
   * limit and ceiling, W, and whether it held every job. */
  double rec_p0, rec_tl0, rec_rate, rec_line, rec_ceiling;
  int rec_held;
  int was_infeasible;
  /* The event's terms (contract.c): its start, first period under the
   * controller, planned end (NaN unknown) and the notice it gave, s. */
  double ev_start, ev_first, ev_end, ev_notice;
  /* Records. */
  uint64_t seq;
  struct pfi_ctl_record *rec, *done, *pend;
  size_t nrec, rec_cap, ndone, done_cap, npend, pend_cap;
  size_t *pfree; /* free entries of pend (pend_cap of them allocated) */
  size_t nfree;
  /* Oracle scratch. */
  struct pfi_problem prob;
  int *pslot; /* job slot of each problem row */
  double *px, *py, *palloc;
  size_t pcap;
};

/* The anchors of job j's belief (belief.c): its learned points below
 * P_max on their monotone fit (the fit pfi_problem_add_curve() decides on:
 * power and throughput, lcb 1 or 2 each point's lower bound (two
 * standard errors under it), -1 its upper bound, not falling
 * as the cap rises, weighted by the periods behind each point; pooled
 * points stand as the highest cap's; throughput clipped at T_max), in
 * increasing power, into ax, ay (PFI__CTL_MAXPTS each). Returns their
 * count. */
size_t pfi__ctl_anchors(const struct pfi__ctl_job *j, int lcb, double *ax,
                        double *ay);

/* Belief (belief.c). Tokens/s of job j at aggregate power p under the
 * belief; `lcb` 1 gives the lower confidence bound, 2 the cautious bound
 * the tier floors are read on (the lower bound, its prior no more elastic
 * than PFI 1.0, throughput falling in proportion to power). NaN when Pmax
 * or Tmax is unknown. */
double pfi__ctl_believe(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                        double p, int lcb);
/* The job's floor in aggregate power, W: its minimum cap, its tier
 * (believed power where it keeps 1 - max_loss of T_max; the LCB for a
 * protected job) and any rollback floor; `tiers` 0 leaves the tier out. */
double pfi__ctl_floor(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                      int tiers);
/* Aggregate power the job draws in training at per-GPU cap `cap_w`. */
double pfi__ctl_draw_at(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                        double cap_w);
/* Adds a period's realized draw `draw_w` at per-GPU cap `cap_w`. */
void pfi__ctl_learn_draw(struct pfi__ctl_job *j, double cap_w, double draw_w);
/* Per-GPU cap that makes the job draw `p` W in training. */
double pfi__ctl_cap_for(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                        double p);
/* Expected value of a probe of job j from aggregate power `a` down to
 * `a - delta` W and the believed throughput it costs (both tokens, over
 * `horizon_s` and `hold_s`); `slope` is the tokens/s per W the watts freed
 * earn elsewhere. Returns the value, *cost the cost. */
double pfi__ctl_probe_value(const struct pfi_ctl *c,
                            const struct pfi__ctl_job *j, double a,
                            double delta, double slope, double horizon_s,
                            double hold_s, double *cost);
/* Ceiling (highest cap the controller may give the job), W per GPU. */
double pfi__ctl_cap_hi(const struct pfi_ctl *c, const struct pfi__ctl_job *j);
double pfi__ctl_cap_lo(const struct pfi_ctl *c, const struct pfi__ctl_job *j);
/* Highest cap a raise of the job may set this period, W per GPU: `up` (a
 * ramp step) above its cap or, where its GPUs read back a lower cap (a
 * raise set and not applied: a node away), two steps above the lowest
 * cap read back; -INFINITY (no raise) while a GPU of it is silent. */
double pfi__ctl_raise_limit(const struct pfi_ctl *c,
                            const struct pfi__ctl_job *j,
                            const struct pfi_ctl_input *in, double up);
/* Writes up to `max` breakpoints of the believed curve on [lo, hi], the
 * throughput valued by the config's objective (work: times GPUs /
 * uncapped throughput); returns how many. */
size_t pfi__ctl_curve(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                      double lo, double hi, double *x, double *y, size_t max);
/* Adds a settled point to the job's belief. */
void pfi__ctl_learn(struct pfi__ctl_job *j, double cap_w, double power_w,
                    double tokens, double n, double m2);
/* Believed PFI of the job over its range (ratio definition at the
 * breakpoints); NaN when unknown. */
double pfi__ctl_belief_pfi(const struct pfi_ctl *c,
                           const struct pfi__ctl_job *j);

/* Records (controller.c). pfi__ctl_decide() writes a decision record for
 * job j at new cap `cap_w` (completing its previous one first) and makes it
 * the job's pending record; pfi__ctl_complete() completes the pending one
 * with the observed draw and throughput. Both return 0 or PFI_ENOMEM. */
int pfi__ctl_decide(struct pfi_ctl *c, struct pfi__ctl_job *j,
                    const struct pfi_ctl_input *in, double cap_w, int reason,
                    double shortfall_w);
int pfi__ctl_complete(struct pfi_ctl *c, struct pfi__ctl_job *j,
                      const struct pfi_ctl_input *in, double draw, double tput);

/* A cap move smaller than this, W, does not restart the settling. */
#define SMALL_W 5.0

/* 1: the job is training (reported phase, or unknown phase and tokens). */
static inline int is_training(const struct pfi__ctl_job *j) {
  return j->phase == PFI_PHASE_TRAINING || (j->phase < 0 && j->tput > 0);
}

/* The share of its present draw the job is expected to draw in the period
 * observed at `t_next` when a pause of a kind it has shown is due then
 * (its last start plus a multiple of its period, up to `tol_s` late), NaN
 * when none is (observe.c); *len_s (when not NULL) the length of that
 * kind's last pause. */
double pfi__ctl_foreseen_pause(const struct pfi_ctl *c,
                               const struct pfi__ctl_job *j, double t_next,
                               double tol_s, double *len_s);

/* How late the job's trainer's announced pauses began after their
 * announced start (its own once it has shown one, else any trainer's;
 * j NULL: any trainer's), s. */
double pfi__ctl_ann_late(const struct pfi_ctl *c,
                         const struct pfi__ctl_job *j);
/* The draw, W, the job is expected to have through a pause of length
 * `len_s` (NaN: unknown) from a draw of `pre_w` before it: the cluster's
 * fit of its pauses of that length (a + b x per GPU, once three pauses of
 * GPU draws 20 W apart are in it), else the depth of the job's own pauses
 * of that length, else the cluster's last, else (`any`) the highest depth
 * a kind of the job or the cluster has shown (a pause drawing more than
 * expected puts the others' raises above the target); NaN when none of
 * these is known (observe.c). */
double pfi__ctl_pause_draw(const struct pfi_ctl *c,
                           const struct pfi__ctl_job *j, double len_s,
                           double pre_w, int any);

/* Observation, learning, anomaly and rollback rules for one job in a
 * period (observe.c). Returns 0 or a negative PFI error. */
int pfi__ctl_observe(struct pfi_ctl *c, struct pfi__ctl_job *j,
                     const struct pfi_ctl_input *in);

/* The contract (contract.c, docs/control.md "Contract"). At the event's
 * start: its terms read from `in`, every job's delivered tokens reset. */
void pfi__ctl_contract_start(struct pfi_ctl *c, const struct pfi_ctl_input *in);
/* Each period of the event, before the floors: the tokens each job
 * delivered over the period just ended added to its count. */
void pfi__ctl_contract_observe(struct pfi_ctl *c,
                               const struct pfi_ctl_input *in);
/* 1: job j is held at its pre-event caps by the contract this period (the
 * longest event reached, or less notice than its tier needs): not cut. */
int pfi__ctl_contract_hold(const struct pfi_ctl *c,
                           const struct pfi__ctl_job *j, double t_s);
/* Job j's floor this period in aggregate power, W, with the contract:
 * `base` (its floor from its minimum cap and tier) raised by the longest
 * event, the notice and its deadline; `hi` its draw at its ceiling.
 * *term receives the term that raised it (PFI_CTL_CONTRACT,
 * PFI_CTL_DEADLINE) or -1. */
double pfi__ctl_contract_floor(const struct pfi_ctl *c,
                               const struct pfi__ctl_job *j, double t_s,
                               double base, double hi, int *term);
/* Sets the term that holds job j this period (-1: none); the first
 * period the contract holds it in an event writes its record. Returns 0 or
 * PFI_ENOMEM. */
int pfi__ctl_contract_note(struct pfi_ctl *c, struct pfi__ctl_job *j,
                           const struct pfi_ctl_input *in, int term);
/* The tokens/s job j must deliver from t_s on to keep its deadline (NaN:
 * no deadline, or none counted yet), `dt` the period. */
double pfi__ctl_deadline_rate(const struct pfi_ctl *c,
                              const struct pfi__ctl_job *j, double t_s,
                              double dt);

/* Checks a period's input (observe.c): time increasing, a positive target
 * in an event, finite observations. 0 or PFI_EINVAL, named. */
int pfi__ctl_check_input(const struct pfi_ctl *c,
                         const struct pfi_ctl_input *in, struct pfi_error *err);
/* Follows the share of a raise that shows in the period after it
 * (observe.c, rule "Feedback"). */
void pfi__ctl_learn_raise_share(struct pfi_ctl *c,
                                const struct pfi_ctl_input *in);

#endif
