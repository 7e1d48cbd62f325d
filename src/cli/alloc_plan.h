/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi allocate --plan`: the allocation as a cap plan file (pfi/plan.h). */
#ifndef PFI_CLI_ALLOC_PLAN_H
#define PFI_CLI_ALLOC_PLAN_H

#include "pfi/error.h"
#include "pfi/jobset.h"
#include "pfi/oracle.h"

/* Writes the plan of powers pw[] (one per job of d) to `path`, each job's
 * GPUs from `gpu_map` when not NULL. */
int alloc_write_plan(const struct pfi_jobset *d, const struct pfi_problem *p,
                     const double *pw, const char *strategy,
                     const char *objective, double cut,
                     const char *path, const char *gpu_map,
                     struct pfi_error *err);

#endif
