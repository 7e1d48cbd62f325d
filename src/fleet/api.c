/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's HTTP API and its /metrics page. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/transport.h"
#include "pfid_int.h"

static void reply_json(struct pfi_http_resp *rs, int status, json_t *j) {
  rs->status = status;
  rs->type = "application/json";
  rs->body = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(j);
  if (rs->body) {
    size_t n = strlen(rs->body);
    char *b = realloc(rs->body, n + 2);
    if (b) {
      b[n] = '\n';
      b[n + 1] = 0;
      rs->body = b;
      n++;
    }
    rs->len = n;
  } else {
    rs->status = 500;
  }
}

static void reply_err(struct pfi_http_resp *rs, int status, const char *msg) {
  reply_json(rs, status, json_pack("{s:s}", "error", msg));
}

int pfid_node_power(const struct pfid_node *n, double mono, double *gpu_w,
                    double *other_w, double *age_s) {
  double g = 0;
  int ok = 1;
  for (unsigned i = 0; i < n->tel.n; i++)
    if (n->tel.gpu[i].power_w >= 0)
      g += n->tel.gpu[i].power_w;
    else
      ok = 0;
  *gpu_w = g;
  *other_w = NAN;
  *age_s = 0;
  if (!n->have_tel || !(n->tel.node_w >= 0) || !n->tel.node_source[0])
    return -1;
  if (ok && n->tel.node_w >= g)
    *other_w = n->tel.node_w - g;
  double age = n->tel.node_age_s + (mono - n->seen_mono);
  *age_s = age > 0 ? age : 0;
  return !n->stale && *age_s <= PFID_NODE_POWER_FRESH_S;
}

static json_t *node_json(const struct pfid_node *n, double mono) {
  json_t *g = json_array();
  for (unsigned i = 0; i < n->tel.n; i++) {
    const struct pfi_fleet_gpu *u = &n->tel.gpu[i];
    json_t *o = json_pack("{s:i s:s s:f s:f s:f}", "gpu", (int)i, "uuid",
                          u->uuid, "cap_w", u->cap_mw / 1000.0, "enforced_w",
                          u->enforced_mw / 1000.0, "min_w", u->min_mw / 1000.0);
    if (!n->restore && i < n->n)
      json_object_set_new(o, "assigned_w", json_real(n->caps[i] / 1000.0));
    if (u->power_w >= 0)
      json_object_set_new(o, "power_w", json_real(u->power_w));
    if (u->job[0])
      json_object_set_new(o, "job", json_string(u->job));
    json_array_append_new(g, o);
  }
  json_t *o = json_pack(
      "{s:s s:b s:s s:I s:I s:i s:o}", "node", n->name, "stale", n->stale,
      "mode", n->have_tel ? pfi_agent_mode_name(n->tel.mode) : "unknown", "seq",
      (json_int_t)n->seq, "seq_applied", (json_int_t)n->tel.seq_applied,
      "reapplied", (int)n->tel.reapplied, "gpus", g);
  /* What its agent said that was not believed (docs/fleet.md "Trust"). */
  if (o) {
    json_object_set_new(o, "suspect",
                        pfid_node_suspect(n, mono) ? json_string(n->suspect)
                                                   : json_null());
    json_object_set_new(o, "refused", json_integer((json_int_t)n->refused));
    json_object_set_new(o, "record_ok",
                        json_boolean(!(n->have_tel && n->tel.record_failed)));
    if (n->adopted_seq)
      json_object_set_new(o, "adopted_seq",
                          json_integer((json_int_t)n->adopted_seq));
  }
  double gw, ow, age;
  int fresh = pfid_node_power(n, mono, &gw, &ow, &age);
  if (o && n->have_tel)
    json_object_set_new(o, "gpu_power_w", json_real(gw));
  if (o && fresh >= 0) {
    json_t *np = json_pack("{s:f s:s s:f s:b}", "w", n->tel.node_w, "source",
                           n->tel.node_source, "age_s", age, "fresh", fresh);
    if (np && isfinite(ow))
      json_object_set_new(np, "other_w", json_real(ow));
    json_object_set_new(o, "node_power", np);
  }
  return o;
}

static json_t *event_json(const struct pfi_fleet_event *e) {
  json_t *o = json_pack("{s:s s:f s:f s:f s:b}", "id", e->id, "start",
                        e->start_s, "end", e->end_s, "target_w", e->target_w,
                        "cancelled", e->cancelled);
  if (o)
    json_object_set_new(o, "level",
                        json_string(pfi_fleet_level_name(e->level)));
  if (o && e->known_s > 0) {
    /* When it became known, and the notice it gave (docs/fleet.md). */
    json_object_set_new(o, "known", json_real(e->known_s));
    json_object_set_new(
        o, "notice_s",
        json_real(e->start_s > e->known_s ? e->start_s - e->known_s : 0));
  }
  return o;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The newest periods' work, s: {"n", "p50", "p99", "max"} (nearest rank). */
static json_t *periods_json(const struct pfi_pfid *d) {
  size_t n = d->n_periods < PFID_PERIODS ? d->n_periods : PFID_PERIODS;
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v || !n) {
    free(v);
    return json_pack("{s:I}", "n", (json_int_t)0);
  }
  memcpy(v, d->period_s, n * sizeof *v);
  qsort(v, n, sizeof *v, dcmp);
  size_t i50 = (size_t)ceil(0.50 * (double)n) - 1,
         i99 = (size_t)ceil(0.99 * (double)n) - 1;
  json_t *o = json_pack("{s:I s:f s:f s:f}", "n", (json_int_t)n, "p50", v[i50],
                        "p99", v[i99], "max", v[n - 1]);
  free(v);
  return o;
}

