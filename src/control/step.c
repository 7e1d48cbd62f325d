/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One control period (pfi_ctl_step, control.h): observe, learn, judge
 * (anomaly, rollback), allocate on the believed curves with feedback on
 * realized power, change caps in two phases, recover staggered.
 * docs/control.md states each rule.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "step_int.h"
#include "pfi/alloc.h"

/* The largest overshoot above the target, as a share of it, that a job
 * resuming full draw after a pause may cause before the next period cuts
 * it back: 0.7 % (the acceptance band is 1 %). */
#define RESUME_ALLOW 0.007
/* Caps are not moved by less than this, W (keeps records and the cap
 * change rate down; the feedback loop absorbs the remainder). */
#define DEADBAND_W 1.0
/* A decrease counts as seen when the GPU draws at most this share above
 * its new cap (three standard deviations of a reading's noise) or, for a
 * GPU that cannot show it (silent), after three periods. */
#define CONFIRM_TOL 0.02

/* What the ramp leaves unallocated is allocated again to jobs with room
 * only when it exceeds this share of the target (a quarter of the band):
 * smaller remainders are trimmed by the next periods, and moving the
 * other jobs for them restarts their settling (less learned). */
#define FILL_MIN 0.0025


/* A foreseen pause that has not come this long after it was due, s, is
 * no longer provided for (its job goes back into the allocation). */
#define FORESEE_LATE_S 2.0

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, size_t n) {
  double tmp[300];
  if (n == 0)
    return NAN;
  memcpy(tmp, v, n * sizeof *tmp);
  qsort(tmp, n, sizeof *tmp, cmp_double);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}



