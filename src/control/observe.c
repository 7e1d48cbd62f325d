/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The observation of one job in a control period (part of pfi_ctl_step,
 * step.c): its draw and throughput read, the settled window accumulated
 * and learned from, the anomaly and rollback rules judged.
 * docs/control.md states each rule.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"

/* Pauses of lengths within this of each other, s, are of one kind (an
 * evaluation, a checkpoint); a start within this of a multiple of the
 * kind's period keeps the period (a pause merged into another one or not
 * seen in between). */
#define KIND_TOL_S 2.0
/* An uncapped period drawing under this share of the job's P_max is not
 * its training draw (idle GPUs under their caps, a stall), and a P_max
 * under this share of a period's draw was not learned from one: the
 * share under which a period's draw is not learned either ("under"). */
#define UNCAPPED_IDLE 0.75

/* A pause of the job seen end to end (docs/control.md "Foreseen pauses"):
 * its kind's last start, period (start to start), draw ratio and depth
 * (from a draw of `pre` before it). */
/* An announced pause begun `late` s after the start the controller acted
 * on (docs/control.md "Announced pauses"). */
static void note_ann_late(struct pfi_ctl *c, struct pfi__ctl_job *j,
                          double late) {
  j->ann_late = late > 0.8 * j->ann_late ? late : 0.8 * j->ann_late;
  c->ann_late_all =
      late > 0.95 * c->ann_late_all ? late : 0.95 * c->ann_late_all;
  j->ann_seen = 1;
  j->ann_acted = NAN;
}

double pfi__ctl_ann_late(const struct pfi_ctl *c,
                         const struct pfi__ctl_job *j) {
  return j && j->ann_seen ? j->ann_late : c->ann_late_all;
}

static void note_pause(struct pfi_ctl *c, struct pfi__ctl_job *j, double start,
                       double len, double ratio, double depth, double pre) {
  struct pfi__ctl_kind *k = NULL;
  for (size_t i = 0; i < j->nkinds && !k; i++)
    if (fabs(j->kinds[i].len_s - len) <= KIND_TOL_S)
      k = &j->kinds[i];
  if (!k) {
    if (j->nkinds < PFI__CTL_KINDS) {
      k = &j->kinds[j->nkinds++];
    } else {
      k = &j->kinds[0]; /* the kind seen longest ago gives its place */
      for (size_t i = 1; i < j->nkinds; i++)
        if (j->kinds[i].last_s < k->last_s)
          k = &j->kinds[i];
    }
    k->last_s = k->period_s = k->ratio = k->depth = NAN;
  }
  double gap = start - k->last_s;
  if (isfinite(gap) && gap > len) {
    double m = isfinite(k->period_s) ? floor(gap / k->period_s + 0.5) : 0;
    if (!(m >= 1 && fabs(gap - m * k->period_s) <= KIND_TOL_S))
      k->period_s = gap;
  }
  k->last_s = start;
  k->len_s = len;
  int has_ratio = isfinite(ratio) && ratio >= 0 && ratio < 1;
  int has_depth = isfinite(depth) && depth >= 0 && depth < 1;
  if (has_ratio)
    k->ratio = ratio;
  if (has_depth)
    k->depth = depth;
  /* The cluster's kinds: the period and the depth its jobs' pauses of
   * this length last showed, and the fit of a GPU's pause draw on its draw
   * before (a kind a job has shown once takes the period; a pause of a
   * kind the job has not shown, the fit or the depth). */
  struct pfi__ctl_kind *q = NULL;
  for (size_t i = 0; i < c->npop && !q; i++)
    if (fabs(c->pop[i].len_s - len) <= KIND_TOL_S)
      q = &c->pop[i];
  if (!q && c->npop < PFI__CTL_KINDS && (k->period_s > 0 || has_depth)) {
    q = &c->pop[c->npop++];
    q->last_s = q->period_s = q->ratio = q->depth = NAN;
    q->fw = q->fx = q->fy = q->fxx = q->fxy = 0;
  }
  if (q) {
    q->len_s = len;
    if (k->period_s > 0)
      q->period_s = k->period_s;
    if (has_depth && pre > 0 && j->ngpus > 0) {
      q->depth = depth;
      double x = pre / (double)j->ngpus, y = depth * x;
      q->fw = 0.9 * q->fw + 1;
      q->fx = 0.9 * q->fx + x;
      q->fy = 0.9 * q->fy + y;
      q->fxx = 0.9 * q->fxx + x * x;
      q->fxy = 0.9 * q->fxy + x * y;
    }
  }
}