static void status(struct pfi_pfid *d, struct pfi_http_resp *rs) {
  size_t stale = 0, gpus = 0, suspect = 0, no_record = 0;
  double mono = pfid_mono();
  for (size_t i = 0; i < d->n_nodes; i++) {
    stale += d->node[i].stale;
    gpus += d->node[i].tel.n;
    suspect += pfid_node_suspect(&d->node[i], mono);
    no_record += d->node[i].have_tel && d->node[i].tel.record_failed;
  }
  json_t *j = json_pack(
      "{s:s s:b s:I s:I s:I s:s s:f s:f s:I s:I}", "id", d->id, "leader",
      d->leader, "nodes", (json_int_t)d->n_nodes, "stale_nodes",
      (json_int_t)stale, "gpus", (json_int_t)gpus, "event", d->event,
      "target_w", d->target_w, "power_w", d->power_w, "steps",
      (json_int_t)d->steps, "takeovers", (json_int_t)d->takeovers);
  json_object_set_new(j, "period_work_s", periods_json(d));
  /* docs/fleet.md "Trust": nodes whose telemetry was refused lately, the
   * refusals by reason, sequence numbers adopted from the agents, the
   * bucket made again after it was lost. */
  json_object_set_new(j, "suspect_nodes", json_integer((json_int_t)suspect));
  json_object_set_new(j, "record_failed_nodes",
                      json_integer((json_int_t)no_record));
  json_object_set_new(
      j, "telemetry_refused",
      json_pack("{s:I s:I s:I}", "malformed", (json_int_t)d->bad_tel, "rate",
                (json_int_t)d->tel_rate, "implausible",
                (json_int_t)d->tel_implausible));
  json_object_set_new(j, "seq_adopted", json_integer((json_int_t)d->seq_adopted));
  /* Records that could not be written (a full file system): held in
   * memory until they can be. */
  struct pfid_records_state rst;
  pfid_records_state(d, &rst);
  json_t *rj = json_pack("{s:b s:I s:I s:I s:I}", "ok", !rst.failing, "pending",
                         (json_int_t)rst.pending, "failed",
                         (json_int_t)rst.failed, "dropped",
                         (json_int_t)rst.dropped, "written_late",
                         (json_int_t)rst.written_late);
  if (rj && rst.failing)
    json_object_set_new(rj, "error", json_string(rst.err));
  json_object_set_new(j, "records", rj);
  json_object_set_new(j, "clock_step_s", json_real(d->clock_step ? d->clock_diff_s : 0));
  json_object_set_new(j, "clock_steps", json_integer((json_int_t)d->clock_steps));
  json_object_set_new(j, "bucket_recreated",
                      json_integer((json_int_t)d->bucket_recreated));
  if (d->bucket_recreated)
    json_object_set_new(j, "bucket_recreated_t",
                        json_real(d->bucket_recreated_t));
  /* Levels (docs/fleet.md): the levels events may state (node and meter
   * with --meter-config), the active target as stated and the GPU target
   * it became this period (target_w), the fleet's power at each level. */
  json_t *lv = json_array();
  for (int l = PFI_LEVEL_GPU; l <= (d->have_meter ? PFI_LEVEL_METER : 0); l++)
    json_array_append_new(lv, json_string(pfi_fleet_level_name(l)));
  json_object_set_new(j, "levels", lv);
  json_object_set_new(j, "level", json_string(pfi_fleet_level_name(d->level)));
  json_object_set_new(j, "stated_target_w",
                      json_real(d->event[0] ? d->stated_w : 0));
  json_object_set_new(j, "gpu_target_w", json_real(d->target_w));
  json_object_set_new(j, "infeasible", json_boolean(d->infeasible));
  if (d->infeasible)
    json_object_set_new(j, "shortfall_w",
                        isfinite(d->shortfall_w) ? json_real(d->shortfall_w)
                                                 : json_null());
  json_object_set_new(j, "node_power_w",
                      isfinite(d->node_w) ? json_real(d->node_w) : json_null());
  json_object_set_new(j, "meter_power_w",
                      isfinite(d->meter_w) ? json_real(d->meter_w)
                                           : json_null());
  /* What the controller does (docs/fleet.md, `GET /v1/status`): "event" (a target
   * in force), "recovering" (raising caps back after one), "holding" (the
   * recovery waits: the fleet's draw is on its ramp), "idle". */
  int rec = d->leader && d->recovering && !d->event[0];
  int wait = d->leader && d->takeover_wait && !d->event[0];
  json_object_set_new(j, "state",
                      json_string(d->event[0]                    ? "event"
                                  : wait || (rec && d->rec_held) ? "holding"
                                  : rec                          ? "recovering"
                                                                 : "idle"));
  if (wait && !rec)
    json_object_set_new(
        j, "recovery",
        json_pack("{s:b s:s}", "held", 1, "why",
                  "took the lead: the nodes keep the previous leader's caps "
                  "until their telemetry, then its recovery goes on"));
  if (rec) {
    json_t *r = json_pack("{s:s}", "event", d->rec_event);
#define NUM(k, v)                                                              \
  json_object_set_new(r, k, isfinite(v) ? json_real(v) : json_null())
    NUM("limit_w", d->rec_limit_w);
    NUM("ceiling_w", d->rec_ceiling_w);
    NUM("ramp_w_s", d->rec_rate_w_s);
    NUM("window_left_s", d->rec_left_s);
#undef NUM
    json_object_set_new(r, "held", json_boolean(d->rec_held));
    json_object_set_new(
        r, "why",
        json_string(d->rec_held
                        ? "the fleet's draw is on the recovery's ramp (a "
                          "raise still to show or a paused job's return "
                          "counted): raises wait for the ramp"
                        : "raising caps to their pre-event limits, in a "
                          "seeded order, along the recovery's ramp"));
    json_object_set_new(j, "recovery", r);
  }
  reply_json(rs, 200, j);
}

static void jobs(struct pfi_pfid *d, struct pfi_http_resp *rs) {
  json_t *a = json_array();
  for (size_t i = 0; i < d->n_nodes; i++) {
    const struct pfid_node *n = &d->node[i];
    for (unsigned j = 0; j < n->tel.n_jobs; j++) {
      json_t *o =
          json_pack("{s:s s:s}", "job", n->tel.job[j].id, "node", n->name);
      if (n->tel.job[j].tokens_per_s >= 0)
        json_object_set_new(o, "tokens_per_s",
                            json_real(n->tel.job[j].tokens_per_s));
      /* Held: the controller keeps it under its pre-event caps in this
       * event (not once its contract released or exempted it). */
      int s = d->ctl && d->event[0] ? pfi_ctl_job_find(d->ctl, n->tel.job[j].id)
                                    : -1;
      struct pfi_ctl_belief b;
      int held = s >= 0 && pfi_ctl_job_belief(d->ctl, s, &b, NULL) == 0 &&
                 b.contract != PFI_CTL_CONTRACT && b.cap_w < b.cap_hi_w - 0.5;
      json_object_set_new(o, "held", json_boolean(held));
      json_array_append_new(a, o);
    }
  }
  reply_json(rs, 200, a);
}

static int assign_json(void *ctx, const struct pfid_assign_rec *r) {
  json_array_append_new(
      (json_t *)ctx,
      json_pack("{s:I s:f s:s s:s s:I s:s s:s s:s}", "id", (json_int_t)r->id,
                "t", r->t_s, "leader", r->leader, "node", r->node, "seq",
                (json_int_t)r->seq, "event", r->event, "kind", r->kind,
                "caps_mw", r->caps_mw));
  return 0;
}

static void records(struct pfi_pfid *d, const struct pfi_http_req *rq,
                    struct pfi_http_resp *rs) {
  const char *since = rq->arg(rq, "since");
  json_t *a = json_array();
  struct pfi_error e;
  if (pfid_records_assignments(d, since ? strtoll(since, NULL, 10) : 0, 10000,
                               assign_json, a, &e) < 0) {
    json_decref(a);
    reply_err(rs, 500, e.msg);
    return;
  }
  reply_json(rs, 200, a);
}

