/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The SQL text of dbtable.h's tables, generated from their column
 * descriptions (store_db.c runs it). Names come from the library's own
 * descriptions, never from input, and a value is always a bound parameter.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Appends s; *o becomes n (and stays) when it does not fit. */
static void cat(char *buf, size_t n, size_t *o, const char *s) {
  size_t k = strlen(s);
  if (*o < n && *o + k < n) {
    memcpy(buf + *o, s, k + 1);
    *o += k;
  } else {
    *o = n;
  }
}

const struct pfi_col *pfi__db_col(const struct pfi_table *t, const char *name) {
  for (size_t c = 0; c < t->ncol; c++)
    if (!strcmp(t->col[c].name, name))
      return &t->col[c];
  return NULL;
}

static const char *const col_type[] = {"TEXT", "REAL", "INTEGER",
                                       "INTEGER PRIMARY KEY"};

int pfi__db_ddl(const struct pfi_table *t, char *buf, size_t n) {
  size_t o = 0, nkey = 0;
  int autokey = 0;
  cat(buf, n, &o, "CREATE TABLE IF NOT EXISTS ");
  cat(buf, n, &o, t->name);
  cat(buf, n, &o, "(");
  for (size_t i = 0; i < t->ncol; i++) {
    const struct pfi_col *c = &t->col[i];
    cat(buf, n, &o, i ? ", " : "");
    cat(buf, n, &o, c->name);
    cat(buf, n, &o, " ");
    cat(buf, n, &o, col_type[c->type]);
    cat(buf, n, &o, c->flags & PFI_COL_NOTNULL ? " NOT NULL" : "");
    nkey += (c->flags & PFI_COL_KEY) != 0;
    autokey |= c->type == PFI_COL_AUTO;
  }
  /* With an AUTO column, the key columns are a UNIQUE constraint. */
  if (nkey) {
    cat(buf, n, &o, autokey ? ", UNIQUE(" : ", PRIMARY KEY(");
    for (size_t i = 0, k = 0; i < t->ncol; i++)
      if (t->col[i].flags & PFI_COL_KEY) {
        cat(buf, n, &o, k++ ? ", " : "");
        cat(buf, n, &o, t->col[i].name);
      }
    cat(buf, n, &o, ")");
  }
  cat(buf, n, &o, ");");
  return o < n ? 0 : PFI_EINVAL;
}

int pfi__db_add_col_sql(const struct pfi_table *t, const struct pfi_col *c,
                        char *buf, size_t n) {
  size_t o = 0;
  cat(buf, n, &o, "ALTER TABLE ");
  cat(buf, n, &o, t->name);
  cat(buf, n, &o, " ADD COLUMN ");
  cat(buf, n, &o, c->name);
  cat(buf, n, &o, " ");
  cat(buf, n, &o, col_type[c->type]);
  cat(buf, n, &o, ";");
  return o < n ? 0 : PFI_EINVAL;
}

/* The columns are named: a column added to an older file's table
 * (store_db.c) comes after the ones it had, wherever the description puts
 * it. */
int pfi__db_put_sql(const struct pfi_table *t, char *buf, size_t n) {
  size_t o = 0;
  cat(buf, n, &o, "INSERT OR REPLACE INTO ");
  cat(buf, n, &o, t->name);
  cat(buf, n, &o, "(");
  for (size_t c = 0; c < t->ncol; c++) {
    cat(buf, n, &o, c ? ", " : "");
    cat(buf, n, &o, t->col[c].name);
  }
  cat(buf, n, &o, ") VALUES(");
  for (size_t c = 0; c < t->ncol; c++)
    cat(buf, n, &o, c ? ",?" : "?");
  cat(buf, n, &o, ")");
  return o < n ? 0 : PFI_EINVAL;
}

/* " ORDER BY" the AUTO column, else the key columns in their order; each
 * " DESC" when desc. */
static void order_by(const struct pfi_table *t, int desc, char *buf, size_t n,
                     size_t *o) {
  const char *sep = " ORDER BY ";
  for (size_t i = 0; i < t->ncol; i++)
    if (t->col[i].type == PFI_COL_AUTO) {
      cat(buf, n, o, sep);
      cat(buf, n, o, t->col[i].name);
      cat(buf, n, o, desc ? " DESC" : "");
      return;
    }
  for (size_t i = 0; i < t->ncol; i++)
    if (t->col[i].flags & PFI_COL_KEY) {
      cat(buf, n, o, sep);
      cat(buf, n, o, t->col[i].name);
      cat(buf, n, o, desc ? " DESC" : "");
      sep = ", ";
    }
}

static void col_list(const struct pfi_table *t, char *buf, size_t n,
                     size_t *o) {
  for (size_t i = 0; i < t->ncol; i++) {
    cat(buf, n, o, i ? ", " : "");
    cat(buf, n, o, t->col[i].name);
  }
}

int pfi__db_select_sql(const struct pfi_table *t, const struct pfi_db_cond *c,
                       size_t nc, size_t limit, int last, char *buf, size_t n,
                       struct pfi_error *err) {
  size_t o = 0;
  if (nc > 4)
    return pfi_error_set(err, PFI_EINVAL, "%s: too many conditions", t->name);
  /* The last rows: the first ones of the reverse order, put back in order
   * by the outer query. */
  last = last && limit;
  if (last) {
    cat(buf, n, &o, "SELECT ");
    col_list(t, buf, n, &o);
    cat(buf, n, &o, " FROM (");
  }
  cat(buf, n, &o, "SELECT ");
  col_list(t, buf, n, &o);
  cat(buf, n, &o, " FROM ");
  cat(buf, n, &o, t->name);
  cat(buf, n, &o, " WHERE 1");
  for (size_t i = 0; i < nc; i++) {
    if (!pfi__db_col(t, c[i].col))
      return pfi_error_set(err, PFI_EINVAL, "%s: no column %s", t->name,
                           c[i].col);
    cat(buf, n, &o, " AND ");
    cat(buf, n, &o, c[i].col);
    cat(buf, n, &o, c[i].op == PFI_DB_GT ? ">?" : "=?");
  }
  order_by(t, last, buf, n, &o);
  char lim[32];
  snprintf(lim, sizeof lim, " LIMIT %zu", limit);
  cat(buf, n, &o, limit ? lim : "");
  if (last) {
    cat(buf, n, &o, ")");
    order_by(t, 0, buf, n, &o);
  }
  if (o >= n)
    return pfi_error_set(err, PFI_EINVAL, "%s: query too long", t->name);
  return 0;
}

int pfi__db_meta_sql(const char *meta, const char *kind, char *buf, size_t n) {
  int k = snprintf(buf, n,
                   "CREATE TABLE IF NOT EXISTS %s(key TEXT PRIMARY KEY, value "
                   "TEXT); INSERT OR IGNORE INTO %s VALUES('kind', '%s');",
                   meta, meta, kind);
  return k >= 0 && (size_t)k < n ? 0 : PFI_EINVAL;
}

int pfi__db_kind_sql(const char *meta, char *buf, size_t n) {
  int k = snprintf(buf, n, "SELECT value FROM %s WHERE key='kind'", meta);
  return k >= 0 && (size_t)k < n ? 0 : PFI_EINVAL;
}