void pfi__ctl_classify(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                       double t_s, struct jstate *s) {
  double full = pfi__ctl_draw_at(c, j, j->cap);
  s->jump = 0;
  s->soon = 1;
  s->falls = 0;
  s->movable = 0;
  s->paused = 0;
  if (j->blind) {
    /* No telemetry from some of its GPUs: counted at their last readings
     * (a GPU never read: at its cap), and its rise to the draw modelled
     * at its caps held in reserve (it may have been paused). Counted at
     * its caps, a job drawing 0.8 of them held the difference out of the
     * allocation for as long as its node was silent. */
    double est = 0;
    for (size_t k = 0; k < j->ngpus; k++) {
      size_t g = j->gpu[k];
      est += c->draw[g] > 0 ? c->draw[g] : c->cap[g];
    }
    s->model = s->next = est;
    /* Paused as its trainer still reports: next period at most the draw
     * through its pause (its last readings, which realized power keeps
     * too, may be of the pause's first period, which trained part of the
     * time). */
    if (j->phase == PFI_PHASE_PAUSE && isfinite(j->pause_t0) &&
        j->pause_pre > 0) {
      double d = pfi__ctl_pause_draw(c, j, j->pause_len, j->pause_pre, 0);
      if (d < est)
        s->next = d;
    }
    s->jump = full > s->next ? full - s->next : 0;
    return;
  }
  /* A training job that reports no throughput at all (a failed worker
   * stops the step) is held like a paused one at once, before three
   * settled periods can flag it: the allocation would otherwise raise the
   * caps it does not draw, and its return would come from there. */
  int stopped =
      j->tput_valid && j->phase == PFI_PHASE_TRAINING && !(j->tput > 0);
  if (!isfinite(j->pmax) || !isfinite(j->tmax) || j->anomaly || stopped ||
      !(j->tput_valid && is_training(j))) {
    /* Paused, starting, flagged or silent about throughput: held at its
     * caps, counted at its draw, and its resumption kept in reserve. */
    double cap_draw = isfinite(j->pmax) ? full : (double)j->ngpus * j->cap;
    /* A job flagged as anomalous (stalled, a slow worker, not drawing
     * its caps) is held like a paused one: what it does not draw goes to
     * the others, and its caps come down so that its recovery cannot
     * lift cluster power by more than its share of the allowance. */
    s->paused = isfinite(j->pmax) && isfinite(j->tmax) && j->tput_valid &&
                j->phase >= 0 &&
                (j->anomaly || stopped || j->phase != PFI_PHASE_TRAINING);
    s->model = s->next = j->draw;
    /* A pause's first period may have trained part of the time: the next
     * one is counted at the draw its or the cluster's pauses of its
     * expected length show from its draw before the pause (observe.c,
     * docs/control.md "Announced pauses"). */
    if (c->in_event && j->phase == PFI_PHASE_PAUSE &&
        fabs(t_s - j->pause_t0) < 1e-9 && j->pause_pre > 0) {
      double d = pfi__ctl_pause_draw(c, j, j->pause_len, j->pause_pre, 0);
      /* A pause of a length not yet seen (its first of a kind): its depth
       * from the period itself, its draw the training draw before for the
       * share it trained and the pause's for the rest (observe.c). A share
       * that would put the pause under an idle GPU's draw (a trainer whose
       * throughput is not the period's) is not taken. */
      double f = j->pause_f;
      if (!isfinite(d) && isfinite(f) && j->draw_1 > 0) {
        double lo = isfinite(c->idle_w) ? c->idle_w * (double)j->ngpus : 0;
        d = (j->draw - (1 - f) * j->draw_1) / f;
        if (d < 0.9 * lo)
          d = NAN;
        else if (d < lo)
          d = lo;
      }
      if (d < j->draw) {
        s->next = d;
        s->falls = 1;
      }
    }
    s->jump = cap_draw > s->next ? cap_draw - s->next : 0;
    /* A job's pauses last about as long each time (an evaluation, a
     * checkpoint): its resumption is not expected before the shortest
     * pause it has shown (or, before it has shown one, any job has) has
     * passed, less a lead; a startup likewise against the shortest
     * startup seen. Until one has been seen, it can come any time. */
    double pmin = isfinite(j->pause_min) ? j->pause_min : c->pause_min_all;
    if (isfinite(j->pause_len) && j->pause_len > pmin)
      pmin = j->pause_len; /* a pause of its schedule: as long as the last */
    if (s->paused && j->phase == PFI_PHASE_PAUSE && isfinite(j->pause_t0) &&
        t_s - j->pause_t0 < pmin - PAUSE_LEAD_S)
      s->soon = 0;
    if (s->paused && j->phase == PFI_PHASE_STARTUP && isfinite(j->start_t0) &&
        t_s - j->start_t0 < c->startup_min_all - PAUSE_LEAD_S)
      s->soon = 0;
    return;
  }
  /* A pause of a kind the job has shown due in the next period (its
   * schedule learned from its own pauses, observe.c): held like a paused
   * job one period early, counted at the draw it is expected to have
   * then, so that the others are given its watts in the period it
   * releases them (docs/control.md "Foreseen pauses"). */
  s->foreseen = 0;
  if (c->in_event && j->draw > 0) {
    /* A job whose trainer announces its pauses is held for those only
     * (docs/control.md "Announced pauses"): one starting within the next
     * period, counted at the share of the period it covers. */
    double r = NAN, per = c->cfg.period_s;
    int ending = 0;
    /* Announced starts are taken as late as the trainers' have come
     * (observe.c): a start late after the caps were held for it leaves the
     * job training at them, and the others' raise on top. */
    double late = pfi__ctl_ann_late(c, j),
           end_at = j->end_at + pfi__ctl_ann_late(c, NULL),
           ann_at = j->ann_at + late;
    if (isfinite(end_at) && end_at < t_s + per && j->end_pre > 0 &&
        isfinite(c->idle_w)) {
      ending = 1;
      /* Its announced end: its GPUs fall to a free GPU's draw. */
      double f = (t_s + per - end_at) / per;
      if (f > 1)
        f = 1;
      r = ((1 - f) * j->end_pre + f * c->idle_w * (double)j->ngpus) / j->draw;
    } else if (!j->announces) {
      r = pfi__ctl_foreseen_pause(c, j, t_s + per, FORESEE_LATE_S, NULL);
    } else if (isfinite(ann_at) && ann_at < t_s + per && j->ann_pre > 0) {
      /* Through the share of the next period after its start, at the
       * depth its pauses of that length show, from its training draw. */
      double f = (t_s + per - ann_at) / per;
      double d = pfi__ctl_pause_draw(c, j, j->ann_len, j->ann_pre, 1);
      if (f > 1)
        f = 1;
      r = ((1 - f) * j->ann_pre + f * d) / j->draw;
    }
    if (isfinite(r)) {
      /* The last period it trained at its caps: modelled there, as a
       * job in the allocation (the feedback's residual). */
      s->foreseen = s->paused = 1;
      s->model = full;
      s->next = r * j->draw;
      s->jump = full > s->next ? full - s->next : 0;
      if (ending)
        s->soon = 0; /* it does not come back */
      return;
    }
  }
  s->model = s->next = full;
  s->movable = 1;
  /* Raised by the last call: the last period showed the learned share of
   * the raise (the feedback's residual sees the model's error, not the
   * raise still to show). */
  if (c->in_event && j->raise_t == c->t_last && full > j->raise_d0)
    s->model = j->raise_d0 + c->raise_share * (full - j->raise_d0);
}

static int grow_scratch(struct pfi_ctl *c, size_t njobs, size_t npts) {
  if (njobs + npts <= c->pcap)
    return 0;
  size_t nc = 2 * (njobs + npts);
  int *ps = realloc(c->pslot, nc * sizeof *ps);
  if (!ps)
    return PFI_ENOMEM;
  c->pslot = ps;
  double *a = realloc(c->px, nc * sizeof *a);
  if (!a)
    return PFI_ENOMEM;
  c->px = a;
  a = realloc(c->py, nc * sizeof *a);
  if (!a)
    return PFI_ENOMEM;
  c->py = a;
  a = realloc(c->palloc, nc * sizeof *a);
  if (!a)
    return PFI_ENOMEM;
  c->palloc = a;
  c->pcap = nc;
  return 0;
}

