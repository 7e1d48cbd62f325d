/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to the sweep harness (sweep.c runs the sweep, sweep_job.c the
 * job): the state both share and the job's functions. */
#ifndef PFI_SWEEP_INT_H
#define PFI_SWEEP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pfi/capset.h"
#include "pfi/emu.h"
#include "pfi/store.h"
#include "pfi/sweep.h"
#include "pfi/throughput.h"

/* Longest wait for a job to die after SIGKILL, ms. */
#define KILL_WAIT_MS 30000

struct job {
  /* command */
  pid_t pid;
  int out_fd;    /* the job's stdout (regex kind), else -1 */
  int streaming; /* out_fd handed to the collector's threads */
  int exited;
  int status; /* waitpid status */
  /* emulated load */
  int attached;
  double last_rate;
  double last_job_t; /* newest job time reported, device clock */
  int lockstep_off;  /* the job fell silent: stop waiting for it */
  /* A command with an emulated load (--emulate) that reports its own
   * throughput: the load starts, past the group's start-up, when the first
   * report's time (attach_at, device clock; NaN until one arrives) is
   * reached. */
  int attach_pending;
  double attach_at;
  double first_report_t; /* the run's first throughput report, device clock */
  long reports;          /* throughput reports stored in this run */
};

struct sweep {
  struct pfi_store *st;
  const struct pfi_sweep_opts *o;
  struct pfi_device *dev;
  char backend[32];
  char params[256];
  unsigned *gpus;
  size_t n;
  struct pfi_emu_jobs lib;
  const struct pfi_emu_job *ej;
  struct pfi_tput *tp;
  char job_name[128];
  char command[512];
  int virtual_time;
  int cuda_env; /* the job gets CUDA_VISIBLE_DEVICES (not on emu) */
  struct pfi_sample *samples;
  struct pfi_sweep_result *res;
  int emulated;          /* the GPUs are the emulator's, behind any backend */
  struct pfi_capset *cs; /* the GPUs' locks and records (pfi/capset.h) */
  /* Node power (store.h's node_power): RAPL zones on measured GPUs, the
   * previous reading and its time on the device clock. */
  struct pfi_rapl *rapl;
  double *rapl_uj;
  double rapl_t;
  struct pfi_bmc *bmc; /* the BMC's DCMI reader, when chosen (wins) */
  int bmc_failing;     /* consecutive failed readings */
};

/* Starts the sweep's command for the run at cap_w (its environment names
 * the run, cap, store and throughput protocol). */
int pfi__sweep_start_command(struct sweep *sw, struct job *jb, double cap_w,
                             int64_t run_id, struct pfi_error *err);
/* 1 when the job has exited (waits when `block`). */
int pfi__sweep_reap(struct job *jb, int block);
void pfi__sweep_pause_ms(int ms);
/* SIGTERM, then SIGKILL after grace_s, to the job's process group. */
void pfi__sweep_stop_command(struct job *jb, double grace_s);
/* Marks the run's lost throughput reports and counter resets in the store
 * and the result. */
void pfi__sweep_mark_lost(struct sweep *sw, int64_t run_id, long bad,
                          const struct pfi_error *first, long resets,
                          const struct pfi_error *first_reset,
                          struct pfi_sweep_result *res);
/* Reads the job's throughput reports into the store (`final`: to its end). */
int pfi__sweep_collect(struct sweep *sw, struct job *jb, int64_t run_id,
                       double now, int final, struct pfi_error *err);

#endif
