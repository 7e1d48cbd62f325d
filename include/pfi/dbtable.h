/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Tables of C structs in an SQLite file, for the records of the controller
 * (records.h) and of pfid: a table is described by its columns (name,
 * type, offset in the struct), and the SQL (schema, insert, update, query)
 * is generated from that description (src/sweep/dbtable_sql.c) and run by
 * src/sweep/store_db.c; the store's files (src/sweep/store*.c) are the only
 * ones of the library that call SQLite: no statement or handle leaves them.
 *
 * Values: a REAL column holding NaN or inf is stored as NULL and read back
 * as NaN; an INT or TEXT NULL reads back as 0 or "". A TEXT column is a
 * char array of `size` bytes in the struct, always NUL-terminated on read
 * (longer text is cut). An AUTO column is an int64_t "INTEGER PRIMARY KEY"
 * that SQLite numbers when inserted.
 */
#ifndef PFI_DBTABLE_H
#define PFI_DBTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"

enum pfi_col_type {
  PFI_COL_TEXT, /* char[size] */
  PFI_COL_REAL, /* double */
  PFI_COL_INT,  /* int64_t */
  PFI_COL_AUTO, /* int64_t, the table's INTEGER PRIMARY KEY, numbered */
};

/* Column flags. */
#define PFI_COL_KEY 1u     /* part of the primary key (or UNIQUE with AUTO) */
#define PFI_COL_NOTNULL 2u /* NOT NULL */

struct pfi_col {
  const char *name;
  enum pfi_col_type type;
  size_t off;  /* offsetof() in the row struct */
  size_t size; /* TEXT: the array's size */
  unsigned flags;
};

struct pfi_table {
  const char *name;
  const struct pfi_col *col;
  size_t ncol;
  size_t row_size; /* sizeof the row struct */
};

struct pfi_db;

/*
 * Opens the database at `path` with the given tables (at most 8). `create`
 * 1: read-write, the file and the missing tables created; 0: read-only,
 * the tables must exist. `kind`, when not NULL, is the value of key 'kind'
 * in table `meta_table` (created with it): a file of another kind is
 * PFI_EDB naming it. `durable` 1 syncs every commit (FULL), 0 lets SQLite
 * skip the fsync (records of an emulated run); WAL journal either way, so
 * that a reader never waits for the writer. Two processes may share the
 * file (a busy wait of 5 s before an error). Opened for writing, a table
 * the file already has gains the columns of its description it lacks (a
 * file written before they were added; its rows read them as NULL), in
 * the same transaction as the tables created; a missing column that is
 * part of the key or NOT NULL cannot be added, and is PFI_EDB naming the
 * file, the table and the column.
 */
int pfi_db_open(struct pfi_db **db, const char *path,
                const struct pfi_table *const *tables, size_t ntables,
                const char *meta_table, const char *kind, int create,
                int durable, struct pfi_error *err);
void pfi_db_close(struct pfi_db *db);

/* One transaction around several writes. */
int pfi_db_begin(struct pfi_db *db, struct pfi_error *err);
int pfi_db_commit(struct pfi_db *db, struct pfi_error *err);
void pfi_db_rollback(struct pfi_db *db);

/* Inserts `row` (INSERT OR REPLACE: a row with the same key is replaced).
 * An AUTO column is numbered by SQLite (its value in `row` is ignored). */
int pfi_db_put(struct pfi_db *db, const struct pfi_table *t, const void *row,
               struct pfi_error *err);

/* A condition of pfi_db_each(): column `col` equal to (PFI_DB_EQ) or above
 * (PFI_DB_GT) the text or number given. */
enum pfi_db_op { PFI_DB_EQ, PFI_DB_GT };
struct pfi_db_cond {
  const char *col;
  enum pfi_db_op op;
  const char *text; /* for a TEXT column */
  double num;       /* for the others */
};

/*
 * Calls fn(ctx, row) for each row matching every condition (at most 4),
 * ordered by the key columns (the AUTO column when there is one), at most
 * `limit` rows (0: all). `row` points to a struct of t->row_size bytes
 * filled from the row, valid during the call. fn returns 0 to go on or a
 * negative code to stop (returned). Returns 0, PFI_EDB, PFI_EINVAL (an
 * unknown column), PFI_ENOMEM or fn's code.
 */
int pfi_db_each(struct pfi_db *db, const struct pfi_table *t,
                const struct pfi_db_cond *cond, size_t ncond, size_t limit,
                int (*fn)(void *ctx, const void *row), void *ctx,
                struct pfi_error *err);
/* As pfi_db_each(), but the last `limit` rows of that order (the newest
 * of a table numbered by an AUTO column), still in that order; limit 0:
 * every row, as pfi_db_each(). */
int pfi_db_each_last(struct pfi_db *db, const struct pfi_table *t,
                     const struct pfi_db_cond *cond, size_t ncond, size_t limit,
                     int (*fn)(void *ctx, const void *row), void *ctx,
                     struct pfi_error *err);

#endif