/* Sets job j's requested cap, recording the decision when it moves. */
int pfi__ctl_set_job_cap(struct pfi_ctl *c, struct pfi__ctl_job *j,
                         const struct pfi_ctl_input *in, double cap,
                         int reason, double shortfall) {
  double lo = pfi__ctl_cap_lo(c, j), hi = pfi__ctl_cap_hi(c, j);
  if (cap < lo)
    cap = lo;
  if (cap > hi)
    cap = hi;
  if (fabs(cap - j->cap) < 1e-9)
    return 0;
  if (cap < j->cap)
    j->draw_before_cut = j->draw;
  if (c->in_event && cap > j->cap && !j->blind) {
    /* From its modelled draw at the caps it had, when it draws them (a
     * reading still showing an earlier raise is not its steady draw; a
     * job drawing under them is not following its caps). */
    double d0 = pfi__ctl_draw_at(c, j, j->cap);
    if (fabs(j->draw - d0) <= 0.03 * d0) {
      j->raise_t = in->t_s;
      j->raise_d0 = d0;
      j->raise_m1 = pfi__ctl_draw_at(c, j, cap);
    }
  }
  int rc = pfi__ctl_decide(c, j, in, cap, reason, shortfall);
  if (rc < 0)
    return rc;
  for (size_t k = 0; k < j->ngpus; k++) {
    size_t g = j->gpu[k];
    if (cap < c->cap[g])
      c->pend_dec[g] = 1;
    c->cap[g] = cap;
  }
  j->cap = cap;
  /* Small moves (the feedback trimming) keep the window being learned;
   * a move of SMALL_W or more from where the window started restarts the
   * settling. */
  if (fabs(cap - j->win_cap) >= SMALL_W) {
    j->last_dir = cap > j->win_cap ? 1 : -1;
    j->win_cap = cap;
    j->last_change_t = in->t_s;
    j->acc_after_change = 1;
    j->acc_n = j->acc_p = j->acc_t = j->acc_t2 = 0;
  }
  return 0;
}

/* The oracle's allocation as the caps can reach it this period: a job's
 * power rises by at most the ramp (none while increases wait). On concave
 * piecewise-linear curves the oracle gives a budget's extra watts (a job
 * paused, the bias fell) to the few jobs on the next segment; bounded by
 * the ramp, the rest went unallocated and realized power stayed under the
 * target for seconds. Here each allocation is clamped to the job's reach
 * and what the clamps leave is allocated again by the oracle among the
 * jobs with room left below their reach (their believed curves on that
 * room), so the others take it up at once; the next periods move the
 * allocation on toward the unbounded one, a ramp at a time. Where no
 * clamp binds nothing changes. `tot` becomes the believed tokens. */
static int fill_reach(struct pfi_ctl *c, size_t row, int hold, double min_w,
                      double *alloc, double *tot, struct pfi_error *err) {
  double up = hold ? 0 : c->cfg.ramp_up_w_s * c->cfg.period_s;
  double left = 0;
  size_t nroom = 0;
  double *reach = malloc(row * sizeof *reach);
  if (!reach)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t r = 0; r < row; r++) {
    const struct pfi__ctl_job *j = &c->job[c->pslot[r]];
    double now = pfi__ctl_draw_at(c, j, j->cap);
    reach[r] = pfi__ctl_draw_at(c, j, j->cap + up);
    if (reach[r] < now)
      reach[r] = now;
    if (alloc[r] > reach[r]) {
      left += alloc[r] - reach[r];
      alloc[r] = reach[r];
    } else if (alloc[r] < reach[r] - DEADBAND_W) {
      nroom++;
    }
  }
  int rc = 0;
  if (left > min_w && nroom > 0) {
    double sum = 0;
    pfi_problem_clear(&c->prob);
    size_t k = 0;
    for (size_t r = 0; r < row; r++) {
      if (!(alloc[r] < reach[r] - DEADBAND_W))
        continue;
      const struct pfi__ctl_job *j = &c->job[c->pslot[r]];
      double x[PFI__CTL_MAXPTS + 8], y[PFI__CTL_MAXPTS + 8];
      size_t n =
          pfi__ctl_curve(c, j, alloc[r], reach[r], x, y, PFI__CTL_MAXPTS + 8);
      if ((rc = pfi_problem_add(&c->prob, x, y, n, x[0], x[n - 1], err)) < 0)
        goto out;
      c->px[k++] = (double)r;
      sum += alloc[r];
    }
    double plo, phi, b = sum + left, t2;
    pfi_problem_bounds(&c->prob, &plo, &phi);
    b = b < plo ? plo : b > phi ? phi : b;
    double *a2 = c->py; /* scratch of at least njobs entries */
    if ((rc = pfi_oracle_solve(&c->prob, b, a2, &t2, NULL, err)) < 0)
      goto out;
    for (size_t i = 0; i < k; i++)
      alloc[(size_t)c->px[i]] = a2[i];
  }
  if (left > 0) {
    /* Believed tokens at the allocation made. */
    *tot = 0;
    for (size_t r = 0; r < row; r++)
      *tot += pfi__ctl_believe(c, &c->job[c->pslot[r]], alloc[r],
                               c->job[c->pslot[r]].protect);
  }
