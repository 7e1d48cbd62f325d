/* SPDX-License-Identifier: GPL-3.0-or-later */
/* OpenADR 3.1 events -> power-target spans. See include/pfi/openadr.h and
 * the User Guide's section 7.3 (event and interval timing), whose rules are
 * followed here: an event's intervalPeriod gives the default start and
 * duration of its intervals; an interval without a start (or with
 * "0001-01-01") follows the previous one; "0001-01-01" at the event level
 * means now; "P9999Y" means no end; randomizeStart shifts the first start
 * (and every start that follows it) by a uniform draw in [-r, r]; a
 * payload with k values splits its interval into k equal sub-intervals;
 * event.duration cuts the event short or repeats its intervals. */
#include "pfi/openadr.h"

#include "grid_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_INTERVALS 10000
#define NOW_MARK (-62135596800LL) /* 0001-01-01T00:00:00Z in Unix seconds */

void pfi_oadr_config_init(struct pfi_oadr_config *cfg, int64_t now_s) {
  memset(cfg, 0, sizeof *cfg);
  cfg->simple_frac[0] = NAN;
  cfg->simple_frac[1] = 0.90;
  cfg->simple_frac[2] = 0.75;
  cfg->simple_frac[3] = 0.50;
  cfg->default_unit_w = 1000;
  cfg->capacity_level = PFI_LEVEL_METER;
  cfg->setpoint_level = PFI_LEVEL_METER;
  cfg->now_s = now_s;
  cfg->seed = 1;
  cfg->horizon_s = now_s + 365 * 86400LL;
}

enum kind { K_NONE, K_CAPACITY, K_SETPOINT, K_RELATIVE, K_SIMPLE };

