/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Private to the NATS transport (transport.c, transport_sec.c): the
 * connection and what the connecting code and the security options share. */
#ifndef PFI_FLEET_TRANSPORT_INT_H
#define PFI_FLEET_TRANSPORT_INT_H

#include <nats/nats.h>
#include <pthread.h>
#include <stdint.h>

#include "pfi/transport.h"

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

/* err filled from a client status, `what` naming the step; returns the
 * pfi code. */
int pfi__nats_err(struct pfi_error *err, natsStatus s, const char *what);
/* The servers of `list` (comma-separated) set on opts. */
int pfi__nats_set_servers(natsOptions *opts, const char *list,
                          struct pfi_error *err);
/* The options' rules; *tls whether TLS is on, `name` the certificates'
 * name to check ("" none given), `remote` a host off loopback ("" none). */
int pfi__nats_check_opts(const struct pfi_nats_opts *o, int *tls, char *name,
                         char *remote, size_t n, struct pfi_error *err);
/* Whether a first connection's failure will not pass by waiting (a
 * certificate or an account refused). */
int pfi__nats_refused_for_good(natsStatus s, int tls);
/* TLS, client certificate, nkey or credentials file set on opts. */
int pfi__nats_set_security(struct pfi_nats *p, natsOptions *opts,
                           const struct pfi_nats_opts *o, int tls,
                           const char *name, struct pfi_error *err);

#endif