double pfi__ctl_pause_draw(const struct pfi_ctl *c,
                           const struct pfi__ctl_job *j, double len_s,
                           double pre_w, int any) {
  if (!(pre_w > 0) || j->ngpus == 0)
    return NAN;
  double x = pre_w / (double)j->ngpus, own = NAN, last = NAN, hi = NAN;
  for (size_t i = 0; i < c->npop; i++) {
    const struct pfi__ctl_kind *q = &c->pop[i];
    if (!isfinite(q->depth))
      continue;
    if (!(q->depth <= hi))
      hi = q->depth;
    if (!(isfinite(len_s) && fabs(q->len_s - len_s) <= KIND_TOL_S))
      continue;
    last = q->depth;
    double w = q->fw, mx = q->fx / w, var = q->fxx / w - mx * mx;
    if (w >= 2.5 && var >= 100.0) {
      double b = (q->fxy / w - mx * q->fy / w) / var;
      double y = q->fy / w + b * (x - mx);
      if (isfinite(y) && y > 0 && y < x)
        return y * (double)j->ngpus;
    }
  }
  for (size_t i = 0; i < j->nkinds; i++) {
    const struct pfi__ctl_kind *k = &j->kinds[i];
    if (!isfinite(k->depth))
      continue;
    if (!(k->depth <= hi))
      hi = k->depth;
    if (isfinite(len_s) && fabs(k->len_s - len_s) <= KIND_TOL_S)
      own = k->depth;
  }
  double d = isfinite(own) ? own : isfinite(last) ? last : any ? hi : NAN;
  return d * pre_w;
}

double pfi__ctl_foreseen_pause(const struct pfi_ctl *c,
                               const struct pfi__ctl_job *j, double t_next,
                               double tol_s, double *len_s) {
  double r = NAN;
  if (len_s)
    *len_s = NAN;
  for (size_t i = 0; i < j->nkinds; i++) {
    const struct pfi__ctl_kind *k = &j->kinds[i];
    double period = k->period_s;
    /* Shown once: the period of the cluster's pauses of its length (a
     * trainer's schedule is usually its cluster's: evaluation and
     * checkpoint every so many steps), only for its next start. */
    int once = 0;
    for (size_t q = 0; q < c->npop && !(period > 0); q++)
      if (fabs(c->pop[q].len_s - k->len_s) <= KIND_TOL_S) {
        period = c->pop[q].period_s;
        once = 1;
      }
    if (!(period > 0) || !isfinite(k->ratio))
      continue;
    /* The start due last at or before t_next (a multiple of its period
     * after its last start): foreseen from half a period before it until
     * tol_s after it (a pause a little late). */
    double m = floor((t_next + 0.5 - k->last_s) / period);
    if (!(m >= 1) || (once && m > 1))
      continue;
    double late = t_next - (k->last_s + m * period);
    if (late >= -0.5 && late <= tol_s && !(k->ratio >= r)) {
      r = k->ratio;
      if (len_s)
        *len_s = k->len_s;
    }
  }
  return r;
}