static enum kind kind_of(const char *t) {
  if (strcmp(t, "IMPORT_CAPACITY_LIMIT") == 0)
    return K_CAPACITY;
  if (strcmp(t, "DISPATCH_SETPOINT") == 0)
    return K_SETPOINT;
  if (strcmp(t, "DISPATCH_SETPOINT_RELATIVE") == 0)
    return K_RELATIVE;
  if (strcmp(t, "SIMPLE") == 0)
    return K_SIMPLE;
  return K_NONE;
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* A uniform whole number of seconds in [-r, r], a pure function of (seed,
 * event id, interval index). */
static int64_t draw_shift(const struct pfi_oadr_config *cfg, const char *id,
                          size_t k, double r) {
  if (!(r >= 1))
    return 0;
  uint64_t u = splitmix(cfg->seed ^ hash_str(id) ^ splitmix(k + 1));
  double x = (double)(u >> 11) / 9007199254740992.0; /* [0, 1) */
  /* A delay in [0, r], never earlier: the draw moves every start and end,
   * and an earlier one would end the event before the VTN's end. */
  double d = floor(x * (floor(r) + 1));
  return (int64_t)(d < r ? d : floor(r));
}

struct ctx {
  const char *name;
  const struct pfi_oadr_config *cfg;
  struct pfi_error *err;
  char path[256];
};

static int bad(struct ctx *c, const char *fmt, const char *detail) {
  return pfi_error_set(c->err, PFI_EPARSE, "%s: %s: %s%s", c->name, c->path,
                       fmt, detail ? detail : "");
}

static int get_time(struct ctx *c, json_t *o, const char *key, int64_t *out,
                    int *present) {
  json_t *v = json_object_get(o, key);
  *present = 0;
  if (!v || json_is_null(v))
    return 0;
  size_t pl = strlen(c->path);
  snprintf(c->path + pl, sizeof c->path - pl, ".%s", key);
  if (!json_is_string(v))
    return bad(c, "expected an RFC 3339 date-time string", NULL);
  struct pfi_error e;
  pfi_error_clear(&e);
  if (pfi_time_parse_rfc3339(json_string_value(v), out, &e) < 0)
    return bad(c, "", e.msg);
  c->path[pl] = 0;
  *present = 1;
  return 0;
}

static int get_duration(struct ctx *c, json_t *o, const char *key, double *out,
                        int *forever, int *present) {
  json_t *v = json_object_get(o, key);
  *present = 0;
  *forever = 0;
  if (!v || json_is_null(v))
    return 0;
  size_t pl = strlen(c->path);
  snprintf(c->path + pl, sizeof c->path - pl, ".%s", key);
  if (!json_is_string(v))
    return bad(c, "expected an ISO 8601 duration string", NULL);
  struct pfi_error e;
  pfi_error_clear(&e);
  if (pfi_duration_parse_iso8601(json_string_value(v), out, forever, &e) < 0)
    return bad(c, "", e.msg);
  /* ISO 8601 allows "-P...", no OpenADR field means one: an interval that
   * ends before it starts, an event cut before its first interval. */
  if (*out < 0)
    return bad(c, "a negative duration: ", json_string_value(v));
  c->path[pl] = 0;
  *present = 1;
  return 0;
}

/* Watts per payload unit for `type`, from the descriptors (event's first,
 * then none -> config default). *percent for PERCENT. */
static int unit_of(struct ctx *c, json_t *descs, const char *type, double *w,
                   int *percent) {
  *w = c->cfg->default_unit_w;
  *percent = 0;
  if (!json_is_array(descs))
    return 0;
  size_t i;
  json_t *d;
  json_array_foreach(descs, i, d) {
    json_t *pt = json_object_get(d, "payloadType");
    if (!json_is_string(pt) || strcmp(json_string_value(pt), type) != 0)
      continue;
    json_t *u = json_object_get(d, "units");
    if (!u || json_is_null(u))
      return 0;
    if (!json_is_string(u))
      return bad(c, "payloadDescriptors: units must be a string", NULL);
    const char *s = json_string_value(u);
    if (strcasecmp(s, "W") == 0)
      *w = 1;
    else if (strcasecmp(s, "KW") == 0)
      *w = 1e3;
    else if (strcasecmp(s, "MW") == 0)
      *w = 1e6;
    else if (strcasecmp(s, "PERCENT") == 0)
      *percent = 1;
    else
      return bad(c,
                 "payloadDescriptors: units not a power (W, KW, MW, "
                 "PERCENT): ",
                 s);
    return 0;
  }
  return 0;
}

/* The limit of one value of a payload of kind k; *none for "no limit". */
static int limit_of(struct ctx *c, enum kind k, json_t *v, double unit_w,
                    int percent, double *limit, int *none) {
  const struct pfi_oadr_config *cfg = c->cfg;
  *none = 0;
  if (!json_is_number(v))
    return bad(c, "expected a number", NULL);
  double x = json_number_value(v);
  if (!isfinite(x))
    return bad(c, "expected a finite number", NULL);
  if (x < 0 && k != K_RELATIVE) /* a relative change is signed */
    return bad(c, "expected a finite number >= 0", NULL);
  switch (k) {
  case K_CAPACITY:
  case K_SETPOINT:
    if (percent) {
      if (!(cfg->baseline_w > 0))
        return bad(c, "a PERCENT setpoint needs the baseline", NULL);
      *limit = cfg->baseline_w * x / 100;
    } else
      *limit = x * unit_w;
    break;
  case K_RELATIVE:
    if (!(cfg->baseline_w > 0))
      return bad(c, "DISPATCH_SETPOINT_RELATIVE needs the baseline", NULL);
    /* "The relative change of consumption": negative is a decrease. */
    *limit = percent ? cfg->baseline_w * (1 + x / 100)
                     : cfg->baseline_w + x * unit_w;
    if (*limit < 0)
      *limit = 0;
    break;
  case K_SIMPLE:
    if (!json_is_integer(v) || x > 3)
      return bad(c, "SIMPLE level must be an integer 0-3", NULL);
    if (isnan(cfg->simple_frac[(int)x])) {
      *none = 1;
      return 0;
    }
    if (!(cfg->baseline_w > 0))
      return bad(c, "SIMPLE levels need the baseline", NULL);
    *limit = cfg->baseline_w * cfg->simple_frac[(int)x];
    break;
  default:
    return bad(c, "unexpected payload type", NULL);
  }
  if (!isfinite(*limit) || *limit > 1e12)
    return bad(c, "limit beyond 1 TW", NULL);
  return 0;
}

/* One event object -> spans appended to tmp. */
static int decode_event(struct ctx *c, json_t *ev, struct pfi_timeline *tmp,
                        struct pfi_oadr_stats *st) {
  const struct pfi_oadr_config *cfg = c->cfg;
  size_t base = strlen(c->path);
  if (!json_is_object(ev))
    return bad(c, "expected an event object", NULL);
  json_t *id = json_object_get(ev, "id");
  if (!json_is_string(id) || !*json_string_value(id) ||
      strlen(json_string_value(id)) >= PFI_TIMELINE_ID_MAX)
    return bad(c, "id: expected a non-empty string of < 128 bytes", NULL);
  const char *eid = json_string_value(id);
  json_t *prog = json_object_get(ev, "programID");
  if (!json_is_string(prog))
    return bad(c, "programID: expected a string", NULL);
  if (cfg->program_id && strcmp(json_string_value(prog), cfg->program_id)) {
    st->other_program++; /* not ours to act on, whatever the VTN sent */
    return 0;
  }
  int priority = 1 << 30;
  json_t *pr = json_object_get(ev, "priority");
  if (pr && !json_is_null(pr)) {
    if (!json_is_integer(pr) || json_integer_value(pr) < 0 ||
        json_integer_value(pr) > (1 << 30))
      return bad(c, "priority: expected an integer >= 0", NULL);
    priority = (int)json_integer_value(pr);
  }
  int64_t sched = 0, created = 0, t;
  int present;
  int rc;
  if ((rc = get_time(c, ev, "createdDateTime", &t, &present)) < 0)
    return rc;
  if (present)
    sched = created = t;
  if ((rc = get_time(c, ev, "modificationDateTime", &t, &present)) < 0)
    return rc;
  if (present)
    sched = t;
  /* "Now" (a start of 0001-01-01, or none) is when the VTN last wrote the
   * event, so that every poll reads the same start; the VEN's clock only
   * for an event that carries neither time. */
  int64_t now_ev = sched != 0 ? sched : cfg->now_s;
  json_t *descs = json_object_get(ev, "payloadDescriptors");
  if (descs && !json_is_null(descs) && !json_is_array(descs))
    return bad(c, "payloadDescriptors: expected an array", NULL);

