/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A small HTTP server (libmicrohttpd, one internal thread, the library
 * loaded on first use) for pfid's API, the /metrics endpoints and the
 * OpenADR webhook of `pfi grid bridge --listen`. The handler runs on that thread: it must
 * take its own locks. Request bodies are limited to PFI_HTTP_BODY_MAX bytes
 * (larger ones get 413 without reaching the handler).
 */
#ifndef PFI_HTTP_H
#define PFI_HTTP_H

#include <stddef.h>

#include "pfi/error.h"

#define PFI_HTTP_BODY_MAX 65536

struct pfi_http_req {
  const char *method; /* "GET", "POST", "DELETE" ... */
  const char *path;   /* "/v1/status", without the query */
  const char *auth;   /* the Authorization header, or NULL */
  const char *body;   /* NUL-terminated; "" when none */
  size_t body_len;
  const char *(*arg)(const struct pfi_http_req *rq, const char *key);
  void *conn; /* for arg() */
  long peer_pid; /* a Unix socket's peer process (SO_PEERCRED), or -1 */
  long peer_uid; /* and its user id, or -1 */
};

struct pfi_http_resp {
  int status;       /* 200 unless set */
  const char *type; /* content type; "application/json" unless set */
  char *body;       /* malloc'd by the handler (freed by the server) */
  size_t len;
  const char *www_authenticate; /* a WWW-Authenticate header (static), or
                                   NULL */
};

typedef void (*pfi_http_fn)(void *arg, const struct pfi_http_req *rq,
                            struct pfi_http_resp *rs);

struct pfi_http;

/*
 * Listens on `listen` ("127.0.0.1:8080", "[::1]:0", ":9400" for every
 * address; port 0 picks a free port; "unix:PATH" a Unix socket, made mode
 * 0666 (any local process may connect), an existing socket file replaced).
 * Returns 0, PFI_EINVAL (bad address), PFI_EIO (cannot listen, or
 * libmicrohttpd, loaded on this first use, is missing: the message says
 * so). Stop with pfi_http_stop() (which removes the socket file).
 */
int pfi_http_start(struct pfi_http **h, const char *listen, pfi_http_fn fn,
                   void *arg, struct pfi_error *err);
/* As pfi_http_start, with request bodies of up to body_max bytes (larger
 * ones get 413 without reaching the handler). */
int pfi_http_start_max(struct pfi_http **h, const char *listen,
                       size_t body_max, pfi_http_fn fn, void *arg,
                       struct pfi_error *err);
/* The port listened on (0 on a Unix socket). */
unsigned pfi_http_port(const struct pfi_http *h);
void pfi_http_stop(struct pfi_http *h);

/* Compares a request's Authorization header with "Bearer <token>" in time
 * independent of where they differ. 1 when equal. */
int pfi_http_bearer_ok(const char *auth, const char *token);

#endif
