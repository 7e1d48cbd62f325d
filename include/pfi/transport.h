/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet's transport: a NATS connection (the C client libnats), and for
 * the controller the JetStream key-value bucket that holds assignments,
 * events, node liveness and the leader's lease. A thin layer: it connects,
 * reconnects without end (NATS's own logic), and maps the client's
 * statuses to pfi error codes with the server's words in the message.
 *
 * Subjects and keys (docs/fleet.md): bucket "pfi" (PFI_NATS_BUCKET) with
 * keys assign.<node>, event.<id>, node.<node>, leader; the server republishes
 * every assign.<node> value on subject pfi.assign.<node>, which is all an
 * agent may subscribe to; agents publish on pfi.telemetry.<node>.
 */
#ifndef PFI_TRANSPORT_H
#define PFI_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/secret.h" /* pfi_read_secret: password_file */

#define PFI_NATS_BUCKET "pfi"

/* Servers at most in pfi_nats_opts.url. */
#define PFI_NATS_SERVERS_MAX 16

struct pfi_nats_opts {
  const char *url;           /* "nats://127.0.0.1:4222"; NULL: that. A
                                comma-separated list names a cluster's
                                servers: the client connects to one (in
                                random order) and reconnects to the
                                others when it is lost */
  const char *user;          /* NULL: no user */
  const char *password_file; /* the user's password, first line of a file
                                readable by its owner only (0600) */
  const char *name;          /* connection name the server shows */
  int bucket;                /* 1: bind the bucket, creating it if absent
                                (the controller); 0: core NATS only */
  int history;               /* values kept per key (1..64), bucket only */
  double timeout_s;          /* per request (key-value operations), s */
  int background;            /* 1: return at once when the server cannot be
                                reached (core NATS only): the connection is
                                made in the background, and a subscription
                                made before is sent then (pfi-agent: its
                                hold and restore clock and its signals do
                                not wait for NATS); 0: wait for it */
  int replicas;              /* the bucket's stream's replicas when this
                                connection creates it; 0: 3 when url lists
                                three servers or more, else 1 */
  /* TLS (docs/fleet.md "Security"): used when a URL is tls:// or tls_ca
   * or tls_cert is set; the servers' certificates are then verified (the
   * chain against tls_ca, else the system's CAs, and the name, see
   * tls_name). */
  const char *tls_ca;   /* CA certificates (PEM) the servers'
                           certificates must chain to */
  const char *tls_cert; /* client certificate chain (PEM), for a
                           server that requires one (mTLS); with
                           tls_key */
  const char *tls_key;  /* its private key (PEM), a secret file
                           (pfi_read_secret's rules) */
  const char *tls_name; /* the name the servers' certificates must
                           carry; NULL: each server's certificate must
                           name the host (DNS name or IP address) of
                           the URL it was reached by (libnats) */
  /* A NATS account's user, instead of user and password_file (at most one
   * of the three ways): */
  const char *creds_file; /* credentials file (user JWT and nkey seed,
                             as nsc writes it), a secret file */
  const char *nkey_file;  /* an nkey user's seed (first line, SU...), a
                             secret file; user is then the nkey's
                             public key (U...) */
  int insecure;           /* 1: plain text to a server that is not on
                             loopback allowed; 0: refused
                             (PFI_EINVAL) */
};

struct pfi_nats;
struct pfi_nats_sub;

/* Splits a server list (pfi_nats_opts.url: URLs separated by commas,
 * spaces around each allowed, empty entries skipped) into url[0..count-1],
 * pointers into buf (n bytes, where list is copied and cut). Returns the
 * count, 1..max; PFI_EINVAL (naming --nats) for a list without a URL, one
 * of more than max, or one that does not fit in buf. */
int pfi_nats_servers_split(const char *list, char *buf, size_t n,
                           const char **url, int max, struct pfi_error *err);

/* The host of a NATS URL ("nats://u:p@host:4222", "tls://[::1]:4222",
 * "host:4222", "host") into host (n bytes, brackets of an IPv6 address
 * removed). Returns its length, or PFI_EINVAL (no host, or longer than
 * n - 1). */
int pfi_nats_url_host(const char *url, char *host, size_t n,
                      struct pfi_error *err);
/* 1 when host is a loopback address: "localhost", 127.0.0.0/8 in dotted
 * form, "::1"; else 0. */
int pfi_nats_host_loopback(const char *host);

/* What a connection with `o` will be, in one line for the start-up log
 * (buf, n bytes): "TLS, CA ca.pem, certificate name nats.example,
 * client certificate, nkey user UA..." or "plain text (loopback)" or
 * "plain text to 10.0.0.5 (insecure)". Returns 0, or PFI_EINVAL (naming
 * the option) for plain text to a server not on loopback without
 * o->insecure, two of user/password, creds_file and nkey_file, tls_cert
 * without tls_key or the reverse, nkey_file without a user that is an
 * nkey public key, a server list pfi_nats_servers_split refuses. */
int pfi_nats_describe(const struct pfi_nats_opts *o, char *buf, size_t n,
                      struct pfi_error *err);

/* Connects (retrying in the background when the server is not up yet:
 * with o->background the call returns at once, else it waits until the
 * server answers). A server that refuses the connection for good (its
 * certificate not verified, the client's refused, the credentials
 * refused) is an error at once rather than retried. Returns 0, PFI_EIO
 * (cannot connect, with the client's message), PFI_ENOPERM (a secret file
 * readable by others; the server refused the credentials, or with bucket
 * = 1 JetStream's API), PFI_EINVAL (what pfi_nats_describe refuses),
 * PFI_ENOMEM. */
int pfi_nats_open(struct pfi_nats **nc, const struct pfi_nats_opts *o,
                  struct pfi_error *err);
void pfi_nats_close(struct pfi_nats *nc);
/* 1 while connected to a server. */
int pfi_nats_connected(struct pfi_nats *nc);

/* Publishes `len` bytes on `subject` without waiting (the client sends
 * it in the background). PFI_EIO when the connection cannot take it. */
int pfi_nats_publish(struct pfi_nats *nc, const char *subject, const void *data,
                     size_t len, struct pfi_error *err);
/* Publishes and waits (flush, within the timeout) for the server's answer:
 * PFI_EIO when the connection cannot (the message names why), PFI_ENOPERM
 * when the server refused the subject (permissions violation). */
int pfi_nats_publish_checked(struct pfi_nats *nc, const char *subject,
                             const void *data, size_t len,
                             struct pfi_error *err);

/* A subscription whose messages are read with pfi_nats_next. */
int pfi_nats_subscribe(struct pfi_nats *nc, const char *subject,
                       struct pfi_nats_sub **sub, struct pfi_error *err);
/* Subscribes and waits (flush) for the server's answer: PFI_ENOPERM when
 * it refused the subject (permissions violation), PFI_EIO when the
 * connection cannot answer. */
int pfi_nats_subscribe_checked(struct pfi_nats *nc, const char *subject,
                               struct pfi_nats_sub **sub,
                               struct pfi_error *err);
/* One subscription of n subjects (many agents' in one process, the scale
 * benchmark): their messages in the order they arrive, read with
 * pfi_nats_next. */
int pfi_nats_subscribe_many(struct pfi_nats *nc, const char *const *subjects,
                            size_t n, struct pfi_nats_sub **sub,
                            struct pfi_error *err);
/* An agent's subscription to its assignments, subject pfi.assign.<node>,
 * fenced by the bucket: pfi_nats_next takes only the server's republication
 * of key assign.<node> (headers Nats-Stream KV_pfi, Nats-Subject
 * $KV.pfi.assign.<node>, Nats-Sequence, the key's revision); a message
 * published on the subject directly is dropped and counted
 * (pfi_nats_sub_dropped). */
int pfi_nats_subscribe_assign(struct pfi_nats *nc, const char *node,
                              struct pfi_nats_sub **sub, struct pfi_error *err);
unsigned long pfi_nats_sub_dropped(const struct pfi_nats_sub *sub);
void pfi_nats_unsubscribe(struct pfi_nats_sub *sub);
/* Waits at most `timeout_s` for the next message: returns 1 with a malloc'd
 * copy in *data (NUL-terminated, *len bytes; caller frees) and its subject
 * in subj (n bytes), 0 on timeout, or PFI_EIO. */
int pfi_nats_next(struct pfi_nats_sub *sub, double timeout_s, char **data,
                  size_t *len, char *subj, size_t n, struct pfi_error *err);

/* ---- the key-value bucket (connections opened with bucket = 1) ---------- */

/* Returns 1 with a malloc'd NUL-terminated copy (caller frees) and the
 * revision, 0 when absent (or deleted), or PFI_EIO. */
int pfi_nats_kv_get(struct pfi_nats *nc, const char *key, char **val,
                    size_t *len, uint64_t *rev, struct pfi_error *err);
int pfi_nats_kv_put(struct pfi_nats *nc, const char *key, const void *val,
                    size_t len, uint64_t *rev, struct pfi_error *err);
/* Writes only when the key is absent: PFI_EBUSY when present. */
int pfi_nats_kv_create(struct pfi_nats *nc, const char *key, const void *val,
                       size_t len, uint64_t *rev, struct pfi_error *err);
/* Compare-and-set: writes only when the key's revision is `last`;
 * PFI_ESTATE when it is not (someone else wrote it). */
int pfi_nats_kv_update(struct pfi_nats *nc, const char *key, const void *val,
                       size_t len, uint64_t last, uint64_t *rev,
                       struct pfi_error *err);
/* One write of pfi_nats_kv_cas_batch. */
#define PFI_NATS_KV_ANY UINT64_MAX
struct pfi_nats_kv_op {
  const char *key;
  const void *val;
  size_t len;
  uint64_t last; /* the revision the key must have; 0: it must not exist;
                    PFI_NATS_KV_ANY: any (a plain put) */
  /* Set by the batch: */
  int rc;       /* 0 written (rev is its revision); PFI_ESTATE the key's
                   revision was not `last` (someone else wrote it; with last
                   0, it exists or has a deletion marker); PFI_EIO no answer
                   within the timeout or a JetStream error (it may have been
                   written); PFI_EINTR not sent (the batch stopped) */
  uint64_t rev;
};
/* Compare-and-set of n keys, pipelined: up to `window` writes await the
 * server's answers at once (each a JetStream publish with the expected last
 * subject sequence, answered on the connection's own inbox), instead of one
 * round trip after the other. Each op's outcome is in its rc; once a write
 * loses (PFI_ESTATE) or the connection refuses one, no further op is sent.
 * The answers are waited for at most the connection's timeout each (the
 * writes still without one are PFI_EIO). Returns the number written, or
 * PFI_EIO / PFI_ESTATE (no bucket) when none could be tried; err holds the
 * last failure's message. */
int pfi_nats_kv_cas_batch(struct pfi_nats *nc, struct pfi_nats_kv_op *ops,
                          size_t n, unsigned window, struct pfi_error *err);
int pfi_nats_kv_delete(struct pfi_nats *nc, const char *key,
                       struct pfi_error *err);
/* The keys under `prefix` ("" for all, else ending in '.', e.g. "event."):
 * *keys a malloc'd array of *n malloc'd strings (free with
 * pfi_nats_keys_free), from one stream-information request. A deleted key
 * may be listed (pfi_nats_kv_get then finds it absent). */
int pfi_nats_kv_keys(struct pfi_nats *nc, const char *prefix, char ***keys,
                     size_t *n, struct pfi_error *err);
void pfi_nats_keys_free(char **keys, size_t n);
/* Makes the bucket again when the server has lost it (its JetStream store
 * gone: the stream is not found), with the configuration it was opened
 * with; the connection's handle works on it as before. Returns 0 when it
 * was there, 1 when it was made again (empty: the caller writes back what
 * it needs), PFI_EIO when the server cannot say or make it. */
int pfi_nats_kv_ensure(struct pfi_nats *nc, struct pfi_error *err);

#endif
