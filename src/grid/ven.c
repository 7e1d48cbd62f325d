/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The OpenADR 3.1 VEN client over libcurl: OAuth2 client credentials,
 * programs, events, reports, subscriptions. See include/pfi/openadr.h. */
#include "pfi/openadr.h"
#include "pfi/http.h"

#include "grid_int.h"
#include "../base/curl_dl.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct pfi_ven {
  char *base, *client_id, *secret, *program, *ven_name;
  char *token_url; /* configured (pfi_ven_config.token_url), or NULL */
  char *cacert;    /* pfi_ven_config.cacert, or NULL */
  long timeout_ms;
  char token[4097];
  int64_t token_expiry; /* Unix s; 0 = unknown (valid until a 401) */
  char program_id[PFI_TIMELINE_ID_MAX];
  long last_status; /* of the last API answer (0: none) */
};

#define body pfi__http_body

size_t pfi__http_body_write(char *p, size_t sz, size_t n, void *ud) {
  struct pfi__http_body *b = ud;
  size_t k = sz * n;
  if (b->len + k > b->max) {
    b->overflow = 1;
    return 0;
  }
  char *nb = realloc(b->buf, b->len + k + 1);
  if (!nb)
    return 0;
  memcpy(nb + b->len, p, k);
  b->len += k;
  nb[b->len] = 0;
  b->buf = nb;
  return k;
}

static char *dup(const char *s) { return s ? strdup(s) : strdup(""); }

/* A URL's origin, "scheme://host:port" with the scheme and host in lower
 * case and the port always given (80, 443 by default), into out. 0, or -1
 * for a URL that is not http(s), has user information ('@') or no host. */
static int origin(const char *url, char *out, size_t n) {
  int https = strncasecmp(url, "https://", 8) == 0;
  if (!https && strncasecmp(url, "http://", 7) != 0)
    return -1;
  const char *h = url + (https ? 8 : 7);
  size_t hl = strcspn(h, "/?#");
  if (hl == 0 || memchr(h, '@', hl) || memchr(h, '\\', hl))
    return -1;
  char host[300];
  if (hl >= sizeof host)
    return -1;
  for (size_t i = 0; i < hl; i++)
    host[i] = (char)((h[i] >= 'A' && h[i] <= 'Z') ? h[i] - 'A' + 'a' : h[i]);
  host[hl] = 0;
  /* The port: after the last ':' past an IPv6 literal's ']'. */
  char *rb = strrchr(host, ']'), *colon = strrchr(rb ? rb : host, ':');
  const char *port = https ? "443" : "80";
  if (colon) {
    *colon = 0;
    if (colon[1])
      port = colon + 1;
  }
  if (!host[0])
    return -1;
  snprintf(out, n, "%s://%s:%s", https ? "https" : "http", host, port);
  return 0;
}

int pfi_ven_same_origin(const char *a, const char *b) {
  char oa[400], ob[400];
  return origin(a, oa, sizeof oa) == 0 && origin(b, ob, sizeof ob) == 0 &&
         strcmp(oa, ob) == 0;
}

