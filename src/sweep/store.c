/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store: SQLite in WAL mode; its schema, opening and meta rows
 * (the write path is store_write.c, the iterators store_read.c, the tables
 * of dbtable.h store_db.c). */
#include "pfi/store.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "pfi/version.h"
#include "store_int.h"

int pfi__store_dberr(struct pfi_store *st, struct pfi_error *err,
                     const char *what) {
  return pfi_error_set(err, PFI_EDB, "%s: %s: %s",
                       st && st->path ? st->path : "store", what,
                       st && st->db ? sqlite3_errmsg(st->db) : "no database");
}

int pfi__store_sqlite_code(int src) {
  switch (src & 0xff) {
  case SQLITE_FULL:
  case SQLITE_IOERR:
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
    return PFI_EIO;
  default:
    return PFI_EDB;
  }
}

int pfi__store_exec_db(sqlite3 *db, const char *path, const char *sql,
                       struct pfi_error *err) {
  char *msg = NULL;
  int src = sqlite3_exec(db, sql, NULL, NULL, &msg);
  int rc = src == SQLITE_OK
               ? 0
               : pfi_error_set(err, pfi__store_sqlite_code(src), "%s: %s", path,
                               msg ? msg : sqlite3_errmsg(db));
  sqlite3_free(msg);
  return rc;
}

int pfi__store_exec(struct pfi_store *st, const char *sql,
                    struct pfi_error *err) {
  return pfi__store_exec_db(st->db, st->path, sql, err);
}

int pfi__store_exec_db_waiting(sqlite3 *db, const char *path, const char *sql,
                               struct pfi_error *err) {
  for (int waited_ms = 0;; waited_ms += 10) {
    char *msg = NULL;
    int src = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (src == SQLITE_OK || (src & 0xff) != SQLITE_BUSY ||
        waited_ms >= 10000) {
      int rc = src == SQLITE_OK
                   ? 0
                   : pfi_error_set(err, pfi__store_sqlite_code(src), "%s: %s",
                                   path, msg ? msg : sqlite3_errmsg(db));
      sqlite3_free(msg);
      return rc;
    }
    sqlite3_free(msg);
    usleep(10000);
  }
}

static int prepare(struct pfi_store *st, int which, const char *sql,
                   struct pfi_error *err) {
  if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                         &st->stmt[which], NULL) != SQLITE_OK)
    return pfi__store_dberr(st, err, "prepare");
  return 0;
}

static int first_read(sqlite3 *db) {
  sqlite3_stmt *q = NULL;
  int src = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &q,
                               NULL);
  if (src == SQLITE_OK)
    src = sqlite3_step(q);
  sqlite3_finalize(q);
  return src;
}

/* The schema of the store open on db: its meta row, 0 when the store is
 * new (no meta table yet, or no row). */
static int stored_schema(sqlite3 *db) {
  sqlite3_stmt *q = NULL;
  int v = 0;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema'", -1,
                         &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  return v;
}

/* The -wal checkpointed at about 2 MiB, as with SQLite's default of 1000
 * pages of 2 KiB. */
static int wal_pages(struct pfi_store *st, struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int ps = 0;
  if (sqlite3_prepare_v2(st->db, "PRAGMA page_size", -1, &q, NULL) ==
          SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    ps = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  if (ps < 512)
    return 0;
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA wal_autocheckpoint=%d;",
           (2048 * 1000) / ps);
  return pfi__store_exec(st, sql, err);
}

