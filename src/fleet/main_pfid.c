/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid: the fleet controller daemon. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/pfid.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

static const char usage[] =
    "usage: pfid [options]\n"
    "  --id NAME              this instance's name (default: the host name)\n"
    "  --nats URL             NATS server (default nats://127.0.0.1:4222)\n"
    "  --user USER            NATS user (default pfid)\n"
    "  --password-file FILE   the user's password (mode 0600)\n"
    "  --records PATH         decision records, SQLite (default\n"
    "                         /var/lib/pfi/pfid.db)\n"
    "  --api HOST:PORT        HTTP API (default 127.0.0.1:8470; 'none': off)\n"
    "  --token-file FILE      bearer token for API mutations (mode 0600);\n"
    "                         without one the API is read-only\n"
    "  --period S             control period, 0.1..60 s (default 1)\n"
    "  --lease S              agents' lease, s (default 5)\n"
    "  --leader-lease S       leader's lease, s (default 3)\n"
    "  --stale S              node without telemetry this long is stale\n"
    "                         (default 3)\n"
    "  --tiers FILE           tiers' longest events for the live capacity\n"
    "                         (tier,max_loss[,max_event_s][,notice_s])\n"
    "  --model FILE --features FILE\n"
    "                         each job's PFI estimate and 95 % interval\n"
    "                         (a model of pfi fit --output; features with a\n"
    "                         job column): the controller's prior and the\n"
    "                         live capacity's interval\n"
    "  --help\n";

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
    O_TIERS,
    O_MODEL,
    O_FEATURES,
    O_HELP
  };
  static const struct option lo[] = {{"id", 1, 0, O_ID},
                                     {"nats", 1, 0, O_NATS},
                                     {"user", 1, 0, O_USER},
                                     {"password-file", 1, 0, O_PW},
                                     {"records", 1, 0, O_REC},
                                     {"api", 1, 0, O_API},
                                     {"token-file", 1, 0, O_TOKEN},
                                     {"period", 1, 0, O_PERIOD},
                                     {"lease", 1, 0, O_LEASE},
                                     {"leader-lease", 1, 0, O_LLEASE},
                                     {"stale", 1, 0, O_STALE},
                                     {"tiers", 1, 0, O_TIERS},
                                     {"model", 1, 0, O_MODEL},
                                     {"features", 1, 0, O_FEATURES},
                                     {"help", 0, 0, O_HELP},
                                     {0, 0, 0, 0}};
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
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
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
    case O_TIERS:
      o.tiers_file = optarg;
      break;
    case O_MODEL:
      o.model_file = optarg;
      break;
    case O_FEATURES:
      o.features_file = optarg;
      break;
    case O_HELP:
      fputs(usage, stdout);
      return 0;
    default:
      fputs(usage, stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "pfid: unexpected argument '%s'\n%s", argv[optind], usage);
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