int pfi_ven_open(const struct pfi_ven_config *cfg, struct pfi_ven **out,
                 struct pfi_error *err) {
  if (!cfg->vtn_url || !*cfg->vtn_url || !cfg->client_id ||
      !cfg->client_secret || !cfg->program_name)
    return pfi_error_set(err, PFI_EINVAL,
                         "VEN: the VTN URL, client id, secret and program "
                         "name are required");
  if (strncmp(cfg->vtn_url, "http://", 7) != 0 &&
      strncmp(cfg->vtn_url, "https://", 8) != 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "VEN: VTN URL '%.200s' is not http:// or https://",
                         cfg->vtn_url);
  char o[400];
  if (cfg->token_url && (origin(cfg->token_url, o, sizeof o) < 0 ||
                         (strncasecmp(cfg->vtn_url, "https://", 8) == 0 &&
                          strncasecmp(cfg->token_url, "https://", 8) != 0)))
    return pfi_error_set(err, PFI_EINVAL,
                         "VEN: token URL '%.200s': expected an http(s) URL "
                         "with a host and no user information, https when "
                         "the VTN's is",
                         cfg->token_url);
  if (cfg->cacert) {
    const struct pfi_http_client_tls t = {cfg->cacert, NULL, NULL, 0};
    int rc;
    if (strncasecmp(cfg->vtn_url, "https://", 8) != 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "VEN: a CA file (--cacert) goes with an https "
                           "VTN URL, not '%.200s'",
                           cfg->vtn_url);
    if ((rc = pfi_http_client_tls_check(cfg->vtn_url, &t, err)) < 0)
      return rc;
  }
  struct pfi_ven *v = calloc(1, sizeof *v);
  if (!v)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if ((cfg->token_url && !(v->token_url = strdup(cfg->token_url))) ||
      (cfg->cacert && !(v->cacert = strdup(cfg->cacert)))) {
    free(v->token_url);
    free(v);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  v->base = dup(cfg->vtn_url);
  v->client_id = dup(cfg->client_id);
  v->secret = dup(cfg->client_secret);
  v->program = dup(cfg->program_name);
  v->ven_name = dup(cfg->ven_name ? cfg->ven_name : "pfid");
  v->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
  if (!v->base || !v->client_id || !v->secret || !v->program || !v->ven_name) {
    pfi_ven_close(v);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  size_t bl = strlen(v->base);
  while (bl > 0 && v->base[bl - 1] == '/')
    v->base[--bl] = 0;
  *out = v;
  return 0;
}

void pfi_ven_close(struct pfi_ven *v) {
  if (!v)
    return;
  free(v->base);
  free(v->token_url);
  free(v->cacert);
  free(v->client_id);
  if (v->secret)
    memset(v->secret, 0, strlen(v->secret));
  free(v->secret);
  free(v->program);
  free(v->ven_name);
  memset(v->token, 0, sizeof v->token);
  free(v);
}

const char *pfi_ven_program_id(const struct pfi_ven *v) {
  return v->program_id;
}

/* One HTTP exchange. `url` is absolute. Returns 0 with *status set, or
 * PFI_EIO / PFI_ENOMEM. The caller frees b->buf. */
static int http(struct pfi_ven *v, const char *method, const char *url,
                const char *body, const char *ctype, int auth, long *status,
                struct body *b, struct pfi_error *err) {
  CURL *c = pfi__curl_easy_init();
  if (!c)
    return pfi__curl_error()
               ? pfi_error_set(err, PFI_EIO, "VEN: %s", pfi__curl_error())
               : pfi_error_set(err, PFI_ENOMEM, "VEN: cannot start a request");
  memset(b, 0, sizeof *b);
  b->max = PFI_OADR_MAX_BODY;
  struct curl_slist *h = NULL;
  char hdr[4200];
  int rc = 0;
  if (ctype) {
    snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype);
    h = pfi__curl_slist_append(h, hdr);
  }
  h = pfi__curl_slist_append(h, "Accept: application/json");
  if (auth) {
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", v->token);
    h = pfi__curl_slist_append(h, hdr);
  }
  pfi__curl_setopt_ptr(c, CURLOPT_URL, url);
  pfi__curl_setopt_ptr(c, CURLOPT_CUSTOMREQUEST, method);
  pfi__curl_setopt_ptr(c, CURLOPT_HTTPHEADER, h);
  pfi__curl_setopt_long(c, CURLOPT_TIMEOUT_MS, (long)v->timeout_ms);
  pfi__curl_setopt_long(c, CURLOPT_CONNECTTIMEOUT_MS, (long)v->timeout_ms);
  pfi__curl_setopt_long(c, CURLOPT_NOSIGNAL, 1L);
  pfi__curl_setopt_write(c, CURLOPT_WRITEFUNCTION, pfi__http_body_write);
  pfi__curl_setopt_ptr(c, CURLOPT_WRITEDATA, b);
  pfi__curl_setopt_ptr(c, CURLOPT_PROTOCOLS_STR, "http,https");
  pfi__curl_setopt_long(c, CURLOPT_FOLLOWLOCATION, 0L);
  if (v->cacert) {
    /* Only this CA: not the system's as well. */
    pfi__curl_setopt_ptr(c, CURLOPT_CAINFO, v->cacert);
    pfi__curl_setopt_ptr(c, CURLOPT_CAPATH, NULL);
  }
  if (body)
    pfi__curl_setopt_ptr(c, CURLOPT_POSTFIELDS, body);
  CURLcode cr = pfi__curl_easy_perform(c);
  if (cr != CURLE_OK) {
    rc = pfi_error_set(err, PFI_EIO, "VEN: %s %.300s: %s", method, url,
                       b->overflow ? "answer larger than 8 MiB"
                                   : pfi__curl_easy_strerror(cr));
    free(b->buf);
    b->buf = NULL;
  } else
    pfi__curl_getinfo_long(c, CURLINFO_RESPONSE_CODE, status);
  pfi__curl_slist_free_all(h);
  pfi__curl_easy_cleanup(c);
  return rc;
}

static int fetch_token(struct pfi_ven *v, struct pfi_error *err) {
  char url[9000], token_url[8100];
  long st = 0;
  struct body b;
  memset(&b, 0, sizeof b);
  snprintf(url, sizeof url, "%s/auth/server", v->base);
  snprintf(token_url, sizeof token_url, "%s/auth/token", v->base);
  /* The client secret goes only to the configured token URL or to one on
   * the VTN's own origin (scheme, host and port: no other host, no
   * https -> http): a VTN, or whoever answers for it, naming another
   * server would otherwise be handed the secret (docs/security.md). */
  if (v->token_url) {
    snprintf(token_url, sizeof token_url, "%s", v->token_url);
  } else if (http(v, "GET", url, NULL, NULL, 0, &st, &b, NULL) == 0 &&
             st == 200) {
    json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
    json_t *tu = json_object_get(j, "tokenURL");
    int rc = 0;
    if (json_is_string(tu)) {
      const char *s = json_string_value(tu);
      if (strncasecmp(s, "http://", 7) == 0 ||
          strncasecmp(s, "https://", 8) == 0) {
        if (pfi_ven_same_origin(s, v->base))
          snprintf(token_url, sizeof token_url, "%s", s);
        else
          rc = pfi_error_set(err, PFI_ENOPERM,
                             "VEN: the VTN's /auth/server names the token "
                             "URL %.300s, not on the VTN's origin (%.300s): "
                             "the client secret is not sent there (give "
                             "--token-url to trust it)",
                             s, v->base);
      } else if (s[0] == '/' && s[1] != '/') { /* on the VTN's origin */
        const char *p = strstr(v->base, "://");
        const char *slash = p ? strchr(p + 3, '/') : NULL;
        int ol = slash ? (int)(slash - v->base) : (int)strlen(v->base);
        snprintf(token_url, sizeof token_url, "%.*s%s", ol, v->base, s);
      }
    }
    json_decref(j);
    if (rc < 0) {
      free(b.buf);
      return rc;
    }
  }
  free(b.buf);
  CURL *esc = pfi__curl_easy_init();
  if (!esc)
    return pfi__curl_error()
               ? pfi_error_set(err, PFI_EIO, "VEN: %s", pfi__curl_error())
               : pfi_error_set(err, PFI_ENOMEM, "out of memory");
  char *id = pfi__curl_easy_escape(esc, v->client_id, 0);
  char *sec = pfi__curl_easy_escape(esc, v->secret, 0);
  char *form = NULL;
  int rc = 0;
  if (!id || !sec ||
      asprintf(&form,
               "grant_type=client_credentials&client_id=%s&"
               "client_secret=%s",
               id, sec) < 0) {
    form = NULL;
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  pfi__curl_free(id);
  pfi__curl_free(sec);
  pfi__curl_easy_cleanup(esc);
  if (rc < 0)
    return rc;
  rc = http(v, "POST", token_url, form, "application/x-www-form-urlencoded", 0,
            &st, &b, err);
  memset(form, 0, strlen(form));
  free(form);
  if (rc < 0)
    return rc;
  if (st == 400 || st == 401 || st == 403) {
    free(b.buf);
    return pfi_error_set(err, PFI_ENOPERM,
                         "VEN: token endpoint %.300s refused the client "
                         "credentials (HTTP %ld)",
                         token_url, st);
  }
  if (st != 200) {
    free(b.buf);
    return pfi_error_set(err, PFI_EIO, "VEN: token endpoint %.300s: HTTP %ld",
                         token_url, st);
  }
  json_error_t je;
  json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, &je);
  free(b.buf);
  json_t *at = json_object_get(j, "access_token");
  json_t *tt = json_object_get(j, "token_type");
  json_t *ex = json_object_get(j, "expires_in");
  if (!json_is_string(at) || !*json_string_value(at) ||
      strlen(json_string_value(at)) > 4096 || !json_is_string(tt) ||
      strcasecmp(json_string_value(tt), "Bearer") != 0 ||
      (ex && !json_is_null(ex) && !json_is_integer(ex))) {
    json_decref(j);
    return pfi_error_set(err, PFI_EPARSE,
                         "VEN: token answer: expected access_token (string), "
                         "token_type Bearer and an integer expires_in");
  }
  snprintf(v->token, sizeof v->token, "%s", json_string_value(at));
  v->token_expiry = 0;
  if (json_is_integer(ex)) {
    json_int_t s = json_integer_value(ex);
    v->token_expiry = (int64_t)time(NULL) + (s > 0 ? s : 0);
  }
  json_decref(j);
  return 0;
}

/* Fetches a token when none is held or the one held expires within 30 s. */
static int ensure_token(struct pfi_ven *v, struct pfi_error *err) {
  int64_t now = (int64_t)time(NULL);
  if (!v->token[0] || (v->token_expiry && v->token_expiry - 30 <= now))
    return fetch_token(v, err);
  return 0;
}

/* A request to the VTN's API with the token; a 401 or 403 fetches a new
 * token and tries once more (some VTNs answer an unknown or expired token
 * 403, and give tokens no expires_in: such a token is held until refused).
 * Non-2xx answers are PFI_EIO naming path and status. */
static int api(struct pfi_ven *v, const char *method, const char *path,
               const char *body, struct body *b, struct pfi_error *err) {
  char url[9000];
  snprintf(url, sizeof url, "%s%s", v->base, path);
  for (int attempt = 0; attempt < 2; attempt++) {
    int rc = ensure_token(v, err);
    if (rc < 0)
      return rc;
    long st = 0;
    v->last_status = 0;
    rc = http(v, method, url, body, body ? "application/json" : NULL, 1, &st,
              b, err);
    if (rc < 0)
      return rc;
    v->last_status = st;
    if ((st == 401 || st == 403) && attempt == 0) {
      free(b->buf);
      b->buf = NULL;
      v->token[0] = 0;
      continue;
    }
    if (st == 401 || st == 403) {
      free(b->buf);
      b->buf = NULL;
      return pfi_error_set(err, PFI_ENOPERM, "VEN: %s %s: HTTP %ld (%s)",
                           method, path, st,
                           st == 401 ? "token refused" : "forbidden");
    }
    if (st < 200 || st > 299) {
      free(b->buf);
      b->buf = NULL;
      return pfi_error_set(err, PFI_EIO, "VEN: %s %s: HTTP %ld", method, path,
                           st);
    }
    return 0;
  }
  return pfi_error_set(err, PFI_ENOPERM, "VEN: %s %s: token refused", method,
                       path);
}

static int find_program(struct pfi_ven *v, struct pfi_error *err) {
  for (int skip = 0; skip < 100000; skip += 50) {
    char path[128];
    snprintf(path, sizeof path, "/programs?skip=%d&limit=50", skip);
    struct body b;
    int rc = api(v, "GET", path, NULL, &b, err);
    if (rc < 0)
      return rc;
    json_error_t je;
    json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, &je);
    free(b.buf);
    if (!json_is_array(j)) {
      json_decref(j);
      return pfi_error_set(err, PFI_EPARSE,
                           "VEN: GET /programs: expected an array of "
                           "programs");
    }
    size_t i, n = json_array_size(j);
    json_t *p;
    json_array_foreach(j, i, p) {
      json_t *nm = json_object_get(p, "programName");
      json_t *id = json_object_get(p, "id");
      if (json_is_string(nm) &&
          strcmp(json_string_value(nm), v->program) == 0) {
        if (!json_is_string(id) ||
            strlen(json_string_value(id)) >= sizeof v->program_id) {
          json_decref(j);
          return pfi_error_set(err, PFI_EPARSE,
                               "VEN: GET /programs: programs[%zu].id: "
                               "expected a string",
                               i);
        }
        snprintf(v->program_id, sizeof v->program_id, "%s",
                 json_string_value(id));
        json_decref(j);
        return 0;
      }
    }
    json_decref(j);
    if (n < 50)
      break;
  }
  return pfi_error_set(err, PFI_ENOTFOUND, "VEN: the VTN has no program '%s'",
                       v->program);
}

