/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A small HTTP server (libmicrohttpd, one internal thread, the library
 * loaded on first use) for pfid's API, the /metrics endpoints and the
 * OpenADR webhook of `pfi grid bridge --listen`. The handler runs on that
 * thread: it must take its own locks. Request bodies are limited to
 * PFI_HTTP_BODY_MAX bytes (larger ones get 413 without reaching the handler).
 *
 * Bounds against slow and flooding clients (docs/security.md): each
 * request must be received and answered within PFI_HTTP_DEADLINE_S of its
 * connection's accept or of the previous answer on it (its socket is shut
 * down past that, however steadily it trickles); each client holds at most
 * PFI_HTTP_PER_CLIENT connections (more are shut down as they are
 * accepted), a client being a local user (a Unix socket's peer, or a
 * loopback TCP peer by its socket's owner) or a remote address; 256
 * connections in all, 10 s idle at most.
 */
#ifndef PFI_HTTP_H
#define PFI_HTTP_H

#include <stddef.h>

#include "pfi/error.h"

#define PFI_HTTP_BODY_MAX 65536
#define PFI_HTTP_DEADLINE_S 10.0
#define PFI_HTTP_PER_CLIENT 16

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
  const char *peer; /* who connected, for records: "127.0.0.1:40312 uid
                       1000", "[::1]:5000", "unix uid 0 pid 42"; "" unknown */
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
/* The bounds of pfi_http_start_limits; 0 is the default. */
struct pfi_http_limits {
  size_t body_max;     /* bytes (PFI_HTTP_BODY_MAX) */
  double deadline_s;   /* a request's, s (PFI_HTTP_DEADLINE_S) */
  unsigned per_client; /* open connections (PFI_HTTP_PER_CLIENT) */
};
int pfi_http_start_limits(struct pfi_http **h, const char *listen,
                          const struct pfi_http_limits *lim, pfi_http_fn fn,
                          void *arg, struct pfi_error *err);
/* Connections shut down so far: *refused over the per-client limit, *cut
 * past the deadline. */
void pfi_http_stats(struct pfi_http *h, unsigned long *refused,
                    unsigned long *cut);
/* The port listened on (0 on a Unix socket). */
unsigned pfi_http_port(const struct pfi_http *h);
void pfi_http_stop(struct pfi_http *h);

/* Compares a request's Authorization header with "Bearer <token>" in time
 * independent of where they differ. 1 when equal. */
int pfi_http_bearer_ok(const char *auth, const char *token);

/* ---- TLS ---------------------------------------------------------------
 * A server's TLS (libmicrohttpd's GnuTLS; docs/security.md "TLS"). With a
 * certificate and key it serves HTTPS on a TCP address (a Unix socket stays
 * plain: only local processes reach it, and its peer's user is known);
 * with client_ca also, each request must come over a connection whose
 * client presented a certificate that client_ca signed (mutual TLS),
 * others get 403. Without a certificate, plain HTTP is served on a
 * loopback address or a Unix socket, and elsewhere only when insecure is
 * set (pfi_http_start_tls refuses it otherwise).
 */
struct pfi_http_tls {
  const char *cert;      /* PEM certificate (chain) file; NULL: plain HTTP */
  const char *key;       /* its PEM private key, a secret file read by
                            pfi_read_secret's rules (mode 0600) */
  const char *client_ca; /* PEM CA file for client certificates; NULL:
                            none asked for */
  int insecure;          /* plain HTTP allowed on any address */
};

/* As pfi_http_start_limits (lim may be NULL), with TLS per `tls` (NULL:
 * none, as all fields 0: plain HTTP on loopback only). Returns 0,
 * PFI_EINVAL (bad address; a key without a certificate or the reverse;
 * client_ca without them; plain HTTP on a non-loopback address without
 * insecure), PFI_ENOPERM (the key file is readable by others), PFI_EIO (a
 * file cannot be read, the certificate and key are refused, libmicrohttpd
 * lacks TLS or cannot listen) or PFI_EPARSE (a file is empty or not
 * PEM). */
int pfi_http_start_tls(struct pfi_http **h, const char *listen,
                       const struct pfi_http_limits *lim,
                       const struct pfi_http_tls *tls, pfi_http_fn fn,
                       void *arg, struct pfi_error *err);

/* The checks pfi_http_start_tls makes of `tls` for `listen` before it
 * listens (the certificate and key together, client_ca with them, plain
 * HTTP off loopback only with insecure; on a TCP address the key read by
 * pfi_read_secret's rules and the certificate readable), for a program
 * that wants them before it opens anything else. 0, or its errors. */
int pfi_http_tls_check(const char *listen, const struct pfi_http_tls *tls,
                       struct pfi_error *err);

/* 1 when h serves HTTPS, 2 when it also asks for client certificates, 0
 * plain HTTP. */
int pfi_http_tls_mode(const struct pfi_http *h);

/* 1 when the listen address (pfi_http_start's) is a Unix socket or on a
 * loopback address (127.0.0.0/8, [::1]); 0 otherwise, a wildcard (":9400",
 * "0.0.0.0:9400", "[::]:9400") or an address that does not parse
 * included. */
int pfi_http_listen_local(const char *listen);

/* 1 when an http(s) URL's host is a loopback address (127.0.0.0/8, [::1])
 * or "localhost"; 0 otherwise (another host, user information before it,
 * no scheme). */
int pfi_http_url_local(const char *url);

/* A client's TLS (libcurl: pfi ctl, the grid bridge's pfid client, the
 * VEN). An https URL's server certificate is always verified (against
 * cacert, or the system's CAs when NULL) unless insecure is set; cert and
 * key, together, are this client's certificate for mutual TLS. Plain http
 * to a host that is not loopback is refused unless insecure is set. */
struct pfi_http_client_tls {
  const char *cacert; /* PEM CA file the server's certificate chains to */
  const char *cert;   /* PEM client certificate file */
  const char *key;    /* its private key (pfi_read_secret's rules) */
  int insecure;       /* plain http anywhere, https unverified */
};

/* Checks a client's TLS settings against the URL it will use: 0, or
 * PFI_EINVAL (not http(s); plain http to another host without insecure;
 * cert without key or the reverse; cert or cacert over plain http),
 * PFI_EIO (cacert or cert unreadable), PFI_ENOPERM (the key readable by
 * others) with the reason in err. */
int pfi_http_client_tls_check(const char *url,
                              const struct pfi_http_client_tls *tls,
                              struct pfi_error *err);

#endif
