/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The fleet's transport over the NATS C client. */
#include "pfi/transport.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport_int.h"

struct pfi_nats_sub {
  natsSubscription *sub;
  /* pfi_nats_subscribe_many: asynchronous subscriptions whose messages
   * wait in one queue (a ring of qcap), under mu. */
  natsSubscription **subs;
  size_t nsubs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  natsMsg **q;
  size_t qhead, qlen, qcap;
  /* pfi_nats_subscribe_assign: the key whose republication alone is taken
   * ("$KV.pfi.assign.<node>"), and the messages dropped for not being it. */
  char kv_subject[128];
  unsigned long dropped;
};

int pfi__nats_err(struct pfi_error *err, natsStatus s, const char *what) {
  const char *last = nats_GetLastError(NULL);
  int code = s == NATS_NOT_PERMITTED || s == NATS_CONNECTION_AUTH_FAILED
                 ? PFI_ENOPERM
                 : PFI_EIO;
  return pfi_error_set(err, code, "NATS: %s: %s%s%s", what,
                       natsStatus_GetText(s), last && *last ? ": " : "",
                       last ? last : "");
}

static void on_async_error(natsConnection *nc, natsSubscription *sub,
                           natsStatus s, void *closure) {
  struct pfi_nats *p = closure;
  const char *txt = NULL;
  natsConnection_GetLastError(nc, &txt);
  pthread_mutex_lock(&p->mu);
  p->async_errs++;
  snprintf(p->async_msg, sizeof p->async_msg, "%s",
           txt && *txt ? txt : natsStatus_GetText(s));
  pthread_mutex_unlock(&p->mu);
}

/* The connection's last asynchronous callback: the client delivers them in
 * order on one thread, so every error callback before it has returned. */
static void on_closed(natsConnection *nc, void *closure) {
  (void)nc;
  struct pfi_nats *p = closure;
  pthread_mutex_lock(&p->mu);
  p->closed = 1;
  pthread_cond_broadcast(&p->closed_cv);
  pthread_mutex_unlock(&p->mu); /* p is not touched after this */
}

/* The first connection of a background connect (pfi_nats_opts.background):
 * nothing to do, the client sends the subscriptions made before it. */
static void on_connected(natsConnection *nc, void *closure) {
  (void)nc;
  (void)closure;
}

/* Whether the server refused `what` (its -ERR names it; NULL: any
 * permissions violation) since the asynchronous error count was `before`:
 * PFI_ENOPERM naming it, else 0. */
static int refused_since(struct pfi_nats *p, unsigned before, const char *what,
                         struct pfi_error *err) {
  pthread_mutex_lock(&p->mu);
  int refused = p->async_errs != before &&
                strstr(p->async_msg, "Permission") &&
                (!what || strstr(p->async_msg, what));
  char msg[256];
  snprintf(msg, sizeof msg, "%s", p->async_msg);
  pthread_mutex_unlock(&p->mu);
  /* The handler runs on another thread and may not have yet; the
   * connection's own last error is set by the reader before the PONG. */
  const char *last = NULL;
  if (!refused &&
      natsConnection_GetLastError(p->nc, &last) == NATS_NOT_PERMITTED && last &&
      (!what || strstr(last, what))) {
    refused = 1;
    snprintf(msg, sizeof msg, "%s", last);
  }
  if (refused)
    return pfi_error_set(err, PFI_ENOPERM, "NATS refused %s: %s",
                         what ? what : "the request", msg);
  return 0;
}

static unsigned async_count(struct pfi_nats *p) {
  pthread_mutex_lock(&p->mu);
  unsigned n = p->async_errs;
  pthread_mutex_unlock(&p->mu);
  return n;
}

/* Creates the bucket: file storage, p->history values per key, every
 * assign.<node> republished on pfi.assign.<node> (with the headers
 * pfi_nats_subscribe_assign checks). */
