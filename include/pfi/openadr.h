/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * OpenADR 3.1 (the OpenADR Alliance's REST API, openadr3.yaml 3.1.0): the
 * VEN side. Decodes events into power-target spans (include/pfi/timeline.h)
 * and talks to a VTN over HTTP(S): OAuth2 client credentials, programs,
 * events (polled, or announced by webhook subscriptions, whose
 * notifications a listener serves), reports.
 *
 * Payload types acted on, and how each becomes a limit (docs/grid.md):
 *   IMPORT_CAPACITY_LIMIT        the value is the site's import limit:
 *                                limit = value x unit, at the meter level
 *                                unless the config says otherwise;
 *   DISPATCH_SETPOINT            absolute consumption: limit = value x unit;
 *   DISPATCH_SETPOINT_RELATIVE   a signed change from the baseline
 *                                (negative: a decrease):
 *                                limit = baseline + value x unit, or with
 *                                units PERCENT, baseline x (1 + value/100);
 *   SIMPLE                       level 0-3 mapped by the config to a
 *                                fraction of the baseline (level 0: no
 *                                limit).
 * Units come from the event's (or program's) payloadDescriptors: W, KW, MW
 * (case-insensitive), PERCENT for the relative type; none means the
 * config's default unit. Other payload types in an event are ignored (and
 * counted); an event with none of these types yields no span.
 */
#ifndef PFI_OPENADR_H
#define PFI_OPENADR_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/timeline.h"

/* Largest body the VEN reads from a VTN, bytes: larger is an error. */
#define PFI_OADR_MAX_BODY (8u << 20)

struct pfi_oadr_config {
  double baseline_w;      /* for relative and SIMPLE payloads; 0 = unknown */
  double simple_frac[4];  /* SIMPLE level -> limit as fraction of baseline;
                             NAN for "no limit" (default level 0) */
  double default_unit_w;  /* watts per payload unit when none is given */
  int capacity_level;     /* level of IMPORT_CAPACITY_LIMIT (meter) */
  int setpoint_level;     /* level of the DISPATCH_SETPOINT types (meter) */
  int64_t now_s;          /* "now" for 'do it now' events, Unix s */
  uint64_t seed;          /* randomizeStart draws: same seed, same shift */
  int64_t horizon_s;      /* events without end are cut here (now + 1 y) */
  const char *program_id; /* events of another programID are skipped (and
                             counted); NULL: every program's */
};

/* Defaults: baseline unknown; SIMPLE levels 0/1/2/3 -> no limit / 0.90 /
 * 0.75 / 0.50 of the baseline; a payload without units is in kW (as
 * OpenADR programs usually state power); both levels meter; seed 1; horizon
 * now + 365 days. */
void pfi_oadr_config_init(struct pfi_oadr_config *cfg, int64_t now_s);

/* What decoding found beyond the spans. */
struct pfi_oadr_stats {
  size_t events;        /* event objects read */
  size_t spans;         /* spans added */
  size_t ignored_types; /* payloads of other types */
  size_t expired;       /* events wholly in the past */
  size_t other_program; /* events of another program than cfg->program_id */
};

/*
 * Decodes a JSON array of OpenADR 3 event objects (the body of GET /events)
 * and appends one span per interval (and per sub-interval of a multi-valued
 * payload) to `out`, with source PFI_SRC_OPENADR. Each event must have an
 * `id` and a `programID`; `priority` defaults to the lowest priority;
 * `scheduled_s` is its modificationDateTime (else createdDateTime, else 0).
 * Bad input: PFI_EPARSE naming the field path ("events[2].intervals[0].
 * payloads[0].values[0]: expected a number >= 0") and, for JSON syntax,
 * line and column in `name`. Intervals are bounded (10,000 per event). On
 * error nothing is appended. Returns the number of spans added.
 */
int pfi_oadr_decode_events(const char *name, const char *json, size_t len,
                           const struct pfi_oadr_config *cfg,
                           struct pfi_timeline *out,
                           struct pfi_oadr_stats *stats, struct pfi_error *err);

/*
 * Decodes a webhook notification body (OpenADR 3 `notification`:
 * objectType, operation, object). The body may also be a JSON string
 * holding that JSON, and its keys snake_case (object_type, program_id,
 * interval_period...: each read as its camelCase name where that is not
 * there too), as some VTNs send them. For an EVENT object with operation CREATE
 * or UPDATE, appends its spans as pfi_oadr_decode_events() would and sets
 * *event_id (the caller drops that event's earlier spans first); for DELETE
 * sets *deleted = 1 and *event_id. READ and other object types return 0
 * and change nothing. event_id must hold PFI_TIMELINE_ID_MAX bytes.
 */
int pfi_oadr_decode_notification(const char *json, size_t len,
                                 const struct pfi_oadr_config *cfg,
                                 struct pfi_timeline *out, char *event_id,
                                 int *deleted, struct pfi_error *err);

/* ---- the VEN client ----------------------------------------------------- */

