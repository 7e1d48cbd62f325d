/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Power-throughput curves: one per job, read from a curves CSV.
 *
 * File format (header row, any column order, extra columns ignored):
 *   required  job, cap_w, power_w, tokens_per_s
 *   optional  gpus, power_sd_w, tokens_sd, runs
 * `cap_w` is the per-GPU power cap (W); `power_w` the job's realized
 * aggregate GPU power (W); `tokens_per_s` its steady-state throughput (any
 * positive unit). The point with the highest cap is the job's uncapped
 * reference (T_max, P_max).
 */
#ifndef PFI_CURVE_H
#define PFI_CURVE_H

#include <stddef.h>

#include "pfi/error.h"

struct pfi_point {
  double cap_w;        /* per-GPU cap, W */
  double power_w;      /* realized aggregate power, W */
  double tokens_per_s; /* throughput, tokens/s (or the file's unit) */
  double power_sd_w;   /* standard error of power_w, W; < 0 when unknown */
  double tokens_sd;    /* standard error of tokens_per_s; < 0 when unknown */
  int runs;            /* repeat runs behind the point; 0 when unknown */
  long line;           /* input line (0 when not from a file) */
};

struct pfi_curve {
  char *job;             /* owned */
  int gpus;              /* GPU count; 0 when unknown */
  size_t n, cap;         /* points, allocated */
  struct pfi_point *pts; /* sorted by cap_w ascending; owned */
  long first_line;       /* line of the job's first row in the input */
};

struct pfi_curveset {
  size_t n, cap;
  struct pfi_curve *c; /* in order of first appearance; owned */
  char *source;        /* file name, for messages; owned, may be NULL */
  char *unit;          /* throughput unit as read: "tokens/s", the mapped
                          column's name, or "K/COLUMN"; owned, may be NULL */
  void *pool; /* the blocks that hold the names and points of curves read
                 from a file (few allocations instead of two per job);
                 owned, NULL otherwise */
  /* Replicate rows (a job's cap repeated in a file without sd or runs
   * columns): the pooled squared deviations of power and throughput from
   * their point's mean, relative to it, their degrees of freedom (rows
   * beyond the first of each point) and the points that had replicates.
   * pfi_noise_estimate() (index.h) turns them into the noise. */
  double rep_ss_power, rep_ss_tokens;
  size_t rep_dof, rep_groups;
};

/* Canonical column names, in the order used by --map. */
enum pfi_curve_col {
  PFI_COL_JOB,
  PFI_COL_CAP_W,
  PFI_COL_POWER_W,
  PFI_COL_TOKENS_PER_S,
  PFI_COL_GPUS,
  PFI_COL_POWER_SD_W,
  PFI_COL_TOKENS_SD,
  PFI_COL_RUNS,
  PFI_COL__COUNT
};

/* The --map that reads a curve's power from its node power (the columns
 * of node_curves.csv, pfi trace summarize, docs/sweep.md): Eq. 1 over
 * node power (`pfi index --power node`). */
#define PFI_CURVE_NODE_POWER_MAP                                               \
  "power_w=node_power_w,power_sd_w=node_power_sd_w"

/* Name of a canonical column ("cap_w"). */
const char *pfi_curve_col_name(enum pfi_curve_col col);

/*
 * Reads a curves CSV. `path` "-" reads standard input. `map` is NULL or a
 * string "NAME=COLUMN,NAME=COLUMN" that reads canonical column NAME from the
 * file's column COLUMN (e.g. "job=Workload,cap_w=GPU power cap"). Two
 * more forms, used when the whole COLUMN names no column of the file:
 * `job=A+B+C` builds the job name from columns A, B, C joined by '/'
 * (at most 8); `NAME=K/COLUMN` for a number column reads K divided by the
 * column, e.g. `tokens_per_s=1/time_per_epoch` (throughput given as time
 * per unit of work; K a positive number). set->unit records the unit.
 * Validation, each a PFI_EPARSE with file:line:column: missing column, a
 * used column named twice in the header, a record with more fields than
 * the header, non-numeric/NaN/inf value, zero or negative cap, power or
 * throughput, duplicate cap within a job, a job with fewer than 2 points,
 * a NUL byte (binary input). A bad --map
 * gives PFI_EINVAL. On success the set is filled (points sorted by cap) and
 * must be released with pfi_curveset_release(); on failure it is empty.
 *
 * Replicate rows: in a file without power_sd_w, tokens_sd and runs
 * columns, rows repeating a job's cap are replicate runs, not a duplicate
 * cap: the point is their mean, its runs their count, and their scatter
 * is pooled in rep_ss_* (pfi_noise_estimate(), index.h).
 */
