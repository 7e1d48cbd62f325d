/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The staggered recovery after an event (part of pfi_ctl_step, step.c):
 * the seeded order, the raises under the cluster's ramp line up to the
 * pre-event ceiling. docs/control.md "Recovery" states the rule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "step_int.h"

/* The cluster's ramp by default: this share of the ceiling per second. */
#define RAMP_SHARE_S 0.05
/* The ramp's line reaches the ceiling by this share of the window at the
 * latest, whatever ramp was set; from LATE_SHARE of the window on, every
 * job still under its pre-event caps is given them at once (a backstop:
 * the recovery window is a promise to the jobs). */
#define LINE_SHARE 0.5
#define LATE_SHARE 0.9

/* The staggered recovery (docs/control.md "Recovery"): jobs in a seeded
 * random order, each raised by at most the ramp per period, only while the
 * cluster's committed draw (realized, a raise not yet drawn and every
 * paused job's return counted) stays under the cluster's ramp line: from
 * its committed draw when the recovery began, rising at the cluster ramp
 * rate, up to the ceiling, the draw the jobs would have at their pre-event
 * caps now (the beliefs' draw model). The recovery only raises: nothing is
 * cut while no target is in force. */
int pfi__ctl_recover(struct pfi_ctl *c, const struct pfi_ctl_input *in,
                     double realized, struct pfi_error *err) {
  const struct pfi_ctl_config *cf = &c->cfg;
  double committed = realized;
  for (size_t s = 0; s < c->nslots; s++) {
    if (!c->job[s].used)
      continue;
    struct jstate st;
    pfi__ctl_classify(c, &c->job[s], in->t_s, &st);
    /* A training job raised last period draws its new caps in a period
     * or two: counted at them now (beyond 2 %, the readings' noise), so
     * that the next raise does not stack on one not yet seen. */
    if (st.movable && st.model - c->job[s].draw > 0.02 * st.model)
      committed += st.model - c->job[s].draw;
    /* A paused job's return is counted from when any pause seen could
     * end: not before the shortest pause any job has shown has nearly
     * passed (a kind of pause the job has not shown yet may be that
     * short). */
    const struct pfi__ctl_job *j = &c->job[s];
    double pmin = c->pause_min_all;
    int early = st.paused && j->phase == PFI_PHASE_PAUSE &&
                isfinite(j->pause_t0) &&
                in->t_s - j->pause_t0 < pmin - PAUSE_LEAD_S;
    if (!early)
      committed += st.jump;
  }
  /* Jobs that started since the order was drawn join at its end. */
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used || j->in_order)
      continue;
    if (c->norder == c->order_cap) {
      size_t nc = c->order_cap ? 2 * c->order_cap : 16;
      int *no = realloc(c->order, nc * sizeof *no);
      if (!no)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      c->order = no;
      c->order_cap = nc;
    }
    c->order[c->norder++] = (int)s;
    j->in_order = 1;
  }
  /* The ceiling: the committed draw plus what each job still under its
   * pre-event caps would add at them (its draw model from its caps now). */
  double to_come = 0;
  for (size_t k = 0; k < c->norder; k++) {
    int s = c->order[k];
    if ((size_t)s >= c->nslots || !c->job[s].used)
      continue;
    const struct pfi__ctl_job *j = &c->job[s];
    double hi = pfi__ctl_cap_hi(c, j);
    if (j->cap >= hi - 1e-9)
      continue;
    double d = pfi__ctl_draw_at(c, j, hi) - pfi__ctl_draw_at(c, j, j->cap);
    if (!isfinite(d) || d < 0)
      d = 0;
    to_come += d;
  }
  double ceiling = committed + to_come;
  double elapsed = in->t_s - c->recovery_t0, per = cf->period_s;
  if (!isfinite(c->rec_rate)) {
    /* The line starts here (a recovery's first period, or its first in a
     * controller that took it over): from the committed draw, at the
     * ramp set (by default a share of the ceiling per second), never so
     * slow that it would not reach the ceiling by LINE_SHARE of the
     * window (counted from the recovery's own start). */
    double rate = cf->recovery_ramp_w_s > 0 ? cf->recovery_ramp_w_s
                                            : RAMP_SHARE_S * ceiling;
    double left = LINE_SHARE * cf->recovery_s - elapsed;
    if (left < per)
      left = per;
    if (to_come / left > rate)
      rate = to_come / left;
    if (!(rate > 0))
      rate = RAMP_SHARE_S * (ceiling > 0 ? ceiling : 1.0);
    c->rec_rate = rate;
    c->rec_p0 = committed;
    c->rec_tl0 = in->t_s;
  }
  /* The caps set now are in force over the next period: the line at its
   * end. The raises aim under it by the recovery margin (the readings'
   * noise); once the line passes the ceiling every job comes back. */
  double line = c->rec_p0 + c->rec_rate * (in->t_s - c->rec_tl0 + per);
  int late = elapsed >= LATE_SHARE * cf->recovery_s;
  int open = line >= ceiling || late;
  double allow = line - cf->recovery_margin * ceiling - committed;
  c->rec_line = line < ceiling ? line : ceiling;
  c->rec_ceiling = ceiling;
  c->rec_held = 0;
  double up = cf->ramp_up_w_s * per;
  int all_done = 1, raised = 0, waiting = 0;
  for (size_t k = 0; k < c->norder; k++) {
    int s = c->order[k];
    if ((size_t)s >= c->nslots || !c->job[s].used)
      continue;
    struct pfi__ctl_job *j = &c->job[s];
    double hi = pfi__ctl_cap_hi(c, j);
    if (j->cap >= hi - 1e-9)
      continue;
    all_done = 0;
    if (waiting)
      continue;
    /* Late in the window: at once. Else a ramp step from the caps its
     * GPUs have: a job whose node did not apply the last raises (away,
     * silent) does not take them all at once when it is back. */
    double want = late ? hi : j->cap + up < hi ? j->cap + up : hi;
    if (!late) {
      double lim = pfi__ctl_raise_limit(c, j, in, up);
      if (!(lim > j->cap + 1e-9))
        continue;
      if (want > lim)
        want = lim;
    }
    double dp = pfi__ctl_draw_at(c, j, want) - pfi__ctl_draw_at(c, j, j->cap);
    if (!isfinite(dp))
      dp = (double)j->ngpus * (want - j->cap);
    /* A job that already draws its uncapped power, where the draw model
     * says the raise adds nothing, comes back at once: its cap no longer
     * binds (probes and learned draws can leave caps above the draw). */
    int free_raise =
        !(dp > 0) && isfinite(j->pmax) && j->draw >= 0.99 * j->pmax;
    if (free_raise)
      want = hi;
    if (!open && !free_raise && dp > allow) {
      /* A part of the step fits: take it; the next jobs wait their turn
       * (the order is kept). Within 2 W of its cap a job is done. */
      if (allow > 0 && dp > 0) {
        /* The cap whose modelled draw takes what fits (the draw is
         * concave in the cap, flat from the job's uncapped draw on). */
        double w =
            pfi__ctl_cap_for(c, j, pfi__ctl_draw_at(c, j, j->cap) + allow);
        want = w < j->cap ? j->cap : w < want ? w : want;
        if (hi - want < 2.0)
          want = hi;
        if (want > j->cap + 1e-9) {
          int rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_RECOVERY, 0);
          if (rc < 0)
            return pfi_error_set(err, rc, "out of memory");
          raised = 1;
        }
      }
      waiting = 1;
      continue;
    }
    allow -= dp > 0 ? dp : 0;
    int rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_RECOVERY, 0);
    if (rc < 0)
      return pfi_error_set(err, rc, "out of memory");
    raised = 1;
  }
  /* Held: jobs wait and none rose (the cluster sits on the ramp's line:
   * a paused job's return, a raise still to show). */
  c->rec_held = !all_done && !raised;
  if (all_done) {
    for (size_t g = 0; g < c->ngpus; g++)
      c->cap[g] = c->pre[g];
    c->recovering = 0;
  }
  return 0;
}

int pfi__ctl_start_recovery(struct pfi_ctl *c) {
  free(c->order);
  c->order = NULL;
  c->norder = 0;
  c->order_cap = c->nslots;
  if (c->nslots && !(c->order = malloc(c->nslots * sizeof *c->order)))
    return PFI_ENOMEM;
  for (size_t s = 0; s < c->nslots; s++) {
    c->job[s].in_order = c->job[s].used;
    if (c->job[s].used)
      c->order[c->norder++] = (int)s;
  }
  /* Fisher-Yates with a seeded splitmix64 stream. */
  uint64_t z = pfi__ctl_mix64(c->cfg.seed ^ 0x7265636f76657279ull);
  for (size_t i = c->norder; i > 1; i--) {
    z = pfi__ctl_mix64(z);
    size_t k = (size_t)(z % i);
    int t = c->order[i - 1];
    c->order[i - 1] = c->order[k];
    c->order[k] = t;
  }
  for (size_t s = 0; s < c->nslots; s++) {
    c->job[s].rollback_floor = 0;
    c->job[s].probe_until = 0;
  }
  c->rec_rate = NAN; /* the line starts at the recovery's next period */
  c->rec_line = c->rec_ceiling = NAN;
  c->rec_held = 0;
  return 0;
}
