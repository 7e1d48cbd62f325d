/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi profile`: a running job's curve and PFI, measured in place. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_device.h"
#include "opt.h"
#include "pfi/emu.h"
#include "pfi/profile.h"
#include "pfi/store.h"
#include "pfi/sweep.h"

/* The options, bound to these (src/base/opt.h); po holds the defaults. */
static struct pfi_profile_opts po;
static const char *db, *gpus_s, *caps_s, *curve_out;
static unsigned long seed, ci_seed, draws;
static double precision;
static int quiet;

#define DUR(l, v, kind, h) PFI_OPT_DURATION(l, v, kind, 0, 0, "D", h)

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("backend", 0, &po.backend, "B",
                   "emu or nvml (required with --throughput unless "
                   "$PFI_BACKEND is set; emu with --emulate)"),
    PFI_OPT_STRING("params", 0, &po.backend_params, "P",
                   "backend parameters (docs/emulator.md, docs/nvml.md)"),
    PFI_OPT_STRING("gpus", 0, &gpus_s, "LIST",
                   "the job's GPUs: all (default), 0,1 or 0-3"),
    PFI_OPT_STRING("caps", 0, &caps_s, "LIST",
                   "per-GPU caps in W, held in this order, the highest being "
                   "the reference: 700,600,500 or 200:700:100 (default: 6 "
                   "caps from the GPUs' highest limit down to their lowest)"),
    DUR("interval", &po.interval_s, PFI_DUR_INTERVAL,
        "sampling interval (default 1s)"),
    DUR("min-hold", &po.min_hold_s, PFI_DUR_DURATION,
        "no cap is judged steady before (default 10s)"),
    DUR("max-hold", &po.max_hold_s, PFI_DUR_DURATION,
        "each cap is left after this at the latest, steady or not (default "
        "2m)"),
    DUR("budget", &po.budget_s, PFI_DUR_DURATION,
        "the whole profile ends after this (default: no limit but the "
        "holds')"),
    PFI_OPT_SHARE("precision", &precision, 0, 0.5,
                  PFI_RANGE_LO_OPEN | PFI_RANGE_HI_OPEN, "P",
                  "a hold is steady when the standard error of its window's "
                  "mean throughput and power is at most this share of the "
                  "mean (default 0.2%; never finer than the noise model's)"),
    {.lng = "db",
     .arg = PFI_ARG_REQ,
     .argname = "FILE",
     .help = "trace store, created when absent",
     .type = PFI_OT_STRING,
     .var = &db,
     .def = "profile.db"},
    PFI_OPT_STRING("throughput", 0, &po.throughput, "S",
                   "jsonl:PATH, the JSON lines the running job appends "
                   "(docs/throughput-protocol.md); read from the profile's "
                   "start (the file is emptied first, as pfi sweep does)"),
    PFI_OPT_STRING("emulate", 0, &po.emulate, "GROUP",
                   "the running job is this job-library entry on the "
                   "emulator (pfi emulate list), past its start-up"),
    PFI_OPT_STRING("job", 0, &po.job, "NAME",
                   "job name in the store (default: the group, or profile)"),
    PFI_OPT_STRING("curve", 0, &curve_out, "FILE",
                   "also write the curve as a curves CSV (pfi index FILE)"),
    PFI_OPT_ULONG("seed", &seed, 0, 0, "N",
                  "seed of the emulator, recorded in the store (default 1)"),
    PFI_OPT_ULONG("ci", &draws, 1, 100000000, "N",
                  "Monte Carlo draws of the PFI's 95 % interval (default "
                  "2000)"),
    PFI_OPT_ULONG("ci-seed", &ci_seed, 0, 0, "N",
                  "seed of the draws (default 1)"),
    PFI_OPT_FLAG("quiet", 0, &quiet, "no progress on stderr"),
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "profile",
    "usage: pfi profile --backend emu|nvml --throughput jsonl:PATH [options]\n"
    "       pfi profile [--backend emu] --emulate GROUP [options]\n",
    "Measures the power-throughput curve of a job that is already running,\n"
    "without restarting it: steps its GPUs' caps through a short schedule\n"
    "and holds each until the job's throughput and the GPUs' power are\n"
    "steady (no trend beyond twice the standard error, and the mean known\n"
    "to --precision), at least --min-hold and at most --max-hold.\n"
    "Everything is recorded in a trace store, one run per hold marked as a\n"
    "profile (meta key run.ID.kind). The GPUs' caps are recorded in the\n"
    "store's ledger before any change and restored at the end, on\n"
    "SIGINT/SIGTERM/SIGHUP and on any error; after a SIGKILL of pfi, by the\n"
    "next pfi that opens the store or pfi restore. Prints the curve and its\n"
    "PFI with a 95 % interval, as pfi index computes them.\n",
    opts,
    "Data from the emu backend is labelled emulated. Exit status: 0 ok, 1\n"
    "run-time failure (interrupted, cap read-back mismatch: caps restored),\n"
    "2 bad usage or input.\n",
    0,
    NULL,
    NULL,
    0,
    0,
    NULL};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static void on_progress(const struct pfi_profile_progress *p, void *arg) {
  (void)arg;
  if (quiet || strcmp(p->event, "sample") == 0)
    return;
  fprintf(stderr, "pfi profile: %s cap %zu of %zu (%g W): ", p->job,
          p->cap_index + 1, p->n_caps, p->cap_w);
  if (strcmp(p->event, "set") == 0)
    fprintf(stderr, "caps set\n");
  else if (strcmp(p->event, "restore") == 0)
    fprintf(stderr, "caps restored\n");
  else
    fprintf(stderr, "%s after %.0f s\n",
            strcmp(p->event, "steady") == 0 ? "steady" : "left unsteady",
            p->hold_s);
}

static void print_result(const struct pfi_profile_result *r, size_t draws_n,
                         unsigned long cseed) {
  printf("%s%s: %zu hold(s), %.0f s of profiling\n", r->job,
         r->emulated ? " (EMULATED)" : "", r->n, r->total_s);
  printf("cap_w  power_w  tokens_per_s  power_sd_w  tokens_sd  hold_s  "
         "steady\n");
  for (size_t i = 0; i < r->n; i++) {
    const struct pfi_profile_point *p = &r->pts[i];
    char st[32];
    if (p->steady)
      snprintf(st, sizeof st, "at %.0f s", p->steady_at_s);
    else
      snprintf(st, sizeof st, "no");
    printf("%5.0f  %7.1f  %12.1f  %10.3g  %9.3g  %6.0f  %s\n", p->cap_w,
           p->power_w, p->tokens_per_s, p->power_sd_w, p->tokens_sd, p->hold_s,
           st);
  }
  if (!r->index_ok) {
    printf("pfi_ratio: - (fewer than 2 points)\n");
    return;
  }
  const struct pfi_index *x = &r->index;
  printf("pfi_ratio  ci95                 pfi_area    pfi_ce  points  t_max\n");
  char ci[64] = "-";
  if (isfinite(r->ci_lo))
    snprintf(ci, sizeof ci, "[%.4f, %.4f]", r->ci_lo, r->ci_hi);
  if (x->pfi_defined)
    printf("%9.4f  %-20s %9.4f %9.4f  %6zu  %.6g\n", x->pfi, ci, x->pfi_area,
           x->pfi_ce, x->points_used, x->t_max);
  else
    printf("%9s  %-20s %9.4f %9.4f  %6zu  %.6g  (%s)\n", "-", ci, x->pfi_area,
           x->pfi_ce, x->points_used, x->t_max,
           pfi_index_undefined_reason(x->undefined_why));
  printf("ci95: 2.5-97.5 percentiles of %zu Monte Carlo draws, seed %lu; "
         "noise: each hold's standard errors.\n",
         draws_n, cseed);
  if (isfinite(r->lost_share))
    printf("throughput lost to profiling: %.3f %% of the tokens at the "
           "reference cap over the profiled time (%.3f %% beyond the caps' "
           "steady cost)\n",
           100 * r->lost_share, 100 * r->overhead_share);
}

static int write_curve(const struct pfi_profile_result *r, const char *path,
                       struct pfi_error *err) {
  struct pfi_curveset set;
  int rc = pfi_profile_curves(r, &set, err);
  if (rc < 0)
    return rc;
  FILE *fp = fopen(path, "w");
  if (!fp) {
    pfi_curveset_release(&set);
    return pfi_error_set(err, PFI_EIO, "%s: cannot write", path);
  }
  fprintf(fp, "job,cap_w,power_w,tokens_per_s,power_sd_w,tokens_sd,source\n");
  for (size_t i = 0; i < set.c[0].n; i++) {
    const struct pfi_point *q = &set.c[0].pts[i];
    pfi_cli_put_csv_field(fp, set.c[0].job);
    fprintf(fp, ",%.10g,%.10g,%.10g,%.10g,%.10g,%s\n", q->cap_w, q->power_w,
            q->tokens_per_s, q->power_sd_w, q->tokens_sd,
            r->emulated ? "emulated" : "measured");
  }
  pfi_curveset_release(&set);
  if (fclose(fp) != 0)
    return pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  return 0;
}

int cmd_profile(int argc, char **argv) {
  memset(&po, 0, sizeof po);
  seed = PFI_EMU_DEFAULT_SEED;
  ci_seed = 1;
  draws = PFI_PROFILE_DRAWS;
  precision = PFI_PROFILE_PRECISION;
  double *caps = NULL;
  size_t ncaps = 0;
  unsigned *gpus = NULL;
  size_t ngpus = 0;
  struct pfi_error err;
  pfi_error_clear(&err);
  int status = 0;
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct pfi_profile_opts o = po;
  o.seed = seed;
  o.ci_seed = ci_seed;
  o.draws = draws;
  o.rel_precision = precision;
  if (!o.emulate && !o.throughput)
    return pfi_cli_usage("profile", "give --throughput jsonl:PATH (the "
                                    "running job's reports) or --emulate "
                                    "GROUP");
  if (o.emulate && o.throughput)
    return pfi_cli_usage("profile", "--emulate and --throughput: give one");
  if (o.throughput && strncmp(o.throughput, "jsonl:", 6) != 0)
    return pfi_cli_usage("profile",
                         "--throughput '%s': a running job's "
                         "reports are read from jsonl:PATH",
                         o.throughput);
  if (o.throughput)
    o.backend = pfi__cli_backend(o.backend);
  if (o.throughput && !o.backend)
    return pfi_cli_usage("profile", "--backend emu|nvml (or PFI_BACKEND) is "
                                    "required with --throughput (it changes "
                                    "GPU power limits)");
  if (!o.backend)
    o.backend = "emu";
  if (o.max_hold_s > 0 && o.min_hold_s > o.max_hold_s)
    return pfi_cli_usage("profile", "--min-hold is longer than --max-hold");
  if (caps_s) {
    if (pfi_cli_parse_numlist(caps_s, &caps, &ncaps, &err) != 0)
      return pfi_cli_usage("profile", "--caps: %s", err.msg);
    for (size_t i = 0; i < ncaps; i++)
      for (size_t j = 0; j < i; j++)
        if (caps[i] == caps[j]) {
          double dup = caps[i];
          free(caps);
          return pfi_cli_usage("profile", "--caps: %g W appears twice", dup);
        }
    if (ncaps < 2) {
      free(caps);
      return pfi_cli_usage("profile", "--caps: a curve needs 2 caps or more");
    }
  }
  if (gpus_s && pfi_sweep_parse_gpus(gpus_s, &gpus, &ngpus, &err) != 0) {
    free(caps);
    return pfi_cli_usage("profile", "%s", err.msg);
  }
  if (o.emulate && (status = pfi__cli_emulate_known("profile", o.emulate)))
    goto out;
  if (pfi__cli_probe_device(o.backend, o.backend_params, &err) < 0) {
    status = pfi_cli_fail(&err);
    goto out;
  }
  o.caps_w = caps;
  o.n_caps = ncaps;
  o.gpus = gpus;
  o.n_gpus = ngpus;
  struct pfi__cli_kill_at k;
  pfi__cli_kill_at_init(&k, &o.stage_hook, &o.stage_arg);
  /* As pfi sweep: a reader gone from stderr, or a store past the file size
   * limit, is a failed write on the ordinary error path (caps restored). */
  pfi__cli_cap_signals(on_signal);
  o.stop = &stop_flag;
  o.progress = on_progress;
  struct pfi_store *st = NULL;
  if (pfi_store_open(&st, db, PFI_STORE_CREATE, &err) < 0) {
    if (err.code == PFI_EDB)
      err.code = PFI_EPARSE;
    status = pfi_cli_fail(&err);
    goto out;
  }
  struct pfi_profile_result res;
  int rc = pfi_profile_run(st, &o, &res, &err);
  pfi_store_close(st);
  if (rc < 0) {
    if (rc == PFI_EINVAL || rc == PFI_ENOTFOUND || rc == PFI_ERANGE)
      err.code = PFI_EINVAL;
    status = pfi_cli_fail(&err);
    pfi_profile_result_release(&res);
    goto out;
  }
  print_result(&res, draws, ci_seed);
  if (curve_out && (rc = write_curve(&res, curve_out, &err)) < 0)
    status = pfi_cli_fail(&err);
  if (!quiet)
    fprintf(stderr, "pfi profile: caps restored; store %s%s\n", db,
            res.emulated ? " (data labelled emulated)" : "");
  pfi_profile_result_release(&res);
out:
  free(caps);
  free(gpus);
  return status;
}