int pfi_store_open(struct pfi_store **out, const char *path, unsigned flags,
                   struct pfi_error *err) {
  int rc = 0;
  char *ddl = NULL, *ins = NULL;
  *out = NULL;
  struct pfi_store *st = calloc(1, sizeof *st);
  if (!st)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  st->lock_fd = -1;
  st->jfd = -1;
  st->path = strdup(path);
  if (!st->path) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  int oflags = (flags & PFI_STORE_READONLY)
                   ? SQLITE_OPEN_READONLY
                   : SQLITE_OPEN_READWRITE |
                         ((flags & PFI_STORE_CREATE) ? SQLITE_OPEN_CREATE : 0);
  if (!(flags & PFI_STORE_CREATE)) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
      rc = pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
      goto out;
    }
  }
  if (sqlite3_open_v2(path, &st->db, oflags, NULL) != SQLITE_OK) {
    rc = pfi_error_set(err, PFI_EIO, "%s: cannot open: %s", path,
                       st->db ? sqlite3_errmsg(st->db) : "out of memory");
    goto out;
  }
  sqlite3_busy_timeout(st->db, 10000);
  sqlite3_extended_result_codes(st->db, 0);
  /* A file that is not a database fails on the first read. */
  {
    int src = first_read(st->db);
    if (src != SQLITE_ROW && (flags & PFI_STORE_READONLY) &&
        (src == SQLITE_READONLY || src == SQLITE_CANTOPEN)) {
      /* A WAL store on read-only storage: SQLite cannot create the -shm
       * file it reads through. Nothing can write such a store, so it is
       * read as immutable, but only without a -wal file: immutable reads
       * ignore the log, and commits not yet checkpointed into the database
       * (the cap ledger of a killed sweep) would be silently missed. */
      char *uri =
          pfi__store_wal_empty(path) ? pfi__store_immutable_uri(path) : NULL;
      sqlite3 *db2 = NULL;
      if (uri &&
          sqlite3_open_v2(uri, &db2, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                          NULL) == SQLITE_OK &&
          (src = first_read(db2)) == SQLITE_ROW) {
        sqlite3_close(st->db);
        st->db = db2;
        db2 = NULL;
      }
      sqlite3_close(db2);
      free(uri);
    }
    if (src != SQLITE_ROW) {
      rc = pfi_error_set(err, pfi__store_sqlite_code(src),
                         "%s: not a trace store: %s", path,
                         sqlite3_errmsg(st->db));
      goto out;
    }
  }
  /* Another program's database is never touched: tables without pfi's
   * meta table mean it is not ours. */
  {
    sqlite3_stmt *q = NULL;
    int tables = 0, has_meta = 0;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT count(*), coalesce(sum(name='meta'),0) FROM "
                           "sqlite_master WHERE type='table'",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
      tables = sqlite3_column_int(q, 0);
      has_meta = sqlite3_column_int(q, 1);
    }
    sqlite3_finalize(q);
    if (tables == 0 && !(flags & PFI_STORE_CREATE)) {
      /* An empty file (or an empty database) is not a store, and a command
       * that only opens stores must not make it one. */
      rc = pfi_error_set(err, PFI_EDB,
                         "%s: not a pfi trace store (an empty file or "
                         "database)",
                         path);
      goto out;
    }
    if (tables > 0 && !has_meta) {
      rc = pfi_error_set(err, PFI_EDB,
                         "%s: an SQLite database of another program, not a "
                         "pfi trace store",
                         path);
      goto out;
    }
  }
  if (!(flags & PFI_STORE_READONLY)) {
    /* WAL lets `pfi trace` read while a sweep writes; synchronous=NORMAL
     * keeps every commit atomic, and durable across a crash of pfi (it is
     * in the -wal file when the commit returns); the -wal is synced at
     * checkpoints, so a power loss can drop the commits since the last
     * one, never part of a commit (docs/sweep.md; the cap ledger is synced
     * on its own). */
    /* Pages of 16 KiB for a new store (an existing one keeps its own):
     * intervals are committed to the samples journal, and the database is
     * written a few hundred rows a transaction, where large pages write
     * fewer bytes a row (docs/sweep.md). The -wal is checkpointed at about
     * 2 MiB whatever the page size. */
    if ((rc = pfi__store_exec_db_waiting(
             st->db, st->path,
             "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; "
             "PRAGMA synchronous=NORMAL;",
             err)) < 0 ||
        (rc = wal_pages(st, err)) < 0 ||
        (rc = pfi__store_exec(st, "BEGIN IMMEDIATE;", err)) < 0)
      goto out;
    /* An existing store keeps its layout; a new one gets the present. */
    int old = stored_schema(st->db);
    st->schema = old > 0 ? old : PFI_STORE_SCHEMA;
    ddl = pfi__store_samples_ddl(st->schema);
    ins = st->schema >= 2 ? strdup("INSERT INTO samples VALUES(?,?,?,?,?) ON "
                                   "CONFLICT(run_id, t_s) DO NOTHING")
                          : pfi__store_samples_insert_sql();
    if (!ddl || !ins) {
      pfi__store_exec(st, "ROLLBACK;", NULL);
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    if ((rc = pfi__store_exec(st, pfi__store_schema_sql, err)) < 0 ||
        (rc = pfi__store_exec(st, ddl, err)) < 0) {
      pfi__store_exec(st, "ROLLBACK;", NULL);
      goto out;
    }
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta VALUES('schema','%d');"
             "INSERT OR IGNORE INTO meta VALUES('pfi_version','%s');",
             st->schema, PFI_VERSION_STRING);
    if ((rc = pfi__store_exec(st, sql, err)) < 0) {
      pfi__store_exec(st, "ROLLBACK;", NULL);
      goto out;
    }
    char created[32];
    pfi__store_utc_now(created, sizeof created);
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta VALUES('created_utc','%s');", created);
    if ((rc = pfi__store_exec(st, sql, err)) < 0 ||
        (rc = pfi__store_exec(st, "COMMIT;", err)) < 0) {
      pfi__store_exec(st, "ROLLBACK;", NULL);
      goto out;
    }
    if ((rc = prepare(st, ST_SAMPLE, ins, err)) < 0 ||
        (st->schema >= 2 &&
         ((rc = prepare(st, ST_SAMPLE_GET,
                        "SELECT data FROM samples WHERE run_id=? AND t_s=?",
                        err)) < 0 ||
          (rc = prepare(st, ST_SAMPLE_SET,
                        "UPDATE samples SET gpus=?, gpu_first=?, data=? "
                        "WHERE run_id=? AND t_s=?",
                        err)) < 0)) ||
        (rc = prepare(st, ST_STEP,
                      st->schema >= 2
                          ? "INSERT INTO steps VALUES(?,?,?,?,?,?,?,?,?)"
                          : "INSERT INTO steps VALUES(?,?,?,?,?,?,?,?)",
                      err)) < 0 ||
        (st->schema >= 2 &&
         (rc = prepare(st, ST_STEP_SEQ,
                       "SELECT coalesce(max(seq), 0) FROM steps WHERE "
                       "run_id=?",
                       err)) < 0) ||
        (rc = prepare(st, ST_BEGIN, "BEGIN IMMEDIATE", err)) < 0 ||
        (rc = prepare(st, ST_COMMIT, "COMMIT", err)) < 0 ||
        (rc = prepare(st, ST_EVENT,
                      "INSERT INTO cap_events(run_id,gpu,action,mw,t_s,utc) "
                      "VALUES(?,?,?,?,?,?)",
                      err)) < 0 ||
        (rc = prepare(st, ST_RUN_BEGIN,
                      "INSERT INTO runs(job,arch,task,cap_w,gpus,source,state,"
                      "t_start_s,t_end_s,exit_status,command,started_utc) "
                      "VALUES(?,?,?,?,?,?,?,?,NULL,NULL,?,?)",
                      err)) < 0 ||
        (rc = prepare(st, ST_RUN_END,
                      "UPDATE runs SET state=?, t_end_s=?, exit_status=? "
                      "WHERE id=?",
                      err)) < 0 ||
        (st->schema >= 2 &&
         (rc = prepare(st, ST_STEP_IGNORE,
                       "INSERT OR IGNORE INTO steps VALUES(?,?,?,?,?,?,?,?,?)",
                       err)) < 0) ||
        (rc = prepare(st, ST_NODE,
                      "INSERT OR REPLACE INTO node_power VALUES(?,?,?,?,?,?)",
                      err)) < 0)
      goto out;
  }
  /* A schema check that also rejects SQLite files of other programs. */
  {
    char v[16];
    int g = pfi_store_meta_get(st, "schema", v, sizeof v, err);
    if (g < 0) {
      rc = pfi_error_set(err, PFI_EDB, "%s: not a pfi trace store", path);
      goto out;
    }
    int sv = g ? atoi(v) : 0;
    if (g == 0 || sv < PFI_STORE_SCHEMA_MIN) {
      rc = pfi_error_set(err, PFI_EDB,
                         "%s: not a pfi trace store (schema %s, expected %d)",
                         path, g ? v : "missing", PFI_STORE_SCHEMA);
      goto out;
    }
    if (sv > PFI_STORE_SCHEMA) {
      rc = pfi_error_set(err, PFI_EDB,
                         "%s: a trace store of schema %d, newer than this pfi "
                         "reads (%d to %d): read it with the pfi that wrote it",
                         path, sv, PFI_STORE_SCHEMA_MIN, PFI_STORE_SCHEMA);
      goto out;
    }
    st->schema = sv;
  }
  st->pend_sorted = 1;
  /* The samples journal: a writer merges what a killed writer left, a
   * reader reads the frames not yet merged. */
  if (st->schema >= 2 &&
      (rc = pfi__journal_open(st, (flags & PFI_STORE_READONLY) != 0, err)) < 0)
    goto out;
  *out = st;
  st = NULL;
