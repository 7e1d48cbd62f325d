/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's use of the control module (pfi/control.h), unchanged: the fleet's
 * nodes become the controller's GPU indices, the agents' telemetry its
 * observations, its caps the nodes' wanted caps, its records rows of
 * fleet_decisions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/control.h"
#include "pfid_int.h"

void pfid_ctl_close(struct pfi_pfid *d) {
  pfi_ctl_close(d->ctl);
  d->ctl = NULL;
  free(d->ctl_node);
  free(d->ctl_first);
  free(d->ctl_sig);
  d->ctl_node = NULL;
  d->ctl_first = NULL;
  d->ctl_sig = NULL;
  d->ctl_nn = d->ctl_ngpus = 0;
  d->recovering = 0;
}

/* The nodes with telemetry, their GPU counts and every GPU's job, as one
 * string: a change means a rebuild. Caller frees. */
static char *signature(struct pfi_pfid *d) {
  struct pfi_buf b = {0};
  for (size_t i = 0; i < d->n_nodes; i++) {
    const struct pfid_node *n = &d->node[i];
    if (!n->have_tel || !n->tel.n)
      continue;
    pfi_buf_printf(&b, "%s:%u%s", n->name, n->tel.n,
                   n->tel.record_failed ? "!" : "");
    for (unsigned g = 0; g < n->tel.n; g++) {
      /* The tier the module would be given (the API's, else the node's):
       * a node's tier file written after its job's GPUs were mapped (the
       * Slurm prolog writes the map first) must rebuild it too. */
      const char *tsrc;
      double loss = n->tel.gpu[g].job[0]
                        ? pfid_job_tier(d, n->tel.gpu[g].job, n, &tsrc)
                        : -1;
      pfi_buf_printf(&b, ",%s", n->tel.gpu[g].job);
      /* A node that cannot record is held at the limit it holds (the
       * ranges of pfid_ctl_open below): a new limit (its restore after an
       * event) rebuilds the module, else it stayed held at a cut taken
       * before it said so, and was cut again in the next event. */
      if (n->tel.record_failed)
        pfi_buf_printf(&b, "=%u", (unsigned)n->tel.gpu[g].cap_mw);
      if (loss >= 0) /* a tier that changes rebuilds the module */
        pfi_buf_printf(&b, "@%.17g", loss);
      if (n->tel.gpu[g].job[0]) {
        /* So do the rest of its contract's terms. */
        const char *src;
        double me, no, dl;
        pfid_job_terms(d, n->tel.gpu[g].job,
                       pfid_job_tier(d, n->tel.gpu[g].job, n, &src), &me, &no,
                       &dl, &src);
        if (me > 0 || no > 0 || dl > 0)
          pfi_buf_printf(&b, "/%.17g/%.17g/%.17g", me, no, dl);
      }
    }
    pfi_buf_printf(&b, ";");
  }
  if (b.oom || !b.s) {
    pfi_buf_release(&b);
    return strdup("");
  }
  return b.s;
}

static const char *node_get_job(struct pfi_pfid *d, const char *node,
                                size_t g) {
  struct pfid_node *n = pfid_node_find(d, node);
  return n && g < n->tel.n ? n->tel.gpu[g].job : NULL;
}

void pfid_job_tput_add(struct pfi_ctl_job_obs *o, unsigned *nrep,
                       double tokens_per_s) {
  if (!(tokens_per_s >= 0))
    return;
  o->tokens_per_s = *nrep && o->valid
                        ? o->tokens_per_s +
                              (tokens_per_s - o->tokens_per_s) / (*nrep + 1)
                        : tokens_per_s;
  o->valid = 1;
  ++*nrep;
}

static void record(struct pfi_pfid *d, const struct pfi_ctl_record *r) {
  pfid_records_decision(d, r);
  /* The reason travels with the node's next assignment (the agent shows
   * it to the job): every node with a GPU of the job. */
  for (size_t k = 0; r->job[0] && k < d->ctl_nn; k++) {
    struct pfid_node *n = pfid_node_find(d, d->ctl_node[k]);
    for (unsigned g = 0; n && g < n->tel.n; g++)
      if (strcmp(n->tel.gpu[g].job, r->job) == 0) {
        snprintf(n->reason, sizeof n->reason, "%s",
                 pfi_ctl_reason_name(r->reason));
        break;
      }
  }
}

