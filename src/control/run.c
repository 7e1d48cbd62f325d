/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The closed-loop run (cluster.h): the emulated cluster, the controller
 * (or equal-weight cuts) closing the loop every period, and the measures
 * of docs/control.md "Measures", among them the throughput of the oracle
 * with the true curves and perfect tracking on the same seconds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/cluster.h"
#include "pfi/objective.h"
#include "pfi/oracle.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Oracle with the true curves and perfect tracking, this second: training
 * jobs without a fault share the target less what every other job and
 * idle GPU draws; returns its total tokens/s (the other jobs' observed
 * true tokens added). */
/* A job's value per token under the objective (the measures' value_*). */
static double job_factor(const struct pfi_cluster_job *j, int objective) {
  return pfi_objective_factor((enum pfi_objective_kind)objective, 1.0,
                              (double)j->ngpus, j->tmax);
}

/* Under `objective` (objective.h): the oracle maximizes the jobs' value,
 * their true tokens times their factors (PFI_OBJ_THROUGHPUT: tokens/s). */
static int oracle_tokens(struct pfi_cluster *cl,
                         const struct pfi_cluster_obs *o, double target,
                         int tiers, int objective, struct pfi_problem *pb,
                         int *in, double *alloc, double *value_out,
                         struct pfi_error *err) {
  double fixed = 0, other_v = 0;
  size_t G = pfi_cluster_ngpus(cl);
  char *used = calloc(G, 1);
  if (!used)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  pfi_problem_clear(pb);
  for (size_t k = 0; k < o->njobs; k++) {
    const struct pfi_cluster_job *j = pfi_cluster_job_at(cl, o->job[k]);
    double pw = 0;
    for (size_t r = 0; r < j->ngpus; r++) {
      pw += o->gpu[j->gpu[r]].power_w;
      used[j->gpu[r]] = 1;
    }
    /* A faulted or paused job is held where it is. */
    double x[17], y[17];
    int n = pfi_cluster_true_curve(cl, o->job[k], x, y, 17);
    double tmax = n > 0 ? y[n - 1] : 0;
    int normal = o->phase[k] == PFI_PHASE_TRAINING && n > 0 &&
                 o->true_tokens[k] > 0.9 * y[0] &&
                 o->true_tokens[k] <= tmax * 1.001;
    /* Faults show as throughput under the curve at the job's power. */
    if (normal) {
      double lo = x[0], hi = x[n - 1];
      double t_at = y[0];
      for (int i = 0; i + 1 < n; i++)
        if (pw >= x[i] && pw <= x[i + 1])
          t_at = y[i] + (y[i + 1] - y[i]) * (pw - x[i]) / (x[i + 1] - x[i]);
      if (pw > hi)
        t_at = y[n - 1];
      if (o->true_tokens[k] < 0.9 * t_at)
        normal = 0;
      if (normal && tiers && j->max_loss < 1) {
        /* Held to its tier: not below the power where its true curve
         * keeps 1 - max_loss of its uncapped throughput. */
        double keep = (1 - j->max_loss) * tmax;
        for (int i = 0; i < n; i++)
          if (y[i] >= keep) {
            double f = i > 0 && y[i] > y[i - 1]
                           ? x[i - 1] + (x[i] - x[i - 1]) * (keep - y[i - 1]) /
                                            (y[i] - y[i - 1])
                           : x[i];
            if (f > lo)
              lo = f;
            break;
          }
      }
      if (normal) {
        double f = job_factor(j, objective);
        for (int i = 0; i < n; i++)
          y[i] *= f;
        int rc = pfi_problem_add(pb, x, y, (size_t)n, lo, hi, err);
        if (rc < 0) {
          free(used);
          return rc;
        }
        in[pb->njobs - 1] = (int)k;
        continue;
      }
    }
    fixed += pw;
    other_v += o->true_tokens[k] * job_factor(j, objective);
  }
  for (size_t g = 0; g < G; g++)
    if (!used[g])
      fixed += o->gpu[g].power_w;
  free(used);
  double lo, hi, tot = 0;
  pfi_problem_bounds(pb, &lo, &hi);
  double b = target - fixed;
  if (pb->njobs > 0) {
    b = b < lo ? lo : b > hi ? hi : b;
    int rc = pfi_oracle_solve(pb, b, alloc, &tot, NULL, err);
    if (rc < 0)
      return rc;
  }
  *value_out = tot + other_v;
  return 0;
}

