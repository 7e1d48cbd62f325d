/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal helpers shared by the sweep module's source files. */
#ifndef PFI_SWEEP_INTERNAL_H
#define PFI_SWEEP_INTERNAL_H

#include <time.h>

#include <stdint.h>

#include "pfi/error.h"
#include "pfi/store.h"

#include "ledger.h"

/* Fills `err` with SQLite's message for a failed call. Returns PFI_EDB. */
int pfi__store_dberr(struct pfi_store *st, struct pfi_error *err,
                     const char *what);

/* store_file.c: the UTC time now as 2026-01-31T12:00:00Z; the samples
 * table's CREATE (schema 1 or 2) and schema-1 INSERT text (malloc'd, NULL
 * when out of memory); 1 when PATH-wal is absent or empty;
 * "file:PATH?immutable=1" escaped (malloc'd). */
#include <stddef.h>
/* The sweep lock's descriptor (-1: not held), for store_file.c. */
int *pfi__store_lock_fd(struct pfi_store *st);
void pfi__store_utc_now(char *buf, size_t n);
char *pfi__store_samples_ddl(int schema);
char *pfi__store_samples_insert_sql(void);
int pfi__store_wal_empty(const char *path);
char *pfi__store_immutable_uri(const char *path);
/* The schema (without samples), and the queries of the run and sample
 * iterators (pfi_store_runs_open's `which`, samples_open's `gpu`). */
extern const char *const pfi__store_schema_sql;
void pfi__store_runs_sql(unsigned which, int schema, char *sql, size_t n);
void pfi__store_samples_sql(int gpu, int schema, char *sql, size_t n);

/* dbtable_sql.c: the SQL text of dbtable.h's tables, generated from their
 * columns into buf (n bytes). Each returns 0, or PFI_EINVAL when the text
 * does not fit or names an unknown column (select_sql sets err). */
#include "pfi/dbtable.h"
#define PFI__DB_SQL_MAX 4096
const struct pfi_col *pfi__db_col(const struct pfi_table *t, const char *name);
int pfi__db_ddl(const struct pfi_table *t, char *buf, size_t n);
int pfi__db_put_sql(const struct pfi_table *t, char *buf, size_t n);
/* ALTER TABLE adding column c of t (its type, no constraint). */
int pfi__db_add_col_sql(const struct pfi_table *t, const struct pfi_col *c,
                        char *buf, size_t n);
/* last 1: the last `limit` rows of the order (still in that order). */
int pfi__db_select_sql(const struct pfi_table *t, const struct pfi_db_cond *c,
                       size_t nc, size_t limit, int last, char *buf, size_t n,
                       struct pfi_error *err);
int pfi__db_meta_sql(const char *meta, const char *kind, char *buf, size_t n);
int pfi__db_kind_sql(const char *meta, char *buf, size_t n);

/* The clocks of sweeps, profiles and the samples journal, in seconds:
 * monotonic (intervals) and real (timestamps). */
static inline double pfi__mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static inline double pfi__wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
