/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The controller's period (control.h): observation, learning, anomaly and
 * rollback rules, the allocation on believed curves, two-phase cap
 * changes, staggered recovery and the decision records. docs/control.md
 * states every rule; belief.c holds the curves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"
#include "pfi/objective.h"

static const char *const reason_names[PFI_CTL_REASON__COUNT] = {
    "cut",     "raise",      "rollback", "floor",    "recovery",
    "anomaly", "infeasible", "probe",    "contract", "deadline"};

const char *pfi_ctl_reason_name(int reason) {
  return reason >= 0 && reason < PFI_CTL_REASON__COUNT ? reason_names[reason]
                                                       : "?";
}

int pfi_ctl_reason_parse(const char *name) {
  for (int i = 0; name && i < PFI_CTL_REASON__COUNT; i++)
    if (strcmp(name, reason_names[i]) == 0)
      return i;
  return -1;
}

void pfi_ctl_config_init(struct pfi_ctl_config *c) {
  memset(c, 0, sizeof *c);
  c->period_s = 1.0;
  c->margin = 0.002;
  c->recovery_margin = 0.004;
  c->ramp_up_w_s = 100.0;
  c->ramp_down_w_s = 0.0;
  c->settle_s = 3.0;
  c->learn_s = 5.0;
  c->rollback_z = 4.0;
  c->anomaly_frac = 0.05;
  c->tokens_cv = 0.005;
  c->recovery_s = 900.0;
  c->recovery_ramp_w_s = 0.0;
  c->probe_horizon_s = 0.0;
  c->draw_learn = 1;
  c->seed = 1;
  c->objective = PFI_OBJ_WORK;
}

static int check_config(const struct pfi_ctl_config *c, struct pfi_error *err) {
#define CHECK(cond, field)                                                     \
  if (!(cond))                                                                 \
    return pfi_error_set(err, PFI_EINVAL,                                      \
                         "controller setting %s out of range", field);
  CHECK(c->period_s > 0 && c->period_s <= 3600, "period_s");
  CHECK(c->objective >= 0 && c->objective < PFI_OBJ__COUNT, "objective");
  CHECK(c->margin >= PFI_CTL_MARGIN_MIN && c->margin < PFI_CTL_MARGIN_MAX,
        "margin");
  CHECK(c->recovery_margin >= PFI_CTL_MARGIN_MIN &&
            c->recovery_margin < PFI_CTL_MARGIN_MAX,
        "recovery_margin");
  CHECK(c->ramp_up_w_s > 0 && isfinite(c->ramp_up_w_s), "ramp_up_w_s");
  CHECK(c->ramp_down_w_s >= 0 && isfinite(c->ramp_down_w_s), "ramp_down_w_s");
  CHECK(c->settle_s >= 0 && c->settle_s <= 3600, "settle_s");
  CHECK(c->learn_s > 0 && c->learn_s <= 3600, "learn_s");
  CHECK(c->rollback_z > 0 && isfinite(c->rollback_z), "rollback_z");
  CHECK(c->anomaly_frac > 0 && c->anomaly_frac < 1, "anomaly_frac");
  CHECK(c->tokens_cv >= 0 && c->tokens_cv < 1, "tokens_cv");
  CHECK(c->recovery_s > 0 && isfinite(c->recovery_s), "recovery_s");
  CHECK(c->recovery_ramp_w_s >= 0 && isfinite(c->recovery_ramp_w_s),
        "recovery_ramp_w_s");
  CHECK(c->probe_horizon_s >= 0 && isfinite(c->probe_horizon_s),
        "probe_horizon_s");
  CHECK(c->strategy == 0 || c->strategy == 1, "strategy");
  CHECK(c->draw_learn == 0 || c->draw_learn == 1, "draw_learn");
  CHECK(c->target_over_tiers == 0 || c->target_over_tiers == 1,
        "target_over_tiers");
#undef CHECK
  return 0;
}

