/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store's write path: transactions, runs, samples (schema 2:
 * packed a row per run and instant when the batch commits; schema 1: a row
 * per GPU), steps, cap events, the cap ledger, node power. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store_int.h"

/* Runs a prepared statement of st (or `sql` when it has none, read-only):
 * 0 or the error as pfi__store_exec gives it. */
static int exec_stmt(struct pfi_store *st, int which, const char *sql,
                     struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[which];
  if (!q)
    return pfi__store_exec(st, sql, err);
  int src = sqlite3_step(q);
  int rc = src == SQLITE_DONE
               ? 0
               : pfi_error_set(err, pfi__store_sqlite_code(src), "%s: %s",
                               st->path, sqlite3_errmsg(st->db));
  sqlite3_reset(q);
  return rc;
}

int pfi_store_begin(struct pfi_store *st, struct pfi_error *err) {
  if (st->in_batch)
    return pfi_error_set(err, PFI_ESTATE, "%s: batch already open", st->path);
  /* A batch bound for the journal begins its transaction only if it comes
   * to hold more than samples and steps (pfi__store_sql). */
  if (st->jmode) {
    st->in_batch = 1;
    st->sql_open = 0;
    return 0;
  }
  int rc = exec_stmt(st, ST_BEGIN, "BEGIN IMMEDIATE;", err);
  if (rc == 0)
    st->in_batch = st->sql_open = 1;
  return rc;
}

int pfi_store_commit(struct pfi_store *st, struct pfi_error *err) {
  if (!st->in_batch)
    return 0;
  if (!st->sql_open)
    return pfi__journal_commit(st, err);
  /* A failed write leaves the batch open, for the caller to roll back. */
  int rc = pfi__store_flush_samples(st, err);
  if (rc == 0)
    rc = exec_stmt(st, ST_COMMIT, "COMMIT;", err);
  if (rc == 0) {
    st->in_batch = st->sql_open = 0;
    if (st->jin_tx)
      rc = pfi__journal_merged(st, err);
  }
  return rc;
}

int pfi_store_rollback(struct pfi_store *st) {
  st->npend = 0;
  st->pend_sorted = 1;
  st->npsteps = 0;
  st->npnodes = 0;
  /* Frames merged in the transaction stay in the journal. */
  st->jin_tx = 0;
  if (!st->in_batch)
    return 0;
  st->in_batch = 0;
  if (!st->sql_open)
    return 0;
  st->sql_open = 0;
  return pfi__store_exec(st, "ROLLBACK;", NULL);
}

static int step_done(struct pfi_store *st, sqlite3_stmt *q,
                     struct pfi_error *err, const char *what) {
  int s = sqlite3_step(q);
  int rc = s == SQLITE_DONE ? 0 : pfi__store_dberr(st, err, what);
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return rc;
}

