/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid`: power targets from the grid (OpenADR 3 VTN, event files,
 * schedule files) merged into one timeline; reports back to the VTN; power
 * at the meter. Parses, calls libpfi, prints. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/flexcap.h"
#include "pfi/meter.h"
#include "pfi/openadr.h"
#include "pfi/timeline.h"

static const char usage_text[] =
    "usage: pfi grid timeline [SOURCES] [OPTIONS]\n"
    "       pfi grid report --vtn URL --client-id ID --program NAME\n"
    "                       --event ID --start TIME --duration D VALUES\n"
    "       pfi grid subscribe --vtn URL --client-id ID --program NAME\n"
    "                          --callback URL\n"
    "       pfi grid capacity --curves FILE --tiers FILE\n"
    "                         (--contract FILE | --tier NAME)\n"
    "                         [--duration D]... [--notice D]\n"
    "       pfi grid meter [--config FILE] [--gpu-w W[,W...]]\n"
    "                      [--other-w W[,W...]] [--powercap DIR]\n"
    "                      [--interval D] [--limit W --level node|meter]\n"
    "\n"
    "timeline: the power limits the site must keep, from every source, merged\n"
    "by one rule (docs/grid.md): within a source the event of higher priority\n"
    "(lower OpenADR priority number) wins an overlap, then the later-scheduled\n"
    "one; across sources the lowest limit wins at every instant.\n"
    "  Sources (any number; at least one):\n"
    "    --vtn URL              poll an OpenADR 3.1 VTN (with --client-id,\n"
    "                           --client-secret-file and --program)\n"
    "    --events FILE          OpenADR 3 events as JSON (GET /events' body)\n"
    "    --schedule FILE        CSV: start,end,limit[,level][,priority]\n"
    "  Options:\n"
    "    --client-id ID         OAuth2 client id of this VEN\n"
    "    --client-secret-file F file holding the client secret (mode 0600;\n"
    "                           or the PFI_VEN_CLIENT_SECRET variable)\n"
    "    --program NAME         the program whose events apply\n"
    "    --baseline W           the baseline for relative, SIMPLE and %\n"
    "                           limits, in W (default: none)\n"
    "    --simple F1,F2,F3      SIMPLE levels 1-3 as fractions of the\n"
    "                           baseline (default 0.90,0.75,0.50; level 0 is\n"
    "                           no limit)\n"
    "    --unit W               watts per payload unit when an event states\n"
    "                           none (default 1000: kW)\n"
    "    --level gpu|node|meter where IMPORT_CAPACITY_LIMIT and setpoints\n"
    "                           apply (default meter)\n"
    "    --now TIME             RFC 3339 or Unix seconds (default: now)\n"
    "    --seed N               randomizeStart draws (default 1)\n"
    "    --floor W              the least power the site can reach at the\n"
    "                           same level: a limit below it is shown as\n"
    "                           infeasible, with the shortfall\n"
    "    --format table|csv|json\n"
    "\n"
    "report: POSTs one interval's report for an event: any of --usage WH,\n"
    "--demand W, --baseline-w W, --shed-available W (OpenADR USAGE, DEMAND,\n"
    "BASELINE, LOAD_SHED_DELTA_AVAILABLE); --duration in seconds or 15m.\n"
    "\n"
    "capacity: the power the jobs could shed at <= 1, 2, 5, 10, 20 %\n"
    "throughput loss with every job kept within its tier (--tiers: CSV\n"
    "tier,max_loss[,max_event_s][,notice_s]; --contract: CSV job,tier, or\n"
    "--tier for all), for each event length --duration (default 15m, 1h,\n"
    "2h, 4h) and the notice given (--notice, default 0): a job whose tier's\n"
    "longest event is shorter, or needs more notice, is not cut. With the\n"
    "curves' standard errors (tokens_sd), the quotes come with the range\n"
    "over the curves' 95 %% intervals. The number to bid, and to report as\n"
    "LOAD_SHED_DELTA_AVAILABLE.\n"
    "\n"
    "subscribe: asks the VTN to POST event notifications (CREATE, UPDATE,\n"
    "DELETE) to --callback, with --client-id's secret as the bearer token\n"
    "the callback must check.\n"
    "\n"
    "meter: what this node can measure (Linux powercap RAPL zones: package\n"
    "and DRAM power over --interval, default 1s) and, with --gpu-w, GPU,\n"
    "node and facility power by the configured chain (--config: node_other_w,\n"
    "psu_rated_w, psu_curve, pue, facility_other_w; docs/grid.md); with\n"
    "--limit and --level, the GPU power that meets that limit now.\n"
    "\n"
    "Exit status: 0 ok, 1 a VTN or device failure (network, HTTP, refused\n"
    "credentials), 2 bad usage or bad input (file:line:column or the JSON\n"
    "field).\n";

static int usage(const char *fmt, const char *arg) {
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

static const char *level_name(int l) {
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
      json_object_set_new(o, "level", json_string(level_name(s->level)));
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
      printf("%s,%s,%.6f,%s,%s,", a, b, s->limit_w, level_name(s->level),
             source_name(s->source));
      pfi_cli_put_csv_field(stdout, s->event);
      putchar(',');
      pfi_cli_put_csv_field(stdout, s->kind);
      printf(",%.6f\n", floor_w > s->limit_w ? floor_w - s->limit_w : 0.0);
    } else {
      printf("%-20s  %-20s  %14.1f  %-5s  %-8s  ", a, b, s->limit_w,
             level_name(s->level), source_name(s->source));
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

enum {
  O_VTN = 256, O_EVENTS, O_SCHEDULE, O_ID, O_SECRET, O_PROGRAM, O_BASELINE,
  O_SIMPLE, O_UNIT, O_LEVEL, O_NOW, O_SEED, O_FORMAT, O_EVENT, O_START,
  O_DURATION, O_USAGE, O_DEMAND, O_BASEW, O_SHED, O_CONFIG, O_GPUW, O_OTHERW,
  O_POWERCAP, O_INTERVAL, O_LIMIT, O_FLOOR, O_CALLBACK, O_CURVES, O_MAP, O_TIERS, O_CONTRACT, O_TIER,
  O_NOTICE
};

struct opts {
  const char *vtn, *id, *secret_file, *program, *event;
  const char *events[16], *schedules[16];
  size_t nevents, nschedules;
  double baseline, simple[3], unit;
  int level, have_simple;
  int64_t now, start;
  unsigned long seed;
  enum pfi_format fmt;
  double duration, usage, demand, basew, shed;
  const char *config, *gpuw, *otherw, *powercap, *callback;
  const char *curves, *map, *tiers, *contract, *tier;
  double durations[16], notice;
  size_t ndur;
  double interval, limit, floor;
};

static int parse(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {
      {"vtn", required_argument, NULL, O_VTN},
      {"events", required_argument, NULL, O_EVENTS},
      {"schedule", required_argument, NULL, O_SCHEDULE},
      {"client-id", required_argument, NULL, O_ID},
      {"client-secret-file", required_argument, NULL, O_SECRET},
      {"program", required_argument, NULL, O_PROGRAM},
      {"baseline", required_argument, NULL, O_BASELINE},
      {"simple", required_argument, NULL, O_SIMPLE},
      {"unit", required_argument, NULL, O_UNIT},
      {"level", required_argument, NULL, O_LEVEL},
      {"now", required_argument, NULL, O_NOW},
      {"seed", required_argument, NULL, O_SEED},
      {"format", required_argument, NULL, O_FORMAT},
      {"event", required_argument, NULL, O_EVENT},
      {"start", required_argument, NULL, O_START},
      {"duration", required_argument, NULL, O_DURATION},
      {"usage", required_argument, NULL, O_USAGE},
      {"demand", required_argument, NULL, O_DEMAND},
      {"baseline-w", required_argument, NULL, O_BASEW},
      {"shed-available", required_argument, NULL, O_SHED},
      {"config", required_argument, NULL, O_CONFIG},
      {"gpu-w", required_argument, NULL, O_GPUW},
      {"other-w", required_argument, NULL, O_OTHERW},
      {"powercap", required_argument, NULL, O_POWERCAP},
      {"interval", required_argument, NULL, O_INTERVAL},
      {"limit", required_argument, NULL, O_LIMIT},
      {"floor", required_argument, NULL, O_FLOOR},
      {"callback", required_argument, NULL, O_CALLBACK},
      {"curves", required_argument, NULL, O_CURVES},
      {"map", required_argument, NULL, O_MAP},
      {"tiers", required_argument, NULL, O_TIERS},
      {"contract", required_argument, NULL, O_CONTRACT},
      {"tier", required_argument, NULL, O_TIER},
      {"notice", required_argument, NULL, O_NOTICE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  struct pfi_error err;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    double *dst = NULL;
    switch (c) {
    case O_VTN:
      o->vtn = optarg;
      break;
    case O_EVENTS:
    case O_SCHEDULE: {
      size_t *n = c == O_EVENTS ? &o->nevents : &o->nschedules;
      if (*n == 16)
        return usage("at most 16 %s files", c == O_EVENTS ? "--events"
                                                          : "--schedule");
      (c == O_EVENTS ? o->events : o->schedules)[(*n)++] = optarg;
      break;
    }
    case O_ID:
      o->id = optarg;
      break;
    case O_SECRET:
      o->secret_file = optarg;
      break;
    case O_PROGRAM:
      o->program = optarg;
      break;
    case O_EVENT:
      o->event = optarg;
      break;
    case O_CONFIG:
      o->config = optarg;
      break;
    case O_CALLBACK:
      o->callback = optarg;
      break;
    case O_CURVES:
      o->curves = optarg;
      break;
    case O_MAP:
      o->map = optarg;
      break;
    case O_TIERS:
      o->tiers = optarg;
      break;
    case O_CONTRACT:
      o->contract = optarg;
      break;
    case O_TIER:
      o->tier = optarg;
      break;
    case O_NOTICE:
      if (pfi_cli_parse_duration(optarg, &o->notice, &err) < 0 ||
          !(o->notice >= 0) || o->notice > 366 * 86400.0)
        return usage("--notice: expected a duration (30m), got '%s'", optarg);
      break;
    case O_GPUW:
      o->gpuw = optarg;
      break;
    case O_OTHERW:
      o->otherw = optarg;
      break;
    case O_POWERCAP:
      o->powercap = optarg;
      break;
    case O_BASELINE:
      dst = &o->baseline;
      break;
    case O_UNIT:
      dst = &o->unit;
      break;
    case O_USAGE:
      dst = &o->usage;
      break;
    case O_DEMAND:
      dst = &o->demand;
      break;
    case O_BASEW:
      dst = &o->basew;
      break;
    case O_SHED:
      dst = &o->shed;
      break;
    case O_LIMIT:
      dst = &o->limit;
      break;
    case O_FLOOR:
      dst = &o->floor;
      break;
    case O_SIMPLE:
      if (sscanf(optarg, "%lf,%lf,%lf", &o->simple[0], &o->simple[1],
                 &o->simple[2]) != 3)
        return usage("--simple: expected three fractions F1,F2,F3, got '%s'",
                     optarg);
      for (int i = 0; i < 3; i++)
        if (!(o->simple[i] >= 0 && o->simple[i] <= 1))
          return usage("--simple: fractions must be in [0, 1]: '%s'", optarg);
      o->have_simple = 1;
      break;
    case O_LEVEL:
      if (strcmp(optarg, "gpu") == 0)
        o->level = PFI_LEVEL_GPU;
      else if (strcmp(optarg, "node") == 0)
        o->level = PFI_LEVEL_NODE;
      else if (strcmp(optarg, "meter") == 0)
        o->level = PFI_LEVEL_METER;
      else
        return usage("--level: expected gpu, node or meter, got '%s'", optarg);
      break;
    case O_NOW:
    case O_START:
      if (parse_time(optarg, c == O_NOW ? &o->now : &o->start) < 0)
        return usage("expected an RFC 3339 time or Unix seconds, got '%s'",
                     optarg);
      break;
    case O_SEED:
      if (pfi_cli_parse_ulong(optarg, &o->seed) < 0)
        return usage("--seed: expected an integer, got '%s'", optarg);
      break;
    case O_DURATION:
    case O_INTERVAL:
      if (pfi_cli_parse_duration(optarg,
                                 c == O_DURATION ? &o->duration : &o->interval,
                                 &err) < 0 ||
          !((c == O_DURATION ? o->duration : o->interval) > 0) ||
          (c == O_INTERVAL && o->interval > 600) ||
          (c == O_DURATION && o->duration > 366 * 86400.0))
        return usage("expected a duration (15m, 1s; at most 600 s for "
                     "--interval, a year for --duration), got '%s'",
                     optarg);
      if (c == O_DURATION) {
        if (o->ndur == 16)
          return usage("at most 16 --duration values%s", "");
        o->durations[o->ndur++] = o->duration;
      }
      break;
    case O_FORMAT:
      if (pfi_cli_format("grid", optarg,
                         PFI_FMT_ALLOW_TABLE | PFI_FMT_ALLOW_CSV |
                             PFI_FMT_ALLOW_JSON,
                         &o->fmt) != 0)
        return PFI_EXIT_USAGE;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return -1;
    default:
      return pfi_cli_usage("grid", "bad option");
    }
    if (dst && (pfi_cli_parse_double(optarg, dst) < 0 || !isfinite(*dst) ||
                *dst < 0 || *dst > 1e12))
      return usage("expected a number in [0, 1e12], got '%s'", optarg);
  }
  if (optind != argc)
    return usage("unexpected argument '%s'", argv[optind]);
  return 0;
}

static int fail(const struct pfi_error *err) {
  char buf[PFI_ERROR_MSG_MAX + PFI_ERROR_FILE_MAX + 64];
  pfi_error_format(err, buf, sizeof buf);
  fprintf(stderr, "pfi grid: %s\n", buf);
  int code = err->code;
  if (code == PFI_ENOPERM || code == PFI_EIO || code == PFI_ENOTFOUND)
    return PFI_EXIT_FAIL;
  return pfi_cli_status(code);
}

static int open_ven(const struct opts *o, struct pfi_ven **v) {
  if (!o->id || !o->program)
    return usage("--vtn needs --client-id and --program%s", "");
  char secret[4097];
  int rc = read_secret(o->secret_file, secret, sizeof secret);
  if (rc)
    return rc;
  struct pfi_ven_config vc = {.vtn_url = o->vtn,
                              .client_id = o->id,
                              .client_secret = secret,
                              .program_name = o->program,
                              .ven_name = o->id};
  struct pfi_error err;
  pfi_error_clear(&err);
  rc = pfi_ven_open(&vc, v, &err);
  memset(secret, 0, sizeof secret);
  return rc < 0 ? fail(&err) : 0;
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
    return usage("timeline: give at least one source (--vtn, --events, "
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
    rc = pfi_oadr_decode_events(o->events[i], buf, len, &cfg, &all, NULL,
                                &err);
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
              "payload(s) of other types ignored\n",
              st.events, st.spans, st.expired, st.ignored_types);
  }
  if (rc >= 0)
    rc = pfi_timeline_resolve(&all, &res, &err);
  if (rc < 0)
    status = fail(&err);
  else
    status = print_timeline(&res, o->fmt, o->floor);
out:
  pfi_timeline_release(&all);
  pfi_timeline_release(&res);
  return status;
}

static int grid_report(const struct opts *o) {
  if (!o->vtn || !o->event || !(o->duration > 0) || o->start == 0)
    return usage("report: --vtn, --event, --start and --duration are "
                 "required%s",
                 "");
  struct pfi_ven_report_value v[4];
  size_t n = 0;
  if (o->usage > 0)
    v[n++] = (struct pfi_ven_report_value){"USAGE", o->usage, "WH",
                                           "DIRECT_READ"};
  if (o->demand > 0)
    v[n++] = (struct pfi_ven_report_value){"DEMAND", o->demand, "W", "MEAN"};
  if (o->basew > 0)
    v[n++] = (struct pfi_ven_report_value){"BASELINE", o->basew, "W",
                                           "BASELINE"};
  if (o->shed > 0)
    v[n++] = (struct pfi_ven_report_value){"LOAD_SHED_DELTA_AVAILABLE",
                                           o->shed, "W", "FORECAST"};
  if (n == 0)
    return usage("report: give at least one of --usage, --demand, "
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
    return fail(&err);
  printf("report for event %s sent (%zu value(s))\n", o->event, n);
  return 0;
}

static int grid_subscribe(const struct opts *o) {
  if (!o->vtn || !o->callback)
    return usage("subscribe: --vtn and --callback are required%s", "");
  if (strncmp(o->callback, "http://", 7) != 0 &&
      strncmp(o->callback, "https://", 8) != 0)
    return usage("--callback: '%s' is not an http(s) URL", o->callback);
  struct pfi_ven *ven = NULL;
  int status = open_ven(o, &ven);
  if (status)
    return status;
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc = pfi_ven_subscribe(ven, o->callback, NULL, &err);
  pfi_ven_close(ven);
  if (rc < 0)
    return fail(&err);
  printf("subscribed %s to the events of program %s\n", o->callback,
         o->program);
  return 0;
}

/* The jobs of a curves file with their tiers, points sorted by power. */
struct capjobs {
  struct pfi_curveset cs;
  struct pfi_tier *tiers;
  size_t ntiers, n;
  struct pfi_flex_job *jobs;
  double *buf;
  int has_sd;
};

static void capjobs_release(struct capjobs *c) {
  pfi_curveset_release(&c->cs);
  free(c->tiers);
  free(c->jobs);
  free(c->buf);
}

static int cmp_point_power(const void *a, const void *b) {
  const struct pfi_point *x = a, *y = b;
  return (x->power_w > y->power_w) - (x->power_w < y->power_w);
}

static int load_capjobs(const struct opts *o, struct capjobs *c,
                        struct pfi_error *err) {
  memset(c, 0, sizeof *c);
  pfi_curveset_init(&c->cs);
  int rc;
  struct pfi_table ct;
  memset(&ct, 0, sizeof ct);
  if ((rc = pfi_curveset_read(&c->cs, o->curves, o->map, err)) < 0 ||
      (rc = pfi_tiers_load(o->tiers, &c->tiers, &c->ntiers, err)) < 0)
    return rc;
  if (o->contract && (rc = pfi_table_load(&ct, o->contract, err)) < 0)
    return rc;
  int cj = o->contract ? pfi_table_find(&ct, "job") : -1,
      ctr = o->contract ? pfi_table_find(&ct, "tier") : -1;
  if (o->contract && (cj < 0 || ctr < 0)) {
    rc = pfi_error_setloc(err, PFI_EPARSE, o->contract, 1, 1,
                          "contract: the header must name job and tier");
    goto out;
  }
  size_t npts = 0;
  for (size_t i = 0; i < c->cs.n; i++)
    npts += c->cs.c[i].n;
  c->n = c->cs.n;
  c->jobs = calloc(c->n ? c->n : 1, sizeof *c->jobs);
  c->buf = malloc((4 * npts + 1) * sizeof *c->buf);
  if (!c->jobs || !c->buf) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  c->has_sd = 1;
  for (size_t i = 0; i < c->cs.n; i++)
    for (size_t k = 0; k < c->cs.c[i].n; k++)
      if (!(c->cs.c[i].pts[k].tokens_sd >= 0))
        c->has_sd = 0;
  double *b = c->buf;
  for (size_t i = 0; i < c->cs.n; i++) {
    struct pfi_curve *cv = &c->cs.c[i];
    struct pfi_flex_job *j = &c->jobs[i];
    const char *tn = o->tier;
    for (size_t r = 0; o->contract && r < ct.nrows; r++) {
      const char *jn = pfi_table_cell(&ct, r, (size_t)cj);
      if (jn && strcmp(jn, cv->job) == 0)
        tn = pfi_table_cell(&ct, r, (size_t)ctr);
    }
    if (!tn) {
      rc = pfi_error_set(err, PFI_EPARSE,
                         "job %s: no tier (not in %s; --tier sets one for "
                         "all jobs)",
                         cv->job, o->contract ? o->contract : "a contract");
      goto out;
    }
    for (size_t k = 0; k < c->ntiers; k++)
      if (strcmp(c->tiers[k].name, tn) == 0)
        j->tier = &c->tiers[k];
    if (!j->tier) {
      rc = pfi_error_set(err, PFI_EPARSE, "job %s: tier '%s' is not in %s",
                         cv->job, tn, o->tiers);
      goto out;
    }
    /* Sorted by realized power; equal powers keep the first. */
    struct pfi_point *pts = malloc(cv->n * sizeof *pts);
    if (!pts) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    memcpy(pts, cv->pts, cv->n * sizeof *pts);
    qsort(pts, cv->n, sizeof *pts, cmp_point_power);
    size_t m = 0;
    double *pw = b, *t = b + cv->n, *lo = b + 2 * cv->n, *hi = b + 3 * cv->n;
    for (size_t k = 0; k < cv->n; k++) {
      if (m > 0 && !(pts[k].power_w > pw[m - 1]))
        continue;
      pw[m] = pts[k].power_w;
      t[m] = pts[k].tokens_per_s;
      lo[m] = fmax(0, t[m] - 1.96 * pts[k].tokens_sd);
      hi[m] = t[m] + 1.96 * pts[k].tokens_sd;
      m++;
    }
    free(pts);
    j->job = cv->job;
    j->power_w = pw;
    j->tput = t;
    j->tput_lo = c->has_sd ? lo : NULL;
    j->tput_hi = c->has_sd ? hi : NULL;
    j->n = m;
    b += 4 * cv->n;
  }
  rc = 0;
out:
  pfi_table_release(&ct);
  return rc;
}

static int grid_capacity(const struct opts *o) {
  if (!o->curves || !o->tiers || (!o->contract && !o->tier))
    return usage("capacity: --curves, --tiers and --contract or --tier are "
                 "required%s",
                 "");
  static const double dflt[] = {900, 3600, 7200, 14400};
  const double *dur = o->ndur ? o->durations : dflt;
  size_t nd = o->ndur ? o->ndur : 4;
  struct capjobs cj;
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc = load_capjobs(o, &cj, &err), status = 0;
  json_t *arr = json_array();
  if (rc < 0) {
    status = fail(&err);
    goto out;
  }
  if (o->fmt == PFI_FMT_CSV)
    puts("duration_s,jobs_eligible,loss_pct,shed_w,shed_lo_w,shed_hi_w");
  else if (o->fmt == PFI_FMT_TABLE)
    printf("%-10s  %4s  %s\n", "event", "jobs",
           "shed W at <= 1 / 2 / 5 / 10 / 20 % throughput loss");
  for (size_t d = 0; d < nd; d++) {
    struct pfi_flexcap fc;
    if ((rc = pfi_flexcap_compute(cj.jobs, cj.n, dur[d], o->notice, 400, &fc,
                                  &err)) < 0) {
      status = fail(&err);
      goto out;
    }
    json_t *q = json_array();
    for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
      double pct = 100 * pfi_capacity_quotes[k];
      if (o->fmt == PFI_FMT_CSV)
        printf("%.0f,%zu,%g,%.3f,%.3f,%.3f\n", dur[d], fc.eligible, pct,
               fc.quote_w[k], fc.quote_lo_w[k], fc.quote_hi_w[k]);
      json_array_append_new(q, json_pack("{s:f,s:f,s:f,s:f}", "loss_pct", pct,
                                         "shed_w", fc.quote_w[k], "shed_lo_w",
                                         fc.quote_lo_w[k], "shed_hi_w",
                                         fc.quote_hi_w[k]));
    }
    if (o->fmt == PFI_FMT_TABLE) {
      printf("%-10.0f  %4zu ", dur[d], fc.eligible);
      for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
        if (fc.has_interval)
          printf(" %.0f [%.0f, %.0f]", fc.quote_w[k], fc.quote_lo_w[k],
                 fc.quote_hi_w[k]);
        else
          printf(" %10.1f", fc.quote_w[k]);
      putchar('\n');
    }
    json_array_append_new(
        arr, json_pack("{s:f,s:i,s:f,s:f,s:b,s:o}", "duration_s", dur[d],
                       "jobs_eligible", (int)fc.eligible, "uncapped_w",
                       fc.uncapped_w, "floor_w", fc.floor_w, "interval",
                       fc.has_interval, "quotes", q));
  }
  if (o->fmt == PFI_FMT_TABLE)
    printf("(event length in s; %zu job(s); %s)\n", cj.n,
           cj.has_sd ? "ranges over the curves' 95 % intervals"
                     : "no standard errors in the curves: no ranges");
  if (o->fmt == PFI_FMT_JSON) {
    status = pfi_cli_print_json(arr);
    arr = NULL;
  }
out:
  json_decref(arr);
  capjobs_release(&cj);
  return status;
}

/* "W,W,..." -> array (caller frees). */
static int numlist(const char *s, double **out, size_t *n) {
  struct pfi_error err;
  if (pfi_cli_parse_numlist(s, out, n, &err) < 0)
    return -1;
  for (size_t i = 0; i < *n; i++)
    if (!isfinite((*out)[i]) || (*out)[i] < 0 || (*out)[i] > 1e9) {
      free(*out);
      return -1;
    }
  return 0;
}

static int grid_meter(const struct opts *o) {
  struct pfi_meter_config cfg;
  struct pfi_error err;
  pfi_error_clear(&err);
  if (o->config) {
    if (pfi_meter_config_load(o->config, &cfg, &err) < 0)
      return fail(&err);
  } else
    pfi_meter_config_init(&cfg);
  struct pfi_rapl r;
  pfi_rapl_open(o->powercap, &r, &err);
  double rapl_w = NAN;
  if (r.n > 0) {
    double e0[PFI_RAPL_MAX], e1[PFI_RAPL_MAX];
    double dt = o->interval > 0 ? o->interval : 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (pfi_rapl_read(&r, e0, &err) == 0) {
      struct timespec ts = {(time_t)dt, (long)((dt - floor(dt)) * 1e9)};
      nanosleep(&ts, NULL);
      clock_gettime(CLOCK_MONOTONIC, &b);
      if (pfi_rapl_read(&r, e1, &err) == 0)
        rapl_w = pfi_rapl_power_w(&r, e0, e1,
                                  (double)(b.tv_sec - a.tv_sec) +
                                      (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    }
  }
  json_t *j = json_object();
  json_t *zones = json_array();
  for (size_t i = 0; i < r.n; i++)
    json_array_append_new(zones, json_pack("{s:s,s:s}", "name", r.zone[i].name,
                                           "counter", r.zone[i].path));
  json_object_set_new(j, "rapl_zones", zones);
  json_object_set_new(j, "rapl_package_dram_w",
                      isfinite(rapl_w) ? json_real(rapl_w) : json_null());
  int status = 0;
  double *g = NULL, *ot = NULL;
  size_t ng = 0, no = 0;
  if (o->gpuw) {
    if (numlist(o->gpuw, &g, &ng) < 0 ||
        (o->otherw && (numlist(o->otherw, &ot, &no) < 0 || no != ng))) {
      json_decref(j);
      free(g);
      return usage("--gpu-w / --other-w: expected one power >= 0 per node "
                   "(the same count in both), got '%s'",
                   o->gpuw);
    }
    double gt, nt, fac;
    if (pfi_meter_levels(&cfg, g, ot, ng, &gt, &nt, &fac, &err) < 0) {
      status = fail(&err);
      goto out;
    }
    json_object_set_new(j, "nodes", json_integer((json_int_t)ng));
    json_object_set_new(j, "gpu_w", json_real(gt));
    json_object_set_new(j, "node_w", json_real(nt));
    json_object_set_new(j, "meter_w", json_real(fac));
    if (o->limit > 0) {
      double gl;
      int rc = pfi_meter_gpu_limit(&cfg, g, ot, ng, o->level, o->limit, &gl,
                                   &err);
      if (rc < 0 && rc != PFI_EINFEASIBLE) {
        status = fail(&err);
        goto out;
      }
      json_object_set_new(j, "limit_w", json_real(o->limit));
      json_object_set_new(j, "limit_level",
                          json_string(level_name(o->level)));
      json_object_set_new(j, "gpu_limit_w", json_real(gl));
      json_object_set_new(j, "feasible", json_boolean(rc == 0));
      if (rc < 0)
        json_object_set_new(j, "why", json_string(err.msg));
    }
  }
  if (o->fmt == PFI_FMT_JSON) {
    status = pfi_cli_print_json(j);
    j = NULL;
  } else {
    if (r.n == 0)
      printf("RAPL: no readable powercap zone on this machine (%s); node "
             "power beyond the GPUs is the configured node_other_w = %.1f W\n",
             o->powercap ? o->powercap : "/sys/class/powercap",
             cfg.node_other_w);
    else
      printf("RAPL: %zu zone(s); package + DRAM power %.1f W\n", r.n, rapl_w);
    json_t *v;
    if ((v = json_object_get(j, "gpu_w")))
      printf("nodes %zu: GPU %.1f W, node %.1f W, meter %.1f W (PUE %.3g)\n",
             ng, json_real_value(v),
             json_real_value(json_object_get(j, "node_w")),
             json_real_value(json_object_get(j, "meter_w")), cfg.pue);
    if ((v = json_object_get(j, "gpu_limit_w")))
      printf("a %s limit of %.1f W leaves the GPUs %.1f W%s%s\n",
             level_name(o->level), o->limit, json_real_value(v),
             json_is_true(json_object_get(j, "feasible")) ? ""
                                                          : ": infeasible, ",
             json_is_true(json_object_get(j, "feasible"))
                 ? ""
                 : json_string_value(json_object_get(j, "why")));
  }
out:
  json_decref(j);
  free(g);
  free(ot);
  return status;
}

int cmd_grid(int argc, char **argv) {
  if (argc < 2 || pfi_cli_is_help(argv[1])) {
    fputs(usage_text, argc < 2 ? stderr : stdout);
    return argc < 2 ? PFI_EXIT_USAGE : 0;
  }
  const char *sub = argv[1];
  struct opts o;
  memset(&o, 0, sizeof o);
  o.now = (int64_t)time(NULL);
  o.seed = 1;
  o.level = PFI_LEVEL_METER;
  optind = 1;
  int rc = parse(argc - 1, argv + 1, &o);
  if (rc < 0)
    return 0; /* --help */
  if (rc)
    return rc;
  if (strcmp(sub, "timeline") == 0)
    return grid_timeline(&o);
  if (strcmp(sub, "report") == 0)
    return grid_report(&o);
  if (strcmp(sub, "meter") == 0)
    return grid_meter(&o);
  if (strcmp(sub, "subscribe") == 0)
    return grid_subscribe(&o);
  if (strcmp(sub, "capacity") == 0)
    return grid_capacity(&o);
  return usage("unknown subcommand '%s' (timeline, report, subscribe, "
               "capacity, meter)",
               sub);
}