  /* Event-level defaults. */
  int64_t ev_start = now_ev;
  int has_ev_start = 0, has_ev_dur = 0, ev_forever = 0;
  double ev_dur = 0, rnd = 0;
  json_t *ip = json_object_get(ev, "intervalPeriod");
  if (ip && !json_is_null(ip)) {
    if (!json_is_object(ip))
      return bad(c, "intervalPeriod: expected an object", NULL);
    snprintf(c->path + base, sizeof c->path - base, ".intervalPeriod");
    if ((rc = get_time(c, ip, "start", &t, &has_ev_start)) < 0)
      return rc;
    if (has_ev_start)
      ev_start = t == NOW_MARK ? now_ev : t;
    if ((rc = get_duration(c, ip, "duration", &ev_dur, &ev_forever,
                           &has_ev_dur)) < 0)
      return rc;
    int hr, fr;
    if ((rc = get_duration(c, ip, "randomizeStart", &rnd, &fr, &hr)) < 0)
      return rc;
    if (rnd > 86400)
      return bad(c, "randomizeStart: more than a day", NULL);
    c->path[base] = 0;
  }
  double evd = 0;
  int has_evd = 0, evd_forever = 0;
  if ((rc = get_duration(c, ev, "duration", &evd, &evd_forever, &has_evd)) < 0)
    return rc;
  json_t *ivs = json_object_get(ev, "intervals");
  if (!ivs || json_is_null(ivs))
    return 0;
  if (!json_is_array(ivs))
    return bad(c, "intervals: expected an array", NULL);
  if (json_array_size(ivs) > MAX_INTERVALS)
    return bad(c, "intervals: more than 10,000", NULL);

