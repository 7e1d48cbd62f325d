/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet controller's daemon core: leader election through the
 * key-value bucket, the node table fed by the agents' telemetry, grid
 * events, assignments with sequence numbers and leases, the two-phase rule
 * across agents, records in SQLite, and the HTTP API (docs/fleet.md).
 */
#ifndef PFI_PFID_H
#define PFI_PFID_H

#include <signal.h>

#include "pfi/error.h"
#include "pfi/http.h"
#include "pfi/transport.h"

struct pfi_pfid_opts {
  const char *id; /* this instance's name (pfi_fleet_name_ok) */
  struct pfi_nats_opts nats;
  const char *records;    /* SQLite file of the decision records */
  const char *api_listen; /* "127.0.0.1:8470"; NULL: no API */
  const char *token_file; /* bearer token for mutations (mode 0600) */
  double period_s;        /* control period (default 1) */
  double lease_s;         /* agents' lease (default 5) */
  double leader_lease_s;  /* leader's lease in the bucket (default 3) */
  double stale_s;         /* a node without telemetry this long is stale
                             (default 3) */
  double ramp_up_w_s;     /* most a GPU's cap rises per second, in an event
                             and its recovery (0: the control module's
                             default, 100 W/s) */
  double margin;          /* aim this share below the event's target, and */
  double recovery_margin; /* the recovery's raises aim this share of its
                             ceiling under its ramp (0: the control
                             module's defaults, 0.002 and 0.004) */
  /* Live flexible capacity (docs/fleet.md): a tier file (tier,max_loss,
   * max_event_s,notice_s: each job's longest event is its tier's, found
   * by max_loss), and a PFI model with the features of the jobs (each
   * job's estimate and prediction interval: the controller's prior and
   * the capacity's interval). NULL: none. */
  const char *tiers_file;
  const char *model_file, *features_file;
  /* The meter chain (the file of pfi grid meter --config): with it events
   * may state their target at the node or meter level, converted to GPU
   * power each period; NULL: GPU targets only. */
  const char *meter_config;
  /* The recovery after an event (docs/control.md "Recovery"): the fleet's
   * GPU power rises at most recovery_ramp_w_s W/s (0: the control
   * module's default, 5 % of the ceiling per second), every job back at
   * its pre-event caps within recovery_s (0: 900 s). */
  double recovery_ramp_w_s, recovery_s;
  /* Bounds on an event posted to the API (400 beyond them): it lasts at
   * most event_max_s (0: 48 h) and starts at most event_ahead_s after its
   * submission (0: 7 days). */
  double event_max_s, event_ahead_s;
  /* What the controller's split maximizes (enum pfi_objective_kind,
   * objective.h; docs/control.md "Objective"): 0, PFI_OBJ_WORK, the
   * default. */
  int objective;
  /* Named API tokens with roles (pfi/apitoken.h; a secret file read by
   * pfi_read_secret's rules): with them every API request needs a token
   * of its role, reads included; NULL: none. token_file's token, if
   * also given, is one more, named "token-file", role admin. */
  const char *tokens_file;
  /* The API's bounds against slow and flooding clients (pfi/http.h): a
   * request's deadline and the connections one client may hold; 0: the
   * defaults, PFI_HTTP_DEADLINE_S and PFI_HTTP_PER_CLIENT. */
  struct pfi_http_limits api_limits;
  /* The API's TLS (pfi/http.h): HTTPS with a certificate and key, client
   * certificates with a client CA; without a certificate, plain HTTP on a
   * non-loopback api_listen only with insecure set. */
  struct pfi_http_tls api_tls;
};

struct pfi_pfid;

/* Connects, opens the records and starts the API. Returns 0 or an error
 * (PFI_EINVAL for bad options, PFI_EIO, PFI_EDB, PFI_ENOPERM). */
int pfi_pfid_open(struct pfi_pfid **d, const struct pfi_pfid_opts *o,
                  struct pfi_error *err);
/* Runs periods until *stop is set (by a signal handler). Returns 0 or a
 * fatal error. */
int pfi_pfid_run(struct pfi_pfid *d, volatile sig_atomic_t *stop,
                 struct pfi_error *err);
/* The API's port (0 when none). */
unsigned pfi_pfid_api_port(const struct pfi_pfid *d);
/* The API's TLS as pfi_http_tls_mode (0 plain or no API, 1 HTTPS, 2
 * HTTPS with client certificates). */
int pfi_pfid_api_tls(const struct pfi_pfid *d);
void pfi_pfid_close(struct pfi_pfid *d);

struct pfi_restab;
/*
 * pfid's answer to GET /v1/records?table=audit (`len` bytes of JSON: a list
 * of rows with id, t, pfid, who, role, peer, method, path, body, status and
 * optionally error) as a result table (pfi/restab.h, initialized here) of
 * the columns id, time (t in UTC as RFC 3339, whole seconds), pfid, who,
 * role, peer, method, path, status, error (empty when none) and body, one
 * row per row: what `pfi ctl audit` prints. Returns 0 (the caller
 * releases t with pfi_restab_release), PFI_EPARSE (not JSON, not a list,
 * or "row N: field "F": missing or of the wrong type"; t released) or
 * PFI_ENOMEM.
 */
int pfi_pfid_audit_table(const char *json, size_t len, struct pfi_restab *t,
                         struct pfi_error *err);

#endif