/* POST /v1/events: an event message; DELETE /v1/events/ID: cancels. Both
 * write the bucket, which the leader reads every period. */
static void event_post(struct pfi_pfid *d, const struct pfi_http_req *rq,
                       struct pfi_http_resp *rs) {
  struct pfi_fleet_event e;
  struct pfi_error err;
  if (pfi_fleet_event_decode(rq->body, rq->body_len, &e, &err) < 0) {
    reply_err(rs, 400, err.msg);
    return;
  }
  /* Unknown fields are refused, as a tier body's are: a misspelt field
   * would otherwise be dropped without a word. */
  json_t *jb = json_loadb(rq->body, rq->body_len, 0, NULL);
  const char *k, *unk = NULL;
  json_t *v;
  static const char *const known[] = {"v",        "id",        "start",
                                      "end",      "target_w",  "cancelled",
                                      "known",    "level"};
  json_object_foreach(jb, k, v) {
    size_t i = 0;
    while (i < sizeof known / sizeof *known && strcmp(k, known[i]) != 0)
      i++;
    if (i == sizeof known / sizeof *known && !unk)
      unk = k;
  }
  if (unk) {
    char why[160];
    snprintf(why, sizeof why, "event message: field \"%.64s\": unknown", unk);
    json_decref(jb);
    reply_err(rs, 400, why);
    return;
  }
  json_decref(jb);
  /* Bounds (pfid --event-max, --event-ahead): an event of years, or one
   * decades ahead, is a mistake or an attack, never a grid program's. */
  double now = pfid_wall();
  double max_s = d->o.event_max_s > 0 ? d->o.event_max_s : 48 * 3600.0;
  double ahead_s = d->o.event_ahead_s > 0 ? d->o.event_ahead_s : 7 * 86400.0;
  if (e.end_s - e.start_s > max_s || e.start_s - now > ahead_s) {
    char why[200];
    if (e.end_s - e.start_s > max_s)
      snprintf(why, sizeof why,
               "event message: field \"end\": the event lasts %.0f s, more "
               "than %.0f s (pfid --event-max)",
               e.end_s - e.start_s, max_s);
    else
      snprintf(why, sizeof why,
               "event message: field \"start\": %.0f s after now, more than "
               "%.0f s ahead (pfid --event-ahead)",
               e.start_s - now, ahead_s);
    reply_err(rs, 400, why);
    return;
  }
  if (e.level != PFI_LEVEL_GPU && !d->have_meter) {
    reply_err(rs, 400,
              "event message: field \"level\": a node or meter target needs "
              "pfid --meter-config (the meter chain)");
    return;
  }
  /* Known from its submission, unless the source says when it was (the
   * bridge: the grid event's creation time); not after that. An event
   * posted again (the bridge's sync) keeps the time it was first known. */
  if (!(e.known_s > 0) || e.known_s > now)
    e.known_s = now;
  char buf[1024], key[PFI_FLEET_NAME_MAX + 8], *old = NULL;
  size_t olen = 0;
  struct pfi_fleet_event prev;
  snprintf(key, sizeof key, "event.%s", e.id);
  if (pfi_nats_kv_get(d->nc, key, &old, &olen, NULL, &err) == 1 &&
      pfi_fleet_event_decode(old, olen, &prev, &err) == 0 && prev.known_s > 0 &&
      prev.known_s < e.known_s)
    e.known_s = prev.known_s;
  free(old);
  int len = pfi_fleet_event_encode(&e, buf, sizeof buf, &err);
  if (len < 0 ||
      pfi_nats_kv_put(d->nc, key, buf, (size_t)len, NULL, &err) < 0) {
    reply_err(rs, 503, err.msg);
    return;
  }
  __atomic_store_n(&d->wake, 1, __ATOMIC_RELEASE);
  pfid_log(d, "event", "%s: %.1f W%s%s from %.3f to %.3f%s", e.id, e.target_w,
           e.level != PFI_LEVEL_GPU ? " at the " : "",
           e.level != PFI_LEVEL_GPU ? pfi_fleet_level_name(e.level) : "",
           e.start_s, e.end_s, e.cancelled ? " (cancelled)" : "");
  reply_json(rs, 201, event_json(&e));
}

static void event_cancel(struct pfi_pfid *d, const char *id,
                         struct pfi_http_resp *rs) {
  char key[PFI_FLEET_NAME_MAX + 8], *val = NULL;
  size_t len = 0;
  struct pfi_error err;
  struct pfi_fleet_event e;
  if (!pfi_fleet_name_ok(id)) {
    reply_err(rs, 400, "bad event id");
    return;
  }
  snprintf(key, sizeof key, "event.%s", id);
  int r = pfi_nats_kv_get(d->nc, key, &val, &len, NULL, &err);
  if (r < 0 || (r == 1 && pfi_fleet_event_decode(val, len, &e, &err) < 0)) {
    free(val);
    reply_err(rs, 503, err.msg);
    return;
  }
  free(val);
  if (r == 0) {
    reply_err(rs, 404, "no such event");
    return;
  }
  e.cancelled = 1;
  char buf[1024];
  len = (size_t)pfi_fleet_event_encode(&e, buf, sizeof buf, &err);
  if (pfi_nats_kv_put(d->nc, key, buf, len, NULL, &err) < 0) {
    reply_err(rs, 503, err.msg);
    return;
  }
  __atomic_store_n(&d->wake, 1, __ATOMIC_RELEASE);
  pfid_log(d, "event", "%s cancelled", id);
  reply_json(rs, 200, event_json(&e));
}

/* A length of time in s, or null for none (not finite or 0). */
static json_t *secs_or_null(double s) {
  return isfinite(s) && s > 0 ? json_real(s) : json_null();
}

static json_t *quotes_json(const struct pfi_flexcap *f) {
  json_t *q = json_array();
  for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
    json_array_append_new(
        q, json_pack("{s:f s:f s:f s:f}", "max_loss", pfi_capacity_quotes[k],
                     "shed_w", f->quote_w[k], "shed_lo_w", f->quote_lo_w[k],
                     "shed_hi_w", f->quote_hi_w[k]));
  return q;
}