int pfi_ctl_open(struct pfi_ctl **out, const struct pfi_ctl_config *cfg,
                 size_t ngpus, const double *min_w, const double *max_w,
                 struct pfi_error *err) {
  struct pfi_ctl_config def;
  *out = NULL;
  if (!cfg) {
    pfi_ctl_config_init(&def);
    cfg = &def;
  }
  int rc = check_config(cfg, err);
  if (rc < 0)
    return rc;
  if (ngpus == 0 || ngpus > 100000000)
    return pfi_error_set(err, PFI_EINVAL, "%zu GPUs is outside 1..1e8", ngpus);
  for (size_t g = 0; g < ngpus; g++)
    if (!(min_w[g] > 0 && max_w[g] >= min_w[g] && isfinite(max_w[g])))
      return pfi_error_set(err, PFI_EINVAL,
                           "GPU %zu: power-limit range %g..%g W is not valid",
                           g, min_w[g], max_w[g]);
  struct pfi_ctl *c = calloc(1, sizeof *c);
  if (c) {
    c->pause_min_all = c->startup_min_all = NAN;
    c->idle_w = NAN;
    c->raise_share = 1.0; /* until raises are seen: shown at once */
  }
  if (!c)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  c->cfg = *cfg;
  c->ngpus = ngpus;
  c->min_w = malloc(ngpus * sizeof *c->min_w);
  c->max_w = malloc(ngpus * sizeof *c->max_w);
  c->cap = malloc(ngpus * sizeof *c->cap);
  c->pre = malloc(ngpus * sizeof *c->pre);
  c->draw = calloc(ngpus, sizeof *c->draw);
  c->out_cap = malloc(ngpus * sizeof *c->out_cap);
  c->slot = malloc(ngpus * sizeof *c->slot);
  c->pend_dec = calloc(ngpus, sizeof *c->pend_dec);
  if (!c->min_w || !c->max_w || !c->cap || !c->pre || !c->draw || !c->out_cap ||
      !c->slot || !c->pend_dec) {
    pfi_ctl_close(c);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  for (size_t g = 0; g < ngpus; g++) {
    c->min_w[g] = min_w[g];
    c->max_w[g] = max_w[g];
    c->cap[g] = c->pre[g] = c->out_cap[g] = max_w[g];
    c->slot[g] = -1;
  }
  pfi_problem_init(&c->prob);
  *out = c;
  return 0;
}

void pfi_ctl_close(struct pfi_ctl *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->nslots; i++)
    free(c->job[i].gpu);
  free(c->job);
  free(c->min_w);
  free(c->max_w);
  free(c->cap);
  free(c->pre);
  free(c->draw);
  free(c->out_cap);
  free(c->slot);
  free(c->pend_dec);
  free(c->order);
  free(c->rec);
  free(c->done);
  free(c->pend);
  free(c->pfree);
  pfi_problem_release(&c->prob);
  free(c->pslot);
  free(c->px);
  free(c->py);
  free(c->palloc);
  free(c);
}

size_t pfi_ctl_ngpus(const struct pfi_ctl *c) { return c->ngpus; }
size_t pfi_ctl_nslots(const struct pfi_ctl *c) { return c->nslots; }

int pfi_ctl_job_find(const struct pfi_ctl *c, const char *id) {
  for (size_t i = 0; id && i < c->nslots; i++)
    if (c->job[i].used && strcmp(c->job[i].id, id) == 0)
      return (int)i;
  return PFI_ENOTFOUND;
}

static int fin_or_nan(double v) { return isfinite(v) || isnan(v); }

