/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The HTTP server under pfid's API and the /metrics endpoints. */
#include "pfi/http.h"
#include "pfi/secret.h"

#include "mhd_dl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* An open connection, for the per-client limit and the deadline (below). */
struct conn {
  struct conn *next, *prev;
  int fd;
  double t0;     /* monotonic s: accepted, or its previous request answered */
  int cut;       /* shut down by us */
  char key[48];  /* the client: "uid N" (Unix socket, loopback) or address */
  char peer[80]; /* for the handler (pfi_http_req.peer) */
};

struct pfi_http {
  struct MHD_Daemon *d;
  pfi_http_fn fn;
  void *arg;
  unsigned port;
  size_t body_max;
  char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  /* The bounds (pfi_http_limits) and the connections they apply to: the
   * list is changed by libmicrohttpd's thread (connection started,
   * closed) and read by the reaper's, under mu. */
  double deadline_s;
  unsigned per_client;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t reaper;
  int reaper_on, stopping;
  struct conn *conns;
  unsigned long refused, cut;
  /* TLS (pfi_http_start_tls): the PEM texts libmicrohttpd was given, kept
   * until it stops (the key's bytes zeroed then); tls_mode as
   * pfi_http_tls_mode. */
  char *tls_cert, *tls_key, *tls_ca;
  size_t tls_key_len;
  int tls_mode;
};

static double mono(void);

/* A request being received. */
struct body {
  char *buf;
  size_t len;
  int too_big;
};