  int64_t shift = draw_shift(cfg, eid, 0, rnd);
  int64_t cursor = ev_start + shift, first_start = cursor;
  size_t first_span = tmp->n;
  size_t nspan = 0;
  size_t i;
  json_t *iv;
  json_array_foreach(ivs, i, iv) {
    snprintf(c->path + base, sizeof c->path - base, ".intervals[%zu]", i);
    size_t ib = strlen(c->path);
    if (!json_is_object(iv))
      return bad(c, "expected an interval object", NULL);
    json_t *iid = json_object_get(iv, "id");
    if (!json_is_integer(iid))
      return bad(c, "id: expected an integer", NULL);
    int64_t start = cursor;
    double dur = ev_dur;
    int has_dur = has_ev_dur, iforever = ev_forever;
    json_t *iip = json_object_get(iv, "intervalPeriod");
    if (iip && !json_is_null(iip)) {
      if (!json_is_object(iip))
        return bad(c, "intervalPeriod: expected an object", NULL);
      strcat(c->path, ".intervalPeriod");
      int hs, hd, hr, fr, fd;
      double d2, r2;
      if ((rc = get_time(c, iip, "start", &t, &hs)) < 0 ||
          (rc = get_duration(c, iip, "duration", &d2, &fd, &hd)) < 0 ||
          (rc = get_duration(c, iip, "randomizeStart", &r2, &fr, &hr)) < 0)
        return rc;
      if (hr) {
        if (r2 > 86400)
          return bad(c, "randomizeStart: more than a day", NULL);
        shift = draw_shift(cfg, eid, i + 1, r2);
      }
      if (hs && t != NOW_MARK)
        start = t + shift;
      else if (hs && i == 0)
        start = has_ev_start ? ev_start + shift : now_ev + shift;
      if (hd) {
        dur = d2;
        has_dur = 1;
        iforever = fd;
      }
      c->path[ib] = 0;
    }
    if (i == 0)
      first_start = start;
    if (!has_dur)
      return bad(c,
                 "no duration (neither the interval nor the event "
                 "gives one)",
                 NULL);
    if (!(dur > 0) && !iforever) {
      cursor = start;
      continue; /* an empty interval: a cancelled event looks like this */
    }
    int64_t end = iforever || start + dur > (double)PFI_TIME_FOREVER
                      ? PFI_TIME_FOREVER
                      : start + (int64_t)ceil(dur);
    cursor = end;
    json_t *pls = json_object_get(iv, "payloads");
    if (!json_is_array(pls))
      return bad(c, "payloads: expected an array", NULL);
    size_t j;
    json_t *pl;
    json_array_foreach(pls, j, pl) {
      snprintf(c->path + ib, sizeof c->path - ib, ".payloads[%zu]", j);
      size_t pb = strlen(c->path);
      json_t *ty = json_object_get(pl, "type");
      if (!json_is_object(pl) || !json_is_string(ty))
        return bad(c, "expected a valuesMap with a string type", NULL);
      enum kind k = kind_of(json_string_value(ty));
      if (k == K_NONE) {
        st->ignored_types++;
        continue;
      }
      json_t *vals = json_object_get(pl, "values");
      if (!json_is_array(vals) || json_array_size(vals) == 0)
        return bad(c, "values: expected a non-empty array", NULL);
      size_t nv = json_array_size(vals);
      if (nv > MAX_INTERVALS)
        return bad(c, "values: more than 10,000", NULL);
      double unit_w;
      int percent;
      if ((rc = unit_of(c, descs, json_string_value(ty), &unit_w, &percent)) <
          0)
        return rc;
      if (percent && k == K_SIMPLE)
        return bad(c, "SIMPLE takes no units", NULL);
      for (size_t m = 0; m < nv; m++) {
        snprintf(c->path + pb, sizeof c->path - pb, ".values[%zu]", m);
        double limit;
        int none;
        if ((rc = limit_of(c, k, json_array_get(vals, m), unit_w, percent,
                           &limit, &none)) < 0)
          return rc;
        struct pfi_target_span s;
        memset(&s, 0, sizeof s);
        if (end == PFI_TIME_FOREVER) {
          if (nv > 1)
            return bad(c, "several values in an interval without end", NULL);
          s.start_s = start;
          s.end_s = end;
        } else {
          s.start_s = start + (int64_t)((end - start) * (double)m / nv);
          s.end_s = start + (int64_t)((end - start) * (double)(m + 1) / nv);
        }
        if (none || s.end_s <= s.start_s)
          continue;
        s.limit_w = limit;
        s.level = k == K_CAPACITY ? cfg->capacity_level : cfg->setpoint_level;
        s.source = PFI_SRC_OPENADR;
        s.priority = priority;
        s.scheduled_s = sched;
        s.created_s = created;
        snprintf(s.event, sizeof s.event, "%s", eid);
        snprintf(s.kind, sizeof s.kind, "%s", json_string_value(ty));
        if ((rc = pfi_timeline_add(tmp, &s, c->err)) < 0)
          return rc;
        nspan++;
      }
      c->path[pb] = 0;
    }
    c->path[ib] = 0;
  }
  /* event.duration: cut the lifespan, or repeat the intervals. */
  if (has_evd && nspan > 0) {
    int64_t life_end = evd_forever || first_start + evd > cfg->horizon_s
                           ? cfg->horizon_s
                           : first_start + (int64_t)evd;
    int64_t period = cursor - first_start;
    size_t n0 = tmp->n;
    for (int64_t off = period; period > 0 && first_start + off < life_end;
         off += period)
      for (size_t q = first_span; q < n0; q++) {
        struct pfi_target_span s = tmp->spans[q];
        if (s.end_s == PFI_TIME_FOREVER)
          break;
        s.start_s += off;
        s.end_s += off;
        if (s.start_s >= life_end)
          break;
        if ((rc = pfi_timeline_add(tmp, &s, c->err)) < 0)
          return rc;
        if (tmp->n - first_span > MAX_INTERVALS)
          return bad(c, "duration: repeats into more than 10,000 spans", NULL);
      }
    size_t w = first_span;
    for (size_t q = first_span; q < tmp->n; q++) {
      struct pfi_target_span s = tmp->spans[q];
      if (s.start_s >= life_end)
        continue;
      if (s.end_s > life_end)
        s.end_s = life_end;
      tmp->spans[w++] = s;
    }
    tmp->n = w;
  }
  /* Past spans cannot be acted on; the future is cut at the horizon. */
  size_t w = first_span, kept_any = 0;
  for (size_t q = first_span; q < tmp->n; q++) {
    struct pfi_target_span s = tmp->spans[q];
    if (s.end_s <= cfg->now_s || s.start_s >= cfg->horizon_s)
      continue;
    if (s.end_s > cfg->horizon_s)
      s.end_s = cfg->horizon_s;
    tmp->spans[w++] = s;
    kept_any = 1;
  }
  tmp->n = w;
  if (!kept_any && nspan > 0)
    st->expired++;
  c->path[base] = 0;
  return 0;
}

static int decode_root(const char *name, json_t *root, int single,
                       const struct pfi_oadr_config *cfg,
                       struct pfi_timeline *out, struct pfi_oadr_stats *stats,
                       struct pfi_error *err) {
  struct pfi_oadr_stats st0;
  memset(&st0, 0, sizeof st0);
  struct pfi_timeline tmp;
  pfi_timeline_init(&tmp);
  struct ctx c = {.name = name, .cfg = cfg, .err = err};
  int rc = 0;
  if (single) {
    snprintf(c.path, sizeof c.path, "event");
    rc = decode_event(&c, root, &tmp, &st0);
    st0.events = 1;
  } else if (!json_is_array(root)) {
    snprintf(c.path, sizeof c.path, "events");
    rc = bad(&c, "expected an array of events", NULL);
  } else {
    size_t i;
    json_t *ev;
    json_array_foreach(root, i, ev) {
      snprintf(c.path, sizeof c.path, "events[%zu]", i);
      if ((rc = decode_event(&c, ev, &tmp, &st0)) < 0)
        break;
      st0.events++;
    }
  }
  size_t n0 = out->n;
  if (rc >= 0)
    for (size_t i = 0; i < tmp.n && rc >= 0; i++)
      rc = pfi_timeline_add(out, &tmp.spans[i], err);
  if (rc >= 0) {
    st0.spans = tmp.n;
    rc = (int)tmp.n;
    if (stats)
      *stats = st0;
  } else
    out->n = n0; /* on error nothing of this call stays appended */
  pfi_timeline_release(&tmp);
  return rc;
}

static json_t *load(const char *name, const char *json, size_t len,
                    size_t flags, struct pfi_error *err) {
  if (len > PFI_OADR_MAX_BODY) {
    pfi_error_set(err, PFI_EPARSE, "%s: more than %u bytes", name,
                  PFI_OADR_MAX_BODY);
    return NULL;
  }
  json_error_t je;
  json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | flags, &je);
  if (!root)
    pfi_error_setloc(err, PFI_EPARSE, name, je.line > 0 ? je.line : 1,
                     je.column > 0 ? je.column : 1, "JSON: %s", je.text);
  return root;
}

