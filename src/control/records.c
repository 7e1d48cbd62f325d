/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Decision records in SQLite (records.h). This file is the only one that
 * touches SQLite for the records; the handle never leaves it.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/records.h"

struct pfi_records {
  sqlite3 *db;
  sqlite3_stmt *ins, *upd;
  char path[256];
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS pfi_records_meta(key TEXT PRIMARY KEY, "
    "value TEXT);"
    "INSERT OR IGNORE INTO pfi_records_meta VALUES('kind','pfi-records');"
    "INSERT OR IGNORE INTO pfi_records_meta VALUES('version','1');"
    "CREATE TABLE IF NOT EXISTS records("
    " run TEXT NOT NULL, seq INTEGER NOT NULL, t_s REAL, event TEXT,"
    " target_w REAL, job TEXT, family TEXT, phase TEXT, cap_req_w REAL,"
    " cap_enf_w REAL, draw_w REAL, pfi REAL, pfi_lo REAL, pfi_hi REAL,"
    " tput_before REAL, tput_pred REAL, tput_after REAL, reason TEXT,"
    " max_loss REAL, protect INTEGER, shortfall_w REAL, complete INTEGER,"
    " PRIMARY KEY(run, seq));";

static int db_err(struct pfi_records *r, struct pfi_error *err,
                  const char *what) {
  return pfi_error_set(err, PFI_EDB, "%s: %s: %s", r->path, what,
                       r->db ? sqlite3_errmsg(r->db) : "cannot open");
}

void pfi_records_close(struct pfi_records *r) {
  if (!r)
    return;
  sqlite3_finalize(r->ins);
  sqlite3_finalize(r->upd);
  sqlite3_close(r->db);
  free(r);
}

int pfi_records_open(struct pfi_records **out, const char *path, int create,
                     int durable, struct pfi_error *err) {
  *out = NULL;
  struct pfi_records *r = calloc(1, sizeof *r);
  if (!r)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  snprintf(r->path, sizeof r->path, "%s", path);
  int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                     : SQLITE_OPEN_READONLY;
  int rc = 0;
  if (sqlite3_open_v2(path, &r->db, flags, NULL) != SQLITE_OK) {
    rc = db_err(r, err, "cannot open");
    goto fail;
  }
  sqlite3_busy_timeout(r->db, 5000);
  if (create) {
    if (sqlite3_exec(r->db, schema, NULL, NULL, NULL) != SQLITE_OK) {
      rc = db_err(r, err, "not a records database");
      goto fail;
    }
    sqlite3_exec(
        r->db, durable ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=OFF;",
        NULL, NULL, NULL);
    if (sqlite3_prepare_v2(
            r->db,
            "INSERT OR REPLACE INTO records VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
            "?,?,?,?,?,?,?,?)",
            -1, &r->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db,
                           "UPDATE records SET cap_enf_w=?, draw_w=?, "
                           "tput_after=?, complete=1 WHERE run=? AND seq=?",
                           -1, &r->upd, NULL) != SQLITE_OK) {
      rc = db_err(r, err, "prepare");
      goto fail;
    }
  } else {
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(r->db,
                                "SELECT value FROM pfi_records_meta WHERE "
                                "key='kind'",
                                -1, &st, NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW &&
             !strcmp((const char *)sqlite3_column_text(st, 0), "pfi-records");
    sqlite3_finalize(st);
    if (!ok) {
      rc = pfi_error_set(err, PFI_EDB, "%s: not a records database", path);
      goto fail;
    }
  }
  *out = r;
  return 0;
fail:
  pfi_records_close(r);
  return rc;
}

static void bind_real(sqlite3_stmt *st, int i, double v) {
  if (isfinite(v))
    sqlite3_bind_double(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

int pfi_records_period(struct pfi_records *r, const char *run,
                       const struct pfi_ctl_output *out,
                       struct pfi_error *err) {
  if (out->nrec == 0 && out->ndone == 0)
    return 0;
  if (sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
    return db_err(r, err, "begin");
  for (size_t i = 0; i < out->nrec; i++) {
    const struct pfi_ctl_record *x = &out->rec[i];
    sqlite3_stmt *s = r->ins;
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)x->seq);
    bind_real(s, 3, x->t_s);
    sqlite3_bind_text(s, 4, x->event, -1, SQLITE_TRANSIENT);
    bind_real(s, 5, x->target_w);
    sqlite3_bind_text(s, 6, x->job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 7, x->family, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 8, x->phase, -1, SQLITE_TRANSIENT);
    bind_real(s, 9, x->cap_req_w);
    bind_real(s, 10, x->cap_enf_w);
    bind_real(s, 11, x->draw_w);
    bind_real(s, 12, x->pfi);
    bind_real(s, 13, x->pfi_lo);
    bind_real(s, 14, x->pfi_hi);
    bind_real(s, 15, x->tput_before);
    bind_real(s, 16, x->tput_pred);
    bind_real(s, 17, x->tput_after);
    sqlite3_bind_text(s, 18, pfi_ctl_reason_name(x->reason), -1, SQLITE_STATIC);
    bind_real(s, 19, x->max_loss);
    sqlite3_bind_int(s, 20, x->protect);
    bind_real(s, 21, x->shortfall_w);
    sqlite3_bind_int(s, 22, x->complete);
    if (sqlite3_step(s) != SQLITE_DONE)
      goto fail;
  }
  for (size_t i = 0; i < out->ndone; i++) {
    const struct pfi_ctl_record *x = &out->done[i];
    sqlite3_stmt *s = r->upd;
    sqlite3_reset(s);
    bind_real(s, 1, x->cap_enf_w);
    bind_real(s, 2, x->draw_w);
    bind_real(s, 3, x->tput_after);
    sqlite3_bind_text(s, 4, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)x->seq);
    if (sqlite3_step(s) != SQLITE_DONE)
      goto fail;
  }
  if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    goto fail;
  return 0;
fail:;
  int rc = db_err(r, err, "write");
  sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static double col_real(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL
             ? NAN
             : sqlite3_column_double(st, i);
}

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t n) {
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(buf, n, "%s", t ? (const char *)t : "");
}

int pfi_records_each(struct pfi_records *r, const char *event, const char *job,
                     int (*fn)(void *ctx, const struct pfi_records_row *row),
                     void *ctx, struct pfi_error *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(r->db,
                         "SELECT * FROM records WHERE (?1 IS NULL OR event=?1)"
                         " AND (?2 IS NULL OR job=?2) ORDER BY run, seq",
                         -1, &st, NULL) != SQLITE_OK)
    return db_err(r, err, "query");
  if (event)
    sqlite3_bind_text(st, 1, event, -1, SQLITE_TRANSIENT);
  if (job)
    sqlite3_bind_text(st, 2, job, -1, SQLITE_TRANSIENT);
  int rc = 0, s;
  while ((s = sqlite3_step(st)) == SQLITE_ROW) {
    struct pfi_records_row row;
    struct pfi_ctl_record *x = &row.rec;
    memset(&row, 0, sizeof row);
    col_text(st, 0, row.run, sizeof row.run);
    x->seq = (uint64_t)sqlite3_column_int64(st, 1);
    x->t_s = col_real(st, 2);
    col_text(st, 3, x->event, sizeof x->event);
    x->target_w = col_real(st, 4);
    col_text(st, 5, x->job, sizeof x->job);
    col_text(st, 6, x->family, sizeof x->family);
    col_text(st, 7, x->phase, sizeof x->phase);
    x->cap_req_w = col_real(st, 8);
    x->cap_enf_w = col_real(st, 9);
    x->draw_w = col_real(st, 10);
    x->pfi = col_real(st, 11);
    x->pfi_lo = col_real(st, 12);
    x->pfi_hi = col_real(st, 13);
    x->tput_before = col_real(st, 14);
    x->tput_pred = col_real(st, 15);
    x->tput_after = col_real(st, 16);
    char reason[32];
    col_text(st, 17, reason, sizeof reason);
    x->reason = pfi_ctl_reason_parse(reason);
    x->max_loss = col_real(st, 18);
    x->protect = sqlite3_column_int(st, 19);
    x->shortfall_w = col_real(st, 20);
    x->complete = sqlite3_column_int(st, 21);
    if ((rc = fn(ctx, &row)) < 0)
      break;
  }
  if (rc == 0 && s != SQLITE_DONE)
    rc = db_err(r, err, "read");
  sqlite3_finalize(st);
  return rc;
}
