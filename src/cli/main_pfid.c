/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid: the fleet controller daemon. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nats_opt.h"
#include "opt.h"
#include "pfi/control.h"
#include "pfi/duration.h"
#include "pfi/http.h"
#include "pfi/objective.h"
#include "pfi/pfid.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

/* The options, bound to the fields of `o` (src/base/opt.h). */
static struct pfi_pfid_opts o;
static const char *api = "127.0.0.1:8470";
static int per_client; /* o.api_limits.per_client */

static const struct pfi_opt_word objectives[] = {{"work", PFI_OBJ_WORK},
                                                 {"throughput", PFI_OBJ_THROUGHPUT},
                                                 {"jobs", PFI_OBJ_JOBS},
                                                 {NULL, 0}};

/* A margin of pfid: the controller's range (include/pfi/control.h) less
 * 0, which in struct pfi_pfid_opts stands for the default. */
#define MARGIN(l, v, h)                                                        \
  PFI_OPT_NUMBER(l, v, PFI_CTL_MARGIN_MIN, PFI_CTL_MARGIN_MAX,                 \
                 PFI_RANGE_LO_OPEN | PFI_RANGE_HI_OPEN, "M", h)

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("id", 0, &o.id, "NAME",
                   "this instance's name (default: the host name)"),
    NATS_OPTS(&o.nats, "NATS user (default pfid with --password-file; "
                       "with --nats-nkey the nkey's public key)"),
    {.lng = "records", .arg = PFI_ARG_REQ, .argname = "PATH",
     .help = "decision records, SQLite", .type = PFI_OT_STRING,
     .var = &o.records, .def = "/var/lib/pfi/pfid.db"},
    {.lng = "api", .arg = PFI_ARG_REQ, .argname = "HOST:PORT",
     .help = "HTTP API ('none': off)", .type = PFI_OT_STRING, .var = &api,
     .def = "127.0.0.1:8470"},
    PFI_OPT_STRING("tls-cert", 0, &o.api_tls.cert, "FILE",
                   "serve the API over HTTPS with this PEM certificate "
                   "(chain), with --tls-key"),
    PFI_OPT_STRING("tls-key", 0, &o.api_tls.key, "FILE",
                   "the certificate's PEM private key (mode 0600, as "
                   "--token-file)"),
    PFI_OPT_STRING("tls-client-ca", 0, &o.api_tls.client_ca, "FILE",
                   "with --tls-cert, refuse clients without a certificate "
                   "this PEM CA signed (mutual TLS)"),
    PFI_OPT_FLAG("insecure", 0, &o.api_tls.insecure,
                 "allow plain HTTP on an --api address that is not loopback "
                 "(tokens in clear; without it pfid refuses to start)"),
    PFI_OPT_STRING("token-file", 0, &o.token_file, "FILE",
                   "bearer token for API mutations (mode 0600); without one "
                   "the API is read-only"),
    PFI_OPT_STRING("tokens", 0, &o.tokens_file, "FILE",
                   "named API tokens with roles, lines 'NAME "
                   "read|operate|admin TOKEN' (mode 0600, as --token-file; "
                   "docs/security.md): every request then needs a token, "
                   "reads included"),
    {.lng = "period", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "control period, s", .type = PFI_OT_NUMBER, .var = &o.period_s,
     .lo = 0.1, .hi = 60, .def = "1"},
    {.lng = "lease", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "agents' lease, s", .type = PFI_OT_NUMBER, .var = &o.lease_s,
     .lo = 0.1, .hi = 3600, .def = "5"},
    {.lng = "leader-lease", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "leader's lease, s", .type = PFI_OT_NUMBER,
     .var = &o.leader_lease_s, .lo = 0.2, .hi = 600, .def = "3"},
    {.lng = "stale", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "node without telemetry this long is stale, s",
     .type = PFI_OT_NUMBER, .var = &o.stale_s, .lo = 0.2, .hi = 3600,
     .def = "3"},
    {.lng = "ramp-up", .arg = PFI_ARG_REQ, .argname = "W/S",
     .help = "most a GPU's cap rises per second in an event and its "
             "recovery",
     .type = PFI_OT_NUMBER, .var = &o.ramp_up_w_s, .lo = 1, .hi = 10000,
     .def = "100"},
    MARGIN("margin", &o.margin,
           "aim this share below an event's target (default 0.002)"),
    MARGIN("recovery-margin", &o.recovery_margin,
           "the recovery's raises aim this share of the ceiling under its "
           "ramp (default 0.004)"),
    PFI_OPT_NUMBER("recovery-ramp", &o.recovery_ramp_w_s, 0.001, 1e9, 0, "W/S",
                   "after an event the fleet's GPU power rises at most this "
                   "fast (default 5 % of the draw at the pre-event caps per "
                   "second)"),
    {.lng = "recovery-window", .arg = PFI_ARG_REQ, .argname = "DURATION",
     .help = "every job is back at its pre-event caps within this long "
             "after an event",
     .type = PFI_OT_DURATION, .var = &o.recovery_s, .ival = PFI_DUR_ANY,
     .lo = 10, .hi = 86400, .def = "15m"},
    PFI_OPT_CHOICE("objective", &o.objective, objectives, "O",
                   "what the controller's split maximizes: work (default: "
                   "each job's share of its uncapped throughput x its GPUs, "
                   "unit-free), throughput (the sum of raw throughput) or "
                   "jobs (each job counts once)"),
    PFI_OPT_STRING("tiers", 0, &o.tiers_file, "FILE",
                   "tiers' longest events for the live capacity "
                   "(tier,max_loss[,max_event_s][,notice_s])"),
    PFI_OPT_STRING("model", 0, &o.model_file, "FILE",
                   "with --features: each job's PFI estimate and 95 % "
                   "interval (a model of pfi fit --output): the controller's "
                   "prior and the live capacity's interval"),
    PFI_OPT_STRING("features", 0, &o.features_file, "FILE",
                   "the jobs' features for --model (with a job column)"),
    PFI_OPT_STRING("meter-config", 0, &o.meter_config, "FILE",
                   "the meter chain (the file of pfi grid meter --config: "
                   "node_other_w, psu_rated_w, psu_curve, pue, "
                   "facility_other_w): events may then state their target at "
                   "the node or meter level, converted to GPU power each "
                   "period"),
    {.lng = "event-max", .arg = PFI_ARG_REQ, .argname = "DURATION",
     .help = "the API refuses an event longer than this",
     .type = PFI_OT_DURATION, .var = &o.event_max_s, .ival = PFI_DUR_ANY,
     .lo = 60, .hi = 366 * 86400.0, .def = "48h"},
    {.lng = "event-ahead", .arg = PFI_ARG_REQ, .argname = "DURATION",
     .help = "the API refuses an event starting more than this after its "
             "submission (168h: 7 days)",
     .type = PFI_OT_DURATION, .var = &o.event_ahead_s, .ival = PFI_DUR_ANY,
     .lo = 60, .hi = 366 * 86400.0, .def = "168h"},
    {.lng = "request-deadline", .arg = PFI_ARG_REQ, .argname = "DURATION",
     .help = "the API shuts a connection down whose request is not "
             "received and answered within this long of its accept or of "
             "its previous answer, however steadily it trickles "
             "(docs/security.md)",
     .type = PFI_OT_DURATION, .var = &o.api_limits.deadline_s,
     .ival = PFI_DUR_ANY, .lo = 1, .hi = 600, .def = "10s"},
    {.lng = "max-conn-per-client", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "connections one client may hold open on the API, a client "
             "being a local user (a loopback peer, by its socket's owner) "
             "or a remote address; more are shut down as they are accepted "
             "(256 in all)",
     .type = PFI_OT_INT, .var = &per_client, .lo = 1, .hi = 256,
     .def = "16"},
    {.lng = "help", .help = "this text", .type = PFI_OT_HELP},
    PFI_OPT_END};
