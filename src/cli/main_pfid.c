/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid: the fleet controller daemon. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opt.h"
#include "pfi/duration.h"
#include "pfi/objective.h"
#include "pfi/pfid.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

enum {
  O_ID = 1,
  O_NATS,
  O_USER,
  O_PW,
  O_REC,
  O_API,
  O_TOKEN,
  O_PERIOD,
  O_LEASE,
  O_LLEASE,
  O_STALE,
  O_RAMP,
  O_MARGIN,
  O_RMARGIN,
  O_RRAMP,
  O_RWINDOW,
  O_TIERS,
  O_MODEL,
  O_FEATURES,
  O_METER,
  O_EVMAX,
  O_EVAHEAD,
  O_OBJECTIVE,
  O_TOKENS,
  O_HELP
};

/* The options, their getopt call and --help (src/cli/opt.h). */
static const struct pfi_opt opts[] = {
    {"id", O_ID, 0, PFI_ARG_REQ, "NAME",
     "this instance's name (default: the host name)"},
    {"nats", O_NATS, 0, PFI_ARG_REQ, "URL",
     "NATS server, or a cluster's servers comma-separated (default "
     "nats://127.0.0.1:4222)"},
    {"user", O_USER, 0, PFI_ARG_REQ, "USER", "NATS user (default pfid)"},
    {"password-file", O_PW, 0, PFI_ARG_REQ, "FILE",
     "the user's password (mode 0600)"},
    {"records", O_REC, 0, PFI_ARG_REQ, "PATH",
     "decision records, SQLite (default /var/lib/pfi/pfid.db)"},
    {"api", O_API, 0, PFI_ARG_REQ, "HOST:PORT",
     "HTTP API (default 127.0.0.1:8470; 'none': off)"},
    {"token-file", O_TOKEN, 0, PFI_ARG_REQ, "FILE",
     "bearer token for API mutations (mode 0600); without one the API is "
     "read-only"},
    {"tokens", O_TOKENS, 0, PFI_ARG_REQ, "FILE",
     "named API tokens with roles, lines 'NAME read|operate|admin TOKEN' "
     "(mode 0600, as --token-file; docs/security.md): every request then "
     "needs a token, reads included"},
    {"period", O_PERIOD, 0, PFI_ARG_REQ, "S",
     "control period, 0.1..60 s (default 1)"},
    {"lease", O_LEASE, 0, PFI_ARG_REQ, "S", "agents' lease, s (default 5)"},
    {"leader-lease", O_LLEASE, 0, PFI_ARG_REQ, "S",
     "leader's lease, s (default 3)"},
    {"stale", O_STALE, 0, PFI_ARG_REQ, "S",
     "node without telemetry this long is stale (default 3)"},
    {"ramp-up", O_RAMP, 0, PFI_ARG_REQ, "W/S",
     "most a GPU's cap rises per second in an event and its recovery, "
     "1..10000 (default 100)"},
    {"margin", O_MARGIN, 0, PFI_ARG_REQ, "M",
     "aim this share below an event's target, 0.0001..0.2 (default "
     "0.002)"},
    {"recovery-margin", O_RMARGIN, 0, PFI_ARG_REQ, "M",
     "the recovery's raises aim this share of the ceiling under its ramp, "
     "0.0001..0.2 (default 0.004)"},
    {"recovery-ramp", O_RRAMP, 0, PFI_ARG_REQ, "W/S",
     "after an event the fleet's GPU power rises at most this fast, "
     "0.001..1e9 (default 5 % of the draw at the pre-event caps per "
     "second)"},
    {"recovery-window", O_RWINDOW, 0, PFI_ARG_REQ, "DURATION",
     "every job is back at its pre-event caps within this long after an "
     "event, 10s..24h (default 15m)"},
    {"objective", O_OBJECTIVE, 0, PFI_ARG_REQ, "O",
     "what the controller's split maximizes: work (default: each job's "
     "share of its uncapped throughput x its GPUs, unit-free), throughput "
     "(the sum of raw throughput) or jobs (each job counts once)"},
    {"tiers", O_TIERS, 0, PFI_ARG_REQ, "FILE",
     "tiers' longest events for the live capacity "
     "(tier,max_loss[,max_event_s][,notice_s])"},
    {"model", O_MODEL, 0, PFI_ARG_REQ, "FILE",
     "with --features: each job's PFI estimate and 95 % interval (a model of "
     "pfi fit --output): the controller's prior and the live capacity's "
     "interval"},
    {"features", O_FEATURES, 0, PFI_ARG_REQ, "FILE",
     "the jobs' features for --model (with a job column)"},
    {"meter-config", O_METER, 0, PFI_ARG_REQ, "FILE",
     "the meter chain (the file of pfi grid meter --config: node_other_w, "
     "psu_rated_w, psu_curve, pue, facility_other_w): events may then state "
     "their target at the node or meter level, converted to GPU power each "
     "period"},
    {"event-max", O_EVMAX, 0, PFI_ARG_REQ, "DURATION",
     "the API refuses an event longer than this, 1m..366d (default 48h)"},
    {"event-ahead", O_EVAHEAD, 0, PFI_ARG_REQ, "DURATION",
     "the API refuses an event starting more than this after its "
     "submission, 1m..366d (default 7d)"},
    {"help", O_HELP, 0, PFI_ARG_NONE, NULL, "this text"},
    PFI_OPT_END};
static const struct pfi_cmd_help help = {
    "pfid", "usage: pfid [options]\n",
    "The fleet's controller: events in through its HTTP API, the agents' "
    "telemetry in over NATS, caps out as assignments in the JetStream "
    "key-value bucket (docs/fleet.md).",
    opts, NULL, PFI_OPT_PROGRAM | PFI_OPT_WRAP_ABOUT, NULL};

