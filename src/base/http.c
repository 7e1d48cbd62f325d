/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The HTTP server under pfid's API and the /metrics endpoints. */
#include "pfi/http.h"

#include "mhd_dl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct pfi_http {
  struct MHD_Daemon *d;
  pfi_http_fn fn;
  void *arg;
  unsigned port;
  size_t body_max;
  char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

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
      -1};
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
  struct body *b = *con_cls;
  if (b) {
    free(b->buf);
    free(b);
    *con_cls = NULL;
  }
}

static int start_unix(struct pfi_http **out, const char *path,
                      size_t body_max, pfi_http_fn fn, void *arg,
                      struct pfi_error *err) {
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
  struct pfi_http *h = calloc(1, sizeof *h);
  if (!h) {
    close(fd);
    unlink(path);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  h->fn = fn;
  h->arg = arg;
  h->body_max = body_max;
  memcpy(h->unix_path, path, strlen(path) + 1);
  h->d = pfi__mhd_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, handler, h,
      MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, completed,
      h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_END);
  if (!h->d) {
    close(fd);
    unlink(path);
    free(h);
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
  if (pfi__mhd_error())
    return pfi_error_set(err, PFI_EIO, "cannot serve HTTP: %s",
                         pfi__mhd_error());
  if (listen && strncmp(listen, "unix:", 5) == 0)
    return start_unix(out, listen + 5, body_max, fn, arg, err);
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
  struct pfi_http *h = calloc(1, sizeof *h);
  if (!h)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  h->fn = fn;
  h->arg = arg;
  h->body_max = body_max;
  h->d = pfi__mhd_start_daemon(
      flags, (uint16_t)port, handler, h, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)256, MHD_OPTION_END);
  if (!h->d) {
    free(h);
    return pfi_error_set(err, PFI_EIO, "cannot listen on %s", listen);
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
  free(h);
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