/* GET /v1/capacity: the live flexible capacity (pfid_capacity.c). */
static void capacity(struct pfi_pfid *d, struct pfi_http_resp *rs) {
  struct pfid_capacity c;
  struct pfi_error e;
  if (pfid_capacity(d, &c, &e) < 0) {
    reply_err(rs, e.code == PFI_EINVAL ? 409 : 500, e.msg);
    return;
  }
  json_t *t = json_array(), *du = json_array();
  for (size_t k = 0; k < c.ntiers; k++)
    json_array_append_new(
        t,
        json_pack("{s:f s:I s:f s:f s:f s:o}", "max_loss", c.tier[k].max_loss,
                  "jobs", (json_int_t)c.tier[k].jobs, "uncapped_w",
                  c.tier[k].uncapped_w, "floor_w", c.tier[k].floor_w, "shed_w",
                  c.tier[k].uncapped_w - c.tier[k].floor_w, "max_event_s",
                  secs_or_null(c.tier[k].max_event_s)));
  for (size_t k = 0; k < c.ndur; k++)
    json_array_append_new(
        du, json_pack("{s:o s:I s:f s:o}", "duration_s",
                      secs_or_null(c.dur[k].duration_s), "eligible",
                      (json_int_t)c.dur[k].eligible, "floor_w",
                      c.dur[k].floor_w, "quotes", quotes_json(&c.dur[k])));
  reply_json(rs, 200,
             json_pack("{s:f s:s s:I s:I s:I s:I s:I s:f s:f s:o s:o s:o s:o}",
                       "t", pfid_wall(), "event", d->event, "jobs",
                       (json_int_t)(c.njobs - c.skipped), "skipped",
                       (json_int_t)c.skipped, "eligible",
                       (json_int_t)c.all.eligible, "believed",
                       (json_int_t)c.believed, "estimated",
                       (json_int_t)c.estimated, "uncapped_w", c.all.uncapped_w,
                       "floor_w", c.all.floor_w, "duration_s",
                       secs_or_null(c.all.duration_s), "quotes",
                       quotes_json(&c.all), "durations", du, "tiers", t));
}

static void capacity_metrics(struct pfi_pfid *d, struct pfi_buf *b) {
  struct pfid_capacity c;
  if (pfid_capacity(d, &c, NULL) < 0)
    return; /* no job to quote: the series are absent */
  pfi_buf_printf(b, "# HELP pfi_fleet_flex_capacity_watts Power the fleet "
                    "could shed now at <= max_loss throughput loss, within "
                    "every job's tier (bound: central, low, high).\n"
                    "# TYPE pfi_fleet_flex_capacity_watts gauge\n");
  for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
    pfi_buf_printf(b,
                   "pfi_fleet_flex_capacity_watts{max_loss=\"%g\","
                   "bound=\"central\"} %.17g\n"
                   "pfi_fleet_flex_capacity_watts{max_loss=\"%g\","
                   "bound=\"low\"} %.17g\n"
                   "pfi_fleet_flex_capacity_watts{max_loss=\"%g\","
                   "bound=\"high\"} %.17g\n",
                   pfi_capacity_quotes[k], c.all.quote_w[k],
                   pfi_capacity_quotes[k], c.all.quote_lo_w[k],
                   pfi_capacity_quotes[k], c.all.quote_hi_w[k]);
  if (isfinite(c.all.duration_s))
    pfi_buf_printf(b,
                   "# HELP pfi_fleet_flex_capacity_duration_seconds The "
                   "longest event the tiers allow the quotes above for.\n"
                   "# TYPE pfi_fleet_flex_capacity_duration_seconds gauge\n"
                   "pfi_fleet_flex_capacity_duration_seconds %.17g\n",
                   c.all.duration_s);
  if (c.ndur) {
    pfi_buf_printf(b, "# HELP pfi_fleet_flex_capacity_event_watts Power the "
                      "fleet could shed for an event longer than the one "
                      "before, up to up_to_s (+Inf: any length).\n"
                      "# TYPE pfi_fleet_flex_capacity_event_watts gauge\n");
    for (size_t i = 0; i < c.ndur; i++) {
      char up[32];
      if (isfinite(c.dur[i].duration_s))
        snprintf(up, sizeof up, "%.17g", c.dur[i].duration_s);
      else
        snprintf(up, sizeof up, "+Inf");
      for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
        pfi_buf_printf(b,
                       "pfi_fleet_flex_capacity_event_watts{max_loss=\"%g\","
                       "up_to_s=\"%s\",bound=\"central\"} %.17g\n"
                       "pfi_fleet_flex_capacity_event_watts{max_loss=\"%g\","
                       "up_to_s=\"%s\",bound=\"low\"} %.17g\n"
                       "pfi_fleet_flex_capacity_event_watts{max_loss=\"%g\","
                       "up_to_s=\"%s\",bound=\"high\"} %.17g\n",
                       pfi_capacity_quotes[k], up, c.dur[i].quote_w[k],
                       pfi_capacity_quotes[k], up, c.dur[i].quote_lo_w[k],
                       pfi_capacity_quotes[k], up, c.dur[i].quote_hi_w[k]);
    }
  }
  pfi_buf_printf(b, "# HELP pfi_fleet_flex_tier_shed_watts Power the jobs "
                    "of one tier could shed at their tier's floor "
                    "(max_loss 1: no tier).\n"
                    "# TYPE pfi_fleet_flex_tier_shed_watts gauge\n");
  for (size_t k = 0; k < c.ntiers; k++)
    pfi_buf_printf(b, "pfi_fleet_flex_tier_shed_watts{max_loss=\"%g\"} %.17g\n",
                   c.tier[k].max_loss,
                   c.tier[k].uncapped_w - c.tier[k].floor_w);
}

/* ---- tiers --------------------------------------------------------------- */

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct job ids the nodes report, sorted (pointers into d). */
static const char **job_ids(struct pfi_pfid *d, size_t *n) {
  size_t m = 0;
  for (size_t i = 0; i < d->n_nodes; i++)
    m += d->node[i].tel.n_jobs;
  const char **ids = calloc(m ? m : 1, sizeof *ids);
  if (!ids)
    return NULL;
  m = 0;
  for (size_t i = 0; i < d->n_nodes; i++)
    for (unsigned j = 0; j < d->node[i].tel.n_jobs; j++)
      ids[m++] = d->node[i].tel.job[j].id;
  qsort(ids, m, sizeof *ids, str_cmp);
  size_t k = 0;
  for (size_t i = 0; i < m; i++)
    if (!k || strcmp(ids[k - 1], ids[i]) != 0)
      ids[k++] = ids[i];
  *n = k;
  return ids;
}

/* The rest of a job's contract in force, as the controller keeps it: the
 * longest event, the notice (null: none) and where they came from, the
 * deadline (null: none). */
static void terms_json(const struct pfi_pfid *d, json_t *o, const char *job,
                       double loss) {
  double me, no, dl;
  const char *src;
  pfid_job_terms(d, job, loss, &me, &no, &dl, &src);
  json_object_set_new(o, "max_event_s", me > 0 ? json_real(me) : json_null());
  json_object_set_new(o, "notice_s", no > 0 ? json_real(no) : json_null());
  json_object_set_new(o, "deadline_tput", dl > 0 ? json_real(dl) : json_null());
  json_object_set_new(o, "terms_source", json_string(src[0] ? src : "none"));
}

