/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid`'s options (src/base/opt.h): each action's table, bound to one
 * set of variables, and its help page. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_grid.h"
#include "opt.h"
#include "pfi/capacity.h"
#include "pfi/timeline.h"

/* The options, bound to these (src/base/opt.h); pfi__grid_bind() takes
 * the caller's defaults into them first and hands them back parsed. */
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
/* The sources a timeline merges (timeline, bridge). */
#define ROWS_SOURCES                                                           \
  ROW_VTN("poll an OpenADR 3.1 VTN (with --client-id, --client-secret-file "   \
          "and --program)"),                                                   \
      ROW_EVENTS, ROW_SCHEDULE
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
    ROWS_SOURCES,
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
    ROWS_SOURCES,
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

/* An action's help page: `pfi grid NAME`'s USAGE, what it does (ABOUT),
 * its OPTS and the exit statuses every action shares. */
#define GRID_HELP(NAME, USAGE, OPTS, ABOUT)                                    \
  {.cmd = "grid " NAME, .usage = "usage: " USAGE, .about = ABOUT,              \
   .opts = OPTS, .footer = GRID_FOOTER}

const struct pfi_cmd_help pfi__grid_timeline_help =
    GRID_HELP("timeline", USAGE_TIMELINE, timeline_opts,
    "timeline: the power limits the site must keep, from every source, merged\n"
    "by one rule (docs/grid.md): within a source the event of higher priority\n"
    "(lower OpenADR priority number) wins an overlap, then the "
    "later-scheduled\n"
    "one; across sources the lowest limit wins at every instant.\n"
    "The sources and options are listed below.\n");

const struct pfi_cmd_help pfi__grid_report_help =
    GRID_HELP("report", USAGE_REPORT, report_opts,
    "report: POSTs one interval's report for an event: any of --usage WH,\n"
    "--demand W, --baseline-w W, --shed-available W (OpenADR USAGE, DEMAND,\n"
    "BASELINE, LOAD_SHED_DELTA_AVAILABLE); --duration in seconds or 15m.\n");

const struct pfi_cmd_help pfi__grid_subscribe_help =
    GRID_HELP("subscribe", USAGE_SUBSCRIBE, subscribe_opts,
    "subscribe: asks the VTN to POST event notifications (CREATE, UPDATE,\n"
    "DELETE) to --callback with a bearer token the callback checks: with\n"
    "--bearer-token-file, the file's (a random one made there, mode 0600,\n"
    "when it does not exist); without it the VEN's OAuth2 access token of\n"
    "the moment, which expires (a warning says so). bridge --listen serves\n"
    "such a callback itself, with a random token of its own.\n");

const struct pfi_cmd_help pfi__grid_capacity_help =
    GRID_HELP("capacity", USAGE_CAPACITY, capacity_opts,
    "capacity: the power the jobs could shed at <= 1, 2, 5, 10, 20 %\n"
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
    "for curves below).\n");

const struct pfi_cmd_help pfi__grid_bridge_help =
    GRID_HELP("bridge", USAGE_BRIDGE, bridge_opts,
    "bridge: keeps pfid's events in step with the timeline of SOURCES (as\n"
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
    "its pre-event caps, 0 once never cut or released by its contract).\n");

const struct pfi_cmd_help pfi__grid_event_report_help =
    GRID_HELP("event-report", USAGE_EVENT_REPORT, event_report_opts,
    "event-report: one logged event against the contract (--contract: CSV\n"
    "job,tier[,tenant][,deadline_tput]): per job and tenant the throughput\n"
    "lost against the tier's allowance and any violation with its reason,\n"
    "requested and realized cut, time above target, energy shed at the meter\n"
    "(GPU power spread over --nodes nodes through the --config chain); the\n"
    "tier's longest event and notice (--tiers) judged on how long each job\n"
    "was held (jobs.csv's held column; without it, the whole event); writes\n"
    "compliance.csv and event.html into --out and prints a JSON summary.\n");

const struct pfi_cmd_help pfi__grid_curves_help =
    GRID_HELP("curves", USAGE_CURVES, curves_opts,
    "curves: rewrites a curves file with each point's power at the node or\n"
    "meter level (the job's GPUs spread over ceil(gpus / --gpus-per-node,\n"
    "default 8) nodes, each with the configured node_other_w; docs/grid.md),\n"
    "so that pfi index computes PFI over the broader power signal.\n");

const struct pfi_cmd_help pfi__grid_meter_help =
    GRID_HELP("meter", USAGE_METER, meter_opts,
    "meter: what this node can measure (Linux powercap RAPL zones: package\n"
    "and DRAM power over --interval, default 1s; with --bmc, the BMC's DCMI\n"
    "reading of the whole node through ipmitool or freeipmi's ipmi-dcmi)\n"
    "and, with --gpu-w, GPU,\n"
    "node and facility power by the configured chain (--config: node_other_w,\n"
    "psu_rated_w, psu_curve, pue, facility_other_w; docs/grid.md); with\n"
    "--limit and --level, the GPU power that meets that limit now.\n");

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
const struct pfi_cmd_help pfi__grid_help = {
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

int pfi__grid_bind(const struct pfi_cmd_help *h, int argc, char **argv,
                   struct opts *o) {
  g = *o;
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, h, argc, argv);
  if (st != PFI_OPT_GO)
    return st == 0 ? -1 : st;
  g.fmt = fmt;
  *o = g;
  return 0;
}
