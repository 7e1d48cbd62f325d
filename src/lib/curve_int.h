/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to libpfi: what curve.c, curve_read.c and curve_threads.c
 * share. */
#ifndef PFI_CURVE_INT_H
#define PFI_CURVE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/curve.h"

#include "../base/huge_int.h"

/* A new curve for job (len bytes) at the end of set; its name and room
 * for six points cut from set's pool when `pooled`. */
struct pfi_curve *pfi__curve_new(struct pfi_curveset *set, const char *job,
                                 size_t len, int pooled, struct pfi_error *err);

/* Inserts keeping caps ascending. Returns 1 on a duplicate cap. */
int pfi__curve_insert(const struct pfi_curveset *set, struct pfi_curve *c,
                      const struct pfi_point *pt, struct pfi_error *err);

/* ---- a small string -> index hash map for fast loading ---- */

/* A slot holds the curve index + 1 (0 = empty) and the upper 32 bits of
 * the name's hash: a probe compares names only when the tags agree, so a
 * lookup in a large table touches one slot per probe, not the curves. */
struct jobslot {
  uint32_t idx1, tag;
};

struct jobmap {
  size_t cap; /* power of two */
  struct jobslot *slot;
  uint64_t *hv;  /* hash of each curve's name, so growing rehashes nothing */
  size_t hv_cap; /* entries allocated in hv */
};

/* Whether the curve name `name` is the len bytes at job (which need not
 * end there: a name read in place is followed by the rest of its row). */
static inline int pfi__curve_name_is(const char *name, const char *job,
                                     size_t len) {
  /* Byte by byte, in line (names are short): name's NUL differs from any
   * byte of job, so nothing past it is read. */
  for (size_t i = 0; i < len; i++)
    if (name[i] != job[i])
      return 0;
  return name[len] == '\0';
}

/* The hash of the n bytes of a job name at s. */
uint64_t pfi__curve_hash(const char *s, size_t n);

/* ---- reading ---- */

/*
 * A --map entry beyond NAME=COLUMN: `job=A+B+C` builds the job name from
 * several columns (joined by '/'), and `NUM=K/COLUMN` for a number column
 * reads K divided by the column (throughput from a time per unit of work:
 * tokens_per_s=1/time_per_epoch). A whole entry that names a column of the
 * file is always read as that column.
 */
#define MAP_MAX_PARTS 8

struct colmap {
  char *name[PFI_COL__COUNT]; /* mapped column name, or NULL */
  double num[PFI_COL__COUNT]; /* K of K/COLUMN; 0 when plain */
  int nparts;                 /* job columns when composite (>= 2), else 0 */
  int part[MAP_MAX_PARTS];    /* their indices */
};
/* Rows the second of two threads read, for the first to join: each
 * row's point (its line counted from the second half's first), its job
 * name (an offset in the second half's bytes), and where its reading
 * began (the end of the row before), to read on from there in one thread
 * when the join cannot take the row. */
struct rowrec {
  struct pfi_point pt;
  uint32_t joff, jlen; /* job name in the second half's bytes */
  uint32_t at;         /* offset where the row's reading began */
  uint32_t skip;       /* pt.line minus the line there (blank lines) */
  int gpus;
};

struct rowbuf {
  struct rowrec *r;
  size_t n, cap;
};

int pfi__rowbuf_push(struct rowbuf *b, const struct pfi_csv *csv,
                     const char *job, size_t jlen, const struct pfi_point *pt,
                     double gpus, size_t at, long at_line);

/* What the reading of data rows needs beside the set and the CSV reader:
 * the resolved columns, a job-name buffer and the hash of job names. */
/* Header width up to which rows may be read in place. */
#define PFI_CURVE_FAST_FIELDS 32

struct rows {
  const struct colmap *cm; /* composite job columns (names already freed) */
  int idx[PFI_COL__COUNT];
  double num[PFI_COL__COUNT];
  char *jbuf;
  size_t jcap;
  struct jobmap m;
  /* Rows of one job usually follow each other, or (a telemetry export
   * sorted by time) the jobs follow each other in the same order at every
   * timestamp or cap: trying the last job's curve and the next one in
   * order of first appearance skips the hash lookup, and its cache misses
   * in a large table, for both layouts. */
  long last;
  struct rowbuf *out; /* the second of two threads: rows kept, not joined */
  size_t at;          /* where the reading of the current row began */
  long at_line;       /* the line there */
  /* Rows read in place (curve_read.c): each field's column (PFI_COL_*)
   * plus 1, 0 for a column not read; `fast` when they may be. */
  int fast;
  signed char role[PFI_CURVE_FAST_FIELDS];
};

void pfi__curve_rows_free(struct rows *r);

/* Puts a row's point into its job's curve: curve index ci, or -1 to look
 * it up by the name's hash hv (a new job gets a curve). Returns 0, 1 when
 * the job has another GPU count on an earlier row, 2 when it has the cap
 * already (r->last is then the job's curve), or PFI_ENOMEM. */
int pfi__curve_row_apply(struct rows *r, struct pfi_curveset *set, long ci,
                         const char *job, size_t jlen, uint64_t hv,
                         const struct pfi_point *pt, double gpus,
                         struct pfi_error *err);

/* Reads the data rows from csv's position to its end into set, in order.
 * Returns 0 at the end of the input or the first row's error, as a
 * negative code. */
int pfi__curve_read_rows(struct rows *r, struct pfi_curveset *set,
                         struct pfi_csv *csv, struct pfi_error *err);

/* The number of threads to read csv's data rows with (curve_threads.c). */
int pfi__curve_threads_for(const struct pfi_csv *csv, int threads);

/* Reads csv's data rows on two threads, with the result and every error
 * of one thread (curve_threads.c). */
int pfi__curve_read_rows_2(struct rows *r, struct pfi_curveset *set,
                           struct pfi_csv *csv, struct pfi_error *err);

#endif
