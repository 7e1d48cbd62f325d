/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The emulated GPU: a physical model of an H200 SXM or H100 SXM under a
 * power cap, the job library it runs (data/jobs/jobs.csv), and the `emu`
 * device backend built on both. docs/emulator.md describes the model.
 *
 * Everything here is EMULATED: the job parameters are calibrated to the
 * published per-group PFI values only; nothing is a measurement.
 *
 * Model in one paragraph. A training step is three segments, measured at
 * the maximum SM clock as shares of the uncapped step: compute (share
 * 1 - mem_share - comm_share; its time scales with 1/f_SM), memory-bound
 * work (mem_share; clock independent down to a knee clock) and
 * communication/host work (comm_share; clock independent). Each segment
 * draws static power (leakage, proportional to the voltage) + HBM power
 * (with its DRAM activity) + SM dynamic power sm_power_w * (SM weight of
 * the segment) * x * v(x)^2, x = f/f_max, with the voltage v flat at its
 * floor for low clocks and rising linearly with the clock above. Under a cap
 * the GPU runs each segment at the highest SM clock whose power fits under the
 * cap (less a 1 % regulation margin); the memory clock never moves. GPUs of a
 * job differ by a seeded manufacturing spread; a synchronous job runs at its
 * slowest GPU's pace and the others wait at low power.
 *
 * Randomness is a pure function of (seed, job id, cap, GPU, time), so every
 * path through the model (sweep, trace, device backend, test trainer) gives
 * identical numbers for the same seed.
 */
#ifndef PFI_EMU_H
#define PFI_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/device.h"
#include "pfi/error.h"
#include "pfi/phase.h"

/* The default seed of every emulator command and of the calibration. */
#define PFI_EMU_DEFAULT_SEED 1ul
/* Most GPUs one job or one emulated node may have. */
#define PFI_EMU_MAX_GPUS 64

/* A GPU model. Values from the vendor's public specifications where they
 * exist (limits, clocks, memory, peak), the model's own choice otherwise
 * (power split); docs/emulator.md gives each one's provenance. */
struct pfi_emu_profile {
  const char *name;                    /* "h200", "h100" */
  const char *gpu_name;                /* "NVIDIA H200 (emulated)" */
  uint32_t min_mw, max_mw, default_mw; /* power-limit range, mW */
  double sm_clock_max_mhz;             /* highest SM clock, MHz */
  double sm_clock_idle_mhz;            /* idle / lowest SM clock, MHz */
  double mem_clock_mhz;                /* HBM clock, fixed, MHz */
  double idle_w;                       /* power with no context, W */
  double static_w;     /* static power (leakage, board) at the top
                          voltage, W; scales with the voltage */
  double mem_w;        /* HBM power at DRAM activity 1, W */
  double volt_zero;    /* V-f line: v(x) = max(volt_min, volt_zero +
                          (1 - volt_zero) x), relative to v(f_max) */
  double volt_min;     /* the voltage floor, relative to v(f_max) */
  double mem_knee;     /* SM clock ratio below which memory work slows */
  double fb_total_mib; /* frame buffer, MiB */
  double peak_tflops;  /* dense BF16 tensor peak, TFLOP/s */
  double nvlink_gbps;  /* NVLink bandwidth per direction, GB/s */
};

/* Profile by name ("h200", "h100"), or NULL. */
const struct pfi_emu_profile *pfi_emu_profile_find(const char *name);