static const char *req_arg(const struct pfi_http_req *rq, const char *key) {
  return pfi__mhd_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result reply(struct MHD_Connection *c, int status,
                             const char *type, char *body, size_t len,
                             const char *www_auth) {
  struct MHD_Response *r = pfi__mhd_create_response_from_buffer(
      len, body ? body : (char *)"",
      body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  pfi__mhd_add_response_header(r, "Content-Type", type);
  pfi__mhd_add_response_header(r, "Cache-Control", "no-store");
  if (www_auth)
    pfi__mhd_add_response_header(r, "WWW-Authenticate", www_auth);
  enum MHD_Result ok = pfi__mhd_queue_response(c, (unsigned)status, r);
  pfi__mhd_destroy_response(r);
  return ok;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *data_len, void **con_cls) {
  struct pfi_http *h = cls;
  struct body *b = *con_cls;
  if (!b) {
    if (!(b = calloc(1, sizeof *b)))
      return MHD_NO;
    *con_cls = b;
    /* Mutual TLS: refused before its body is read. */
    if (h->tls_mode == 2 && !pfi__mhd_client_cert_ok(c)) {
      static const char m[] = "{\"error\":\"a client certificate signed by "
                              "the server's client CA is needed\"}\n";
      return reply(c, 403, "application/json", strdup(m), sizeof m - 1, NULL);
    }
    return MHD_YES;
  }
  if (*data_len) {
    if (!b->too_big && b->len + *data_len <= h->body_max) {
      char *nb = realloc(b->buf, b->len + *data_len + 1);
      if (!nb)
        return MHD_NO;
      memcpy(nb + b->len, data, *data_len);
      b->buf = nb;
      b->len += *data_len;
      b->buf[b->len] = 0;
    } else {
      b->too_big = 1;
    }
    *data_len = 0;
    return MHD_YES;
  }
  if (b->too_big) {
    static const char m[] = "{\"error\":\"request body too large\"}\n";
    return reply(c, 413, "application/json", strdup(m), sizeof m - 1, NULL);
  }
  struct pfi_http_req rq = {
      method,
      url,
      pfi__mhd_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
      b->buf ? b->buf : "",
      b->len,
      req_arg,
      c,
      -1,
      -1,
      ""};
  const union MHD_ConnectionInfo *sci =
      pfi__mhd_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (sci && sci->socket_context)
    rq.peer = ((struct conn *)sci->socket_context)->peer;
  if (h->unix_path[0]) {
    const union MHD_ConnectionInfo *ci =
        pfi__mhd_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (ci &&
        getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 &&
        cr.pid > 0) {
      rq.peer_pid = cr.pid;
      rq.peer_uid = (long)cr.uid;
    }
  }
  struct pfi_http_resp rs = {200, "application/json", NULL, 0, NULL};
  h->fn(h->arg, &rq, &rs);
  return reply(c, rs.status, rs.type, rs.body, rs.body ? rs.len : 0,
               rs.www_authenticate);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  struct pfi_http *h = cls;
  struct body *b = *con_cls;
  if (b) {
    free(b->buf);
    free(b);
    *con_cls = NULL;
  }
  /* The next request on this connection has its own deadline. */
  const union MHD_ConnectionInfo *sci =
      pfi__mhd_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (sci && sci->socket_context) {
    pthread_mutex_lock(&h->mu);
    ((struct conn *)sci->socket_context)->t0 = mono();
    pthread_mutex_unlock(&h->mu);
  }
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the clients' bounds ----------------------------------------------
 * A client is a user on this host (a Unix socket's peer, SO_PEERCRED, or a
 * loopback TCP peer, whose socket's owner /proc/net/tcp names: local users
 * all connect from 127.0.0.1), otherwise its address. Each may hold
 * per_client connections; one more is shut down as it is accepted. A
 * connection's request must be received and answered within deadline_s of
 * its accept or of its previous answer (libmicrohttpd's timeout is idle
 * time only: a client trickling a byte a second would hold its connection
 * for ever); the reaper shuts down those past it. Both only shut the
 * socket down (libmicrohttpd sees the end of it and closes it), under mu,
 * before libmicrohttpd's notification that it closed, so the descriptor is
 * still its. */

/* The owner of the loopback TCP socket whose local end is `cl` and remote
 * end `sv` (/proc/net/tcp or tcp6), or -1. */
static long tcp_owner(const struct sockaddr_storage *cl,
                      const struct sockaddr_storage *sv) {
  char want_l[64], want_r[64], line[512];
  const char *file;
  if (cl->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const void *)cl, *b = (const void *)sv;
    snprintf(want_l, sizeof want_l, "%08X:%04X", (unsigned)a->sin_addr.s_addr,
             (unsigned)ntohs(a->sin_port));
    snprintf(want_r, sizeof want_r, "%08X:%04X", (unsigned)b->sin_addr.s_addr,
             (unsigned)ntohs(b->sin_port));
    file = "/proc/net/tcp";
  } else {
    const struct sockaddr_in6 *a = (const void *)cl, *b = (const void *)sv;
    uint32_t wa[4], wb[4];
    memcpy(wa, &a->sin6_addr, 16);
    memcpy(wb, &b->sin6_addr, 16);
    snprintf(want_l, sizeof want_l, "%08X%08X%08X%08X:%04X", (unsigned)wa[0],
             (unsigned)wa[1], (unsigned)wa[2], (unsigned)wa[3],
             (unsigned)ntohs(a->sin6_port));
    snprintf(want_r, sizeof want_r, "%08X%08X%08X%08X:%04X", (unsigned)wb[0],
             (unsigned)wb[1], (unsigned)wb[2], (unsigned)wb[3],
             (unsigned)ntohs(b->sin6_port));
    file = "/proc/net/tcp6";
  }
  FILE *f = fopen(file, "re");
  long uid = -1;
  if (!f)
    return -1;
  while (uid < 0 && fgets(line, sizeof line, f)) {
    char l[64], r[64];
    unsigned long u;
    if (sscanf(line, " %*s %63s %63s %*s %*s %*s %*s %lu", l, r, &u) == 3 &&
        strcmp(l, want_l) == 0 && strcmp(r, want_r) == 0)
      uid = (long)u;
  }
  fclose(f);
  return uid;
}

static int loopback(const struct sockaddr_storage *a) {
  if (a->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) ==
           127;
  if (a->ss_family != AF_INET6)
    return 0;
  const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(x) ||
         (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
}

/* Sets c->key and c->peer for the connection on fd. */
static void client_of(struct conn *c, int fd, int unix_sock) {
  if (unix_sock) {
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
      snprintf(c->key, sizeof c->key, "uid %ld", (long)cr.uid);
      snprintf(c->peer, sizeof c->peer, "unix uid %ld pid %ld", (long)cr.uid,
               (long)cr.pid);
    } else {
      snprintf(c->key, sizeof c->key, "unix");
      snprintf(c->peer, sizeof c->peer, "unix");
    }
    return;
  }
  struct sockaddr_storage pa, sa;
  socklen_t pl = sizeof pa, sl = sizeof sa;
  char ip[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (getpeername(fd, (struct sockaddr *)&pa, &pl) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &sl) != 0 ||
      (pa.ss_family != AF_INET && pa.ss_family != AF_INET6)) {
    snprintf(c->key, sizeof c->key, "?");
    snprintf(c->peer, sizeof c->peer, "?");
    return;
  }
  if (pa.ss_family == AF_INET) {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&pa)->sin_addr, ip, sizeof ip);
    port = ntohs(((struct sockaddr_in *)&pa)->sin_port);
    snprintf(c->peer, sizeof c->peer, "%s:%u", ip, port);
  } else {
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&pa)->sin6_addr, ip,
              sizeof ip);
    port = ntohs(((struct sockaddr_in6 *)&pa)->sin6_port);
    snprintf(c->peer, sizeof c->peer, "[%s]:%u", ip, port);
  }
  long uid = loopback(&pa) ? tcp_owner(&pa, &sa) : -1;
  if (uid >= 0) {
    snprintf(c->key, sizeof c->key, "uid %ld", uid);
    size_t n = strlen(c->peer);
    snprintf(c->peer + n, sizeof c->peer - n, " uid %ld", uid);
  } else {
    snprintf(c->key, sizeof c->key, "%s", ip);
  }
}

