/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The rest of the flexible-tier contract kept live during an event (part
 * of pfi_ctl_step, step.c): beyond the tier's largest throughput loss
 * (belief.c pfi__ctl_floor), the tier's longest event, the notice it
 * needs, and a job's deadline (a minimum mean throughput over the event).
 * Each is a floor on the job's power in the allocation; docs/control.md
 * "Contract" states the rules.
 *
 *   longest event  from the period whose end passes max_event_s after the
 *                  event's start (its own, for a job started during the
 *                  event) the job is released: its
 * floor is its draw at its pre-event caps, reached one ramp step a period (the
 * others absorb it) notice         an event that gave less notice than the tier
 * needs does not cut the job: its floor is its pre-event draw deadline its
 * floor is the least power at which its believed curve (lower confidence bound)
 * delivers the rate r that keeps its mean throughput over the event at or above
 *                  the minimum D, given the tokens W delivered since t0:
 *                    planned end E known:  r = (D (E - t0) - W) / (E - t)
 *                    end unknown:          r = (D (t + dt - t0) - W) / dt
 *                  (the mean to the end of the next period), r >= 0
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl_int.h"

void pfi__ctl_contract_start(struct pfi_ctl *c,
                             const struct pfi_ctl_input *in) {
  double t = in->t_s;
  c->ev_first = t;
  c->ev_start = isfinite(in->event_start_s) && in->event_start_s != 0 &&
                        in->event_start_s <= t
                    ? in->event_start_s
                    : t;
  c->ev_end =
      isfinite(in->event_end_s) && in->event_end_s > t ? in->event_end_s : NAN;
  c->ev_notice = isfinite(in->notice_s) && in->notice_s > 0 ? in->notice_s : 0;
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used)
      continue;
    int kept = j->ct_event[0] && strcmp(j->ct_event, c->event) == 0 &&
               isfinite(j->ct_t0) && isfinite(j->ct_tokens);
    j->ct_event[0] = 0;
    j->ct_term = -1;
    if (kept)
      continue; /* restored from the controller before: its count goes on */
    j->ct_tokens = 0;
    j->ct_t0 = j->ct_tlast = t;
    j->ct_noted = 0;
    j->ct_late = 0;
  }
}

void pfi__ctl_contract_observe(struct pfi_ctl *c,
                               const struct pfi_ctl_input *in) {
  double t = in->t_s;
  /* A planned end may be moved (the event extended or cut short). */
  if (isfinite(in->event_end_s) && in->event_end_s > 0)
    c->ev_end = in->event_end_s;
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used)
      continue;
    if (isnan(j->ct_t0)) {
      /* Started during the event: its mean is over its own time in it. */
      j->ct_tokens = 0;
      j->ct_t0 = j->ct_tlast = t;
      j->ct_term = -1;
      j->ct_noted = 0;
      j->ct_late = 1;
      continue;
    }
    double dt = t - j->ct_tlast;
    if (dt > 0) {
      /* A period without a throughput report counts at the last rate
       * reported (none yet: nothing), a pause at its reported zero. */
      double r = j->tput_valid && isfinite(j->tput) ? j->tput : NAN;
      if (isnan(r))
        r = j->ct_tokens > 0 && j->ct_tlast > j->ct_t0
                ? j->ct_tokens / (j->ct_tlast - j->ct_t0)
                : 0;
      j->ct_tokens += r * dt;
      j->ct_tlast = t;
    }
  }
}

/* 1: the event gave less notice than the job's tier needs. */
static int short_notice(const struct pfi_ctl *c, const struct pfi__ctl_job *j) {
  return j->notice_s > 0 && c->ev_notice < j->notice_s;
}

/* 1: the job's tier's longest event ends within the next period. The
 * caps a call returns hold for the next period, so a job held at t_s is
 * held until t_s + period_s: it is released from the call whose next
 * period would end past its longest event (with periods late, as a
 * daemon's may be, from the first call at or past it). */
static int released(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                    double t_s) {
  /* A job that started during the event counts from its start. */
  double t0 = isfinite(j->ct_t0) && j->ct_late ? j->ct_t0 : c->ev_start;
  return j->max_event_s > 0 &&
         t_s + c->cfg.period_s - t0 > j->max_event_s + 1e-9;
}

int pfi__ctl_contract_hold(const struct pfi_ctl *c,
                           const struct pfi__ctl_job *j, double t_s) {
  return c->in_event && (short_notice(c, j) || released(c, j, t_s));
}

double pfi__ctl_deadline_rate(const struct pfi_ctl *c,
                              const struct pfi__ctl_job *j, double t_s,
                              double dt) {
  if (!(j->deadline_tput > 0) || isnan(j->ct_tokens) || !(dt > 0))
    return NAN;
  double d = j->deadline_tput, w = j->ct_tokens, t0 = j->ct_t0, r;
  if (isfinite(c->ev_end) && c->ev_end > t_s + dt)
    r = (d * (c->ev_end - t0) - w) / (c->ev_end - t_s);
  else
    r = (d * (t_s + dt - t0) - w) / dt;
  return r > 0 ? r : 0;
}

double pfi__ctl_contract_floor(const struct pfi_ctl *c,
                               const struct pfi__ctl_job *j, double t_s,
                               double base, double hi, int *term) {
  *term = -1;
  if (!c->in_event)
    return base;
  if (short_notice(c, j)) {
    /* Not cut at all: held at its pre-event caps. */
    *term = PFI_CTL_CONTRACT;
    return hi > base ? hi : base;
  }
  if (released(c, j, t_s)) {
    /* Back up to its pre-event caps, a ramp step a period. */
    double up = c->cfg.ramp_up_w_s * c->cfg.period_s;
    double reach = pfi__ctl_draw_at(c, j, j->cap + up);
    double f = reach < hi ? reach : hi;
    *term = PFI_CTL_CONTRACT;
    return f > base ? f : base;
  }
  double r = pfi__ctl_deadline_rate(c, j, t_s, c->cfg.period_s);
  if (!(r > 0))
    return base;
  double lo = pfi__ctl_draw_at(c, j, pfi__ctl_cap_lo(c, j));
  double yhi = pfi__ctl_believe(c, j, hi, 1);
  if (!isfinite(yhi))
    return base;
  double p;
  if (pfi__ctl_believe(c, j, lo, 1) >= r) {
    p = lo;
  } else if (yhi < r) {
    p = hi; /* not even its pre-event caps keep it: all it can have */
  } else {
    /* Bisection on a non-decreasing function: 30 halvings. */
    double a = lo, b = hi;
    for (int k = 0; k < 30; k++) {
      double m = 0.5 * (a + b);
      if (pfi__ctl_believe(c, j, m, 1) >= r)
        b = m;
      else
        a = m;
    }
    p = b;
  }
  if (p > base * (1 + 1e-9)) {
    *term = PFI_CTL_DEADLINE;
    return p;
  }
  return base;
}

int pfi__ctl_contract_note(struct pfi_ctl *c, struct pfi__ctl_job *j,
                           const struct pfi_ctl_input *in, int term) {
  j->ct_term = term;
  if (term != PFI_CTL_CONTRACT || j->ct_noted)
    return 0;
  j->ct_noted = 1;
  /* Once an event: the record that the contract holds the job, at the
   * caps it has (a release then records each raise as well). */
  return pfi__ctl_decide(c, j, in, j->cap, PFI_CTL_CONTRACT, 0);
}
