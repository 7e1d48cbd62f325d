/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store: SQLite in WAL mode, prepared statements, batches; and
 * the tables of structs of dbtable.h. The only file that calls SQLite. */
#include "pfi/store.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pfi/dbtable.h"
#include "pfi/version.h"

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

int pfi__store_dberr(struct pfi_store *st, struct pfi_error *err,
                     const char *what) {
  return pfi_error_set(err, PFI_EDB, "%s: %s: %s",
                       st && st->path ? st->path : "store", what,
                       st && st->db ? sqlite3_errmsg(st->db) : "no database");
}

/* A failure of the storage (no room, an I/O error, no permission) is a
 * run-time failure, PFI_EIO; anything else SQLite says is PFI_EDB (not a
 * store, a corrupt one). */
static int sqlite_code(int src) {
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

/* Runs `sql` on db (the file at `path`): 0, or the error with its message. */
static int exec_db(sqlite3 *db, const char *path, const char *sql,
                   struct pfi_error *err) {
  char *msg = NULL;
  int src = sqlite3_exec(db, sql, NULL, NULL, &msg);
  int rc = src == SQLITE_OK
               ? 0
               : pfi_error_set(err, sqlite_code(src), "%s: %s", path,
                               msg ? msg : sqlite3_errmsg(db));
  sqlite3_free(msg);
  return rc;
}

static int exec_sql(struct pfi_store *st, const char *sql,
                    struct pfi_error *err) {
  return exec_db(st->db, st->path, sql, err);
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

int pfi_store_open(struct pfi_store **out, const char *path, unsigned flags,
                   struct pfi_error *err) {
  int rc = 0;
  char *ddl = NULL, *ins = NULL;
  *out = NULL;
  struct pfi_store *st = calloc(1, sizeof *st);
  if (!st)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  st->lock_fd = -1;
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
      rc = pfi_error_set(err, sqlite_code(src), "%s: not a trace store: %s",
                         path, sqlite3_errmsg(st->db));
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
     * keeps every commit atomic and consistent across a crash of pfi (only
     * a power loss can drop the newest commits). */
    /* Pages of 2 KiB for a new store (an existing one keeps its own): a
     * commit rewrites every page it touches, and a sampling interval's
     * rows fill little more than one. */
    if ((rc = exec_sql(st,
                       "PRAGMA page_size=2048; PRAGMA journal_mode=WAL; "
                       "PRAGMA synchronous=NORMAL;",
                       err)) < 0 ||
        (rc = exec_sql(st, "BEGIN IMMEDIATE;", err)) < 0)
      goto out;
    /* An existing store keeps its layout; a new one gets the present. */
    int old = stored_schema(st->db);
    st->schema = old > 0 ? old : PFI_STORE_SCHEMA;
    ddl = pfi__store_samples_ddl(st->schema);
    ins = st->schema >= 2 ? strdup("INSERT INTO samples VALUES(?,?,?,?,?) ON "
                                   "CONFLICT(run_id, t_s) DO NOTHING")
                          : pfi__store_samples_insert_sql();
    if (!ddl || !ins) {
      exec_sql(st, "ROLLBACK;", NULL);
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    if ((rc = exec_sql(st, pfi__store_schema_sql, err)) < 0 ||
        (rc = exec_sql(st, ddl, err)) < 0) {
      exec_sql(st, "ROLLBACK;", NULL);
      goto out;
    }
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta VALUES('schema','%d');"
             "INSERT OR IGNORE INTO meta VALUES('pfi_version','%s');",
             st->schema, PFI_VERSION_STRING);
    if ((rc = exec_sql(st, sql, err)) < 0) {
      exec_sql(st, "ROLLBACK;", NULL);
      goto out;
    }
    char created[32];
    pfi__store_utc_now(created, sizeof created);
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta VALUES('created_utc','%s');", created);
    if ((rc = exec_sql(st, sql, err)) < 0 ||
        (rc = exec_sql(st, "COMMIT;", err)) < 0) {
      exec_sql(st, "ROLLBACK;", NULL);
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
  for (int i = 0; i < ST__COUNT; i++)
    sqlite3_finalize(st->stmt[i]);
  sqlite3_close(st->db);
  pfi__store_unlock(st);
  free(st->pend);
  free(st->buf);
  free(st->path);
  free(st);
}

const char *pfi_store_path(const struct pfi_store *st) { return st->path; }

int *pfi__store_lock_fd(struct pfi_store *st) { return &st->lock_fd; }

int pfi__store_locked(const struct pfi_store *st) { return st->lock_fd >= 0; }

int pfi_store_meta_set(struct pfi_store *st, const char *key, const char *value,
                       struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int rc = 0;
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

/* Runs a prepared statement of st (or `sql` when it has none, read-only):
 * 0 or the error as exec_sql gives it. */
static int exec_stmt(struct pfi_store *st, int which, const char *sql,
                     struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[which];
  if (!q)
    return exec_sql(st, sql, err);
  int src = sqlite3_step(q);
  int rc = src == SQLITE_DONE ? 0
                              : pfi_error_set(err, sqlite_code(src), "%s: %s",
                                              st->path, sqlite3_errmsg(st->db));
  sqlite3_reset(q);
  return rc;
}

int pfi_store_begin(struct pfi_store *st, struct pfi_error *err) {
  if (st->in_batch)
    return pfi_error_set(err, PFI_ESTATE, "%s: batch already open", st->path);
  int rc = exec_stmt(st, ST_BEGIN, "BEGIN IMMEDIATE;", err);
  if (rc == 0)
    st->in_batch = 1;
  return rc;
}

static int flush_samples(struct pfi_store *st, struct pfi_error *err);

int pfi_store_commit(struct pfi_store *st, struct pfi_error *err) {
  if (!st->in_batch)
    return 0;
  /* A failed write leaves the batch open, for the caller to roll back. */
  int rc = flush_samples(st, err);
  if (rc == 0)
    rc = exec_stmt(st, ST_COMMIT, "COMMIT;", err);
  if (rc == 0)
    st->in_batch = 0;
  return rc;
}

int pfi_store_rollback(struct pfi_store *st) {
  st->npend = 0;
  st->pend_sorted = 1;
  if (!st->in_batch)
    return 0;
  st->in_batch = 0;
  return exec_sql(st, "ROLLBACK;", NULL);
}

static int step_done(struct pfi_store *st, sqlite3_stmt *q,
                     struct pfi_error *err, const char *what) {
  int s = sqlite3_step(q);
  int rc = s == SQLITE_DONE ? 0 : pfi__store_dberr(st, err, what);
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return rc;
}

static void bind_opt(sqlite3_stmt *q, int i, double v) {
  if (isfinite(v))
    sqlite3_bind_double(q, i, v);
  else
    sqlite3_bind_null(q, i);
}

int pfi_store_run_begin(struct pfi_store *st, struct pfi_run_info *in,
                        struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_RUN_BEGIN];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  char utc[32];
  pfi__store_utc_now(utc, sizeof utc);
  sqlite3_bind_text(q, 1, in->job, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 2, in->arch, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 3, in->task, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(q, 4, in->cap_w);
  sqlite3_bind_int(q, 5, (int)in->gpus);
  sqlite3_bind_text(q, 6, in->source, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 7, PFI_RUN_RUNNING, -1, SQLITE_STATIC);
  sqlite3_bind_double(q, 8, in->t_start_s);
  sqlite3_bind_text(q, 9, in->command, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 10, utc, -1, SQLITE_TRANSIENT);
  int rc = step_done(st, q, err, "run");
  if (rc == 0) {
    in->id = sqlite3_last_insert_rowid(st->db);
    snprintf(in->state, sizeof in->state, "%s", PFI_RUN_RUNNING);
  }
  return rc;
}

int pfi_store_run_end(struct pfi_store *st, int64_t run_id, const char *state,
                      double t_end_s, int exit_status, struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_RUN_END];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  sqlite3_bind_text(q, 1, state, -1, SQLITE_TRANSIENT);
  bind_opt(q, 2, t_end_s);
  if (exit_status == -1)
    sqlite3_bind_null(q, 3);
  else
    sqlite3_bind_int(q, 3, exit_status);
  sqlite3_bind_int64(q, 4, run_id);
  return step_done(st, q, err, "run");
}

int pfi_store_run_find_complete(struct pfi_store *st, const char *job,
                                double cap_w, int64_t *run_id,
                                struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int rc;
  if (sqlite3_prepare_v2(st->db,
                         "SELECT id FROM runs WHERE job=? AND abs(cap_w-?)<1e-6"
                         " AND state='complete' ORDER BY id DESC LIMIT 1",
                         -1, &q, NULL) != SQLITE_OK) {
    rc = pfi__store_dberr(st, err, "runs");
    goto out;
  }
  sqlite3_bind_text(q, 1, job, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(q, 2, cap_w);
  int s = sqlite3_step(q);
  if (s == SQLITE_ROW) {
    *run_id = sqlite3_column_int64(q, 0);
    rc = 1;
  } else if (s == SQLITE_DONE) {
    rc = 0;
  } else {
    rc = pfi__store_dberr(st, err, "runs");
  }
out:
  sqlite3_finalize(q);
  return rc;
}

int pfi_store_runs_mark_interrupted(struct pfi_store *st,
                                    struct pfi_error *err) {
  int rc = exec_sql(st,
                    "UPDATE runs SET state='interrupted' WHERE "
                    "state='running';",
                    err);
  return rc < 0 ? rc : sqlite3_changes(st->db);
}

/* ---- schema 2: the samples of an instant in one row ---------------------- */

static int pend_cmp(const void *a, const void *b) {
  const struct pend *x = a, *y = b;
  if (x->run != y->run)
    return x->run < y->run ? -1 : 1;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  if (x->gpu != y->gpu)
    return x->gpu < y->gpu ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

static int buf_room(struct pfi_store *st, size_t n, struct pfi_error *err) {
  if (n <= st->capbuf)
    return 0;
  size_t nc = st->capbuf ? st->capbuf : 4096;
  while (nc < n)
    nc *= 2;
  unsigned char *nb = realloc(st->buf, nc);
  if (!nb)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  st->buf = nb;
  st->capbuf = nc;
  return 0;
}

/* The located error of a row whose data cannot be read. */
static int blob_error(const char *path, int64_t run, double t, size_t off,
                      size_t n, const char *why, struct pfi_error *err) {
  return pfi_error_setloc(err, PFI_EPARSE, path, 0, 0,
                          "samples of run %lld at t_s %.17g: byte %zu of the "
                          "%zu-byte row: %s (a damaged store: copy the runs "
                          "still readable with `pfi trace export`, or sweep "
                          "again)",
                          (long long)run, t, off, n, why);
}

/* Encodes pending samples [a, b) (one run and instant, sorted by GPU then
 * order of addition) into st->buf, the later of two for one GPU kept.
 * Sets *len, *gpus, *first. */
static int encode_row(struct pfi_store *st, const struct pend *a,
                      const struct pend *b, size_t *len, long long *gpus,
                      uint32_t *first, struct pfi_error *err) {
  size_t need = 0;
  for (const struct pend *p = a; p < b; p++)
    need += pfi_store_blob_entry_size(p->valid);
  int rc = buf_room(st, need ? need : 1, err);
  if (rc < 0)
    return rc;
  size_t o = 0;
  long long n = 0;
  for (const struct pend *p = a; p < b; p++) {
    if (p + 1 < b && p[1].gpu == p->gpu)
      continue; /* a later sample of this GPU replaces it */
    o += pfi_store_blob_put(st->buf + o, p->gpu, p->valid, p->v);
    n++;
  }
  *len = o;
  *gpus = n;
  *first = a->gpu;
  return 0;
}

/* The row of (run, t) exists: its entries and the pending ones [a, b)
 * merged, the pending winning for a GPU in both. */
static int merge_row(struct pfi_store *st, const struct pend *a,
                     const struct pend *b, struct pfi_error *err) {
  sqlite3_stmt *g = st->stmt[ST_SAMPLE_GET];
  struct pend *all = NULL;
  int rc = 0;
  sqlite3_bind_int64(g, 1, a->run);
  sqlite3_bind_double(g, 2, a->t);
  int r = sqlite3_step(g);
  if (r != SQLITE_ROW) {
    rc = pfi__store_dberr(st, err, "sample");
    goto out;
  }
  const unsigned char *old = sqlite3_column_blob(g, 0);
  size_t n = (size_t)sqlite3_column_bytes(g, 0);
  size_t cap = (size_t)(b - a) + n / 8 + 1, k = 0;
  all = malloc(cap * sizeof *all);
  if (!all) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  /* The stored entries first, as additions before every pending one. */
  size_t off = 0;
  int64_t prev = -1;
  struct pfi_store_sample smp;
  const char *why = NULL;
  while ((r = pfi_store_blob_next(old, n, &off, prev, &smp, &why)) == 1) {
    struct pend *p = &all[k++];
    p->run = a->run;
    p->t = a->t;
    p->gpu = smp.gpu;
    p->valid = smp.valid;
    p->seq = 0;
    memcpy(p->v, smp.v, sizeof p->v);
    prev = smp.gpu;
  }
  if (r < 0) {
    rc = blob_error(st->path, a->run, a->t, off, n, why, err);
    goto out;
  }
  for (const struct pend *p = a; p < b; p++) {
    all[k] = *p;
    all[k++].seq = p->seq + 1;
  }
  qsort(all, k, sizeof *all, pend_cmp);
  size_t len;
  long long gpus;
  uint32_t first;
  sqlite3_reset(g);
  if ((rc = encode_row(st, all, all + k, &len, &gpus, &first, err)) < 0)
    goto out;
  sqlite3_stmt *u = st->stmt[ST_SAMPLE_SET];
  sqlite3_bind_int64(u, 1, gpus);
  sqlite3_bind_int64(u, 2, first);
  sqlite3_bind_blob(u, 3, st->buf, (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(u, 4, a->run);
  sqlite3_bind_double(u, 5, a->t);
  rc = step_done(st, u, err, "sample");
out:
  sqlite3_reset(g);
  free(all);
  return rc;
}

/* Writes the pending samples: a row per (run, instant), merged into the
 * row already there for that instant if any. */
static int flush_samples(struct pfi_store *st, struct pfi_error *err) {
  if (st->npend == 0)
    return 0;
  if (!st->pend_sorted)
    qsort(st->pend, st->npend, sizeof *st->pend, pend_cmp);
  sqlite3_stmt *q = st->stmt[ST_SAMPLE];
  int rc = 0;
  for (size_t i = 0, j; i < st->npend && rc == 0; i = j) {
    const struct pend *a = &st->pend[i];
    for (j = i + 1;
         j < st->npend && st->pend[j].run == a->run && st->pend[j].t == a->t;
         j++)
      ;
    size_t len;
    long long gpus;
    uint32_t first;
    if ((rc = encode_row(st, a, st->pend + j, &len, &gpus, &first, err)) < 0)
      break;
    if ((size_t)(int)len != len) {
      rc = pfi_error_set(err, PFI_ERANGE,
                         "%s: run %lld: too many GPUs at one instant", st->path,
                         (long long)a->run);
      break;
    }
    sqlite3_bind_int64(q, 1, a->run);
    sqlite3_bind_double(q, 2, a->t);
    sqlite3_bind_int64(q, 3, gpus);
    sqlite3_bind_int64(q, 4, first);
    sqlite3_bind_blob(q, 5, st->buf, (int)len, SQLITE_STATIC);
    int r = sqlite3_step(q);
    sqlite3_reset(q);
    if (r != SQLITE_DONE)
      rc = pfi__store_dberr(st, err, "sample");
    else if (sqlite3_changes(st->db) == 0)
      rc = merge_row(st, a, st->pend + j, err);
  }
  st->npend = 0;
  st->pend_sorted = 1;
  return rc;
}

static int add_sample_packed(struct pfi_store *st, int64_t run_id, unsigned gpu,
                             const struct pfi_sample *s,
                             struct pfi_error *err) {
  if (isnan(s->t_s))
    return pfi_error_set(err, PFI_EINVAL,
                         "%s: run %lld, GPU %u: sample time not a number",
                         st->path, (long long)run_id, gpu);
  if (st->npend == st->cappend) {
    size_t nc = st->cappend ? 2 * st->cappend : 64;
    struct pend *np = realloc(st->pend, nc * sizeof *np);
    if (!np)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    st->pend = np;
    st->cappend = nc;
  }
  struct pend *p = &st->pend[st->npend];
  p->run = run_id;
  p->t = s->t_s;
  p->gpu = gpu;
  p->seq = st->npend;
  uint32_t valid = 0;
  for (int f = 0; f < PFI_FIELD__COUNT; f++) {
    /* A field flagged valid but not finite is stored as not valid: the
     * store never holds NaN. */
    if (pfi_sample_has(s, (enum pfi_field)f) && isfinite(s->v[f])) {
      p->v[f] = s->v[f];
      valid |= 1u << f;
    } else {
      p->v[f] = 0;
    }
  }
  p->valid = valid;
  /* In order as a sweep adds them: no sort. A repeat of the last GPU is
   * in order too (the row keeps the later). */
  if (st->npend && st->pend_sorted && pend_cmp(p - 1, p) > 0)
    st->pend_sorted = 0;
  st->npend++;
  if (st->in_batch)
    return st->npend >= PEND_MAX ? flush_samples(st, err) : 0;
  /* Outside a batch a sample is committed at once, as any other add. */
  int rc = exec_sql(st, "BEGIN IMMEDIATE;", err);
  if (rc < 0) {
    st->npend = 0;
    st->pend_sorted = 1;
    return rc;
  }
  if ((rc = flush_samples(st, err)) < 0 ||
      (rc = exec_sql(st, "COMMIT;", err)) < 0)
    exec_sql(st, "ROLLBACK;", NULL);
  return rc;
}

int pfi_store_add_sample(struct pfi_store *st, int64_t run_id, unsigned gpu,
                         const struct pfi_sample *s, struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_SAMPLE];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  if (st->schema >= 2)
    return add_sample_packed(st, run_id, gpu, s, err);
  sqlite3_bind_int64(q, 1, run_id);
  sqlite3_bind_int(q, 2, (int)gpu);
  sqlite3_bind_double(q, 3, s->t_s);
  uint32_t valid = 0;
  for (int f = 0; f < PFI_FIELD__COUNT; f++) {
    /* A field flagged valid but not finite is stored as not valid: the
     * store never holds NaN. */
    if (pfi_sample_has(s, (enum pfi_field)f) && isfinite(s->v[f])) {
      sqlite3_bind_double(q, 5 + f, s->v[f]);
      valid |= 1u << f;
    } else {
      sqlite3_bind_null(q, 5 + f);
    }
  }
  sqlite3_bind_int64(q, 4, valid);
  return step_done(st, q, err, "sample");
}

int pfi_store_add_step(struct pfi_store *st, int64_t run_id,
                       const struct pfi_step *s, struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_STEP];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  int k = 0; /* the columns after t_s are one further in schema 2 */
  if (st->schema >= 2) {
    /* Steps of a run are numbered in order of addition, after those the
     * run already has (looked up once per run). */
    if (st->step_run != run_id) {
      sqlite3_stmt *m = st->stmt[ST_STEP_SEQ];
      sqlite3_bind_int64(m, 1, run_id);
      int r = sqlite3_step(m);
      int64_t last = sqlite3_column_int64(m, 0);
      sqlite3_reset(m);
      if (r != SQLITE_ROW)
        return pfi__store_dberr(st, err, "step");
      st->step_run = run_id;
      st->step_seq = last;
    }
    sqlite3_bind_int64(q, 3, ++st->step_seq);
    k = 1;
  }
  sqlite3_bind_int64(q, 1, run_id);
  sqlite3_bind_double(q, 2, isfinite(s->t_s) ? s->t_s : 0);
  bind_opt(q, 3 + k, s->job_t_s);
  bind_opt(q, 4 + k, s->tokens);
  bind_opt(q, 5 + k, s->tokens_per_s);
  bind_opt(q, 6 + k, s->step);
  bind_opt(q, 7 + k, s->loss);
  bind_opt(q, 8 + k, s->mfu);
  return step_done(st, q, err, "step");
}

int pfi_store_cap_event(struct pfi_store *st, int64_t run_id, unsigned gpu,
                        const char *action, uint32_t mw, double t_s,
                        struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_EVENT];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  char utc[32];
  pfi__store_utc_now(utc, sizeof utc);
  if (run_id > 0)
    sqlite3_bind_int64(q, 1, run_id);
  else
    sqlite3_bind_null(q, 1);
  sqlite3_bind_int(q, 2, (int)gpu);
  sqlite3_bind_text(q, 3, action, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(q, 4, mw);
  bind_opt(q, 5, t_s);
  sqlite3_bind_text(q, 6, utc, -1, SQLITE_TRANSIENT);
  return step_done(st, q, err, "cap event");
}

int pfi_store_caps_record(struct pfi_store *st,
                          const struct pfi_saved_cap *caps, size_t n,
                          struct pfi_error *err) {
  if (st->in_batch)
    return pfi_error_set(err, PFI_ESTATE,
                         "%s: caps must be recorded outside a batch", st->path);
  sqlite3_stmt *q = NULL;
  int rc = pfi_store_begin(st, err);
  if (rc < 0)
    return rc;
  char utc[32];
  pfi__store_utc_now(utc, sizeof utc);
  if (sqlite3_prepare_v2(st->db,
                         "INSERT OR IGNORE INTO cap_ledger VALUES(?,?,?,?,?,?)",
                         -1, &q, NULL) != SQLITE_OK) {
    rc = pfi__store_dberr(st, err, "cap ledger");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    sqlite3_bind_text(q, 1, caps[i].backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(q, 2, (int)caps[i].gpu);
    sqlite3_bind_text(q, 3, caps[i].params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 4, caps[i].uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 5, caps[i].cap_mw);
    sqlite3_bind_text(q, 6, utc, -1, SQLITE_TRANSIENT);
    if ((rc = step_done(st, q, err, "cap ledger")) < 0)
      goto out;
    /* Only a newly recorded cap is an event; an older entry wins. */
    if (sqlite3_changes(st->db) > 0 &&
        (rc = pfi_store_cap_event(st, 0, caps[i].gpu, "record", caps[i].cap_mw,
                                  NAN, err)) < 0)
      goto out;
  }
  /* The ledger is what puts a GPU back after a crash or a power loss: its
   * commit is synced (whatever the samples use), then checkpointed into
   * the main database file, so that a copy of that file without its -wal
   * has the ledger too. */
  exec_sql(st, "PRAGMA synchronous=FULL;", NULL);
  rc = pfi_store_commit(st, err);
  exec_sql(st, "PRAGMA synchronous=NORMAL;", NULL);
  /* A reader's old snapshot can keep the checkpoint from completing:
   * the ledger is then committed, synced, in the -wal only, and the next
   * ledger write or pfi_store_caps_sync checkpoints it. */
  if (rc == 0)
    pfi_store_caps_sync(st, NULL);
out:
  sqlite3_finalize(q);
  if (rc < 0)
    pfi_store_rollback(st);
  return rc;
}

int pfi_store_caps_sync(struct pfi_store *st, struct pfi_error *err) {
  if (st->in_batch)
    return pfi_error_set(err, PFI_ESTATE,
                         "%s: the ledger is synced outside a batch", st->path);
  int log = -1, done = -1;
  int src = sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_FULL,
                                      &log, &done);
  if (src == SQLITE_OK && log >= 0 && done < log)
    src = SQLITE_BUSY;
  if (src != SQLITE_OK)
    return pfi_error_set(err, PFI_EDB,
                         "%s: cannot checkpoint the cap ledger into the "
                         "database file: %s",
                         st->path,
                         src == SQLITE_BUSY ? "a reader holds an old snapshot"
                                            : sqlite3_errmsg(st->db));
  return 0;
}

int pfi_store_caps_pending(struct pfi_store *st, struct pfi_saved_cap **out,
                           size_t *n, struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  struct pfi_saved_cap *v = NULL;
  size_t k = 0, cap = 0;
  int rc = 0;
  *out = NULL;
  *n = 0;
  if (sqlite3_prepare_v2(st->db,
                         "SELECT backend, gpu, params, uuid, cap_mw FROM "
                         "cap_ledger ORDER BY backend, gpu",
                         -1, &q, NULL) != SQLITE_OK) {
    rc = pfi__store_dberr(st, err, "cap ledger");
    goto out;
  }
  int s;
  while ((s = sqlite3_step(q)) == SQLITE_ROW) {
    if (k == cap) {
      size_t nc = cap ? 2 * cap : 8;
      struct pfi_saved_cap *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      v = nv;
      cap = nc;
    }
    struct pfi_saved_cap *c = &v[k++];
    memset(c, 0, sizeof *c);
    const unsigned char *t;
    if ((t = sqlite3_column_text(q, 0)))
      snprintf(c->backend, sizeof c->backend, "%s", (const char *)t);
    c->gpu = (unsigned)sqlite3_column_int(q, 1);
    if ((t = sqlite3_column_text(q, 2)))
      snprintf(c->params, sizeof c->params, "%s", (const char *)t);
    if ((t = sqlite3_column_text(q, 3)))
      snprintf(c->uuid, sizeof c->uuid, "%s", (const char *)t);
    c->cap_mw = (uint32_t)sqlite3_column_int64(q, 4);
  }
  if (s != SQLITE_DONE) {
    rc = pfi__store_dberr(st, err, "cap ledger");
    goto out;
  }
  *out = v;
  *n = k;
  v = NULL;
out:
  free(v);
  sqlite3_finalize(q);
  return rc;
}

int pfi_store_caps_clear(struct pfi_store *st, const char *backend,
                         unsigned gpu, struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int rc = 0;
  if (sqlite3_prepare_v2(st->db,
                         "DELETE FROM cap_ledger WHERE backend=? AND gpu=?", -1,
                         &q, NULL) != SQLITE_OK ||
      sqlite3_bind_text(q, 1, backend, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
      sqlite3_bind_int(q, 2, (int)gpu) != SQLITE_OK ||
      sqlite3_step(q) != SQLITE_DONE)
    rc = pfi__store_dberr(st, err, "cap ledger");
  sqlite3_finalize(q);
  return rc;
}

/* ---- reading ------------------------------------------------------------ */

enum { IT_RUNS, IT_SAMPLES, IT_STEPS, IT_NODE };

struct pfi_store_iter {
  struct pfi_store *st;
  sqlite3_stmt *q;
  int kind;
  unsigned flags;
  const char *what;
  /* Schema-2 samples: the GPU asked for (an index, or PFI_STORE_ALL_GPUS
   * and PFI_STORE_FIRST_GPU until the first row resolves it), and the row
   * being read: its run, time, data, position, entries read and stated. */
  int64_t gpu;
  int64_t run;
  double t;
  const unsigned char *b;
  size_t n, off;
  int64_t prev;
  long long got, want;
  int in_row;
};

static int iter_open(struct pfi_store *st, int kind, const char *sql,
                     const char *what, struct pfi_store_iter **it,
                     struct pfi_error *err) {
  *it = NULL;
  /* This connection's own samples of the open batch are read too. */
  if (st->in_batch && st->npend) {
    int rc = flush_samples(st, err);
    if (rc < 0)
      return rc;
  }
  *it = calloc(1, sizeof **it);
  if (!*it)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  (*it)->st = st;
  (*it)->kind = kind;
  (*it)->what = what;
  if (sqlite3_prepare_v2(st->db, sql, -1, &(*it)->q, NULL) != SQLITE_OK) {
    int rc = pfi__store_dberr(st, err, what);
    pfi_store_iter_close(*it);
    *it = NULL;
    return rc;
  }
  return 0;
}

void pfi_store_iter_close(struct pfi_store_iter *it) {
  if (!it)
    return;
  sqlite3_finalize(it->q);
  free(it);
}

/* One step: 1 with a row, 0 at the end, or the error. */
static int iter_step(struct pfi_store_iter *it, struct pfi_error *err) {
  int r = sqlite3_step(it->q);
  if (r == SQLITE_ROW)
    return 1;
  if (r == SQLITE_DONE)
    return 0;
  return pfi__store_dberr(it->st, err, it->what);
}

static const char *text_or_empty(sqlite3_stmt *q, int col) {
  const unsigned char *t = sqlite3_column_text(q, col);
  return t ? (const char *)t : "";
}

int pfi_store_runs_open(struct pfi_store *st, unsigned which,
                        struct pfi_store_iter **it, struct pfi_error *err) {
  char sql[1024];
  pfi__store_runs_sql(which, st->schema, sql, sizeof sql);
  int rc = iter_open(st, IT_RUNS, sql, "runs", it, err);
  if (rc == 0)
    (*it)->flags = which;
  return rc;
}

int pfi_store_runs_next(struct pfi_store_iter *it, struct pfi_store_run *out,
                        struct pfi_error *err) {
  int rc = iter_step(it, err);
  if (rc <= 0)
    return rc;
  sqlite3_stmt *q = it->q;
  memset(out, 0, sizeof *out);
  out->id = sqlite3_column_int64(q, 0);
  out->job = text_or_empty(q, 1);
  out->arch = text_or_empty(q, 2);
  out->task = text_or_empty(q, 3);
  out->cap_w = sqlite3_column_double(q, 4);
  out->gpus = sqlite3_column_int(q, 5);
  out->source = text_or_empty(q, 6);
  out->state = text_or_empty(q, 7);
  out->has_exit = sqlite3_column_type(q, 8) != SQLITE_NULL;
  out->exit_status = sqlite3_column_int(q, 8);
  out->has_t_start = sqlite3_column_type(q, 9) != SQLITE_NULL;
  out->t_start_s = sqlite3_column_double(q, 9);
  out->has_t_end = sqlite3_column_type(q, 10) != SQLITE_NULL;
  out->t_end_s = sqlite3_column_double(q, 10);
  out->samples = sqlite3_column_int64(q, 11);
  out->steps = sqlite3_column_int64(q, 12);
  return 1;
}

int pfi_store_samples_open(struct pfi_store *st, int64_t run_id, int gpu,
                           struct pfi_store_iter **it, struct pfi_error *err) {
  char sql[2048];
  pfi__store_samples_sql(gpu, st->schema, sql, sizeof sql);
  int rc = iter_open(st, IT_SAMPLES, sql, "samples", it, err);
  if (rc == 0) {
    sqlite3_bind_int64((*it)->q, 1, run_id);
    (*it)->gpu = gpu;
    (*it)->run = run_id;
  }
  return rc;
}

/* Schema 2: the next entry of the rows of the run, of the GPU asked for. */
static int samples_next_packed(struct pfi_store_iter *it,
                               struct pfi_store_sample *out,
                               struct pfi_error *err) {
  sqlite3_stmt *q = it->q;
  for (;;) {
    if (!it->in_row) {
      int rc = iter_step(it, err);
      if (rc <= 0)
        return rc;
      if (it->gpu == PFI_STORE_FIRST_GPU)
        it->gpu = sqlite3_column_int64(q, 3);
      it->t = sqlite3_column_double(q, 0);
      it->b = sqlite3_column_blob(q, 1);
      it->n = (size_t)sqlite3_column_bytes(q, 1);
      it->want = sqlite3_column_int64(q, 2);
      it->off = 0;
      it->prev = -1;
      it->got = 0;
      it->in_row = 1;
    }
    const char *why = NULL;
    int r = pfi_store_blob_next(it->b, it->n, &it->off, it->prev, out, &why);
    if (r < 0)
      return blob_error(it->st->path, it->run, it->t, it->off, it->n, why, err);
    if (r == 0) {
      if (it->got != it->want) {
        char m[96];
        snprintf(m, sizeof m, "%lld GPU entries where the row says %lld",
                 it->got, it->want);
        return blob_error(it->st->path, it->run, it->t, it->off, it->n, m, err);
      }
      it->in_row = 0;
      continue;
    }
    it->prev = out->gpu;
    it->got++;
    if (it->gpu >= 0 && out->gpu != it->gpu) {
      /* Entries ascend: past the one asked for, the row has no more. */
      if (out->gpu > it->gpu)
        it->in_row = 0;
      continue;
    }
    out->run_id = it->run;
    out->t_s = it->t;
    return 1;
  }
}

int pfi_store_samples_next(struct pfi_store_iter *it,
                           struct pfi_store_sample *out,
                           struct pfi_error *err) {
  if (it->st->schema >= 2)
    return samples_next_packed(it, out, err);
  int rc = iter_step(it, err);
  if (rc <= 0)
    return rc;
  sqlite3_stmt *q = it->q;
  out->run_id = sqlite3_column_int64(q, 0);
  out->gpu = (unsigned)sqlite3_column_int(q, 1);
  out->t_s = sqlite3_column_double(q, 2);
  uint32_t valid = (uint32_t)sqlite3_column_int64(q, 3);
  out->valid = 0;
  for (int f = 0; f < PFI_FIELD__COUNT; f++) {
    int ok = (valid >> f) & 1u && sqlite3_column_type(q, 4 + f) != SQLITE_NULL;
    out->v[f] = ok ? sqlite3_column_double(q, 4 + f) : NAN;
    if (ok)
      out->valid |= 1u << f;
  }
  return 1;
}

int pfi_store_steps_open(struct pfi_store *st, int64_t run_id,
                         struct pfi_store_iter **it, struct pfi_error *err) {
  int rc = iter_open(st, IT_STEPS,
                     "SELECT t_s, tokens_per_s FROM steps WHERE run_id = ? AND "
                     "tokens_per_s IS NOT NULL ORDER BY t_s",
                     "steps", it, err);
  if (rc == 0)
    sqlite3_bind_int64((*it)->q, 1, run_id);
  return rc;
}

int pfi_store_steps_next(struct pfi_store_iter *it, struct pfi_store_step *out,
                         struct pfi_error *err) {
  int rc = iter_step(it, err);
  if (rc <= 0)
    return rc;
  out->t_s = sqlite3_column_double(it->q, 0);
  out->tokens_per_s = sqlite3_column_double(it->q, 1);
  return 1;
}

int pfi_store_add_node_power(struct pfi_store *st, int64_t run_id,
                             const struct pfi_node_power *np,
                             struct pfi_error *err) {
  if (!isfinite(np->node_w) || np->node_w < 0 || !np->source)
    return pfi_error_set(err, PFI_EINVAL,
                         "node power: node_w must be finite and >= 0");
  sqlite3_stmt *q = NULL;
  int rc = 0;
  if (sqlite3_prepare_v2(
          st->db, "INSERT OR REPLACE INTO node_power VALUES(?,?,?,?,?,?)", -1,
          &q, NULL) != SQLITE_OK) {
    sqlite3_finalize(q);
    return pfi__store_dberr(st, err, "node power");
  }
  sqlite3_bind_int64(q, 1, run_id);
  sqlite3_bind_double(q, 2, np->t_s);
  if (isfinite(np->gpu_w))
    sqlite3_bind_double(q, 3, np->gpu_w);
  if (isfinite(np->other_w))
    sqlite3_bind_double(q, 4, np->other_w);
  sqlite3_bind_double(q, 5, np->node_w);
  sqlite3_bind_text(q, 6, np->source, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(q) != SQLITE_DONE)
    rc = pfi__store_dberr(st, err, "node power");
  sqlite3_finalize(q);
  return rc;
}

int pfi_store_node_power_open(struct pfi_store *st, int64_t run_id,
                              struct pfi_store_iter **it,
                              struct pfi_error *err) {
  /* A store from before the table (opened read-only, so not migrated)
   * has no node power: an empty iterator. */
  int has = 0;
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(st->db,
                         "SELECT count(*) FROM sqlite_master WHERE "
                         "type='table' AND name='node_power'",
                         -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    has = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  int rc = iter_open(st, IT_NODE,
                     has ? "SELECT t_s, gpu_w, other_w, node_w, source FROM "
                           "node_power WHERE run_id = ? ORDER BY t_s"
                         : "SELECT 0, 0, 0, 0, '' WHERE ? < 0 AND 0",
                     "node power", it, err);
  if (rc == 0)
    sqlite3_bind_int64((*it)->q, 1, run_id);
  return rc;
}

int pfi_store_node_power_next(struct pfi_store_iter *it,
                              struct pfi_node_power *out,
                              struct pfi_error *err) {
  int rc = iter_step(it, err);
  if (rc <= 0)
    return rc;
  sqlite3_stmt *q = it->q;
  out->t_s = sqlite3_column_double(q, 0);
  out->gpu_w = sqlite3_column_type(q, 1) == SQLITE_NULL
                   ? NAN
                   : sqlite3_column_double(q, 1);
  out->other_w = sqlite3_column_type(q, 2) == SQLITE_NULL
                     ? NAN
                     : sqlite3_column_double(q, 2);
  out->node_w = sqlite3_column_double(q, 3);
  out->source = text_or_empty(q, 4);
  return 1;
}

double pfi_store_field_max(struct pfi_store *st, enum pfi_field f) {
  if (st->schema >= 2) {
    /* Every row's entries; a row that cannot be read adds nothing (the
     * samples' readers say what is wrong with it). */
    double c = NAN;
    sqlite3_stmt *q = NULL;
    if ((st->in_batch && st->npend && flush_samples(st, NULL) < 0) ||
        sqlite3_prepare_v2(st->db, "SELECT data FROM samples", -1, &q, NULL) !=
            SQLITE_OK) {
      sqlite3_finalize(q);
      return c;
    }
    while (sqlite3_step(q) == SQLITE_ROW) {
      const unsigned char *b = sqlite3_column_blob(q, 0);
      size_t n = (size_t)sqlite3_column_bytes(q, 0), off = 0;
      int64_t prev = -1;
      struct pfi_store_sample smp;
      const char *why;
      while (pfi_store_blob_next(b, n, &off, prev, &smp, &why) == 1) {
        prev = smp.gpu;
        if (smp.valid >> f & 1u && !(smp.v[f] <= c))
          c = smp.v[f];
      }
    }
    sqlite3_finalize(q);
    return c;
  }
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT max(%s) FROM samples", pfi_field_name(f));
  sqlite3_stmt *q = NULL;
  double c = NAN;
  if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
    c = sqlite3_column_double(q, 0);
  sqlite3_finalize(q);
  return c;
}

/* ---- tables of structs (dbtable.h) ---------------------------------------
 * The records of the controller and of pfid. The SQL text is generated
 * from the column descriptions in dbtable_sql.c; here it runs. */

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
  return pfi_error_set(err, src ? sqlite_code(src) : PFI_EDB, "%s: %s: %s",
                       d->path, what,
                       d->db ? sqlite3_errmsg(d->db) : "cannot open");
}

static int db_exec(struct pfi_db *d, const char *sql, struct pfi_error *err) {
  return exec_db(d->db, d->path, sql, err);
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
  int rc = 0;
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
      ((rc = db_exec(d, "PRAGMA journal_mode=WAL;", err)) < 0 ||
       (rc = db_exec(
            d, durable ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=OFF;",
            err)) < 0))
    goto fail;
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
    if ((rc = db_exec(d, sql, err)) < 0)
      goto fail;
    if (sqlite3_prepare_v3(d->db, put, -1, SQLITE_PREPARE_PERSISTENT,
                           &d->put[i], NULL) != SQLITE_OK) {
      rc = db_fail(d, err, "prepare");
      goto fail;
    }
  }
  *out = d;
  return 0;
fail:
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
      bind_opt(q, i, r);
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

int pfi_db_each(struct pfi_db *d, const struct pfi_table *t,
                const struct pfi_db_cond *cond, size_t ncond, size_t limit,
                int (*fn)(void *ctx, const void *row), void *ctx,
                struct pfi_error *err) {
  char sql[PFI__DB_SQL_MAX];
  int rc = pfi__db_select_sql(t, cond, ncond, limit, sql, sizeof sql, err);
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