static void notify(void *cls, struct MHD_Connection *mc, void **ctx,
                   enum MHD_ConnectionNotificationCode code) {
  struct pfi_http *h = cls;
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    struct conn *c = *ctx;
    if (!c)
      return;
    pthread_mutex_lock(&h->mu);
    if (c->prev)
      c->prev->next = c->next;
    else
      h->conns = c->next;
    if (c->next)
      c->next->prev = c->prev;
    pthread_mutex_unlock(&h->mu);
    free(c);
    *ctx = NULL;
    return;
  }
  if (code != MHD_CONNECTION_NOTIFY_STARTED)
    return;
  const union MHD_ConnectionInfo *ci =
      pfi__mhd_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
  struct conn *c = ci ? calloc(1, sizeof *c) : NULL;
  if (!c) {
    if (ci)
      shutdown(ci->connect_fd, SHUT_RDWR);
    return;
  }
  c->fd = ci->connect_fd;
  c->t0 = mono();
  client_of(c, c->fd, h->unix_path[0] != 0);
  pthread_mutex_lock(&h->mu);
  unsigned same = 0;
  for (const struct conn *o = h->conns; o; o = o->next)
    same += !o->cut && strcmp(o->key, c->key) == 0;
  if (same >= h->per_client) {
    c->cut = 1;
    h->refused++;
    shutdown(c->fd, SHUT_RDWR);
  }
  c->next = h->conns;
  if (h->conns)
    h->conns->prev = c;
  h->conns = c;
  pthread_mutex_unlock(&h->mu);
  *ctx = c;
}

static void *reaper(void *arg) {
  struct pfi_http *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->stopping) {
    double now = mono();
    for (struct conn *c = h->conns; c; c = c->next)
      if (!c->cut && now - c->t0 > h->deadline_s) {
        c->cut = 1;
        h->cut++;
        shutdown(c->fd, SHUT_RDWR);
      }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 200 * 1000 * 1000; /* a fifth of a second */
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* A new server's state with the limits (defaults where 0). */
static struct pfi_http *http_new(const struct pfi_http_limits *lim,
                                 pfi_http_fn fn, void *arg) {
  struct pfi_http *h = calloc(1, sizeof *h);
  if (!h)
    return NULL;
  h->fn = fn;
  h->arg = arg;
  h->body_max = lim && lim->body_max ? lim->body_max : PFI_HTTP_BODY_MAX;
  h->deadline_s =
      lim && lim->deadline_s > 0 ? lim->deadline_s : PFI_HTTP_DEADLINE_S;
  h->per_client =
      lim && lim->per_client ? lim->per_client : PFI_HTTP_PER_CLIENT;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, &ca);
  pthread_condattr_destroy(&ca);
  return h;
}

static void http_free(struct pfi_http *h) {
  if (h->reaper_on) {
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->reaper, NULL);
  }
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  if (h->tls_key) {
    memset(h->tls_key, 0, h->tls_key_len);
    free(h->tls_key);
  }
  free(h->tls_cert);
  free(h->tls_ca);
  free(h);
}

/* Starts the daemon and the reaper: 0, or -1 (h untouched but freeable).
 * With h->tls_cert set, serves TLS with h's certificate, key and client
 * CA. */