struct pfi_ven_config {
  const char *vtn_url;   /* base URL, e.g. http://127.0.0.1:8080/openadr3 */
  const char *client_id; /* OAuth2 client credentials */
  const char *client_secret;
  const char *program_name; /* the program whose events are acted on */
  const char *ven_name;     /* clientName in reports */
  long timeout_ms;          /* per request (default 5000) */
  /* Where the client secret is posted (an http(s) URL, https when the
   * VTN's is); NULL: the token URL the VTN's /auth/server names, only
   * when on the VTN's own origin (scheme, host and port), else
   * <vtn_url>/auth/token. */
  const char *token_url;
  /* A PEM CA file that an https VTN's (and token URL's) certificate must
   * chain to, only it trusted; NULL: the system's CAs. The certificate is
   * always verified. Only with an https VTN URL. */
  const char *cacert;
};

/* 1 when two http(s) URLs have the same origin: scheme, host (case aside)
 * and port (80 and 443 by default); 0 otherwise, or for a URL with user
 * information or no host. */
int pfi_ven_same_origin(const char *a, const char *b);

struct pfi_ven;

/* Opens a client (no network traffic yet). Copies the strings. */
int pfi_ven_open(const struct pfi_ven_config *cfg, struct pfi_ven **out,
                 struct pfi_error *err);
void pfi_ven_close(struct pfi_ven *v);

/*
 * Gets a token when none is held or it expires within 30 s (GET
 * /auth/server for the token URL, then POST it with grant_type
 * client_credentials; a token URL on another origin than the VTN's is
 * refused, PFI_ENOPERM, the secret not sent: see pfi_ven_config), finds the
 * program by name (GET /programs), and reads its events (GET
 * /events?programID=..., pages of 50; an event of another program in the answer
 * is skipped, as a VTN that ignores the filter would send it). A 401 answer
 * drops the token and retries once with a new one. The events' spans are
 * appended to `out`. Errors: PFI_EIO (network, HTTP status; the message
 * names the path and status), PFI_ENOPERM (credentials refused),
 * PFI_ENOTFOUND (no such program), PFI_EPARSE (a malformed answer, naming
 * the field). On error `out` is unchanged.
 */
int pfi_ven_poll(struct pfi_ven *v, const struct pfi_oadr_config *cfg,
                 struct pfi_timeline *out, struct pfi_oadr_stats *stats,
                 struct pfi_error *err);

/* The program id found by the last successful poll ("" before). */
const char *pfi_ven_program_id(const struct pfi_ven *v);

/* One value of a report. */
struct pfi_ven_report_value {
  const char *type; /* USAGE (Wh), DEMAND (W), BASELINE (W),
                       LOAD_SHED_DELTA_AVAILABLE (W) */
  double value;
  const char *units;        /* "WH", "W"... */
  const char *reading_type; /* e.g. "MEAN", "DIRECT_READ", "FORECAST" */
};

/* A report for one interval of one event, as POST /reports takes it. */
struct pfi_ven_report {
  const char *event_id;
  const char *report_name;
  const char *resource_name; /* "AGGREGATED_REPORT" when NULL */
  int64_t start_s;
  double duration_s;
  const struct pfi_ven_report_value *values;
  size_t nvalues;
};

/* Builds the JSON body of a report (caller frees with free()). Non-finite
 * values are PFI_EINVAL. */
int pfi_ven_report_json(const struct pfi_ven_report *r, const char *ven_name,
                        const char *program_id, char **out,
                        struct pfi_error *err);

/* POSTs a report (token handling as pfi_ven_poll). */
int pfi_ven_send_report(struct pfi_ven *v, const struct pfi_ven_report *r,
                        struct pfi_error *err);

/* Subscribes to events of the program (POST /subscriptions, authenticated
 * with the VEN's OAuth2 token) with a webhook at callback_url; the VTN then
 * POSTs notifications there with the subscription's bearerToken, which the
 * callback checks, and pfi_oadr_decode_notification() reads them. The
 * bearerToken is `bearer`, or when NULL the VEN's OAuth2 access token
 * (fetched as pfi_ven_poll does when none is held or it expires within
 * 30 s). */
int pfi_ven_subscribe(struct pfi_ven *v, const char *callback_url,
                      const char *bearer, struct pfi_error *err);

/* As pfi_ven_subscribe, and writes the id the VTN gave the subscription to
 * `id` (PFI_TIMELINE_ID_MAX bytes; may be NULL). */
int pfi_ven_subscription_create(struct pfi_ven *v, const char *callback_url,
                                const char *bearer, char *id,
                                struct pfi_error *err);

/*
 * Keeps a subscription made by pfi_ven_subscription_create in place: with
 * `id` empty, creates it (2); else reads it (GET /subscriptions/{id}) and,
 * when the VTN no longer has it (404: dropped, or a VTN that lost its
 * state), creates it again and writes the new id (2); when it no longer
 * sends EVENT notifications to callback_url with `bearer` (changed at the
 * VTN), puts ours back (PUT /subscriptions/{id}: 1); else 0. Before each
 * create, and after the VTN answered one with an error (some VTNs keep the
 * subscription all the same), it deletes the subscriptions of ours the VTN
 * holds (GET /subscriptions?programID=&clientName=: our clientName, our
 * program, EVENT to callback_url with `bearer`), so that the VTN holds at
 * most one of ours. Errors as pfi_ven_poll (id unchanged).
 */