/* Builds the controller over the nodes with telemetry. */
static int build(struct pfi_pfid *d, char *sig, int log,
                 struct pfi_error *err) {
  size_t nn = 0, ng = 0;
  for (size_t i = 0; i < d->n_nodes; i++)
    if (d->node[i].have_tel && d->node[i].tel.n) {
      nn++;
      ng += d->node[i].tel.n;
    }
  d->ctl_node = calloc(nn ? nn : 1, sizeof *d->ctl_node);
  d->ctl_first = calloc(nn ? nn : 1, sizeof *d->ctl_first);
  double *lo = calloc(ng ? ng : 1, sizeof *lo);
  double *hi = calloc(ng ? ng : 1, sizeof *hi);
  size_t *gj = calloc(ng ? ng : 1, sizeof *gj);
  int rc = 0;
  if (!d->ctl_node || !d->ctl_first || !lo || !hi || !gj) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t k = 0, g0 = 0;
  for (size_t i = 0; i < d->n_nodes; i++) {
    const struct pfid_node *n = &d->node[i];
    if (!n->have_tel || !n->tel.n)
      continue;
    memcpy(d->ctl_node[k], n->name, sizeof d->ctl_node[k]);
    d->ctl_first[k++] = g0;
    for (unsigned g = 0; g < n->tel.n; g++, g0++) {
      lo[g0] = n->tel.gpu[g].min_mw / 1000.0;
      hi[g0] = n->tel.gpu[g].max_mw / 1000.0;
      /* An agent that cannot record the limits it would restore refuses
       * every cut: its GPUs count at the limit they hold, not cuttable
       * (docs/fleet.md "Trust", record_ok). */
      uint32_t c = n->tel.gpu[g].cap_mw;
      if (n->tel.record_failed && c >= n->tel.gpu[g].min_mw &&
          c <= n->tel.gpu[g].max_mw && c > 0)
        lo[g0] = hi[g0] = c / 1000.0;
    }
  }
  d->ctl_nn = nn;
  d->ctl_ngpus = ng;
  struct pfi_ctl_config cfg;
  pfi_ctl_config_init(&cfg);
  cfg.period_s = d->o.period_s;
  if (d->o.ramp_up_w_s > 0)
    cfg.ramp_up_w_s = d->o.ramp_up_w_s;
  cfg.objective = d->o.objective;
  if (d->o.margin > 0)
    cfg.margin = d->o.margin;
  if (d->o.recovery_margin > 0)
    cfg.recovery_margin = d->o.recovery_margin;
  if (d->o.recovery_ramp_w_s > 0)
    cfg.recovery_ramp_w_s = d->o.recovery_ramp_w_s;
  if (d->o.recovery_s > 0)
    cfg.recovery_s = d->o.recovery_s;
  if ((rc = pfi_ctl_open(&d->ctl, &cfg, ng, lo, hi, err)) < 0)
    goto out;
  /* Jobs: the GPUs that report the same job id, across nodes. */
  for (size_t a = 0; a < ng; a++) {
    size_t ia = 0;
    while (ia + 1 < nn && d->ctl_first[ia + 1] <= a)
      ia++;
    const char *job = node_get_job(d, d->ctl_node[ia], a - d->ctl_first[ia]);
    if (!job || !job[0] || pfi_ctl_job_find(d->ctl, job) >= 0)
      continue;
    size_t m = 0;
    for (size_t b = a; b < ng; b++) {
      size_t ib = 0;
      while (ib + 1 < nn && d->ctl_first[ib + 1] <= b)
        ib++;
      const char *jb = node_get_job(d, d->ctl_node[ib], b - d->ctl_first[ib]);
      if (jb && strcmp(jb, job) == 0)
        gj[m++] = b;
    }
    /* The tier: the API's, else the one its node reports (Slurm
     * prolog), else none (1). */
    const char *src;
    double loss =
        pfid_job_tier(d, job, pfid_node_find(d, d->ctl_node[ia]), &src);
    if (loss < 0)
      loss = 1.0;
    /* Its PFI estimate and interval (--model), the prior of its belief. */
    const struct pfi_flex_estimate *es = pfid_estimate(d, job);
    double epfi = es && es->pfi > 0 ? es->pfi : NAN;
    double elo = isfinite(epfi) && es->lo > 0 ? es->lo : NAN;
    double ehi = isfinite(epfi) && es->hi > 0 ? es->hi : NAN;
    /* The rest of its contract: the API's, else the tier file's. */
    double me, no, dl;
    pfid_job_terms(d, job, loss, &me, &no, &dl, &src);
    struct pfi_ctl_job j = {.id = job,
                            .ngpus = m,
                            .gpu = gj,
                            .pfi = epfi,
                            .pfi_lo = elo,
                            .pfi_hi = ehi,
                            .max_loss = loss,
                            .pmax_w = NAN,
                            .tmax = NAN,
                            .max_event_s = me,
                            .notice_s = no,
                            .deadline_tput = dl};
    if ((rc = pfi_ctl_job_add(d->ctl, &j, err)) < 0)
      goto out;
  }
  d->ctl_t0 = pfid_mono();
  d->ctl_epoch = (long long)(pfid_wall() * 1000);
  d->ctl_sig = sig;
  sig = NULL;
  if (log)
    pfid_log(d, "controller", "%zu nodes, %zu GPUs, %zu job slots (epoch %lld)",
             nn, ng, pfi_ctl_nslots(d->ctl), d->ctl_epoch);
out:
  free(sig);
  free(lo);
  free(hi);
  free(gj);
  if (rc < 0)
    pfid_ctl_close(d);
  return rc;
}