out:
  free(reach);
  return rc;
}

/* Probes (docs/control.md "Probes"): a depth of this share of P_max, at
 * most one job in PROBE_JOBS movable ones (and one) probing at once, the
 * same job not again for PROBE_REST_S after its probe ends, and not where
 * a learned point lies within PROBE_NEAR of P_max of the probe's power. */
#define PROBE_DEPTH 0.05
#define PROBE_JOBS 50
#define PROBE_REST_S 60.0
#define PROBE_NEAR 0.02

/* Ends probes that are over or whose job left the allocation, and starts
 * new ones (`may` 0: none this period) where the expected value of what
 * the probe teaches exceeds the throughput it costs. A probe only moves
 * the job's watts to the others within the same budget: never under its
 * floor (tier included), never a protected or flagged job. */
static int choose_probes(struct pfi_ctl *c, const struct pfi_ctl_input *in,
                         const struct jstate *st, size_t nmov, int may) {
  const struct pfi_ctl_config *cf = &c->cfg;
  double hold = cf->settle_s + cf->learn_s + cf->period_s;
  size_t active = 0, most = 1 + nmov / PROBE_JOBS;
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used || !(j->probe_until > 0))
      continue;
    if (j->probe_until <= in->t_s || !st[s].movable || j->anomaly) {
      j->probe_until = 0;
      j->probe_next = in->t_s + PROBE_REST_S;
    } else {
      active++;
    }
  }
  if (!may || !(cf->probe_horizon_s > 0))
    return 0;
  for (size_t s = 0; s < c->nslots && active < most; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used || !st[s].movable || j->protect || j->anomaly ||
        j->probe_until > 0 || in->t_s < j->probe_next ||
        in->t_s - j->last_change_t < hold)
      continue;
    double a = pfi__ctl_draw_at(c, j, j->cap), delta = PROBE_DEPTH * j->pmax;
    double p = a - delta;
    if (!(p >= st[s].lo_t))
      continue;
    int near = 0;
    for (size_t i = 0; i < j->npts; i++)
      if (fabs(j->pts[i].power_w - p) <= PROBE_NEAR * j->pmax)
        near = 1;
    if (near)
      continue;
    /* What the freed watts earn elsewhere: at most what the job's next
     * watts would earn it (the oracle's allocation equalizes them). */
    double b = a + delta < st[s].hi ? a + delta : st[s].hi;
    double slope =
        b > a + 1e-9
            ? (pfi__ctl_believe(c, j, b, 0) - pfi__ctl_believe(c, j, a, 0)) /
                  (b - a)
            : 0;
    double cost, value = pfi__ctl_probe_value(c, j, a, delta, slope,
                                              cf->probe_horizon_s, hold, &cost);
    if (!(value > cost))
      continue;
    j->probe_p = p;
    j->probe_until = in->t_s + hold;
    j->probes++;
    active++;
  }
  return 0;
}

/* The event's allocation: feedback on realized power, oracle on believed
 * curves, two-phase application. */
