/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The tables of structs of dbtable.h (the records of the controller and of
 * pfid): the SQL text is generated from the column descriptions in
 * dbtable_sql.c; here it runs. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store_int.h"

#define DB_TABLES 8

struct pfi_db {
  sqlite3 *db;
  char path[256];
  const struct pfi_table *t[DB_TABLES];
  sqlite3_stmt *put[DB_TABLES];
  size_t nt;
};

static int db_fail(struct pfi_db *d, struct pfi_error *err, const char *what) {
  int src = d->db ? sqlite3_errcode(d->db) : SQLITE_CANTOPEN;
  return pfi_error_set(err, src ? pfi__store_sqlite_code(src) : PFI_EDB,
                       "%s: %s: %s", d->path, what,
                       d->db ? sqlite3_errmsg(d->db) : "cannot open");
}

static int db_exec(struct pfi_db *d, const char *sql, struct pfi_error *err) {
  return pfi__store_exec_db(d->db, d->path, sql, err);
}

/* Gives the file's table t the columns of its description that it lacks:
 * a table written by an older pfi, before the column was added. Its rows
 * read NULL there, which only a nullable column that is not part of the
 * key can take; a missing key or NOT NULL column is an error naming it. */
static int add_missing_cols(struct pfi_db *d, const struct pfi_table *t,
                            struct pfi_error *err) {
  unsigned char *have = calloc(t->ncol ? t->ncol : 1, 1);
  if (!have)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  sqlite3_stmt *q = NULL;
  int rc = 0, src = sqlite3_prepare_v2(
                  d->db, "SELECT name FROM pragma_table_info(?)", -1, &q, NULL);
  if (src == SQLITE_OK &&
      (src = sqlite3_bind_text(q, 1, t->name, -1, SQLITE_STATIC)) == SQLITE_OK)
    while ((src = sqlite3_step(q)) == SQLITE_ROW) {
      const unsigned char *name = sqlite3_column_text(q, 0);
      const struct pfi_col *c =
          name ? pfi__db_col(t, (const char *)name) : NULL;
      if (c)
        have[c - t->col] = 1;
    }
  if (src != SQLITE_DONE)
    rc = db_fail(d, err, "table columns");
  sqlite3_finalize(q);
  char sql[PFI__DB_SQL_MAX];
  for (size_t i = 0; rc == 0 && i < t->ncol; i++) {
    const struct pfi_col *c = &t->col[i];
    if (have[i])
      continue;
    if (c->type == PFI_COL_AUTO || (c->flags & (PFI_COL_KEY | PFI_COL_NOTNULL)))
      rc = pfi_error_set(err, PFI_EDB,
                         "%s: table %s has no column %s, and a key or NOT "
                         "NULL column cannot be added to its rows",
                         d->path, t->name, c->name);
    else if (pfi__db_add_col_sql(t, c, sql, sizeof sql) < 0)
      rc = pfi_error_set(err, PFI_EINVAL, "%s: table %s: column %s too long",
                         d->path, t->name, c->name);
    else
      rc = db_exec(d, sql, err);
  }
  free(have);
  return rc;
}

void pfi_db_close(struct pfi_db *d) {
  if (!d)
    return;
  for (size_t i = 0; i < d->nt; i++)
    sqlite3_finalize(d->put[i]);
  sqlite3_close(d->db);
  free(d);
}