/* Observation, learning, anomaly and rollback rules for one job. */
int pfi__ctl_observe(struct pfi_ctl *c, struct pfi__ctl_job *j,
                     const struct pfi_ctl_input *in) {
  const struct pfi_ctl_config *cf = &c->cfg;
  const struct pfi_ctl_job_obs *o = &in->job[j - c->job];
  double draw = 0;
  j->blind = 0;
  for (size_t k = 0; k < j->ngpus; k++) {
    const struct pfi_ctl_gpu_obs *g = &in->gpu[j->gpu[k]];
    if (!g->valid)
      j->blind = 1;
    draw += c->draw[j->gpu[k]];
  }
  double prev_draw = j->draw;
  j->draw_2 = j->draw_1;
  j->draw_1 = prev_draw;
  /* Its trainer's announcement: the pause's start on our clock; the draw
   * of a period that ended at or before it is its training draw. One not
   * begun within two periods of its start is dropped (it did not come). */
  if (o->pause_announced && isfinite(o->pause_in_s) && o->pause_in_s >= 0 &&
      o->pause_in_s < 1e7) {
    j->announces = 1;
    j->ann_at = in->t_s + o->pause_in_s;
    j->ann_len = o->pause_len_s > 0 && isfinite(o->pause_len_s)
                     ? o->pause_len_s
                     : NAN;
    /* Its training draw: not one at the caps held for the pause (a
     * trainer announcing again while its pause is late). */
    if (!j->foreseen || !(j->ann_pre > 0))
      j->ann_pre = draw;
    /* The start the controller acts on (classify(): a start within the
     * next period, the lateness seen added), kept until the pause. */
    if (!isfinite(j->ann_acted) &&
        j->ann_at + pfi__ctl_ann_late(c, j) < in->t_s + cf->period_s)
      j->ann_acted = j->ann_at;
  } else if (isfinite(j->ann_at) &&
             in->t_s > j->ann_at + 2 * cf->period_s + 1e-9) {
    j->ann_at = NAN;
    if (isfinite(j->ann_acted))
      note_ann_late(c, j, 2 * cf->period_s); /* it did not come */
  }
  /* Its announced end, likewise. */
  if (o->end_announced && isfinite(o->end_in_s) && o->end_in_s >= 0 &&
      o->end_in_s < 1e7) {
    j->end_at = in->t_s + o->end_in_s;
    j->end_pre = draw;
  } else if (isfinite(j->end_at) &&
             in->t_s > j->end_at + 2 * cf->period_s + 1e-9) {
    j->end_at = NAN;
  }
  /* Whether the period before this one was held for a foreseen pause
   * (then its draw is not the job's training draw). */
  int held_before = j->foreseen_prev;
  j->foreseen_prev = j->foreseen;
  j->foreseen = 0;
  j->draw = draw;
  /* The last period's throughput, if it trained (for a pause's share). */
  double tput_prev = j->tput_valid && j->phase == PFI_PHASE_TRAINING &&
                             !j->blind && j->tput > 0
                         ? j->tput
                         : NAN;
  j->tput_valid = o->valid;
  j->tput = o->valid ? o->tokens_per_s : NAN;
  int prev = j->phase;
  j->phase = o->valid ? o->phase : -1;
  /* How long pauses (evaluation, checkpoint: from training back to
   * training) and startups (to the first training) last, learned. */
  if (j->phase == PFI_PHASE_PAUSE && prev == PFI_PHASE_TRAINING) {
    j->pause_t0 = in->t_s;
    /* A pause of a kind due now is expected to last as long as its last
     * one; another, as long as the shortest seen (classify()). */
    pfi__ctl_foreseen_pause(c, j, in->t_s, KIND_TOL_S, &j->pause_len);
    /* The draw before it began: two periods back (a pause first reported
     * now began in the period before at the earliest), or the one its
     * trainer's announcement marked. */
    j->pause_pre = j->draw_2;
    if (isfinite(j->ann_acted)) {
      /* How late it began after the start acted on, at least: it began
       * within the period (its throughput's share does not tell here: the
       * caps held for it changed). */
      double late = in->t_s - cf->period_s - j->ann_acted;
      note_ann_late(c, j, late > 0 ? late : 0);
    }
    if (isfinite(j->ann_at) && in->t_s >= j->ann_at - 1e-9) {
      if (j->ann_len > 0)
        j->pause_len = j->ann_len; /* as long as its trainer said */
      j->pause_pre = j->ann_pre;
      j->ann_at = NAN;
    }
    j->pause_depth = NAN;
    /* Which share of the period it paused: a trainer's throughput over
     * the period is its training share of the rate before, as long as the
     * caps stayed (no change in the two periods compared, nor the one
     * before, whose change a step may still carry). */
    j->pause_f = NAN;
    if (isfinite(tput_prev) && o->valid && o->tokens_per_s >= 0 &&
        !held_before && !j->blind &&
        in->t_s - j->last_change_t >= 3 * cf->period_s - 1e-9) {
      double f = 1 - o->tokens_per_s / tput_prev;
      if (f >= PAUSE_F_MIN)
        j->pause_f = f > 1 ? 1 : f;
    }
    j->pause_ratio =
        !held_before && !j->blind && prev_draw > 0 ? draw / prev_draw : NAN;
  } else if (j->phase == PFI_PHASE_TRAINING && isfinite(j->pause_t0)) {
    double len = in->t_s - j->pause_t0;
    note_pause(c, j, j->pause_t0, len, j->pause_ratio, j->pause_depth,
               j->pause_pre);
    if (!(len >= j->pause_min))
      j->pause_min = len;
    if (!(len >= c->pause_min_all))
      c->pause_min_all = len;
    j->pause_t0 = NAN;
  } else if (j->phase != PFI_PHASE_PAUSE) {
    j->pause_t0 = NAN;
  } else if (isfinite(j->pause_t0) && !isfinite(j->pause_depth) &&
             in->t_s - j->pause_t0 >= cf->period_s - 1e-9 && !j->blind &&
             j->pause_pre > 0) {
    /* Its second paused period: the pause's whole depth. */
    j->pause_depth = draw / j->pause_pre;
  }
  if (j->phase == PFI_PHASE_STARTUP && !isfinite(j->start_t0) &&
      prev != PFI_PHASE_TRAINING) {
    j->start_t0 = in->t_s;
  } else if (j->phase == PFI_PHASE_TRAINING && isfinite(j->start_t0)) {
    double len = in->t_s - j->start_t0;
    if (!(len >= c->startup_min_all))
      c->startup_min_all = len;
    j->start_t0 = NAN;
  } else if (j->phase != PFI_PHASE_STARTUP) {
    j->start_t0 = NAN;
  }
  int train = o->valid && is_training(j) && !j->blind;
  int settled = in->t_s - j->last_change_t >= cf->settle_s;
  double hi = pfi__ctl_cap_hi(c, j);
  /* At its ceiling nothing binds it: outside an event and its recovery,
   * and in them for a job whose uncapped point is not known (one that
   * starts, cold, in the event: until it is known the job cannot be
   * allocated, and it would draw its full power at its pre-event caps
   * through the event; docs/control.md "Beliefs"). */
  int top = j->cap >= hi - 0.5;
  int uncapped = top && ((!c->in_event && !c->recovering) ||
                         !isfinite(j->pmax) || !isfinite(j->tmax));
  /* The draw at its caps, learned from every training period under them
   * in an event or its recovery (docs/control.md "Draw"): a decrease shows
   * within the period (tens of ms), an increase from the second period
   * after it (its dead time and time constant take a quarter of the
   * first). Not while flagged, nor, once settled, from a period slower
   * than its curve (a stall draws under its caps): those are learned
   * below, after the anomaly rule. */
  /* A training period with no throughput at all (a failed worker stops
   * the step; the job is held like a paused one, classify()) says nothing
   * about the curve or the draw at its caps: not learned from. */
  int stopped = !(o->tokens_per_s > 0);
  /* Drawing under 75 % of the draw modelled at its caps: its GPUs idle
   * part of the time (a stall), not a draw to learn (a model that took the
   * stall's draw would let the fault's end lift cluster power by the
   * difference in one period; a job that does not use its caps draws its
   * P_max, which the model holds). Starved: so, and slower than its curve
   * at the power it draws, wherever the curve is known or not: flagged
   * below, its caps then held to its draw. */
  int under = draw < 0.75 * pfi__ctl_draw_at(c, j, j->cap);
  int starved = train && under && isfinite(j->pmax) && isfinite(j->tmax) &&
                o->tokens_per_s <
                    pfi__ctl_believe(c, j, draw, 0) * (1.0 - cf->anomaly_frac);
  int learn_draw = cf->draw_learn && train && !stopped && !j->anomaly &&
                   !under &&
                   (c->in_event || c->recovering) && j->cap < hi - 0.5 &&
                   draw > 0 &&
                   (j->last_dir <= 0 ||
                    in->t_s - j->last_change_t >= 2.0 * cf->period_s - 1e-9);
  if (learn_draw && !settled)
    pfi__ctl_learn_draw(j, j->cap, draw);
  if (!train || !settled) {
    j->acc_n = j->acc_p = j->acc_t = j->acc_t2 = 0;
    j->anom_run = 0;
    return 0;
  }
  /* Its uncapped point is its training draw. A period at its ceiling
   * drawing more than a third above the P_max learned so far says that
   * those periods were not (a start-up or a pause whose trainer reports
   * no phase, its last rate standing: GPUs loaded but idle under their
   * caps): the means start again from it, in an event too. One drawing
   * under three quarters of it is such a period (or a stall), not
   * learned. A P_max learned from idle periods left the draw modelled at
   * the ceiling at the idle draw and the floor at the ceiling: an event
   * right after a cold start was infeasible, nothing cut. A hint is
   * taken as before (the first period's weight). */
  if (top && j->nmax > 0 && draw > j->pmax / UNCAPPED_IDLE &&
      o->tokens_per_s > 0 && !j->anomaly) {
    j->nmax = 0;
    uncapped = 1;
  }
  int idle = j->nmax > 0 && draw < UNCAPPED_IDLE * j->pmax;
  if (uncapped && o->tokens_per_s > 0 && !j->anomaly && !idle) {
    /* Running means of the uncapped point (capped at 600 periods, so it
     * follows slow drift). */
    double w = j->nmax < 600 ? j->nmax : 600;
    if (!j->pmax_hint || j->nmax > 0 || !isfinite(j->pmax))
      j->pmax = j->nmax > 0 ? (j->pmax * w + draw) / (w + 1) : draw;
    if (!j->tmax_hint || j->nmax > 0 || !isfinite(j->tmax))
      j->tmax = j->nmax > 0 ? (j->tmax * w + o->tokens_per_s) / (w + 1)
                            : o->tokens_per_s;
    j->nmax++;
    j->pmax_hint = j->tmax_hint = 0;
  }
  if (!isfinite(j->pmax) || !isfinite(j->tmax))
    return 0;
  /* Anomaly: slower than the curve at the realized power with no cap
   * change to explain it. */
  double pred = pfi__ctl_believe(c, j, draw, 0);
  double thr = 1.0 - cf->anomaly_frac;
  /* (a) slower than the curve at its realized power, outside the first
   * window after a cap change (there a gap is news about the curve);
   * only where the curve is known (within 3 % of P_max of a learned point
   * or of the uncapped point; elsewhere a gap is a prior's error);
   * (b) at a cap it was learned at, drawing under 90 % of the learned
   * power and slower than the learned throughput: something other than
   * the cap holds it back. */
  int known = draw >= 0.97 * j->pmax;
  for (size_t i = 0; i < j->npts; i++)
    if (fabs(j->pts[i].power_w - draw) <= 0.03 * j->pmax)
      known = 1;
  int slow =
      known && !j->acc_after_change && pred > 0 && o->tokens_per_s < pred * thr;
  for (size_t i = 0; i < j->npts; i++) {
    const struct pfi__ctl_pt *q = &j->pts[i];
    if (fabs(q->cap_w - j->cap) <= SMALL_W && draw < 0.9 * q->power_w &&
        o->tokens_per_s < q->tokens * thr)
      slow = 1;
  }
  /* (c) starved (above). */
  if (starved)
    slow = 1;
  /* At its ceiling the uncapped point is the point learned at its caps
   * (windows there are not learned, below). */
  if (j->cap >= hi - 0.5 && draw < 0.9 * j->pmax &&
      o->tokens_per_s < j->tmax * thr)
    slow = 1;
  int rc = 0;
  if (!j->anomaly) {
    j->anom_run = slow ? j->anom_run + 1 : 0;
    if (j->anom_run >= 3) {
      j->anomaly = 1;
      j->clear_run = 0;
      j->acc_n = j->acc_p = j->acc_t = j->acc_t2 = 0;
      rc = pfi__ctl_decide(c, j, in, j->cap, PFI_CTL_ANOMALY, 0);
    }
  } else {
    /* Cleared by periods that are not slow: where the curve is known,
     * near it; elsewhere (a flagged job held at a cap it was never seen
     * at) a gap to the prior is the prior's error, as for flagging, and
     * the sign that the fault is over is that the job draws its caps
     * again (a stalled job leaves them idle). */
    int bound = draw >= 0.95 * pfi__ctl_draw_at(c, j, j->cap);
    int ok = !slow &&
             (known ? o->tokens_per_s >= pred * (1.0 - 0.5 * cf->anomaly_frac)
                    : bound);
    j->clear_run = ok ? j->clear_run + 1 : 0;
    if (j->clear_run >= 10)
      j->anomaly = 0;
  }
  if (j->anomaly || slow || stopped) {
    /* Not learned from: a window with a slow or stopped period is
     * dropped. */
    if (j->anomaly)
      j->anomalies++;
    j->acc_n = j->acc_p = j->acc_t = j->acc_t2 = 0;
    return rc;
  }
  if (learn_draw)
    pfi__ctl_learn_draw(j, j->cap, draw);
  /* Without the learned draw: a single draw per cap while the cap binds. */
  if (!cf->draw_learn && !uncapped && draw < j->pmax * 0.98 && j->cap > 0) {
    double r = draw / ((double)j->ngpus * j->cap);
    if (r > 0.5 && r <= 1.0)
      j->ratio += 0.2 * (r - j->ratio);
  }

  /* Learning: a settled window of learn_s seconds becomes a point. */
  j->acc_n += 1;
  j->acc_cap += (j->cap - j->acc_cap) / j->acc_n;
  j->acc_p += draw;
  j->acc_t += o->tokens_per_s;
  j->acc_t2 += o->tokens_per_s * o->tokens_per_s;
  if (j->acc_n * cf->period_s + 1e-9 < cf->learn_s)
    return rc;
  double n = j->acc_n, mp = j->acc_p / n, mt = j->acc_t / n;
  double m2 = j->acc_t2 - n * mt * mt;
  if (m2 < 0)
    m2 = 0;
  j->acc_n = j->acc_p = j->acc_t = j->acc_t2 = 0;
  if (j->acc_after_change && j->protect && c->in_event) {
    /* Rollback: lost more than believed, beyond noise, at the power it
     * drew. The belief is a curve of power; the prediction made at the
     * change was read at the power the draw model expected of the new
     * caps, and a job drawing less than that (its draw per cap not yet
     * learned) lost more than predicted without being any steeper than
     * believed: the feedback and the learned draw ratio correct that, a
     * rollback (its floor held at the draw before the cut for the rest of
     * the event) does not. */
    double p0 = pfi__ctl_believe(c, j, mp, 0);
    double se = sqrt(m2 / (n > 1 ? n - 1 : 1) / n +
                     pow(cf->tokens_cv * (isfinite(p0) ? p0 : mt), 2));
    if (isfinite(p0) && mt < p0 - cf->rollback_z * se) {
      /* Its power back: the floor becomes the draw before the cut. */
      double back = j->draw_before_cut;
      if (back > j->rollback_floor)
        j->rollback_floor = back;
      j->rollbacks++;
      j->rollback_now = 1;
    }
  }
  j->acc_after_change = 0;
  /* A window at the job's ceiling (its caps where they were before the
   * event) is not a point of its capped curve: nothing binds it there, so
   * a draw read under P_max at its full throughput says that its uncapped
   * draw varies, not that it keeps T_max at less power (such a point made
   * the curve flat from it to P_max and steep just under it). */
  if (mp < j->pmax * 0.998 && j->acc_cap < hi - 0.5)
    pfi__ctl_learn(j, j->acc_cap, mp, mt, n, m2);
  if (j->pending && rc == 0)
    rc = pfi__ctl_complete(c, j, in, mp, mt);
  return rc;
}

