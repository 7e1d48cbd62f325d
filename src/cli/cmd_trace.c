/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi trace`: summarize a trace store, export its samples, import saved
 * dcgm-exporter scrapes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "pfi/capset.h"
#include "pfi/csv.h"
#include "pfi/prom.h"
#include "pfi/store.h"
#include "pfi/sweep.h"
#include "pfi/trace.h"

#define SUMMARIZE_USAGE                                                        \
  "pfi trace summarize DB --out DIR [--warmup-fb-gib G]\n"                     \
  "                 [--train-util PCT] [--top-fraction F]\n"
#define EXPORT_USAGE "pfi trace export DB [--out FILE]\n"
#define RUNS_USAGE "pfi trace runs DB [--format table|csv|json]\n"
#define IMPORT_USAGE                                                           \
  "pfi trace import-prom FILE... --db DB [--job NAME] [--cap W]\n"             \
  "                 [--interval 5s] [--strict]\n"
#define TRACE_FOOTER                                                           \
  "Reading a store never changes a device: caps that a killed sweep left\n"    \
  "recorded are reported on stderr (pfi restore puts them back). Exit\n"       \
  "status: 0 ok, 1 run-time failure, 2 bad usage or input.\n"

static const char summarize_about[] =
    "Segments every complete run of the store into the paper's phases "
    "(warmup: frame buffer under G GiB, default 10; training: GPU "
    "utilization >= PCT %, default 50) and writes DIR/curves.csv (job, "
    "cap_w, power_w, tokens_per_s, gpus, power_sd_w, tokens_sd, runs, "
    "source; readable by pfi index), DIR/features.csv (one row per job from "
    "its uncapped run; columns in docs/sweep.md) and DIR/mechanism.csv (job, "
    "cap_w, sm_clock_mhz, mem_clock_mhz, power_w, source: the steady clocks "
    "of each run's first GPU); with node power in the store also "
    "DIR/node_curves.csv (the curves.csv columns, then node_power_w, "
    "node_power_sd_w, node_source; pfi index --power node). Aggregates are the "
    "mean of the top F (default "
    "0.10) of the training-phase samples.";
static const char export_about[] =
    "Writes every telemetry sample as CSV (run_id, job, cap_w, source, gpu, "
    "t_s, then one column per field; empty when a field is not valid) to "
    "FILE or standard output.";
static const char runs_about[] =
    "Lists the runs of the store: id, job, cap_w, gpus, state (running, "
    "complete, failed, interrupted), source (emulated or measured), "
    "exit_status, samples, steps, t_start_s, t_end_s (device clock); JSON "
    "keys are these names.";
static const char import_about[] =
    "Reads saved Prometheus scrapes of dcgm-exporter (FILEs in time order; a "
    "file may hold several scrapes appended, each starting with the file's "
    "first comment line; scrapes are --interval apart, 0.1s..10m, unless the "
    "lines carry timestamps) into DB as one complete run of job NAME "
    "(default: the first file's base name) at cap W (default 0: unknown). "
    "Unknown metrics are skipped; malformed lines are reported with their "
    "line numbers and skipped, or with --strict make the import fail (exit "
    "2) and store nothing. GPUs of several hosts are stored as 256*host+gpu, "
    "hosts numbered in order of appearance.";

static const struct pfi_action actions[] = {{"summarize", summarize_about},
                                            {"export", export_about},
                                            {"runs", runs_about},
                                            {"import-prom", import_about},
                                            {NULL, NULL}};

static const struct pfi_cmd_help help = {
    "trace",
    "usage: " SUMMARIZE_USAGE "       " EXPORT_USAGE "       " RUNS_USAGE
    "       " IMPORT_USAGE,
    NULL,
    NULL,
    "'pfi trace ACTION --help' lists the options of an "
    "action.\n\n" TRACE_FOOTER,
    0,
    actions};

/* The actions' options, bound to these (src/base/opt.h). */
static struct pfi_summary_opts sso; /* the library's defaults first */
static const char *out, *db, *job;
static double cap, interval;
static int strict, fmt;

static const struct pfi_opt summarize_opts[] = {
    PFI_OPT_STRING("out", 'o', &out, "DIR",
                   "where curves.csv, features.csv and mechanism.csv go "
                   "(required)"),
    PFI_OPT_NUMBER("warmup-fb-gib", &sso.warmup_fb_gib, 0, 0, PFI_RANGE_NO_HI,
                   "G", "warmup: frame buffer under G GiB (default 10)"),
    PFI_OPT_NUMBER("train-util", &sso.train_util_pct, 0, 100, 0, "PCT",
                   "training: GPU utilization >= PCT % (default 50)"),
    PFI_OPT_NUMBER("top-fraction", &sso.top_fraction, 0, 1, PFI_RANGE_LO_OPEN,
                   "F",
                   "aggregate the top F of the training-phase samples "
                   "(default 0.10)"),
    PFI_OPT_HELP,
    PFI_OPT_END};
static const struct pfi_cmd_help summarize_help = {
    .cmd = "trace summarize",
    .usage = "usage: " SUMMARIZE_USAGE,
    .about = summarize_about,
    .opts = summarize_opts,
    .footer = TRACE_FOOTER,
    .flags = PFI_OPT_WRAP_ABOUT,
    .args_min = 1,
    .args_max = 1,
    .args = "DB"};

static const struct pfi_opt export_opts[] = {
    PFI_OPT_STRING("out", 'o', &out, "FILE",
                   "the CSV file (default: standard output)"),
    PFI_OPT_HELP,
    PFI_OPT_END};
static const struct pfi_cmd_help export_help = {
    .cmd = "trace export",
    .usage = "usage: " EXPORT_USAGE,
    .about = export_about,
    .opts = export_opts,
    .footer = TRACE_FOOTER,
    .flags = PFI_OPT_WRAP_ABOUT,
    .args_min = 1,
    .args_max = 1,
    .args = "DB"};

static const struct pfi_opt runs_opts[] = {
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};
static const struct pfi_cmd_help runs_help = {
    .cmd = "trace runs",
    .usage = "usage: " RUNS_USAGE,
    .about = runs_about,
    .opts = runs_opts,
    .footer = TRACE_FOOTER,
    .flags = PFI_OPT_WRAP_ABOUT,
    .args_min = 1,
    .args_max = 1,
    .args = "DB"};

static const struct pfi_opt import_opts[] = {
    PFI_OPT_STRING("db", 0, &db, "DB", "the trace store to write (required)"),
    PFI_OPT_STRING("job", 0, &job, "NAME",
                   "job name of the run (default: the first file's base "
                   "name)"),
    PFI_OPT_NUMBER("cap", &cap, 0, 0, PFI_RANGE_NO_HI, "W",
                   "cap of the run in W (default 0: unknown)"),
    {.lng = "interval", .arg = PFI_ARG_REQ, .argname = "D",
     .help = "time between scrapes without timestamps",
     .type = PFI_OT_DURATION, .var = &interval, .ival = PFI_DUR_INTERVAL,
     .def = "5s"},
    PFI_OPT_FLAG("strict", 0, &strict,
                 "a malformed line fails the import (exit 2); nothing is "
                 "stored"),
    PFI_OPT_HELP,
    PFI_OPT_END};
static const struct pfi_opt_rule import_rules[] = {PFI_RULE_REQUIRED("db"),
                                                   PFI_RULE_END};
static const struct pfi_cmd_help import_help = {
    .cmd = "trace import-prom",
    .usage = "usage: " IMPORT_USAGE,
    .about = import_about,
    .opts = import_opts,
    .footer = TRACE_FOOTER,
    .flags = PFI_OPT_WRAP_ABOUT,
    .rules = import_rules,
    .args_min = 1,
    .args_max = PFI_ARGS_ANY,
    .args = "FILE"};

/* Reading a store never changes a device: a ledger that a killed sweep
 * left is only reported (pfi restore, or a sweep or pfi cap that needs
 * those GPUs, puts them back). */
static void warn_pending(const char *cmd, struct pfi_store *st) {
  struct pfi_error e;
  struct pfi_saved_cap *caps = NULL;
  size_t n = 0;
  /* A live sweep's ledger is its own business. */
  if (pfi_ledger_owned(st))
    return;
  if (pfi_store_caps_pending(st, &caps, &n, &e) == 0 && n > 0)
    fprintf(stderr,
            "pfi %s: warning: %s holds the caps of %zu GPU(s) to put back "
            "(a sweep that did not finish, or pfi cap --db); pfi restore "
            "--db %s puts them back\n",
            cmd, pfi_store_path(st), n, pfi_store_path(st));
  free(caps);
}

static int open_store(const char *cmd, const char *path, unsigned flags,
                      struct pfi_store **st) {
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc = pfi_store_open(st, path, flags, &err);
  if (rc < 0 && !(flags & PFI_STORE_CREATE)) {
    /* A store on read-only storage (an archived campaign, another user's
     * files) is still readable: read it without writing. */
    struct pfi_error e2;
    pfi_error_clear(&e2);
    if (pfi_store_open(st, path, PFI_STORE_READONLY, &e2) == 0)
      return 0;
  }
  if (rc < 0) {
    /* A missing or foreign file is bad input. */
    if (rc == PFI_EIO || rc == PFI_EDB)
      err.code = PFI_EPARSE;
    return pfi_cli_fail(&err);
  }
  warn_pending(cmd, *st);
  return 0;
}

static int summarize(int argc, char **argv) {
  pfi_summary_opts_init(&sso);
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &summarize_help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_summary_opts so = sso;
  long skipped = 0, nocurve = 0;
  long lost = 0;
  long long first_lost = -1;
  so.runs_tput_lost = &lost;
  so.first_tput_lost = &first_lost;
  so.runs_skipped = &skipped;
  so.jobs_without_curve = &nocurve;
  int curves_written = 1;
  so.curves_written = &curves_written;
  /* The input first: a missing store is the first thing to fix. */
  struct pfi_store *st = NULL;
  int rc = open_store("trace summarize", argv[optind],
                      PFI_STORE_READONLY, &st);
  if (rc)
    return rc;
  if (!out) {
    pfi_store_close(st);
    return pfi_cli_usage("trace summarize", "summarize needs --out DIR");
  }
  struct pfi_error err;
  pfi_error_clear(&err);
  int n = pfi_trace_summarize(st, out, &so, &err);
  pfi_store_close(st);
  if (n < 0 && lost)
    fprintf(stderr,
            "pfi trace: %ld run(s) lost throughput reports (the first: run "
            "%lld, meta key run.%lld.tput_lost)\n",
            lost, first_lost, first_lost);
  if (n < 0) {
    if (n == PFI_ENOTFOUND)
      err.code = PFI_EPARSE; /* nothing usable in the input: bad input */
    return pfi_cli_fail(&err);
  }
  if (curves_written)
    fprintf(stderr,
            "pfi trace: %d job(s) -> %s/curves.csv, %s/features.csv, "
            "%s/mechanism.csv",
            n, out, out, out);
  else
    fprintf(stderr,
            "pfi trace: %d job(s) -> %s/features.csv, %s/mechanism.csv (no "
            "job has two runs with throughput at training-phase instants: "
            "no curves.csv)",
            n, out, out);
  {
    char np[4096];
    snprintf(np, sizeof np, "%s/node_curves.csv", out);
    if (access(np, F_OK) == 0)
      fprintf(stderr, ", %s (node power)", np);
  }
  if (skipped)
    fprintf(stderr,
            "; %ld run(s) without training-phase data or "
            "throughput left out",
            skipped);
  if (nocurve)
    fprintf(stderr,
            "; %ld job(s) with fewer than 2 usable runs have no "
            "curve",
            nocurve);
  if (lost)
    fprintf(stderr,
            "; %ld run(s) lost throughput reports (the first: run %lld, "
            "meta key run.%lld.tput_lost)",
            lost, first_lost, first_lost);
  fputc('\n', stderr);
  return 0;
}

static int export_cmd(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &export_help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_store *st = NULL;
  int rc = open_store("trace export", argv[optind],
                      PFI_STORE_READONLY, &st);
  if (rc)
    return rc;
  FILE *fp = stdout;
  if (out && strcmp(out, "-") != 0) {
    fp = fopen(out, "w");
    if (!fp) {
      pfi_store_close(st);
      perror(out);
      return PFI_EXIT_FAIL;
    }
  }
  struct pfi_error err;
  pfi_error_clear(&err);
  long n = pfi_trace_export(st, fp, &err);
  pfi_store_close(st);
  if (fp != stdout && fclose(fp) != 0 && n >= 0)
    n = pfi_error_set(&err, PFI_EIO, "%s: write failed", out);
  if (n < 0)
    return pfi_cli_fail(&err);
  fprintf(stderr, "pfi trace: %ld sample row(s)\n", n);
  return 0;
}

/* One scrape's GPUs. */
struct scrape {
  struct pfi_prom_gpu *g;
  int n;
  const char *path; /* file, and the line the scrape starts at (1-based) */
  long line;
};

/* Store GPU number of (host, gpu) is 256 * host + gpu, hosts numbered in
 * order of appearance; the number must fit the store's 32-bit column. */
#define HOSTS_MAX (1 << 23)

static uint64_t fnv(const void *p, size_t n, uint64_t x) {
  for (size_t i = 0; i < n; i++)
    x = (x ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return x;
}
#define FNV0 1469598103934665603ull

/* Host names -> rank, an open-addressing hash (slot: rank + 1, 0 empty). */
struct hosts {
  char (*name)[128];
  size_t n, cap;
  size_t *h, hcap; /* hcap a power of two, at least 2 n */
};

static int hosts_grow(struct hosts *hs) {
  size_t ncap = hs->hcap ? 2 * hs->hcap : 64;
  size_t *nh = calloc(ncap, sizeof *nh);
  if (!nh)
    return -1;
  for (size_t i = 0; i < hs->n; i++) {
    size_t k = fnv(hs->name[i], strlen(hs->name[i]), FNV0) & (ncap - 1);
    while (nh[k])
      k = (k + 1) & (ncap - 1);
    nh[k] = i + 1;
  }
  free(hs->h);
  hs->h = nh;
  hs->hcap = ncap;
  return 0;
}

/* The rank of `name`, a new one when first seen; -1 when out of memory. */
static long host_rank(struct hosts *hs, const char *name) {
  if (2 * (hs->n + 1) > hs->hcap && hosts_grow(hs) < 0)
    return -1;
  size_t k = fnv(name, strlen(name), FNV0) & (hs->hcap - 1);
  for (; hs->h[k]; k = (k + 1) & (hs->hcap - 1))
    if (strcmp(hs->name[hs->h[k] - 1], name) == 0)
      return (long)hs->h[k] - 1;
  if (hs->n == hs->cap) {
    size_t nc = hs->cap ? 2 * hs->cap : 16;
    char(*nv)[128] = realloc(hs->name, nc * sizeof *nv);
    if (!nv)
      return -1;
    hs->name = nv;
    hs->cap = nc;
  }
  snprintf(hs->name[hs->n], sizeof hs->name[hs->n], "%s", name);
  hs->h[k] = hs->n + 1;
  return (long)hs->n++;
}

/* (store GPU, t_s) pairs already stored: two scrapes with one timestamp
 * would otherwise overwrite each other's row (the store keys samples by
 * run, time and GPU) while both were counted. */
struct seen {
  struct seen_key {
    double t;
    unsigned gpu;
    int used;
  } * k;
  size_t n, cap; /* cap a power of two, at least 2 n */
};

/* 1 when (gpu, t) was seen before, 0 when new (now recorded), -1 ENOMEM. */
static int seen_add(struct seen *s, unsigned gpu, double t) {
  if (2 * (s->n + 1) > s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 1024;
    struct seen_key *nk = calloc(nc, sizeof *nk);
    if (!nk)
      return -1;
    for (size_t i = 0; i < s->cap; i++)
      if (s->k[i].used) {
        size_t j = fnv(&s->k[i].t, sizeof s->k[i].t,
                       fnv(&s->k[i].gpu, sizeof s->k[i].gpu, FNV0)) &
                   (nc - 1);
        while (nk[j].used)
          j = (j + 1) & (nc - 1);
        nk[j] = s->k[i];
      }
    free(s->k);
    s->k = nk;
    s->cap = nc;
  }
  if (t == 0)
    t = 0; /* -0.0 and 0.0 are one time */
  size_t j = fnv(&t, sizeof t, fnv(&gpu, sizeof gpu, FNV0)) & (s->cap - 1);
  for (; s->k[j].used; j = (j + 1) & (s->cap - 1))
    if (s->k[j].gpu == gpu && s->k[j].t == t)
      return 1;
  s->k[j] = (struct seen_key){t, gpu, 1};
  s->n++;
  return 0;
}

static int cmp_order(const void *a, const void *b) {
  const struct pfi_prom_gpu *x = *(const struct pfi_prom_gpu *const *)a;
  const struct pfi_prom_gpu *y = *(const struct pfi_prom_gpu *const *)b;
  return (x->order > y->order) - (x->order < y->order);
}

/* Every scrape of the files given, parsed, with the count of malformed
 * lines; and the state of storing them. */
struct import {
  char **texts; /* per file */
  size_t *lens;
  struct scrape *sc;
  size_t nsc, csc;
  long malformed;
  struct hosts hosts;
  struct seen seen;
  long duplicates, skipped, samples;
  double t_end;
};

/* One scrape of `path`, text [start, end) from line line0 + 1: parsed
 * into the next slot of im->sc, its bad lines reported. 0 or an exit
 * status, the message printed. */
static int parse_scrape(struct import *im, const char *path,
                        const char *start, const char *end, long line0) {
  struct pfi_error err;
  struct pfi_prom_stats ps;
  if (im->nsc == im->csc) {
    size_t nc = im->csc ? 2 * im->csc : 8;
    struct scrape *nv = realloc(im->sc, nc * sizeof *nv);
    if (!nv) {
      pfi_error_set(&err, PFI_ENOMEM, "out of memory");
      return pfi_cli_fail(&err);
    }
    im->sc = nv;
    im->csc = nc;
  }
  struct scrape *cur = &im->sc[im->nsc];
  cur->g = NULL;
  cur->path = path;
  cur->line = line0 + 1;
  int n = pfi_prom_parse(path, start, (size_t)(end - start), &cur->g, &ps, &err);
  if (n < 0) {
    err.line += line0;
    return pfi_cli_fail(&err);
  }
  cur->n = n;
  im->nsc++;
  im->malformed += ps.malformed;
  for (int k = 0; k < ps.nbad; k++) {
    struct pfi_error be;
    char buf[PFI_ERROR_MSG_MAX + 300];
    pfi_error_setloc(&be, PFI_EPARSE, path, ps.bad[k].line + line0,
                     ps.bad[k].column, "%s", ps.bad[k].msg);
    pfi_cli_err("%s%s", pfi_error_format(&be, buf, sizeof buf),
                strict ? "" : " (line skipped)");
  }
  if (ps.malformed > ps.nbad)
    pfi_cli_err("%s: %ld more malformed line(s)", path,
                ps.malformed - ps.nbad);
  if (n == 0)
    fprintf(stderr,
            "pfi trace: warning: %s: a scrape with no DCGM field with a "
            "gpu label (%ld sample line(s), %ld unknown metric(s))\n",
            path, ps.samples, ps.unknown);
  return 0;
}

/* A file may hold several scrapes appended one after the other: a new one
 * starts where the file's first comment line comes again. Each is parsed
 * (parse_scrape()). 0 or an exit status, the message printed. */
static int parse_file(struct import *im, const char *path, const char *t,
                      size_t len) {
  const char *end = t + len;
  const char *first = NULL;
  size_t first_len = 0;
  for (const char *q = t; q < end;) {
    const char *nl = memchr(q, '\n', (size_t)(end - q));
    size_t l = (size_t)((nl ? nl : end) - q);
    if (l > 1 && q[0] == '#') {
      first = q;
      first_len = l;
      break;
    }
    q = nl ? nl + 1 : end;
  }
  const char *start = t;
  long line0 = 0, line = 0;
  for (const char *q = t;;) {
    const char *nl = q < end ? memchr(q, '\n', (size_t)(end - q)) : NULL;
    size_t l = (size_t)((nl ? nl : end) - q);
    int split =
        q > first && first && l == first_len && memcmp(q, first, l) == 0;
    if (split || q >= end) {
      int status = parse_scrape(im, path, start, q, line0);
      if (status)
        return status;
      start = q;
      line0 = line;
      if (q >= end)
        break;
    }
    line++;
    q = nl ? nl + 1 : end;
  }
  return 0;
}

/* The run the import stores: its job (--job, else the first file's name
 * without its extension), cap and GPU count (the most of any scrape). */
static void import_run_info(struct pfi_run_info *ri, const char *first_path,
                            const struct import *im) {
  memset(ri, 0, sizeof *ri);
  if (job) {
    snprintf(ri->job, sizeof ri->job, "%s", job);
  } else {
    const char *b = strrchr(first_path, '/');
    snprintf(ri->job, sizeof ri->job, "%s", b ? b + 1 : first_path);
    char *dot = strrchr(ri->job, '.');
    if (dot && dot != ri->job)
      *dot = 0;
  }
  ri->cap_w = cap;
  snprintf(ri->source, sizeof ri->source, "%s", PFI_SOURCE_MEASURED);
  snprintf(ri->command, sizeof ri->command, "import-prom");
  ri->exit_status = -1;
  int maxg = 0;
  for (size_t i = 0; i < im->nsc; i++)
    if (im->sc[i].n > maxg)
      maxg = im->sc[i].n;
  ri->gpus = (unsigned)maxg;
}

/* Scrape i's samples into run `run` of the store, its GPUs in order of
 * appearance (so that hosts are numbered as they come); a (GPU, time)
 * stored before is left out and said. 0 or -1 with err set. */
static int store_scrape(struct import *im, size_t i, struct pfi_store *st,
                        int64_t run, struct pfi_error *err) {
  const struct scrape *sc = &im->sc[i];
  struct pfi_prom_gpu **byorder =
      malloc((sc->n ? (size_t)sc->n : 1) * sizeof *byorder);
  if (!byorder)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (int k = 0; k < sc->n; k++)
    byorder[k] = &sc->g[k];
  qsort(byorder, (size_t)sc->n, sizeof *byorder, cmp_order);
  long dups = 0;
  double dup_t = 0;
  int rc = 0;
  for (int k = 0; k < sc->n && rc == 0; k++) {
    struct pfi_prom_gpu *g = byorder[k];
    long h = host_rank(&im->hosts, g->host);
    if (h < 0) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      break;
    }
    if (g->gpu > 255 || h >= HOSTS_MAX) {
      fprintf(stderr,
              "pfi trace: GPU %d of host '%s' skipped (more than "
              "256 GPUs per host or %d hosts)\n",
              g->gpu, g->host, HOSTS_MAX);
      im->skipped++;
      continue;
    }
    unsigned gid = (unsigned)(256 * h + g->gpu);
    struct pfi_sample s = g->s;
    if (!(s.t_s > 0))
      s.t_s = (double)i * interval;
    int r = seen_add(&im->seen, gid, s.t_s);
    if (r < 0) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      break;
    }
    if (r > 0) {
      if (dups++ == 0)
        dup_t = s.t_s;
      continue;
    }
    if (s.t_s > im->t_end)
      im->t_end = s.t_s;
    rc = pfi_store_add_sample(st, run, gid, &s, err);
    if (rc == 0)
      im->samples++;
  }
  free(byorder);
  if (rc == 0 && dups) {
    fprintf(stderr,
            "pfi trace: warning: %s:%ld: the scrape starting here repeats "
            "the time %.3f s of an earlier one for %ld GPU sample(s); the "
            "earlier kept\n",
            sc->path, sc->line, dup_t, dups);
    im->duplicates += dups;
  }
  return rc < 0 ? -1 : 0;
}

/* Every scrape as one run, in one transaction. An exit status. */
static int store_import(struct import *im, const char *first_path) {
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_store *st = NULL;
  int status = open_store("trace import-prom", db, PFI_STORE_CREATE, &st);
  if (status != 0) {
    pfi_store_close(st);
    return status;
  }
  struct pfi_run_info ri;
  import_run_info(&ri, first_path, im);
  int in_batch = 0;
  if (pfi_store_begin(st, &err) < 0)
    goto fail;
  in_batch = 1;
  if (pfi_store_run_begin(st, &ri, &err) < 0)
    goto fail;
  for (size_t i = 0; i < im->nsc; i++)
    if (store_scrape(im, i, st, ri.id, &err) < 0)
      goto fail;
  if (pfi_store_run_end(st, ri.id, PFI_RUN_COMPLETE, im->t_end, -1, &err) <
          0 ||
      pfi_store_commit(st, &err) < 0)
    goto fail;
  pfi_store_close(st);
  char extra[128] = "";
  if (im->duplicates || im->skipped)
    snprintf(extra, sizeof extra, " (%ld repeated, %ld out of range skipped)",
             im->duplicates, im->skipped);
  fprintf(stderr,
          "pfi trace: imported %zu scrape(s), %ld GPU sample(s) as run %lld "
          "of job %s%s%s\n",
          im->nsc, im->samples, (long long)ri.id, ri.job, extra,
          im->malformed ? " (malformed lines skipped)" : "");
  return 0;
fail:
  status = pfi_cli_fail(&err);
  if (in_batch)
    pfi_store_rollback(st);
  pfi_store_close(st);
  return status;
}

static int import_prom(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &import_help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  int nfiles = argc - optind;
  struct import im;
  memset(&im, 0, sizeof im);
  im.texts = calloc((size_t)nfiles, sizeof *im.texts);
  im.lens = calloc((size_t)nfiles, sizeof *im.lens);
  struct pfi_error err;
  pfi_error_clear(&err);
  int status = 0;
  if (!im.texts || !im.lens) {
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    status = pfi_cli_fail(&err);
  }
  /* Parse everything first: with --strict nothing is stored on a bad
   * line, and a missing file stores nothing either. */
  for (int i = 0; i < nfiles && !status; i++) {
    const char *path = argv[optind + i];
    if (pfi_read_file(path, &im.texts[i], &im.lens[i], &err) < 0) {
      err.code = PFI_EPARSE;
      status = pfi_cli_fail(&err);
    } else {
      status = parse_file(&im, path, im.texts[i], im.lens[i]);
    }
  }
  if (!status && strict && im.malformed) {
    fprintf(stderr,
            "pfi trace: %ld malformed line(s); nothing imported "
            "(--strict)\n",
            im.malformed);
    status = PFI_EXIT_USAGE;
  }
  if (!status)
    status = store_import(&im, argv[optind]);
  for (int i = 0; im.texts && i < nfiles; i++)
    free(im.texts[i]);
  for (size_t i = 0; i < im.nsc; i++)
    free(im.sc[i].g);
  free(im.sc);
  free(im.texts);
  free(im.lens);
  free(im.hosts.name);
  free(im.hosts.h);
  free(im.seen.k);
  return status;
}

/* `pfi trace runs`: one row per run, with its sample and step counts. */
static int runs_cmd(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &runs_help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_store *st = NULL;
  int rc = open_store("trace runs", argv[optind],
                      PFI_STORE_READONLY, &st);
  if (rc)
    return rc;
  struct pfi_store_iter *q = NULL;
  int status = 0;
  struct pfi_error err;
  if (pfi_store_runs_open(st, PFI_RUNS_ALL | PFI_RUNS_COUNTS, &q, &err) < 0) {
    pfi_store_close(st);
    return pfi_cli_fail(&err);
  }
  /* The table's widths are fixed (a long job name overflows its row
   * only); CSV leaves what is unknown empty. */
  static const struct pfi_restab_col cols[] = {
      {.name = "id", .kind = PFI_RESTAB_INT, .width = 4, .fixed = 1},
      {.name = "job", .kind = PFI_RESTAB_TEXT, .width = 36, .fixed = 1},
      {.name = "cap_w", .kind = PFI_RESTAB_NUM, .width = 7, .fixed = 1,
       .sep = 1},
      {.name = "gpus", .kind = PFI_RESTAB_INT, .width = 4, .fixed = 1,
       .sep = 1},
      {.name = "state", .kind = PFI_RESTAB_TEXT, .width = 11, .fixed = 1},
      {.name = "source", .kind = PFI_RESTAB_TEXT, .width = 8, .fixed = 1,
       .sep = 1},
      {.name = "exit_status", .label = "exit", .kind = PFI_RESTAB_INT,
       .width = 4, .fixed = 1, .sep = 1},
      {.name = "samples", .kind = PFI_RESTAB_INT, .width = 8, .fixed = 1,
       .sep = 1},
      {.name = "steps", .kind = PFI_RESTAB_INT, .width = 7, .fixed = 1,
       .sep = 1},
      {.name = "t_start_s", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
       .csv_style = 'f', .csv_prec = 6, .width = 10, .fixed = 1, .sep = 1},
      {.name = "t_end_s", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
       .csv_style = 'f', .csv_prec = 6, .width = 10, .fixed = 1, .sep = 1},
  };
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, sizeof cols / sizeof cols[0]);
  tab.csv_null = "";
  int r;
  struct pfi_store_run run;
  while ((r = pfi_store_runs_next(q, &run, &err)) == 1) {
    if (pfi_restab_row(&tab) < 0)
      break;
    pfi_restab_int(&tab, 0, run.id);
    pfi_restab_text(&tab, 1, run.job);
    pfi_restab_num(&tab, 2, run.cap_w);
    pfi_restab_int(&tab, 3, run.gpus);
    pfi_restab_text(&tab, 4, run.state);
    pfi_restab_text(&tab, 5, run.source);
    if (run.has_exit)
      pfi_restab_int(&tab, 6, run.exit_status);
    pfi_restab_int(&tab, 7, run.samples);
    pfi_restab_int(&tab, 8, run.steps);
    if (run.has_t_start)
      pfi_restab_num(&tab, 9, run.t_start_s);
    if (run.has_t_end)
      pfi_restab_num(&tab, 10, run.t_end_s);
  }
  if (r < 0)
    status = pfi_cli_fail(&err);
  else if (pfi_cli_print_table(&tab, fmt) != 0)
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&tab);
  pfi_store_iter_close(q);
  pfi_store_close(st);
  return status;
}

int cmd_trace(int argc, char **argv) {
  if (argc < 2) {
    pfi_opt_print_help(&help, stderr);
    return PFI_EXIT_USAGE;
  }
  pfi_cli_set_cmd("trace");
  if (pfi_cli_is_help(argv[1]))
    return pfi_opt_help(&help);
  const char *sub = argv[1];
  if (strcmp(sub, "summarize") == 0)
    return summarize(argc - 1, argv + 1);
  if (strcmp(sub, "export") == 0)
    return export_cmd(argc - 1, argv + 1);
  if (strcmp(sub, "import-prom") == 0)
    return import_prom(argc - 1, argv + 1);
  if (strcmp(sub, "runs") == 0)
    return runs_cmd(argc - 1, argv + 1);
  return pfi_cli_usage("trace", "unknown subcommand '%s'", sub);
}