static const struct pfi_opt_rule rules[] = {NATS_OPT_RULES, PFI_RULE_END};
static const struct pfi_cmd_help help = {
    .cmd = "pfid",
    .usage = "usage: pfid [options]\n",
    .about = "The fleet's controller: events in through its HTTP API, the "
             "agents' telemetry in over NATS, caps out as assignments in the "
             "JetStream key-value bucket (docs/fleet.md).",
    .opts = opts,
    .flags = PFI_OPT_PROGRAM | PFI_OPT_WRAP_ABOUT,
    .rules = rules,
    .args_min = 0,
    .args_max = 0};

/* How the API is served, for the start-up line. */
static const char *api_tls_words(const struct pfi_pfid *d) {
  switch (pfi_pfid_api_tls(d)) {
  case 2:
    return "HTTPS, client certificates required";
  case 1:
    return "HTTPS";
  default:
    return pfi_http_listen_local(o.api_listen)
               ? "plain HTTP (loopback)"
               : "plain HTTP on a non-loopback address (--insecure): tokens "
                 "and answers cross the network in clear";
  }
}

int main(int argc, char **argv) {
  char host[64];
  if (gethostname(host, sizeof host) != 0)
    snprintf(host, sizeof host, "pfid");
  host[sizeof host - 1] = 0;
  host[strcspn(host, ".")] = 0;
  o.id = host;
  o.nats.timeout_s = 2;
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  if (st != PFI_OPT_GO)
    return st;
  o.api_listen = strcmp(api, "none") ? api : NULL;
  o.api_limits.per_client = (unsigned)per_client;
  if (!o.nats.password_file && !o.nats.nkey_file)
    o.nats.user = NULL;
  else if (!o.nats.user)
    o.nats.user = "pfid";
  struct pfi_error err;
  char msg[PFI_ERROR_MSG_MAX + 300];
  /* How it speaks to NATS, said at start-up (plain text to a server off
   * loopback refused unless asked). */
  char sec[512];
  if (pfi_nats_describe(&o.nats, sec, sizeof sec, &err) < 0)
    return pfi_opt_usage(&help, "%s", err.msg);
  fprintf(stderr, "pfid %s: NATS %s: %s\n", o.id,
          o.nats.url ? o.nats.url : "nats://127.0.0.1:4222", sec);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  struct pfi_pfid *d = NULL;
  int rc = pfi_pfid_open(&d, &o, &err);
  if (rc < 0) {
    fprintf(stderr, "pfid: %s\n", pfi_error_format(&err, msg, sizeof msg));
    return rc == PFI_EINVAL || rc == PFI_EPARSE || rc == PFI_ENOPERM ? 2 : 1;
  }
  if (pfi_pfid_api_port(d))
    fprintf(stderr, "pfid %s: API on port %u, %s\n", o.id, pfi_pfid_api_port(d),
            api_tls_words(d));
  rc = pfi_pfid_run(d, &stop, &err);
  if (rc < 0)
    fprintf(stderr, "pfid: %s\n", pfi_error_format(&err, msg, sizeof msg));
  pfi_pfid_close(d);
  return rc < 0 ? 1 : 0;
}