/* One job-library entry (one published sweep group). */
struct pfi_emu_job {
  char id[96];     /* the published group; H100 entries end in "@h100" */
  char profile[8]; /* "h200" or "h100" */
  char arch[8];    /* "dense" or "moe" */
  char task[8];    /* "pt" or "ft" */
  char model[64];
  char variant[48];
  char grid[8]; /* the published grid: "fine" or "coarse" */
  unsigned gpus;
  double params_b;        /* total parameters, billions */
  double active_b;        /* active parameters per token, billions */
  double seq_len;         /* tokens per sequence */
  double tokens_per_step; /* global tokens per optimizer step */
  double fb_gib;          /* frame buffer used while training, GiB per GPU */
  /* Calibrated parameters. */
  double mem_share;     /* memory-bound share of the uncapped step, 0..1 */
  double comm_share;    /* communication/host share of the uncapped step */
  double sm_power_w;    /* SM dynamic power of the compute segment at f_max */
  double mem_sm_weight; /* SM dynamic power of the memory-bound segment,
                           relative to the compute segment's (0..1) */
  /* Published targets (NaN when none). */
  double pfi_published;        /* on the group's own grid */
  double pfi_coarse_published; /* 8-GPU groups on the coarse grid */
  double caps[8];              /* the group's published cap grid, W */
  size_t n_caps;
  long line; /* line in the library file */
};

struct pfi_emu_jobs {
  struct pfi_emu_job *job; /* owned */
  size_t n;
};

/*
 * Loads a job library. `path` NULL means data/jobs/jobs.csv in the data
 * directory. Every parameter is range-checked; an error names file, line
 * and column. Returns 0, PFI_EPARSE / PFI_ERANGE / PFI_EIO / PFI_ENOMEM.
 * Release with pfi_emu_jobs_release().
 */
int pfi_emu_jobs_load(struct pfi_emu_jobs *jobs, const char *path,
                      struct pfi_error *err);
/* Same from memory (`name` for messages). */
int pfi_emu_jobs_load_mem(struct pfi_emu_jobs *jobs, const char *name,
                          const char *data, size_t len, struct pfi_error *err);
void pfi_emu_jobs_release(struct pfi_emu_jobs *jobs);
/* Entry by id, or NULL. */
const struct pfi_emu_job *pfi_emu_job_find(const struct pfi_emu_jobs *jobs,
                                           const char *id);

/* Steady state of one GPU in a training step (time-weighted means). */
struct pfi_emu_gpu {
  double power_w;      /* mean power, W (<= the GPU's cap) */
  double sm_clock_mhz; /* mean SM clock over busy time, MHz */
  double gpu_util;     /* % */
  double sm_active, sm_occupancy, tensor_active, dram_active; /* 0..1 */
  double mem_copy_util;                                       /* % */
  double nvlink_bps;    /* per direction, B/s */
  double pcie_bps;      /* per direction, B/s */
  double throttle_frac; /* share of time the cap held the clock down */
};

/* Steady state of a whole job under given caps (no noise). */
struct pfi_emu_steady {
  unsigned gpus;
  double step_s;       /* seconds per optimizer step */
  double tokens_per_s; /* job throughput */
  double power_w;      /* sum over the job's GPUs, W */
  struct pfi_emu_gpu gpu[PFI_EMU_MAX_GPUS];
};

/*
 * Steady state of `job` on its own GPU count with per-GPU caps `cap_w`
 * (job->gpus values, W). The GPUs' manufacturing spread is fixed per
 * profile and rank (the same emulated hardware for every seed); `seed` is
 * accepted for symmetry and does not change the noise-free steady state.
 * Returns 0 or PFI_EINVAL (unknown profile, cap outside the limits).
 */
int pfi_emu_steady(const struct pfi_emu_job *job, const double *cap_w,
                   unsigned long seed, struct pfi_emu_steady *out,
                   struct pfi_error *err);

/*
 * Throughput of one run of `job` with every GPU capped at `cap_w` (W):
 * steady state times the run-to-run variation drawn from (seed, job, cap).
 * This is what a trainer observes; `step_s` (may be NULL) is its step time.
 */
int pfi_emu_run_rate(const struct pfi_emu_job *job, double cap_w,
                     unsigned long seed, double *tokens_per_s, double *step_s,
                     struct pfi_error *err);

/* The timeline of an emulated run, seconds from the run's start. */
struct pfi_emu_timeline {
  double warmup_s;          /* frame buffer below 10 GiB until then */
  double startup_s;         /* loaded, utilization 0, until then */
  double eval_at_s, eval_s; /* evaluation: start, length */
  double ckpt_at_s, ckpt_s; /* checkpoint write: start, length */
  double duration_s;        /* end of the run */
};
/* The paper's protocol: 30 min, eval at 10 min, checkpoint at 20 min. */
void pfi_emu_timeline_init(struct pfi_emu_timeline *tl,
                           const struct pfi_emu_job *job);
