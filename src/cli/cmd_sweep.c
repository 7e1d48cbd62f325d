/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi sweep`: run a job once per power cap and record everything. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_device.h"
#include "opt.h"
#include "pfi/emu.h"
#include "pfi/meter.h"
#include "pfi/store.h"
#include "pfi/sweep.h"
#include "pfi/throughput.h"


/* The options, bound to these (src/base/opt.h); sw holds the defaults
 * before parsing. */
static struct pfi_sweep_opts sw;
static const char *db, *gpus_s, *caps_s;
static unsigned long seed;
static int smoke, quiet;

/* --cooldown D: 0 is none, which the library writes as < 0 (its 0 is
 * "default"). */
static int cooldown_cb(const struct pfi_opt *o, const char *v, char *why,
                       size_t n) {
  struct pfi_error err;
  double d;
  if (pfi_parse_duration(v, PFI_DUR_COOLDOWN, &d, &err) != 0) {
    snprintf(why, n, "%s", err.msg);
    return -1;
  }
  sw.cooldown_s = d > 0 ? d : -1;
  return 0;
}

#define DUR(l, v, kind, h)                                                     \
  PFI_OPT_DURATION(l, v, kind, 0, 0, "D", h)

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("backend", 0, &sw.backend, "B",
                   "emu or nvml (required with a COMMAND unless $PFI_BACKEND "
                   "is set; emu with --emulate)"),
    PFI_OPT_STRING("params", 0, &sw.backend_params, "P",
                   "backend parameters (docs/emulator.md, docs/nvml.md)"),
    PFI_OPT_STRING("gpus", 0, &gpus_s, "LIST",
                   "GPUs to cap and sample: all (default), 0,1 or 0-3"),
    PFI_OPT_STRING("caps", 0, &caps_s, "LIST",
                   "per-GPU caps in W: 200,500,700 or 200:700:100"),
    DUR("duration", &sw.duration_s, PFI_DUR_DURATION,
        "run length with its unit (default 30m; 30s, 1h, 250ms also work; a "
        "bare 30 is refused)"),
    DUR("interval", &sw.interval_s, PFI_DUR_INTERVAL,
        "telemetry interval (default 5s)"),
    PFI_OPT_CALLBACK("cooldown", NULL, cooldown_cb, "D",
                     "pause after each run, 0..1h (default 60s)"),
    DUR("grace", &sw.grace_s, PFI_DUR_GRACE,
        "SIGTERM-to-SIGKILL grace for the job (default 10s)"),
    {.lng = "db", .arg = PFI_ARG_REQ, .argname = "FILE",
     .help = "trace store, created when absent", .type = PFI_OT_STRING,
     .var = &db, .def = "sweep.db"},
    PFI_OPT_STRING("powercap", 0, &sw.powercap, "DIR",
                   "node power on measured GPUs from the RAPL zones under DIR "
                   "(default /sys/class/powercap; none: not read); emulated "
                   "GPUs get the emulator's node model"),
    PFI_OPT_STRING("bmc", 0, &sw.bmc, "TOOL",
                   "node power on measured GPUs from the BMC's DCMI reading: "
                   "ipmitool, ipmi-dcmi (freeipmi), TOOL:PROGRAM or none "
                   "(default); the whole node, so it replaces RAPL"),
    PFI_OPT_STRING("throughput", 0, &sw.throughput, "S",
                   "jsonl:PATH (the job appends JSON lines; see "
                   "docs/throughput-protocol.md) or regex:PATTERN on the "
                   "job's stdout (first capture group = tokens/s)"),
    PFI_OPT_STRING("telemetry", 0, &sw.telemetry, "S",
                   "device (default) or dcgm-exporter:URL (scraped every "
                   "interval)"),
    PFI_OPT_STRING("emulate", 0, &sw.emulate, "GROUP",
                   "run a job-library entry on the emulator (pfi emulate "
                   "list); with a COMMAND, the group is the GPUs' load and the "
                   "command is the job process"),
    PFI_OPT_STRING("job", 0, &sw.job, "NAME",
                   "job name in the store (default: the group, or the "
                   "script's base name and a hash of the command line, e.g. "
                   "train-1a2b3c4d)"),
    PFI_OPT_FLAG("real-time", 0, &sw.real_time,
                 "emulator at wall-clock pace (default: virtual time, a "
                 "30-minute run takes milliseconds)"),
    PFI_OPT_ULONG("seed", &seed, 0, 0, "N",
                  "seed of the emulator, recorded in the store (default 1)"),
    PFI_OPT_FLAG("quiet", 0, &quiet, "no progress on stderr"),
    PFI_OPT_FLAG("smoke", 0, &smoke,
                 "check the job's throughput reports end to end: one run at "
                 "the highest cap until 5s after the job's first report (at "
                 "most 120s, or --duration; sampled every 1s unless "
                 "--interval), into a store of its own that is removed (--db "
                 "is not written); prints what it read, exit 1 when no rate "
                 "was read"),
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {PFI_RULE_REQUIRED("caps"),
                                            PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "sweep",
    "usage: pfi sweep --backend emu|nvml --caps LIST|LO:HI:STEP [options]\n"
    "                 -- COMMAND [ARGS...]\n"
    "       pfi sweep [--backend emu] --emulate GROUP --caps LIST [options]\n",
    "Runs a training job once per per-GPU power cap and records telemetry,\n"
    "throughput and every cap change in a trace store (SQLite). For each cap:\n"
    "records the GPUs' current caps in the store, sets the cap on every\n"
    "listed GPU and checks the enforced limit, starts the job (fork/exec, no\n"
    "shell; PFI_CAP_W, PFI_RUN_ID, PFI_JOB, PFI_DURATION_S, PFI_GPUS,\n"
    "PFI_SEED and, but on emu, CUDA_VISIBLE_DEVICES = the swept GPUs and\n"
    "CUDA_DEVICE_ORDER=PCI_BUS_ID in its environment; an environment that\n"
    "sets other GPUs is refused), samples every interval, ends the job at\n"
    "the duration (SIGTERM, SIGKILL after the grace period), restores the\n"
    "recorded caps, then waits the cooldown and until GPU memory is freed.\n"
    "Caps already complete in the store are skipped (resume); a job name\n"
    "whose runs in the store had another command is refused. With\n"
    "--throughput regex: the job's stdout is passed on to pfi's stdout and\n"
    "kept in DB-logs/run-ID.stdout. Caps are restored on SIGINT/SIGTERM/\n"
    "SIGHUP and when the job fails; after a SIGKILL of pfi, by the next\n"
    "pfi that opens the store or pfi restore.\n",
    opts,
    "Data from the emu backend is labelled emulated in the store and in\n"
    "every summary. Exit status: 0 ok, 1 run-time failure (job failed, cap\n"
    "read-back mismatch, interrupted: caps restored), 2 bad usage or input.\n",
    PFI_OPT_IN_ORDER,
    NULL,
    rules,
    0,
    PFI_ARGS_ANY,
    NULL};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

struct prog {
  int quiet;
  const char *label; /* " on emulated GPUs" on the emu backend */
  struct timespec last;
  struct timespec start;
};

static double since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) + (b.tv_nsec - a->tv_nsec) * 1e-9;
}

static void fmt_mmss(double s, char *buf, size_t n) {
  if (!isfinite(s) || s < 0)
    s = 0;
  long t = (long)(s + 0.5);
  snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

/* Progress on stderr: every event but samples, and samples at most once a
 * second of wall time. */
static void on_progress(const struct pfi_sweep_progress *p, void *arg) {
  struct prog *pr = arg;
  if (pr->quiet)
    return;
  if (strcmp(p->event, "sample") == 0) {
    if (since(&pr->last) < 1.0)
      return;
  }
  clock_gettime(CLOCK_MONOTONIC, &pr->last);
  char el[32], du[32];
  fmt_mmss(p->elapsed_s, el, sizeof el);
  fmt_mmss(p->duration_s, du, sizeof du);
  fprintf(stderr, "pfi sweep: %s cap %zu of %zu (%g W): ", p->job,
          p->cap_index + 1, p->n_caps, p->cap_w);
  if (strcmp(p->event, "skip") == 0)
    fprintf(stderr, "already complete, skipped\n");
  else if (strcmp(p->event, "start") == 0)
    fprintf(stderr, "caps set, job started%s\n", pr->label);
  else if (strcmp(p->event, "restore") == 0)
    fprintf(stderr, "caps restored\n");
  else if (strcmp(p->event, "end") == 0)
    fprintf(stderr, "run ended at %s (wall clock %.1f s since start)\n", el,
            since(&pr->start));
  else {
    fprintf(stderr, "%s / %s", el, du);
    if (isfinite(p->power_w))
      fprintf(stderr, ", power %.0f W", p->power_w);
    if (isfinite(p->tokens_per_s))
      fprintf(stderr, ", %.0f tokens/s", p->tokens_per_s);
    fputc('\n', stderr);
  }
}

static void put_rate(const char *what, double v) {
  if (isfinite(v))
    printf("%s %.6g", what, v);
  else
    printf("%s -", what);
}

/* --smoke: one short run, then what the job's reports said, on stdout
 * (after the job's own output, when pfi passes that on). Exit 0 when a
 * rate was read, 1 when none was (or the run failed), 2 for bad usage. */
static int run_smoke(const struct pfi_sweep_opts *o, struct pfi_error *err) {
  struct pfi_sweep_smoke sm;
  int rc = pfi_sweep_smoke(o, &sm, err);
  fflush(stdout);
  if (rc < 0 && !sm.state[0]) {
    if (rc == PFI_EINVAL || rc == PFI_ENOTFOUND || rc == PFI_ERANGE)
      err->code = PFI_EINVAL;
    return pfi_cli_fail(err);
  }
  const char *job = o->job ? o->job : "";
  char name[128];
  if (!*job && o->emulate)
    job = o->emulate;
  if (!*job) {
    pfi_sweep_job_name(o->argv, name, sizeof name);
    job = name;
  }
  printf("pfi sweep --smoke: job %s, one run at %g W until %g s after the "
         "first report (at most %g s; %s): %s after %.1f s on the device "
         "clock\n",
         job, sm.cap_w, PFI_SMOKE_WINDOW_S, sm.duration_s, o->throughput,
         sm.state[0] ? sm.state : "not started",
         isfinite(sm.run_s) ? sm.run_s : 0.0);
  printf("reports: %ld read, %ld with a rate", sm.reports, sm.rates);
  if (sm.rates)
    printf(", the first %.1f s and the last %.1f s after the job started",
           sm.first_s, sm.last_s);
  printf("\ntokens/s:");
  put_rate(" min", sm.rate_min);
  put_rate(", median", sm.rate_median);
  put_rate(", max", sm.rate_max);
  putchar('\n');
  if (sm.res.tput_bad_lines) {
    char buf[PFI_ERROR_MSG_MAX + 300];
    printf("lost lines: %ld (malformed, over-long or not matched); the "
           "first: %s\n",
           sm.res.tput_bad_lines,
           pfi_error_format(&sm.res.tput_first_bad, buf, sizeof buf));
  }
  if (sm.res.tput_resets) {
    char buf[PFI_ERROR_MSG_MAX + 300];
    printf("counter resets: %ld; the first: %s\n", sm.res.tput_resets,
           pfi_error_format(&sm.res.tput_first_reset, buf, sizeof buf));
  }
  int ok = rc == 0 && sm.rates > 0 && sm.rate_median > 0;
  /* Reports stamped outside the run: a "t" that is not Unix time (a
   * monotonic clock, milliseconds), or elapsed_s from another origin. */
  double iv = o->interval_s > 0 ? o->interval_s : 1;
  if (sm.rates && (sm.first_s < -iv || sm.last_s > sm.run_s + 2 * iv)) {
    printf("timestamps: the reports fall outside the run (%.6g..%.6g s "
           "against 0..%.6g s): \"t\" must be Unix time in seconds "
           "(time.time()), \"elapsed_s\" seconds since the job started\n",
           sm.first_s, sm.last_s, sm.run_s);
    ok = 0;
  }
  if (rc < 0) {
    if (sm.kept)
      fprintf(stderr, "pfi sweep: the smoke run's store is kept: %s\n", sm.dir);
    return pfi_cli_fail(err);
  }
  if (ok) {
    printf("ok: pfi sweep reads this job's throughput\n");
    return 0;
  }
  if (!sm.rates)
    fprintf(stderr,
            "pfi sweep: --smoke: no throughput rate was read in %g s: %s\n",
            sm.duration_s,
            strncmp(o->throughput, "jsonl:", 6) == 0
                ? "the job must append JSON lines with \"t\" or \"elapsed_s\" "
                  "and \"tokens\" or \"tokens_per_s\" to the file that "
                  "PFI_THROUGHPUT_JSONL names (docs/throughput-protocol.md)"
                : "no line of the job's standard output matched the "
                  "expression with a number in its first group (lines on "
                  "stderr are not read)");
  return PFI_EXIT_FAIL;
}

int cmd_sweep(int argc, char **argv) {
  memset(&sw, 0, sizeof sw);
  sw.duration_s = 1800;
  sw.interval_s = 5;
  sw.cooldown_s = 60;
  sw.grace_s = 10;
  seed = PFI_EMU_DEFAULT_SEED;
  double *caps = NULL;
  size_t ncaps = 0;
  unsigned *gpus = NULL;
  size_t ngpus = 0;
  struct pfi_error err;
  pfi_error_clear(&err);
  int status = 0;
  /* PFI_OPT_IN_ORDER: options end at the first non-option, the COMMAND. */
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_sweep_opts o = sw;
  o.seed = seed;
  o.has_seed = pfi_opt_given(&op, "seed") > 0;
  struct prog pr = {0};
  pr.quiet = quiet;
  int dur_given = pfi_opt_given(&op, "duration") > 0,
      iv_given = pfi_opt_given(&op, "interval") > 0;
  if (optind < argc && strcmp(argv[optind], "--") == 0)
    optind++;
  if (optind < argc)
    o.argv = argv + optind;
  if (!o.argv && !o.emulate)
    return pfi_cli_usage("sweep", "give -- COMMAND [ARGS...] or --emulate "
                                  "GROUP");
  if (o.argv)
    o.backend = pfi__cli_backend(o.backend);
  if (o.argv && !o.backend)
    return pfi_cli_usage("sweep", "--backend emu|nvml (or PFI_BACKEND) is "
                                  "required with a command (it changes GPU "
                                  "power limits)");
  if (!o.backend)
    o.backend = "emu";
  if (smoke && (!o.argv || !o.throughput))
    return pfi_cli_usage("sweep", "--smoke checks a command's throughput "
                                  "reports: give --throughput SPEC and -- "
                                  "COMMAND");
  if (smoke && !dur_given)
    o.duration_s = PFI_SMOKE_DURATION_S;
  if (smoke && !iv_given)
    o.interval_s = o.duration_s < 1 ? o.duration_s : 1;
  if (o.interval_s > o.duration_s)
    return pfi_cli_usage("sweep", "--interval is longer than --duration");
  if (pfi_cli_parse_numlist(caps_s, &caps, &ncaps, &err) != 0)
    return pfi_cli_usage("sweep", "--caps: %s", err.msg);
  for (size_t i = 0; i < ncaps; i++)
    for (size_t j = 0; j < i; j++)
      if (caps[i] == caps[j]) {
        double dup = caps[i];
        free(caps);
        return pfi_cli_usage("sweep", "--caps: %g W appears twice", dup);
      }
  if (gpus_s && pfi_sweep_parse_gpus(gpus_s, &gpus, &ngpus, &err) != 0) {
    free(caps);
    return pfi_cli_usage("sweep", "%s", err.msg);
  }
  o.caps_w = caps;
  o.n_caps = ncaps;
  /* Requests that can be checked without a device are checked before the
   * store is created, so that a typo leaves no file behind. */
  if (o.telemetry && strcmp(o.telemetry, "device") != 0 &&
      (strncmp(o.telemetry, "dcgm-exporter:", 14) != 0 || !o.telemetry[14])) {
    status = pfi_cli_usage("sweep",
                           "--telemetry '%s': expected device or "
                           "dcgm-exporter:URL",
                           o.telemetry);
    goto out;
  }
  if (o.throughput) {
    struct pfi_tput *tp = NULL;
    if (!o.argv) {
      status = pfi_cli_usage("sweep", "--throughput needs a command to read "
                                      "it from");
      goto out;
    }
    if (pfi_tput_open(&tp, o.throughput, &err) < 0) {
      status = pfi_cli_usage("sweep", "%s", err.msg);
      goto out;
    }
    pfi_tput_close(tp);
  }
  if (o.bmc) {
    struct pfi_bmc b;
    if (pfi_bmc_open(o.bmc, &b, &err) < 0) {
      status = pfi_cli_usage("sweep", "--bmc: %s", err.msg);
      goto out;
    }
  }
  if (o.emulate && (status = pfi__cli_emulate_known("sweep", o.emulate)))
    goto out;
  if (pfi__cli_probe_device(o.backend, o.backend_params, &err) < 0) {
    status = pfi_cli_fail(&err);
    goto out;
  }
  o.gpus = gpus;
  o.n_gpus = ngpus;

  struct pfi__cli_kill_at k;
  pfi__cli_kill_at_init(&k, &o.stage_hook, &o.stage_arg);
  /* The job gets the signals' default actions back before exec. */
  pfi__cli_cap_signals(on_signal);
  pr.label = strcmp(o.backend, "emu") == 0 ? " on emulated GPUs" : "";
  o.stop = &stop_flag;
  o.progress = on_progress;
  o.progress_arg = &pr;
  clock_gettime(CLOCK_MONOTONIC, &pr.start);

  o.stdout_fd = STDOUT_FILENO; /* regex: the job's output passed on */
  if (smoke) {
    status = run_smoke(&o, &err);
    goto out;
  }
  struct pfi_store *st = NULL;
  if (pfi_store_open(&st, db, PFI_STORE_CREATE, &err) < 0) {
    if (err.code == PFI_EDB)
      err.code = PFI_EPARSE; /* a file that is not a store: bad input */
    status = pfi_cli_fail(&err);
    goto out;
  }
  struct pfi_sweep_result res;
  int rc = pfi_sweep_run(st, &o, &res, &err);
  pfi_store_close(st);
  if (res.tput_bad_lines) {
    char buf[PFI_ERROR_MSG_MAX + 300];
    fprintf(stderr,
            "pfi sweep: warning: %ld throughput line(s) lost (malformed, "
            "over-long or not matched) in %zu run(s), marked in the store; "
            "the first: %s\n",
            res.tput_bad_lines, res.runs_tput_lost,
            pfi_error_format(&res.tput_first_bad, buf, sizeof buf));
  }
  if (res.tput_resets) {
    char buf[PFI_ERROR_MSG_MAX + 300];
    fprintf(stderr,
            "pfi sweep: warning: %ld reset(s) of the cumulative token "
            "counter, not counted as throughput; the first: %s\n",
            res.tput_resets,
            pfi_error_format(&res.tput_first_reset, buf, sizeof buf));
  }
  if (res.telemetry_failures) {
    char buf[PFI_ERROR_MSG_MAX + 300];
    fprintf(stderr,
            "pfi sweep: warning: %ld telemetry scrape(s) failed; the first: "
            "%s\n",
            res.telemetry_failures,
            pfi_error_format(&res.telemetry_first, buf, sizeof buf));
  }
  if (res.bmc_failures) {
    char buf[PFI_ERROR_MSG_MAX + 300], gave[80] = "";
    if (res.bmc_gave_up)
      snprintf(gave, sizeof gave,
               ", the BMC not read again after %d failures in a row",
               PFI_SWEEP_BMC_GIVE_UP);
    fprintf(stderr,
            "pfi sweep: warning: %ld BMC reading(s) failed (no node power at "
            "those instants%s); the first: %s\n",
            res.bmc_failures, gave,
            pfi_error_format(&res.bmc_first, buf, sizeof buf));
  }
  if (o.throughput && strncmp(o.throughput, "regex:", 6) == 0 &&
      res.runs_done && !pr.quiet)
    fprintf(stderr,
            "pfi sweep: the job's standard output of each run is kept in "
            "%s-logs/run-ID.stdout\n",
            db);
  if (rc < 0) {
    /* Bad requests found by the library are usage errors. */
    if (rc == PFI_EINVAL || rc == PFI_ENOTFOUND || rc == PFI_ERANGE)
      err.code = PFI_EINVAL;
    status = pfi_cli_fail(&err);
    goto out;
  }
  if (!pr.quiet)
    fprintf(stderr,
            "pfi sweep: %zu run(s) done, %zu skipped (already "
            "complete); store %s%s\n",
            res.runs_done, res.runs_skipped, db,
            strcmp(o.backend, "emu") == 0 ? " (data labelled emulated)" : "");
  if (!pr.quiet && (res.runs_done || res.node_power[0])) {
    if (strcmp(res.node_power, PFI_NODE_SOURCE_EMULATED) == 0)
      fprintf(stderr, "pfi sweep: node power: emulated (the emulator's node "
                      "model beside the GPUs)\n");
    else if (strcmp(res.node_power, PFI_NODE_SOURCE_DCMI) == 0)
      fprintf(stderr,
              "pfi sweep: node power: measured, the whole node (the BMC's "
              "DCMI reading through %s)\n",
              o.bmc);
    else if (strcmp(res.node_power, PFI_NODE_SOURCE_RAPL) == 0)
      fprintf(stderr,
              "pfi sweep: node power: measured, GPUs + CPU packages and DRAM "
              "(%zu RAPL zone(s) under %s)\n",
              res.rapl_zones, o.powercap ? o.powercap : "/sys/class/powercap");
    else
      fprintf(stderr, "pfi sweep: node power: not recorded (%s under %s)\n",
              o.powercap && strcmp(o.powercap, "none") == 0
                  ? "not read: --powercap none"
              : res.rapl_zones ? "no RAPL package zone"
                               : "no readable RAPL zone",
              o.powercap ? o.powercap : "/sys/class/powercap");
  }
out:
  free(caps);
  free(gpus);
  return status;
}
