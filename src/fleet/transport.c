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

struct pfi_nats {
  natsConnection *nc;
  jsCtx *js;
  kvStore *kv;
  int64_t timeout_ms;
  /* pfi_nats_kv_cas_batch: the answers' inbox (a subscription on
   * INBOX.>, made at the first batch) and the batch count, which names each
   * batch's reply subjects so that a late answer to an older one is
   * ignored. */
  natsInbox *inbox;
  natsSubscription *replies;
  uint64_t batches;
  int history;  /* the bucket's, to make it again (pfi_nats_kv_ensure) */
  int replicas; /* the bucket's stream's replicas when made (1 or 3) */
  /* The newest asynchronous error (a permissions violation), set by the
   * client's thread. */
  pthread_mutex_t mu;
  unsigned async_errs;
  char async_msg[256];
  /* Set by the client's thread when the connection is closed: its last
   * callback (pfi_nats_close waits for it before freeing what the others
   * use). */
  pthread_cond_t closed_cv;
  int closed;
  /* pfi_nats_opts.nkey_file's seed, for on_sign (wiped at close). */
  char seed[128];
};

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

static int nerr(struct pfi_error *err, natsStatus s, const char *what) {
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

int pfi_nats_servers_split(const char *list, char *buf, size_t n,
                           const char **url, int max, struct pfi_error *err) {
  size_t len = list ? strlen(list) : 0;
  if (!list || !buf || len >= n)
    return pfi_error_set(err, PFI_EINVAL, "--nats: list longer than %zu bytes",
                         n ? n - 1 : 0);
  memcpy(buf, list, len + 1);
  int k = 0;
  for (char *u = buf; u;) {
    char *comma = strchr(u, ',');
    if (comma)
      *comma = 0;
    while (*u == ' ')
      u++;
    size_t m = strlen(u);
    while (m > 0 && u[m - 1] == ' ')
      u[--m] = 0;
    if (m) {
      if (k == max)
        return pfi_error_set(err, PFI_EINVAL,
                             "--nats: more than %d servers in '%s'", max, list);
      url[k++] = u;
    }
    u = comma ? comma + 1 : NULL;
  }
  if (!k)
    return pfi_error_set(err, PFI_EINVAL, "--nats: no server URL in '%s'",
                         list);
  return k;
}

/* The servers of pfi_nats_opts.url into the client's options: it connects
 * to one of them (in random order: agents spread over a cluster) and, when
 * that one is lost, reconnects to the others. Returns the count. */
static int set_servers(natsOptions *opts, const char *list,
                       struct pfi_error *err) {
  char buf[4096];
  const char *url[PFI_NATS_SERVERS_MAX];
  int n = pfi_nats_servers_split(list, buf, sizeof buf, url,
                                 PFI_NATS_SERVERS_MAX, err);
  if (n < 0)
    return n;
  natsStatus s = n == 1 ? natsOptions_SetURL(opts, url[0])
                        : natsOptions_SetServers(opts, url, n);
  if (s != NATS_OK)
    return nerr(err, s, list);
  return n;
}

int pfi_nats_url_host(const char *url, char *host, size_t n,
                      struct pfi_error *err) {
  const char *p = url ? url : "";
  const char *scheme = strstr(p, "://");
  if (scheme)
    p = scheme + 3;
  /* The authority ends at the first '/'; user info before its last '@'. */
  size_t alen = strcspn(p, "/?#");
  for (size_t i = alen; i > 0; i--)
    if (p[i - 1] == '@') {
      p += i;
      alen -= i;
      break;
    }
  size_t len;
  if (alen && *p == '[') {
    const char *rb = memchr(p, ']', alen);
    if (!rb)
      return pfi_error_set(err, PFI_EINVAL, "--nats: '%s': no ']' after '['",
                           url ? url : "");
    p++;
    len = (size_t)(rb - p);
  } else {
    const char *colon = memchr(p, ':', alen);
    len = colon ? (size_t)(colon - p) : alen;
  }
  if (len == 0)
    return pfi_error_set(err, PFI_EINVAL, "--nats: '%s': no host",
                         url ? url : "");
  if (len >= n)
    return pfi_error_set(err, PFI_EINVAL, "--nats: '%s': host too long",
                         url ? url : "");
  memcpy(host, p, len);
  host[len] = 0;
  return (int)len;
}

int pfi_nats_host_loopback(const char *h) {
  if (!h)
    return 0;
  if (strcasecmp(h, "localhost") == 0 || strcmp(h, "::1") == 0)
    return 1;
  /* 127.a.b.c: four decimal parts of at most three digits, each <= 255. */
  if (strncmp(h, "127.", 4) != 0)
    return 0;
  int parts = 0;
  for (const char *q = h; *q;) {
    int v = 0, d = 0;
    while (*q >= '0' && *q <= '9' && d < 4) {
      v = 10 * v + (*q++ - '0');
      d++;
    }
    if (!d || d > 3 || v > 255 || ++parts > 4)
      return 0;
    if (*q == '.' && q[1])
      q++;
    else if (*q)
      return 0;
  }
  return parts == 4;
}

static int is_ip(const char *h) {
  /* Dotted decimal or any form with ':' (IPv6): not a DNS name. */
  if (strchr(h, ':'))
    return 1;
  for (const char *q = h; *q; q++)
    if (!((*q >= '0' && *q <= '9') || *q == '.'))
      return 0;
  return 1;
}

/* What pfi_nats_describe and pfi_nats_open share: the checks, whether TLS
 * is on, the certificates' expected name (name, n bytes; "" none), the
 * first host that is not on loopback (remote, n bytes; "" none). */
static int check_opts(const struct pfi_nats_opts *o, int *tls, char *name,
                      char *remote, size_t n, struct pfi_error *err) {
  char buf[4096], host[256];
  const char *url[PFI_NATS_SERVERS_MAX];
  int k = pfi_nats_servers_split(o->url ? o->url : "nats://127.0.0.1:4222", buf,
                                 sizeof buf, url, PFI_NATS_SERVERS_MAX, err);
  if (k < 0)
    return k;
  int ways = !!o->password_file + !!o->creds_file + !!o->nkey_file;
  if (ways > 1)
    return pfi_error_set(err, PFI_EINVAL,
                         "--password-file, --nats-creds and --nats-nkey: at "
                         "most one of them");
  if (!o->tls_cert != !o->tls_key)
    return pfi_error_set(err, PFI_EINVAL,
                         "--nats-cert and --nats-key go together");
  if (o->nkey_file && (!o->user || o->user[0] != 'U' || strlen(o->user) != 56))
    return pfi_error_set(err, PFI_EINVAL,
                         "--nats-nkey: --user must be the nkey's public key "
                         "(56 characters, U...), not '%s'",
                         o->user ? o->user : "");
  *tls = o->tls_ca || o->tls_cert || o->tls_name;
  name[0] = remote[0] = 0;
  int same = 1;
  for (int i = 0; i < k; i++) {
    if (strncasecmp(url[i], "tls://", 6) == 0)
      *tls = 1;
    int rc = pfi_nats_url_host(url[i], host, sizeof host, err);
    if (rc < 0)
      return rc;
    if (!pfi_nats_host_loopback(host) && !remote[0])
      snprintf(remote, n, "%s", host);
    if (i == 0)
      snprintf(name, n, "%s", host);
    else if (strcasecmp(name, host) != 0)
      same = 0;
  }
  if (!same || is_ip(name))
    name[0] = 0;
  if (o->tls_name)
    snprintf(name, n, "%s", o->tls_name);
  if (!*tls && remote[0] && !o->insecure)
    return pfi_error_set(err, PFI_EINVAL,
                         "--nats: %s is not on loopback and the connection "
                         "would be plain text: give the servers' CA "
                         "(--nats-ca) or a tls:// URL, or --nats-insecure",
                         remote);
  return 0;
}

int pfi_nats_describe(const struct pfi_nats_opts *o, char *out, size_t n,
                      struct pfi_error *err) {
  int tls;
  char name[256], remote[256];
  int rc = check_opts(o, &tls, name, remote, sizeof name, err);
  if (rc < 0)
    return rc;
  const char *who = o->creds_file      ? ", credentials file"
                    : o->nkey_file     ? ", nkey user "
                    : o->password_file ? ", user "
                                       : "";
  const char *user = o->nkey_file || o->password_file ? o->user : "";
  if (tls)
    snprintf(out, n, "TLS, server certificates from %s%s%s%s%s%s",
             o->tls_ca ? o->tls_ca : "the system's CAs",
             name[0] ? " for " : ", each for its URL's host",
             name[0] ? name : "", o->tls_cert ? ", client certificate" : "",
             who, user ? user : "");
  else if (remote[0])
    snprintf(out, n, "PLAIN TEXT to %s (--nats-insecure)%s%s", remote, who,
             user ? user : "");
  else
    snprintf(out, n, "plain text (loopback)%s%s", who, user ? user : "");
  return 0;
}

/* Reads a file whole (at most n - 1 bytes) into buf, NUL-terminated. */
static int read_small(const char *path, char *buf, size_t n,
                      struct pfi_error *err) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  size_t k = fread(buf, 1, n - 1, fp);
  int bad = ferror(fp) || (k == n - 1 && fgetc(fp) != EOF);
  fclose(fp);
  if (bad)
    return pfi_error_set(err, PFI_EIO, "%s: unreadable or over %zu bytes", path,
                         n - 1);
  buf[k] = 0;
  return (int)k;
}