static int http_run(struct pfi_http *h, unsigned flags, uint16_t port,
                    const struct sockaddr *sa, int fd) {
  struct MHD_OptionItem tls[4];
  size_t k = 0;
  if (h->tls_cert) {
    flags |= MHD_USE_TLS;
    tls[k++] =
        (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert};
    tls[k++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key};
    if (h->tls_ca)
      tls[k++] =
          (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, h->tls_ca};
  }
  tls[k] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  if (pthread_create(&h->reaper, NULL, reaper, h) != 0)
    return -1;
  h->reaper_on = 1;
  if (fd >= 0)
    h->d = pfi__mhd_start_daemon(
        flags, 0, handler, h, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_NOTIFY_CONNECTION,
        notify, h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
  else
    h->d = pfi__mhd_start_daemon(
        flags, port, handler, h, MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_NOTIFY_CONNECTION,
        notify, h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
  return h->d ? 0 : -1;
}

void pfi_http_stats(struct pfi_http *h, unsigned long *refused,
                    unsigned long *cut) {
  pthread_mutex_lock(&h->mu);
  *refused = h->refused;
  *cut = h->cut;
  pthread_mutex_unlock(&h->mu);
}

static int start_unix(struct pfi_http **out, const char *path,
                      const struct pfi_http_limits *lim, pfi_http_fn fn,
                      void *arg, struct pfi_error *err) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (!path[0] || strlen(path) >= sizeof sa.sun_path)
    return pfi_error_set(err, PFI_EINVAL,
                         "listen address 'unix:%s': expected a path of "
                         "1..%zu bytes",
                         path, sizeof sa.sun_path - 1);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  struct stat sb;
  if (lstat(path, &sb) == 0) {
    if (!S_ISSOCK(sb.st_mode))
      return pfi_error_set(err, PFI_EINVAL,
                           "unix:%s exists and is not a socket", path);
    unlink(path); /* left by an earlier run */
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), bound = 0;
  if (fd < 0 || !(bound = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0) ||
      chmod(path, 0666) != 0 || listen(fd, 64) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    if (bound)
      unlink(path);
    return pfi_error_set(err, PFI_EIO, "cannot listen on unix:%s: %s", path,
                         strerror(e));
  }
  struct pfi_http *h = http_new(lim, fn, arg);
  if (!h) {
    close(fd);
    unlink(path);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  memcpy(h->unix_path, path, strlen(path) + 1);
  if (http_run(h, MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, fd) <
      0) {
    close(fd);
    unlink(path);
    http_free(h);
    return pfi_error_set(err, PFI_EIO, "cannot serve on unix:%s", path);
  }
  *out = h;
  return 0;
}

int pfi_http_start(struct pfi_http **out, const char *listen, pfi_http_fn fn,
                   void *arg, struct pfi_error *err) {
  return pfi_http_start_max(out, listen, PFI_HTTP_BODY_MAX, fn, arg, err);
}

int pfi_http_start_max(struct pfi_http **out, const char *listen,
                       size_t body_max, pfi_http_fn fn, void *arg,
                       struct pfi_error *err) {
  struct pfi_http_limits lim = {body_max, 0, 0};
  return pfi_http_start_limits(out, listen, &lim, fn, arg, err);
}

/* A PEM file's text, malloc'd and NUL-terminated, into *out (*len its
 * length): the key by pfi_read_secret's rules, the others (certificates)
 * as they are. */
static int read_pem(const char *what, const char *path, int secret, char **out,
                    size_t *len, struct pfi_error *err) {
  enum { MAX = 1 << 20 }; /* a certificate chain or CA bundle, at most */
  char *buf = malloc(MAX);
  int rc = 0;
  if (!buf)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (secret) {
    rc = pfi_read_secret_file(path, buf, MAX, err);
  } else {
    FILE *f = fopen(path, "re");
    size_t k = f ? fread(buf, 1, MAX - 1, f) : 0;
    if (!f)
      rc =
          pfi_error_set(err, PFI_EIO, "%s %s: %s", what, path, strerror(errno));
    else if (ferror(f) || k == MAX - 1)
      rc = pfi_error_set(err, ferror(f) ? PFI_EIO : PFI_EPARSE, "%s %s: %s",
                         what, path,
                         ferror(f) ? "cannot read it" : "larger than 1 MiB");
    else
      buf[k] = 0;
    rc = rc < 0 ? rc : (int)k;
    if (f)
      fclose(f);
  }
  if (rc >= 0 && !strstr(buf, "-----BEGIN "))
    rc = pfi_error_set(err, PFI_EPARSE, "%s %s: not PEM (no -----BEGIN line)",
                       what, path);
  if (rc < 0) {
    memset(buf, 0, MAX);
    free(buf);
    return rc;
  }
  *out = buf;
  *len = (size_t)rc;
  return 0;
}

static int start(struct pfi_http **out, const char *listen,
                 const struct pfi_http_limits *lim,
                 const struct pfi_http_tls *tls, pfi_http_fn fn, void *arg,
                 struct pfi_error *err);

int pfi_http_start_limits(struct pfi_http **out, const char *listen,
                          const struct pfi_http_limits *lim, pfi_http_fn fn,
                          void *arg, struct pfi_error *err) {
  return start(out, listen, lim, NULL, fn, arg, err);
}

/* The policy of pfi_http_tls_check without the files; plain_check: also
 * plain HTTP off loopback (start() checks that once the address parses). */
static int tls_policy(const char *listen, const struct pfi_http_tls *tls,
                      int plain_check, struct pfi_error *err) {
  if (tls && !tls->cert != !tls->key)
    return pfi_error_set(err, PFI_EINVAL,
                         "a TLS certificate and its key go together "
                         "(--tls-cert, --tls-key)");
  if (tls && tls->client_ca && !tls->cert)
    return pfi_error_set(err, PFI_EINVAL,
                         "client certificates (--tls-client-ca) need TLS: "
                         "--tls-cert and --tls-key");
  if (plain_check && (!tls || (!tls->cert && !tls->insecure)) &&
      !pfi_http_listen_local(listen))
    return pfi_error_set(err, PFI_EINVAL,
                         "plain HTTP on %s, which is not a loopback address: "
                         "bearer tokens and answers would cross the network "
                         "in clear (serve TLS with --tls-cert and --tls-key, "
                         "or allow plain HTTP with --insecure)",
                         listen);
  return 0;
}

int pfi_http_tls_check(const char *listen, const struct pfi_http_tls *tls,
                       struct pfi_error *err) {
  int rc = tls_policy(listen, tls, 1, err);
  if (rc < 0 || !tls || !tls->cert || !listen ||
      strncmp(listen, "unix:", 5) == 0)
    return rc;
  char *text = NULL;
  size_t len = 0;
  if ((rc = read_pem("certificate", tls->cert, 0, &text, &len, err)) < 0)
    return rc;
  free(text);
  text = NULL;
  if ((rc = read_pem("key", tls->key, 1, &text, &len, err)) < 0)
    return rc;
  memset(text, 0, len);
  free(text);
  if (tls->client_ca) {
    text = NULL;
    if ((rc = read_pem("client CA", tls->client_ca, 0, &text, &len, err)) < 0)
      return rc;
    free(text);
  }
  return 0;
}

int pfi_http_start_tls(struct pfi_http **out, const char *listen,
                       const struct pfi_http_limits *lim,
                       const struct pfi_http_tls *tls, pfi_http_fn fn,
                       void *arg, struct pfi_error *err) {
  int rc = tls_policy(listen, tls, 0, err);
  if (rc < 0)
    return rc;
  static const struct pfi_http_tls plain_local = {NULL, NULL, NULL, 0};
  return start(out, listen, lim, tls ? tls : &plain_local, fn, arg, err);
}

int pfi_http_tls_mode(const struct pfi_http *h) { return h->tls_mode; }

int pfi_http_listen_local(const char *listen) {
  if (!listen)
    return 0;
  if (strncmp(listen, "unix:", 5) == 0)
    return 1;
  const char *colon = strrchr(listen, ':');
  char host[128];
  if (!colon || (size_t)(colon - listen) >= sizeof host)
    return 0;
  memcpy(host, listen, (size_t)(colon - listen));
  host[colon - listen] = 0;
  size_t hl = strlen(host);
  struct in_addr a4;
  struct in6_addr a6;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    host[hl - 1] = 0;
    return inet_pton(AF_INET6, host + 1, &a6) == 1 &&
           (IN6_IS_ADDR_LOOPBACK(&a6) ||
            (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127));
  }
  return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* tls NULL: plain HTTP anywhere (pfi_http_start_limits). */
static int start(struct pfi_http **out, const char *listen,
                 const struct pfi_http_limits *lim,
                 const struct pfi_http_tls *tls, pfi_http_fn fn, void *arg,
                 struct pfi_error *err) {
  if (pfi__mhd_error())
    return pfi_error_set(err, PFI_EIO, "cannot serve HTTP: %s",
                         pfi__mhd_error());
  if (listen && strncmp(listen, "unix:", 5) == 0)
    return start_unix(out, listen + 5, lim, fn, arg, err);
  char host[128];
  const char *colon = listen ? strrchr(listen, ':') : NULL;
  if (!colon || (size_t)(colon - listen) >= sizeof host)
    return pfi_error_set(err, PFI_EINVAL,
                         "listen address '%s': expected HOST:PORT",
                         listen ? listen : "");
  memcpy(host, listen, (size_t)(colon - listen));
  host[colon - listen] = 0;
  char *end;
  unsigned long port = strtoul(colon + 1, &end, 10);
  if (!colon[1] || *end || port > 65535)
    return pfi_error_set(err, PFI_EINVAL, "listen address '%s': bad port",
                         listen);
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  size_t hl = strlen(host);
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    host[hl - 1] = 0;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
      return pfi_error_set(err, PFI_EINVAL, "listen address '%s': bad IPv6",
                           listen);
    flags |= MHD_USE_IPv6;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (!host[0])
      s4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
      return pfi_error_set(err, PFI_EINVAL,
                           "listen address '%s': expected an IP address",
                           listen);
  }
  if (tls && !tls->cert && !tls->insecure && !pfi_http_listen_local(listen))
    return pfi_error_set(err, PFI_EINVAL,
                         "plain HTTP on %s, which is not a loopback address: "
                         "bearer tokens and answers would cross the network "
                         "in clear (serve TLS with --tls-cert and --tls-key, "
                         "or allow plain HTTP with --insecure)",
                         listen);
  if (tls && tls->cert && !pfi__mhd_tls_supported())
    return pfi_error_set(err, PFI_EIO,
                         "cannot serve TLS on %s: this libmicrohttpd was "
                         "built without it",
                         listen);
  struct pfi_http *h = http_new(lim, fn, arg);
  if (!h)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  size_t unused;
  int rc;
  if (tls && tls->cert &&
      ((rc = read_pem("certificate", tls->cert, 0, &h->tls_cert, &unused,
                      err)) < 0 ||
       (rc = read_pem("key", tls->key, 1, &h->tls_key, &h->tls_key_len, err)) <
           0 ||
       (tls->client_ca && (rc = read_pem("client CA", tls->client_ca, 0,
                                         &h->tls_ca, &unused, err)) < 0))) {
    http_free(h);
    return rc;
  }
  if (h->tls_cert)
    h->tls_mode = h->tls_ca ? 2 : 1;
  if (http_run(h, flags, (uint16_t)port, (struct sockaddr *)&ss, -1) < 0) {
    int tls_on = h->tls_mode != 0;
    http_free(h);
    return pfi_error_set(err, PFI_EIO,
                         tls_on ? "cannot listen on %s (or the TLS "
                                  "certificate and key are refused: do they "
                                  "match?)"
                                : "cannot listen on %s",
                         listen);
  }
  const union MHD_DaemonInfo *di =
      pfi__mhd_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  h->port = di ? di->port : (unsigned)port;
  *out = h;
  return 0;
}

unsigned pfi_http_port(const struct pfi_http *h) { return h->port; }

void pfi_http_stop(struct pfi_http *h) {
  if (!h)
    return;
  pfi__mhd_stop_daemon(h->d);
  if (h->unix_path[0])
    unlink(h->unix_path);
  http_free(h);
}

int pfi_http_bearer_ok(const char *auth, const char *token) {
  static const char pre[] = "Bearer ";
  if (!auth || !token || !*token || strncmp(auth, pre, sizeof pre - 1) != 0)
    return 0;
  const char *a = auth + sizeof pre - 1;
  size_t la = strlen(a), lt = strlen(token);
  unsigned char d = la != lt;
  for (size_t i = 0; i < lt; i++)
    d |= (unsigned char)(token[i] ^ (i < la ? a[i] : 0));
  return d == 0;
}