/* GET /v1/tiers: the named tiers, and every job's tier in force (the API's
 * or its node's) with where it came from. */
static void tiers_get(struct pfi_pfid *d, struct pfi_http_resp *rs) {
  json_t *named = json_array(), *jobs = json_array();
  double loss;
  const char *name;
  for (size_t i = 0; (name = pfi_fleet_tier_named(i, &loss)); i++)
    json_array_append_new(named,
                          json_pack("{s:s s:f}", "name", name, "max_loss", loss));
  size_t n = 0;
  const char **ids = job_ids(d, &n);
  /* Jobs known to the nodes, then tiers set for jobs not (yet) seen. */
  for (size_t i = 0; ids && i < n; i++) {
    const char *src;
    double l = pfid_job_tier(d, ids[i], NULL, &src);
    json_t *o = json_pack("{s:s}", "job", ids[i]);
    json_object_set_new(o, "max_loss", l >= 0 ? json_real(l) : json_null());
    json_object_set_new(o, "source", json_string(src[0] ? src : "none"));
    terms_json(d, o, ids[i], l);
    json_array_append_new(jobs, o);
  }
  for (size_t t = 0; t < d->n_tier; t++) {
    const char *id = d->tier[t].job;
    if (ids && bsearch(&id, ids, n, sizeof *ids, str_cmp))
      continue;
    json_t *o = json_pack("{s:s s:f s:s}", "job", id, "max_loss",
                          d->tier[t].max_loss, "source", "api");
    terms_json(d, o, id, d->tier[t].max_loss);
    json_array_append_new(jobs, o);
  }
  free(ids);
  reply_json(rs, 200, json_pack("{s:o s:o}", "tiers", named, "jobs", jobs));
}

/* An optional term of PUT /v1/tiers/JOB: a number in [0, hi], or absent.
 * Returns 0, or -1 with the reason naming the field in why. */
static int term_get(json_t *j, const char *k, double hi, double *x, char *why,
                    size_t n) {
  json_t *v = json_object_get(j, k);
  if (!v)
    return 0;
  if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
      !(json_number_value(v) <= hi)) {
    snprintf(why, n, "tier: field \"%s\": expected a number in 0..%g", k, hi);
    return -1;
  }
  *x = json_number_value(v);
  return 0;
}

/* PUT /v1/tiers/JOB with {"tier": NAME} or {"max_loss": 0..1}, and
 * optionally the rest of the contract ("max_event_s", "notice_s": s;
 * "deadline_tput": tokens/s): the job's tier for the controller, over
 * what its node reports and the tier file. */
static void tier_put(struct pfi_pfid *d, const char *job,
                     const struct pfi_http_req *rq, struct pfi_http_resp *rs) {
  char why[PFI_ERROR_MSG_MAX + 64];
  if (!pfi_fleet_name_ok(job)) {
    reply_err(rs, 400, "job id: expected 1..63 letters, digits, _ or -");
    return;
  }
  struct pfi_fleet_tier t;
  memset(&t, 0, sizeof t);
  snprintf(t.job, sizeof t.job, "%s", job);
  json_error_t je;
  json_t *j = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &je);
  if (!j || !json_is_object(j)) {
    snprintf(why, sizeof why, "tier: column %d: %s", j ? 1 : je.column,
             j ? "not a JSON object" : je.text);
    json_decref(j);
    reply_err(rs, 400, why);
    return;
  }
  json_t *nm = json_object_get(j, "tier"), *ml = json_object_get(j, "max_loss");
  const char *k;
  json_t *v;
  const char *bad = NULL;
  json_object_foreach(j, k, v) if (strcmp(k, "tier") != 0 &&
                                   strcmp(k, "max_loss") != 0 &&
                                   strcmp(k, "max_event_s") != 0 &&
                                   strcmp(k, "notice_s") != 0 &&
                                   strcmp(k, "deadline_tput") != 0) bad = k;
  if (bad) {
    snprintf(why, sizeof why, "tier: field \"%.64s\": unknown", bad);
  } else if (!nm == !ml) {
    snprintf(why, sizeof why, "tier: give one of \"tier\" and \"max_loss\"");
  } else if (nm && (!json_is_string(nm) ||
                    pfi_fleet_tier_lookup(json_string_value(nm),
                                          &t.max_loss) < 0)) {
    snprintf(why, sizeof why,
             "tier: field \"tier\": expected flex0, flex10, flex25 or flex50");
  } else if (ml && (!json_is_number(ml) || !(json_number_value(ml) >= 0) ||
                    !(json_number_value(ml) <= 1))) {
    snprintf(why, sizeof why, "tier: field \"max_loss\": expected 0..1");
  } else if (term_get(j, "max_event_s", 1e9, &t.max_event_s, why, sizeof why) <
                 0 ||
             term_get(j, "notice_s", 1e9, &t.notice_s, why, sizeof why) < 0 ||
             term_get(j, "deadline_tput", 1e15, &t.deadline_tput, why,
                      sizeof why) < 0) {
    /* why names the field */
  } else {
    why[0] = 0;
    if (nm)
      snprintf(t.name, sizeof t.name, "%s", json_string_value(nm));
    else
      t.max_loss = json_number_value(ml);
  }
  json_decref(j);
  if (why[0]) {
    reply_err(rs, 400, why);
    return;
  }
  char buf[512], key[PFI_FLEET_NAME_MAX + 8];
  struct pfi_error err;
  int len = pfi_fleet_tier_encode(&t, buf, sizeof buf, &err);
  snprintf(key, sizeof key, "tier.%s", t.job);
  if (len < 0 ||
      pfi_nats_kv_put(d->nc, key, buf, (size_t)len, NULL, &err) < 0) {
    reply_err(rs, 503, err.msg);
    return;
  }
  pfid_log(d, "tier", "%s: largest loss %g%s%s", t.job, t.max_loss,
           t.name[0] ? " as " : "", t.name);
  json_t *o = json_pack("{s:s s:f}", "job", t.job, "max_loss", t.max_loss);
  if (t.name[0])
    json_object_set_new(o, "tier", json_string(t.name));
  if (t.max_event_s > 0)
    json_object_set_new(o, "max_event_s", json_real(t.max_event_s));
  if (t.notice_s > 0)
    json_object_set_new(o, "notice_s", json_real(t.notice_s));
  if (t.deadline_tput > 0)
    json_object_set_new(o, "deadline_tput", json_real(t.deadline_tput));
  reply_json(rs, 200, o);
}