void pfi__store_bind_opt(sqlite3_stmt *q, int i, double v) {
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
  int jr = pfi__store_sql(st, err);
  if (jr < 0)
    return jr;
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
  int jr = pfi__store_sql(st, err);
  if (jr < 0)
    return jr;
  sqlite3_bind_text(q, 1, state, -1, SQLITE_TRANSIENT);
  pfi__store_bind_opt(q, 2, t_end_s);
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
  int rc = pfi__store_sql(st, err);
  if (rc < 0)
    return rc;
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

int pfi_store_job_command(struct pfi_store *st, const char *job, char *cmd,
                          size_t n, struct pfi_error *err) {
  sqlite3_stmt *q = NULL;
  int rc = pfi__store_sql(st, err);
  if (rc < 0)
    return rc;
  if (sqlite3_prepare_v2(st->db,
                         "SELECT command FROM runs WHERE job=? ORDER BY id "
                         "DESC LIMIT 1",
                         -1, &q, NULL) != SQLITE_OK) {
    rc = pfi__store_dberr(st, err, "runs");
    goto out;
  }
  sqlite3_bind_text(q, 1, job, -1, SQLITE_TRANSIENT);
  int s = sqlite3_step(q);
  if (s == SQLITE_ROW) {
    const unsigned char *c = sqlite3_column_text(q, 0);
    if (cmd && n)
      snprintf(cmd, n, "%s", c ? (const char *)c : "");
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
  int rc = pfi__store_sql(st, err);
  if (rc < 0)
    return rc;
  rc = pfi__store_exec(st,
                       "UPDATE runs SET state='interrupted' WHERE "
                       "state='running';",
                       err);
  return rc < 0 ? rc : sqlite3_changes(st->db);
}

/* ---- schema 2: the samples of an instant in one row ---------------------- */

int pfi__store_pend_cmp(const void *a, const void *b) {
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
int pfi__store_blob_error(const char *path, int64_t run, double t, size_t off,
                          size_t n, const char *why, struct pfi_error *err) {
  return pfi_error_setloc(err, PFI_EPARSE, path, 0, 0,
                          "samples of run %lld at t_s %.17g: byte %zu of the "
                          "%zu-byte row: %s (a damaged store: copy the runs "
                          "still readable with `pfi trace export`, or sweep "
                          "again)",
                          (long long)run, t, off, n, why);
}

size_t pfi__store_row_room(const struct pend *a, const struct pend *b) {
  size_t need = 0;
  for (const struct pend *p = a; p < b; p++)
    need += pfi_store_blob_entry_size(p->valid);
  return need;
}

size_t pfi__store_row_put(unsigned char *out, const struct pend *a,
                          const struct pend *b, long long *gpus) {
  size_t o = 0;
  long long n = 0;
  for (const struct pend *p = a; p < b; p++) {
    if (p + 1 < b && p[1].gpu == p->gpu)
      continue; /* a later sample of this GPU replaces it */
    o += pfi_store_blob_put(out + o, p->gpu, p->valid, p->v);
    n++;
  }
  *gpus = n;
  return o;
}

/* Encodes pending samples [a, b) (one run and instant, sorted by GPU then
 * order of addition) into st->buf, the later of two for one GPU kept.
 * Sets *len, *gpus, *first. */
static int encode_row(struct pfi_store *st, const struct pend *a,
                      const struct pend *b, size_t *len, long long *gpus,
                      uint32_t *first, struct pfi_error *err) {
  size_t need = pfi__store_row_room(a, b);
  int rc = buf_room(st, need ? need : 1, err);
  if (rc < 0)
    return rc;
  *len = pfi__store_row_put(st->buf, a, b, gpus);
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
    rc = pfi__store_blob_error(st->path, a->run, a->t, off, n, why, err);
    goto out;
  }
  for (const struct pend *p = a; p < b; p++) {
    all[k] = *p;
    all[k++].seq = p->seq + 1;
  }
  qsort(all, k, sizeof *all, pfi__store_pend_cmp);
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
int pfi__store_flush_pend(struct pfi_store *st, struct pend *pend, size_t np,
                          int sorted, struct pfi_error *err) {
  if (np == 0)
    return 0;
  if (!sorted)
    qsort(pend, np, sizeof *pend, pfi__store_pend_cmp);
  sqlite3_stmt *q = st->stmt[ST_SAMPLE];
  int rc = 0;
  for (size_t i = 0, j; i < np && rc == 0; i = j) {
    const struct pend *a = &pend[i];
    for (j = i + 1; j < np && pend[j].run == a->run && pend[j].t == a->t; j++)
      ;
    size_t len;
    long long gpus;
    uint32_t first;
    if ((rc = encode_row(st, a, pend + j, &len, &gpus, &first, err)) < 0)
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
      rc = merge_row(st, a, pend + j, err);
  }
  return rc;
}

int pfi__store_flush_samples(struct pfi_store *st, struct pfi_error *err) {
  int rc = pfi__store_flush_pend(st, st->pend, st->npend, st->pend_sorted, err);
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
  if (st->npend && st->pend_sorted && pfi__store_pend_cmp(p - 1, p) > 0)
    st->pend_sorted = 0;
  st->npend++;
  if (st->in_batch) {
    if (st->npend < PEND_MAX)
      return 0;
    int rc = pfi__store_sql(st, err);
    return rc < 0 ? rc : pfi__store_flush_samples(st, err);
  }
  /* Outside a batch a sample is committed at once, as any other add. */
  int rc = pfi__store_sql(st, err);
  if (rc == 0)
    rc = pfi__store_exec(st, "BEGIN IMMEDIATE;", err);
  if (rc < 0) {
    st->npend = 0;
    st->pend_sorted = 1;
    return rc;
  }
  if ((rc = pfi__store_flush_samples(st, err)) < 0 ||
      (rc = pfi__store_exec(st, "COMMIT;", err)) < 0)
    pfi__store_exec(st, "ROLLBACK;", NULL);
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

int pfi__store_put_step(struct pfi_store *st, sqlite3_stmt *q, int64_t run,
                        int64_t seq, const struct pfi_step *s,
                        struct pfi_error *err) {
  int k = 0; /* the columns after t_s are one further in schema 2 */
  if (st->schema >= 2) {
    sqlite3_bind_int64(q, 3, seq);
    k = 1;
  }
  sqlite3_bind_int64(q, 1, run);
  sqlite3_bind_double(q, 2, isfinite(s->t_s) ? s->t_s : 0);
  pfi__store_bind_opt(q, 3 + k, s->job_t_s);
  pfi__store_bind_opt(q, 4 + k, s->tokens);
  pfi__store_bind_opt(q, 5 + k, s->tokens_per_s);
  pfi__store_bind_opt(q, 6 + k, s->step);
  pfi__store_bind_opt(q, 7 + k, s->loss);
  pfi__store_bind_opt(q, 8 + k, s->mfu);
  return step_done(st, q, err, "step");
}

int pfi_store_add_step(struct pfi_store *st, int64_t run_id,
                       const struct pfi_step *s, struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_STEP];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  int64_t seq = 0;
  if (st->schema >= 2) {
    /* Steps of a run are numbered in order of addition, after those the
     * run already has (looked up once per run, with the journal's steps
     * merged first). */
    if (st->step_run != run_id) {
      if (st->jframes || st->npsteps) {
        int rc = pfi__store_sql(st, err);
        if (rc < 0)
          return rc;
      }
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
    seq = ++st->step_seq;
    if (st->in_batch && !st->sql_open) {
      /* Bound for the journal with the batch's samples. */
      if (st->npsteps == st->cappsteps) {
        size_t nc = st->cappsteps ? 2 * st->cappsteps : 16;
        struct pstep *np = realloc(st->psteps, nc * sizeof *np);
        if (!np)
          return pfi_error_set(err, PFI_ENOMEM, "out of memory");
        st->psteps = np;
        st->cappsteps = nc;
      }
      struct pstep *p = &st->psteps[st->npsteps++];
      p->run = run_id;
      p->seq = seq;
      p->s = *s;
      if (!isfinite(p->s.t_s))
        p->s.t_s = 0;
      return 0;
    }
    if (!st->in_batch) {
      int rc = pfi__store_sql(st, err);
      if (rc < 0)
        return rc;
    }
  }
  return pfi__store_put_step(st, q, run_id, seq, s, err);
}

int pfi_store_cap_event(struct pfi_store *st, int64_t run_id, unsigned gpu,
                        const char *action, uint32_t mw, double t_s,
                        struct pfi_error *err) {
  sqlite3_stmt *q = st->stmt[ST_EVENT];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  int jr = pfi__store_sql(st, err);
  if (jr < 0)
    return jr;
  char utc[32];
  pfi__store_utc_now(utc, sizeof utc);
  if (run_id > 0)
    sqlite3_bind_int64(q, 1, run_id);
  else
    sqlite3_bind_null(q, 1);
  sqlite3_bind_int(q, 2, (int)gpu);
  sqlite3_bind_text(q, 3, action, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(q, 4, mw);
  pfi__store_bind_opt(q, 5, t_s);
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
  /* The ledger never goes to the journal. */
  if ((rc = pfi__store_sql(st, err)) < 0)
    goto out;
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
  pfi__store_exec(st, "PRAGMA synchronous=FULL;", NULL);
  rc = pfi_store_commit(st, err);
  pfi__store_exec(st, "PRAGMA synchronous=NORMAL;", NULL);
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
  int rc = pfi__store_sql(st, err);
  if (rc < 0)
    return rc;
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

int pfi__store_put_node(struct pfi_store *st, sqlite3_stmt *q, int64_t run,
                        const struct pfi_node_power *np,
                        struct pfi_error *err) {
  sqlite3_bind_int64(q, 1, run);
  sqlite3_bind_double(q, 2, np->t_s);
  pfi__store_bind_opt(q, 3, np->gpu_w);
  pfi__store_bind_opt(q, 4, np->other_w);
  sqlite3_bind_double(q, 5, np->node_w);
  sqlite3_bind_text(q, 6, np->source, -1, SQLITE_TRANSIENT);
  return step_done(st, q, err, "node power");
}

int pfi_store_add_node_power(struct pfi_store *st, int64_t run_id,
                             const struct pfi_node_power *np,
                             struct pfi_error *err) {
  if (!isfinite(np->node_w) || np->node_w < 0 || !np->source)
    return pfi_error_set(err, PFI_EINVAL,
                         "node power: node_w must be finite and >= 0");
  sqlite3_stmt *q = st->stmt[ST_NODE];
  if (!q)
    return pfi_error_set(err, PFI_ESTATE, "%s: opened read-only", st->path);
  size_t sl = strlen(np->source);
  if (st->in_batch && !st->sql_open && sl >= 1 && sl <= 32 && !isnan(np->t_s)) {
    /* Bound for the journal with the batch's samples. */
    if (st->npnodes == st->cappnodes) {
      size_t nc = st->cappnodes ? 2 * st->cappnodes : 16;
      struct pnode *pn = realloc(st->pnodes, nc * sizeof *pn);
      if (!pn)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      st->pnodes = pn;
      st->cappnodes = nc;
    }
    struct pnode *p = &st->pnodes[st->npnodes++];
    p->run = run_id;
    p->np = *np;
    memcpy(p->src, np->source, sl + 1);
    p->np.source = NULL;
    return 0;
  }
  int rc = pfi__store_sql(st, err);
  if (rc < 0)
    return rc;
  return pfi__store_put_node(st, q, run_id, np, err);
}