/* natsOptions_SetNKey's signer: the nonce signed with the seed read at
 * open. */
static natsStatus on_sign(char **txt, unsigned char **sig, int *len,
                          const char *nonce, void *closure) {
  (void)txt;
  struct pfi_nats *p = closure;
  return nats_Sign(p->seed, nonce, sig, len);
}

/* A connection the server refused for good: TLS (its certificate, ours),
 * the credentials. Not retried. Over TLS 1.3 a server that refuses the
 * client's certificate, or its lack of one, does so after the client's
 * handshake is done: the client then reads an alert (an I/O error) or
 * nothing (a protocol error: no answer to its CONNECT). */
static int refused_for_good(natsStatus s, int tls) {
  return s == NATS_SSL_ERROR || s == NATS_CONNECTION_AUTH_FAILED ||
         s == NATS_NOT_PERMITTED || s == NATS_SECURE_CONNECTION_WANTED ||
         s == NATS_SECURE_CONNECTION_REQUIRED ||
         (tls && (s == NATS_PROTOCOL_ERROR || s == NATS_IO_ERROR));
}

/* A certificate or key file the TLS library refused: PFI_EPARSE naming it
 * with the library's words. */
static int bad_pem(struct pfi_error *err, natsStatus s, const char *file) {
  nerr(err, s, file);
  if (err)
    err->code = PFI_EPARSE;
  return PFI_EPARSE;
}