/* The shortest emulated run that has a training phase to summarize for
 * every job of the library: the longest startup (a torch.compile
 * variant's, 240 s) and a minute of training, 300 s. */
double pfi_emu_min_run_s(void);

/* One emulated run: a job under fixed caps, sampled at any time. */
struct pfi_emu_run {
  const struct pfi_emu_job *job; /* borrowed */
  const struct pfi_emu_profile *prof;
  unsigned long seed;
  double cap_w[PFI_EMU_MAX_GPUS];
  struct pfi_emu_steady st;
  struct pfi_emu_timeline tl;
  double run_power_f, run_tokens_f; /* run-to-run factors */
};

/*
 * Prepares a run of `job` with per-GPU caps `cap_w` (job->gpus values, W).
 * Returns 0 or the error of pfi_emu_steady().
 */
int pfi_emu_run_init(struct pfi_emu_run *run, const struct pfi_emu_job *job,
                     const double *cap_w, unsigned long seed,
                     struct pfi_error *err);

/*
 * The telemetry of GPU `rank` at `t_s` seconds into the run, with the
 * sample-to-sample noise of the paper's level, into `s` (every field the
 * emulator models is valid; energy is not: the caller integrates it).
 * `tokens_per_s` receives the job's logged throughput at that time (0
 * outside training), `phase` the true phase (either may be NULL).
 */
void pfi_emu_run_sample(const struct pfi_emu_run *run, unsigned rank,
                        double t_s, struct pfi_sample *s, double *tokens_per_s,
                        enum pfi_phase *phase);

/* One summarized point of an emulated sweep. */
struct pfi_emu_point {
  double cap_w, power_w, tokens_per_s; /* steady-state aggregates */
  double power_sd_w, tokens_sd;        /* standard errors of the means */
  double sm_clock_mhz, mem_clock_mhz;  /* GPU 0, steady state */
};

/*
 * Runs `job` at each of `n` caps (30-minute virtual runs sampled every
 * `interval_s` seconds) and summarizes each with the phase module: power is
 * the top-10 % mean of the job's summed GPU power, throughput that of the
 * logged tokens/s. Returns 0 or an error.
 */
int pfi_emu_sweep(const struct pfi_emu_job *job, const double *caps, size_t n,
                  unsigned long seed, double interval_s,
                  struct pfi_emu_point *out, struct pfi_error *err);

/* Ratio PFI of an emulated sweep of `job` on `caps` (convenience for the
 * calibration and the tests). Returns 0, PFI_ENUMERIC when undefined. */
int pfi_emu_sweep_pfi(const struct pfi_emu_job *job, const double *caps,
                      size_t n, unsigned long seed, double *pfi,
                      struct pfi_error *err);

/* The fine (200..700 step 100) and coarse (200,500,600,700) grids. */
extern const double pfi_emu_grid_fine[6];
extern const double pfi_emu_grid_coarse[4];

/* Result of calibrating one job. */
struct pfi_emu_calib {
  double pfi;        /* emulated ratio PFI on the job's own grid */
  double pfi_coarse; /* on the coarse grid (8-GPU fine-grid jobs), or NaN */
  double uncapped_w; /* per-GPU power at the 700 W cap, W */
  double tmax;       /* uncapped throughput, tokens/s (noise free) */
  double mfu;        /* nominal model FLOPs utilization */
  int evals;         /* model sweeps the search ran */
};

/*
 * Fits job->mem_share, comm_share, sm_power_w and mem_sm_weight so that the
 * emulated sweep at `seed` reproduces job->pfi_published on the job's own grid
 * and, when given, job->pfi_coarse_published on the coarse grid, with per-GPU
 * uncapped power kept in 450..650 W. Deterministic: a fixed grid of
 * starting points, then GSL's Nelder-Mead simplex, with a weak pull toward
 * the architecture/task prior so that equally good fits resolve the same
 * way every time. Returns 0 (also when a target is missed: compare
 * `out`), PFI_EINVAL when the job has no target.
 */