int pfi_ven_poll(struct pfi_ven *v, const struct pfi_oadr_config *cfg,
                 struct pfi_timeline *out, struct pfi_oadr_stats *stats,
                 struct pfi_error *err) {
  int rc = find_program(v, err);
  if (rc < 0)
    return rc;
  struct pfi_timeline tmp;
  pfi_timeline_init(&tmp);
  struct pfi_oadr_stats all;
  memset(&all, 0, sizeof all);
  CURL *esc = pfi__curl_easy_init();
  char *pid = esc ? pfi__curl_easy_escape(esc, v->program_id, 0) : NULL;
  if (!pid) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (int skip = 0; skip < 100000; skip += 50) {
    char path[512];
    snprintf(path, sizeof path, "/events?programID=%s&skip=%d&limit=50", pid,
             skip);
    struct body b;
    if ((rc = api(v, "GET", path, NULL, &b, err)) < 0)
      goto out;
    json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
    size_t n = json_array_size(j);
    json_decref(j);
    struct pfi_oadr_stats st;
    char name[600];
    snprintf(name, sizeof name, "GET %s", path);
    /* Only our program's events, whatever the VTN's filter did. */
    struct pfi_oadr_config pc = *cfg;
    pc.program_id = v->program_id;
    rc = pfi_oadr_decode_events(name, b.buf ? b.buf : "", b.len, &pc, &tmp, &st,
                                err);
    free(b.buf);
    if (rc < 0)
      goto out;
    all.events += st.events;
    all.spans += st.spans;
    all.ignored_types += st.ignored_types;
    all.expired += st.expired;
    all.other_program += st.other_program;
    if (n < 50)
      break;
  }
  {
    size_t n0 = out->n;
    for (size_t i = 0; i < tmp.n; i++)
      if ((rc = pfi_timeline_add(out, &tmp.spans[i], err)) < 0) {
        out->n = n0;
        goto out;
      }
  }
  if (stats)
    *stats = all;
  rc = (int)tmp.n;
out:
  pfi__curl_free(pid);
  if (esc)
    pfi__curl_easy_cleanup(esc);
  pfi_timeline_release(&tmp);
  return rc;
}

