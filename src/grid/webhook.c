/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The webhook the VTN posts OpenADR 3.1 notifications to: bearer token
 * checked, body bounded and decoded, accepted notifications queued for the
 * owner to act on. See include/pfi/openadr.h. */
#include "pfi/openadr.h"

#include "pfi/http.h"
#include "pfi/secret.h"

#include "grid_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define RING 64

struct pfi_oadr_listener {
  struct pfi_http *http;
  char *path, *bearer;
  struct pfi_oadr_config cfg;
  pthread_mutex_t mu;
  struct pfi_oadr_note ring[RING];
  size_t first, n; /* the queued notes: ring[first], ... (n <= RING) */
  size_t pending;  /* accepted since the last take (>= n) */
  struct pfi_oadr_listener_stats st;
  int fd[2]; /* a byte in fd[0] while notes wait */
};

int pfi_oadr_bearer_new(char out[PFI_OADR_BEARER_LEN], struct pfi_error *err) {
  unsigned char r[32];
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t k = getrandom(r + got, sizeof r - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return pfi_error_set(err, PFI_EIO, "getrandom: %s", strerror(errno));
    got += (size_t)k;
  }
  for (size_t i = 0; i < sizeof r; i++)
    snprintf(out + 2 * i, 3, "%02x", r[i]);
  memset(r, 0, sizeof r);
  return 0;
}

int pfi_oadr_bearer_file(const char *path, char out[PFI_OADR_BEARER_LEN],
                         struct pfi_error *err) {
  char tok[PFI_OADR_BEARER_LEN];
  int fd =
      open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno != EEXIST)
    return pfi_error_set(err, PFI_EIO, "%s: cannot create: %s", path,
                         strerror(errno));
  if (fd < 0) {
    char rd[4 * PFI_OADR_BEARER_LEN];
    int n = pfi_read_secret(path, rd, sizeof rd, err);
    if (n < 0)
      return n;
    if (n < 16 || n > PFI_OADR_BEARER_LEN - 1) {
      memset(rd, 0, sizeof rd);
      return pfi_error_set(err, PFI_EPARSE,
                           "%s: a bearer token of %d bytes (16 to %d)", path, n,
                           PFI_OADR_BEARER_LEN - 1);
    }
    memcpy(out, rd, (size_t)n + 1);
    memset(rd, 0, sizeof rd);
    return 0;
  }
  int rc = pfi_oadr_bearer_new(tok, err);
  size_t len = strlen(tok), done = 0;
  while (rc == 0 && done <= len) {
    const char *src = done < len ? tok + done : "\n";
    size_t want = done < len ? len - done : 1;
    ssize_t k = write(fd, src, want);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      rc = pfi_error_set(err, PFI_EIO, "%s: cannot write: %s", path,
                         strerror(errno));
    else
      done += (size_t)k;
  }
  if (close(fd) != 0 && rc == 0)
    rc = pfi_error_set(err, PFI_EIO, "%s: cannot write: %s", path,
                       strerror(errno));
  if (rc < 0) {
    unlink(path);
    memset(tok, 0, sizeof tok);
    return rc;
  }
  memcpy(out, tok, len + 1);
  memset(tok, 0, sizeof tok);
  return 0;
}

/* An RFC 7807 problem answer (the shape of OpenADR 3.1's `problem`). */
static void problem(struct pfi_http_resp *rs, int status, const char *title,
                    const char *detail) {
  /* The detail may quote the request's bytes: ASCII only, so that it is
   * always a JSON string. */
  char d[PFI_ERROR_MSG_MAX + PFI_ERROR_FILE_MAX + 64];
  size_t k = 0;
  for (; detail[k] && k + 1 < sizeof d; k++)
    d[k] = (unsigned char)detail[k] < 0x20 || (unsigned char)detail[k] > 0x7e
               ? '?'
               : detail[k];
  d[k] = 0;
  json_t *j = json_pack("{s:s,s:s,s:i,s:s}", "type", "about:blank", "title",
                        title, "status", status, "detail", d);
  rs->status = status;
  rs->type = "application/problem+json";
  rs->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
  rs->len = rs->body ? strlen(rs->body) : 0;
  json_decref(j);
}

static void count(struct pfi_oadr_listener *l, size_t *c) {
  pthread_mutex_lock(&l->mu);
  (*c)++;
  pthread_mutex_unlock(&l->mu);
}

/* Queues a note for the owner (the oldest dropped past RING), counts it in
 * *c and wakes the owner. */
static void queue(struct pfi_oadr_listener *l, const struct pfi_oadr_note *note,
                  size_t *c) {
  pthread_mutex_lock(&l->mu);
  (*c)++;
  l->pending++;
  if (l->n == RING) {
    l->first = (l->first + 1) % RING;
    l->n--;
  }
  l->ring[(l->first + l->n++) % RING] = *note;
  pthread_mutex_unlock(&l->mu);
  char one = 1;
  if (write(l->fd[1], &one, 1) < 0) {
    /* full (EAGAIN): the owner is already woken */
  }
}