int pfi_curveset_read(struct pfi_curveset *set, const char *path,
                      const char *map, struct pfi_error *err);

/* Same from memory; `name` is used in messages. */
int pfi_curveset_read_mem(struct pfi_curveset *set, const char *name,
                          const char *data, size_t len, const char *map,
                          struct pfi_error *err);

/*
 * The same on `threads` threads: 1, 2, or 0 for the library's choice (what
 * the two functions above do: two for an input of 4 MiB or more when a
 * processor is idle, the one-minute load average below the processors
 * less one; else one). On two threads the data rows are split
 * at a line end near the middle, each half read into a set of its own and
 * the halves joined in order of first appearance: the set, and every error
 * (message, file, line, column), are those of one thread, byte for byte.
 * A first half holding a quote character, and rows that the join cannot
 * take (a cap or a differing GPU count of one job in both halves), are read
 * on one thread.
 */
int pfi_curveset_read_threads(struct pfi_curveset *set, const char *path,
                              const char *map, int threads,
                              struct pfi_error *err);
int pfi_curveset_read_mem_threads(struct pfi_curveset *set, const char *name,
                                  const char *data, size_t len, const char *map,
                                  int threads, struct pfi_error *err);

/* Initializes an empty set (no allocation). */
void pfi_curveset_init(struct pfi_curveset *set);

/* Appends a point to job `job` (created when new). Duplicate caps are
 * PFI_EINVAL. Points are kept sorted by cap. */
int pfi_curveset_add(struct pfi_curveset *set, const char *job,
                     const struct pfi_point *pt, struct pfi_error *err);

/* The curve of `job`, or NULL. Linear search: for lookups by name. */
struct pfi_curve *pfi_curveset_find(const struct pfi_curveset *set,
                                    const char *job);

void pfi_curveset_release(struct pfi_curveset *set);

/*
 * Keeps, in every curve of `set`, only the points whose cap is one of
 * caps[0..ncaps-1] (a cap matches within 1e-9 relative, so "200" matches
 * 200.0): a grid-sensitivity study recomputes PFI on a coarser grid. The
 * highest requested cap becomes each job's uncapped reference. Works in
 * place. Errors (the set is left unchanged): PFI_EINVAL when fewer than 2
 * distinct caps are requested or a cap is not finite and positive;
 * PFI_EPARSE, located at the job's first line in set->source, when a job
 * has no point at a requested cap.
 */
int pfi_curveset_restrict(struct pfi_curveset *set, const double *caps,
                          size_t ncaps, struct pfi_error *err);

/* The uncapped reference point (highest cap). Curve must have n >= 1. */
static inline const struct pfi_point *
pfi_curve_uncapped(const struct pfi_curve *c) {
  return &c->pts[c->n - 1];
}

/*
 * Throughput at aggregate power `power_w` by linear interpolation of the
 * curve's (power, tokens) points ordered by power (points of equal power
 * in cap order); clamped to the end points outside their range. Allocates
 * nothing; NAN for a curve without points.
 */
double pfi_curve_tokens_at(const struct pfi_curve *c, double power_w);

/*
 * Per-GPU cap that realizes aggregate power `power_w`, by linear
 * interpolation of the (power, cap) points; clamped to the end points.
 * Same order, ties and errors as pfi_curve_tokens_at().
 */
double pfi_curve_cap_at(const struct pfi_curve *c, double power_w);

#endif