int pfi_db_open(struct pfi_db **out, const char *path,
                const struct pfi_table *const *tables, size_t ntables,
                const char *meta_table, const char *kind, int create,
                int durable, struct pfi_error *err) {
  *out = NULL;
  if (ntables > DB_TABLES)
    return pfi_error_set(err, PFI_EINVAL, "%s: too many tables", path);
  struct pfi_db *d = calloc(1, sizeof *d);
  if (!d)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  snprintf(d->path, sizeof d->path, "%s", path);
  int rc = 0, txn = 0;
  char sql[PFI__DB_SQL_MAX], put[PFI__DB_SQL_MAX];
  if (sqlite3_open_v2(path, &d->db,
                      create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                             : SQLITE_OPEN_READONLY,
                      NULL) != SQLITE_OK) {
    rc = db_fail(d, err, "cannot open");
    goto fail;
  }
  sqlite3_busy_timeout(d->db, 5000);
  if (meta_table && kind) {
    sqlite3_stmt *q = NULL;
    const unsigned char *v = NULL;
    int ok = (!create ||
              (pfi__db_meta_sql(meta_table, kind, sql, sizeof sql),
               sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK)) &&
             (pfi__db_kind_sql(meta_table, sql, sizeof sql),
              sqlite3_prepare_v2(d->db, sql, -1, &q, NULL) == SQLITE_OK) &&
             sqlite3_step(q) == SQLITE_ROW && (v = sqlite3_column_text(q, 0)) &&
             !strcmp((const char *)v, kind);
    sqlite3_finalize(q);
    if (!ok) {
      rc = pfi_error_set(err, PFI_EDB, "%s: not a %s database", path, kind);
      goto fail;
    }
  }
  if (create &&
      ((rc = pfi__store_exec_db_waiting(d->db, d->path,
                                        "PRAGMA journal_mode=WAL;", err)) < 0 ||
       (rc = db_exec(
            d, durable ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=OFF;",
            err)) < 0))
    goto fail;
  /* The tables are created, and an older file's given their new columns,
   * in one write transaction: of two writers opening the file together
   * (two pfid on one records file), the second waits (the busy timeout)
   * and then finds the tables as the first left them, rather than adding
   * a column the first has just added. */
  if (create) {
    if ((rc = pfi__store_exec_db_waiting(d->db, d->path, "BEGIN IMMEDIATE;",
                                         err)) < 0)
      goto fail;
    txn = 1;
  }
  for (size_t i = 0; i < ntables; i++) {
    d->t[d->nt++] = tables[i];
    if (!create)
      continue;
    if (pfi__db_ddl(tables[i], sql, sizeof sql) < 0 ||
        pfi__db_put_sql(tables[i], put, sizeof put) < 0) {
      rc = pfi_error_set(err, PFI_EINVAL, "%s: table %s: too many columns",
                         path, tables[i]->name);
      goto fail;
    }
    if ((rc = db_exec(d, sql, err)) < 0 ||
        (rc = add_missing_cols(d, tables[i], err)) < 0)
      goto fail;
    if (sqlite3_prepare_v3(d->db, put, -1, SQLITE_PREPARE_PERSISTENT,
                           &d->put[i], NULL) != SQLITE_OK) {
      rc = db_fail(d, err, "prepare");
      goto fail;
    }
  }
  if (txn && (rc = db_exec(d, "COMMIT;", err)) < 0)
    goto fail;
  *out = d;
  return 0;
fail:
  if (txn)
    sqlite3_exec(d->db, "ROLLBACK;", NULL, NULL, NULL);
  pfi_db_close(d);
  return rc;
}

int pfi_db_begin(struct pfi_db *d, struct pfi_error *err) {
  return db_exec(d, "BEGIN", err);
}

int pfi_db_commit(struct pfi_db *d, struct pfi_error *err) {
  return db_exec(d, "COMMIT", err);
}

void pfi_db_rollback(struct pfi_db *d) {
  sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
}

int pfi_db_put(struct pfi_db *d, const struct pfi_table *t, const void *row,
               struct pfi_error *err) {
  int k = -1;
  for (size_t i = 0; i < d->nt; i++)
    if (d->t[i] == t && d->put[i])
      k = (int)i;
  if (k < 0)
    return pfi_error_set(err, PFI_EINVAL, "%s: table %s not open for writing",
                         d->path, t->name);
  sqlite3_stmt *q = d->put[k];
  sqlite3_reset(q);
  for (size_t c = 0; c < t->ncol; c++) {
    const struct pfi_col *col = &t->col[c];
    const char *p = (const char *)row + col->off;
    int i = (int)c + 1;
    double r;
    int64_t v;
    if (col->type == PFI_COL_TEXT) {
      sqlite3_bind_text(q, i, p, (int)strnlen(p, col->size), SQLITE_TRANSIENT);
    } else if (col->type == PFI_COL_REAL) {
      memcpy(&r, p, sizeof r);
      pfi__store_bind_opt(q, i, r);
    } else if (col->type == PFI_COL_INT) {
      memcpy(&v, p, sizeof v);
      sqlite3_bind_int64(q, i, v);
    } else {
      sqlite3_bind_null(q, i); /* AUTO: numbered by SQLite */
    }
  }
  int src = sqlite3_step(q);
  sqlite3_reset(q);
  return src == SQLITE_DONE ? 0 : db_fail(d, err, "write");
}