static void tier_delete(struct pfi_pfid *d, const char *job,
                        struct pfi_http_resp *rs) {
  char key[PFI_FLEET_NAME_MAX + 8], *val = NULL;
  size_t len = 0;
  struct pfi_error err;
  if (!pfi_fleet_name_ok(job)) {
    reply_err(rs, 400, "job id: expected 1..63 letters, digits, _ or -");
    return;
  }
  snprintf(key, sizeof key, "tier.%s", job);
  int r = pfi_nats_kv_get(d->nc, key, &val, &len, NULL, &err);
  free(val);
  if (r < 0) {
    reply_err(rs, 503, err.msg);
    return;
  }
  if (r == 0) {
    reply_err(rs, 404, "no tier set for this job");
    return;
  }
  if (pfi_nats_kv_delete(d->nc, key, &err) < 0) {
    reply_err(rs, 503, err.msg);
    return;
  }
  pfid_log(d, "tier", "%s: set tier removed", job);
  reply_json(rs, 200, json_pack("{s:s s:b}", "job", job, "removed", 1));
}

static void metrics(struct pfi_pfid *d, struct pfi_http_resp *rs) {
  struct pfi_buf b = {0};
  size_t stale = 0;
  for (size_t i = 0; i < d->n_nodes; i++)
    stale += d->node[i].stale;
  pfi_buf_printf(&b,
                 "# HELP pfi_pfid_leader 1 while this pfid leads.\n"
                 "# TYPE pfi_pfid_leader gauge\n"
                 "pfi_pfid_leader{pfid=\"%s\"} %d\n"
                 "# HELP pfi_fleet_nodes Nodes known, by state.\n"
                 "# TYPE pfi_fleet_nodes gauge\n"
                 "pfi_fleet_nodes{state=\"live\"} %zu\n"
                 "pfi_fleet_nodes{state=\"stale\"} %zu\n"
                 "# HELP pfi_fleet_target_watts The active event's target "
                 "as GPU power (0 outside one).\n"
                 "# TYPE pfi_fleet_target_watts gauge\n"
                 "pfi_fleet_target_watts %.17g\n"
                 "# HELP pfi_fleet_power_watts Power of the live nodes' GPUs.\n"
                 "# TYPE pfi_fleet_power_watts gauge\n"
                 "pfi_fleet_power_watts %.17g\n"
                 "# HELP pfi_pfid_assignments_published_total Assignments "
                 "written.\n"
                 "# TYPE pfi_pfid_assignments_published_total counter\n"
                 "pfi_pfid_assignments_published_total %lu\n"
                 "# HELP pfi_pfid_takeovers_total Times this pfid took the "
                 "lead.\n"
                 "# TYPE pfi_pfid_takeovers_total counter\n"
                 "pfi_pfid_takeovers_total %lu\n"
                 "# HELP pfi_pfid_bad_telemetry_total Telemetry messages "
                 "refused.\n"
                 "# TYPE pfi_pfid_bad_telemetry_total counter\n"
                 "pfi_pfid_bad_telemetry_total %lu\n",
                 d->id, d->leader, d->n_nodes - stale, stale, d->target_w,
                 d->power_w, d->published, d->takeovers, d->bad_tel);
  size_t suspect = 0, no_record = 0;
  double mono = pfid_mono();
  for (size_t i = 0; i < d->n_nodes; i++) {
    suspect += pfid_node_suspect(&d->node[i], mono);
    no_record += d->node[i].have_tel && d->node[i].tel.record_failed;
  }
  pfi_buf_printf(&b,
                 "# HELP pfi_fleet_nodes_suspect Nodes with telemetry "
                 "refused in the last %.0f s (rate, implausible).\n"
                 "# TYPE pfi_fleet_nodes_suspect gauge\n"
                 "pfi_fleet_nodes_suspect %zu\n"
                 "# HELP pfi_fleet_nodes_record_failed Nodes whose agent "
                 "cannot write its local record (counted unable to cut).\n"
                 "# TYPE pfi_fleet_nodes_record_failed gauge\n"
                 "pfi_fleet_nodes_record_failed %zu\n"
                 "# HELP pfi_pfid_telemetry_refused_total Telemetry refused, "
                 "by reason.\n"
                 "# TYPE pfi_pfid_telemetry_refused_total counter\n"
                 "pfi_pfid_telemetry_refused_total{reason=\"malformed\"} %lu\n"
                 "pfi_pfid_telemetry_refused_total{reason=\"rate\"} %lu\n"
                 "pfi_pfid_telemetry_refused_total{reason=\"implausible\"} "
                 "%lu\n"
                 "# HELP pfi_pfid_seq_adopted_total Sequence numbers adopted "
                 "from a node that applied one above ours.\n"
                 "# TYPE pfi_pfid_seq_adopted_total counter\n"
                 "pfi_pfid_seq_adopted_total %lu\n"
                 "# HELP pfi_pfid_bucket_recreated_total Times the bucket "
                 "was found lost and made again.\n"
                 "# TYPE pfi_pfid_bucket_recreated_total counter\n"
                 "pfi_pfid_bucket_recreated_total %lu\n",
                 PFID_SUSPECT_S, suspect, no_record, d->bad_tel, d->tel_rate,
                 d->tel_implausible, d->seq_adopted, d->bucket_recreated);
  struct pfid_records_state rst;
  pfid_records_state(d, &rst);
  pfi_buf_printf(&b,
                 "# HELP pfi_pfid_records_ok 0 while the records file cannot "
                 "be written.\n"
                 "# TYPE pfi_pfid_records_ok gauge\n"
                 "pfi_pfid_records_ok %d\n"
                 "# HELP pfi_pfid_records_pending Rows held in memory until "
                 "the records file can be written.\n"
                 "# TYPE pfi_pfid_records_pending gauge\n"
                 "pfi_pfid_records_pending %zu\n"
                 "# HELP pfi_pfid_records_failed_total Writes of the records "
                 "file that failed.\n"
                 "# TYPE pfi_pfid_records_failed_total counter\n"
                 "pfi_pfid_records_failed_total %lu\n"
                 "# HELP pfi_pfid_records_dropped_total Rows dropped past "
                 "the bound of those held.\n"
                 "# TYPE pfi_pfid_records_dropped_total counter\n"
                 "pfi_pfid_records_dropped_total %lu\n",
                 !rst.failing, rst.pending, rst.failed, rst.dropped);
  pfi_buf_printf(&b,
                 "# HELP pfi_fleet_stated_target_watts The active event's "
                 "target at the level it was stated (0 outside one).\n"
                 "# TYPE pfi_fleet_stated_target_watts gauge\n"
                 "pfi_fleet_stated_target_watts{level=\"%s\"} %.17g\n"
                 "# HELP pfi_fleet_target_infeasible 1 while the active "
                 "event's node or meter target is below what the nodes draw "
                 "with no GPU power.\n"
                 "# TYPE pfi_fleet_target_infeasible gauge\n"
                 "pfi_fleet_target_infeasible %d\n",
                 pfi_fleet_level_name(d->level), d->event[0] ? d->stated_w : 0,
                 d->infeasible);
  int rec = d->leader && d->recovering && !d->event[0];
  pfi_buf_printf(&b,
                 "# HELP pfi_fleet_recovering 1 while caps return to their "
                 "pre-event limits after an event.\n"
                 "# TYPE pfi_fleet_recovering gauge\n"
                 "pfi_fleet_recovering %d\n"
                 "# HELP pfi_fleet_recovery_held 1 while the recovery waits "
                 "(the fleet's draw on its ramp).\n"
                 "# TYPE pfi_fleet_recovery_held gauge\n"
                 "pfi_fleet_recovery_held %d\n",
                 rec, rec && d->rec_held);
  if (rec && isfinite(d->rec_limit_w) && isfinite(d->rec_ceiling_w))
    pfi_buf_printf(&b,
                   "# HELP pfi_fleet_recovery_limit_watts The recovery's "
                   "ramp: the most the fleet's GPUs may draw next period.\n"
                   "# TYPE pfi_fleet_recovery_limit_watts gauge\n"
                   "pfi_fleet_recovery_limit_watts %.17g\n"
                   "# HELP pfi_fleet_recovery_ceiling_watts The draw with "
                   "every job at its pre-event caps, as believed.\n"
                   "# TYPE pfi_fleet_recovery_ceiling_watts gauge\n"
                   "pfi_fleet_recovery_ceiling_watts %.17g\n",
                   d->rec_limit_w, d->rec_ceiling_w);
  if (isfinite(d->node_w) && isfinite(d->meter_w))
    pfi_buf_printf(&b,
                   "# HELP pfi_fleet_node_power_watts The nodes' DC power "
                   "(GPUs and other power, measured or node_other_w), "
                   "--meter-config.\n"
                   "# TYPE pfi_fleet_node_power_watts gauge\n"
                   "pfi_fleet_node_power_watts %.17g\n"
                   "# HELP pfi_fleet_meter_power_watts The fleet's power at "
                   "the meter by the meter chain (supplies, PUE, facility "
                   "loads), --meter-config.\n"
                   "# TYPE pfi_fleet_meter_power_watts gauge\n"
                   "pfi_fleet_meter_power_watts %.17g\n",
                   d->node_w, d->meter_w);
  capacity_metrics(d, &b);
  /* Each family in one group, as the exposition format requires. */
  for (int k = 0; k < 2; k++) {
    pfi_buf_printf(&b, k ? "# HELP pfi_node_power_age_seconds Age of that "
                           "reading.\n"
                           "# TYPE pfi_node_power_age_seconds gauge\n"
                         : "# HELP pfi_node_power_watts A live node's measured "
                           "power (its GPUs included), by source.\n"
                           "# TYPE pfi_node_power_watts gauge\n");
    for (size_t i = 0; i < d->n_nodes; i++) {
      const struct pfid_node *n = &d->node[i];
      double gw, ow, age;
      if (n->stale || pfid_node_power(n, mono, &gw, &ow, &age) < 0)
        continue;
      pfi_buf_printf(&b, "%s{node=\"",
                     k ? "pfi_node_power_age_seconds" : "pfi_node_power_watts");
      pfi_buf_label(&b, n->name);
      pfi_buf_printf(&b, "\",source=\"%s\"} %.17g\n", n->tel.node_source,
                     k ? age : n->tel.node_w);
    }
  }
  pfi_buf_printf(&b,
                 "# HELP pfi_pfid_period_duration_seconds Work of each "
                 "control period led (lease, bucket, control module, "
                 "publishing).\n"
                 "# TYPE pfi_pfid_period_duration_seconds histogram\n");
  unsigned long cum = 0;
  for (int k = 0; k < 14; k++) {
    cum += d->period_hist[k];
    if (k < 13)
      pfi_buf_printf(&b, "pfi_pfid_period_duration_seconds_bucket{le=\"%g\"} %lu\n",
                     pfid_period_le[k], cum);
    else
      pfi_buf_printf(&b, "pfi_pfid_period_duration_seconds_bucket{le=\"+Inf\"} %lu\n",
                     cum);
  }
  pfi_buf_printf(&b, "pfi_pfid_period_duration_seconds_sum %.17g\n"
                     "pfi_pfid_period_duration_seconds_count %lu\n",
                 d->period_sum_s, d->n_periods);
  size_t nj = 0;
  const char **ids = job_ids(d, &nj);
  if (!ids)
    b.oom = 1;
  else
    pfi_fleet_metrics_jobs(&b, d->ctl, ids, nj);
  free(ids);
  if (b.oom) {
    pfi_buf_release(&b);
    rs->status = 500;
    return;
  }
  rs->type = "text/plain; version=0.0.4";
  rs->body = b.s;
  rs->len = b.len;
}