int pfi__ctl_check_input(const struct pfi_ctl *c,
                         const struct pfi_ctl_input *in,
                         struct pfi_error *err) {
  if (!isfinite(in->t_s) || (c->started && !(in->t_s > c->t_last)))
    return pfi_error_set(err, PFI_EINVAL,
                         "control period at t = %g s: time must increase",
                         in->t_s);
  if (in->event && !(isfinite(in->target_w) && in->target_w > 0))
    return pfi_error_set(err, PFI_EINVAL, "target %g W is not positive",
                         in->target_w);
  if (in->resume &&
      (!(isfinite(in->resume->t0_s) && in->resume->t0_s <= in->t_s) ||
       !(isnan(in->resume->baseline_w) ||
         (isfinite(in->resume->baseline_w) && in->resume->baseline_w >= 0))))
    return pfi_error_set(err, PFI_EINVAL,
                         "recovery to resume: start %g s or baseline %g W "
                         "not valid",
                         in->resume->t0_s, in->resume->baseline_w);
  for (size_t g = 0; g < c->ngpus; g++) {
    const struct pfi_ctl_gpu_obs *o = &in->gpu[g];
    if (o->valid && !(isfinite(o->power_w) && o->power_w >= 0 &&
                      isfinite(o->cap_w) && o->cap_w > 0))
      return pfi_error_set(err, PFI_EINVAL,
                           "GPU %zu: power %g W or cap %g W not valid", g,
                           o->power_w, o->cap_w);
  }
  for (size_t s = 0; s < c->nslots; s++) {
    const struct pfi_ctl_job_obs *o = &in->job[s];
    if (c->job[s].used && o->valid &&
        !(isfinite(o->tokens_per_s) && o->tokens_per_s >= 0))
      return pfi_error_set(err, PFI_EINVAL, "job %s: throughput %g not valid",
                           c->job[s].id, o->tokens_per_s);
  }
  return 0;
}

/* The share of a raise shown in the period after it, learned from the
 * jobs raised by the last call (training, reporting, not flagged): their
 * rise in draw over the rise modelled at their new caps, summed, followed
 * at gain 0.1 once the modelled rise exceeds 0.1 % of the baseline,
 * within [0.6, 1]. */
void pfi__ctl_learn_raise_share(struct pfi_ctl *c,
                                const struct pfi_ctl_input *in) {
  double num = 0, den = 0;
  for (size_t s = 0; s < c->nslots; s++) {
    const struct pfi__ctl_job *j = &c->job[s];
    if (!j->used || j->raise_t != c->t_last || j->blind || j->anomaly ||
        !j->tput_valid || j->phase != PFI_PHASE_TRAINING ||
        !(j->raise_m1 > j->raise_d0))
      continue;
    num += j->draw - j->raise_d0;
    den += j->raise_m1 - j->raise_d0;
  }
  (void)in;
  if (!(c->in_event && den > 0.001 * c->baseline))
    return;
  double r = num / den;
  r = r < 0.6 ? 0.6 : r > 1.0 ? 1.0 : r;
  c->raise_share += 0.1 * (r - c->raise_share);
}
