/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Grid timeline -> pfid events, and pfid's API over HTTP. See
 * include/pfi/bridge.h. */
#include "pfi/bridge.h"

#include "grid_int.h"
#include "../base/curl_dl.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pfi_bridge_to_gpu(const struct pfi_timeline *in,
                      const struct pfi_meter_config *cfg, const double *gpu_w,
                      const double *other_w, size_t nodes,
                      struct pfi_timeline *out, size_t *infeasible,
                      struct pfi_error *err) {
  if (infeasible)
    *infeasible = 0;
  for (size_t i = 0; i < in->n; i++) {
    struct pfi_target_span s = in->spans[i];
    if (s.level != PFI_LEVEL_GPU) {
      double g;
      struct pfi_error e2;
      pfi_error_clear(&e2);
      int rc = nodes == 0 ? PFI_EINFEASIBLE
                          : pfi_meter_gpu_limit(cfg, gpu_w, other_w, nodes,
                                                s.level, s.limit_w, &g, &e2);
      if (rc == PFI_EINFEASIBLE) {
        g = 1e-3;
        if (infeasible)
          (*infeasible)++;
      } else if (rc < 0) {
        *err = e2;
        return rc;
      }
      s.limit_w = g;
      s.level = PFI_LEVEL_GPU;
    }
    if (s.limit_w < 1e-3)
      s.limit_w = 1e-3;
    int rc = pfi_timeline_add(out, &s, err);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

int pfi_bridge_plan(const struct pfi_timeline *gpu, double now,
                    double overlap_s, struct pfi_bridge_event *out, size_t max,
                    struct pfi_error *err) {
  size_t n = 0;
  for (size_t i = 0; i < gpu->n; i++) {
    const struct pfi_target_span *s = &gpu->spans[i];
    if ((double)s->end_s <= now)
      continue;
    if (n == max)
      return pfi_error_set(err, PFI_ERANGE, "more than %zu target spans ahead",
                           max);
    struct pfi_bridge_event *e = &out[n++];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "oadr-%lld-%08llx", (long long)s->start_s,
             (unsigned long long)(fnv(s->event) & 0xffffffffULL));
    e->start_s = (double)s->start_s;
    e->end_s = (double)s->end_s;
    if (i + 1 < gpu->n && gpu->spans[i + 1].start_s == s->end_s)
      e->end_s += overlap_s;
    e->target_w = s->limit_w;
    e->level = s->level;
    e->known_s = s->created_s > 0 ? (double)s->created_s : 0;
    snprintf(e->source, sizeof e->source, "%s", s->event);
  }
  return (int)n;
}

void pfi_bridge_diff(const struct pfi_bridge_event *want, size_t nwant,
                     const struct pfi_bridge_event *have, size_t nhave,
                     double now, struct pfi_bridge_diff *d) {
  memset(d, 0, sizeof *d);
  for (size_t i = 0; i < nwant && d->npost < PFI_BRIDGE_MAX_EVENTS; i++) {
    int same = 0;
    for (size_t k = 0; k < nhave; k++)
      if (strcmp(have[k].id, want[i].id) == 0 && !have[k].cancelled &&
          fabs(have[k].start_s - want[i].start_s) < 1e-3 &&
          fabs(have[k].end_s - want[i].end_s) < 1e-3 &&
          have[k].level == want[i].level &&
          fabs(have[k].target_w - want[i].target_w) <=
              1e-9 * fmax(1, want[i].target_w))
        same = 1;
    if (!same)
      d->post[d->npost++] = i;
  }
  for (size_t k = 0; k < nhave && d->ncancel < PFI_BRIDGE_MAX_EVENTS; k++) {
    if (have[k].cancelled || have[k].end_s <= now ||
        strncmp(have[k].id, "oadr-", 5) != 0)
      continue;
    int wanted = 0;
    for (size_t i = 0; i < nwant; i++)
      if (strcmp(have[k].id, want[i].id) == 0)
        wanted = 1;
    if (!wanted)
      d->cancel[d->ncancel++] = k;
  }
}

/* ---- HTTP client ------------------------------------------------------- */

struct pfi_pfid_client {
  char *url, *token;
  struct pfi__curl_tls tls;
  int tls_set; /* tls loaded: by pfi_pfid_client_tls, or the first call */
};

int pfi_pfid_client_open(const char *url, const char *token,
                         struct pfi_pfid_client **out, struct pfi_error *err) {
  if (!url ||
      (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
    return pfi_error_set(err, PFI_EINVAL, "pfid URL '%.200s' is not http(s)",
                         url ? url : "");
  struct pfi_pfid_client *c = calloc(1, sizeof *c);
  if (!c || !(c->url = strdup(url)) || (token && !(c->token = strdup(token)))) {
    pfi_pfid_client_close(c);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  size_t l = strlen(c->url);
  while (l > 0 && c->url[l - 1] == '/')
    c->url[--l] = 0;
  *out = c;
  return 0;
}

int pfi_pfid_client_tls(struct pfi_pfid_client *c,
                        const struct pfi_http_client_tls *tls,
                        struct pfi_error *err) {
  struct pfi__curl_tls t;
  int rc = pfi__curl_tls_load(&t, c->url, tls, err);
  if (rc < 0)
    return rc;
  pfi__curl_tls_release(&c->tls);
  c->tls = t;
  c->tls_set = 1;
  return 0;
}

void pfi_pfid_client_close(struct pfi_pfid_client *c) {
  if (!c)
    return;
  free(c->url);
  if (c->token)
    memset(c->token, 0, strlen(c->token));
  free(c->token);
  pfi__curl_tls_release(&c->tls);
  free(c);
}

/* method path [body] -> parsed JSON answer (2xx only). */
static int call(struct pfi_pfid_client *c, const char *method, const char *path,
                const char *body, json_t **out, struct pfi_error *err) {
  char url[1024], auth[600];
  snprintf(url, sizeof url, "%s%s", c->url, path);
  /* No TLS settings given: plain http to this host only, https verified
   * against the system's CAs. */
  if (!c->tls_set) {
    int rc = pfi__curl_tls_load(&c->tls, c->url, NULL, err);
    if (rc < 0)
      return rc;
    c->tls_set = 1;
  }
  CURL *h = pfi__curl_easy_init();
  if (!h)
    return pfi__curl_error()
               ? pfi_error_set(err, PFI_EIO, "pfid: %s", pfi__curl_error())
               : pfi_error_set(err, PFI_ENOMEM, "pfid: cannot start a request");
  struct pfi__http_body b = {.max = 4u << 20};
  struct curl_slist *hd = pfi__curl_slist_append(NULL, "Accept: application/json");
  if (body)
    hd = pfi__curl_slist_append(hd, "Content-Type: application/json");
  if (c->token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %.500s", c->token);
    hd = pfi__curl_slist_append(hd, auth);
  }
  pfi__curl_setopt_ptr(h, CURLOPT_URL, url);
  pfi__curl_setopt_ptr(h, CURLOPT_CUSTOMREQUEST, method);
  pfi__curl_setopt_ptr(h, CURLOPT_HTTPHEADER, hd);
  pfi__curl_setopt_long(h, CURLOPT_TIMEOUT_MS, 5000L);
  pfi__curl_setopt_long(h, CURLOPT_NOSIGNAL, 1L);
  pfi__curl_tls_apply(h, &c->tls);
  pfi__curl_setopt_write(h, CURLOPT_WRITEFUNCTION, pfi__http_body_write);
  pfi__curl_setopt_ptr(h, CURLOPT_WRITEDATA, &b);
  if (body)
    pfi__curl_setopt_ptr(h, CURLOPT_POSTFIELDS, body);
  CURLcode cr = pfi__curl_easy_perform(h);
  long st = 0;
  int rc = 0;
  if (cr != CURLE_OK)
    rc = pfi_error_set(err, PFI_EIO, "pfid: %s %s: %s", method, path,
                       pfi__curl_easy_strerror(cr));
  else {
    pfi__curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &st);
    if (st == 401 || st == 403)
      rc = pfi_error_set(err, PFI_ENOPERM,
                         "pfid: %s %s: HTTP %ld (token or client "
                         "certificate)%s%.200s",
                         method, path, st, b.buf ? ": " : "",
                         b.buf ? b.buf : "");
    else if (st < 200 || st > 299)
      rc = pfi_error_set(err, PFI_EIO, "pfid: %s %s: HTTP %ld%s%.200s", method,
                         path, st, b.buf ? ": " : "", b.buf ? b.buf : "");
  }
  if (rc == 0 && out) {
    *out = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
    if (!*out)
      rc = pfi_error_set(err, PFI_EPARSE, "pfid: %s %s: answer is not JSON",
                         method, path);
  }
  free(b.buf);
  pfi__curl_slist_free_all(hd);
  pfi__curl_easy_cleanup(h);
  return rc;
}

int pfi_pfid_client_nodes(struct pfi_pfid_client *c,
                          const struct pfi_meter_config *cfg, double *gpu_w,
                          double *other_w, size_t max, struct pfi_error *err) {
  json_t *j;
  int rc = call(c, "GET", "/v1/nodes", NULL, &j, err);
  if (rc < 0)
    return rc;
  if (!json_is_array(j)) {
    json_decref(j);
    return pfi_error_set(err, PFI_EPARSE, "pfid: /v1/nodes: not an array");
  }
  size_t n = 0, i;
  json_t *node;
  json_array_foreach(j, i, node) {
    if (n == max)
      break;
    /* A stale node is kept with its last GPU power: it still draws at the
     * meter, and pfid's controller counts its GPUs within the target. */
    double w = 0;
    size_t k;
    json_t *g;
    json_array_foreach(json_object_get(node, "gpus"), k, g) {
      json_t *p = json_object_get(g, "power_w");
      if (json_is_number(p) && isfinite(json_number_value(p)) &&
          json_number_value(p) >= 0)
        w += json_number_value(p);
    }
    if (other_w) {
      /* A fresh measured reading's non-GPU part; a reading that is not
       * fresh no lower than the configured node_other_w (the node may draw
       * what it drew then, or more); else NAN: node_other_w. */
      json_t *np = json_object_get(node, "node_power");
      json_t *o = json_object_get(np, "other_w");
      double ow = json_is_number(o) ? json_number_value(o) : NAN;
      if (!(isfinite(ow) && ow >= 0))
        other_w[n] = NAN;
      else if (json_is_true(json_object_get(np, "fresh")) &&
               !json_is_true(json_object_get(node, "stale")))
        other_w[n] = ow;
      else
        other_w[n] = !cfg || ow < cfg->node_other_w ? NAN : ow;
    }
    gpu_w[n++] = w;
  }
  json_decref(j);
  return (int)n;
}

int pfi_pfid_client_levels(struct pfi_pfid_client *c, unsigned *mask,
                           struct pfi_error *err) {
  json_t *j;
  int rc = call(c, "GET", "/v1/status", NULL, &j, err);
  if (rc < 0)
    return rc;
  *mask = 1u << PFI_LEVEL_GPU;
  json_t *a = json_object_get(j, "levels"), *v;
  size_t i;
  json_array_foreach(a, i, v) {
    const char *ls = json_is_string(v) ? json_string_value(v) : "";
    if (!strcmp(ls, "node"))
      *mask |= 1u << PFI_LEVEL_NODE;
    else if (!strcmp(ls, "meter"))
      *mask |= 1u << PFI_LEVEL_METER;
  }
  json_decref(j);
  return 0;
}

int pfi_pfid_client_status(struct pfi_pfid_client *c, double *power_w,
                           double *target_w, struct pfi_error *err) {
  json_t *j;
  int rc = call(c, "GET", "/v1/status", NULL, &j, err);
  if (rc < 0)
    return rc;
  json_t *p = json_object_get(j, "power_w"),
         *t = json_object_get(j, "target_w");
  if (!json_is_number(p) || !json_is_number(t)) {
    json_decref(j);
    return pfi_error_set(err, PFI_EPARSE,
                         "pfid: /v1/status: expected power_w and target_w");
  }
  *power_w = json_number_value(p);
  *target_w = json_number_value(t);
  json_decref(j);
  return 0;
}

int pfi_pfid_client_capacity(struct pfi_pfid_client *c, double max_loss,
                             double *shed_w, double *shed_lo_w,
                             double *shed_hi_w, double *duration_s,
                             struct pfi_error *err) {
  json_t *j;
  int rc = call(c, "GET", "/v1/capacity", NULL, &j, err);
  if (rc < 0)
    return rc;
  json_t *q = json_object_get(j, "quotes"), *e;
  json_t *d = json_object_get(j, "duration_s");
  size_t i;
  rc = pfi_error_set(err, PFI_ENOTFOUND,
                     "pfid: /v1/capacity: no quote at %g %% loss",
                     100 * max_loss);
  json_array_foreach(q, i, e) {
    double l = json_number_value(json_object_get(e, "max_loss"));
    json_t *s = json_object_get(e, "shed_w"),
           *lo = json_object_get(e, "shed_lo_w"),
           *hi = json_object_get(e, "shed_hi_w");
    if (fabs(l - max_loss) > 1e-9 || !json_is_number(s))
      continue;
    *shed_w = json_number_value(s);
    *shed_lo_w = json_is_number(lo) ? json_number_value(lo) : *shed_w;
    *shed_hi_w = json_is_number(hi) ? json_number_value(hi) : *shed_w;
    *duration_s = json_is_number(d) ? json_number_value(d) : INFINITY;
    rc = 0;
    break;
  }
  json_decref(j);
  return rc;
}

int pfi_pfid_client_events(struct pfi_pfid_client *c,
                           struct pfi_bridge_event *out, size_t max,
                           struct pfi_error *err) {
  json_t *j;
  int rc = call(c, "GET", "/v1/events", NULL, &j, err);
  if (rc < 0)
    return rc;
  size_t n = 0, i;
  json_t *e;
  json_array_foreach(j, i, e) {
    if (n == max)
      break;
    json_t *id = json_object_get(e, "id");
    if (!json_is_string(id))
      continue;
    struct pfi_bridge_event *o = &out[n++];
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", json_string_value(id));
    o->start_s = json_number_value(json_object_get(e, "start"));
    o->end_s = json_number_value(json_object_get(e, "end"));
    o->target_w = json_number_value(json_object_get(e, "target_w"));
    o->cancelled = json_is_true(json_object_get(e, "cancelled"));
    /* An older pfid's events have none: GPU power. */
    json_t *lv = json_object_get(e, "level");
    const char *ls = json_is_string(lv) ? json_string_value(lv) : "gpu";
    o->level = !strcmp(ls, "node")    ? PFI_LEVEL_NODE
               : !strcmp(ls, "meter") ? PFI_LEVEL_METER
                                      : PFI_LEVEL_GPU;
  }
  json_decref(j);
  return (int)n;
}

int pfi_pfid_client_jobs(struct pfi_pfid_client *c, char (*name)[64],
                         double *tput, int *held, size_t max,
                         struct pfi_error *err) {
  json_t *j;
  int rc = call(c, "GET", "/v1/jobs", NULL, &j, err);
  if (rc < 0)
    return rc;
  size_t n = 0, i;
  json_t *e;
  json_array_foreach(j, i, e) {
    json_t *id = json_object_get(e, "job"),
           *t = json_object_get(e, "tokens_per_s");
    if (!json_is_string(id) || !json_is_number(t) ||
        !isfinite(json_number_value(t)) || json_number_value(t) < 0)
      continue;
    size_t k = 0;
    while (k < n && strcmp(name[k], json_string_value(id)) != 0)
      k++;
    if (k < n || n == max)
      continue;
    snprintf(name[n], 64, "%s", json_string_value(id));
    if (held) {
      json_t *h = json_object_get(e, "held");
      held[n] = json_is_boolean(h) ? json_is_true(h) : -1;
    }
    tput[n++] = json_number_value(t);
  }
  json_decref(j);
  return (int)n;
}

int pfi_pfid_client_post(struct pfi_pfid_client *c,
                         const struct pfi_bridge_event *e,
                         struct pfi_error *err) {
  char body[512], known[64] = "", level[32] = "";
  if (e->known_s > 0)
    snprintf(known, sizeof known, ",\"known\":%.3f", e->known_s);
  if (e->level == PFI_LEVEL_NODE || e->level == PFI_LEVEL_METER)
    snprintf(level, sizeof level, ",\"level\":\"%s\"",
             e->level == PFI_LEVEL_NODE ? "node" : "meter");
  snprintf(body, sizeof body,
           "{\"v\":1,\"id\":\"%s\",\"start\":%.3f,\"end\":%.3f,"
           "\"target_w\":%.17g%s%s}",
           e->id, e->start_s, e->end_s, e->target_w, known, level);
  return call(c, "POST", "/v1/events", body, NULL, err);
}

int pfi_pfid_client_cancel(struct pfi_pfid_client *c, const char *id,
                           struct pfi_error *err) {
  char path[128];
  snprintf(path, sizeof path, "/v1/events/%.100s", id);
  return call(c, "DELETE", path, NULL, NULL, err);
}

int pfi_bridge_sync(struct pfi_pfid_client *c,
                    const struct pfi_timeline *targets,
                    const struct pfi_meter_config *cfg, double now,
                    double overlap_s, size_t *posted, size_t *cancelled,
                    size_t *infeasible, struct pfi_error *err) {
  *posted = *cancelled = 0;
  double *gpu_w = malloc(PFI_BRIDGE_MAX_NODES * sizeof *gpu_w);
  double *other_w = malloc(PFI_BRIDGE_MAX_NODES * sizeof *other_w);
  struct pfi_bridge_event *want = malloc(PFI_BRIDGE_MAX_EVENTS * sizeof *want);
  struct pfi_bridge_event *have = malloc(PFI_BRIDGE_MAX_EVENTS * sizeof *have);
  struct pfi_bridge_diff *d = malloc(sizeof *d);
  struct pfi_timeline gpu, res;
  pfi_timeline_init(&gpu);
  pfi_timeline_init(&res);
  int rc;
  if (!gpu_w || !other_w || !want || !have || !d) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  /* pfid keeps the spans' one level itself (--meter-config), or the
   * bridge converts them to GPU power at the fleet's state now. */
  unsigned levels;
  int one = targets->n > 0;
  for (size_t i = 1; one && i < targets->n; i++)
    one = targets->spans[i].level == targets->spans[0].level;
  if ((rc = pfi_pfid_client_levels(c, &levels, err)) < 0)
    goto out;
  if (one && (levels >> targets->spans[0].level & 1u)) {
    if (infeasible)
      *infeasible = 0;
    if ((rc = pfi_timeline_resolve(targets, &res, err)) < 0)
      goto out;
  } else {
    int nn = pfi_pfid_client_nodes(c, cfg, gpu_w, other_w, PFI_BRIDGE_MAX_NODES,
                                   err);
    if ((rc = nn) < 0)
      goto out;
    if ((rc = pfi_bridge_to_gpu(targets, cfg, gpu_w, other_w, (size_t)nn, &gpu,
                                infeasible, err)) < 0 ||
        (rc = pfi_timeline_resolve(&gpu, &res, err)) < 0)
      goto out;
  }
  int nw =
      pfi_bridge_plan(&res, now, overlap_s, want, PFI_BRIDGE_MAX_EVENTS, err);
  if ((rc = nw) < 0)
    goto out;
  int nh = pfi_pfid_client_events(c, have, PFI_BRIDGE_MAX_EVENTS, err);
  if ((rc = nh) < 0)
    goto out;
  pfi_bridge_diff(want, (size_t)nw, have, (size_t)nh, now, d);
  /* Posts first: a changed target never leaves the fleet without one. */
  for (size_t i = 0; i < d->npost; i++) {
    if ((rc = pfi_pfid_client_post(c, &want[d->post[i]], err)) < 0)
      goto out;
    (*posted)++;
  }
  for (size_t i = 0; i < d->ncancel; i++) {
    if ((rc = pfi_pfid_client_cancel(c, have[d->cancel[i]].id, err)) < 0)
      goto out;
    (*cancelled)++;
  }
  rc = 0;
out:
  free(gpu_w);
  free(other_w);
  free(want);
  free(have);
  free(d);
  pfi_timeline_release(&gpu);
  pfi_timeline_release(&res);
  return rc;
}
