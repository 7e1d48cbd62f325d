/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid`: power targets from the grid (OpenADR 3 VTN, event files,
 * schedule files) merged into one timeline; reports back to the VTN; power
 * at the meter. Parses, calls libpfi, prints. Here: the dispatch to the
 * actions and the VTN's (timeline, report, subscribe); the options and
 * help pages are in cmd_grid_opts.c. */
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
#include "pfi/openadr.h"
#include "pfi/timeline.h"

/* Each action with its help page and the function that runs it. */
static int grid_timeline(const struct opts *o);
static int grid_report(const struct opts *o);
static int grid_subscribe(const struct opts *o);
static int grid_bridge(const struct opts *o);
static const struct grid_action {
  const struct pfi_cmd_help *help;
  int (*run)(const struct opts *o);
} grid_actions[] = {
    {&pfi__grid_timeline_help, grid_timeline},
    {&pfi__grid_report_help, grid_report},
    {&pfi__grid_subscribe_help, grid_subscribe},
    {&pfi__grid_capacity_help, pfi__grid_capacity},
    {&pfi__grid_bridge_help, grid_bridge},
    {&pfi__grid_event_report_help, pfi__grid_event_report},
    {&pfi__grid_curves_help, pfi__grid_curves},
    {&pfi__grid_meter_help, pfi__grid_meter}};
#define N_ACTIONS (sizeof grid_actions / sizeof grid_actions[0])

int pfi__grid_usage(const char *fmt, const char *arg) {
  return pfi_cli_usage("grid", fmt, arg);
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
  if ((st = pfi__grid_bind(h, argc, argv, o)) != 0)
    return st;
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
    pfi_opt_print_help(&pfi__grid_help, argc < 2 ? stderr : stdout);
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
      return pfi_opt_usage(&pfi__grid_help, "unknown action '%s'; did you mean '%s'?",
                           sub, near[0]);
    return pfi_opt_usage(&pfi__grid_help,
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