/* The TLS and account options of `o` into opts. The key and the seed are
 * read with pfi_read_secret's rules. */
static int set_security(struct pfi_nats *p, natsOptions *opts,
                        const struct pfi_nats_opts *o, int tls,
                        const char *name, struct pfi_error *err) {
  natsStatus s = NATS_OK;
  int rc = 0;
  if (tls) {
    if ((s = natsOptions_SetSecure(opts, true)) != NATS_OK)
      return nerr(err, s, "TLS");
    /* A file that is not PEM certificates is bad input (exit 2). */
    if (o->tls_ca &&
        (s = natsOptions_LoadCATrustedCertificates(opts, o->tls_ca)) != NATS_OK)
      return bad_pem(err, s, o->tls_ca);
    if (name[0] && (s = natsOptions_SetExpectedHostname(opts, name)) != NATS_OK)
      return nerr(err, s, "TLS name");
  }
  if (o->tls_cert) {
    enum { CMAX = 1 << 16 };
    char *cert = malloc(CMAX), *key = malloc(CMAX);
    if (!cert || !key)
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    else if ((rc = read_small(o->tls_cert, cert, CMAX, err)) >= 0 &&
             (rc = pfi_read_secret_file(o->tls_key, key, CMAX, err)) >= 0) {
      rc = 0;
      if ((s = natsOptions_SetCertificatesChain(opts, cert, key)) != NATS_OK)
        rc = bad_pem(err, s, o->tls_cert);
    }
    if (key)
      memset(key, 0, CMAX);
    free(cert);
    free(key);
    if (rc < 0)
      return rc;
  }
  if (o->creds_file) {
    /* Checked by the rules here; the client reads it at each connect. */
    enum { CMAX = 1 << 14 };
    char *c = malloc(CMAX);
    if (!c)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    rc = pfi_read_secret_file(o->creds_file, c, CMAX, err);
    int ok = rc >= 0 && strstr(c, "BEGIN NATS USER JWT") &&
             strstr(c, "BEGIN USER NKEY SEED");
    memset(c, 0, CMAX);
    free(c);
    if (rc < 0)
      return rc;
    if (!ok)
      return pfi_error_set(err, PFI_EPARSE,
                           "%s: not a NATS credentials file (a user JWT and "
                           "its nkey seed, as nsc writes them)",
                           o->creds_file);
    if ((s = natsOptions_SetUserCredentialsFromFiles(opts, o->creds_file,
                                                     NULL)) != NATS_OK)
      return nerr(err, s, o->creds_file);
  }
  if (o->nkey_file) {
    if ((rc = pfi_read_secret(o->nkey_file, p->seed, sizeof p->seed, err)) < 0)
      return rc;
    if (strncmp(p->seed, "SU", 2) != 0 || strlen(p->seed) != 58) {
      memset(p->seed, 0, sizeof p->seed);
      return pfi_error_set(err, PFI_EPARSE,
                           "%s: not an nkey user seed (58 characters, SU...)",
                           o->nkey_file);
    }
    if ((s = natsOptions_SetNKey(opts, o->user, on_sign, p)) != NATS_OK)
      return nerr(err, s, o->nkey_file);
  }
  return 0;
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
  if ((rc = check_opts(o, &tls, name, remote, sizeof name, err)) < 0)
    goto fail;
  if (o->password_file &&
      (rc = pfi_read_secret(o->password_file, pw, sizeof pw, err)) < 0)
    goto fail;
  if ((s = natsOptions_Create(&opts)) != NATS_OK) {
    rc = nerr(err, s, "options");
    goto fail;
  }
  int nserv = set_servers(opts, o->url ? o->url : "nats://127.0.0.1:4222", err);
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
    rc = nerr(err, s, "options");
    goto fail;
  }
  if ((rc = set_security(p, opts, o, tls, name, err)) < 0)
    goto fail;
  /* One try first: a server that refuses us for good (a certificate not
   * verified, the credentials refused) is an error now, not retried for
   * ever. (libnats releases a connection that failed so without its
   * callbacks: on_closed runs only for the one kept.) */
  s = natsConnection_Connect(&p->nc, opts);
  if (s != NATS_OK && refused_for_good(s, tls)) {
    rc = nerr(err, s, o->url ? o->url : "connect");
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
    rc = nerr(err, s, o->url ? o->url : "connect");
    goto fail;
  }
  if (o->bucket) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = p->timeout_ms;
    if ((s = natsConnection_JetStream(&p->js, p->nc, &jo)) != NATS_OK) {
      rc = nerr(err, s, "JetStream");
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
      rc = nerr(err, s, "key-value bucket " PFI_NATS_BUCKET);
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
  return s == NATS_OK ? 0 : nerr(err, s, subject);
}

