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

#define PFI_NATS_BUCKET "pfi"

struct pfi_nats_opts {
  const char *url;           /* "nats://127.0.0.1:4222"; NULL: that */
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
};

struct pfi_nats;
struct pfi_nats_sub;

/* Connects (retrying in the background when the server is not up yet:
 * with o->background the call returns at once, else it waits until the
 * server answers). Returns 0, PFI_EIO (cannot connect, with the client's
 * message), PFI_ENOPERM (password file readable by others; with bucket =
 * 1, the server refused the credentials JetStream's API), PFI_ENOMEM. */
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

/* Reads a secret (password, token): the first line of `path`, which must
 * be a regular file not readable or writable by group or others (nor
 * through a POSIX ACL, but by the reader). "cred:NAME" is NAME in
 * $CREDENTIALS_DIRECTORY (systemd's LoadCredential=). Symlinks (a
 * Kubernetes Secret volume's) are followed only through directories owned
 * by root or the reader and not writable by others (sticky ones aside),
 * to a file owned by root or the reader (docs/security.md "Secrets").
 * Returns its length, PFI_ENOPERM (mode, owner), PFI_EINVAL (a cred: name
 * without $CREDENTIALS_DIRECTORY), PFI_EIO, PFI_EPARSE (empty, too long). */
int pfi_read_secret(const char *path, char *buf, size_t n,
                    struct pfi_error *err);
/* As pfi_read_secret, the whole file (at most n - 2 bytes, no NUL byte,
 * NUL-terminated in buf): a file of several secrets (pfid --tokens). */
int pfi_read_secret_file(const char *path, char *buf, size_t n,
                         struct pfi_error *err);

#endif