int pfid_ctl_period(struct pfi_pfid *d, const struct pfi_fleet_event *ev,
                    uint32_t (*want)[PFI_FLEET_MAX_GPUS],
                    struct pfi_error *err) {
  d->takeover_wait = 0;
  char *sig = signature(d);
  int rc = 0;
  if (!sig)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  struct pfi_ctl_memory *mem = NULL;
  size_t nmem = 0;
  /* The pre-event caps of the GPUs of a module rebuilt during an event,
   * by node and index: the new module's ceilings (else they would be the
   * event's caps in force, and no job could get back above them: not a
   * job released by its contract, not one given what a finished job
   * freed). */
  struct pre_cap {
    char node[sizeof d->ctl_node[0]];
    unsigned g;
    double w;
  } *pre = NULL;
  size_t npre = 0;
  double *pre_in = NULL;
  double old_t0 = 0;
  struct pfi_ctl_recovery resume;
  int resuming = 0, resume_takeover = 0;
  double old_base = NAN;
  if (d->ctl && strcmp(sig, d->ctl_sig) != 0) {
    /* A node or job came or went: the module's GPUs are fixed at open. It
     * is built again, each job that stays carrying its memory into the new
     * one (learned points, uncapped point, draw model, tokens delivered in
     * the event: control.h pfi_ctl_job_save); a job whose GPU count or tier
     * changed starts again. The caps in force are its starting point. */
    if (ev || d->recovering)
      pfid_log(d, "controller", "rebuilt: the fleet's nodes or jobs changed");
    size_t ns = pfi_ctl_nslots(d->ctl);
    mem = malloc((ns ? ns : 1) * sizeof *mem);
    if (!mem) {
      free(sig);
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    }
    for (size_t s = 0; s < ns; s++)
      if (pfi_ctl_job_save(d->ctl, (int)s, &mem[nmem], NULL) == 0)
        nmem++;
    /* A recovery under way goes on in the new module (else, outside any
     * event, every cap would be handed back at once: a synchronized
     * spike), toward the same pre-event caps. */
    resuming = !ev && pfi_ctl_recovery_save(d->ctl, &resume);
    if ((ev || resuming) && d->ctl_ngpus &&
        (pre = malloc(d->ctl_ngpus * sizeof *pre)))
      for (size_t k = 0; k < d->ctl_nn; k++) {
        size_t end = k + 1 < d->ctl_nn ? d->ctl_first[k + 1] : d->ctl_ngpus;
        for (size_t a = d->ctl_first[k]; a < end; a++) {
          double w = pfi_ctl_pre_cap(d->ctl, a);
          if (!isfinite(w))
            continue;
          memcpy(pre[npre].node, d->ctl_node[k], sizeof pre[npre].node);
          pre[npre].g = (unsigned)(a - d->ctl_first[k]);
          pre[npre++].w = w;
        }
      }
    old_t0 = d->ctl_t0;
    old_base = pfi_ctl_baseline(d->ctl);
    pfid_ctl_close(d);
  }
  if (!d->ctl && !ev && d->takeover_check) {
    /* Just took the lead outside any event: nodes that still hold caps
     * of ours (the bucket's assignments: outside an event every node is
     * restored) were in the previous leader's recovery. It goes on here to
     * its end, within the window that began when that leader's recovery
     * did (the state it kept, "ctl"; without one, the window starts now).
     * Until the first telemetry they keep what they hold, for at most the
     * stale time. */
    int held = 0;
    for (size_t i = 0; i < d->n_nodes; i++)
      held |= !d->node[i].restore && d->node[i].seq > 0;
    if (!held) {
      d->takeover_check = 0;
    } else if (!sig[0]) {
      if (pfid_mono() - d->leader_since_mono <= d->o.stale_s) {
        free(sig);
        free(mem);
        free(pre);
        d->takeover_wait = 1; /* status: holding */
        return 1; /* every node keeps its caps */
      }
      d->takeover_check = 0;
    } else {
      d->takeover_check = 0;
      memset(&resume, 0, sizeof resume);
      snprintf(resume.event, sizeof resume.event, "%s",
               d->have_ctl_state ? d->ctl_state.event : "event");
      resume.baseline_w = d->have_ctl_state && d->ctl_state.baseline_w > 0
                              ? d->ctl_state.baseline_w
                              : NAN;
      resuming = resume_takeover = 1;
    }
  } else if (ev) {
    d->takeover_check = 0;
  }
  if (!d->ctl && !ev && !sig[0]) {
    free(sig); /* no node reports yet */
    free(mem);
    free(pre);
    return 0;
  }
  if (!d->ctl) {
    /* Built outside events too: it learns each job's uncapped point (and
     * the pre-event baseline) from the periods before an event, and
     * changes no cap outside one. */
    if ((rc = build(d, sig, ev != NULL, err)) < 0) {
      free(mem);
      free(pre);
      return rc;
    }
    /* Built during an event or a recovery: each GPU's pre-event cap, its
     * ceiling. The old module's for the GPUs that stayed; else the limit
     * its agent restores (its recorded original), or, from an agent that
     * holds nothing of ours, the limit in force (its own). */
    if ((ev || resuming) && d->ctl_ngpus &&
        (pre_in = malloc(d->ctl_ngpus * sizeof *pre_in))) {
      for (size_t a = 0; a < d->ctl_ngpus; a++)
        pre_in[a] = NAN;
      for (size_t k = 0; k < d->ctl_nn; k++) {
        size_t end = k + 1 < d->ctl_nn ? d->ctl_first[k + 1] : d->ctl_ngpus;
        for (size_t q = 0; q < npre; q++)
          if (strcmp(pre[q].node, d->ctl_node[k]) == 0 &&
              d->ctl_first[k] + pre[q].g < end)
            pre_in[d->ctl_first[k] + pre[q].g] = pre[q].w;
        const struct pfid_node *n = pfid_node_find(d, d->ctl_node[k]);
        for (size_t a = d->ctl_first[k]; n && a < end; a++) {
          const struct pfi_fleet_gpu *u = &n->tel.gpu[a - d->ctl_first[k]];
          if (!isnan(pre_in[a]) || a - d->ctl_first[k] >= n->tel.n)
            continue;
          if (u->restore_mw > 0)
            pre_in[a] = u->restore_mw / 1000.0;
          else if (n->tel.mode == PFI_AGENT_IDLE)
            pre_in[a] = u->cap_mw / 1000.0;
        }
      }
    }
    /* The jobs that stayed: their memory, on the new module's clock (each
     * one's t_s is monotonic time since its build). */
    size_t kept = 0;
    for (size_t i = 0; i < nmem; i++) {
      int s = pfi_ctl_job_find(d->ctl, mem[i].id);
      if (s < 0)
        continue;
      struct pfi_error e2 = {0};
      int r = pfi_ctl_job_restore(d->ctl, s, &mem[i], old_t0 - d->ctl_t0, &e2);
      if (r < 0) /* not kept: it starts again */
        pfid_log(d, "controller", "job %s: %s", mem[i].id, e2.msg);
      else
        kept += (size_t)r;
    }
    if (nmem && (ev || d->recovering))
      pfid_log(d, "controller", "%zu of %zu jobs kept their memory", kept,
               nmem);
    free(mem);
  } else {
    free(sig);
  }
  size_t ng = d->ctl_ngpus, ns = pfi_ctl_nslots(d->ctl);
  free(pre);
  struct pfi_ctl_gpu_obs *go = calloc(ng ? ng : 1, sizeof *go);
  struct pfi_ctl_job_obs *jo = calloc(ns ? ns : 1, sizeof *jo);
  unsigned *nrep = calloc(ns ? ns : 1, sizeof *nrep);
  if (!go || !jo || !nrep) {
    free(go);
    free(jo);
    free(nrep);
    free(pre_in);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  for (size_t s = 0; s < ns; s++)
    jo[s].phase = -1;
  for (size_t k = 0; k < d->ctl_nn; k++) {
    struct pfid_node *n = pfid_node_find(d, d->ctl_node[k]);
    for (unsigned g = 0; n && g < n->tel.n; g++) {
      struct pfi_ctl_gpu_obs *o = &go[d->ctl_first[k] + g];
      const struct pfi_fleet_gpu *u = &n->tel.gpu[g];
      o->valid = !n->stale && u->power_w >= 0 && isfinite(u->power_w);
      o->power_w = o->valid ? u->power_w : 0;
      o->cap_w = u->enforced_mw / 1000.0;
    }
    for (unsigned j = 0; n && !n->stale && j < n->tel.n_jobs; j++) {
      int s = pfi_ctl_job_find(d->ctl, n->tel.job[j].id);
      if (s >= 0 && (size_t)s < ns && n->tel.job[j].tokens_per_s >= 0) {
        const struct pfi_fleet_job *fj = &n->tel.job[j];
        pfid_job_tput_add(&jo[s], &nrep[s], fj->tokens_per_s);
        jo[s].phase = fj->phase;
        /* Its trainer's announced pause, from the telemetry's arrival to
         * now (docs/control.md "Announced pauses"; the nodes' clocks are
         * not compared). */
        double in = fj->pause_in_s - (pfid_mono() - n->seen_mono);
        if (fj->pause_in_s >= 0 && in >= 0) {
          jo[s].pause_announced = 1;
          jo[s].pause_in_s = in;
          jo[s].pause_len_s = fj->pause_len_s > 0 ? fj->pause_len_s : NAN;
        }
        double end = fj->end_in_s - (pfid_mono() - n->seen_mono);
        if (fj->end_in_s >= 0 && end >= 0) {
          jo[s].end_announced = 1;
          jo[s].end_in_s = end;
        }
      }
    }
  }
  /* The event's terms on the module's clock (monotonic since its first
   * period): its start and planned end, and the notice it gave (its start
   * less the time it became known; none when that is unknown). */
  double t = pfid_mono() - d->ctl_t0 + 1e-3, wall = pfid_wall();
  struct pfi_ctl_input in = {
      .t_s = t,
      .event = ev != NULL,
      .event_id = ev ? ev->id : NULL,
      .target_w = ev ? ev->target_w : 0,
      .gpu = go,
      .job = jo,
      .baseline_w = 0,
      .event_start_s = ev ? t - (wall - ev->start_s) : NAN,
      .notice_s = ev && ev->known_s > 0 && ev->start_s > ev->known_s
                      ? ev->start_s - ev->known_s
                      : 0,
      .event_end_s = ev ? t + (ev->end_s - wall) : NAN};
  /* A start before the module's first period (a takeover, a rebuild
   * during the event) is negative on its clock: the longest event still
   * counts from the event's own start. */
  struct pfi_ctl_output out;
  in.pre_cap_w = pre_in;
  /* The pre-event baseline: the old module's (a rebuild), else the one the
   * previous leader kept for this event (a takeover); else the module's
   * own (the median realized power before the event it saw). */
  if (ev && isfinite(old_base) && old_base > 0)
    in.baseline_w = old_base;
  else if (ev && d->have_ctl_state && strcmp(d->ctl_state.event, ev->id) == 0)
    in.baseline_w = d->ctl_state.baseline_w;
  if (resuming) {
    /* Its start on the new module's clock (monotonic since each build);
     * a takeover's: when the old leader's began (its wall-clock time in
     * the state it kept), else now. */
    if (resume_takeover && d->have_ctl_state && d->ctl_state.recovery_t0 > 0 &&
        strcmp(d->ctl_state.event, resume.event) == 0)
      resume.t0_s = t - (wall - d->ctl_state.recovery_t0);
    else if (resume_takeover)
      resume.t0_s = t;
    else
      resume.t0_s += old_t0 - d->ctl_t0;
    if (resume.t0_s > t)
      resume.t0_s = t;
    in.resume = &resume;
    pfid_log(d, "controller", "recovery from %s goes on in the new module",
             resume.event);
  }
  rc = pfi_ctl_step(d->ctl, &in, &out, err);
  free(go);
  free(jo);
  free(nrep);
  free(pre_in);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < out.nrec; i++)
    record(d, &out.rec[i]);
  for (size_t i = 0; i < out.ndone; i++)
    record(d, &out.done[i]);
  d->aim_w = out.aim_w;
  d->budget_w = out.budget_w;
  d->recovering = out.recovering;
  d->rec_limit_w = out.recovery_limit_w;
  d->rec_ceiling_w = out.recovery_ceiling_w;
  d->rec_rate_w_s = out.recovery_rate_w_s;
  d->rec_left_s = out.recovery_left_s;
  d->rec_held = out.recovery_held;
  if (out.recovering)
    snprintf(d->rec_event, sizeof d->rec_event, "%s",
             pfi_ctl_recovery_save(d->ctl, &resume) ? resume.event : "");
  /* The event and its baseline kept in the bucket for a leader after us
   * (written once per event, and when the baseline changes). */
  double base = pfi_ctl_baseline(d->ctl);
  /* And when its recovery begins, with that start: a leader after us goes
   * on within the same window. */
  struct pfi_ctl_recovery rv;
  int rec_new = !ev && out.recovering && pfi_ctl_recovery_save(d->ctl, &rv) &&
                (!d->have_ctl_state || d->ctl_state.recovery_t0 <= 0 ||
                 strcmp(d->ctl_state.event, rv.event) != 0);
  if (pfi_nats_connected(d->nc) &&
      ((ev && isfinite(base) && base > 0 &&
        (!d->have_ctl_state || strcmp(d->ctl_state.event, ev->id) != 0 ||
         d->ctl_state.baseline_w != base ||
         d->ctl_state.recovery_t0 > 0)) || /* an event again: no recovery */
       (rec_new && pfi_fleet_name_ok(rv.event)))) {
    struct pfi_fleet_ctl_state cs = {
        .baseline_w = isfinite(base) && base > 0 ? base : 0, .t_s = wall};
    snprintf(cs.event, sizeof cs.event, "%s", ev ? ev->id : rv.event);
    if (rec_new)
      cs.recovery_t0 = wall - (t - rv.t0_s);
    char buf[256];
    struct pfi_error e2;
    int len = pfi_fleet_ctl_state_encode(&cs, buf, sizeof buf, &e2);
    if (len > 0 && pfi_nats_kv_put(d->nc, "ctl", buf, (size_t)len, NULL,
                                   &e2) == 0) {
      d->ctl_state = cs;
      d->have_ctl_state = 1;
    }
  }
  for (size_t k = 0; k < d->ctl_nn; k++) {
    struct pfid_node *n = pfid_node_find(d, d->ctl_node[k]);
    if (!n)
      continue;
    size_t i = (size_t)(n - d->node);
    for (unsigned g = 0; g < n->tel.n; g++) {
      double mw = floor(out.cap_w[d->ctl_first[k] + g] * 1000.0 + 0.5);
      if (!(mw >= n->tel.gpu[g].min_mw))
        mw = n->tel.gpu[g].min_mw;
      if (mw > n->tel.gpu[g].max_mw)
        mw = n->tel.gpu[g].max_mw;
      want[i][g] = (uint32_t)mw;
    }
  }
  /* Outside an event and its recovery the module stays, learning; the
   * caller restores every node. */
  return ev || out.recovering ? 1 : 0;
}