int pfi_oadr_decode_events(const char *name, const char *json, size_t len,
                           const struct pfi_oadr_config *cfg,
                           struct pfi_timeline *out,
                           struct pfi_oadr_stats *stats,
                           struct pfi_error *err) {
  json_t *root = load(name, json, len, 0, err);
  if (!root)
    return PFI_EPARSE;
  int rc = decode_root(name, root, 0, cfg, out, stats, err);
  json_decref(root);
  return rc;
}

/* A snake_case key in OpenADR's camelCase ("created_date_time" ->
 * "createdDateTime", "program_id" -> "programID"); 0 when `k` has no '_'
 * or does not fit. */
static int camel_key(const char *k, char *out, size_t n) {
  if (!strchr(k, '_') || k[0] == '_')
    return 0;
  size_t o = 0;
  for (const char *p = k; *p; p++) {
    if (o + 3 > n)
      return 0;
    if (*p != '_') {
      out[o++] = *p;
      continue;
    }
    if (!p[1] || p[1] == '_')
      return 0;
    if (!strcmp(p + 1, "id")) { /* the ID suffix: programID, eventID */
      out[o++] = 'I';
      out[o++] = 'D';
      break;
    }
    p++;
    out[o++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
  }
  out[o] = 0;
  return 1;
}

/* Adds the camelCase name beside each snake_case key, at every depth
 * (a camelCase key already present wins). */
static void camel_keys(json_t *j, int depth) {
  if (depth > 64)
    return;
  if (json_is_array(j)) {
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) camel_keys(v, depth + 1);
    return;
  }
  if (!json_is_object(j))
    return;
  const char *k;
  json_t *v;
  char c[128];
  json_t *add = json_object();
  json_object_foreach(j, k, v) {
    camel_keys(v, depth + 1);
    if (add && camel_key(k, c, sizeof c) && !json_object_get(j, c))
      json_object_set(add, c, v);
  }
  json_object_update_missing(j, add);
  json_decref(add);
}

