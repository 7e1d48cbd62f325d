/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The fleet's messages in JSON: encoders and checking decoders. */
#include "pfi/fleet.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/phase.h"
#include "pfi/store.h"

int pfi_fleet_name_ok(const char *s) {
  size_t n = 0;
  for (; s && s[n]; n++) {
    char c = s[n];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return 0;
  }
  return s && n > 0 && n < PFI_FLEET_NAME_MAX;
}

const char *pfi_agent_mode_name(enum pfi_agent_mode m) {
  switch (m) {
  case PFI_AGENT_IDLE:
    return "idle";
  case PFI_AGENT_TRACKING:
    return "tracking";
  case PFI_AGENT_HOLD:
    return "hold";
  }
  return "?";
}

static int mode_by_name(const char *s) {
  for (int m = PFI_AGENT_IDLE; m <= PFI_AGENT_HOLD; m++)
    if (strcmp(s, pfi_agent_mode_name(m)) == 0)
      return m;
  return -1;
}

/* ---- decoding helpers ---------------------------------------------------- */

static int bad(struct pfi_error *err, const char *what, const char *field,
               const char *why) {
  return pfi_error_set(err, PFI_EPARSE, "%s message: field \"%s\": %s", what,
                       field, why);
}

static int load(const char *buf, size_t len, const char *what, json_t **out,
                struct pfi_error *err) {
  if (!buf || len == 0)
    return pfi_error_set(err, PFI_EPARSE, "%s message: empty", what);
  if (len > PFI_FLEET_MSG_MAX)
    return pfi_error_set(err, PFI_EPARSE,
                         "%s message: %zu bytes, more than the %d allowed",
                         what, len, PFI_FLEET_MSG_MAX);
  /* A NUL byte ends parsing early in jansson: what follows it would go
   * unread, so a message holding one is refused whole. */
  const char *nul = memchr(buf, 0, len);
  if (nul)
    return pfi_error_set(err, PFI_EPARSE, "%s message: NUL byte at column %zu",
                         what, (size_t)(nul - buf) + 1);
  json_error_t je;
  json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    return pfi_error_set(err, PFI_EPARSE, "%s message: column %d: %s", what,
                         je.column, je.text);
  if (!json_is_object(j)) {
    json_decref(j);
    return pfi_error_set(err, PFI_EPARSE, "%s message: not a JSON object",
                         what);
  }
  json_t *v = json_object_get(j, "v");
  if (!json_is_integer(v) || json_integer_value(v) != PFI_FLEET_VERSION) {
    json_decref(j);
    return bad(err, what, "v", "missing or not version 1");
  }
  *out = j;
  return 0;
}

/* A finite number in [lo, hi]; `need`: absent is an error, else *x keeps
 * its value. */
static int get_num(json_t *o, const char *k, double lo, double hi, int need,
                   double *x, const char *what, struct pfi_error *err) {
  json_t *v = json_object_get(o, k);
  if (!v)
    return need ? bad(err, what, k, "missing") : 0;
  if (!json_is_number(v))
    return bad(err, what, k, "not a number");
  double d = json_number_value(v);
  if (!isfinite(d) || d < lo || d > hi) {
    char why[96];
    snprintf(why, sizeof why, "%g is outside %g..%g", d, lo, hi);
    return bad(err, what, k, why);
  }
  *x = d;
  return 0;
}

static int get_u64(json_t *o, const char *k, uint64_t lo, int need, uint64_t *x,
                   const char *what, struct pfi_error *err) {
  json_t *v = json_object_get(o, k);
  if (!v)
    return need ? bad(err, what, k, "missing") : 0;
  /* JSON integers above 2^53 lose exactness in most peers: refused. */
  if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
      json_integer_value(v) > (json_int_t)9007199254740992LL)
    return bad(err, what, k, "not an integer in range");
  *x = (uint64_t)json_integer_value(v);
  return 0;
}

static int get_mw(json_t *v, uint32_t *x) {
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > 100000000) /* 100 kW: no GPU */
    return -1;
  *x = (uint32_t)json_integer_value(v);
  return 0;
}

/* A string field copied into buf; `name`: must be a valid name; `opt`:
 * absent or "" allowed. */