int pfi_nats_publish_checked(struct pfi_nats *p, const char *subject,
                             const void *data, size_t len,
                             struct pfi_error *err) {
  unsigned before = async_count(p);
  natsStatus s = natsConnection_Publish(p->nc, subject, data, (int)len);
  if (s != NATS_OK)
    return nerr(err, s, subject);
  if ((s = natsConnection_FlushTimeout(p->nc, p->timeout_ms)) != NATS_OK)
    return nerr(err, s, subject);
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
    return nerr(err, s, subject);
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
    rc = nerr(err, s, subject);
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
      int rc = nerr(err, s, subjects[i]);
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
    return nerr(err, s, "next message");
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
    return nerr(err, s, key);
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
  return s == NATS_OK ? 0 : nerr(err, s, key);
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
  return nerr(err, s, key);
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
  return nerr(err, s, key);
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
      return nerr(err, s, "inbox");
    snprintf(subj, sizeof subj, "%s.>", p->inbox);
    if ((s = natsConnection_SubscribeSync(&p->replies, p->nc, subj)) !=
            NATS_OK ||
        (s = natsSubscription_SetPendingLimits(p->replies, -1, -1)) !=
            NATS_OK) {
      natsSubscription_Destroy(p->replies);
      p->replies = NULL;
      return nerr(err, s, "inbox");
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
        o->rc = nerr(err, s, o->key);
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
  return s == NATS_OK ? 0 : nerr(err, s, key);
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
    return nerr(err, s, "keys");
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
    return nerr(err, s, "stream information of the bucket");
  /* The handle p->kv names the bucket, not the stream's instance: it
   * works again once the stream is back. */
  kvStore *kv = NULL;
  s = create_bucket(p, &kv);
  kvStore_Destroy(kv);
  if (s != NATS_OK)
    return nerr(err, s, "key-value bucket " PFI_NATS_BUCKET " (made again)");
  return 1;
}
