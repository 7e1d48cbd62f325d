/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Workload simulation (docs/predict-allocate.md): many synthetic workloads,
 * each `size` jobs sampled with replacement from a library, scored at
 * several cluster-wide cuts by every strategy against the exact oracle.
 *
 * The random stream is GSL's MT19937 seeded with `seed`: the same inputs and
 * seed give the same results bit for bit on any platform with IEEE doubles.
 */
#ifndef PFI_SIM_H
#define PFI_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/alloc.h"
#include "pfi/error.h"
#include "pfi/oracle.h"

/* The simulation's defaults, stated once: pfi simulate, pfi report and pfi
 * reproduce, their help texts and the report's allocation section use
 * these. The cut ladder is in percent of the workload's uncapped power
 * (PFI_SIM_DEFAULT_CUTS as text, pfi_sim_default_cuts[] as fractions). */
#define PFI_SIM_DEFAULT_WORKLOADS 500
#define PFI_SIM_DEFAULT_SIZE 100
#define PFI_SIM_DEFAULT_CUTS "0,5,10,15,20,25,30,35,40"
#define PFI_SIM_DEFAULT_NCUTS 9
extern const double pfi_sim_default_cuts[PFI_SIM_DEFAULT_NCUTS];

/* Text of a numeric macro, for help texts: PFI_STR(PFI_SIM_DEFAULT_SIZE)
 * is "100". */
#define PFI_STR(x) PFI_STR_(x)
#define PFI_STR_(x) #x

struct pfi_sim_config {
  size_t workloads;   /* number of workloads (PFI_SIM_DEFAULT_WORKLOADS) */
  size_t size;        /* jobs per workload (PFI_SIM_DEFAULT_SIZE) */
  const double *cuts; /* ncuts fractions in [0, 1) */
  size_t ncuts;
  unsigned strategies; /* bit (1u << s) for each enum pfi_strategy */
  unsigned long seed;
  /* Sampling weight of each library job (NULL: uniform); need not sum to
   * one; zero excludes a job. */
  const double *sample_weight;
  /* Called after each workload (may be NULL), for progress on stderr;
   * with several workers, from any of them (one at a time) with the count
   * of workloads done. */
  void (*progress)(size_t done, size_t total, void *arg);
  void *progress_arg;
  /* Workers scoring workloads in parallel: 0 for two where the machine
   * has two processors or more, else one. The results are the same bit
   * for bit whatever the number. */
  unsigned threads;
};

/* Per strategy and cut. Values the metric does not define (the share of a
 * zero equal-to-oracle gap) are NaN and flagged. */
struct pfi_sim_cell {
  double gap_mean;       /* mean over workloads of (oracle - strategy)
                            tokens/s per job */
  double gap_lo, gap_hi; /* 95 % t-interval of that mean */
  double tokens_mean;    /* mean over workloads of the strategy's total
                            throughput / size (the oracle's: the best any
                            allocator reaches), the library's unit */
  double closed_pct;     /* 100 (gap_equal - gap) / gap_equal of the means */
  int closed_defined;
  double vs_aware_mean; /* mean of (strategy - pfi-aware) tokens/s per job
                           (positive: better than pfi-aware) */
  double vs_aware_lo, vs_aware_hi; /* its paired 95 % t-interval */
  int vs_aware_defined; /* pfi-aware simulated and more than 1 workload */
  /* Workloads that could take the cut (its budget at or above the sampled
   * jobs' floors); the values above are over these. Fewer than 2: every
   * value is NaN and undefined. workloads - feasible were infeasible. */
  size_t feasible;
};

struct pfi_sim_result {
  size_t ncuts;
  size_t workloads;                            /* simulated, feasible or not */
  struct pfi_sim_cell *cell[PFI_STRAT__COUNT]; /* ncuts each, NULL when the
                                                  strategy was not run */
};

/*
 * Simulates. `lib` holds one job per library entry (its true curve), `in`
 * per-library-job inputs (estimated PFI, DRAM copy product, MoE-FT flag).
 * Errors: PFI_EINVAL (empty library, zero workloads or size, a cut outside
 * [0, 1), all sampling weights zero, fewer than 2 workloads), PFI_ENUMERIC,
 * PFI_ENOMEM. A cut below the floors of a sampled workload is not an error:
 * that workload is left out of the cut's cell (pfi_sim_cell.feasible). Release
 * `out` with pfi_sim_result_release().
 */
int pfi_sim_run(const struct pfi_problem *lib,
                const struct pfi_alloc_inputs *in,
                const struct pfi_sim_config *cfg, struct pfi_sim_result *out,
                struct pfi_error *err);

void pfi_sim_result_release(struct pfi_sim_result *r);

/*
 * Production-mix sampling weights from a mix file (data/mixes/
 * production.csv format: columns task, min_gpus, max_gpus, share). Each
 * library job matches the first row whose task class (pt/ft) and GPU range
 * contain it; a row's share is split evenly over the jobs it matches. A row
 * that matches no job makes its share fall back to all jobs of its task
 * class regardless of GPU count (reported via *fallbacks, a count); a task
 * class with no job at all is PFI_EINVAL. Writes weight[0..njobs-1].
 */
int pfi_mix_weights(const char *mix_path, const int *is_ft, const int *gpus,
                    size_t njobs, double *weight, size_t *fallbacks,
                    struct pfi_error *err);

/* Same from `len` bytes of memory; `name` is used in messages. */
int pfi_mix_weights_mem(const char *name, const char *data, size_t len,
                        const int *is_ft, const int *gpus, size_t njobs,
                        double *weight, size_t *fallbacks,
                        struct pfi_error *err);

#endif