int pfi_ctl_job_add(struct pfi_ctl *c, const struct pfi_ctl_job *in,
                    struct pfi_error *err) {
  if (!in->id || !in->id[0] || strlen(in->id) >= sizeof c->job->id)
    return pfi_error_set(err, PFI_EINVAL, "job id empty or longer than %zu",
                         sizeof c->job->id - 1);
  if (pfi_ctl_job_find(c, in->id) >= 0)
    return pfi_error_set(err, PFI_EINVAL, "job %s: already known", in->id);
  if (in->ngpus == 0 || !in->gpu)
    return pfi_error_set(err, PFI_EINVAL, "job %s: no GPUs", in->id);
  for (size_t k = 0; k < in->ngpus; k++) {
    if (in->gpu[k] >= c->ngpus)
      return pfi_error_set(err, PFI_EINVAL, "job %s: GPU %zu out of range",
                           in->id, in->gpu[k]);
    if (c->slot[in->gpu[k]] >= 0)
      return pfi_error_set(err, PFI_EINVAL, "job %s: GPU %zu is in job %s",
                           in->id, in->gpu[k], c->job[c->slot[in->gpu[k]]].id);
    for (size_t m = 0; m < k; m++)
      if (in->gpu[m] == in->gpu[k])
        return pfi_error_set(err, PFI_EINVAL, "job %s: GPU %zu listed twice",
                             in->id, in->gpu[k]);
  }
  if (!(in->max_loss >= 0 && in->max_loss <= 1))
    return pfi_error_set(err, PFI_EINVAL, "job %s: tier %g is outside 0..1",
                         in->id, in->max_loss);
  if (!(in->min_cap_w >= 0 && isfinite(in->min_cap_w)))
    return pfi_error_set(err, PFI_EINVAL, "job %s: minimum cap %g W", in->id,
                         in->min_cap_w);
  if (!(isnan(in->max_event_s) ||
        (isfinite(in->max_event_s) && in->max_event_s >= 0)))
    return pfi_error_set(err, PFI_EINVAL, "job %s: max_event_s %g is not >= 0",
                         in->id, in->max_event_s);
  if (!(isnan(in->notice_s) || (isfinite(in->notice_s) && in->notice_s >= 0)))
    return pfi_error_set(err, PFI_EINVAL, "job %s: notice_s %g is not >= 0",
                         in->id, in->notice_s);
  if (!(isnan(in->deadline_tput) ||
        (isfinite(in->deadline_tput) && in->deadline_tput >= 0)))
    return pfi_error_set(err, PFI_EINVAL,
                         "job %s: deadline_tput %g is not >= 0", in->id,
                         in->deadline_tput);
  if (!fin_or_nan(in->pfi) || !fin_or_nan(in->pfi_lo) ||
      !fin_or_nan(in->pfi_hi) || in->pfi <= 0 || in->pfi_lo <= 0)
    return pfi_error_set(err, PFI_EINVAL, "job %s: PFI estimate not positive",
                         in->id);
  if (!fin_or_nan(in->pmax_w) || in->pmax_w <= 0 || !fin_or_nan(in->tmax) ||
      in->tmax <= 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "job %s: uncapped power or throughput not positive",
                         in->id);
  size_t s;
  for (s = 0; s < c->nslots; s++)
    if (!c->job[s].used)
      break;
  if (s == c->nslots) {
    if (c->nslots == c->slots_cap) {
      size_t nc = c->slots_cap ? 2 * c->slots_cap : 16;
      struct pfi__ctl_job *nj = realloc(c->job, nc * sizeof *nj);
      if (!nj)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      c->job = nj;
      c->slots_cap = nc;
    }
    c->job[c->nslots].gpu = NULL;
    c->nslots++;
  }
  struct pfi__ctl_job *j = &c->job[s];
  size_t *gpu = malloc(in->ngpus * sizeof *gpu);
  if (!gpu) {
    if (s == c->nslots - 1 && !c->job[s].gpu)
      c->nslots--; /* keep the slot list as it was */
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  free(j->gpu);
  memset(j, 0, sizeof *j);
  j->used = 1;
  snprintf(j->id, sizeof j->id, "%s", in->id);
  snprintf(j->family, sizeof j->family, "%s", in->family ? in->family : "");
  j->ngpus = in->ngpus;
  j->gpu = gpu;
  memcpy(gpu, in->gpu, in->ngpus * sizeof *gpu);
  j->pfi = in->pfi;
  j->pfi_lo = isfinite(in->pfi_lo) ? in->pfi_lo : NAN;
  j->pfi_hi = in->pfi_hi;
  if (isfinite(j->pfi) && isfinite(j->pfi_lo) && j->pfi_lo > j->pfi)
    j->pfi_lo = j->pfi;
  j->max_loss = in->max_loss;
  j->max_event_s = in->max_event_s > 0 ? in->max_event_s : 0;
  j->notice_s = in->notice_s > 0 ? in->notice_s : 0;
  j->deadline_tput = in->deadline_tput > 0 ? in->deadline_tput : 0;
  j->ct_tokens = j->ct_t0 = j->ct_tlast = NAN;
  j->ct_term = -1;
  j->min_cap_w = in->min_cap_w;
  j->cap_lo = in->min_cap_w;
  for (size_t k = 0; k < in->ngpus; k++)
    if (c->min_w[gpu[k]] > j->cap_lo)
      j->cap_lo = c->min_w[gpu[k]];
  for (int k = 0; k < 3; k++)
    j->g_pfi[k] = j->g_lo[k] = j->g_hi[k] = j->g_val[k] = NAN;
  j->protect = in->protect;
  j->pmax = in->pmax_w;
  j->tmax = in->tmax;
  j->pmax_hint = isfinite(in->pmax_w);
  j->tmax_hint = isfinite(in->tmax);
  /* A capped GPU holds its segments 1 % under the cap and spends part of
   * the step below it: the first guess of draw/cap, replaced as soon as
   * the job is seen cap-bound. */
  j->ratio = 0.97;
  j->last_change_t = c->started ? c->t_last : -INFINITY;
  j->tput = NAN;
  j->phase = -1;
  j->pause_t0 = j->pause_min = j->start_t0 = j->pause_len = NAN;
  j->ann_at = j->ann_len = j->ann_pre = j->ann_acted = NAN;
  j->ann_late = 0;
  j->ann_seen = 0;
  j->end_at = j->end_pre = NAN;
  j->draw_1 = j->draw_2 = j->pause_pre = j->pause_depth = j->pause_f = NAN;
  j->raise_t = -INFINITY;
  j->rollback_floor = 0;
  /* Its cap: its lowest GPU's (the pace of a synchronous job). */
  j->cap = INFINITY;
  for (size_t k = 0; k < in->ngpus; k++) {
    c->slot[gpu[k]] = (int)s;
    if (c->cap[gpu[k]] < j->cap)
      j->cap = c->cap[gpu[k]];
  }
  return (int)s;
}

/* ---- records ------------------------------------------------------------ */

static int push_rec(struct pfi_ctl_record **a, size_t *n, size_t *cap,
                    const struct pfi_ctl_record *r) {
  if (*n == *cap) {
    size_t nc = *cap ? 2 * *cap : 64;
    struct pfi_ctl_record *na = realloc(*a, nc * sizeof *na);
    if (!na)
      return PFI_ENOMEM;
    *a = na;
    *cap = nc;
  }
  (*a)[(*n)++] = *r;
  return 0;
}

static double job_enforced(const struct pfi__ctl_job *j,
                           const struct pfi_ctl_input *in) {
  double s = 0;
  size_t n = 0;
  for (size_t k = 0; k < j->ngpus; k++)
    if (in && in->gpu[j->gpu[k]].valid) {
      s += in->gpu[j->gpu[k]].cap_w;
      n++;
    }
  return n ? s / (double)n : NAN;
}

/* Completes the job's pending record with what was observed. */
int pfi__ctl_complete(struct pfi_ctl *c, struct pfi__ctl_job *j,
                      const struct pfi_ctl_input *in, double draw,
                      double tput) {
  if (!j->pending)
    return 0;
  struct pfi_ctl_record r = c->pend[j->pending - 1];
  r.cap_enf_w = job_enforced(j, in);
  r.draw_w = draw;
  r.tput_after = tput;
  r.complete = 1;
  c->pend[j->pending - 1].seq = 0; /* free the pending entry */
  c->pfree[c->nfree++] = j->pending - 1;
  j->pending = 0;
  return push_rec(&c->done, &c->ndone, &c->done_cap, &r);
}

static const char *phase_str(int ph) {
  return ph >= 0 && ph <= PFI_PHASE_PAUSE ? pfi_phase_name(ph) : "";
}

/* Writes a decision record for job `j` (new caps `cap_w`) and makes it the
 * job's pending record. */
int pfi__ctl_decide(struct pfi_ctl *c, struct pfi__ctl_job *j,
                    const struct pfi_ctl_input *in, double cap_w, int reason,
                    double shortfall_w) {
  int rc = pfi__ctl_complete(c, j, in, j->draw, j->tput_valid ? j->tput : NAN);
  if (rc < 0)
    return rc;
  struct pfi_ctl_record r;
  memset(&r, 0, sizeof r);
  r.seq = ++c->seq;
  r.t_s = in->t_s;
  snprintf(r.event, sizeof r.event, "%s",
           c->in_event || c->recovering ? c->event : "");
  r.target_w = in->event ? in->target_w : NAN;
  snprintf(r.job, sizeof r.job, "%s", j->id);
  snprintf(r.family, sizeof r.family, "%s", j->family);
  snprintf(r.phase, sizeof r.phase, "%s", phase_str(j->phase));
  r.cap_req_w = cap_w;
  r.cap_enf_w = r.draw_w = r.tput_after = NAN;
  r.pfi = pfi__ctl_belief_pfi(c, j);
  r.pfi_lo = isfinite(j->pfi_lo) ? j->pfi_lo : NAN;
  r.pfi_hi = isfinite(j->pfi_hi) ? j->pfi_hi : NAN;
  r.tput_before = j->tput_valid ? j->tput : NAN;
  r.tput_pred = pfi__ctl_believe(c, j, pfi__ctl_draw_at(c, j, cap_w), 0);
  r.reason = reason;
  r.max_loss = j->max_loss;
  r.protect = j->protect;
  r.shortfall_w = shortfall_w;
  if ((rc = push_rec(&c->rec, &c->nrec, &c->rec_cap, &r)) < 0)
    return rc;
  /* Pending list: reuse a free entry (a stack of them: constant time). */
  size_t i;
  if (c->nfree > 0) {
    i = c->pfree[--c->nfree];
    c->pend[i] = r;
  } else {
    if (c->npend == c->pend_cap) {
      size_t nc = c->pend_cap ? 2 * c->pend_cap : 64;
      size_t *nf = realloc(c->pfree, nc * sizeof *nf);
      if (!nf)
        return PFI_ENOMEM;
      c->pfree = nf;
    }
    i = c->npend;
    if ((rc = push_rec(&c->pend, &c->npend, &c->pend_cap, &r)) < 0)
      return rc;
  }
  j->pending = i + 1;
  j->pred_at_change = r.tput_pred;
  j->tput_before_change = r.tput_before;
  return 0;
}

int pfi_ctl_job_remove(struct pfi_ctl *c, int slot, struct pfi_error *err) {
  if (slot < 0 || (size_t)slot >= c->nslots || !c->job[slot].used)
    return pfi_error_set(err, PFI_ENOTFOUND, "no job in slot %d", slot);
  struct pfi__ctl_job *j = &c->job[slot];
  if (j->pending) {
    c->pend[j->pending - 1].seq = 0; /* never completed: job ended */
    c->pfree[c->nfree++] = j->pending - 1;
  }
  for (size_t k = 0; k < j->ngpus; k++)
    c->slot[j->gpu[k]] = -1;
  free(j->gpu);
  memset(j, 0, sizeof *j);
  return 0;
}

int pfi_ctl_job_belief(const struct pfi_ctl *c, int slot,
                       struct pfi_ctl_belief *b, struct pfi_error *err) {
  if (slot < 0 || (size_t)slot >= c->nslots || !c->job[slot].used)
    return pfi_error_set(err, PFI_ENOTFOUND, "no job in slot %d", slot);
  const struct pfi__ctl_job *j = &c->job[slot];
  b->pmax_w = j->pmax;
  b->tmax = j->tmax;
  b->floor_w = pfi__ctl_floor(c, j, 1);
  b->pfi = pfi__ctl_belief_pfi(c, j);
  b->npoints = j->npts;
  b->anomaly = j->anomaly;
  b->anomalies = j->anomalies;
  b->rollbacks = j->rollbacks;
  b->cap_w = j->cap;
  b->draw_w = pfi__ctl_draw_at(c, j, j->cap);
  b->contract = c->in_event ? j->ct_term : -1;
  b->delivered = isfinite(j->ct_tokens) ? j->ct_tokens : 0;
  b->cap_hi_w = pfi__ctl_cap_hi(c, j);
  return 0;
}

double pfi_ctl_job_predict(const struct pfi_ctl *c, int slot, double power_w) {
  if (slot < 0 || (size_t)slot >= c->nslots || !c->job[slot].used)
    return NAN;
  return pfi__ctl_believe(c, &c->job[slot], power_w, 0);
}

double pfi_ctl_pre_cap(const struct pfi_ctl *c, size_t g) {
  if (g >= c->ngpus || !(c->in_event || c->recovering))
    return NAN;
  return c->pre[g];
}

int pfi_ctl_recovery_save(const struct pfi_ctl *c, struct pfi_ctl_recovery *r) {
  if (!c->recovering || c->in_event)
    return 0;
  memset(r, 0, sizeof *r);
  snprintf(r->event, sizeof r->event, "%s", c->event);
  r->baseline_w = c->baseline;
  r->t0_s = c->recovery_t0;
  return 1;
}

double pfi_ctl_baseline(const struct pfi_ctl *c) {
  return c->in_event || c->recovering ? c->baseline : NAN;
}