static int num(const char *opt, const char *v, double lo, double hi,
               double *out) {
  char *end;
  double x = strtod(v, &end);
  if (!*v || *end || !(x >= lo && x <= hi)) {
    fprintf(stderr, "pfid: %s %s: expected %g..%g\n", opt, v, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}

int main(int argc, char **argv) {
  struct pfi_pfid_opts o = {0};
  char host[64];
  if (gethostname(host, sizeof host) != 0)
    snprintf(host, sizeof host, "pfid");
  host[sizeof host - 1] = 0;
  host[strcspn(host, ".")] = 0;
  o.id = host;
  o.records = "/var/lib/pfi/pfid.db";
  o.api_listen = "127.0.0.1:8470";
  o.nats.user = "pfid";
  o.nats.timeout_s = 2;
  int c;
  struct pfi_optparse op;
  pfi_opt_start(&op, &help, argc, argv);
  while ((c = pfi_opt_next(&op)) != -1) {
    switch (c) {
    case O_ID:
      o.id = optarg;
      break;
    case O_NATS:
      o.nats.url = optarg;
      break;
    case O_USER:
      o.nats.user = optarg;
      break;
    case O_PW:
      o.nats.password_file = optarg;
      break;
    case O_REC:
      o.records = optarg;
      break;
    case O_API:
      o.api_listen = strcmp(optarg, "none") ? optarg : NULL;
      break;
    case O_TOKEN:
      o.token_file = optarg;
      break;
    case O_TOKENS:
      o.tokens_file = optarg;
      break;
    case O_PERIOD:
      if (num("--period", optarg, 0.1, 60, &o.period_s) < 0)
        return 2;
      break;
    case O_LEASE:
      if (num("--lease", optarg, 0.1, 3600, &o.lease_s) < 0)
        return 2;
      break;
    case O_LLEASE:
      if (num("--leader-lease", optarg, 0.2, 600, &o.leader_lease_s) < 0)
        return 2;
      break;
    case O_STALE:
      if (num("--stale", optarg, 0.2, 3600, &o.stale_s) < 0)
        return 2;
      break;
    case O_RAMP:
      if (num("--ramp-up", optarg, 1, 10000, &o.ramp_up_w_s) < 0)
        return 2;
      break;
    case O_OBJECTIVE:
      o.objective = pfi_objective_parse(optarg);
      if (o.objective < 0) {
        fprintf(stderr,
                "pfid: --objective: '%s' is not work, throughput or jobs\n",
                optarg);
        return 2;
      }
      break;
    case O_MARGIN:
      if (num("--margin", optarg, 0.0001, 0.2, &o.margin) < 0)
        return 2;
      break;
    case O_RMARGIN:
      if (num("--recovery-margin", optarg, 0.0001, 0.2, &o.recovery_margin) <
          0)
        return 2;
      break;
    case O_RRAMP:
      if (num("--recovery-ramp", optarg, 0.001, 1e9, &o.recovery_ramp_w_s) < 0)
        return 2;
      break;
    case O_RWINDOW: {
      struct pfi_error e;
      if (pfi_parse_duration(optarg, PFI_DUR_ANY, &o.recovery_s, &e) < 0 ||
          !(o.recovery_s >= 10 && o.recovery_s <= 86400)) {
        fprintf(stderr, "pfid: --recovery-window %s: expected 10s..24h\n",
                optarg);
        return 2;
      }
      break;
    }
    case O_EVMAX:
    case O_EVAHEAD: {
      struct pfi_error e;
      double *x = c == O_EVMAX ? &o.event_max_s : &o.event_ahead_s;
      if (pfi_parse_duration(optarg, PFI_DUR_ANY, x, &e) < 0 ||
          !(*x >= 60 && *x <= 366 * 86400.0)) {
        fprintf(stderr, "pfid: --%s %s: expected 1m..366d\n",
                c == O_EVMAX ? "event-max" : "event-ahead", optarg);
        return 2;
      }
      break;
    }
    case O_TIERS:
      o.tiers_file = optarg;
      break;
    case O_MODEL:
      o.model_file = optarg;
      break;
    case O_FEATURES:
      o.features_file = optarg;
      break;
    case O_METER:
      o.meter_config = optarg;
      break;
    case O_HELP:
      return pfi_opt_help(&help);
    default:
      return 2; /* the problem is printed */
    }
  }
  if (optind < argc) {
    fprintf(stderr, "pfid: unexpected argument '%s'\nTry 'pfid --help'.\n",
            argv[optind]);
    return 2;
  }
  if (!o.nats.password_file)
    o.nats.user = NULL;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  struct pfi_error err;
  char msg[PFI_ERROR_MSG_MAX + 300];
  struct pfi_pfid *d = NULL;
  int rc = pfi_pfid_open(&d, &o, &err);
  if (rc < 0) {
    fprintf(stderr, "pfid: %s\n", pfi_error_format(&err, msg, sizeof msg));
    return rc == PFI_EINVAL || rc == PFI_EPARSE || rc == PFI_ENOPERM ? 2 : 1;
  }
  if (pfi_pfid_api_port(d))
    fprintf(stderr, "pfid %s: API on port %u\n", o.id, pfi_pfid_api_port(d));
  rc = pfi_pfid_run(d, &stop, &err);
  if (rc < 0)
    fprintf(stderr, "pfid: %s\n", pfi_error_format(&err, msg, sizeof msg));
  pfi_pfid_close(d);
  return rc < 0 ? 1 : 0;
}