static int audit_json(void *ctx, const struct pfid_audit_rec *r) {
  json_t *o =
      json_pack("{s:I s:f s:s s:s s:s s:s s:s s:s s:s s:I}", "id",
                (json_int_t)r->id, "t", r->t_s, "pfid", r->pfid, "who", r->who,
                "role", r->role, "peer", r->peer, "method", r->method, "path",
                r->path, "body", r->body, "status", (json_int_t)r->status);
  if (o && r->error && r->error[0])
    json_object_set_new(o, "error", json_string(r->error));
  json_array_append_new((json_t *)ctx, o);
  return 0;
}

#define AUDIT_ROWS_MAX 10000

/* GET /v1/records?table=audit: the mutations, who made them and from
 * where (admin), filtered by since (a row id), after (Unix time), who (a
 * token's name) and limit (the newest N; without it the first
 * AUDIT_ROWS_MAX after since). 400 naming the parameter for a bad one. */
static void audits(struct pfi_pfid *d, const struct pfi_http_req *rq,
                   struct pfi_http_resp *rs) {
  const char *since = rq->arg(rq, "since"), *after = rq->arg(rq, "after"),
             *who = rq->arg(rq, "who"), *limit = rq->arg(rq, "limit");
  struct pfid_audit_filter f = {0, NAN, who, AUDIT_ROWS_MAX, 0};
  char *end;
  if (since) {
    errno = 0;
    long long v = strtoll(since, &end, 10);
    if (!*since || *end || v < 0 || errno) {
      reply_err(rs, 400, "since: expected a row id, a whole number >= 0");
      return;
    }
    f.since = v;
  }
  if (after) {
    f.after_s = strtod(after, &end);
    if (!*after || *end || !isfinite(f.after_s)) {
      reply_err(rs, 400, "after: expected a Unix time, seconds");
      return;
    }
  }
  if (who) {
    size_t n = strlen(who), ok = n > 0 && n < PFI_API_TOKEN_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++)
      ok = isalnum((unsigned char)who[i]) || strchr("_-.", who[i]);
    if (!ok) {
      reply_err(rs, 400,
                "who: expected a token's name, 1..63 letters, digits, _, - "
                "or .");
      return;
    }
  }
  if (limit) {
    long v = strtol(limit, &end, 10);
    if (!*limit || *end || v < 1 || v > AUDIT_ROWS_MAX) {
      reply_err(rs, 400, "limit: expected a whole number 1..10000");
      return;
    }
    f.limit = (size_t)v;
    f.last = 1;
  }
  json_t *a = json_array();
  struct pfi_error e;
  if (pfid_records_audits(d, &f, audit_json, a, &e) < 0) {
    json_decref(a);
    reply_err(rs, 500, e.msg);
    return;
  }
  reply_json(rs, 200, a);
}