static int allocate(struct pfi_ctl *c, const struct pfi_ctl_input *in,
                    double realized, struct pfi_ctl_output *out,
                    struct pfi_error *err) {
  const struct pfi_ctl_config *cf = &c->cfg;
  double target = in->target_w, aim = target * (1.0 - cf->margin);
  struct jstate *st = NULL;
  int rc = 0;
  if (c->nslots && !(st = calloc(c->nslots, sizeof *st)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  /* Free GPUs: held at their lowest cap so that a job starting on them
   * during the event starts low. */
  double free_draw = 0, model = 0, idle = 0;
  size_t nidle = 0;
  for (size_t g = 0; g < c->ngpus; g++)
    if (c->slot[g] < 0) {
      free_draw += in->gpu[g].valid ? c->draw[g] : c->cap[g];
      c->cap[g] = c->min_w[g];
      if (in->gpu[g].valid) {
        idle += c->draw[g];
        nidle++;
      }
    }
  if (nidle)
    c->idle_w = idle / (double)nidle;
  size_t nmov = 0, npts = 0;
  for (size_t s = 0; s < c->nslots; s++) {
    if (!c->job[s].used)
      continue;
    pfi__ctl_classify(c, &c->job[s], in->t_s, &st[s]);
    c->job[s].foreseen = st[s].foreseen;
    model += st[s].model;
    if (st[s].movable) {
      nmov++;
      npts += 6 + c->job[s].npts + 2;
    }
  }
  model += free_draw;
  pfi__ctl_contract_observe(c, in);
  /* Feedback: the model's error on the last period, taken at once when it
   * under-predicted, followed slowly when it over-predicted. */
  double resid = realized - model;
  if (resid > c->bias)
    c->bias = resid;
  else
    c->bias += 0.2 * (resid - c->bias);
  /* A paused job (starting, evaluation, checkpoint) gives its
   * draw to the others, its caps lowered so that its resumption can lift
   * cluster power by at most half the allowance; the two largest possible
   * resumptions beyond the allowance (a floor may keep a job's jump above
   * its share) are held in reserve. */
  double allowance = target * (1.0 + RESUME_ALLOW) - aim, j1 = 0, j2 = 0;
  size_t npaused = 0;
  for (size_t s = 0; s < c->nslots; s++)
    if (c->job[s].used && st[s].paused)
      npaused++;
  if (npaused > 2)
    npaused = 2; /* two resuming in one period is the case provided for */
  /* A job its contract releases (or exempts) that the allocation does not
   * move (paused, flagged, starting) gets its caps back all the same, a
   * ramp step a period: the contract's floor does not wait for it to train
   * again (a job flagged for not drawing its caps might never). Its
   * resumption is counted from its new caps. */
  double up_c = cf->ramp_up_w_s * cf->period_s;
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used || st[s].movable || j->blind ||
        !pfi__ctl_contract_hold(c, j, in->t_s))
      continue;
    double hi = pfi__ctl_cap_hi(c, j);
    if (j->cap >= hi - 1e-9)
      continue;
    double want = j->cap + up_c < hi ? j->cap + up_c : hi;
    if ((rc = pfi__ctl_contract_note(c, j, in, PFI_CTL_CONTRACT)) < 0 ||
        (rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_CONTRACT, 0)) < 0) {
      rc = pfi_error_set(err, rc, "out of memory");
      goto out;
    }
    double full = pfi__ctl_draw_at(c, j, j->cap);
    st[s].jump = full > st[s].next ? full - st[s].next : 0;
  }
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used || st[s].jump <= 0)
      continue;
    if (st[s].paused && !pfi__ctl_contract_hold(c, j, in->t_s)) {
      /* From the draw it has (a foreseen pause: the draw expected). */
      double want =
          pfi__ctl_cap_for(c, j, st[s].next + allowance / (double)npaused);
      if (j->anomaly) {
        /* Not below what its busiest GPU draws: in synchronous training a
         * slow worker paces the job, and its cap must not slow it more. */
        double gmax = 0;
        for (size_t k = 0; k < j->ngpus; k++)
          if (c->draw[j->gpu[k]] > gmax)
            gmax = c->draw[j->gpu[k]];
        double floor = pfi__ctl_cap_for(c, j, gmax * (double)j->ngpus);
        if (want < floor)
          want = floor;
      }
      if (want < j->cap - DEADBAND_W) {
        if ((rc = pfi__ctl_set_job_cap(c, j, in, want, PFI_CTL_CUT, 0)) < 0) {
          rc = pfi_error_set(err, rc, "out of memory");
          goto out;
        }
        double full = pfi__ctl_draw_at(c, j, j->cap);
        st[s].jump = full > st[s].next ? full - st[s].next : 0;
      }
    }
    if (!st[s].soon)
      continue;
    if (st[s].jump > j1) {
      j2 = j1;
      j1 = st[s].jump;
    } else if (st[s].jump > j2) {
      j2 = st[s].jump;
    }
  }
  double reserve = j1 + j2 - allowance;
  if (reserve < 0)
    reserve = 0;
  double fixed = free_draw;
  for (size_t s = 0; s < c->nslots; s++)
    if (c->job[s].used && !st[s].movable)
      fixed += st[s].next;
  double budget = aim - c->bias - reserve - fixed;
  out->aim_w = aim;
  /* Bounds of the movable jobs. */
  if ((rc = grow_scratch(c, nmov, npts)) < 0) {
    rc = pfi_error_set(err, rc, "out of memory");
    goto out;
  }
  double sum_lo = 0, sum_lo_hw = 0, sum_tier = 0, ex[2] = {0, 0};
  for (size_t s = 0; s < c->nslots; s++) {
    if (!c->job[s].used || !st[s].movable)
      continue;
    struct pfi__ctl_job *j = &c->job[s];
    double tier = pfi__ctl_floor(c, j, 1);
    st[s].lo_hw = pfi__ctl_floor(c, j, 0);
    st[s].hi = pfi__ctl_draw_at(c, j, pfi__ctl_cap_hi(c, j));
    st[s].lo_t =
        pfi__ctl_contract_floor(c, j, in->t_s, tier, st[s].hi, &st[s].term);
    if ((rc = pfi__ctl_contract_note(c, j, in, st[s].term)) < 0) {
      rc = pfi_error_set(err, rc, "out of memory");
      goto out;
    }
    if (st[s].term >= 0)
      ex[st[s].term == PFI_CTL_DEADLINE] += st[s].lo_t - tier;
    sum_tier += tier;
    sum_lo += st[s].lo_t;
    sum_lo_hw += st[s].lo_hw;
  }
  int tiers = 1, infeasible = 0;
  double shortfall = 0;
  if (budget < sum_lo && !cf->target_over_tiers) {
    infeasible = 1; /* the tiers hold: the target falls short */
    shortfall = sum_lo - budget;
  } else if (budget < sum_lo) {
    tiers = 0; /* the target wins over tiers */
    if (budget < sum_lo_hw) {
      infeasible = 1; /* floors win over the target */
      shortfall = sum_lo_hw - budget;
    }
  }
  out->infeasible = infeasible;
  out->shortfall_w = shortfall;
  /* The term the shortfall is owed to: the tiers' own floors first. */
  if (infeasible)
    out->infeasible_reason = !tiers || budget < sum_tier ? PFI_CTL_FLOOR
                             : ex[1] > ex[0]             ? PFI_CTL_DEADLINE
                                                         : PFI_CTL_CONTRACT;
  out->budget_w = budget;
  /* Increases wait while decreases not yet seen exceed 0.1 % of the
   * target (two phases) or realized power is above the aim. */
  double pending_w = 0;
  for (size_t g = 0; g < c->ngpus; g++)
    /* A job held for a foreseen pause, or in a pause still to deepen,
     * does not hold them: its pause or its caps bring its draw down within
     * the period, and its watts must reach the others in the period it
     * releases them. */
    if (c->pend_dec[g] && c->draw[g] > c->cap[g] &&
        !(c->slot[g] >= 0 &&
          (st[c->slot[g]].foreseen || st[c->slot[g]].falls)))
      pending_w += c->draw[g] - c->cap[g];
  int pending = pending_w > 0.001 * target;
  int above = realized > aim + 0.001 * target;
  /* Lead: a raise shows `raise_share` of itself in its first period, so
   * the rise the budget asks of the jobs in the allocation is asked as
   * rise / share, at most half the allowance more; the next period's
   * allocation takes the excess back (a decrease shows at once). */
  if (cf->strategy == 0 && !pending && !above && c->raise_share < 1) {
    double mov = 0;
    for (size_t s = 0; s < c->nslots; s++)
      if (c->job[s].used && st[s].movable)
        mov += st[s].next;
    double rise = budget - mov;
    if (rise > 0) {
      double lead = rise * (1.0 / c->raise_share - 1.0);
      if (lead > 0.5 * allowance)
        lead = 0.5 * allowance;
      budget += lead;
      out->budget_w = budget;
    }
  }
  double up = cf->ramp_up_w_s * cf->period_s;
  if ((rc = choose_probes(c, in, st, nmov,
                          tiers && !infeasible && !pending && !above)) < 0) {
    rc = pfi_error_set(err, rc, "out of memory");
    goto out;
  }
  pfi_problem_clear(&c->prob);
  size_t row = 0;
  for (size_t s = 0; s < c->nslots; s++) {
    if (!c->job[s].used || !st[s].movable)
      continue;
    struct pfi__ctl_job *j = &c->job[s];
    double lo = tiers ? st[s].lo_t : st[s].lo_hw, hi = st[s].hi;
    if (lo > hi)
      lo = hi;
    if (j->probe_until > in->t_s) {
      /* Probing: held at the probe's power, the others share the rest. */
      double p = j->probe_p < lo ? lo : j->probe_p > hi ? hi : j->probe_p;
      lo = hi = p;
    }
    double x[PFI__CTL_MAXPTS + 8], y[PFI__CTL_MAXPTS + 8];
    size_t n = pfi__ctl_curve(c, j, lo, hi, x, y, PFI__CTL_MAXPTS + 8);
    if ((rc = pfi_problem_add(&c->prob, x, y, n, x[0], x[n - 1], err)) < 0)
      goto out;
    c->pslot[row++] = (int)s;
  }
  double *alloc = c->palloc;
  if (row > 0) {
    double plo, phi;
    pfi_problem_bounds(&c->prob, &plo, &phi);
    double b = budget < plo ? plo : budget > phi ? phi : budget;
    double tot;
    if (c->cfg.strategy == 1) {
      /* Equal weight: reductions proportional to the uncapped power. */
      double *w = c->py; /* scratch of at least njobs entries */
      for (size_t r = 0; r < row; r++)
        w[r] = pfi_problem_hi(&c->prob, r);
      if ((rc = pfi_alloc_proportional(&c->prob, b, w, alloc, err)) < 0)
        goto out;
      tot = pfi_alloc_total_tokens(&c->prob, alloc);
    } else if ((rc = pfi_oracle_solve(&c->prob, b, alloc, &tot, NULL, err)) <
               0) {
      goto out;
    }
    out->pred_tokens = tot;
    if (cf->strategy == 0 &&
        (rc = fill_reach(c, row, pending || above, FILL_MIN * target, alloc,
                         &tot, err)) < 0)
      goto out;
    out->pred_tokens = tot;
  }
  /* Desired caps; decreases now, increases once every decrease has shown
   * in the realized draw (two phases), ramp-limited. */
  double down =
      cf->ramp_down_w_s > 0 ? cf->ramp_down_w_s * cf->period_s : INFINITY;
  for (size_t r = 0; r < row; r++) {
    struct pfi__ctl_job *j = &c->job[c->pslot[r]];
    const struct jstate *js = &st[c->pslot[r]];
    double lo_t = tiers ? js->lo_t : js->lo_hw;
    /* A job held by a contract term records the term, and its floor is
     * not held back with the other increases (fill_reach). */
    int held = tiers && js->term >= 0 && alloc[r] <= lo_t * (1 + 1e-9);
    if (held)
      alloc[r] = lo_t;
    double want = pfi__ctl_cap_for(c, j, alloc[r]);
    int reason = held                            ? js->term
                 : infeasible                    ? PFI_CTL_INFEASIBLE
                 : j->rollback_now               ? PFI_CTL_ROLLBACK
                 : j->probe_until > in->t_s      ? PFI_CTL_PROBE
                 : alloc[r] <= lo_t * (1 + 1e-9) ? PFI_CTL_FLOOR
                 : want < j->cap                 ? PFI_CTL_CUT
                                                 : PFI_CTL_RAISE;
    double d = want - j->cap;
    if (d < 0) {
      if (-d < DEADBAND_W && !above && !infeasible)
        continue;
      if (-d > down)
        want = j->cap - down;
    } else {
      /* A contract release rises even while realized power is above
       * the aim or decreases are still to show (its floor holds: an
       * infeasible target is reported; a job cut a little every period,
       * a deadline's floor falling as its tokens build up, would hold it
       * back for the whole event), and all the way back (no deadband). */
      if ((d < DEADBAND_W && !held) || ((pending || above) && !held))
        continue;
      if (d > up)
        want = j->cap + up;
    }
    if ((rc = pfi__ctl_set_job_cap(c, j, in, want, reason, shortfall)) < 0) {
      rc = pfi_error_set(err, rc, "out of memory");
      goto out;
    }
  }
  if (infeasible && !c->was_infeasible) {
    /* Report the shortfall once per infeasible spell on every job held. */
    for (size_t s = 0; s < c->nslots; s++)
      if (c->job[s].used && c->job[s].last_change_t != in->t_s &&
          (rc = pfi__ctl_decide(c, &c->job[s], in, c->job[s].cap,
                                st[s].movable && tiers && st[s].term >= 0
                                    ? st[s].term
                                    : PFI_CTL_INFEASIBLE,
                                shortfall)) < 0) {
        rc = pfi_error_set(err, rc, "out of memory");
        goto out;
      }
  }
  c->was_infeasible = infeasible;
  for (size_t s = 0; s < c->nslots; s++)
    if (c->job[s].used)
      c->job[s].rollback_now = 0;
