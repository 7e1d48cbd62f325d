/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A features file: one row per job with telemetry of its uncapped run, as
 * `pfi trace summarize` writes it (columns job, arch, task, gpus,
 * dram_active, mem_copy_util, dram_copy_product, sm_active, ...), or any
 * CSV with a `job` column of unique ids.
 *
 * Feature expressions name what a model reads from a row:
 *   COL          the numeric column COL
 *   COL=VALUE    1 when the text of COL equals VALUE (case-insensitive),
 *                else 0 (for example arch=moe, task=ft)
 *   log2(COL)    base-2 logarithm of the positive numeric column COL
 */
#ifndef PFI_FEATURES_H
#define PFI_FEATURES_H

#include <stddef.h>

#include "pfi/csv.h"
#include "pfi/error.h"

struct pfi_features {
  struct pfi_table t; /* owned */
  int job_col;
  size_t *by_job; /* row indices sorted by job id, for lookups; owned */
};

/*
 * Loads a features CSV ("-" = standard input). Errors: PFI_EIO, PFI_EPARSE
 * (no `job` column, an empty job id or a duplicate id, located at the cell),
 * PFI_ENOMEM. Release with pfi_features_release().
 */
int pfi_features_load(struct pfi_features *f, const char *path,
                      struct pfi_error *err);
int pfi_features_load_mem(struct pfi_features *f, const char *name,
                          const char *data, size_t len, struct pfi_error *err);
void pfi_features_release(struct pfi_features *f);

/* Row of job `job`, or -1 (binary search). */
long pfi_features_row(const struct pfi_features *f, const char *job);

/* Job id of row r. */
const char *pfi_features_job(const struct pfi_features *f, size_t r);

/* 1 when every column expression `expr` refers to exists, else 0. */
int pfi_features_has(const struct pfi_features *f, const char *expr);

/*
 * Value of expression `expr` in row r. Errors: PFI_ENOTFOUND (the column is
 * absent: "features file F has no column C"), PFI_EPARSE (a bad cell,
 * file:line:column), PFI_EINVAL (bad expression, log2 of a value <= 0,
 * located at the cell).
 */
int pfi_features_value(const struct pfi_features *f, size_t r, const char *expr,
                       double *out, struct pfi_error *err);

/* Text of column `col` in row r, or NULL when the column or cell is absent. */
const char *pfi_features_text(const struct pfi_features *f, size_t r,
                              const char *col);

/*
 * Architecture-task class of row r from the `arch` and `task` columns:
 * arch "moe" (any case) is MoE, anything else dense; task "ft", "sft",
 * "lora", "finetune", "fine-tuning" is fine-tuning, anything else
 * pretraining. Returns 0, or PFI_ENOTFOUND when a column is absent.
 */
int pfi_features_class(const struct pfi_features *f, size_t r, int *is_moe,
                       int *is_ft, struct pfi_error *err);

/*
 * The three architecture-task groups of the paper's Kruskal-Wallis test
 * (docs/predict-allocate.md, Clusters): "dense" (pretraining and
 * fine-tuning pooled), "moe-pt", "moe-ft". Returns a static string, or
 * NULL with err set when arch or task is absent.
 */
const char *pfi_features_cluster(const struct pfi_features *f, size_t r,
                                 struct pfi_error *err);

/*
 * The four architecture x task clusters: "dense-pt", "dense-ft", "moe-pt",
 * "moe-ft" (the paper's leave-one-cluster-out clusters; see
 * docs/predict-allocate.md). Returns a static string, or NULL with err set
 * when arch or task is absent.
 */
const char *pfi_features_archtask(const struct pfi_features *f, size_t r,
                                  struct pfi_error *err);

#endif