json_t *pfi__oadr_notification_load(const char *json, size_t len,
                                    struct pfi_error *err) {
  json_t *root = load("notification", json, len, JSON_DECODE_ANY, err);
  if (json_is_string(root)) {
    /* A notification sent as a JSON string holding its JSON. */
    json_t *in = load("notification (the string's JSON)",
                      json_string_value(root), json_string_length(root), 0, err);
    json_decref(root);
    root = in;
  }
  camel_keys(root, 0);
  return root;
}

int pfi_oadr_decode_notification(const char *json, size_t len,
                                 const struct pfi_oadr_config *cfg,
                                 struct pfi_timeline *out, char *event_id,
                                 int *deleted, struct pfi_error *err) {
  *deleted = 0;
  event_id[0] = 0;
  json_t *root = pfi__oadr_notification_load(json, len, err);
  if (!root)
    return PFI_EPARSE;
  int rc = 0;
  json_t *ot = json_object_get(root, "objectType");
  json_t *op = json_object_get(root, "operation");
  json_t *obj = json_object_get(root, "object");
  if (!json_is_object(root) || !json_is_string(ot) || !json_is_string(op) ||
      !json_is_object(obj)) {
    rc = pfi_error_set(err, PFI_EPARSE,
                       "notification: expected objectType, operation "
                       "(strings) and object");
    goto out;
  }
  if (strcmp(json_string_value(ot), "EVENT") != 0)
    goto out;
  const char *o = json_string_value(op);
  json_t *id = json_object_get(obj, "id");
  if (!json_is_string(id) ||
      strlen(json_string_value(id)) >= PFI_TIMELINE_ID_MAX) {
    rc = pfi_error_set(err, PFI_EPARSE,
                       "notification: object.id: expected a string");
    goto out;
  }
  if (strcmp(o, "DELETE") == 0) {
    *deleted = 1;
    snprintf(event_id, PFI_TIMELINE_ID_MAX, "%s", json_string_value(id));
  } else if (strcmp(o, "CREATE") == 0 || strcmp(o, "UPDATE") == 0) {
    rc = decode_root("notification", obj, 1, cfg, out, NULL, err);
    if (rc >= 0)
      snprintf(event_id, PFI_TIMELINE_ID_MAX, "%s", json_string_value(id));
  } else if (strcmp(o, "READ") != 0)
    rc = pfi_error_set(err, PFI_EPARSE,
                       "notification: operation '%.20s' is not CREATE, READ, "
                       "UPDATE or DELETE",
                       o);
out:
  json_decref(root);
  return rc;
}