static int get_str(json_t *o, const char *k, char *buf, size_t n, int name,
                   int opt, const char *what, struct pfi_error *err) {
  json_t *v = json_object_get(o, k);
  buf[0] = 0;
  if (!v)
    return opt ? 0 : bad(err, what, k, "missing");
  if (!json_is_string(v))
    return bad(err, what, k, "not a string");
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  if (len == 0 && opt)
    return 0;
  if (len >= n || strlen(s) != len)
    return bad(err, what, k, "too long or with a NUL byte");
  if (name && !pfi_fleet_name_ok(s))
    return bad(err, what, k, "not a name of 1..63 letters, digits, _ or -");
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20)
      return bad(err, what, k, "control character");
  memcpy(buf, s, len + 1);
  return 0;
}

static int dump(json_t *j, char *buf, size_t n, struct pfi_error *err) {
  if (!j)
    return pfi_error_set(err, PFI_ENOMEM, "encoding a message");
  size_t len = json_dumpb(j, buf, n, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(j);
  if (len == 0 || len >= n || len > PFI_FLEET_MSG_MAX)
    return pfi_error_set(err, PFI_ERANGE, "message does not fit %zu bytes",
                         n < PFI_FLEET_MSG_MAX ? n : PFI_FLEET_MSG_MAX);
  buf[len] = 0;
  return (int)len;
}

/* ---- assignments --------------------------------------------------------- */

static const char AS[] = "assignment";

int pfi_fleet_assign_decode(const char *buf, size_t len,
                            struct pfi_fleet_assign *a, struct pfi_error *err) {
  memset(a, 0, sizeof *a);
  json_t *j = NULL;
  int rc = load(buf, len, AS, &j, err);
  if (rc < 0)
    return rc;
  uint64_t seq = 0;
  if ((rc = get_str(j, "node", a->node, sizeof a->node, 1, 0, AS, err)) ||
      (rc = get_u64(j, "seq", 1, 1, &seq, AS, err)) ||
      (rc = get_str(j, "leader", a->leader, sizeof a->leader, 1, 0, AS, err)) ||
      (rc = get_num(j, "issued", 0, 1e11, 1, &a->issued_s, AS, err)) ||
      (rc = get_num(j, "lease_s", 0.1, 3600, 1, &a->lease_s, AS, err)) ||
      (rc = get_str(j, "event", a->event, sizeof a->event, 1, 1, AS, err)) ||
      (rc = get_num(j, "event_end", 0, 1e11, 0, &a->event_end_s, AS, err)) ||
      (rc = get_str(j, "reason", a->reason, sizeof a->reason, 1, 1, AS, err)))
    goto out;
  a->seq = seq;
  if (a->event[0] && !(a->event_end_s > 0)) {
    rc = bad(err, AS, "event_end", "an event needs its end time");
    goto out;
  }
  if (!a->event[0] && a->event_end_s != 0) {
    rc = bad(err, AS, "event_end", "given without an event");
    goto out;
  }
  json_t *r = json_object_get(j, "restore");
  json_t *caps = json_object_get(j, "caps_mw");
  if (r && !json_is_boolean(r)) {
    rc = bad(err, AS, "restore", "not true or false");
    goto out;
  }
  a->restore = r && json_is_true(r);
  if (a->restore) {
    if (caps) {
      rc = bad(err, AS, "caps_mw", "given with restore");
      goto out;
    }
    goto out;
  }
  if (!json_is_array(caps) || json_array_size(caps) == 0 ||
      json_array_size(caps) > PFI_FLEET_MAX_GPUS) {
    rc = bad(err, AS, "caps_mw", "not an array of 1..64 caps");
    goto out;
  }
  a->n = (unsigned)json_array_size(caps);
  for (unsigned i = 0; i < a->n; i++)
    if (get_mw(json_array_get(caps, i), &a->cap_mw[i]) < 0 ||
        a->cap_mw[i] == 0) {
      rc = bad(err, AS, "caps_mw", "a cap is not an integer 1..1e8 mW");
      goto out;
    }
out:
  json_decref(j);
  return rc;
}

int pfi_fleet_assign_encode(const struct pfi_fleet_assign *a, char *buf,
                            size_t n, struct pfi_error *err) {
  if (!pfi_fleet_name_ok(a->node) || !pfi_fleet_name_ok(a->leader) ||
      a->seq == 0 || (a->event[0] && !pfi_fleet_name_ok(a->event)) ||
      (!a->restore && (a->n == 0 || a->n > PFI_FLEET_MAX_GPUS)) ||
      (a->reason[0] && !pfi_fleet_name_ok(a->reason)))
    return pfi_error_set(err, PFI_EINVAL, "assignment for %s: bad field",
                         a->node);
  json_t *j =
      json_pack("{si s:s s:I s:s s:f s:f}", "v", PFI_FLEET_VERSION, "node",
                a->node, "seq", (json_int_t)a->seq, "leader", a->leader,
                "issued", a->issued_s, "lease_s", a->lease_s);
  if (j && a->event[0]) {
    json_object_set_new(j, "event", json_string(a->event));
    json_object_set_new(j, "event_end", json_real(a->event_end_s));
  }
  if (j && a->reason[0])
    json_object_set_new(j, "reason", json_string(a->reason));
  if (j && a->restore)
    json_object_set_new(j, "restore", json_true());
  else if (j) {
    json_t *c = json_array();
    for (unsigned i = 0; i < a->n; i++)
      json_array_append_new(c, json_integer(a->cap_mw[i]));
    json_object_set_new(j, "caps_mw", c);
  }
  return dump(j, buf, n, err);
}

/* ---- telemetry ----------------------------------------------------------- */

static const char TE[] = "telemetry";

int pfi_fleet_node_source_ok(const char *s) {
  return strcmp(s, PFI_NODE_SOURCE_RAPL) == 0 ||
         strcmp(s, PFI_NODE_SOURCE_DCMI) == 0 ||
         strcmp(s, PFI_NODE_SOURCE_EMULATED) == 0;
}

int pfi_fleet_telemetry_decode(const char *buf, size_t len,
                               struct pfi_fleet_telemetry *t,
                               struct pfi_error *err) {
  memset(t, 0, sizeof *t);
  json_t *j = NULL;
  int rc = load(buf, len, TE, &j, err);
  if (rc < 0)
    return rc;
  char mode[16];
  double re = 0;
  if ((rc = get_str(j, "node", t->node, sizeof t->node, 1, 0, TE, err)) ||
      (rc = get_num(j, "t", 0, 1e11, 1, &t->t_s, TE, err)) ||
      (rc = get_u64(j, "seq_applied", 0, 1, &t->seq_applied, TE, err)) ||
      (rc = get_str(j, "mode", mode, sizeof mode, 0, 0, TE, err)) ||
      (rc = get_num(j, "reapplied", 0, 4e9, 0, &re, TE, err)))
    goto out;
  t->reapplied = (unsigned)re;
  int m = mode_by_name(mode);
  if (m < 0) {
    rc = bad(err, TE, "mode", "not idle, tracking or hold");
    goto out;
  }
  t->mode = m;
  json_t *g = json_object_get(j, "gpus");
  if (!json_is_array(g) || json_array_size(g) > PFI_FLEET_MAX_GPUS) {
    rc = bad(err, TE, "gpus", "not an array of at most 64 GPUs");
    goto out;
  }
  t->n = (unsigned)json_array_size(g);
  for (unsigned i = 0; i < t->n; i++) {
    json_t *o = json_array_get(g, i);
    struct pfi_fleet_gpu *u = &t->gpu[i];
    if (!json_is_object(o)) {
      rc = bad(err, TE, "gpus", "an element is not an object");
      goto out;
    }
    static const char *const kf[] = {"min_mw", "max_mw",      "default_mw",
                                     "cap_mw", "enforced_mw", "assigned_mw"};
    uint32_t *dst[] = {&u->min_mw, &u->max_mw,      &u->default_mw,
                       &u->cap_mw, &u->enforced_mw, &u->assigned_mw};
    for (int k = 0; k < 6; k++)
      if (get_mw(json_object_get(o, kf[k]), dst[k]) < 0) {
        rc = bad(err, TE, kf[k], "not an integer 0..1e8 mW");
        goto out;
      }
    if (u->min_mw > u->max_mw) {
      rc = bad(err, TE, "min_mw", "above max_mw");
      goto out;
    }
    json_t *rm = json_object_get(o, "restore_mw");
    if (rm && get_mw(rm, &u->restore_mw) < 0) {
      rc = bad(err, TE, "restore_mw", "not an integer 0..1e8 mW");
      goto out;
    }
    u->power_w = -1;
    if ((rc = get_num(o, "power_w", 0, 1e5, 0, &u->power_w, TE, err)) ||
        (rc = get_str(o, "uuid", u->uuid, sizeof u->uuid, 0, 1, TE, err)) ||
        (rc = get_str(o, "job", u->job, sizeof u->job, 1, 1, TE, err)))
      goto out;
  }
  json_t *jb = json_object_get(j, "jobs");
  if (jb && (!json_is_array(jb) || json_array_size(jb) > PFI_FLEET_MAX_JOBS)) {
    rc = bad(err, TE, "jobs", "not an array of at most 64 jobs");
    goto out;
  }
  json_t *cr = json_object_get(j, "cannot_record");
  if (cr && !json_is_boolean(cr)) {
    rc = bad(err, TE, "cannot_record", "not true or false");
    goto out;
  }
  t->cannot_record = cr && json_is_true(cr);
  t->node_w = -1;
  if ((rc = get_num(j, "node_w", 0, 1e6, 0, &t->node_w, TE, err)))
    goto out;
  if (t->node_w >= 0) {
    if ((rc = get_str(j, "node_source", t->node_source, sizeof t->node_source,
                      0, 0, TE, err)) ||
        (rc = get_num(j, "node_age_s", 0, 1e6, 0, &t->node_age_s, TE, err)))
      goto out;
    if (!pfi_fleet_node_source_ok(t->node_source)) {
      rc = bad(err, TE, "node_source", "not rapl, dcmi or emulated");
      goto out;
    }
  }
  t->n_jobs = jb ? (unsigned)json_array_size(jb) : 0;
  for (unsigned i = 0; i < t->n_jobs; i++) {
    json_t *o = json_array_get(jb, i);
    if (!json_is_object(o)) {
      rc = bad(err, TE, "jobs", "an element is not an object");
      goto out;
    }
    t->job[i].tokens_per_s = -1;
    t->job[i].max_loss = -1;
    t->job[i].phase = -1;
    t->job[i].pause_in_s = t->job[i].pause_len_s = t->job[i].end_in_s = -1;
    char phase[16] = "";
    if ((rc = get_str(o, "phase", phase, sizeof phase, 0, 1, TE, err)) ||
        (rc = get_num(o, "pause_in_s", 0, 1e7, 0, &t->job[i].pause_in_s, TE,
                      err)) ||
        (rc = get_num(o, "pause_len_s", 0, 1e7, 0, &t->job[i].pause_len_s, TE,
                      err)) ||
        (rc = get_num(o, "end_in_s", 0, 1e7, 0, &t->job[i].end_in_s, TE, err)))
      goto out;
    if (phase[0]) {
      for (int q = PFI_PHASE_WARMUP; q <= PFI_PHASE_PAUSE; q++)
        if (strcmp(phase, pfi_phase_name((enum pfi_phase)q)) == 0)
          t->job[i].phase = q;
      if (t->job[i].phase < 0) {
        rc = bad(err, TE, "phase", "not warmup, startup, training or pause");
        goto out;
      }
    }
    if ((rc = get_num(o, "max_loss", 0, 1, 0, &t->job[i].max_loss, TE, err)) ||
        (rc = get_str(o, "id", t->job[i].id, sizeof t->job[i].id, 1, 0, TE,
                      err)) ||
        (rc = get_num(o, "tokens_per_s", 0, PFI_FLEET_TPUT_MAX, 0,
                      &t->job[i].tokens_per_s, TE, err)) ||
        (rc = get_num(o, "max_event_s", 0, 1e9, 0, &t->job[i].max_event_s, TE,
                      err)) ||
        (rc =
             get_num(o, "notice_s", 0, 1e9, 0, &t->job[i].notice_s, TE, err)) ||
        (rc = get_num(o, "deadline_tput", 0, 1e15, 0, &t->job[i].deadline_tput,
                      TE, err)))
      goto out;
  }
out:
  json_decref(j);
  return rc;
}

int pfi_fleet_telemetry_encode(const struct pfi_fleet_telemetry *t, char *buf,
                               size_t n, struct pfi_error *err) {
  if (!pfi_fleet_name_ok(t->node) || t->n > PFI_FLEET_MAX_GPUS ||
      t->n_jobs > PFI_FLEET_MAX_JOBS)
    return pfi_error_set(err, PFI_EINVAL, "telemetry of %s: bad field",
                         t->node);
  json_t *j = json_pack(
      "{si s:s s:f s:I s:s s:i}", "v", PFI_FLEET_VERSION, "node", t->node, "t",
      t->t_s, "seq_applied", (json_int_t)t->seq_applied, "mode",
      pfi_agent_mode_name(t->mode), "reapplied", (int)t->reapplied);
  if (j && t->node_w >= 0 && t->node_w <= 1e6 &&
      pfi_fleet_node_source_ok(t->node_source)) {
    json_object_set_new(j, "node_w", json_real(t->node_w));
    json_object_set_new(j, "node_source", json_string(t->node_source));
    json_object_set_new(j, "node_age_s",
                        json_real(t->node_age_s > 0 && t->node_age_s <= 1e6
                                      ? t->node_age_s
                                      : 0));
  }
  if (j && t->cannot_record)
    json_object_set_new(j, "cannot_record", json_true());
  json_t *g = json_array(), *jb = json_array();
  for (unsigned i = 0; j && g && i < t->n; i++) {
    const struct pfi_fleet_gpu *u = &t->gpu[i];
    json_t *o =
        json_pack("{s:s s:i s:i s:i s:i s:i s:i}", "uuid", u->uuid, "min_mw",
                  (int)u->min_mw, "max_mw", (int)u->max_mw, "default_mw",
                  (int)u->default_mw, "cap_mw", (int)u->cap_mw, "enforced_mw",
                  (int)u->enforced_mw, "assigned_mw", (int)u->assigned_mw);
    if (o && u->power_w >= 0 && isfinite(u->power_w))
      json_object_set_new(o, "power_w", json_real(u->power_w));
    if (o && u->job[0])
      json_object_set_new(o, "job", json_string(u->job));
    if (o && u->restore_mw > 0 && u->restore_mw <= 100000000)
      json_object_set_new(o, "restore_mw", json_integer(u->restore_mw));
    json_array_append_new(g, o);
  }
  for (unsigned i = 0; j && jb && i < t->n_jobs; i++) {
    json_t *o = json_pack("{s:s}", "id", t->job[i].id);
    if (o && t->job[i].tokens_per_s >= 0 &&
        t->job[i].tokens_per_s <= PFI_FLEET_TPUT_MAX)
      json_object_set_new(o, "tokens_per_s", json_real(t->job[i].tokens_per_s));
    if (o && t->job[i].max_loss >= 0 && t->job[i].max_loss <= 1)
      json_object_set_new(o, "max_loss", json_real(t->job[i].max_loss));
    if (o && t->job[i].max_event_s > 0 && t->job[i].max_event_s <= 1e9)
      json_object_set_new(o, "max_event_s", json_real(t->job[i].max_event_s));
    if (o && t->job[i].notice_s > 0 && t->job[i].notice_s <= 1e9)
      json_object_set_new(o, "notice_s", json_real(t->job[i].notice_s));
    if (o && t->job[i].deadline_tput > 0 && t->job[i].deadline_tput <= 1e15)
      json_object_set_new(o, "deadline_tput",
                          json_real(t->job[i].deadline_tput));
    const char *ph = t->job[i].phase >= 0
                         ? pfi_phase_name((enum pfi_phase)t->job[i].phase)
                         : NULL;
    if (o && ph)
      json_object_set_new(o, "phase", json_string(ph));
    if (o && t->job[i].pause_in_s >= 0 && t->job[i].pause_in_s <= 1e7) {
      json_object_set_new(o, "pause_in_s", json_real(t->job[i].pause_in_s));
      if (t->job[i].pause_len_s > 0 && t->job[i].pause_len_s <= 1e7)
        json_object_set_new(o, "pause_len_s",
                            json_real(t->job[i].pause_len_s));
    }
    if (o && t->job[i].end_in_s >= 0 && t->job[i].end_in_s <= 1e7)
      json_object_set_new(o, "end_in_s", json_real(t->job[i].end_in_s));
    json_array_append_new(jb, o);
  }
  if (j) {
    json_object_set_new(j, "gpus", g);
    json_object_set_new(j, "jobs", jb);
  } else {
    json_decref(g);
    json_decref(jb);
  }
  return dump(j, buf, n, err);
}

/* ---- events -------------------------------------------------------------- */

static const char EV[] = "event";

int pfi_fleet_event_decode(const char *buf, size_t len,
                           struct pfi_fleet_event *e, struct pfi_error *err) {
  memset(e, 0, sizeof *e);
  json_t *j = NULL;
  int rc = load(buf, len, EV, &j, err);
  if (rc < 0)
    return rc;
  if ((rc = get_str(j, "id", e->id, sizeof e->id, 1, 0, EV, err)) ||
      (rc = get_num(j, "start", 0, 1e11, 1, &e->start_s, EV, err)) ||
      (rc = get_num(j, "end", 0, 1e11, 1, &e->end_s, EV, err)) ||
      (rc = get_num(j, "target_w", 1e-3, 1e12, 1, &e->target_w, EV, err)))
    goto out;
  if (!(e->end_s > e->start_s)) {
    rc = bad(err, EV, "end", "not after start");
    goto out;
  }
  json_t *c = json_object_get(j, "cancelled");
  if (c && !json_is_boolean(c)) {
    rc = bad(err, EV, "cancelled", "not true or false");
    goto out;
  }
  e->cancelled = c && json_is_true(c);
  if ((rc = get_num(j, "known", 0, 1e11, 0, &e->known_s, EV, err)) < 0)
    goto out;
  /* Absent in the records of an older pfid: GPU power. */
  json_t *lv = json_object_get(j, "level");
  if (lv && (!json_is_string(lv) ||
             (e->level = pfi_fleet_level_by_name(json_string_value(lv))) < 0)) {
    e->level = PFI_LEVEL_GPU;
    rc = bad(err, EV, "level", "not \"gpu\", \"node\" or \"meter\"");
  }
out:
  json_decref(j);
  return rc;
}

int pfi_fleet_event_encode(const struct pfi_fleet_event *e, char *buf, size_t n,
                           struct pfi_error *err) {
  if (!pfi_fleet_name_ok(e->id) || !(e->end_s > e->start_s) ||
      !(e->target_w > 0) || !pfi_fleet_level_name(e->level))
    return pfi_error_set(err, PFI_EINVAL, "event %s: bad field", e->id);
  json_t *j = json_pack("{si s:s s:f s:f s:f s:b}", "v", PFI_FLEET_VERSION,
                        "id", e->id, "start", e->start_s, "end", e->end_s,
                        "target_w", e->target_w, "cancelled", e->cancelled);
  if (j && e->known_s > 0)
    json_object_set_new(j, "known", json_real(e->known_s));
  /* A GPU target is written as before, so that an older pfid reading the
   * bucket reads it alike. */
  if (j && e->level != PFI_LEVEL_GPU)
    json_object_set_new(j, "level",
                        json_string(pfi_fleet_level_name(e->level)));
  return dump(j, buf, n, err);
}

const char *pfi_fleet_level_name(int level) {
  return level == PFI_LEVEL_GPU     ? "gpu"
         : level == PFI_LEVEL_NODE  ? "node"
         : level == PFI_LEVEL_METER ? "meter"
                                    : NULL;
}

int pfi_fleet_level_by_name(const char *s) {
  for (int l = PFI_LEVEL_GPU; l <= PFI_LEVEL_METER; l++)
    if (strcmp(s, pfi_fleet_level_name(l)) == 0)
      return l;
  return -1;
}

/* ---- tiers --------------------------------------------------------------- */

int pfi_fleet_tier_line(const char *line, struct pfi_fleet_job *j) {
  double v[4] = {-1, 0, 0, 0};
  static const double hi[4] = {1, 1e9, 1e9, 1e15};
  const char *p = line;
  for (int k = 0; k < 4; k++) {
    char *end = (char *)p;
    if (*p && *p != ',' && *p != '\n') {
      v[k] = strtod(p, &end);
      if (end == p || !isfinite(v[k]) || v[k] < 0 || v[k] > hi[k])
        goto bad;
    } else if (k == 0) {
      goto bad; /* the largest loss is required */
    }
    p = end;
    if (*p == ',') {
      p++;
      if (k == 3)
        goto bad;
      continue;
    }
    break;
  }
  if (*p == '\n')
    p++;
  if (*p)
    goto bad;
  j->max_loss = v[0];
  j->max_event_s = v[1];
  j->notice_s = v[2];
  j->deadline_tput = v[3];
  return 0;
bad:
  j->max_loss = -1;
  j->max_event_s = j->notice_s = j->deadline_tput = 0;
  return -1;
}

static const char TI[] = "tier";

static const struct {
  const char *name;
  double max_loss;
} named_tiers[] = {
    {"flex0", 0.0}, {"flex10", 0.1}, {"flex25", 0.25}, {"flex50", 0.5}};

const char *pfi_fleet_tier_named(size_t i, double *max_loss) {
  if (i >= sizeof named_tiers / sizeof named_tiers[0])
    return NULL;
  if (max_loss)
    *max_loss = named_tiers[i].max_loss;
  return named_tiers[i].name;
}

int pfi_fleet_tier_lookup(const char *name, double *max_loss) {
  for (size_t i = 0; i < sizeof named_tiers / sizeof named_tiers[0]; i++)
    if (name && strcmp(name, named_tiers[i].name) == 0) {
      *max_loss = named_tiers[i].max_loss;
      return 0;
    }
  return -1;
}

int pfi_fleet_tier_decode(const char *buf, size_t len,
                          struct pfi_fleet_tier *t, struct pfi_error *err) {
  memset(t, 0, sizeof *t);
  json_t *j = NULL;
  int rc = load(buf, len, TI, &j, err);
  if (rc < 0)
    return rc;
  double loss = -1;
  if ((rc = get_str(j, "job", t->job, sizeof t->job, 1, 0, TI, err)) ||
      (rc = get_num(j, "max_loss", 0, 1, 1, &loss, TI, err)) ||
      (rc = get_str(j, "name", t->name, sizeof t->name, 1, 1, TI, err)) ||
      (rc = get_num(j, "max_event_s", 0, 1e9, 0, &t->max_event_s, TI, err)) ||
      (rc = get_num(j, "notice_s", 0, 1e9, 0, &t->notice_s, TI, err)) ||
      (rc =
           get_num(j, "deadline_tput", 0, 1e15, 0, &t->deadline_tput, TI, err)))
    goto out;
  t->max_loss = loss;
out:
  json_decref(j);
  return rc;
}

int pfi_fleet_tier_encode(const struct pfi_fleet_tier *t, char *buf, size_t n,
                          struct pfi_error *err) {
  if (!pfi_fleet_name_ok(t->job) || !(t->max_loss >= 0 && t->max_loss <= 1) ||
      (t->name[0] && !pfi_fleet_name_ok(t->name)))
    return pfi_error_set(err, PFI_EINVAL, "tier of %s: bad field", t->job);
  json_t *j = json_pack("{si s:s s:f}", "v", PFI_FLEET_VERSION, "job", t->job,
                        "max_loss", t->max_loss);
  if (j && t->name[0])
    json_object_set_new(j, "name", json_string(t->name));
  if (j && t->max_event_s > 0)
    json_object_set_new(j, "max_event_s", json_real(t->max_event_s));
  if (j && t->notice_s > 0)
    json_object_set_new(j, "notice_s", json_real(t->notice_s));
  if (j && t->deadline_tput > 0)
    json_object_set_new(j, "deadline_tput", json_real(t->deadline_tput));
  return dump(j, buf, n, err);
}

/* ---- the control module's state (key "ctl") ------------------------------ */

static const char CS[] = "ctl";

int pfi_fleet_ctl_state_decode(const char *buf, size_t len,
                               struct pfi_fleet_ctl_state *c,
                               struct pfi_error *err) {
  memset(c, 0, sizeof *c);
  json_t *j = NULL;
  int rc = load(buf, len, CS, &j, err);
  if (rc < 0)
    return rc;
  if ((rc = get_str(j, "event", c->event, sizeof c->event, 1, 0, CS, err)) ||
      (rc = get_num(j, "baseline_w", 0, 1e12, 1, &c->baseline_w, CS, err)) ||
      (rc = get_num(j, "t", 0, 1e11, 1, &c->t_s, CS, err)))
    goto out;
  if (!c->event[0])
    rc = bad(err, CS, "event", "empty");
  else if (!(c->baseline_w > 0))
    rc = bad(err, CS, "baseline_w", "not positive");
out:
  json_decref(j);
  return rc;
}

int pfi_fleet_ctl_state_encode(const struct pfi_fleet_ctl_state *c,
                               char *buf, size_t n, struct pfi_error *err) {
  if (!pfi_fleet_name_ok(c->event) ||
      !(c->baseline_w > 0 && c->baseline_w <= 1e12) ||
      !(c->t_s >= 0 && c->t_s <= 1e11))
    return pfi_error_set(err, PFI_EINVAL, "control state: bad field");
  json_t *j = json_pack("{si s:s s:f s:f}", "v", PFI_FLEET_VERSION, "event",
                        c->event, "baseline_w", c->baseline_w, "t", c->t_s);
  return dump(j, buf, n, err);
}
