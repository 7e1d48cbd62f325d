/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The staggered recovery after an event (part of pfi_ctl_step, step.c):
 * the seeded order, the raises under the pre-event baseline less the
 * recovery margin. docs/control.md "Recovery" states the rule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "step_int.h"

/* The staggered recovery: jobs in a seeded random order, each raised by at
 * most the ramp per period, only while the cluster stays under the
 * pre-event baseline less the margin (the last job: the baseline)
 * counting every paused job at its full draw. */
int pfi__ctl_recover(struct pfi_ctl *c, const struct pfi_ctl_input *in,
                     double realized, struct pfi_error *err) {
  const struct pfi_ctl_config *cf = &c->cfg;
  double ceil = realized;
  for (size_t s = 0; s < c->nslots; s++) {
    if (!c->job[s].used)
      continue;
    struct jstate st;
    pfi__ctl_classify(c, &c->job[s], in->t_s, &st);
    /* A training job raised last period draws its new caps in a period
     * or two: counted at them now (beyond 2 %, the readings' noise), so
     * that the next raise does not stack on one not yet seen. */
    if (st.movable && st.model - c->job[s].draw > 0.02 * st.model)
      ceil += st.model - c->job[s].draw;
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
      ceil += st.jump;
  }
  /* The raises aim below the baseline by the recovery margin (the readings'
   * noise, a raise not yet drawn and a job resuming before it is seen
   * otherwise put the cluster above the baseline whenever it sat on it);
   * only the last job to come back may take the cluster to the baseline
   * itself, so that the recovery can finish when the cluster's full draw
   * fits under it. */
  double margin_w = cf->recovery_margin * c->baseline;
  double allow = c->baseline - margin_w - ceil;
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
  int late = in->t_s - c->recovery_t0 > cf->recovery_s;
  double up = cf->ramp_up_w_s * cf->period_s;
  int all_done = 1;
  size_t nleft = 0;
  for (size_t k = 0; k < c->norder; k++) {
    int s = c->order[k];
    if ((size_t)s < c->nslots && c->job[s].used &&
        c->job[s].cap < pfi__ctl_cap_hi(c, &c->job[s]) - 1e-9)
      nleft++;
  }
  /* Above the baseline counting every paused job at its full draw (a job
   * started, one came back from a fault, the uncapped jobs' own draw
   * rose): the jobs last in the order give the excess back at once, down
   * to the aim, before anything else rises. While the last job comes back
   * the cluster may sit on the baseline itself: there, within 0.1 % of it,
   * the excess is the readings' noise (the allocation's own threshold for
   * "above"), and chasing it would cut a job every other period and the
   * recovery would never end. */
  double excess = ceil - (c->baseline - margin_w);
  int gave = 0;
  double over = ceil - c->baseline;
  if (over > (nleft <= 1 ? 0.001 * c->baseline : 0) && !late) {
    for (size_t k = c->norder; k-- > 0 && excess > 0;) {
      int s = c->order[k];
      if ((size_t)s >= c->nslots || !c->job[s].used)
        continue;
      struct pfi__ctl_job *j = &c->job[s];
      double lo = pfi__ctl_cap_lo(c, j);
      /* Nor one the contract held in the event (released, too little
       * notice): it is not cut again after it. */
      if (j->cap <= lo + 1e-9 || !(j->draw > 0) ||
          j->ct_term == PFI_CTL_CONTRACT)
        continue;
      /* Watts per W of cap: the draw model's slope just below the cap. */
      double per = (pfi__ctl_draw_at(c, j, j->cap) -
                    pfi__ctl_draw_at(c, j, j->cap - 5.0)) /
                   5.0;
      if (!(per > 0.3 * (double)j->ngpus))
        per = 0.3 * (double)j->ngpus;
      double want = j->cap - excess / per;
      /* Cut only what it draws: a job under its cap gives from its draw. */
      double now = pfi__ctl_cap_for(c, j, j->draw);
      if (now <= lo + 1e-9)
        continue; /* it draws under its lowest cap: a cut gives nothing */
      if (now < j->cap && want > now - excess / per)
        want = now - excess / per;
      if (want < lo)
        want = lo;
      excess -= (j->cap - want) * per;
      int rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_RECOVERY, 0);
      if (rc < 0)
        return pfi_error_set(err, rc, "out of memory");
      gave = 1;
    }
    /* When no job could give anything (each draws under its lowest cap),
     * nothing rises below (no room), but the jobs already back are done. */
    if (gave)
      return 0;
  }
  if (nleft == 1)
    allow += margin_w; /* the last job to come back: up to the baseline */
  for (size_t k = 0; k < c->norder; k++) {
    int s = c->order[k];
    if ((size_t)s >= c->nslots || !c->job[s].used)
      continue;
    struct pfi__ctl_job *j = &c->job[s];
    double hi = pfi__ctl_cap_hi(c, j);
    if (j->cap >= hi - 1e-9)
      continue;
    all_done = 0;
    double want = j->cap + up < hi ? j->cap + up : hi;
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
    if (dp > allow && !late && !free_raise) {
      /* A part of the step fits: take it; the next jobs wait their turn
       * (the order is kept). Within 2 W of its cap a job is done. */
      if (allow > 0 && dp > 0) {
        /* The cap whose modelled draw takes what fits (not a share of the
         * step in proportion: the draw is concave in the cap, flat from
         * the job's uncapped draw on, and a proportional share of a step
         * reaching there drew more than fits). */
        double w =
            pfi__ctl_cap_for(c, j, pfi__ctl_draw_at(c, j, j->cap) + allow);
        want = w < j->cap ? j->cap : w < want ? w : want;
        if (hi - want < 2.0)
          want = hi;
        int rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_RECOVERY, 0);
        if (rc < 0)
          return pfi_error_set(err, rc, "out of memory");
      }
      break;
    }
    allow -= dp;
    int rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_RECOVERY, 0);
    if (rc < 0)
      return pfi_error_set(err, rc, "out of memory");
  }
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
  return 0;
}