int pfi_ven_subscription_keep(struct pfi_ven *v, char *id,
                              const char *callback_url, const char *bearer,
                              struct pfi_error *err);

/* DELETE /subscriptions/{id}; one the VTN no longer has is not an error. */
int pfi_ven_subscription_delete(struct pfi_ven *v, const char *id,
                                struct pfi_error *err);

/* ---- the webhook: notifications from the VTN ---------------------------- */

/* Largest notification body the listener reads, bytes: larger is 413. */
#define PFI_OADR_NOTIFY_BODY_MAX (1u << 20)
/* A bearer token of pfi_oadr_bearer_new: 32 random bytes in hex, and NUL. */
#define PFI_OADR_BEARER_LEN 65

/* A fresh random secret for a subscription's bearerToken (getrandom(2)).
 * PFI_EIO when the system gives no randomness. */
int pfi_oadr_bearer_new(char out[PFI_OADR_BEARER_LEN], struct pfi_error *err);

/* A subscription's bearerToken kept in a file, so that a callback run
 * apart (and a later `pfi grid subscribe`) checks the same one: when
 * `path` exists, its first line (pfi_read_secret: mode 0600 or stricter,
 * 16 to 64 bytes); otherwise a fresh token is written there, created
 * 0600 and never over an existing file. PFI_ENOPERM (mode), PFI_EPARSE
 * (too short or long), PFI_EIO. */
int pfi_oadr_bearer_file(const char *path, char out[PFI_OADR_BEARER_LEN],
                         struct pfi_error *err);

/* One notification the listener accepted. */
struct pfi_oadr_note {
  char object_type[16];               /* EVENT, PROGRAM... (cut to 15 bytes) */
  char operation[8];                  /* CREATE, UPDATE, DELETE, READ */
  char event_id[PFI_TIMELINE_ID_MAX]; /* for EVENT objects */
  size_t spans; /* CREATE/UPDATE of an EVENT: the spans it decodes to */
  int undecoded; /* 1: sent with the bearer token but not decoded (the
                    fields above empty): a reason to poll, no data */
};

/* What the listener answered since it started. */
struct pfi_oadr_listener_stats {
  size_t accepted;     /* 200: decoded notifications */
  size_t unauthorized; /* 401 (no bearer token) and 403 (another token) */
  size_t malformed;    /* 400: a body pfi_oadr_decode_notification refused
                          (queued as an undecoded note all the same) */
  size_t other;        /* 404 (another path), 405 (not POST), a bad echo */
  size_t echo;         /* 200: callback checks (GET <path>/echo?echo=V) */
};

struct pfi_oadr_listener;

/*
 * Serves the webhook the VTN POSTs notifications to (OpenADR 3.1
 * `notification`: objectType, operation, object) at `path` on `listen`
 * (pfi_http_start's address; libmicrohttpd is loaded on this first use).
 * Every request must carry "Authorization: Bearer <bearer>", the
 * subscription's bearerToken (compared in constant time): none is 401,
 * another token 403. Bodies over PFI_OADR_NOTIFY_BODY_MAX are 413. The
 * body is decoded with pfi_oadr_decode_notification (cfg's "now" taken at
 * each request): a malformed one is 400 with an RFC 7807 problem object
 * whose detail names the field, and queued as an undecoded note (it came
 * with the token: the VTN has news, so its owner polls; nothing of it is
 * used); an accepted one is 200 and queued. A queued note (the last 64 are
 * kept) makes pfi_oadr_listener_fd readable. GET <path>/echo?echo=VALUE,
 * the callback check a VTN may make before it keeps a subscription, is
 * answered 200 with VALUE as a text/plain body, without a token (VALUE: 1
 * to 256 letters, digits or _.~-; else 400). The listener acts
 * on nothing itself: its owner wakes, takes the notes and polls the VTN,
 * whose answer stays the source of truth. Copies bearer and cfg.
 */
int pfi_oadr_listen(const char *listen, const char *path, const char *bearer,
                    const struct pfi_oadr_config *cfg,
                    struct pfi_oadr_listener **out, struct pfi_error *err);
/* The port listened on (the one picked for port 0). */
unsigned pfi_oadr_listener_port(const struct pfi_oadr_listener *l);
/* A descriptor that is readable while accepted notifications wait to be
 * taken (for poll(2)). */
int pfi_oadr_listener_fd(const struct pfi_oadr_listener *l);
/* Takes the notifications accepted since the last call: writes up to max
 * of them (the oldest first) and returns how many were accepted in all
 * (more than max when some were dropped); fills *st when not NULL. */
size_t pfi_oadr_listener_take(struct pfi_oadr_listener *l,
                              struct pfi_oadr_note *out, size_t max,
                              struct pfi_oadr_listener_stats *st);
void pfi_oadr_listener_close(struct pfi_oadr_listener *l);

#endif