static int db_each(struct pfi_db *d, const struct pfi_table *t,
                   const struct pfi_db_cond *cond, size_t ncond, size_t limit,
                   int last, int (*fn)(void *ctx, const void *row), void *ctx,
                   struct pfi_error *err);

int pfi_db_each(struct pfi_db *d, const struct pfi_table *t,
                const struct pfi_db_cond *cond, size_t ncond, size_t limit,
                int (*fn)(void *ctx, const void *row), void *ctx,
                struct pfi_error *err) {
  return db_each(d, t, cond, ncond, limit, 0, fn, ctx, err);
}

int pfi_db_each_last(struct pfi_db *d, const struct pfi_table *t,
                     const struct pfi_db_cond *cond, size_t ncond,
                     size_t limit, int (*fn)(void *ctx, const void *row),
                     void *ctx, struct pfi_error *err) {
  return db_each(d, t, cond, ncond, limit, 1, fn, ctx, err);
}

static int db_each(struct pfi_db *d, const struct pfi_table *t,
                   const struct pfi_db_cond *cond, size_t ncond, size_t limit,
                   int last, int (*fn)(void *ctx, const void *row), void *ctx,
                   struct pfi_error *err) {
  char sql[PFI__DB_SQL_MAX];
  int rc =
      pfi__db_select_sql(t, cond, ncond, limit, last, sql, sizeof sql, err);
  if (rc < 0)
    return rc;
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(d->db, sql, -1, &q, NULL) != SQLITE_OK) {
    sqlite3_finalize(q);
    return db_fail(d, err, "query");
  }
  for (size_t i = 0; i < ncond; i++) {
    enum pfi_col_type ty = pfi__db_col(t, cond[i].col)->type;
    if (ty == PFI_COL_TEXT)
      sqlite3_bind_text(q, (int)i + 1, cond[i].text ? cond[i].text : "", -1,
                        SQLITE_TRANSIENT);
    else if (ty == PFI_COL_REAL)
      sqlite3_bind_double(q, (int)i + 1, cond[i].num);
    else
      sqlite3_bind_int64(q, (int)i + 1, (sqlite3_int64)cond[i].num);
  }
  char *row = malloc(t->row_size ? t->row_size : 1);
  if (!row) {
    sqlite3_finalize(q);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  int src;
  while ((src = sqlite3_step(q)) == SQLITE_ROW) {
    memset(row, 0, t->row_size);
    for (size_t c = 0; c < t->ncol; c++) {
      const struct pfi_col *col = &t->col[c];
      char *p = row + col->off;
      int i = (int)c, null = sqlite3_column_type(q, i) == SQLITE_NULL;
      if (col->type == PFI_COL_TEXT) {
        const unsigned char *s = sqlite3_column_text(q, i);
        snprintf(p, col->size, "%s", s ? (const char *)s : "");
      } else if (col->type == PFI_COL_REAL) {
        double v = null ? NAN : sqlite3_column_double(q, i);
        memcpy(p, &v, sizeof v);
      } else {
        int64_t v = null ? 0 : sqlite3_column_int64(q, i);
        memcpy(p, &v, sizeof v);
      }
    }
    if ((rc = fn(ctx, row)) < 0)
      break;
  }
  if (rc == 0 && src != SQLITE_DONE)
    rc = db_fail(d, err, "read");
  free(row);
  sqlite3_finalize(q);
  return rc;
}