static void route(struct pfi_pfid *d, const struct pfi_http_req *rq,
                  struct pfi_http_resp *rs, int get, int mut,
                  enum pfi_api_role role);

/* Who may do what (docs/security.md "API tokens"): with --tokens every
 * request needs a token, GET the role read, a mutation operate, the audit
 * trail admin; with only --token-file, reads are open and mutations need
 * its token; with neither, the API is read-only. 401 without a known
 * token, 403 with one whose role is too low. Every mutation by a known
 * token is recorded with its answer (fleet_audit). */
void pfid_api(void *arg, const struct pfi_http_req *rq,
              struct pfi_http_resp *rs) {
  struct pfi_pfid *d = arg;
  int get = strcmp(rq->method, "GET") == 0;
  int mut = strcmp(rq->method, "POST") == 0 ||
            strcmp(rq->method, "DELETE") == 0 || strcmp(rq->method, "PUT") == 0;
  if (!get && !mut) {
    reply_err(rs, 405, "method not allowed");
    return;
  }
  /* Checked before anything else is looked at. */
  long t = pfi_api_token_find(d->tokens, d->n_tokens, rq->auth);
  enum pfi_api_role role = t >= 0         ? d->tokens[t].role
                           : d->tokens_on ? PFI_ROLE_NONE
                                          : PFI_ROLE_READ;
  const char *tbl = get ? rq->arg(rq, "table") : NULL;
  enum pfi_api_role need =
      mut ? PFI_ROLE_OPERATE
      : tbl && strcmp(rq->path, "/v1/records") == 0 && strcmp(tbl, "audit") == 0
          ? PFI_ROLE_ADMIN
          : PFI_ROLE_READ;
  if (t < 0 && role < need) {
    rs->www_authenticate = "Bearer";
    reply_err(rs, 401, "a valid bearer token is required");
    return;
  }
  if (role < need) {
    char why[200];
    snprintf(why, sizeof why, "token '%s' has the role %s; this needs %s",
             d->tokens[t].name, pfi_api_role_name(role),
             pfi_api_role_name(need));
    reply_err(rs, 403, why);
  } else {
    route(d, rq, rs, get, mut, role);
  }
  if (mut && t >= 0) {
    char body[384];
    size_t k = 0;
    /* The body's first bytes, its controls as spaces: what was asked. */
    for (size_t i = 0; i < rq->body_len && k + 1 < sizeof body; i++)
      body[k++] = (unsigned char)rq->body[i] < 0x20 ? ' ' : rq->body[i];
    body[k] = 0;
    const char *error = NULL;
    json_t *rj = rs->status >= 400 && rs->body
                     ? json_loadb(rs->body, rs->len, 0, NULL)
                     : NULL;
    if (json_is_string(json_object_get(rj, "error")))
      error = json_string_value(json_object_get(rj, "error"));
    struct pfid_audit_rec a = {0,
                               pfid_wall(),
                               d->id,
                               d->tokens[t].name,
                               pfi_api_role_name(d->tokens[t].role),
                               rq->peer ? rq->peer : "",
                               rq->method,
                               rq->path,
                               body,
                               rs->status,
                               error};
    pfid_records_audit(d, &a);
    json_decref(rj);
  }
}

static void route(struct pfi_pfid *d, const struct pfi_http_req *rq,
                  struct pfi_http_resp *rs, int get, int mut,
                  enum pfi_api_role role) {
  (void)role;
  const char *p = rq->path;
  if (get && strcmp(p, "/metrics") == 0) {
    pthread_mutex_lock(&d->mu);
    metrics(d, rs);
    pthread_mutex_unlock(&d->mu);
    return;
  }
  if (mut && strcmp(p, "/v1/events") == 0 && rq->method[0] == 'P') {
    event_post(d, rq, rs);
    return;
  }
  if (strcmp(rq->method, "DELETE") == 0 && strncmp(p, "/v1/events/", 11) == 0) {
    event_cancel(d, p + 11, rs);
    return;
  }
  if (mut && strncmp(p, "/v1/tiers/", 10) == 0) {
    if (strcmp(rq->method, "DELETE") == 0)
      tier_delete(d, p + 10, rs);
    else if (strcmp(rq->method, "PUT") == 0)
      tier_put(d, p + 10, rq, rs);
    else
      reply_err(rs, 405, "method not allowed (PUT or DELETE)");
    return;
  }
  if (!get) {
    reply_err(rs, 404, "not found");
    return;
  }
  pthread_mutex_lock(&d->mu);
  if (strcmp(p, "/v1/status") == 0) {
    status(d, rs);
  } else if (strcmp(p, "/v1/nodes") == 0) {
    json_t *a = json_array();
    double mono = pfid_mono();
    for (size_t i = 0; i < d->n_nodes; i++)
      json_array_append_new(a, node_json(&d->node[i], mono));
    reply_json(rs, 200, a);
  } else if (strcmp(p, "/v1/jobs") == 0) {
    jobs(d, rs);
  } else if (strcmp(p, "/v1/events") == 0) {
    json_t *a = json_array();
    for (size_t i = 0; i < d->n_ev; i++)
      json_array_append_new(a, event_json(&d->ev[i]));
    reply_json(rs, 200, a);
  } else if (strcmp(p, "/v1/tiers") == 0) {
    tiers_get(d, rs);
  } else if (strcmp(p, "/v1/records") == 0) {
    const char *tbl = rq->arg(rq, "table");
    if (!tbl || strcmp(tbl, "assignments") == 0)
      records(d, rq, rs);
    else if (strcmp(tbl, "audit") == 0)
      audits(d, rq, rs);
    else
      reply_err(rs, 400, "table: expected assignments or audit");
  } else if (strcmp(p, "/v1/capacity") == 0) {
    capacity(d, rs);
  } else {
    reply_err(rs, 404, "not found");
  }
  pthread_mutex_unlock(&d->mu);
}