static void handle(void *arg, const struct pfi_http_req *rq,
                   struct pfi_http_resp *rs) {
  struct pfi_oadr_listener *l = arg;
  size_t pl = strlen(l->path);
  if (!strcmp(rq->method, "GET") && !strncmp(rq->path, l->path, pl) &&
      !strcmp(rq->path + pl, l->path[pl - 1] == '/' ? "echo" : "/echo")) {
    /* The callback check some VTNs make before they keep a subscription
     * (GET <callbackUrl>/echo?echo=VALUE, the value answered back). It
     * gives nothing away, so it needs no token. */
    const char *e = rq->arg ? rq->arg(rq, "echo") : NULL;
    size_t el = e ? strlen(e) : 0;
    if (!e || el < 1 || el > 256 ||
        strspn(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  "0123456789_.~-") != el) {
      count(l, &l->st.other);
      problem(rs, 400, "Bad Request",
              "echo: expected ?echo=VALUE, 1 to 256 letters, digits or "
              "_.~-");
      return;
    }
    count(l, &l->st.echo);
    rs->status = 200;
    rs->type = "text/plain";
    rs->body = strdup(e);
    rs->len = rs->body ? strlen(rs->body) : 0;
    return;
  }
  if (strcmp(rq->path, l->path) != 0) {
    count(l, &l->st.other);
    problem(rs, 404, "Not Found", "the notification callback is elsewhere");
    return;
  }
  if (strcmp(rq->method, "POST") != 0) {
    count(l, &l->st.other);
    problem(rs, 405, "Method Not Allowed", "notifications are POSTed");
    return;
  }
  if (!rq->auth || strncmp(rq->auth, "Bearer ", 7) != 0) {
    count(l, &l->st.unauthorized);
    problem(rs, 401, "Unauthorized",
            "expected Authorization: Bearer, the subscription's bearerToken");
    rs->www_authenticate = "Bearer";
    return;
  }
  if (!pfi_http_bearer_ok(rq->auth, l->bearer)) {
    count(l, &l->st.unauthorized);
    problem(rs, 403, "Forbidden", "not the subscription's bearerToken");
    return;
  }
  struct pfi_oadr_config cfg = l->cfg;
  int64_t now = (int64_t)time(NULL);
  cfg.horizon_s = now + (cfg.horizon_s - cfg.now_s);
  cfg.now_s = now;
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_oadr_note note;
  memset(&note, 0, sizeof note);
  int deleted = 0;
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc = pfi_oadr_decode_notification(rq->body, rq->body_len, &cfg, &tl,
                                        note.event_id, &deleted, &err);
  pfi_timeline_release(&tl);
  if (rc < 0) {
    /* Sent with our token but not understood: the VTN has news of some
     * kind, so the owner polls it now; nothing of the body is used. */
    char b[PFI_ERROR_MSG_MAX + PFI_ERROR_FILE_MAX + 64];
    memset(&note, 0, sizeof note);
    note.undecoded = 1;
    queue(l, &note, &l->st.malformed);
    problem(rs, 400, "Bad Request", pfi_error_format(&err, b, sizeof b));
    return;
  }
  note.spans = (size_t)rc;
  /* Decoded: objectType and operation are strings. */
  json_t *j = pfi__oadr_notification_load(rq->body, rq->body_len, NULL);
  snprintf(note.object_type, sizeof note.object_type, "%s",
           json_string_value(json_object_get(j, "objectType")));
  snprintf(note.operation, sizeof note.operation, "%s",
           json_string_value(json_object_get(j, "operation")));
  json_decref(j);
  queue(l, &note, &l->st.accepted);
  rs->status = 200;
  rs->body = strdup("{}");
  rs->len = rs->body ? 2 : 0;
}

int pfi_oadr_listen(const char *listen, const char *path, const char *bearer,
                    const struct pfi_oadr_config *cfg,
                    struct pfi_oadr_listener **out, struct pfi_error *err) {
  if (!path || path[0] != '/' || !bearer || !*bearer)
    return pfi_error_set(err, PFI_EINVAL,
                         "webhook: needs a path (/...) and a bearer token");
  struct pfi_oadr_listener *l = calloc(1, sizeof *l);
  if (!l)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  l->fd[0] = l->fd[1] = -1;
  pthread_mutex_init(&l->mu, NULL);
  l->cfg = *cfg;
  l->path = strdup(path);
  l->bearer = strdup(bearer);
  if (!l->path || !l->bearer) {
    pfi_oadr_listener_close(l);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  if (pipe2(l->fd, O_CLOEXEC | O_NONBLOCK) < 0) {
    int e = errno;
    pfi_oadr_listener_close(l);
    return pfi_error_set(err, PFI_EIO, "webhook: pipe: %s", strerror(e));
  }
  int rc = pfi_http_start_max(&l->http, listen, PFI_OADR_NOTIFY_BODY_MAX,
                              handle, l, err);
  if (rc < 0) {
    pfi_oadr_listener_close(l);
    return rc;
  }
  *out = l;
  return 0;
}

unsigned pfi_oadr_listener_port(const struct pfi_oadr_listener *l) {
  return pfi_http_port(l->http);
}

int pfi_oadr_listener_fd(const struct pfi_oadr_listener *l) { return l->fd[0]; }

size_t pfi_oadr_listener_take(struct pfi_oadr_listener *l,
                              struct pfi_oadr_note *out, size_t max,
                              struct pfi_oadr_listener_stats *st) {
  char b[64];
  while (read(l->fd[0], b, sizeof b) > 0) {
  }
  pthread_mutex_lock(&l->mu);
  size_t all = l->pending;
  for (size_t i = 0; i < l->n && i < max; i++)
    out[i] = l->ring[(l->first + i) % RING];
  l->first = l->n = l->pending = 0;
  if (st)
    *st = l->st;
  pthread_mutex_unlock(&l->mu);
  return all;
}

void pfi_oadr_listener_close(struct pfi_oadr_listener *l) {
  if (!l)
    return;
  pfi_http_stop(l->http); /* no handler runs after this */
  if (l->fd[0] >= 0)
    close(l->fd[0]);
  if (l->fd[1] >= 0)
    close(l->fd[1]);
  pthread_mutex_destroy(&l->mu);
  free(l->path);
  if (l->bearer)
    memset(l->bearer, 0, strlen(l->bearer));
  free(l->bearer);
  free(l);
}