int pfi_ven_report_json(const struct pfi_ven_report *r, const char *ven_name,
                        const char *program_id, char **out,
                        struct pfi_error *err) {
  if (!r->event_id || !*r->event_id || r->nvalues == 0 ||
      !(r->duration_s >= 0) || !isfinite(r->duration_s))
    return pfi_error_set(err, PFI_EINVAL,
                         "report: needs an event id, a duration and values");
  for (size_t i = 0; i < r->nvalues; i++)
    if (!r->values[i].type || !isfinite(r->values[i].value))
      return pfi_error_set(err, PFI_EINVAL,
                           "report: value %zu (%s) is not finite", i,
                           r->values[i].type ? r->values[i].type : "?");
  char start[32], dur[64];
  pfi_time_format_rfc3339(r->start_s, start, sizeof start);
  snprintf(dur, sizeof dur, "PT%.0fS", r->duration_s);
  json_t *descs = json_array(), *pls = json_array();
  for (size_t i = 0; i < r->nvalues; i++) {
    const struct pfi_ven_report_value *x = &r->values[i];
    json_t *d = json_pack("{s:s,s:s}", "objectType",
                          "REPORT_PAYLOAD_DESCRIPTOR", "payloadType", x->type);
    if (x->units)
      json_object_set_new(d, "units", json_string(x->units));
    if (x->reading_type)
      json_object_set_new(d, "readingType", json_string(x->reading_type));
    json_array_append_new(descs, d);
    json_array_append_new(
        pls, json_pack("{s:s,s:[f]}", "type", x->type, "values", x->value));
  }
  json_t *res =
      json_pack("{s:s,s:{s:s,s:s},s:[{s:i,s:o}]}", "resourceName",
                r->resource_name ? r->resource_name : "AGGREGATED_REPORT",
                "intervalPeriod", "start", start, "duration", dur, "intervals",
                "id", 0, "payloads", pls);
  (void)program_id; /* 3.1 reports name the event, not the program */
  json_t *rep = json_pack("{s:s,s:s,s:o,s:[o]}", "eventID", r->event_id,
                          "clientName", ven_name ? ven_name : "pfid",
                          "payloadDescriptors", descs, "resources", res);
  if (rep && r->report_name)
    json_object_set_new(rep, "reportName", json_string(r->report_name));
  char *s =
      rep ? json_dumps(rep, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
  json_decref(rep);
  if (!s)
    return pfi_error_set(err, PFI_ENOMEM, "report: cannot build JSON");
  *out = s;
  return 0;
}

int pfi_ven_send_report(struct pfi_ven *v, const struct pfi_ven_report *r,
                        struct pfi_error *err) {
  char *body;
  int rc = pfi_ven_report_json(r, v->ven_name, v->program_id, &body, err);
  if (rc < 0)
    return rc;
  struct body b;
  rc = api(v, "POST", "/reports", body, &b, err);
  free(body);
  if (rc == 0)
    free(b.buf);
  return rc;
}

/* The body of POST (and PUT) /subscriptions for our program. */
static char *sub_json(const struct pfi_ven *v, const char *callback_url,
                      const char *bearer) {
  json_t *j = json_pack(
      "{s:s,s:s,s:[{s:[s],s:[s,s,s],s:s}]}", "clientName", v->ven_name,
      "programID", v->program_id, "objectOperations", "objects", "EVENT",
      "operations", "CREATE", "UPDATE", "DELETE", "callbackUrl", callback_url);
  if (j)
    json_object_set_new(
        json_array_get(json_object_get(j, "objectOperations"), 0),
        "bearerToken", json_string(bearer));
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  return s;
}

int pfi_ven_subscription_create(struct pfi_ven *v, const char *callback_url,
                                const char *bearer, char *id,
                                struct pfi_error *err) {
  if (id)
    id[0] = 0;
  if (!v->program_id[0]) {
    int rc = find_program(v, err);
    if (rc < 0)
      return rc;
  }
  if (!bearer) {
    /* The VEN's own OAuth2 access token, fresh for at least 30 s. */
    int rc = ensure_token(v, err);
    if (rc < 0)
      return rc;
    bearer = v->token;
  }
  char *s = sub_json(v, callback_url, bearer);
  if (!s)
    return pfi_error_set(err, PFI_ENOMEM, "subscription: cannot build JSON");
  struct body b;
  int rc = api(v, "POST", "/subscriptions", s, &b, err);
  free(s);
  if (rc < 0)
    return rc;
  json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
  free(b.buf);
  json_t *jid = json_object_get(j, "id");
  if (id && (!json_is_string(jid) || !*json_string_value(jid) ||
             strlen(json_string_value(jid)) >= PFI_TIMELINE_ID_MAX))
    rc = pfi_error_set(err, PFI_EPARSE,
                       "VEN: POST /subscriptions: id: expected a string of "
                       "1..%d bytes",
                       PFI_TIMELINE_ID_MAX - 1);
  else if (id)
    snprintf(id, PFI_TIMELINE_ID_MAX, "%s", json_string_value(jid));
  json_decref(j);
  return rc;
}

int pfi_ven_subscribe(struct pfi_ven *v, const char *callback_url,
                      const char *bearer, struct pfi_error *err) {
  return pfi_ven_subscription_create(v, callback_url, bearer, NULL, err);
}

/* The subscription's path, its id escaped. */
static int sub_path(const char *id, char *path, size_t n,
                    struct pfi_error *err) {
  CURL *esc = pfi__curl_easy_init();
  char *e = esc ? pfi__curl_easy_escape(esc, id, 0) : NULL;
  if (e)
    snprintf(path, n, "/subscriptions/%s", e);
  pfi__curl_free(e);
  if (esc)
    pfi__curl_easy_cleanup(esc);
  if (e)
    return 0;
  return pfi__curl_error()
             ? pfi_error_set(err, PFI_EIO, "VEN: %s", pfi__curl_error())
             : pfi_error_set(err, PFI_ENOMEM, "out of memory");
}

/* 1 when the VTN's subscription object sends our program's EVENT
 * notifications to callback_url with our bearer token (a VTN that does not
 * show the token is taken at its word). */
static int sub_matches(json_t *j, const struct pfi_ven *v,
                       const char *callback_url, const char *bearer) {
  json_t *pid = json_object_get(j, "programID");
  if (json_is_string(pid) && strcmp(json_string_value(pid), v->program_id))
    return 0;
  json_t *oo = json_object_get(j, "objectOperations");
  size_t i;
  json_t *o;
  json_array_foreach(oo, i, o) {
    json_t *cb = json_object_get(o, "callbackUrl");
    json_t *bt = json_object_get(o, "bearerToken");
    json_t *objs = json_object_get(o, "objects");
    int event = 0;
    size_t k;
    json_t *x;
    json_array_foreach(objs, k, x) {
      if (json_is_string(x) && !strcmp(json_string_value(x), "EVENT"))
        event = 1;
    }
    if (event && json_is_string(cb) &&
        !strcmp(json_string_value(cb), callback_url) &&
        (!json_is_string(bt) || !strcmp(json_string_value(bt), bearer)))
      return 1;
  }
  return 0;
}

/* Deletes every subscription of ours at the VTN (our clientName, our
 * program, EVENT notifications to callback_url with `bearer`: see
 * sub_matches), as GET /subscriptions lists them (filtered by programID and
 * clientName, and here again, in pages of 50). Counts them in *deleted. */
static int sub_purge(struct pfi_ven *v, const char *callback_url,
                     const char *bearer, size_t *deleted,
                     struct pfi_error *err) {
  CURL *esc = pfi__curl_easy_init();
  char *pid = esc ? pfi__curl_easy_escape(esc, v->program_id, 0) : NULL;
  char *cn = esc ? pfi__curl_easy_escape(esc, v->ven_name, 0) : NULL;
  int rc = 0;
  if (!pid || !cn)
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
  /* Pages bounded in number too: a VTN whose deletions do not take would
   * otherwise give the same page for ever. */
  for (int skip = 0, pages = 0; rc == 0 && skip < 100000 && pages < 2000;
       skip += 50, pages++) {
    char path[1200];
    snprintf(path, sizeof path,
             "/subscriptions?programID=%.500s&clientName=%.500s&skip=%d&"
             "limit=50",
             pid, cn, skip);
    struct body b;
    if ((rc = api(v, "GET", path, NULL, &b, err)) < 0)
      break;
    json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
    free(b.buf);
    if (!json_is_array(j)) {
      json_decref(j);
      rc = pfi_error_set(err, PFI_EPARSE,
                         "VEN: GET /subscriptions: expected an array");
      break;
    }
    size_t i, n = json_array_size(j), gone = 0;
    json_t *o;
    json_array_foreach(j, i, o) {
      json_t *jid = json_object_get(o, "id");
      json_t *c = json_object_get(o, "clientName");
      if (!json_is_string(jid) ||
          (json_is_string(c) && strcmp(json_string_value(c), v->ven_name)) ||
          !sub_matches(o, v, callback_url, bearer))
        continue;
      if ((rc = pfi_ven_subscription_delete(v, json_string_value(jid), err)) <
          0)
        break;
      gone++;
      if (deleted)
        (*deleted)++;
    }
    json_decref(j);
    /* Deleted ones leave the list: the next page starts that much
     * earlier. */
    skip -= (int)gone;
    if (n < 50)
      break;
  }
  pfi__curl_free(pid);
  pfi__curl_free(cn);
  if (esc)
    pfi__curl_easy_cleanup(esc);
  return rc;
}

/* Makes our one subscription: first deletes any of ours the VTN holds
 * (kept after a create it answered with an error), then creates it; when
 * the VTN answers the create with an error, deletes what it may have kept
 * all the same. So the VTN holds at most one of ours, whatever it does
 * with refused creates. */
static int sub_make(struct pfi_ven *v, char *id, const char *callback_url,
                    const char *bearer, struct pfi_error *err) {
  if (!v->program_id[0]) {
    int rc = find_program(v, err);
    if (rc < 0)
      return rc;
  }
  size_t gone = 0;
  int rc = sub_purge(v, callback_url, bearer, &gone, err);
  /* A VTN that lets the VEN list no subscriptions (a 4xx) cannot be
   * tidied: create all the same. Unreachable, or a 5xx: later. */
  if (rc < 0 && !(v->last_status >= 400 && v->last_status < 500))
    return rc;
  rc = pfi_ven_subscription_create(v, callback_url, bearer, id, err);
  if (rc < 0 && v->last_status >= 300) {
    long st = v->last_status;
    struct pfi_error e2;
    pfi_error_clear(&e2);
    sub_purge(v, callback_url, bearer, &gone, &e2);
    v->last_status = st;
  }
  return rc;
}

int pfi_ven_subscription_keep(struct pfi_ven *v, char *id,
                              const char *callback_url, const char *bearer,
                              struct pfi_error *err) {
  if (!id[0]) {
    int rc = sub_make(v, id, callback_url, bearer, err);
    return rc < 0 ? rc : 2;
  }
  char path[600];
  int rc = sub_path(id, path, sizeof path, err);
  if (rc < 0)
    return rc;
  struct body b;
  rc = api(v, "GET", path, NULL, &b, err);
  if (rc < 0 && v->last_status == 404) {
    /* Gone at the VTN (dropped, or the VTN lost its state): again. */
    char old[PFI_TIMELINE_ID_MAX];
    snprintf(old, sizeof old, "%s", id);
    rc = sub_make(v, id, callback_url, bearer, err);
    if (rc < 0)
      snprintf(id, PFI_TIMELINE_ID_MAX, "%s", old);
    return rc < 0 ? rc : 2;
  }
  if (rc < 0)
    return rc;
  json_t *j = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL);
  free(b.buf);
  int same = json_is_object(j) && sub_matches(j, v, callback_url, bearer);
  json_decref(j);
  if (same)
    return 0;
  /* Changed at the VTN: put ours back. */
  char *s = sub_json(v, callback_url, bearer);
  if (!s)
    return pfi_error_set(err, PFI_ENOMEM, "subscription: cannot build JSON");
  rc = api(v, "PUT", path, s, &b, err);
  free(s);
  if (rc < 0)
    return rc;
  free(b.buf);
  return 1;
}

int pfi_ven_subscription_delete(struct pfi_ven *v, const char *id,
                                struct pfi_error *err) {
  char path[600];
  int rc = sub_path(id, path, sizeof path, err);
  if (rc < 0)
    return rc;
  struct body b;
  rc = api(v, "DELETE", path, NULL, &b, err);
  if (rc < 0 && v->last_status == 404)
    return 0; /* already gone */
  if (rc == 0)
    free(b.buf);
  return rc;
}