static natsStatus create_bucket(struct pfi_nats *p, kvStore **kv) {
  kvConfig cfg;
  jsRePublish rp = {"$KV." PFI_NATS_BUCKET ".assign.>", "pfi.assign.>", false};
  kvConfig_Init(&cfg);
  cfg.Bucket = PFI_NATS_BUCKET;
  cfg.History = (uint8_t)p->history;
  cfg.StorageType = js_FileStorage;
  cfg.RePublish = &rp;
  cfg.Replicas = p->replicas;
  return js_CreateKeyValue(kv, p->js, &cfg);
}


int pfi_nats_open(struct pfi_nats **out, const struct pfi_nats_opts *o,
                  struct pfi_error *err) {
  struct pfi_nats *p = calloc(1, sizeof *p);
  natsOptions *opts = NULL;
  natsStatus s;
  int rc = 0;
  char pw[256];
  if (!p)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  pthread_mutex_init(&p->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->closed_cv, &ca);
  pthread_condattr_destroy(&ca);
  p->timeout_ms = (int64_t)((o->timeout_s > 0 ? o->timeout_s : 2.0) * 1000);
  int tls;
  char name[256], remote[256];
  if ((rc = pfi__nats_check_opts(o, &tls, name, remote, sizeof name, err)) < 0)
    goto fail;
  if (o->password_file &&
      (rc = pfi_read_secret(o->password_file, pw, sizeof pw, err)) < 0)
    goto fail;
  if ((s = natsOptions_Create(&opts)) != NATS_OK) {
    rc = pfi__nats_err(err, s, "options");
    goto fail;
  }
  int nserv = pfi__nats_set_servers(opts, o->url ? o->url : "nats://127.0.0.1:4222", err);
  if (nserv < 0) {
    rc = nserv;
    goto fail;
  }
  /* Replicated only where the bucket can survive a server: three of a
   * cluster's servers hold it, a quorum of two keeps it writable. */
  p->replicas = o->replicas > 0 ? o->replicas : nserv >= 3 ? 3 : 1;
  if ((s = natsOptions_SetTimeout(opts, p->timeout_ms)) != NATS_OK ||
      (s = natsOptions_SetMaxReconnect(opts, -1)) != NATS_OK ||
      (s = natsOptions_SetReconnectWait(opts, 250)) != NATS_OK ||
      (s = natsOptions_SetPingInterval(opts, 1000)) != NATS_OK ||
      (s = natsOptions_SetMaxPingsOut(opts, 2)) != NATS_OK ||
      (s = natsOptions_SetReconnectBufSize(opts, 1 << 20)) != NATS_OK ||
      (s = natsOptions_SetErrorHandler(opts, on_async_error, p)) != NATS_OK ||
      (s = natsOptions_SetClosedCB(opts, on_closed, p)) != NATS_OK ||
      /* Asynchronous subscriptions (pfi_nats_subscribe_many) share one
       * delivery thread rather than one each. */
      (s = natsOptions_UseGlobalMessageDelivery(opts, true)) != NATS_OK ||
      (o->name && (s = natsOptions_SetName(opts, o->name)) != NATS_OK) ||
      (o->user && (s = natsOptions_SetUserInfo(opts, o->user,
                                               o->password_file ? pw : NULL)) !=
                      NATS_OK)) {
    rc = pfi__nats_err(err, s, "options");
    goto fail;
  }
  if ((rc = pfi__nats_set_security(p, opts, o, tls, name, err)) < 0)
    goto fail;
  /* One try first: a server that refuses us for good (a certificate not
   * verified, the credentials refused) is an error now, not retried for
   * ever. (libnats releases a connection that failed so without its
   * callbacks: on_closed runs only for the one kept.) */
  s = natsConnection_Connect(&p->nc, opts);
  if (s != NATS_OK && pfi__nats_refused_for_good(s, tls)) {
    rc = pfi__nats_err(err, s, o->url ? o->url : "connect");
    if ((s == NATS_PROTOCOL_ERROR || s == NATS_IO_ERROR) && tls && err) {
      char m[PFI_ERROR_MSG_MAX];
      snprintf(m, sizeof m, "%s", err->msg);
      pfi_error_set(err, rc,
                    "%.*s (the server closed the connection after TLS: it "
                    "may %s, --nats-cert)",
                    PFI_ERROR_MSG_MAX - 100, m,
                    o->tls_cert ? "refuse this client certificate"
                                : "require a client certificate");
    }
    goto fail;
  }
  /* A server that is not up yet is retried in the background: an agent
   * started before NATS must not exit. Without a connected callback the
   * client's connect blocks until the server answers (for ever here, the
   * reconnects being unlimited); with one it returns NATS_NOT_YET_CONNECTED
   * at once. */
  if (s != NATS_OK &&
      (s = natsOptions_SetRetryOnFailedConnect(
           opts, true, o->background && !o->bucket ? on_connected : NULL, p)) ==
          NATS_OK)
    s = natsConnection_Connect(&p->nc, opts);
  if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
    rc = pfi__nats_err(err, s, o->url ? o->url : "connect");
    goto fail;
  }
  if (o->bucket) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = p->timeout_ms;
    if ((s = natsConnection_JetStream(&p->js, p->nc, &jo)) != NATS_OK) {
      rc = pfi__nats_err(err, s, "JetStream");
      goto fail;
    }
    p->history = o->history >= 1 && o->history <= 64 ? o->history : 16;
    /* Binding first: creating an existing bucket with another history is
     * an error, and the first controller's configuration stands. */
    unsigned before = async_count(p);
    s = js_KeyValue(&p->kv, p->js, PFI_NATS_BUCKET);
    if (s != NATS_OK)
      s = create_bucket(p, &p->kv);
    /* Credentials without JetStream's API: the server refuses the
     * request's publish and the request times out; say which. */
    if (s != NATS_OK &&
        (rc = refused_since(p, before, "$JS.API", err)) == 0)
      rc = pfi__nats_err(err, s, "key-value bucket " PFI_NATS_BUCKET);
    if (s != NATS_OK)
      goto fail;
  }
  natsOptions_Destroy(opts);
  memset(pw, 0, sizeof pw);
  *out = p;
  return 0;
