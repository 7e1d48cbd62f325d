/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A cap plan: per job, the GPUs it runs on, the per-GPU power cap to set,
 * and what the allocation predicts at that cap (power, throughput, the
 * fraction of uncapped throughput retained). `pfi allocate --plan FILE`
 * writes one; `pfi cap --plan FILE --db STORE` applies it, all GPUs or
 * none, with the guarantees of include/pfi/capset.h.
 *
 * File format (CSV, docs/plan.md), one row per job:
 *   job, gpus, gpu_ids, cap_w, power_w, tokens_per_s, uncapped_power_w,
 *   uncapped_tokens_per_s, retained, strategy, cut, unit, objective
 * Required to apply: job, gpu_ids, cap_w. gpu_ids is a list of device
 * indices separated by ';' with ranges ("0;1;4-7"), empty when unknown.
 */
#ifndef PFI_PLAN_H
#define PFI_PLAN_H

#include <stddef.h>

#include "pfi/error.h"

#define PFI_PLAN_MAX_GPU 65535 /* largest device index a plan may name */

struct pfi_plan_job {
  char *job;         /* owned */
  int gpus;          /* GPU count; 0 when unknown */
  unsigned *gpu_ids; /* ngpu device indices; owned (NULL when none) */
  size_t ngpu;
  double cap_w;   /* per-GPU cap to set, W */
  double power_w; /* predicted aggregate power, W (NAN when unknown) */
  double tokens;  /* predicted throughput (NAN when unknown) */
  double uncapped_power_w, uncapped_tokens; /* the job's uncapped point */
  double retained; /* tokens / uncapped_tokens (NAN when unknown) */
  long line;       /* input line (0 when not read from a file) */
};

struct pfi_plan {
  size_t n, cap;
  struct pfi_plan_job *j; /* owned */
  char *strategy;         /* owned, may be NULL */
  char *objective;        /* what the allocation maximized (objective.h's
                             name: work, throughput, jobs); owned, may be
                             NULL (a plan written before the column) */
  double cut;             /* fraction; NAN when unknown */
  char *unit;             /* throughput unit; owned, may be NULL */
  char *source;           /* file name for messages; owned, may be NULL */
};

void pfi_plan_init(struct pfi_plan *p);
void pfi_plan_release(struct pfi_plan *p);

/* Appends a job (copies `job`; gpu_ids copied, may be NULL). PFI_ENOMEM. */
int pfi_plan_add(struct pfi_plan *p, const struct pfi_plan_job *job,
                 struct pfi_error *err);

/*
 * Parses a GPU list "0;1;4-7" (also ',' or spaces are not accepted: ';'
 * keeps it one CSV field) into *ids (malloc'd, caller frees) and *n. An
 * empty string gives n = 0. Errors (PFI_EINVAL, message naming the token):
 * not a number, an index above PFI_PLAN_MAX_GPU, a range from high to low,
 * an index repeated.
 */
int pfi_plan_parse_gpus(const char *s, unsigned **ids, size_t *n,
                        struct pfi_error *err);

/*
 * Reads a plan file (or "-" for standard input); from memory with `name`
 * for messages. Validation, each PFI_EPARSE at file:line:column: missing
 * job or cap_w column (line 1), empty job, a job named twice, cap_w not a
 * positive number of at most 10000 W, a bad gpu_ids list, a GPU index
 * named by two jobs, gpus not a positive integer or not equal to the
 * number of gpu_ids, optional numbers not finite, no rows.
 */
int pfi_plan_read(struct pfi_plan *p, const char *path, struct pfi_error *err);
int pfi_plan_read_mem(struct pfi_plan *p, const char *name, const char *data,
                      size_t len, struct pfi_error *err);

/*
 * Fills each job's gpu_ids from a mapping CSV with columns job and gpu_ids
 * (same list syntax). A job of the plan absent from the map keeps none; a
 * map row for a job not in the plan is ignored; a GPU named twice, an
 * empty gpu_ids of a job in the plan, or a count differing from the job's
 * known GPU count, is PFI_EPARSE at the map row.
 */
int pfi_plan_assign_gpus(struct pfi_plan *p, const char *map_path,
                         struct pfi_error *err);

/* Writes the plan as CSV to `path` ("-": standard output is not allowed,
 * the library does not print: PFI_EINVAL). PFI_EIO on a write error. */
int pfi_plan_write(const struct pfi_plan *p, const char *path,
                   struct pfi_error *err);

#endif