int pfi_emu_calibrate(struct pfi_emu_job *job, unsigned long seed,
                      struct pfi_emu_calib *out, struct pfi_error *err);

/* Evaluates the current parameters of `job` like pfi_emu_calibrate(). */
int pfi_emu_evaluate(const struct pfi_emu_job *job, unsigned long seed,
                     struct pfi_emu_calib *out, struct pfi_error *err);

/* ---- the `emu` device backend ------------------------------------------
 * Open params, comma-separated key=value (all optional):
 *   profile=h200|h100  gpus=N (1..64, default 8)  seed=S
 *   state=DIR   (default $PFI_EMU_STATE, else $XDG_RUNTIME_DIR/pfi-emu,
 *                else /tmp/pfi-emu-UID)
 *   realtime=0|1  (default 0: virtual time; also $PFI_EMU_REALTIME=1)
 * Caps persist in DIR/caps-<profile>.txt, written atomically under flock,
 * so separate processes see one device. */
extern const struct pfi_device_ops pfi_emu_ops;

/*
 * Starts `job` on GPUs `gpus[0..n)` of an open emu session at the device's
 * current time: from then on pfi_device_sample() of those GPUs reflects the
 * job's phases (elapsed device time) under the GPUs' current caps. n may be
 * smaller than job->gpus (the other ranks are on other nodes and run at the
 * cap of gpus[rank % n]). One job per session. Returns 0, PFI_EINVAL (not
 * an emu session, bad GPU list), PFI_EBUSY (a job is attached).
 */
int pfi_emu_attach(struct pfi_device *dev, const unsigned *gpus, size_t n,
                   const struct pfi_emu_job *job, unsigned long seed,
                   struct pfi_error *err);

/*
 * pfi_emu_attach, the job already `job_t_s` seconds into its timeline
 * (0..1e7; pfi_emu_timeline): attached at its startup_s, the GPUs train at
 * once. The sweep attaches so when a real command's first throughput report
 * arrives: the command's own start-up stands for the emulated one.
 */
int pfi_emu_attach_at(struct pfi_device *dev, const unsigned *gpus, size_t n,
                      const struct pfi_emu_job *job, unsigned long seed,
                      double job_t_s, struct pfi_error *err);

/* The attached job's cumulative tokens since attach, its current logged
 * throughput (0 outside training) and phase. Any output may be NULL.
 * Returns 0 or PFI_ESTATE when no job is attached. */
int pfi_emu_progress(struct pfi_device *dev, double *cum_tokens,
                     double *tokens_per_s, enum pfi_phase *phase,
                     struct pfi_error *err);

/*
 * The state directory of an emu device session (where its caps persist),
 * copied into buf (n bytes, NUL-terminated). Returns 0, PFI_EINVAL when
 * `dev` is not an emu session, PFI_ERANGE when buf is too small.
 */
int pfi_emu_state_dir(struct pfi_device *dev, char *buf, size_t n,
                      struct pfi_error *err);

/* Stops the attached job (no-op when none). */
void pfi_emu_detach(struct pfi_device *dev);

/*
 * The emulated node around the GPUs (EMULATED, not calibrated to any
 * measurement): the non-GPU DC power of a node whose `gpus` GPUs draw
 * gpu_w in all is
 *
 *   other = PFI_EMU_HOST_W_PER_GPU x gpus + PFI_EMU_COOLING_SHARE x gpu_w
 *
 * the host (CPUs, DRAM, NICs, NVSwitches: about 1.2 kW for 8 GPUs, not
 * moved by the GPUs' caps) plus fans and voltage regulators, which follow
 * the heat of the GPUs. An 8-GPU H200 node at 700 W per GPU: 1200 + 560 =
 * 1760 W beside 5600 W of GPU power. NAN for gpu_w not finite or < 0.
 */
#define PFI_EMU_HOST_W_PER_GPU 150.0
#define PFI_EMU_COOLING_SHARE 0.10
double pfi_emu_node_other_w(unsigned gpus, double gpu_w);

#endif