out:
  free(ddl);
  free(ins);
  pfi_store_close(st);
  return rc;
}

void pfi_store_close(struct pfi_store *st) {
  if (!st)
    return;
  if (st->in_batch)
    pfi_store_rollback(st);
  pfi__journal_close(st);
  for (int i = 0; i < ST__COUNT; i++)
    sqlite3_finalize(st->stmt[i]);
  sqlite3_close(st->db);
  pfi__store_unlock(st);
  free(st->pend);
  free(st->buf);
  free(st->jpath);
  free(st->jbuf);
  free(st->psteps);
  free(st->pnodes);
  free(st->fbuf);
  free(st->jpend);
  free(st->path);
  free(st);
}

const char *pfi_store_path(const struct pfi_store *st) { return st->path; }

int *pfi__store_lock_fd(struct pfi_store *st) { return &st->lock_fd; }

int pfi__store_locked(const struct pfi_store *st) { return st->lock_fd >= 0; }

int pfi_store_meta_set(struct pfi_store *st, const char *key, const char *value,
                       struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int rc = st->stmt[ST_SAMPLE] ? pfi__store_sql(st, err) : 0;
  if (rc < 0)
    return rc;
  if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO meta VALUES(?,?)", -1,
                         &q, NULL) != SQLITE_OK ||
      sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
      sqlite3_bind_text(q, 2, value, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
      sqlite3_step(q) != SQLITE_DONE)
    rc = pfi__store_dberr(st, err, "meta");
  sqlite3_finalize(q);
  return rc;
}

int pfi_store_meta_get(struct pfi_store *st, const char *key, char *buf,
                       size_t n, struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int rc;
  if (sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key=?", -1, &q,
                         NULL) != SQLITE_OK ||
      sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT) != SQLITE_OK) {
    rc = pfi__store_dberr(st, err, "meta");
    goto out;
  }
  int s = sqlite3_step(q);
  if (s == SQLITE_ROW) {
    const unsigned char *v = sqlite3_column_text(q, 0);
    if (n)
      snprintf(buf, n, "%s", v ? (const char *)v : "");
    rc = 1;
  } else if (s == SQLITE_DONE) {
    rc = 0;
  } else {
    rc = pfi__store_dberr(st, err, "meta");
  }
out:
  sqlite3_finalize(q);
  return rc;
}
