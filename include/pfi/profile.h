/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Profiling in place: the power-throughput curve of a job that is already
 * running, measured without restarting it. Its GPUs' caps are stepped
 * through a short schedule; each cap is held until the job's throughput
 * and its GPUs' power are steady (pfi_steady_check below: no trend beyond
 * the noise, and a mean known to the precision asked for), at most
 * max_hold_s; everything goes to a trace store in the tables of a sweep
 * (one run per hold, marked as a profile); the caps are restored with the
 * guarantees of a sweep (pfi/capset.h: the originals in the store's ledger
 * before any change, restored on every return and on the caller's stop
 * flag, by pfi_sweep_recover() / pfi restore after a SIGKILL); the curve
 * and its PFI with a 95 % interval come out as pfi index computes them.
 *
 * The job: on the emu backend, a job-library entry (or any emulated job)
 * that is already `job_t_s` seconds into its timeline (pfi/emu.h); on any
 * backend, a process that appends JSON-lines throughput reports to a file
 * (docs/throughput-protocol.md), read from the profile's start.
 */
#ifndef PFI_PROFILE_H
#define PFI_PROFILE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/curve.h"
#include "pfi/emu.h"
#include "pfi/error.h"
#include "pfi/index.h"
#include "pfi/store.h"

/* ---- steadiness ---------------------------------------------------------*/

/*
 * The rule that decides when a hold is steady, on one series x[0..n) of
 * equally spaced values since the cap changed (throughput reports or
 * summed power). The window starts at 0. While it has at least
 * 2 * min_samples values, its two halves (the first floor(m/2) values and
 * the rest) are compared: when their means differ by more than
 * z sqrt(se1^2 + se2^2) (se: a half's standard error, its sample standard
 * deviation over the square root of its count), the series still moves
 * and the window drops its first half. The window is steady when no such
 * trend is left, it has at least min_samples values, and the standard
 * error of its mean is at most rel_precision of the mean.
 */
struct pfi_steady_rule {
  double z;             /* PFI_INDEX_NOISE_Z (2) when 0 */
  double rel_precision; /* standard error of the mean over the mean */
  size_t min_samples;   /* 8 when 0 */
};

struct pfi_steady {
  int steady;        /* 1 when the rule holds */
  size_t start, n;   /* the window: x[start .. start + n) */
  double mean;       /* its mean (NAN when n == 0) */
  double sem;        /* its standard error (NAN when n < 2) */
  size_t trend_cuts; /* how often a trend dropped a first half */
};

/* Applies the rule to x[0..n) (finite values). Returns 1 (steady), 0 (not
 * yet), PFI_EINVAL for a rule out of range (rel_precision not > 0, z < 0). */
int pfi_steady_check(const double *x, size_t n, const struct pfi_steady_rule *r,
                     struct pfi_steady *out);

/* ---- the profile --------------------------------------------------------*/

/* Defaults of pfi_profile_opts (used where a field is 0). */
#define PFI_PROFILE_INTERVAL_S 1.0
#define PFI_PROFILE_MIN_HOLD_S 10.0
#define PFI_PROFILE_MAX_HOLD_S 120.0
#define PFI_PROFILE_PRECISION 0.002
#define PFI_PROFILE_CAPS 6
#define PFI_PROFILE_DRAWS 2000

struct pfi_profile_progress {
  const char *job;
  size_t cap_index, n_caps;
  double cap_w;
  double hold_s;       /* device seconds at this cap */
  double power_w;      /* summed power of the GPUs, W (NaN: none) */
  double tokens_per_s; /* newest throughput (NaN: none) */
  const char *event;   /* "set", "sample", "steady", "limit", "restore" */
};