int pfi_run_closed_loop(const struct pfi_cluster_config *cc,
                        const char *jobs_path,
                        const struct pfi_ctl_config *cfg0,
                        const struct pfi_event *tg, double tail_s,
                        enum pfi_ctl_strategy strategy, pfi_run_cb cb,
                        void *cbctx, struct pfi_run_result *res,
                        struct pfi_error *err) {
  struct pfi_ctl_config cfg;
  if (cfg0)
    cfg = *cfg0;
  else
    pfi_ctl_config_init(&cfg);
  cfg.strategy = strategy == PFI_RUN_EQUAL ? 1 : 0;
  memset(res, 0, sizeof *res);
  double end = pfi_event_end(tg), horizon = end + tail_s;
  double dt = cfg.period_s;
  struct pfi_cluster *cl = NULL;
  struct pfi_ctl *ctl = NULL;
  struct pfi_problem pb;
  pfi_problem_init(&pb);
  double *mn = NULL, *mx = NULL, *caps = NULL, *prev = NULL, *pre = NULL;
  double *errs = NULL, *alloc = NULL;
  int *slot_of = NULL, *oin = NULL;
  double *dl_tok = NULL; /* observed tokens of each job over the event */
  struct pfi_ctl_job_obs *jo = NULL;
  size_t nslot_of = 0, nerrs = 0, errs_cap = 0, jo_cap = 0;
  int rc = pfi_cluster_open(&cl, cc, jobs_path, horizon, err);
  if (rc < 0)
    return rc;
  size_t G = pfi_cluster_ngpus(cl);
  mn = malloc(G * sizeof *mn);
  mx = malloc(G * sizeof *mx);
  caps = malloc(G * sizeof *caps);
  prev = malloc(G * sizeof *prev);
  pre = malloc((size_t)(tg->start_s / dt + 2) * sizeof *pre);
  if (!mn || !mx || !caps || !prev || !pre) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  pfi_cluster_limits(cl, mn, mx);
  memcpy(caps, mx, G * sizeof *caps);
  memcpy(prev, mx, G * sizeof *prev);
  if ((rc = pfi_ctl_open(&ctl, &cfg, G, mn, mx, err)) < 0)
    goto out;
  size_t npre = 0;
  double base = NAN, rec_end = NAN, ramp_end = tg->start_s + tg->ramp_s;
  double changes = 0, shortfall = 0, ev_p = 0, ev_t = 0, min_p = 0, min_t = 0;
  size_t min_n = 0;
  int was_recovering = 0;
  res->event_s = tg->start_s;
  res->ramp_end_s = ramp_end;
  res->end_s = end;
  res->time_to_target_s = NAN;
  res->recovery_peak_w = 0;
  size_t steps = (size_t)llround(horizon / dt);
  for (size_t k = 1; k <= steps; k++) {
    struct pfi_cluster_obs o;
    if ((rc = pfi_cluster_step(cl, caps, dt, &o, err)) < 0)
      goto out;
    double t = o.t_s;
    /* Jobs that ended leave the controller; new ones join. */
    for (size_t i = 0; i < o.nended; i++) {
      int id = o.ended[i];
      if ((size_t)id < nslot_of && slot_of[id] >= 0) {
        pfi_ctl_job_remove(ctl, slot_of[id], NULL);
        slot_of[id] = -1;
      }
    }
    size_t total = pfi_cluster_njobs_total(cl);
    if (total > nslot_of) {
      int *a = realloc(slot_of, total * sizeof *a);
      if (!a) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      for (size_t i = nslot_of; i < total; i++)
        a[i] = -1;
      slot_of = a;
      double *d = realloc(dl_tok, total * sizeof *d);
      if (!d) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      for (size_t i = nslot_of; i < total; i++)
        d[i] = 0;
      dl_tok = d;
      nslot_of = total;
    }
    for (size_t i = 0; i < o.nstarted; i++) {
      const struct pfi_cluster_job *j = pfi_cluster_job_at(cl, o.started[i]);
      struct pfi_ctl_job cj = {.id = j->name,
                               .family = j->family,
                               .ngpus = j->ngpus,
                               .gpu = j->gpu,
                               .pfi = j->pfi_est,
                               .pfi_lo = j->pfi_lo,
                               .pfi_hi = j->pfi_hi,
                               .max_loss = j->max_loss,
                               .min_cap_w = j->min_cap_w,
                               .protect = j->protect,
                               .pmax_w = j->pmax_w,
                               .tmax = j->tmax,
                               .max_event_s = j->max_event_s,
                               .notice_s = j->notice_s,
                               .deadline_tput = j->deadline_tput};
      if ((rc = pfi_ctl_job_add(ctl, &cj, err)) < 0)
        goto out;
      slot_of[j->id] = rc;
      rc = 0;
    }
    size_t ns = pfi_ctl_nslots(ctl);
    if (ns > jo_cap) {
      struct pfi_ctl_job_obs *a = realloc(jo, ns * sizeof *a);
      if (!a) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      jo = a;
      jo_cap = ns;
    }
    if (ns)
      memset(jo, 0, ns * sizeof *jo);
    double tokens_now = 0, value_now = 0;
    for (size_t i = 0; i < o.njobs; i++) {
      int s = slot_of[o.job[i]];
      tokens_now += o.true_tokens[i];
      value_now += o.true_tokens[i] *
                   job_factor(pfi_cluster_job_at(cl, o.job[i]), cfg.objective);
      if (s < 0)
        continue;
      jo[s].valid = o.tvalid[i];
      jo[s].tokens_per_s = o.tokens[i];
      jo[s].phase = o.phase[i];
      if (isfinite(o.pause_in[i])) {
        jo[s].pause_announced = 1;
        jo[s].pause_in_s = o.pause_in[i];
        jo[s].pause_len_s = o.pause_len[i];
      }
      if (isfinite(o.end_in[i])) {
        jo[s].end_announced = 1;
        jo[s].end_in_s = o.end_in[i];
      }
    }
    /* The baseline: median realized power of the pre-event periods, known
     * at the end of the last of them (the event's start), so that the
     * controller's period at the start already carries the event: the
     * caps it returns are the ones in force during the event's first
     * period (a grid event is announced; a cap decrease settles within
     * PFI_CLUSTER_DOWN_DELAY_S + a few PFI_CLUSTER_DOWN_TAU_S, well inside
     * a period). Before, the baseline came one period late and the first
     * period ran on the uncapped caps. */
    if (t <= tg->start_s + 1e-9)
      pre[npre++] = o.power_w;
    if (t >= tg->start_s - 1e-9 && !isfinite(base)) {
      qsort(pre, npre, sizeof *pre, cmp_d);
      base = npre ? (npre % 2 ? pre[npre / 2]
                              : 0.5 * (pre[npre / 2 - 1] + pre[npre / 2]))
                  : o.power_w;
      res->baseline_w = base;
    }
    /* Measures of the period just ended (its target: the one in force
     * during it). */
    double tgt = isfinite(base) ? pfi_event_target(tg, t - dt, base) : NAN;
    double P = o.power_w;
    if (isfinite(tgt)) {
      double e = (P - tgt) / tgt;
      if (P > tgt) {
        res->secs_above += dt;
        res->ws_above += (P - tgt) * dt;
      }
      if (e > 0.01)
        res->secs_above_1pct += dt;
      if (!isfinite(res->time_to_target_s) && fabs(e) <= 0.01)
        res->time_to_target_s = t - tg->start_s;
      if (t - dt >= ramp_end - 1e-9) {
        if (nerrs == errs_cap) {
          errs_cap = errs_cap ? 2 * errs_cap : 4096;
          double *a = realloc(errs, errs_cap * sizeof *a);
          if (!a) {
            rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
            goto out;
          }
          errs = a;
        }
        errs[nerrs++] = fabs(e);
      }
      res->tokens_event += tokens_now * dt;
      res->value_event += value_now * dt;
      for (size_t i = 0; i < o.njobs; i++)
        dl_tok[o.job[i]] += o.tokens[i] * dt;
      ev_p += P * dt;
      ev_t += dt;
      min_p += P;
      min_t += tgt;
      if (++min_n * dt >= 60.0 - 1e-9) {
        res->minutes_above += min_p > min_t;
        min_p = min_t = 0;
        min_n = 0;
      }
      if (t - dt >= tg->start_s + 600 - 1e-9) {
        res->tokens_after10 += tokens_now * dt;
        res->value_after10 += value_now * dt;
      }
      /* Oracle reference on the same second. */
      size_t nj = o.njobs + 1;
      int *a = realloc(oin, nj * sizeof *a);
      double *b = realloc(alloc, nj * sizeof *b);
      if (a)
        oin = a;
      if (b)
        alloc = b;
      if (!a || !b) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      double ot = 0, ott = 0;
      const int thr = PFI_OBJ_THROUGHPUT;
      if ((rc = oracle_tokens(cl, &o, tgt, 0, thr, &pb, oin, alloc, &ot, err)) <
              0 ||
          (rc = oracle_tokens(cl, &o, tgt, 1, thr, &pb, oin, alloc, &ott,
                              err)) < 0)
        goto out;
      /* The same under the controller's objective (the raw tokens' split
       * again under throughput). */
      double ov = ot, ovt = ott;
      if (cfg.objective != PFI_OBJ_THROUGHPUT &&
          ((rc = oracle_tokens(cl, &o, tgt, 0, cfg.objective, &pb, oin, alloc,
                               &ov, err)) < 0 ||
           (rc = oracle_tokens(cl, &o, tgt, 1, cfg.objective, &pb, oin, alloc,
                               &ovt, err)) < 0))
        goto out;
      res->tokens_oracle += ot * dt;
      res->tokens_oracle_tiers += ott * dt;
      res->value_oracle += ov * dt;
      res->value_oracle_tiers += ovt * dt;
      if (t - dt >= tg->start_s + 600 - 1e-9) {
        res->tokens_oracle_after10 += ot * dt;
        res->tokens_oracle_tiers_after10 += ott * dt;
        res->value_oracle_after10 += ov * dt;
        res->value_oracle_tiers_after10 += ovt * dt;
      }
      /* Tier violations: a training job under its tier's share of its
       * uncapped throughput by more than the noise (1 %). */
      for (size_t i = 0; i < o.njobs; i++) {
        const struct pfi_cluster_job *j = pfi_cluster_job_at(cl, o.job[i]);
        if (o.phase[i] == PFI_PHASE_TRAINING && j->max_loss < 1 &&
            o.true_tokens[i] > 0 &&
            o.true_tokens[i] < (1 - j->max_loss) * j->tmax * 0.99)
          res->tier_violations++;
      }
    }
    /* The controller's period. */
    struct pfi_ctl_input in = {
        .t_s = t,
        .event = isfinite(base) && isfinite(pfi_event_target(tg, t, base)),
        .event_id = "event",
        .target_w = isfinite(base) ? pfi_event_target(tg, t, base) : NAN,
        .gpu = o.gpu,
        .job = jo,
        .baseline_w = base,
        .event_start_s = tg->start_s,
        .notice_s = cc->event_notice_s,
        .event_end_s = pfi_event_end(tg)};
    struct pfi_ctl_output out;
    if ((rc = pfi_ctl_step(ctl, &in, &out, err)) < 0)
      goto out;
    res->records += out.nrec;
    for (size_t i = 0; i < out.nrec; i++) {
      if (out.rec[i].reason == PFI_CTL_ANOMALY)
        res->anomalies++;
      if (out.rec[i].reason == PFI_CTL_ROLLBACK)
        res->rollbacks++;
      if (out.rec[i].reason == PFI_CTL_CONTRACT)
        res->contract_records++;
      if (out.rec[i].reason == PFI_CTL_DEADLINE)
        res->deadline_records++;
    }
    if (out.infeasible) {
      res->infeasible_s += (size_t)dt;
      shortfall += out.shortfall_w;
    }
    for (size_t g = 0; g < G; g++) {
      if (out.cap_w[g] != prev[g])
        changes++;
      if (out.cap_w[g] < mn[g] - 1e-9)
        res->floor_violations++;
      prev[g] = caps[g] = out.cap_w[g];
    }
    /* Recovery: from the event's end until every cap is back. */
    if (t >= end - 1e-9 && isnan(rec_end)) {
      if (P > res->recovery_peak_w && t - dt >= end - 1e-9)
        res->recovery_peak_w = P;
      if (!out.recovering && was_recovering)
        rec_end = t;
    }
    was_recovering = out.recovering;
    if (cb && (rc = cb(cbctx, t, tgt, P, &out, err)) < 0)
      goto out;
  }
  res->recovery_s = isfinite(rec_end) ? rec_end - end : NAN;
  /* Deadlines: the jobs that ran the whole event, their mean observed
   * throughput over it against their minimum. */
  for (size_t i = 0; i < nslot_of && end > tg->start_s; i++) {
    const struct pfi_cluster_job *j = pfi_cluster_job_at(cl, (int)i);
    if (!j || !(j->deadline_tput > 0) || j->start_s > tg->start_s ||
        j->end_s < end)
      continue;
    res->deadline_jobs++;
    if (dl_tok[i] / (end - tg->start_s) < j->deadline_tput)
      res->deadline_missed++;
  }
  res->mean_cut = ev_t > 0 ? 1.0 - ev_p / ev_t / base : NAN;
  double hours = (end - tg->start_s) / 3600.0;
  res->cap_changes_per_gpu_h = hours > 0 ? changes / ((double)G * hours) : 0;
  res->mean_shortfall_w =
      res->infeasible_s ? shortfall / (double)res->infeasible_s : 0;
  if (nerrs) {
    double s = 0;
    size_t within = 0;
    for (size_t i = 0; i < nerrs; i++) {
      s += errs[i];
      within += errs[i] <= 0.01;
    }
    res->track_mean = s / (double)nerrs;
    res->within_1pct = (double)within / (double)nerrs;
    qsort(errs, nerrs, sizeof *errs, cmp_d);
    size_t q = (size_t)ceil(0.99 * (double)nerrs);
    res->track_p99 = errs[q > 0 ? q - 1 : 0];
  }
out:
  pfi_ctl_close(ctl);
  pfi_cluster_close(cl);
  pfi_problem_release(&pb);
  free(mn);
  free(mx);
  free(caps);
  free(prev);
  free(pre);
  free(errs);
  free(alloc);
  free(slot_of);
  free(dl_tok);
  free(oin);
  free(jo);
  return rc;
}
