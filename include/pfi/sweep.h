/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The sweep harness: runs one job once per power cap and records everything
 * in a trace store (store.h). For each cap, in order:
 *   1. record every listed GPU's current cap in the store's ledger (a
 *      committed transaction) before anything changes;
 *   2. set the cap on every listed GPU, read back the enforced limit and
 *      stop with PFI_EMISMATCH when it differs;
 *   3. start the job: a command (fork/exec, no shell, its own process
 *      group, PFI_CAP_W / PFI_RUN_ID / ... in its environment) or an
 *      emulated job-library entry;
 *   4. every interval, wait on the device clock, sample every GPU and
 *      collect the job's throughput, one store transaction per interval;
 *   5. end the job at the duration (SIGTERM, then SIGKILL after the grace
 *      period), or earlier when it exits;
 *   6. restore the recorded caps, verify them, clear the ledger;
 *   7. wait the cooldown and until the GPUs' memory is released.
 * Caps already complete in the store are skipped (resume). The harness
 * waits only through the device's wait operation, so on the emulator in
 * virtual time a 30-minute run takes milliseconds.
 *
 * Caps are restored on normal end, when the job fails, and when `*stop`
 * becomes non-zero (the caller's signal handlers set it). After a SIGKILL,
 * pfi_sweep_recover() restores them from the ledger.
 */
#ifndef PFI_SWEEP_H
#define PFI_SWEEP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/store.h"

/* What the progress callback is told. */
struct pfi_sweep_progress {
  const char *job;
  size_t cap_index; /* 0-based index of the cap in progress */
  size_t n_caps;
  double cap_w;
  double elapsed_s; /* device seconds into the run */
  double duration_s;
  double power_w;      /* aggregate power of the listed GPUs, W (NaN: none) */
  double tokens_per_s; /* newest throughput (NaN: none yet) */
  const char *event;   /* "start", "sample", "end", "skip", "restore" */
};

struct pfi_sweep_opts {
  const char *backend;        /* "emu" (default when NULL), "nvml" */
  const char *backend_params; /* backend parameters; NULL for defaults */
  const unsigned *gpus;       /* GPU indices; NULL = all of the device */
  size_t n_gpus;
  const double *caps_w; /* per-GPU caps, W, run in this order */
  size_t n_caps;
  double duration_s;      /* run length (default 1800 when 0) */
  double interval_s;      /* sampling interval (default 5 when 0) */
  double cooldown_s;      /* pause after each run (default 60; <0: 0) */
  double grace_s;         /* SIGTERM-to-SIGKILL grace (default 10) */
  char *const *argv;      /* the job's command, NULL-terminated */
  const char *throughput; /* "jsonl:PATH" or "regex:PATTERN" */
  const char *emulate;    /* job-library group to emulate instead */
  const char *job;        /* job name in the store; default: the group,
                             or pfi_sweep_job_name() of argv */
  const char *telemetry;  /* NULL/"device", or "dcgm-exporter:URL" */
  int real_time;          /* emulated jobs at wall-clock pace */
  uint64_t seed;          /* recorded; seeds emulated jobs */
  int has_seed;           /* seed given explicitly */
  /* Set by the caller's signal handlers; checked every interval. */
  volatile sig_atomic_t *stop;
  /* Optional progress callback (the CLI prints on stderr). */
  void (*progress)(const struct pfi_sweep_progress *p, void *arg);
  void *progress_arg;
  /* Optional: called at each stage of each run ("recorded" once the caps
   * are in the ledger, "set" once every GPU is capped, "sample" after each
   * interval, "restoring" after the first GPU is restored, "restored"),
   * for fault-injection tests that kill pfi at a chosen point. */
  void (*stage_hook)(const char *stage, size_t cap_index, void *arg);
  void *stage_arg;
  /* Node power (docs/sweep.md): the powercap root whose RAPL zones are
   * read on measured GPUs (NULL: /sys/class/powercap; "none": not read).
   * Emulated GPUs get the emulator's node model instead. */
  const char *powercap;
  /* The BMC's DCMI reading (pfi_bmc_open's spec: ipmitool, ipmi-dcmi,
   * TOOL:PROGRAM; NULL or "none": not read), read at every sampling
   * instant on measured GPUs: the whole node, so it wins over RAPL (which
   * is then not read). A first reading that fails stops the sweep before
   * any cap changes. */
  const char *bmc;
  /* Regex throughput (the job's standard output read by pfi): > 0, the
   * descriptor its output is passed on to as it is read (the CLI: 1); else
   * not passed on. Either way each run's output is kept in
   * DB-logs/run-ID.stdout beside the store (meta key run.ID.stdout). */
  int stdout_fd;
  /* > 0: a run ends this many seconds (device clock) after the job's first
   * throughput report, if it has not ended before (pfi_sweep_smoke). */
  double report_window_s;
};

/* Consecutive failed BMC readings after which a sweep stops reading it. */
#define PFI_SWEEP_BMC_GIVE_UP 3

/* Result counts of a sweep. */
struct pfi_sweep_result {
  size_t runs_done;                 /* runs completed by this call */
  size_t runs_skipped;              /* caps already complete in the store */
  size_t runs_failed;               /* runs whose job failed */
  long tput_bad_lines;              /* malformed throughput lines, all runs */
  struct pfi_error tput_first_bad;  /* the first of them, located */
  long telemetry_failures;          /* dcgm-exporter scrapes that failed */
  struct pfi_error telemetry_first; /* the first failure */
  /* Runs some of whose throughput reports were lost (bad lines: malformed,
   * over-long or not matched in time), each marked in the store (meta key
   * run.ID.tput_lost). */
  size_t runs_tput_lost;
  long tput_resets;                  /* cumulative counter resets, all runs */
  struct pfi_error tput_first_reset; /* the first of them, located */
  /* Where node power came from: PFI_NODE_SOURCE_RAPL, _EMULATED, or ""
   * (not recorded: measured GPUs on a machine without a readable RAPL
   * zone), PFI_NODE_SOURCE_DCMI, and the RAPL zones found. */
  char node_power[16];
  size_t rapl_zones;
  /* BMC readings that failed during the runs (the instant has no node
   * power), and the first of them; after PFI_SWEEP_BMC_GIVE_UP failures
   * in a row the BMC is not read again (bmc_gave_up 1). */
  long bmc_failures;
  struct pfi_error bmc_first;
  int bmc_gave_up;
  long reports; /* throughput reports stored by the runs of this call */
};

/*
 * Runs the sweep into `st`. Returns 0 when every cap completed (or was
 * skipped), PFI_EINTR when *stop interrupted it (caps restored),
 * PFI_EMISMATCH when a read-back cap differed (caps restored),
 * PFI_ECHILD when the job could not start, or a device/store error. Caps
 * are restored on every path that changed them; if restoring itself fails
 * the ledger keeps the rows and the error says so.
 */
int pfi_sweep_run(struct pfi_store *st, const struct pfi_sweep_opts *o,
                  struct pfi_sweep_result *res, struct pfi_error *err);

/* `pfi sweep --smoke`: the longest run when none is given (the job's
 * start-up included), s, and how long it runs after the job's first
 * throughput report, s. */
#define PFI_SMOKE_DURATION_S 120.0
#define PFI_SMOKE_WINDOW_S 5.0

/* What a smoke run saw. */
struct pfi_sweep_smoke {
  struct pfi_sweep_result res;
  double cap_w;           /* the cap it ran at (the highest asked for), W */
  double duration_s;      /* the run length asked for, s */
  double run_s;           /* how long the run lasted (device clock), NaN */
  char state[16];         /* the run's state in the store, "" when none began */
  long reports;           /* throughput reports read */
  long rates;             /* of them with a rate (tokens/s) */
  double first_s, last_s; /* first and last rate, s after the run's start
                             (device clock; NaN when none) */
  double rate_min, rate_median, rate_max; /* tokens/s, NaN when none */
  char dir[4096];                         /* the smoke store's directory */
  int kept; /* it was kept: its ledger still holds caps to restore */
};

/*
 * One run of o's command at the highest of o->caps_w, ending
 * PFI_SMOKE_WINDOW_S after the job's first throughput report, or when the
 * job exits, or at o->duration_s (PFI_SMOKE_DURATION_S when 0), sampled
 * every o->interval_s (1 s when 0),
 * through pfi_sweep_run into a store of its own under $TMPDIR (else /tmp),
 * removed afterwards unless its ledger still holds caps (out->kept; the
 * error then names it for pfi restore). Fills *out with what the job's
 * throughput reports said. Needs a command and o->throughput (PFI_EINVAL);
 * returns pfi_sweep_run's status otherwise.
 */
int pfi_sweep_smoke(const struct pfi_sweep_opts *o, struct pfi_sweep_smoke *out,
                    struct pfi_error *err);

/*
 * Restores the caps left in `st`'s ledger by a pfi that did not finish
 * (SIGKILL, power loss), opening each recorded backend with its recorded
 * parameters, and marks runs still "running" as interrupted. Returns the
 * number of GPUs restored (0 when nothing was pending), PFI_EBUSY while
 * another live pfi holds the store's sweep lock (it owns the caps and will
 * restore them itself), or an error; a GPU that cannot be restored stays
 * in the ledger.
 */
int pfi_sweep_recover(struct pfi_store *st, struct pfi_error *err);

/*
 * The default name of the job that `argv` runs (NULL-terminated): the base
 * name of what identifies it, the script behind an interpreter or launcher
 * (python3, pypy3, torchrun, python -m torch.distributed.run, accelerate,
 * deepspeed, mpirun, srun, uv, bash, sh, env and their options; ".py" and
 * ".sh" dropped) or a module run with -m, else the program, then '-' and 8
 * hex digits of a hash (FNV-1a, 64 bits folded to 32) of every word of
 * argv: `torchrun --nproc-per-node 8 train.py --lr 3e-4` is
 * "train-xxxxxxxx", and another argument gives another name. Writes at most
 * n bytes into buf, NUL-terminated.
 */
void pfi_sweep_job_name(char *const *argv, char *buf, size_t n);

/* The GPUs named "0,1,2" or "0-3,6" (or "all": *gpus = NULL). */
int pfi_sweep_parse_gpus(const char *s, unsigned **gpus, size_t *n,
                         struct pfi_error *err);

#endif
