/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid`: power targets from the grid (OpenADR 3 VTN, event files,
 * schedule files) merged into one timeline; reports back to the VTN; power
 * at the meter. Parses, calls libpfi, prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_grid.h"
#include "opt.h"
#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/flexcap.h"
#include "pfi/meter.h"
#include "pfi/monotone.h"
#include "pfi/openadr.h"
#include "pfi/timeline.h"

/* The options, bound to these (src/base/opt.h); parse() sets the
 * defaults first and hands them on. */
static struct opts g;
static int fmt;

static int parse_time(const char *s, int64_t *out);

/* --simple F1,F2,F3: three fractions of the baseline. */
static int simple_cb(const struct pfi_opt *o, const char *v, char *why,
                     size_t n) {
  if (sscanf(v, "%lf,%lf,%lf", &g.simple[0], &g.simple[1], &g.simple[2]) !=
      3) {
    snprintf(why, n, "expected three fractions F1,F2,F3, got '%s'", v);
    return -1;
  }
  for (int i = 0; i < 3; i++)
    if (!(g.simple[i] >= 0 && g.simple[i] <= 1)) {
      snprintf(why, n, "fractions must be in [0, 1]: '%s'", v);
      return -1;
    }
  g.have_simple = 1;
  return 0;
}

/* --level gpu|node|meter. */
static int level_cb(const struct pfi_opt *o, const char *v, char *why,
                    size_t n) {
  g.level_given = 1;
  if (strcmp(v, "gpu") == 0)
    g.level = PFI_LEVEL_GPU;
  else if (strcmp(v, "node") == 0)
    g.level = PFI_LEVEL_NODE;
  else if (strcmp(v, "meter") == 0)
    g.level = PFI_LEVEL_METER;
  else {
    snprintf(why, n, "expected gpu, node or meter, got '%s'", v);
    return -1;
  }
  return 0;
}

/* --now, --start: RFC 3339 or Unix seconds. */
static int time_cb(const struct pfi_opt *o, const char *v, char *why,
                   size_t n) {
  if (parse_time(v, strcmp(o->lng, "now") == 0 ? &g.now : &g.start) < 0) {
    snprintf(why, n, "expected an RFC 3339 time or Unix seconds, got '%s'",
             v);
    return -1;
  }
  return 0;
}

/* --duration (repeatable for capacity: up to 16) and --interval: a
 * positive duration, at most a year and a day. */
static int dur_cb(const struct pfi_opt *o, const char *v, char *why,
                  size_t n) {
  struct pfi_error err;
  int is_dur = strcmp(o->lng, "duration") == 0;
  double *d = is_dur ? &g.duration : &g.interval;
  if (pfi_cli_parse_duration(v, d, &err) < 0 || !(*d > 0) ||
      (!is_dur && *d > 86400) || (is_dur && *d > 366 * 86400.0)) {
    snprintf(why, n,
             "expected a duration (15m, 1s; at most a day for --interval, a "
             "year for --duration), got '%s'",
             v);
    return -1;
  }
  if (is_dur) {
    if (g.ndur == 16) {
      snprintf(why, n, "at most 16 --duration values");
      return -1;
    }
    g.durations[g.ndur++] = g.duration;
  }
  return 0;
}

/* --shed-loss L: one of the capacity's quoted losses. */
static int shed_loss_cb(const struct pfi_opt *o, const char *v, char *why,
                        size_t n) {
  char *end;
  double x = strtod(v, &end);
  if (*end == '%') {
    x /= 100;
    end++;
  }
  int ok = end != v && !*end;
  size_t k = 0;
  while (ok && k < PFI_CAPACITY_NQUOTE &&
         fabs(pfi_capacity_quotes[k] - x) > 1e-9)
    k++;
  if (!ok || k == PFI_CAPACITY_NQUOTE) {
    snprintf(why, n, "expected 1%%, 2%%, 5%%, 10%% or 20%%, got '%s'", v);
    return -1;
  }
  g.shed_loss = pfi_capacity_quotes[k];
  return 0;
}

/* The rows, each written once; an action's table takes the ones it reads.
 * Rows whose meaning differs by action take their help text. */
#define ROW_VTN(h)                                                             \
  {.lng = "vtn", .arg = PFI_ARG_REQ, .argname = "URL", .help = h,              \
   .type = PFI_OT_STRING, .var = &g.vtn}
#define ROW_EVENTS                                                             \
  {.lng = "events", .arg = PFI_ARG_REQ, .argname = "FILE",                     \
   .help = "OpenADR 3 events as JSON (GET /events' body)",                     \
   .type = PFI_OT_LIST, .var = g.events, .var2 = &g.nevents, .hi = 16}
#define ROW_SCHEDULE                                                           \
  {.lng = "schedule", .arg = PFI_ARG_REQ, .argname = "FILE",                   \
   .help = "CSV: start,end,limit[,level][,priority]",                          \
   .type = PFI_OT_LIST, .var = g.schedules, .var2 = &g.nschedules, .hi = 16}
/* The VEN's credentials (open_ven()). */
#define ROWS_VEN                                                               \
  {.lng = "client-id", .arg = PFI_ARG_REQ, .argname = "ID",                    \
   .help = "OAuth2 client id of this VEN",                                     \
   .type = PFI_OT_STRING, .var = &g.id},                                       \
      {.lng = "client-secret-file", .arg = PFI_ARG_REQ, .argname = "F",        \
       .help = "file holding the client secret (mode 0600; or the "            \
               "PFI_VEN_CLIENT_SECRET variable)",                              \
       .type = PFI_OT_STRING, .var = &g.secret_file},                          \
      {.lng = "program", .arg = PFI_ARG_REQ, .argname = "NAME",                \
       .help = "the program whose events apply",                               \
       .type = PFI_OT_STRING, .var = &g.program},                              \
      {.lng = "token-url", .arg = PFI_ARG_REQ, .argname = "URL",               \
       .help = "post the client secret here (default: the token URL the VTN "  \
               "names, only on the VTN's own scheme, host and port)",          \
       .type = PFI_OT_STRING, .var = &g.token_url},                            \
      {.lng = "cacert", .arg = PFI_ARG_REQ, .argname = "FILE",                 \
       .help = "with an https --vtn, the PEM CA its certificate must chain "   \
               "to (default: the system's CAs; always verified)",              \
       .type = PFI_OT_STRING, .var = &g.cacert}
/* How OpenADR events become limits (oadr_config(), the bridge's
 * make_cfg()). */
#define ROW_BASELINE                                                           \
  {.lng = "baseline", .arg = PFI_ARG_REQ, .argname = "W",                      \
   .help = "the baseline for relative, SIMPLE and % limits, in W (default: "   \
           "none)",                                                            \
   .type = PFI_OT_NUMBER, .var = &g.baseline, .lo = 0, .hi = 1e12}
#define ROW_SIMPLE                                                             \
  {.lng = "simple", .arg = PFI_ARG_REQ, .argname = "F1,F2,F3",                 \
   .help = "SIMPLE levels 1-3 as fractions of the baseline (default "          \
           "0.90,0.75,0.50; level 0 is no limit)",                             \
   .type = PFI_OT_CALLBACK, .cb = simple_cb}
#define ROW_UNIT                                                               \
  {.lng = "unit", .arg = PFI_ARG_REQ, .argname = "W",                          \
   .help = "watts per payload unit when an event states none (default 1000: " \
           "kW)",                                                              \
   .type = PFI_OT_NUMBER, .var = &g.unit, .lo = 0, .hi = 1e12}
#define ROW_LEVEL(h)                                                           \
  {.lng = "level", .arg = PFI_ARG_REQ, .argname = "gpu|node|meter", .help = h, \
   .type = PFI_OT_CALLBACK, .cb = level_cb}
#define LEVEL_OADR                                                             \
  "where IMPORT_CAPACITY_LIMIT and setpoints apply (default meter)"
#define ROW_SEED                                                               \
  {.lng = "seed", .arg = PFI_ARG_REQ, .argname = "N",                          \
   .help = "randomizeStart draws (default 1)",                                 \
   .type = PFI_OT_ULONG, .var = &g.seed, .lo = 0, .hi = 0}
#define ROW_FORMAT                                                             \
  {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",                        \
   .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,           \
   .words = pfi_opt_formats, .def = "table"}
#define ROW_DURATION(h)                                                        \
  {.lng = "duration", .arg = PFI_ARG_REQ, .argname = "D", .help = h,           \
   .type = PFI_OT_CALLBACK, .cb = dur_cb}
#define ROW_INTERVAL(h)                                                        \
  {.lng = "interval", .arg = PFI_ARG_REQ, .argname = "D", .help = h,           \
   .type = PFI_OT_CALLBACK, .cb = dur_cb}
#define ROW_CALLBACK(h)                                                        \
  {.lng = "callback", .arg = PFI_ARG_REQ, .argname = "URL", .help = h,         \
   .type = PFI_OT_STRING, .var = &g.callback}
#define ROW_CONFIG(h)                                                          \
  {.lng = "config", .arg = PFI_ARG_REQ, .argname = "FILE", .help = h,          \
   .type = PFI_OT_STRING, .var = &g.config}
#define CONFIG_CHAIN "the power chain from GPU to meter (docs/grid.md)"
#define ROW_LOG(h)                                                             \
  {.lng = "log", .arg = PFI_ARG_REQ, .argname = "DIR", .help = h,              \
   .type = PFI_OT_STRING, .var = &g.logdir}
#define ROW_CONTRACT                                                           \
  {.lng = "contract", .arg = PFI_ARG_REQ, .argname = "FILE",                   \
   .help = "CSV job,tier[,tenant][,deadline_tput]",                            \
   .type = PFI_OT_STRING, .var = &g.contract}
#define ROW_TIERS                                                              \
  {.lng = "tiers", .arg = PFI_ARG_REQ, .argname = "FILE",                      \
   .help = "CSV tier,max_loss[,max_event_s][,notice_s]",                       \
   .type = PFI_OT_STRING, .var = &g.tiers}
#define ROW_NOTICE                                                             \
  {.lng = "notice", .arg = PFI_ARG_REQ, .argname = "D",                        \
   .help = "the notice given (default 0)", .type = PFI_OT_DURATION,            \
   .var = &g.notice, .ival = PFI_DUR_ANY, .lo = 0, .hi = 366 * 86400.0}
#define ROW_CURVES                                                             \
  {.lng = "curves", .arg = PFI_ARG_REQ, .argname = "FILE",                     \
   .help = "the jobs' curves CSV", .type = PFI_OT_STRING, .var = &g.curves}
#define ROW_MAP                                                                \
  {.lng = "map", .arg = PFI_ARG_REQ, .argname = "MAP",                         \
   .help = "curves column mapping NAME=COLUMN,... (docs/formats.md)",          \
   .type = PFI_OT_STRING, .var = &g.map}
#define ROW_GPN                                                                \
  {.lng = "gpus-per-node", .arg = PFI_ARG_REQ, .argname = "N",                 \
   .help = "GPUs per node (default 8)", .type = PFI_OT_ULONG, .var = &g.gpn,   \
   .lo = 1, .hi = 1024}

#define USAGE_TIMELINE "pfi grid timeline [SOURCES] [OPTIONS]\n"
#define USAGE_REPORT                                                           \
  "pfi grid report --vtn URL --client-id ID --program NAME\n"                  \
  "                       --event ID --start TIME --duration D VALUES\n"
#define USAGE_SUBSCRIBE                                                        \
  "pfi grid subscribe --vtn URL --client-id ID --program NAME\n"               \
  "                          --callback URL\n"
#define USAGE_CAPACITY                                                         \
  "pfi grid capacity --curves FILE --tiers FILE\n"                             \
  "                         (--contract FILE | --tier NAME)\n"                 \
  "                         [--duration D]... [--notice D]\n"                  \
  "                         [--objective O] [--weights FILE]\n"                \
  "                         [--min-share R] [--curve monotone|raw]\n"          \
  "                         [--config FILE --level node|meter\n"               \
  "                          [--gpus-per-node N]]\n"
#define USAGE_BRIDGE                                                           \
  "pfi grid bridge --pfid URL --pfid-token-file FILE [SOURCES]\n"              \
  "                       [--config FILE] [--interval D] [--report D]\n"       \
  "                       [--overlap D] [--shed-loss L] [--once]\n"            \
  "                       [--listen HOST:PORT [--callback URL]]\n"
#define USAGE_EVENT_REPORT                                                     \
  "pfi grid event-report --log DIR --contract FILE --tiers FILE\n"             \
  "                             --out DIR [--config FILE] [--nodes N]\n"
#define USAGE_CURVES                                                           \
  "pfi grid curves --curves FILE --config FILE --level node|meter\n"           \
  "                       [--gpus-per-node N]\n"
#define USAGE_METER                                                            \
  "pfi grid meter [--config FILE] [--gpu-w W[,W...]]\n"                        \
  "                      [--other-w W[,W...]] [--powercap DIR] [--bmc TOOL]\n" \
  "                      [--interval D] [--limit W --level node|meter]\n"

#define GRID_FOOTER                                                            \
  "Exit status: 0 ok, 1 a VTN or device failure (network, HTTP, refused\n"     \
  "credentials), 2 bad usage or bad input (file:line:column or the JSON\n"     \
  "field).\n"

static const struct pfi_opt timeline_opts[] = {
    PFI_OPT_GROUP("Sources (any number, at least one):"),
    ROW_VTN("poll an OpenADR 3.1 VTN (with --client-id, --client-secret-file "
            "and --program)"),
    ROW_EVENTS,
    ROW_SCHEDULE,
    PFI_OPT_GROUP("Options:"),
    ROWS_VEN,
    ROW_BASELINE,
    ROW_SIMPLE,
    ROW_UNIT,
    ROW_LEVEL(LEVEL_OADR),
    {.lng = "now", .arg = PFI_ARG_REQ, .argname = "TIME",
     .help = "RFC 3339 or Unix seconds (default: now)",
     .type = PFI_OT_CALLBACK, .cb = time_cb},
    ROW_SEED,
    {.lng = "floor", .arg = PFI_ARG_REQ, .argname = "W",
     .help = "the least power the site can reach at the same level: a limit "
             "below it is shown as infeasible, with the shortfall",
     .type = PFI_OT_NUMBER, .var = &g.floor, .lo = 0, .hi = 1e12},
    ROW_FORMAT,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt report_opts[] = {
    ROW_VTN("the VTN"),
    ROWS_VEN,
    {.lng = "event", .arg = PFI_ARG_REQ, .argname = "ID",
     .help = "the event reported on", .type = PFI_OT_STRING, .var = &g.event},
    {.lng = "start", .arg = PFI_ARG_REQ, .argname = "TIME",
     .help = "the interval's start (RFC 3339 or Unix seconds)",
     .type = PFI_OT_CALLBACK, .cb = time_cb},
    ROW_DURATION("the interval's length (seconds or 15m)"),
    PFI_OPT_HELP,
    PFI_OPT_GROUP("Values (at least one):"),
    {.lng = "usage", .arg = PFI_ARG_REQ, .argname = "WH",
     .help = "USAGE in Wh", .type = PFI_OT_NUMBER, .var = &g.usage, .lo = 0,
     .hi = 1e12},
    {.lng = "demand", .arg = PFI_ARG_REQ, .argname = "W",
     .help = "DEMAND in W", .type = PFI_OT_NUMBER, .var = &g.demand, .lo = 0,
     .hi = 1e12},
    {.lng = "baseline-w", .arg = PFI_ARG_REQ, .argname = "W",
     .help = "BASELINE in W", .type = PFI_OT_NUMBER, .var = &g.basew,
     .lo = 0, .hi = 1e12},
    {.lng = "shed-available", .arg = PFI_ARG_REQ, .argname = "W",
     .help = "LOAD_SHED_DELTA_AVAILABLE in W", .type = PFI_OT_NUMBER,
     .var = &g.shed, .lo = 0, .hi = 1e12},
    PFI_OPT_END};

static const struct pfi_opt subscribe_opts[] = {
    ROW_VTN("the VTN"),
    ROWS_VEN,
    ROW_CALLBACK("where the VTN POSTs event notifications"),
    {.lng = "bearer-token-file", .arg = PFI_ARG_REQ, .argname = "FILE",
     .help = "the subscription's bearer token, which the callback checks: "
             "read from FILE (mode 0600), or made and written there when "
             "FILE does not exist",
     .type = PFI_OT_STRING, .var = &g.bearer_file},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt bridge_opts[] = {
    PFI_OPT_GROUP("Sources (as for timeline):"),
    ROW_VTN("poll an OpenADR 3.1 VTN (with --client-id, --client-secret-file "
            "and --program)"),
    ROW_EVENTS,
    ROW_SCHEDULE,
    PFI_OPT_GROUP("Options:"),
    ROWS_VEN,
    ROW_BASELINE,
    ROW_SIMPLE,
    ROW_LEVEL(LEVEL_OADR),
    ROW_SEED,
    {.lng = "pfid", .arg = PFI_ARG_REQ, .argname = "URL", .help = "pfid's API",
     .type = PFI_OT_STRING, .var = &g.pfid},
    {.lng = "pfid-token-file", .arg = PFI_ARG_REQ, .argname = "FILE",
     .help = "bearer token for pfid (mode 0600)", .type = PFI_OT_STRING,
     .var = &g.pfid_token},
    PFI_OPT_STRING("pfid-cacert", 0, &g.pfid_tls.cacert, "FILE",
                   "with an https --pfid, the PEM CA pfid's certificate must "
                   "chain to (default: the system's CAs; always verified "
                   "unless --pfid-insecure)"),
    PFI_OPT_STRING("pfid-cert", 0, &g.pfid_tls.cert, "FILE",
                   "a PEM client certificate for a pfid that asks for one, "
                   "with --pfid-key"),
    PFI_OPT_STRING("pfid-key", 0, &g.pfid_tls.key, "FILE",
                   "the client certificate's PEM private key (mode 0600)"),
    PFI_OPT_FLAG("pfid-insecure", 0, &g.pfid_tls.insecure,
                 "allow plain http to a pfid that is not on this host, and "
                 "an https pfid without verifying its certificate"),
    ROW_CONFIG(CONFIG_CHAIN),
    ROW_INTERVAL("time between syncs (default 30s, at most 1 day)"),
    {.lng = "report", .arg = PFI_ARG_REQ, .argname = "D",
     .help = "with --vtn, report every D during an event (default 15m)",
     .type = PFI_OT_DURATION, .var = &g.report_s, .ival = PFI_DUR_ANY, .lo = 0,
     .hi = 86400},
    {.lng = "overlap", .arg = PFI_ARG_REQ, .argname = "D",
     .help = "back-to-back spans overlap by D (default 2s)",
     .type = PFI_OT_DURATION, .var = &g.overlap, .ival = PFI_DUR_ANY, .lo = 0,
     .hi = 86400},
    {.lng = "shed-loss", .arg = PFI_ARG_REQ, .argname = "L",
     .help = "report (--report) and log (--log) pfid's live capacity at <= L "
             "throughput loss (1, 2, 5, 10 or 20 %; default 10%), reported as "
             "LOAD_SHED_DELTA_AVAILABLE",
     .type = PFI_OT_CALLBACK, .cb = shed_loss_cb},
    {.lng = "listen", .arg = PFI_ARG_REQ, .argname = "HOST:PORT",
     .help = "with --vtn, serve the VTN's event notifications here (a PORT "
             "alone: on 127.0.0.1; port 0 picks a free one), subscribe to "
             "them, and sync at once on each",
     .type = PFI_OT_STRING, .var = &g.listen},
    ROW_CALLBACK("the URL of --listen as the VTN reaches it (default "
                 "http://HOST:PORT/notify)"),
    {.lng = "once", .arg = PFI_ARG_NONE, .help = "one sync, then exit",
     .type = PFI_OT_FLAG, .var = &g.once},
    ROW_LOG("append series.csv and jobs.csv every sync"),
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt event_report_opts[] = {
    ROW_LOG("the logged event (bridge --log's directory)"),
    ROW_CONTRACT,
    ROW_TIERS,
    {.lng = "out", .arg = PFI_ARG_REQ, .argname = "DIR",
     .help = "where compliance.csv and event.html go", .type = PFI_OT_STRING,
     .var = &g.outdir},
    ROW_CONFIG(CONFIG_CHAIN),
    {.lng = "nodes", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "the nodes the GPU power is spread over", .type = PFI_OT_ULONG,
     .var = &g.nodes, .lo = 1, .hi = 1000000},
    ROW_NOTICE,
    {.lng = "phoenix", .arg = PFI_ARG_NONE,
     .help = "beside the event, Emerald AI's measured delivery of the "
             "Phoenix event's 25 % cut (data/real/SRP_total_power.csv)",
     .type = PFI_OT_FLAG, .var = &g.phoenix},
    {.lng = "emulated", .arg = PFI_ARG_NONE,
     .help = "the log is of an emulated fleet (labelled emulated)",
     .type = PFI_OT_FLAG, .var = &g.emulated},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt capacity_opts[] = {
    ROW_CURVES,
    ROW_MAP,
    ROW_TIERS,
    ROW_CONTRACT,
    {.lng = "tier", .arg = PFI_ARG_REQ, .argname = "NAME",
     .help = "every job in this tier (instead of --contract)",
     .type = PFI_OT_STRING, .var = &g.tier},
    ROW_DURATION("an event length, repeatable (default 15m, 1h, 2h, 4h)"),
    ROW_NOTICE,
    ROW_CONFIG(CONFIG_CHAIN ", with --level"),
    ROW_LEVEL("the level the capacity is stated at (default gpu)"),
    ROW_GPN,
    ROW_FORMAT,
    PFI_OPT_HELP,
    PFI_OPT_GROUP("The objective (docs/predict-allocate.md):"),
    OBJ_OPTS_BOUND(&g.ob),
    {.lng = "curve", .arg = PFI_ARG_REQ, .argname = "FIT",
     .help = "monotone (a curve whose power or throughput falls as the cap "
             "rises is decided on by its monotone fit) or raw",
     .type = PFI_OT_CHOICE, .var = &g.curve_fit, .words = obj_opt_curve_fits,
     .def = "monotone"},
    PFI_OPT_END};

static const struct pfi_opt curves_opts[] = {
    ROW_CURVES,
    ROW_MAP,
    ROW_CONFIG(CONFIG_CHAIN),
    ROW_LEVEL("the level of the power (node or meter)"),
    ROW_GPN,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt meter_opts[] = {
    ROW_CONFIG(CONFIG_CHAIN),
    {.lng = "gpu-w", .arg = PFI_ARG_REQ, .argname = "W[,W...]",
     .help = "GPU power, for the node and facility power by the chain",
     .type = PFI_OT_STRING, .var = &g.gpuw},
    {.lng = "other-w", .arg = PFI_ARG_REQ, .argname = "W[,W...]",
     .help = "the node's other power", .type = PFI_OT_STRING, .var = &g.otherw},
    {.lng = "powercap", .arg = PFI_ARG_REQ, .argname = "DIR",
     .help = "the powercap tree (default /sys/class/powercap)",
     .type = PFI_OT_STRING, .var = &g.powercap},
    {.lng = "bmc", .arg = PFI_ARG_REQ, .argname = "TOOL",
     .help = "also the BMC's DCMI reading: ipmitool, ipmi-dcmi or "
             "TOOL:PROGRAM",
     .type = PFI_OT_STRING, .var = &g.bmc},
    ROW_INTERVAL("the measuring interval (default 1s, at most 600 s)"),
    {.lng = "limit", .arg = PFI_ARG_REQ, .argname = "W",
     .help = "with --level, the GPU power that meets this limit now",
     .type = PFI_OT_NUMBER, .var = &g.limit, .lo = 0, .hi = 1e12},
    ROW_LEVEL("the level of --limit (node or meter)"),
    ROW_FORMAT,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt grid_opts[] = {PFI_OPT_HELP, PFI_OPT_END};

static const struct pfi_cmd_help timeline_help = {
    .cmd = "grid timeline",
    .usage = "usage: " USAGE_TIMELINE,
    .about = "timeline: the power limits the site must keep, from every source, merged\n"
    "by one rule (docs/grid.md): within a source the event of higher priority\n"
    "(lower OpenADR priority number) wins an overlap, then the "
    "later-scheduled\n"
    "one; across sources the lowest limit wins at every instant.\n"
    "The sources and options are listed below.\n",
    .opts = timeline_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help report_help = {
    .cmd = "grid report",
    .usage = "usage: " USAGE_REPORT,
    .about = "report: POSTs one interval's report for an event: any of --usage WH,\n"
    "--demand W, --baseline-w W, --shed-available W (OpenADR USAGE, DEMAND,\n"
    "BASELINE, LOAD_SHED_DELTA_AVAILABLE); --duration in seconds or 15m.\n",
    .opts = report_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help subscribe_help = {
    .cmd = "grid subscribe",
    .usage = "usage: " USAGE_SUBSCRIBE,
    .about = "subscribe: asks the VTN to POST event notifications (CREATE, UPDATE,\n"
    "DELETE) to --callback with a bearer token the callback checks: with\n"
    "--bearer-token-file, the file's (a random one made there, mode 0600,\n"
    "when it does not exist); without it the VEN's OAuth2 access token of\n"
    "the moment, which expires (a warning says so). bridge --listen serves\n"
    "such a callback itself, with a random token of its own.\n",
    .opts = subscribe_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help capacity_help = {
    .cmd = "grid capacity",
    .usage = "usage: " USAGE_CAPACITY,
    .about = "capacity: the power the jobs could shed at <= 1, 2, 5, 10, 20 %\n"
    "throughput loss with every job kept within its tier (--tiers: CSV\n"
    "tier,max_loss[,max_event_s][,notice_s]; --contract: CSV job,tier, or\n"
    "--tier for all), for each event length --duration (default 15m, 1h,\n"
    "2h, 4h) and the notice given (--notice, default 0): a job whose tier's\n"
    "longest event is shorter, or needs more notice, is not cut. With the\n"
    "curves' standard errors (tokens_sd), the quotes come with the range\n"
    "over the curves' 95 % intervals. The loss is the objective's, as in\n"
    "pfi capacity: by default the work kept (each job's share of its\n"
    "uncapped throughput times its GPUs: the quote does not depend on the\n"
    "unit a job reports in); --objective throughput sums raw throughput.\n"
    "Curves whose power or throughput falls as the cap rises are read by\n"
    "their monotone fit (--curve raw: as measured). The number to bid, and\n"
    "to report as LOAD_SHED_DELTA_AVAILABLE. --level node|meter with\n"
    "--config states it at the node or meter level (each curve restated as\n"
    "for curves below).\n",
    .opts = capacity_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help bridge_help = {
    .cmd = "grid bridge",
    .usage = "usage: " USAGE_BRIDGE,
    .about = "bridge: keeps pfid's events in step with the timeline of SOURCES (as\n"
    "for timeline): every --interval (default 30s) and at every span's start\n"
    "and end, limits at the node or meter level are converted to GPU power at\n"
    "the fleet's current draw (GET /v1/nodes, the --config chain), each span\n"
    "is posted as a pfid event (back-to-back spans overlap by --overlap,\n"
    "default 2s, so caps are never released between two intervals), changed\n"
    "spans are posted again and withdrawn ones cancelled. With --vtn, reports\n"
    "USAGE, DEMAND (the fleet's GPU power) and BASELINE every --report\n"
    "(default 15m) during an event. A VTN that cannot be reached leaves the\n"
    "last timeline in force. SIGTERM stops the bridge; pfid keeps its events.\n"
    "--listen HOST:PORT (with --vtn): serves the VTN's webhook there,\n"
    "subscribes to the program's event notifications (CREATE, UPDATE,\n"
    "DELETE) with a random bearer token of its own, and polls the VTN and\n"
    "syncs at once on each notification carrying it (others: 401/403;\n"
    "over 1 MiB: 413; malformed: 400, and polled on all the same), so that\n"
    "a new, changed or withdrawn event reaches pfid without waiting for\n"
    "--interval; GET <callback>/echo?echo=V answers V (a VTN's callback\n"
    "check). The subscription is checked at every poll (re-made if the VTN\n"
    "lost it; ones of its own the VTN kept after refusing a create are\n"
    "deleted) and deleted on SIGTERM or SIGINT. --callback URL: the URL\n"
    "the VTN posts to, when it reaches the listener by another name\n"
    "(default http://HOST:PORT/notify).\n"
    "--once: one sync, then exit (1 when it failed). --log DIR appends the\n"
    "fleet's target and power with pfid's live capacity at <= --shed-loss\n"
    "loss (shed, its interval and the longest event it holds for, GET\n"
    "/v1/capacity) to series.csv and each job's throughput to jobs.csv\n"
    "every sync (with held: 1 while pfid's controller holds the job under\n"
    "its pre-event caps, 0 once never cut or released by its contract).\n",
    .opts = bridge_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help event_report_help = {
    .cmd = "grid event-report",
    .usage = "usage: " USAGE_EVENT_REPORT,
    .about = "event-report: one logged event against the contract (--contract: CSV\n"
    "job,tier[,tenant][,deadline_tput]): per job and tenant the throughput\n"
    "lost against the tier's allowance and any violation with its reason,\n"
    "requested and realized cut, time above target, energy shed at the meter\n"
    "(GPU power spread over --nodes nodes through the --config chain); the\n"
    "tier's longest event and notice (--tiers) judged on how long each job\n"
    "was held (jobs.csv's held column; without it, the whole event); writes\n"
    "compliance.csv and event.html into --out and prints a JSON summary.\n",
    .opts = event_report_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help curves_help = {
    .cmd = "grid curves",
    .usage = "usage: " USAGE_CURVES,
    .about = "curves: rewrites a curves file with each point's power at the node or\n"
    "meter level (the job's GPUs spread over ceil(gpus / --gpus-per-node,\n"
    "default 8) nodes, each with the configured node_other_w; docs/grid.md),\n"
    "so that pfi index computes PFI over the broader power signal.\n",
    .opts = curves_opts,
    .footer = GRID_FOOTER};

static const struct pfi_cmd_help meter_help = {
    .cmd = "grid meter",
    .usage = "usage: " USAGE_METER,
    .about = "meter: what this node can measure (Linux powercap RAPL zones: package\n"
    "and DRAM power over --interval, default 1s; with --bmc, the BMC's DCMI\n"
    "reading of the whole node through ipmitool or freeipmi's ipmi-dcmi)\n"
    "and, with --gpu-w, GPU,\n"
    "node and facility power by the configured chain (--config: node_other_w,\n"
    "psu_rated_w, psu_curve, pue, facility_other_w; docs/grid.md); with\n"
    "--limit and --level, the GPU power that meets that limit now.\n",
    .opts = meter_opts,
    .footer = GRID_FOOTER};

static const struct pfi_action actions[] = {
    {"timeline", "the power limits the site must keep, from every source, merged into one timeline"},
    {"report", "POSTs one interval's report for an event to the VTN"},
    {"subscribe", "asks the VTN to POST event notifications to a callback"},
    {"capacity", "the power the jobs could shed at each throughput loss, within their tiers"},
    {"bridge", "keeps pfid's events in step with the timeline"},
    {"event-report", "one logged event against the contract"},
    {"curves", "rewrites a curves file with power at the node or meter level"},
    {"meter", "what this node can measure, and the chain's node and facility power"},
    {NULL, NULL}};

/* The overview: `pfi grid --help`. */
static const struct pfi_cmd_help help = {
    .cmd = "grid",
    .usage = "usage: pfi grid ACTION [OPTIONS]\n"
             "       pfi grid ACTION --help\n",
    .about = "Power targets from the grid (OpenADR 3 VTN, event files, "
             "schedule files) merged into one timeline, reports back to the "
             "VTN, and power at the meter.",
    .opts = grid_opts,
    .footer = "'pfi grid ACTION --help' lists the options of an action.\n"
              "\n" GRID_FOOTER,
    .flags = PFI_OPT_WRAP_ABOUT,
    .actions = actions};

/* Each action with its help page and the function that runs it. */
static int grid_timeline(const struct opts *o);
static int grid_report(const struct opts *o);
static int grid_subscribe(const struct opts *o);
static int grid_bridge(const struct opts *o);
static const struct grid_action {
  const struct pfi_cmd_help *help;
  int (*run)(const struct opts *o);
} grid_actions[] = {
    {&timeline_help, grid_timeline},
    {&report_help, grid_report},
    {&subscribe_help, grid_subscribe},
    {&capacity_help, pfi__grid_capacity},
    {&bridge_help, grid_bridge},
    {&event_report_help, pfi__grid_event_report},
    {&curves_help, pfi__grid_curves},
    {&meter_help, pfi__grid_meter}};
#define N_ACTIONS (sizeof grid_actions / sizeof grid_actions[0])

int pfi__grid_usage(const char *fmt, const char *arg) {
  return pfi_cli_usage("grid", fmt, arg);
}

static int parse_time(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end != s && *end == 0 && v >= 0 && v < (double)PFI_TIME_FOREVER) {
    *out = (int64_t)v;
    return 0;
  }
  struct pfi_error e;
  return pfi_time_parse_rfc3339(s, out, &e) < 0 ? -1 : 0;
}

/* Reads a secret: the file must not be readable by others. */
static int read_secret(const char *path, char *buf, size_t n) {
  if (!path) {
    const char *e = getenv("PFI_VEN_CLIENT_SECRET");
    if (!e || !*e) {
      fprintf(stderr, "pfi grid: --client-secret-file FILE (or "
                      "PFI_VEN_CLIENT_SECRET) is required with --vtn\n");
      return PFI_EXIT_USAGE;
    }
    snprintf(buf, n, "%s", e);
    return 0;
  }
  struct stat st;
  FILE *f = fopen(path, "re");
  if (!f || fstat(fileno(f), &st) < 0) {
    fprintf(stderr, "pfi grid: %s: cannot read the client secret\n", path);
    if (f)
      fclose(f);
    return PFI_EXIT_USAGE;
  }
  if (st.st_mode & 077) {
    fprintf(stderr,
            "pfi grid: %s: the client secret is readable by others (mode "
            "%03o): chmod 600 it\n",
            path, (unsigned)(st.st_mode & 0777));
    fclose(f);
    return PFI_EXIT_USAGE;
  }
  size_t k = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[k] = 0;
  while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == '\r'))
    buf[--k] = 0;
  if (k == 0) {
    fprintf(stderr, "pfi grid: %s: empty client secret\n", path);
    return PFI_EXIT_USAGE;
  }
  return 0;
}

const char *pfi__grid_level_name(int l) {
  return l == PFI_LEVEL_GPU ? "gpu" : l == PFI_LEVEL_NODE ? "node" : "meter";
}

static const char *source_name(int s) {
  return s == PFI_SRC_OPENADR    ? "openadr"
         : s == PFI_SRC_SCHEDULE ? "schedule"
                                 : "api";
}

static int print_timeline(const struct pfi_timeline *tl, enum pfi_format fmt,
                          double floor_w) {
  char a[32], b[32];
  if (fmt == PFI_FMT_JSON) {
    json_t *arr = json_array();
    for (size_t i = 0; i < tl->n; i++) {
      const struct pfi_target_span *s = &tl->spans[i];
      pfi_time_format_rfc3339(s->start_s, a, sizeof a);
      pfi_time_format_rfc3339(s->end_s, b, sizeof b);
      json_t *o = json_object();
      json_object_set_new(o, "start", json_string(a));
      json_object_set_new(o, "end", json_string(b));
      json_object_set_new(o, "start_s", json_integer(s->start_s));
      json_object_set_new(o, "end_s", json_integer(s->end_s));
      json_object_set_new(o, "limit_w", json_real(s->limit_w));
      json_object_set_new(o, "level",
                          json_string(pfi__grid_level_name(s->level)));
      json_object_set_new(o, "source", json_string(source_name(s->source)));
      json_object_set_new(o, "event", pfi_cli_json_str(s->event));
      json_object_set_new(o, "type", pfi_cli_json_str(s->kind));
      json_object_set_new(o, "infeasible_by_w",
                          floor_w > s->limit_w ? json_real(floor_w - s->limit_w)
                                               : json_real(0));
      json_array_append_new(arr, o);
    }
    return pfi_cli_print_json(arr);
  }
  if (fmt == PFI_FMT_CSV)
    puts("start,end,limit_w,level,source,event,type,infeasible_by_w");
  else
    printf("%-20s  %-20s  %14s  %-5s  %-8s  %-24s  %s\n", "start", "end",
           "limit_W", "level", "source", "event", "type");
  for (size_t i = 0; i < tl->n; i++) {
    const struct pfi_target_span *s = &tl->spans[i];
    pfi_time_format_rfc3339(s->start_s, a, sizeof a);
    pfi_time_format_rfc3339(s->end_s, b, sizeof b);
    if (fmt == PFI_FMT_CSV) {
      printf("%s,%s,%.6f,%s,%s,", a, b, s->limit_w,
             pfi__grid_level_name(s->level), source_name(s->source));
      pfi_cli_put_csv_field(stdout, s->event);
      putchar(',');
      pfi_cli_put_csv_field(stdout, s->kind);
      printf(",%.6f\n", floor_w > s->limit_w ? floor_w - s->limit_w : 0.0);
    } else {
      printf("%-20s  %-20s  %14.1f  %-5s  %-8s  ", a, b, s->limit_w,
             pfi__grid_level_name(s->level), source_name(s->source));
      pfi_cli_put_name(stdout, s->event, 24);
      printf("  %s", s->kind);
      if (floor_w > s->limit_w)
        printf("  INFEASIBLE: %.1f W below the floor", floor_w - s->limit_w);
      putchar('\n');
    }
  }
  if (fmt == PFI_FMT_TABLE && tl->n == 0)
    puts("(no limit in force now or later)");
  return ferror(stdout) ? PFI_EXIT_FAIL : 0;
}

static const struct pfi_opt *find_row(const struct pfi_opt *t,
                                      const char *name, size_t len) {
  for (; t->lng || t->help; t++)
    if (t->lng && strlen(t->lng) == len && strncmp(t->lng, name, len) == 0)
      return t;
  return NULL;
}

/* An option another action takes but this one does not is a usage error
 * naming it, before getopt would call it unknown: 0, or the exit status. */
static int foreign_option(const struct pfi_cmd_help *h, int argc,
                          char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0)
      break;
    if (strncmp(a, "--", 2) != 0 || !a[2])
      continue;
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct pfi_opt *own = find_row(h->opts, name, len);
    if (own) {
      if (own->arg == PFI_ARG_REQ && !eq)
        i++; /* its value */
      continue;
    }
    char others[160] = "";
    size_t k = 0;
    for (size_t j = 0; j < N_ACTIONS; j++)
      if (grid_actions[j].help != h &&
          find_row(grid_actions[j].help->opts, name, len) && k < 140)
        k += (size_t)snprintf(others + k, sizeof others - k, "%s%s",
                              k ? ", " : "",
                              grid_actions[j].help->cmd + strlen("grid "));
    if (k)
      return pfi_opt_usage(h, "option '--%.*s' is not one of %s's (%s %s it)",
                           (int)len, name, h->cmd + strlen("grid "), others,
                           strchr(others, ',') ? "take" : "takes");
  }
  return 0;
}

/* The action's options into *o (its defaults set by the caller); 0, -1
 * after --help, or the exit status of a usage error. */
static int parse(const struct pfi_cmd_help *h, int argc, char **argv,
                 struct opts *o) {
  int st = foreign_option(h, argc, argv);
  if (st)
    return st;
  g = *o;
  struct pfi_optparse op;
  st = pfi_opt_parse(&op, h, argc, argv);
  if (st != PFI_OPT_GO)
    return st == 0 ? -1 : st;
  g.fmt = fmt;
  *o = g;
  /* The input files, before any work: missing or unreadable is exit 2. */
  for (size_t i = 0; i < o->nevents; i++)
    if (pfi_cli_input("--events", o->events[i]))
      return PFI_EXIT_USAGE;
  for (size_t i = 0; i < o->nschedules; i++)
    if (pfi_cli_input("--schedule", o->schedules[i]))
      return PFI_EXIT_USAGE;
  if (pfi_cli_input("--config", o->config) ||
      pfi_cli_input("--curves", o->curves) ||
      pfi_cli_input("--tiers", o->tiers) ||
      pfi_cli_input("--contract", o->contract))
    return PFI_EXIT_USAGE;
  return 0;
}

int pfi__grid_fail(const struct pfi_error *err) {
  char buf[PFI_ERROR_MSG_MAX + PFI_ERROR_FILE_MAX + 64];
  pfi_error_format(err, buf, sizeof buf);
  fprintf(stderr, "pfi grid: %s\n", buf);
  int code = err->code;
  if (code == PFI_ENOPERM || code == PFI_EIO || code == PFI_ENOTFOUND)
    return PFI_EXIT_FAIL;
  return pfi_cli_status(code);
}

/* 1 when an http URL's host is this host's loopback (127.0.0.0/8, ::1,
 * localhost). */
static int loopback_url(const char *url) {
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  return strncmp(h, "127.", 4) == 0 || strncmp(h, "[::1]", 5) == 0 ||
         (strncasecmp(h, "localhost", 9) == 0 &&
          (h[9] == 0 || h[9] == ':' || h[9] == '/'));
}

static int open_ven(const struct opts *o, struct pfi_ven **v) {
  if (!o->id || !o->program)
    return pfi__grid_usage("--vtn needs --client-id and --program%s", "");
  char secret[4097];
  int rc = read_secret(o->secret_file, secret, sizeof secret);
  if (rc)
    return rc;
  struct pfi_ven_config vc = {.vtn_url = o->vtn,
                              .client_id = o->id,
                              .client_secret = secret,
                              .program_name = o->program,
                              .ven_name = o->id,
                              .token_url = o->token_url,
                              .cacert = o->cacert};
  struct pfi_error err;
  pfi_error_clear(&err);
  /* Plain http off this host: the client secret, the token and the
   * events cross the network in clear (docs/security.md). */
  const char *u[2] = {o->vtn, o->token_url};
  for (int i = 0; i < 2; i++)
    if (u[i] && strncasecmp(u[i], "http://", 7) == 0 && !loopback_url(u[i]))
      fprintf(stderr,
              "pfi grid: warning: %s %s is plain http: the client secret and "
              "the events cross the network unencrypted; use https\n",
              i ? "--token-url" : "--vtn", u[i]);
  rc = pfi_ven_open(&vc, v, &err);
  memset(secret, 0, sizeof secret);
  return rc < 0 ? pfi__grid_fail(&err) : 0;
}

static void oadr_config(const struct opts *o, struct pfi_oadr_config *cfg) {
  pfi_oadr_config_init(cfg, o->now);
  cfg->baseline_w = o->baseline;
  if (o->have_simple)
    for (int i = 0; i < 3; i++)
      cfg->simple_frac[i + 1] = o->simple[i];
  if (o->unit > 0)
    cfg->default_unit_w = o->unit;
  cfg->capacity_level = cfg->setpoint_level = o->level;
  cfg->seed = o->seed;
}

static int grid_timeline(const struct opts *o) {
  if (!o->vtn && o->nevents == 0 && o->nschedules == 0)
    return pfi__grid_usage(
        "timeline: give at least one source (--vtn, --events, "
        "--schedule)%s",
        "");
  struct pfi_oadr_config cfg;
  oadr_config(o, &cfg);
  struct pfi_timeline all, res;
  pfi_timeline_init(&all);
  pfi_timeline_init(&res);
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc = 0, status = 0;
  for (size_t i = 0; i < o->nevents && rc >= 0; i++) {
    char *buf;
    size_t len;
    if ((rc = pfi_read_file(o->events[i], &buf, &len, &err)) < 0)
      break;
    rc = pfi_oadr_decode_events(o->events[i], buf, len, &cfg, &all, NULL, &err);
    free(buf);
  }
  for (size_t i = 0; i < o->nschedules && rc >= 0; i++)
    rc = pfi_schedule_load(o->schedules[i], o->baseline, &all, &err);
  if (rc >= 0 && o->vtn) {
    struct pfi_ven *v = NULL;
    if ((status = open_ven(o, &v)) != 0)
      goto out;
    struct pfi_oadr_stats st;
    rc = pfi_ven_poll(v, &cfg, &all, &st, &err);
    pfi_ven_close(v);
    if (rc >= 0 && o->fmt == PFI_FMT_TABLE)
      fprintf(stderr,
              "pfi grid: VTN: %zu event(s), %zu span(s), %zu past, %zu "
              "payload(s) of other types ignored, %zu event(s) of other "
              "programs skipped\n",
              st.events, st.spans, st.expired, st.ignored_types,
              st.other_program);
  }
  if (rc >= 0)
    rc = pfi_timeline_resolve(&all, &res, &err);
  if (rc < 0)
    status = pfi__grid_fail(&err);
  else
    status = print_timeline(&res, o->fmt, o->floor);
out:
  pfi_timeline_release(&all);
  pfi_timeline_release(&res);
  return status;
}

static int grid_report(const struct opts *o) {
  if (!o->vtn || !o->event || !(o->duration > 0) || o->start == 0)
    return pfi__grid_usage("report: --vtn, --event, --start and --duration are "
                           "required%s",
                           "");
  struct pfi_ven_report_value v[4];
  size_t n = 0;
  if (o->usage > 0)
    v[n++] =
        (struct pfi_ven_report_value){"USAGE", o->usage, "WH", "DIRECT_READ"};
  if (o->demand > 0)
    v[n++] = (struct pfi_ven_report_value){"DEMAND", o->demand, "W", "MEAN"};
  if (o->basew > 0)
    v[n++] =
        (struct pfi_ven_report_value){"BASELINE", o->basew, "W", "BASELINE"};
  if (o->shed > 0)
    v[n++] = (struct pfi_ven_report_value){"LOAD_SHED_DELTA_AVAILABLE", o->shed,
                                           "W", "FORECAST"};
  if (n == 0)
    return pfi__grid_usage("report: give at least one of --usage, --demand, "
                           "--baseline-w, --shed-available%s",
                           "");
  struct pfi_ven *ven = NULL;
  int status = open_ven(o, &ven);
  if (status)
    return status;
  struct pfi_ven_report r = {.event_id = o->event,
                             .report_name = "pfi",
                             .start_s = o->start,
                             .duration_s = o->duration,
                             .values = v,
                             .nvalues = n};
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc = pfi_ven_send_report(ven, &r, &err);
  pfi_ven_close(ven);
  if (rc < 0)
    return pfi__grid_fail(&err);
  printf("report for event %s sent (%zu value(s))\n", o->event, n);
  return 0;
}

static int grid_subscribe(const struct opts *o) {
  if (!o->vtn || !o->callback)
    return pfi__grid_usage("subscribe: --vtn and --callback are required%s",
                           "");
  if (strncmp(o->callback, "http://", 7) != 0 &&
      strncmp(o->callback, "https://", 8) != 0)
    return pfi__grid_usage("--callback: '%s' is not an http(s) URL",
                           o->callback);
  struct pfi_ven *ven = NULL;
  int status = open_ven(o, &ven);
  if (status)
    return status;
  struct pfi_error err;
  pfi_error_clear(&err);
  char bearer[PFI_OADR_BEARER_LEN] = "";
  int rc = 0;
  if (o->bearer_file) {
    if (pfi_oadr_bearer_file(o->bearer_file, bearer, &err) < 0) {
      /* A token file that cannot be used is bad input: exit 2, as a
       * client secret file's. */
      pfi_ven_close(ven);
      pfi__grid_fail(&err);
      return PFI_EXIT_USAGE;
    }
  } else
    fprintf(stderr,
            "pfi grid subscribe: warning: the subscription's bearer token is "
            "the VEN's OAuth2 access token, which expires; give "
            "--bearer-token-file for one that lasts\n");
  if (rc == 0)
    rc = pfi_ven_subscribe(ven, o->callback, o->bearer_file ? bearer : NULL,
                           &err);
  memset(bearer, 0, sizeof bearer);
  pfi_ven_close(ven);
  if (rc < 0)
    return pfi__grid_fail(&err);
  printf("subscribed %s to the events of program %s\n", o->callback,
         o->program);
  return 0;
}

static int grid_bridge(const struct opts *o) {
  struct pfi_ven *ven = NULL;
  int rc;
  if (o->vtn && (rc = open_ven(o, &ven)) != 0)
    return rc;
  rc = pfi__grid_bridge(o, ven);
  pfi_ven_close(ven);
  return rc;
}

int cmd_grid(int argc, char **argv) {
  if (argc < 2 || pfi_cli_is_help(argv[1])) {
    pfi_opt_print_help(&help, argc < 2 ? stderr : stdout);
    return argc < 2 ? PFI_EXIT_USAGE : 0;
  }
  const char *sub = argv[1];
  const struct grid_action *act = NULL;
  for (size_t i = 0; i < N_ACTIONS && !act; i++)
    if (strcmp(sub, grid_actions[i].help->cmd + strlen("grid ")) == 0)
      act = &grid_actions[i];
  if (!act) {
    const char *names[N_ACTIONS], *near[1];
    for (size_t i = 0; i < N_ACTIONS; i++)
      names[i] = grid_actions[i].help->cmd + strlen("grid ");
    if (pfi_suggest(sub, names, N_ACTIONS, near, 1) == 1)
      return pfi_opt_usage(&help, "unknown action '%s'; did you mean '%s'?",
                           sub, near[0]);
    return pfi_opt_usage(&help,
                         "unknown action '%s' (timeline, report, subscribe, "
                         "capacity, bridge, event-report, curves, meter)",
                         sub);
  }
  struct opts o;
  memset(&o, 0, sizeof o);
  o.now = (int64_t)time(NULL);
  o.seed = 1;
  o.level = PFI_LEVEL_METER;
  o.overlap = -1;
  obj_opt_init(&o.ob);
  optind = 1;
  int rc = parse(act->help, argc - 1, argv + 1, &o);
  if (rc < 0)
    return 0; /* --help */
  if (rc)
    return rc;
  return act->run(&o);
}
