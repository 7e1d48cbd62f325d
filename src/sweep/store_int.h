/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store's parts (store.c: schema, open, meta; store_write.c: the
 * write path; store_read.c: the iterators; store_db.c: the tables of
 * dbtable.h): the handle and the helpers they share. Only these files and
 * store_vfs.c call SQLite. */
#ifndef PFI_SWEEP_STORE_INT_H
#define PFI_SWEEP_STORE_INT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/store.h"

/* Bumped when the schema changes incompatibly: the schema new stores get.
 * 2: the samples of a run at one instant packed in one row (store.h);
 * 1: a row per GPU and instant, a column per field (still read and
 * written in its own layout). */
#define PFI_STORE_SCHEMA 2
#define PFI_STORE_SCHEMA_MIN 1

enum {
  ST_SAMPLE,
  ST_SAMPLE_GET,
  ST_SAMPLE_SET,
  ST_STEP,
  ST_STEP_SEQ,
  ST_BEGIN,
  ST_COMMIT,
  ST_EVENT,
  ST_RUN_BEGIN,
  ST_RUN_END,
  ST__COUNT
};

/* A sample added to a schema-2 store and not yet written: the rows are
 * written when the batch commits (or a reader of this connection needs
 * them), one per run and instant. */
struct pend {
  int64_t run;
  double t;
  uint32_t gpu, valid;
  size_t seq; /* order of addition: of two for one GPU, the later wins */
  double v[PFI_FIELD__COUNT];
};

/* Pending samples written at once within a batch beyond this many. */
#define PEND_MAX 65536

struct pfi_store {
  sqlite3 *db;
  char *path;
  int in_batch;
  int lock_fd;
  int schema; /* the file's: 1 or 2 */
  sqlite3_stmt *stmt[ST__COUNT];
  struct pend *pend;     /* schema 2: samples not yet written */
  size_t npend, cappend; /* ... how many, room */
  int pend_sorted;       /* pend[] in (run, t, gpu) order, no GPU twice */
  unsigned char *buf;    /* one row's data, being built */
  size_t capbuf;
  int64_t step_run, step_seq; /* schema 2: the last step's run and seq */
};

/* A failure of the storage (no room, an I/O error, no permission) is a
 * run-time failure, PFI_EIO; anything else SQLite says is PFI_EDB (not a
 * store, a corrupt one). */
int pfi__store_sqlite_code(int src);
/* Runs `sql` on db (the file at `path`): 0, or the error with its message. */
int pfi__store_exec_db(sqlite3 *db, const char *path, const char *sql,
                       struct pfi_error *err);
/* The same on the store's connection. */
int pfi__store_exec(struct pfi_store *st, const char *sql,
                    struct pfi_error *err);
/* Binds v, or NULL when it is not finite. */
void pfi__store_bind_opt(sqlite3_stmt *q, int i, double v);
/* Schema 2: writes the samples added and not yet written (store_write.c). */
int pfi__store_flush_samples(struct pfi_store *st, struct pfi_error *err);
/* The located error of a samples row whose data cannot be read. */
int pfi__store_blob_error(const char *path, int64_t run, double t, size_t off,
                          size_t n, const char *why, struct pfi_error *err);

#endif