struct pfi_profile_opts {
  const char *backend;        /* "emu" (default when NULL), "nvml", ... */
  const char *backend_params; /* NULL for defaults */
  const unsigned *gpus;       /* the job's GPUs; NULL = all of the device */
  size_t n_gpus;
  /* The schedule, per-GPU W, held in this order; the highest is the
   * uncapped reference. NULL: PFI_PROFILE_CAPS caps from the GPUs' highest
   * limit down to their lowest, evenly spaced, whole watts. */
  const double *caps_w;
  size_t n_caps;
  double interval_s;    /* sampling interval (PFI_PROFILE_INTERVAL_S) */
  double min_hold_s;    /* no cap is judged steady before (default above) */
  double max_hold_s;    /* each cap is left after this at the latest */
  double budget_s;      /* the whole profile ends after this (0: none) */
  double rel_precision; /* the rule's precision (PFI_PROFILE_PRECISION);
                           never below the noise model's (below) */
  const struct pfi_noise *noise; /* NULL: the paper's (pfi_noise_paper) */
  /* The running job: an emulated one ... */
  const char *emulate;               /* a job-library group (emu only) */
  const struct pfi_emu_job *emu_job; /* or this job (wins; emu only) */
  double job_t_s; /* how far it is into its timeline (default: its
                     start-up is over) */
  /* ... or the JSON-lines reports a running process appends. */
  const char *throughput;      /* "jsonl:PATH" */
  const char *job;             /* job name in the store (default: the group, or
                                  "profile") */
  uint64_t seed;               /* emulator seed, recorded */
  unsigned long ci_seed;       /* seed of the interval's draws */
  size_t draws;                /* interval draws (PFI_PROFILE_DRAWS when 0) */
  volatile sig_atomic_t *stop; /* set by the caller's signal handlers */
  void (*progress)(const struct pfi_profile_progress *p, void *arg);
  void *progress_arg;
  /* Called at "recorded" (originals in the ledger), "set" (hold i's caps
   * set), "sample" (each interval), "restoring" (the first GPU back) and
   * "restored": fault-injection tests kill pfi there. */
  void (*stage_hook)(const char *stage, size_t cap_index, void *arg);
  void *stage_arg;
};

/* One hold of the profile. */
struct pfi_profile_point {
  double cap_w;
  int64_t run_id;     /* its run in the store */
  double hold_s;      /* device seconds at the cap */
  size_t samples;     /* training-phase instants seen */
  int steady;         /* 1: the rule held; 0: left at max_hold_s / budget */
  double steady_at_s; /* seconds into the hold when it held (NaN) */
  size_t window;      /* instants in the steady window */
  /* The point, summarized as pfi trace summarize summarizes a sweep's run
   * (the top-10 % mean of the window's values) and its standard errors. */
  double power_w, tokens_per_s, power_sd_w, tokens_sd;
  /* Plain means over all of the hold's training instants (what the job
   * produced at this cap, transients included). */
  double mean_power_w, mean_tokens_per_s;
};

struct pfi_profile_result {
  char job[128];
  size_t n;                      /* holds done (n_caps unless stopped) */
  struct pfi_profile_point *pts; /* n_caps entries; owned */
  double total_s;                /* device seconds of profiling */
  struct pfi_index index;        /* of the curve; owned */
  int index_ok;                  /* index computed (>= 2 points) */
  double ci_lo, ci_hi;           /* 95 % interval (NaN when none) */
  /* Tokens the job did not produce because of the profile, as a share of
   * what it would have produced at the reference throughput over the
   * profiled training time: all of it, and the part beyond the caps' own
   * steady cost (the holds' transients). NaN when undefined. */
  double lost_share, overhead_share;
  int emulated;
};

/*
 * Runs the profile into `st` (its sweep lock held for the whole profile).
 * Returns 0, PFI_EINTR (stopped: caps restored, the holds done are in
 * *res), PFI_EINVAL / PFI_ERANGE / PFI_ENOTFOUND for bad options, or a
 * device or store error (caps restored; if restoring fails, the ledger
 * keeps the rows and the error says so). Release *res with
 * pfi_profile_result_release() on every return.
 */
int pfi_profile_run(struct pfi_store *st, const struct pfi_profile_opts *o,
                    struct pfi_profile_result *res, struct pfi_error *err);

void pfi_profile_result_release(struct pfi_profile_result *res);

/* The profile's holds as a one-curve set (job res->job; each point with
 * its standard errors), into *set (initialized here; release with
 * pfi_curveset_release). Returns 0, PFI_ENOMEM, or PFI_ENOTFOUND when no
 * hold gave a point. */
int pfi_profile_curves(const struct pfi_profile_result *res,
                       struct pfi_curveset *set, struct pfi_error *err);

#endif