out:
  free(st);
  return rc;
}

int pfi_ctl_step(struct pfi_ctl *c, const struct pfi_ctl_input *in,
                 struct pfi_ctl_output *out, struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  out->cap_w = c->out_cap;
  out->aim_w = out->budget_w = NAN;
  out->infeasible_reason = -1;
  out->recovery_limit_w = out->recovery_ceiling_w = NAN;
  out->recovery_rate_w_s = out->recovery_left_s = NAN;
  c->nrec = c->ndone = 0;
  int rc = pfi__ctl_check_input(c, in, err);
  if (rc < 0)
    return rc;
  double realized = 0;
  int all_valid = 1;
  for (size_t g = 0; g < c->ngpus; g++) {
    const struct pfi_ctl_gpu_obs *o = &in->gpu[g];
    if (o->valid) {
      c->draw[g] = o->power_w;
      if (c->pend_dec[g] && (o->power_w <= c->cap[g] * (1.0 + CONFIRM_TOL) ||
                             ++c->pend_dec[g] > 3))
        c->pend_dec[g] = 0;
      realized += o->power_w;
    } else {
      all_valid = 0;
      /* Silent: its last reading (never read: its cap; classify()). */
      realized += c->draw[g] > 0 ? c->draw[g] : c->cap[g];
    }
    if (!c->in_event && !c->recovering && o->valid)
      c->cap[g] = o->cap_w;
  }
  for (size_t s = 0; s < c->nslots; s++) {
    struct pfi__ctl_job *j = &c->job[s];
    if (!j->used)
      continue;
    if (!c->in_event && !c->recovering) {
      /* The job's cap is its lowest GPU's: a synchronous job (data or
       * model parallel, on one node or across several) steps at its
       * slowest GPU's pace, so that is the cap its throughput is seen
       * at (docs/control.md "One cap per job"). */
      double cap = INFINITY;
      for (size_t k = 0; k < j->ngpus; k++)
        if (c->cap[j->gpu[k]] < cap)
          cap = c->cap[j->gpu[k]];
      if (fabs(cap - j->cap) > 1e-9)
        j->last_change_t = in->t_s;
      j->cap = cap;
    }
    if ((rc = pfi__ctl_observe(c, j, in)) < 0) {
      rc = pfi_error_set(err, rc, "out of memory");
      goto out;
    }
  }
  pfi__ctl_learn_raise_share(c, in);
  if (in->event && !c->in_event) {
    c->in_event = 1;
    c->recovering = 0;
    c->was_infeasible = 0;
    snprintf(c->event, sizeof c->event, "%s",
             in->event_id ? in->event_id : "event");
    c->baseline = isfinite(in->baseline_w) && in->baseline_w > 0
                      ? in->baseline_w
                  : c->nhist ? median(c->hist, c->nhist)
                             : realized;
    for (size_t g = 0; g < c->ngpus; g++) {
      double p = in->pre_cap_w ? in->pre_cap_w[g] : NAN;
      c->pre[g] = isfinite(p) && p >= c->min_w[g] && p <= c->max_w[g]
                      ? p
                      : c->cap[g];
    }
    c->bias = 0;
    /* One cap per job from the event's start: GPUs of a job above its
     * lowest one (an operator's limit on one node, a node that kept an
     * older cap) come down to it, a cut that costs the job nothing (it
     * runs at its slowest GPU's pace) and frees what they drew above it.
     * Every later decision sets all of a job's GPUs together
     * (pfi__ctl_set_job_cap). */
    for (size_t s = 0; s < c->nslots; s++) {
      struct pfi__ctl_job *j = &c->job[s];
      for (size_t k = 0; j->used && k < j->ngpus; k++) {
        size_t g = j->gpu[k];
        if (c->cap[g] > j->cap + 1e-9) {
          c->cap[g] = j->cap;
          c->pend_dec[g] = 1;
        }
      }
    }
    pfi__ctl_contract_start(c, in);
  } else if (!in->event && c->in_event) {
    c->in_event = 0;
    c->recovering = 1;
    c->recovery_t0 = in->t_s;
    if ((rc = pfi__ctl_start_recovery(c)) < 0) {
      rc = pfi_error_set(err, rc, "out of memory");
      goto out;
    }
  } else if (!in->event && in->resume && !c->started && !c->recovering) {
    /* Another controller's recovery, taken over: the pre-event caps it
     * returns to given, the caps in force where it left them. */
    c->recovering = 1;
    c->recovery_t0 = in->resume->t0_s;
    c->baseline = in->resume->baseline_w > 0 ? in->resume->baseline_w : NAN;
    snprintf(c->event, sizeof c->event, "%s", in->resume->event);
    for (size_t g = 0; g < c->ngpus; g++) {
      double p = in->pre_cap_w ? in->pre_cap_w[g] : NAN;
      c->pre[g] = isfinite(p) && p >= c->min_w[g] && p <= c->max_w[g]
                      ? p
                      : c->cap[g];
    }
    if ((rc = pfi__ctl_start_recovery(c)) < 0) {
      rc = pfi_error_set(err, rc, "out of memory");
      goto out;
    }
  }
  if (!c->in_event && !c->recovering && all_valid) {
    c->hist[c->hist_pos] = realized;
    c->hist_pos = (c->hist_pos + 1) % 300;
    if (c->nhist < 300)
      c->nhist++;
  }
  if (c->in_event)
    rc = allocate(c, in, realized, out, err);
  else if (c->recovering)
    rc = pfi__ctl_recover(c, in, realized, err);
  out->recovering = c->recovering;
  if (c->recovering && rc == 0) {
    out->recovery_limit_w = c->rec_line;
    out->recovery_ceiling_w = c->rec_ceiling;
    out->recovery_rate_w_s = c->rec_rate;
    double left = c->cfg.recovery_s - (in->t_s - c->recovery_t0);
    out->recovery_left_s = left > 0 ? left : 0;
    out->recovery_held = c->rec_held;
  }
out:
  c->t_last = in->t_s;
  c->started = 1;
  memcpy(c->out_cap, c->cap, c->ngpus * sizeof *c->cap);
  out->rec = c->rec;
  out->nrec = c->nrec;
  out->done = c->done;
  out->ndone = c->ndone;
  return rc;
}