fail:
  memset(pw, 0, sizeof pw);
  natsOptions_Destroy(opts);
  pfi_nats_close(p);
  return rc;
}

void pfi_nats_close(struct pfi_nats *p) {
  if (!p)
    return;
  natsSubscription_Destroy(p->replies);
  natsInbox_Destroy(p->inbox);
  kvStore_Destroy(p->kv);
  jsCtx_Destroy(p->js);
  int done = 1;
  if (p->nc) {
    natsConnection_Close(p->nc);
    /* An error callback still queued (a refusal just before the close)
     * would read p after free: wait for the closed callback, which comes
     * after it, for at most 5 s; past that p is left allocated (a bounded
     * leak at shutdown rather than a use after free). */
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&p->mu);
    while (!p->closed &&
           pthread_cond_timedwait(&p->closed_cv, &p->mu, &dl) == 0)
      ;
    done = p->closed;
    pthread_mutex_unlock(&p->mu);
    natsConnection_Destroy(p->nc);
  }
  memset(p->seed, 0, sizeof p->seed);
  if (!done)
    return;
  pthread_cond_destroy(&p->closed_cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

int pfi_nats_connected(struct pfi_nats *p) {
  return p && p->nc &&
         natsConnection_Status(p->nc) == NATS_CONN_STATUS_CONNECTED;
}

int pfi_nats_publish(struct pfi_nats *p, const char *subject, const void *data,
                     size_t len, struct pfi_error *err) {
  /* The client's flusher thread sends it; while disconnected it waits in
   * the reconnect buffer (an error once that is full). */
  natsStatus s = natsConnection_Publish(p->nc, subject, data, (int)len);
  return s == NATS_OK ? 0 : pfi__nats_err(err, s, subject);
}

int pfi_nats_publish_checked(struct pfi_nats *p, const char *subject,
                             const void *data, size_t len,
                             struct pfi_error *err) {
  unsigned before = async_count(p);
  natsStatus s = natsConnection_Publish(p->nc, subject, data, (int)len);
  if (s != NATS_OK)
    return pfi__nats_err(err, s, subject);
  if ((s = natsConnection_FlushTimeout(p->nc, p->timeout_ms)) != NATS_OK)
    return pfi__nats_err(err, s, subject);
  /* The server answers a refused publish with -ERR before the flush's
   * PONG, so a violation is known by now. */
  return refused_since(p, before, subject, err);
}

int pfi_nats_subscribe(struct pfi_nats *p, const char *subject,
                       struct pfi_nats_sub **out, struct pfi_error *err) {
  struct pfi_nats_sub *sub = calloc(1, sizeof *sub);
  if (!sub)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  natsStatus s = natsConnection_SubscribeSync(&sub->sub, p->nc, subject);
  if (s == NATS_OK)
    s = natsSubscription_SetPendingLimits(sub->sub, 1 << 16, 256 << 20);
  if (s != NATS_OK) {
    natsSubscription_Destroy(sub->sub);
    free(sub);
    return pfi__nats_err(err, s, subject);
  }
  *out = sub;
  return 0;
}

int pfi_nats_subscribe_checked(struct pfi_nats *p, const char *subject,
                               struct pfi_nats_sub **out,
                               struct pfi_error *err) {
  unsigned before = async_count(p);
  int rc = pfi_nats_subscribe(p, subject, out, err);
  if (rc < 0)
    return rc;
  natsStatus s = natsConnection_FlushTimeout(p->nc, p->timeout_ms);
  /* A refused subscription is answered with -ERR before the PONG. */
  if (s != NATS_OK)
    rc = pfi__nats_err(err, s, subject);
  else
    rc = refused_since(p, before, subject, err);
  if (rc < 0) {
    pfi_nats_unsubscribe(*out);
    *out = NULL;
  }
  return rc;
}

int pfi_nats_subscribe_assign(struct pfi_nats *p, const char *node,
                              struct pfi_nats_sub **out,
                              struct pfi_error *err) {
  char subject[128];
  snprintf(subject, sizeof subject, "pfi.assign.%s", node);
  int rc = pfi_nats_subscribe(p, subject, out, err);
  if (rc == 0)
    snprintf((*out)->kv_subject, sizeof (*out)->kv_subject,
             "$KV." PFI_NATS_BUCKET ".assign.%s", node);
  return rc;
}

unsigned long pfi_nats_sub_dropped(const struct pfi_nats_sub *sub) {
  return sub ? sub->dropped : 0;
}

/* Whether m is the server's republication of the bucket's key `kv_subject`
 * (RePublish headers: the stream and the subject the value was written
 * on, with its sequence, the key's revision). */
static int from_bucket(natsMsg *m, const char *kv_subject) {
  const char *stream = NULL, *subj = NULL, *seq = NULL;
  return natsMsgHeader_Get(m, "Nats-Stream", &stream) == NATS_OK &&
         natsMsgHeader_Get(m, "Nats-Subject", &subj) == NATS_OK &&
         natsMsgHeader_Get(m, "Nats-Sequence", &seq) == NATS_OK && stream &&
         subj && seq && strcmp(stream, "KV_" PFI_NATS_BUCKET) == 0 &&
         strcmp(subj, kv_subject) == 0 && seq[0] >= '1' && seq[0] <= '9';
}

/* A message of one of the subscriptions of pfi_nats_subscribe_many: into
 * the queue (dropped when it cannot grow). */
static void on_many(natsConnection *nc, natsSubscription *s, natsMsg *m,
                    void *closure) {
  struct pfi_nats_sub *sub = closure;
  pthread_mutex_lock(&sub->mu);
  if (sub->qlen == sub->qcap) {
    size_t nc2 = sub->qcap ? 2 * sub->qcap : 256;
    natsMsg **nq = nc2 <= (1u << 22) ? malloc(nc2 * sizeof *nq) : NULL;
    if (!nq) {
      pthread_mutex_unlock(&sub->mu);
      natsMsg_Destroy(m);
      return;
    }
    for (size_t i = 0; i < sub->qlen; i++)
      nq[i] = sub->q[(sub->qhead + i) % sub->qcap];
    free(sub->q);
    sub->q = nq;
    sub->qhead = 0;
    sub->qcap = nc2;
  }
  sub->q[(sub->qhead + sub->qlen++) % sub->qcap] = m;
  pthread_cond_signal(&sub->cv);
  pthread_mutex_unlock(&sub->mu);
}

int pfi_nats_subscribe_many(struct pfi_nats *p, const char *const *subjects,
                            size_t n, struct pfi_nats_sub **out,
                            struct pfi_error *err) {
  struct pfi_nats_sub *sub = calloc(1, sizeof *sub);
  if (!sub || !(sub->subs = calloc(n ? n : 1, sizeof *sub->subs))) {
    free(sub);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  pthread_mutex_init(&sub->mu, NULL);
  pthread_cond_init(&sub->cv, NULL);
  for (size_t i = 0; i < n; i++) {
    natsStatus s = natsConnection_Subscribe(&sub->subs[i], p->nc, subjects[i],
                                            on_many, sub);
    if (s == NATS_OK)
      s = natsSubscription_SetPendingLimits(sub->subs[i], -1, -1);
    if (s != NATS_OK) {
      int rc = pfi__nats_err(err, s, subjects[i]);
      sub->nsubs = i + 1;
      pfi_nats_unsubscribe(sub);
      return rc;
    }
  }
  sub->nsubs = n;
  *out = sub;
  return 0;
}

void pfi_nats_unsubscribe(struct pfi_nats_sub *sub) {
  if (!sub)
    return;
  if (sub->subs) {
    for (size_t i = 0; i < sub->nsubs; i++) {
      natsSubscription_Unsubscribe(sub->subs[i]);
      natsSubscription_Destroy(sub->subs[i]);
    }
    for (size_t i = 0; i < sub->qlen; i++)
      natsMsg_Destroy(sub->q[(sub->qhead + i) % sub->qcap]);
    free(sub->q);
    free(sub->subs);
    pthread_cond_destroy(&sub->cv);
    pthread_mutex_destroy(&sub->mu);
    free(sub);
    return;
  }
  natsSubscription_Unsubscribe(sub->sub);
  natsSubscription_Destroy(sub->sub);
  free(sub);
}

/* The next message of a pfi_nats_subscribe_many queue within ms. */
static natsStatus next_many(struct pfi_nats_sub *sub, natsMsg **m, int64_t ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += ms / 1000;
  dl.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&sub->mu);
  while (!sub->qlen &&
         pthread_cond_timedwait(&sub->cv, &sub->mu, &dl) == 0)
    ;
  natsStatus s = NATS_TIMEOUT;
  if (sub->qlen) {
    *m = sub->q[sub->qhead];
    sub->qhead = (sub->qhead + 1) % sub->qcap;
    sub->qlen--;
    s = NATS_OK;
  }
  pthread_mutex_unlock(&sub->mu);
  return s;
}

int pfi_nats_next(struct pfi_nats_sub *sub, double timeout_s, char **data,
                  size_t *len, char *subj, size_t n, struct pfi_error *err) {
  natsMsg *m = NULL;
  int64_t ms = timeout_s > 0 ? (int64_t)(timeout_s * 1000) : 0;
  natsStatus s = sub->subs ? next_many(sub, &m, ms > 0 ? ms : 1)
                           : natsSubscription_NextMsg(&m, sub->sub,
                                                      ms > 0 ? ms : 1);
  if (s == NATS_TIMEOUT)
    return 0;
  if (s == NATS_SLOW_CONSUMER)
    return 0; /* messages were dropped; the next ones still come */
  if (s != NATS_OK)
    return pfi__nats_err(err, s, "next message");
  if (sub->kv_subject[0] && !from_bucket(m, sub->kv_subject)) {
    /* Published on the subject directly, not through the bucket. */
    natsMsg_Destroy(m);
    sub->dropped++;
    return 0;
  }
  int k = natsMsg_GetDataLength(m);
  char *d = malloc((size_t)k + 1);
  if (!d) {
    natsMsg_Destroy(m);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  if (k > 0)
    memcpy(d, natsMsg_GetData(m), (size_t)k);
  d[k] = 0;
  if (subj && n)
    snprintf(subj, n, "%s", natsMsg_GetSubject(m));
  natsMsg_Destroy(m);
  *data = d;
  *len = (size_t)k;
  return 1;
}

/* ---- key-value --------------------------------------------------------- */

static int need_kv(struct pfi_nats *p, struct pfi_error *err) {
  return p->kv ? 0
               : pfi_error_set(err, PFI_ESTATE,
                               "NATS connection without the bucket");
}

int pfi_nats_kv_get(struct pfi_nats *p, const char *key, char **val,
                    size_t *len, uint64_t *rev, struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  kvEntry *e = NULL;
  natsStatus s = kvStore_Get(&e, p->kv, key);
  if (s == NATS_NOT_FOUND)
    return 0;
  if (s != NATS_OK)
    return pfi__nats_err(err, s, key);
  int k = kvEntry_ValueLen(e);
  char *d = malloc((size_t)k + 1);
  if (!d) {
    kvEntry_Destroy(e);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  if (k > 0)
    memcpy(d, kvEntry_Value(e), (size_t)k);
  d[k] = 0;
  if (rev)
    *rev = kvEntry_Revision(e);
  kvEntry_Destroy(e);
  *val = d;
  if (len)
    *len = (size_t)k;
  return 1;
}

int pfi_nats_kv_put(struct pfi_nats *p, const char *key, const void *val,
                    size_t len, uint64_t *rev, struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  natsStatus s = kvStore_Put(rev, p->kv, key, val, (int)len);
  return s == NATS_OK ? 0 : pfi__nats_err(err, s, key);
}

/* The server's answer to a compare-and-set that lost. */
static int wrong_last(void) {
  const char *last = nats_GetLastError(NULL);
  return last &&
         (strstr(last, "wrong last sequence") || strstr(last, "key exists"));
}

int pfi_nats_kv_create(struct pfi_nats *p, const char *key, const void *val,
                       size_t len, uint64_t *rev, struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  natsStatus s = kvStore_Create(rev, p->kv, key, val, (int)len);
  if (s == NATS_OK)
    return 0;
  if (wrong_last())
    return pfi_error_set(err, PFI_EBUSY, "key %s exists", key);
  return pfi__nats_err(err, s, key);
}

int pfi_nats_kv_update(struct pfi_nats *p, const char *key, const void *val,
                       size_t len, uint64_t last, uint64_t *rev,
                       struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  natsStatus s = kvStore_Update(rev, p->kv, key, val, (int)len, last);
  if (s == NATS_OK)
    return 0;
  if (wrong_last())
    return pfi_error_set(err, PFI_ESTATE, "key %s changed since revision %llu",
                         key, (unsigned long long)last);
  return pfi__nats_err(err, s, key);
}

/* JetStream's answer to a publish: 0 with the stored message's sequence (the
 * key's new revision), PFI_ESTATE when the expected last sequence did not
 * hold, PFI_EIO otherwise (with the server's words in err). */
static int pub_answer(natsMsg *m, const char *key, uint64_t last,
                      uint64_t *rev, struct pfi_error *err) {
  if (natsMsg_IsNoResponders(m))
    return pfi_error_set(err, PFI_EIO, "NATS: %s: no JetStream stream answers",
                         key);
  json_error_t je;
  json_t *j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
                         0, &je);
  json_t *e = j ? json_object_get(j, "error") : NULL;
  json_t *seq = j ? json_object_get(j, "seq") : NULL;
  int rc;
  if (e) {
    json_int_t code = json_integer_value(json_object_get(e, "err_code"));
    const char *desc = json_string_value(json_object_get(e, "description"));
    /* 10071: JSStreamWrongLastSequenceErr. */
    if (code == 10071 || (desc && strstr(desc, "wrong last sequence")))
      rc = pfi_error_set(err, PFI_ESTATE,
                         last ? "key %s changed since revision %" PRIu64
                              : "key %s exists",
                         key, last);
    else
      rc = pfi_error_set(err, PFI_EIO, "NATS: %s: %s", key,
                         desc ? desc : "JetStream error");
  } else if (json_is_integer(seq) && json_integer_value(seq) > 0) {
    *rev = (uint64_t)json_integer_value(seq);
    rc = 0;
  } else {
    rc = pfi_error_set(err, PFI_EIO, "NATS: %s: unexpected answer '%.*s'", key,
                       natsMsg_GetDataLength(m) > 80
                           ? 80
                           : natsMsg_GetDataLength(m),
                       natsMsg_GetData(m) ? natsMsg_GetData(m) : "");
  }
  json_decref(j);
  return rc;
}

int pfi_nats_kv_cas_batch(struct pfi_nats *p, struct pfi_nats_kv_op *ops,
                          size_t n, unsigned window, struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  natsStatus s = NATS_OK;
  if (!p->replies) {
    char subj[128];
    if ((s = natsInbox_Create(&p->inbox)) != NATS_OK)
      return pfi__nats_err(err, s, "inbox");
    snprintf(subj, sizeof subj, "%s.>", p->inbox);
    if ((s = natsConnection_SubscribeSync(&p->replies, p->nc, subj)) !=
            NATS_OK ||
        (s = natsSubscription_SetPendingLimits(p->replies, -1, -1)) !=
            NATS_OK) {
      natsSubscription_Destroy(p->replies);
      p->replies = NULL;
      return pfi__nats_err(err, s, "inbox");
    }
  }
  uint64_t batch = ++p->batches;
  if (window < 1)
    window = 1;
  for (size_t i = 0; i < n; i++) {
    ops[i].rc = PFI_EINTR;
    ops[i].rev = 0;
  }
  size_t sent = 0, waiting = 0, written = 0;
  int stop = 0; /* a write lost, or the connection refused one */
  char subj[256], reply[160], hdr[24];
  while (sent < n || waiting > 0) {
    /* Send up to the window. */
    while (!stop && sent < n && waiting < window) {
      struct pfi_nats_kv_op *o = &ops[sent];
      natsMsg *m = NULL;
      snprintf(subj, sizeof subj, "$KV." PFI_NATS_BUCKET ".%s", o->key);
      snprintf(reply, sizeof reply, "%s.%" PRIu64 ".%zu", p->inbox, batch,
               sent);
      snprintf(hdr, sizeof hdr, "%" PRIu64, o->last);
      s = natsMsg_Create(&m, subj, reply, o->val, (int)o->len);
      if (s == NATS_OK && o->last != PFI_NATS_KV_ANY)
        s = natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", hdr);
      if (s == NATS_OK)
        s = natsConnection_PublishMsg(p->nc, m);
      natsMsg_Destroy(m);
      if (s != NATS_OK) {
        o->rc = pfi__nats_err(err, s, o->key);
        stop = 1;
        break;
      }
      sent++;
      waiting++;
    }
    if (waiting == 0)
      break;
    /* One answer; none within the timeout means none will be waited for. */
    natsMsg *m = NULL;
    s = natsSubscription_NextMsg(&m, p->replies, p->timeout_ms);
    if (s == NATS_SLOW_CONSUMER)
      continue; /* a notice only: the answers still come */
    if (s != NATS_OK) {
      for (size_t i = 0; i < sent; i++)
        if (ops[i].rc == PFI_EINTR)
          ops[i].rc = pfi_error_set(
              err, PFI_EIO, "NATS: %s: no answer within %.1f s (it may have "
                            "been written)",
              ops[i].key, (double)p->timeout_ms / 1000.0);
      waiting = 0;
      stop = 1;
      continue;
    }
    const char *r = natsMsg_GetSubject(m);
    size_t il = strlen(p->inbox);
    char *end = NULL;
    uint64_t b = 0;
    unsigned long long idx = 0;
    if (strncmp(r, p->inbox, il) == 0 && r[il] == '.') {
      b = strtoull(r + il + 1, &end, 10);
      if (end && *end == '.')
        idx = strtoull(end + 1, &end, 10);
      else
        b = 0;
    }
    if (b == batch && end && !*end && idx < sent && ops[idx].rc == PFI_EINTR) {
      struct pfi_nats_kv_op *o = &ops[idx];
      struct pfi_error e;
      o->rc = pub_answer(m, o->key, o->last, &o->rev, &e);
      if (o->rc == 0)
        written++;
      else {
        if (err)
          *err = e;
        /* A lost compare-and-set: another writer; send no more. */
        stop |= o->rc == PFI_ESTATE;
      }
      waiting--;
    }
    natsMsg_Destroy(m);
  }
  return (int)written;
}

int pfi_nats_kv_delete(struct pfi_nats *p, const char *key,
                       struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  natsStatus s = kvStore_Delete(p->kv, key);
  return s == NATS_OK ? 0 : pfi__nats_err(err, s, key);
}

void pfi_nats_keys_free(char **keys, size_t n) {
  for (size_t i = 0; keys && i < n; i++)
    free(keys[i]);
  free(keys);
}

int pfi_nats_kv_keys(struct pfi_nats *p, const char *prefix, char ***keys,
                     size_t *n, struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  /* The stream's subjects under the prefix, from one stream-info request:
   * a key listing through a watcher (kvStore_Keys) reads every key's newest
   * value through a consumer, and on a busy server often timed out. */
  char filter[320];
  snprintf(filter, sizeof filter, "$KV." PFI_NATS_BUCKET ".%s>", prefix);
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = p->timeout_ms;
  jo.Stream.Info.SubjectsFilter = filter;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  *keys = NULL;
  *n = 0;
  natsStatus s = js_GetStreamInfo(&si, p->js, "KV_" PFI_NATS_BUCKET, &jo, &jerr);
  if (s != NATS_OK)
    return pfi__nats_err(err, s, "keys");
  const jsStreamStateSubjects *l = si->State.Subjects;
  int count = l ? l->Count : 0;
  char **out = calloc((size_t)count + 1, sizeof *out);
  size_t k = 0, plen = strlen("$KV." PFI_NATS_BUCKET ".");
  for (int i = 0; out && i < count; i++) {
    const char *subj = l->List[i].Subject;
    if (!subj || strlen(subj) <= plen)
      continue;
    if (!(out[k++] = strdup(subj + plen))) {
      pfi_nats_keys_free(out, k);
      out = NULL;
    }
  }
  jsStreamInfo_Destroy(si);
  if (!out)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  *keys = out;
  *n = k;
  return 0;
}

int pfi_nats_kv_ensure(struct pfi_nats *p, struct pfi_error *err) {
  int rc = need_kv(p, err);
  if (rc < 0)
    return rc;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetStreamInfo(&si, p->js, "KV_" PFI_NATS_BUCKET, NULL, &jerr);
  jsStreamInfo_Destroy(si);
  if (s == NATS_OK)
    return 0;
  if (jerr != JSStreamNotFoundErr)
    return pfi__nats_err(err, s, "stream information of the bucket");
  /* The handle p->kv names the bucket, not the stream's instance: it
   * works again once the stream is back. */
  kvStore *kv = NULL;
  s = create_bucket(p, &kv);
  kvStore_Destroy(kv);
  if (s != NATS_OK)
    return pfi__nats_err(err, s, "key-value bucket " PFI_NATS_BUCKET " (made again)");
  return 1;
}
