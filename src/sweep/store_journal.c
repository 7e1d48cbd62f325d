/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The samples journal of a schema-2 store (docs/sweep.md): FILE-samples,
 * beside the database as its -wal is. A batch that holds only samples and
 * steps (a sampling interval's) is committed as one frame appended with one
 * write: as durable as a WAL commit under synchronous=NORMAL (kept through
 * a crash of pfi, not synced), at a fraction of SQLite's cost per
 * transaction. Every PFI_JOURNAL_FRAMES frames, PFI_JOURNAL_SECONDS of wall
 * time, before any other write and at close, the frames are merged into the
 * database in one transaction that also records the last merged frame's
 * sequence number (meta journal_seq); merged frames stay in the file until
 * it holds PFI_JOURNAL_KEEP_BYTES, then the next frame is written over them
 * at byte 0 (its pages reused in place; the older frames after the new ones
 * are numbered below them and end the scan): a crash between a merge and
 * the next frame merges nothing twice. The next writer merges what a
 * killed one left; readers read the frames not yet merged (temporary
 * tables in memory that shadow samples and steps) and write nothing.
 */
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
#include "store_int.h"

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int room(void **b, size_t *cap, size_t need, size_t elem,
                struct pfi_error *err) {
  if (need <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 16;
  while (nc < need)
    nc *= 2;
  void *nb = realloc(*b, nc * elem);
  if (!nb)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  *b = nb;
  *cap = nc;
  return 0;
}

static int jpend_add(struct pfi_store *st, int64_t run, double t,
                     const struct pfi_store_sample *s, size_t seq,
                     struct pfi_error *err) {
  int rc = room((void **)&st->jpend, &st->capjpend, st->njpend + 1,
                sizeof *st->jpend, err);
  if (rc < 0)
    return rc;
  struct pend *p = &st->jpend[st->njpend++];
  p->run = run;
  p->t = t;
  p->gpu = s->gpu;
  p->valid = s->valid;
  p->seq = seq;
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    p->v[f] = s->valid >> f & 1u ? s->v[f] : 0;
  return 0;
}

/* Appends a frame record's entries to st->jpend, in order. */
static int jpend_row(struct pfi_store *st, const struct pfi_store_jrec *r,
                     size_t *order, struct pfi_error *err) {
  size_t off = 0;
  int64_t prev = -1;
  struct pfi_store_sample s;
  const char *why = NULL;
  int g, rc;
  while ((g = pfi_store_blob_next(r->data, r->len, &off, prev, &s, &why)) ==
         1) {
    prev = s.gpu;
    if ((rc = jpend_add(st, r->run, r->t_s, &s, (*order)++, err)) < 0)
      return rc;
  }
  return g < 0 ? pfi_error_set(err, PFI_EPARSE, "%s%s: %s", st->path,
                               PFI_JOURNAL_SUFFIX, why)
               : 0;
}

static int journal_error(const char *jpath, const struct pfi_store_jscan *sc,
                         struct pfi_error *err) {
  return pfi_error_setloc(err, PFI_EPARSE, jpath, 0, 0,
                          "byte %zu: %s (a damaged samples journal: the "
                          "intervals in it are not in the store; move the "
                          "file aside to open the store without them)",
                          sc->bad_off, sc->why);
}

/* ---- merging into the database (a writer) -------------------------------- */

struct merge_ctx {
  struct pfi_store *st;
  struct pfi_error *err;
  size_t order;
};

static int merge_rec(void *ctx, uint64_t seq, const struct pfi_store_jrec *r) {
  struct merge_ctx *m = ctx;
  struct pfi_store *st = m->st;
  if (seq <= st->jmerged)
    return 0; /* merged before a crash that left the journal */
  if (r->kind == PFI_JREC_STEP)
    return pfi__store_put_step(st, st->stmt[ST_STEP_IGNORE], r->run, r->seq,
                               &r->step, m->err);
  if (r->kind == PFI_JREC_NODE)
    return pfi__store_put_node(st, st->stmt[ST_NODE], r->run, &r->node, m->err);
  /* The row as the frame holds it; an instant already stored (a frame
   * merged before, or a row of another batch) is merged entry by entry. */
  sqlite3_stmt *q = st->stmt[ST_SAMPLE];
  sqlite3_bind_int64(q, 1, r->run);
  sqlite3_bind_double(q, 2, r->t_s);
  sqlite3_bind_int64(q, 3, r->gpus);
  sqlite3_bind_int64(
      q, 4,
      (int64_t)((uint32_t)r->data[0] | (uint32_t)r->data[1] << 8 |
                (uint32_t)r->data[2] << 16 | (uint32_t)r->data[3] << 24));
  sqlite3_bind_blob(q, 5, r->data, (int)r->len, SQLITE_STATIC);
  int s = sqlite3_step(q);
  sqlite3_reset(q);
  if (s != SQLITE_DONE)
    return pfi__store_dberr(st, m->err, "sample");
  if (sqlite3_changes(st->db) > 0)
    return 0;
  st->njpend = 0;
  int rc = jpend_row(st, r, &m->order, m->err);
  if (rc == 0)
    rc = pfi__store_flush_pend(st, st->jpend, st->njpend, 0, m->err);
  st->njpend = 0;
  return rc;
}

/* Inserts the frames not yet merged into the open transaction, the
 * samples merged into rows already there as a batch's are (so that doing
 * it twice changes nothing), and records the last frame's number. */
static int merge_frames(struct pfi_store *st, struct pfi_error *err) {
  struct merge_ctx m = {st, err, 0};
  struct pfi_store_jscan sc;
  /* The frames were checked when read, or written by this process. */
  int rc = pfi__journal_walk(st->jbuf, st->jlen, 1, 0, merge_rec, &m, &sc);
  if (rc == -1)
    return journal_error(st->jpath, &sc, err);
  if (rc < 0)
    return rc;
  char sql[96];
  snprintf(sql, sizeof sql,
           "INSERT OR REPLACE INTO meta VALUES('journal_seq','%llu');",
           (unsigned long long)st->jseq);
  return pfi__store_exec(st, sql, err);
}

int pfi__journal_merged(struct pfi_store *st, struct pfi_error *err) {
  (void)err;
  st->jin_tx = 0;
  st->jmerged = st->jseq;
  st->jlen = 0;
  st->jframes = 0;
  /* The next frame over the first: every frame in the file is merged
   * (journal_seq says so), and numbered below the next one. */
  if (st->jfd >= 0 && st->jfile >= PFI_JOURNAL_KEEP_BYTES)
    st->jfile = 0;
  return 0;
}

/* The frames merged in a transaction of their own. */
static int merge_own(struct pfi_store *st, struct pfi_error *err) {
  if (!st->jframes)
    return 0;
  int rc = pfi__store_exec(st, "BEGIN IMMEDIATE;", err);
  if (rc < 0)
    return rc;
  if ((rc = merge_frames(st, err)) < 0 ||
      (rc = pfi__store_exec(st, "COMMIT;", err)) < 0) {
    pfi__store_exec(st, "ROLLBACK;", NULL);
    return rc;
  }
  return pfi__journal_merged(st, err);
}

/* The open batch becomes an SQLite transaction: the frames and its steps
 * go into it. */
static int begin_sql(struct pfi_store *st, struct pfi_error *err) {
  int rc = pfi__store_exec(st, "BEGIN IMMEDIATE;", err);
  if (rc < 0)
    return rc;
  st->sql_open = 1;
  if (st->jframes) {
    if ((rc = merge_frames(st, err)) < 0)
      return rc; /* the batch is open: the caller rolls it back */
    st->jin_tx = 1;
  }
  for (size_t i = 0; i < st->npsteps; i++) {
    const struct pstep *p = &st->psteps[i];
    if ((rc = pfi__store_put_step(st, st->stmt[ST_STEP], p->run, p->seq, &p->s,
                                  err)) < 0)
      return rc;
  }
  st->npsteps = 0;
  for (size_t i = 0; i < st->npnodes; i++) {
    struct pnode *p = &st->pnodes[i];
    p->np.source = p->src;
    if ((rc = pfi__store_put_node(st, st->stmt[ST_NODE], p->run, &p->np, err)) <
        0)
      return rc;
  }
  st->npnodes = 0;
  return 0;
}

int pfi__store_sql(struct pfi_store *st, struct pfi_error *err) {
  if (st->in_batch)
    return st->sql_open ? 0 : begin_sql(st, err);
  return st->jframes ? merge_own(st, err) : 0;
}

/* ---- writing frames ------------------------------------------------------ */

/* Opens and locks the journal; 1 when this writer holds it, 0 when another
 * writer does (or it cannot be opened): that writer's batches go to SQLite. */
static int journal_take(struct pfi_store *st, int create) {
  for (int tries = 0; tries < 4; tries++) {
    int fd = open(st->jpath, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd < 0)
      return errno == ENOENT ? -1 : 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      return 0;
    }
    /* The file locked must still be the one at the path (a writer that
     * closed removes it). */
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(st->jpath, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      st->jfd = fd;
      return 1;
    }
    close(fd);
  }
  return 0;
}

int pfi__journal_commit(struct pfi_store *st, struct pfi_error *err) {
  int rc;
  if (st->jfd < 0 && journal_take(st, 1) != 1) {
    /* Another writer journals this store: this one commits to SQLite. */
    st->jmode = 0;
    if ((rc = begin_sql(st, err)) < 0)
      return rc;
    return pfi_store_commit(st, err);
  }
  if (!st->pend_sorted)
    qsort(st->pend, st->npend, sizeof *st->pend, pfi__store_pend_cmp);
  size_t need = PFI_JOURNAL_HEADER + (28 + 48) * st->npsteps +
                (28 + 16 + 32) * st->npnodes;
  for (size_t i = 0, j; i < st->npend; i = j) {
    const struct pend *a = &st->pend[i];
    for (j = i + 1;
         j < st->npend && st->pend[j].run == a->run && st->pend[j].t == a->t;
         j++)
      ;
    need += 28 + pfi__store_row_room(a, st->pend + j);
  }
  if ((rc = room((void **)&st->fbuf, &st->fcap, need, 1, err)) < 0)
    return rc;
  unsigned char *f = st->fbuf;
  size_t o = PFI_JOURNAL_HEADER;
  for (size_t i = 0, j; i < st->npend; i = j) {
    const struct pend *a = &st->pend[i];
    for (j = i + 1;
         j < st->npend && st->pend[j].run == a->run && st->pend[j].t == a->t;
         j++)
      ;
    long long gpus;
    size_t len = pfi__store_row_put(f + o + 28, a, st->pend + j, &gpus);
    if (len > UINT32_MAX)
      return pfi_error_set(err, PFI_ERANGE,
                           "%s: run %lld: too many GPUs at one instant",
                           st->path, (long long)a->run);
    memset(f + o, 0, 4);
    f[o] = PFI_JREC_SAMPLES;
    pfi__jput32(f + o + 4, (uint32_t)gpus);
    pfi__jput32(f + o + 8, (uint32_t)len);
    pfi__jput64(f + o + 12, (uint64_t)a->run);
    pfi__jputf(f + o + 20, a->t);
    o += 28 + len;
  }
  for (size_t i = 0; i < st->npsteps; i++) {
    const struct pstep *p = &st->psteps[i];
    const double v[6] = {p->s.job_t_s, p->s.tokens, p->s.tokens_per_s,
                         p->s.step,    p->s.loss,   p->s.mfu};
    unsigned mask = 0;
    size_t q = o + 28;
    for (int k = 0; k < 6; k++)
      if (isfinite(v[k])) {
        mask |= 1u << k;
        pfi__jputf(f + q, v[k]);
        q += 8;
      }
    f[o] = PFI_JREC_STEP;
    f[o + 1] = (unsigned char)mask;
    f[o + 2] = f[o + 3] = 0;
    pfi__jput64(f + o + 4, (uint64_t)p->seq);
    pfi__jput64(f + o + 12, (uint64_t)p->run);
    pfi__jputf(f + o + 20, p->s.t_s);
    o = q;
  }
  for (size_t i = 0; i < st->npnodes; i++) {
    const struct pnode *p = &st->pnodes[i];
    unsigned mask = 0;
    size_t q = o + 28, sl = strlen(p->src);
    if (isfinite(p->np.gpu_w)) {
      mask |= 1u;
      pfi__jputf(f + q, p->np.gpu_w);
      q += 8;
    }
    if (isfinite(p->np.other_w)) {
      mask |= 2u;
      pfi__jputf(f + q, p->np.other_w);
      q += 8;
    }
    f[o] = PFI_JREC_NODE;
    f[o + 1] = (unsigned char)mask;
    f[o + 2] = (unsigned char)sl;
    f[o + 3] = 0;
    pfi__jputf(f + o + 4, p->np.node_w);
    pfi__jput64(f + o + 12, (uint64_t)p->run);
    pfi__jputf(f + o + 20, p->np.t_s);
    memcpy(f + q, p->src, sl);
    o = q + sl;
  }
  if (o - PFI_JOURNAL_HEADER > UINT32_MAX)
    return pfi_error_set(err, PFI_ERANGE, "%s: batch too large", st->path);
  pfi__jframe_seal(f, o - PFI_JOURNAL_HEADER, st->jseq + 1);
  if ((rc = room((void **)&st->jbuf, &st->jcap, st->jlen + o, 1, err)) < 0)
    return rc;
  /* The one write of the interval. */
  ssize_t w = pwrite(st->jfd, f, o, (off_t)st->jfile);
  if (w != (ssize_t)o) {
    int e = w < 0 ? errno : ENOSPC;
    /* A frame cut short must not stay before the next. */
    if (ftruncate(st->jfd, (off_t)st->jfile) != 0)
      st->jmode = 0;
    /* The batch stays open, for the caller to roll back. */
    return pfi_error_set(err, PFI_EIO,
                         "%s%s: cannot append the interval (disk full or I/O "
                         "error): %s",
                         st->path, PFI_JOURNAL_SUFFIX, strerror(e));
  }
  memcpy(st->jbuf + st->jlen, f, o);
  st->jlen += o;
  st->jfile += o;
  st->jseq++;
  double now = wall_now();
  if (!st->jframes++)
    st->jt0 = now;
  st->npend = 0;
  st->pend_sorted = 1;
  st->npsteps = 0;
  st->npnodes = 0;
  st->in_batch = 0;
  if (st->jframes >= st->jmax || now - st->jt0 >= st->jmax_s || !st->jmode)
    return merge_own(st, err);
  return 0;
}

/* ---- opening ---------------------------------------------------------------
 */

static int read_all(int fd, unsigned char **b, size_t *cap, size_t *n,
                    struct pfi_error *err, const char *jpath) {
  struct stat sb;
  *n = 0;
  if (fstat(fd, &sb) != 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", jpath, strerror(errno));
  size_t want = (size_t)sb.st_size + 1;
  for (;;) {
    int rc = room((void **)b, cap, want, 1, err);
    if (rc < 0)
      return rc;
    ssize_t r = pread(fd, *b + *n, *cap - *n, (off_t)*n);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return pfi_error_set(err, PFI_EIO, "%s: %s", jpath, strerror(errno));
    }
    if (r == 0)
      return 0;
    *n += (size_t)r;
    if (*n == *cap)
      want = 2 * *cap;
  }
}

static uint64_t meta_seq(struct pfi_store *st) {
  char v[32];
  if (pfi_store_meta_get(st, "journal_seq", v, sizeof v, NULL) != 1)
    return 0;
  return strtoull(v, NULL, 10);
}

/* A reader: the frames not yet merged, in temporary tables that shadow
 * samples and steps for this connection only (in memory: nothing is
 * written). */
struct overlay_ctx {
  struct pfi_store *st;
  struct pfi_error *err;
  sqlite3_stmt *step, *node;
  size_t order;
};

static int overlay_rec(void *ctx, uint64_t seq,
                       const struct pfi_store_jrec *r) {
  struct overlay_ctx *c = ctx;
  if (seq <= c->st->jmerged)
    return 0;
  if (r->kind == PFI_JREC_SAMPLES)
    return jpend_row(c->st, r, &c->order, c->err);
  if (r->kind == PFI_JREC_NODE)
    return pfi__store_put_node(c->st, c->node, r->run, &r->node, c->err);
  return pfi__store_put_step(c->st, c->step, r->run, r->seq, &r->step, c->err);
}

static int overlay(struct pfi_store *st, struct pfi_error *err) {
  static const char ddl[] =
      "PRAGMA temp_store=MEMORY;"
      "CREATE TEMP TABLE jsamples(run_id INTEGER NOT NULL, t_s REAL NOT "
      "NULL, gpus INTEGER NOT NULL, gpu_first INTEGER NOT NULL, data BLOB "
      "NOT NULL, PRIMARY KEY(run_id, t_s));"
      "CREATE TEMP TABLE jsteps(run_id INTEGER NOT NULL, t_s REAL NOT NULL, "
      "seq INTEGER NOT NULL, job_t_s REAL, tokens REAL, tokens_per_s REAL, "
      "step REAL, loss REAL, mfu REAL, PRIMARY KEY(run_id, t_s, seq)) "
      "WITHOUT ROWID;"
      "CREATE TEMP VIEW samples AS SELECT * FROM main.samples m WHERE NOT "
      "EXISTS (SELECT 1 FROM temp.jsamples j WHERE j.run_id = m.run_id AND "
      "j.t_s = m.t_s) UNION ALL SELECT * FROM temp.jsamples;"
      "CREATE TEMP VIEW steps AS SELECT * FROM main.steps UNION ALL SELECT * "
      "FROM temp.jsteps j WHERE NOT EXISTS (SELECT 1 FROM main.steps m WHERE "
      "m.run_id = j.run_id AND m.t_s = j.t_s AND m.seq = j.seq);"
      "CREATE TEMP TABLE jnode(run_id INTEGER NOT NULL, t_s REAL NOT NULL, "
      "gpu_w REAL, other_w REAL, node_w REAL NOT NULL, source TEXT NOT NULL, "
      "PRIMARY KEY(run_id, t_s)) WITHOUT ROWID;";
  /* A store from before node power has no such table to shadow (its
   * writer, which made the journal, would have added it). */
  static const char node_view[] =
      "CREATE TEMP VIEW node_power AS SELECT * FROM main.node_power m WHERE "
      "NOT EXISTS (SELECT 1 FROM temp.jnode j WHERE j.run_id = m.run_id AND "
      "j.t_s = m.t_s) UNION ALL SELECT * FROM temp.jnode;";
  sqlite3_stmt *get = NULL, *put = NULL, *step = NULL, *node = NULL;
  struct pend *all = NULL;
  size_t capall = 0;
  int rc = pfi__store_exec(st, ddl, err);
  if (rc < 0)
    return rc;
  pfi__store_exec(st, node_view, NULL);
  if (sqlite3_prepare_v2(
          st->db, "INSERT OR REPLACE INTO temp.jnode VALUES(?,?,?,?,?,?)", -1,
          &node, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(st->db,
                         "INSERT OR REPLACE INTO temp.jsteps "
                         "VALUES(?,?,?,?,?,?,?,?,?)",
                         -1, &step, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(st->db,
                         "SELECT data FROM main.samples WHERE run_id=? AND "
                         "t_s=?",
                         -1, &get, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(st->db, "INSERT INTO temp.jsamples VALUES(?,?,?,?,?)",
                         -1, &put, NULL) != SQLITE_OK) {
    rc = pfi__store_dberr(st, err, "samples journal");
    goto out;
  }
  struct overlay_ctx c = {st, err, step, node, 0};
  struct pfi_store_jscan sc;
  st->njpend = 0;
  rc = pfi_store_journal_scan(st->jbuf, st->jlen, overlay_rec, &c, &sc);
  if (rc == -1)
    rc = journal_error(st->jpath, &sc, err);
  if (rc < 0)
    goto out;
  qsort(st->jpend, st->njpend, sizeof *st->jpend, pfi__store_pend_cmp);
  for (size_t i = 0, j; i < st->njpend; i = j) {
    const struct pend *a = &st->jpend[i];
    for (j = i + 1;
         j < st->njpend && st->jpend[j].run == a->run && st->jpend[j].t == a->t;
         j++)
      ;
    /* The row of the database first, the journal's entries winning. */
    size_t k = 0;
    sqlite3_bind_int64(get, 1, a->run);
    sqlite3_bind_double(get, 2, a->t);
    if (sqlite3_step(get) == SQLITE_ROW) {
      const unsigned char *old = sqlite3_column_blob(get, 0);
      size_t n = (size_t)sqlite3_column_bytes(get, 0), off = 0;
      int64_t prev = -1;
      struct pfi_store_sample s;
      const char *why = NULL;
      int g;
      while ((g = pfi_store_blob_next(old, n, &off, prev, &s, &why)) == 1) {
        prev = s.gpu;
        if ((rc = room((void **)&all, &capall, k + 1, sizeof *all, err)) < 0)
          goto out;
        struct pend *p = &all[k++];
        p->run = a->run;
        p->t = a->t;
        p->gpu = s.gpu;
        p->valid = s.valid;
        p->seq = 0;
        for (int f = 0; f < PFI_FIELD__COUNT; f++)
          p->v[f] = s.valid >> f & 1u ? s.v[f] : 0;
      }
      if (g < 0) {
        rc = pfi__store_blob_error(st->path, a->run, a->t, off, n, why, err);
        goto out;
      }
    }
    sqlite3_reset(get);
    if ((rc = room((void **)&all, &capall, k + (j - i), sizeof *all, err)) < 0)
      goto out;
    for (size_t q = i; q < j; q++) {
      all[k] = st->jpend[q];
      all[k++].seq = st->jpend[q].seq + 1;
    }
    qsort(all, k, sizeof *all, pfi__store_pend_cmp);
    size_t need = pfi__store_row_room(all, all + k);
    if ((rc = room((void **)&st->fbuf, &st->fcap, need ? need : 1, 1, err)) < 0)
      goto out;
    long long gpus;
    size_t len = pfi__store_row_put(st->fbuf, all, all + k, &gpus);
    sqlite3_bind_int64(put, 1, a->run);
    sqlite3_bind_double(put, 2, a->t);
    sqlite3_bind_int64(put, 3, gpus);
    sqlite3_bind_int64(put, 4, all[0].gpu);
    sqlite3_bind_blob(put, 5, st->fbuf, (int)len, SQLITE_STATIC);
    int s = sqlite3_step(put);
    sqlite3_reset(put);
    if (s != SQLITE_DONE) {
      rc = pfi__store_dberr(st, err, "samples journal");
      goto out;
    }
  }
out:
  st->njpend = 0;
  free(all);
  sqlite3_finalize(get);
  sqlite3_finalize(put);
  sqlite3_finalize(step);
  sqlite3_finalize(node);
  return rc;
}

int pfi__journal_open(struct pfi_store *st, int readonly,
                      struct pfi_error *err) {
  size_t n = strlen(st->path);
  st->jpath = malloc(n + sizeof PFI_JOURNAL_SUFFIX);
  if (!st->jpath)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  memcpy(st->jpath, st->path, n);
  memcpy(st->jpath + n, PFI_JOURNAL_SUFFIX, sizeof PFI_JOURNAL_SUFFIX);
  struct pfi_store_jscan sc;
  int rc;
  if (readonly) {
    int fd = open(st->jpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT)
        return 0;
      return pfi_error_set(err, PFI_EIO,
                           "%s: %s (the store's samples "
                           "journal, committed intervals)",
                           st->jpath, strerror(errno));
    }
    /* Read while a writer may empty it and append again: a read that
     * mixes the two is read again. */
    for (int tries = 0;; tries++) {
      /* Read before the frames: every frame of an earlier pass of the
       * file is merged by then. */
      uint64_t floor = meta_seq(st);
      if ((rc = read_all(fd, &st->jbuf, &st->jcap, &st->jlen, err, st->jpath)) <
          0)
        break;
      if ((rc = pfi__journal_walk(st->jbuf, st->jlen, 0, floor, NULL, NULL,
                                  &sc)) == 0 ||
          tries == 2)
        break;
      usleep(20000);
    }
    close(fd);
    if (rc == -1)
      return journal_error(st->jpath, &sc, err);
    if (rc < 0)
      return rc;
    st->jlen = sc.end;
    /* Read after the frames: what the database holds by then. */
    st->jmerged = meta_seq(st);
    if (sc.frames == 0 || sc.last_seq <= st->jmerged)
      return 0;
    return overlay(st, err);
  }
  st->jmerged = st->jseq = meta_seq(st);
  st->jmax = PFI_JOURNAL_FRAMES;
  st->jmax_s = PFI_JOURNAL_SECONDS;
  int t = journal_take(st, 0);
  if (t == 0)
    return 0; /* another writer journals: this one writes to SQLite */
  st->jmode = 1;
  if (t < 0)
    return 0; /* none: made at the first frame */
  /* What a writer before this one left: merged now. A journal that
   * cannot be read is left as it is. */
  if ((rc = read_all(st->jfd, &st->jbuf, &st->jcap, &st->jlen, err,
                     st->jpath)) < 0 ||
      (pfi__journal_walk(st->jbuf, st->jlen, 0, st->jmerged, NULL, NULL,
                         &sc) != 0 &&
       (rc = journal_error(st->jpath, &sc, err)) < 0)) {
    close(st->jfd);
    st->jfd = -1;
    st->jlen = 0;
    return rc;
  }
  st->jlen = sc.end;
  st->jframes = sc.frames;
  if (sc.frames && sc.last_seq > st->jseq)
    st->jseq = sc.last_seq;
  if (st->jframes && (rc = merge_own(st, err)) < 0)
    return rc;
  /* Merged (or only merged frames and a torn one): emptied. */
  st->jlen = 0;
  st->jfile = 0;
  if (ftruncate(st->jfd, 0) != 0)
    st->jmode = 0;
  return 0;
}

int pfi_store_journal_policy(struct pfi_store *st, size_t max_frames,
                             double max_seconds, struct pfi_error *err) {
  if (st->in_batch)
    return pfi_error_set(err, PFI_ESTATE, "%s: batch open", st->path);
  if (!st->stmt[ST_SAMPLE] || st->schema < 2)
    return 0; /* no journal: nothing to set */
  int rc = st->jframes ? merge_own(st, err) : 0;
  if (rc < 0)
    return rc;
  st->jmax = max_frames;
  st->jmax_s = isnan(max_seconds) ? 0 : max_seconds;
  if (max_frames == 0)
    st->jmode = 0;
  else if (!st->jmode && st->jfd < 0)
    st->jmode = 1; /* taken at the next frame, or left to another writer */
  return 0;
}

void pfi__journal_close(struct pfi_store *st) {
  if (st->jframes && st->db && st->stmt[ST_SAMPLE])
    merge_own(st, NULL);
  if (st->jfd >= 0) {
    if (st->jframes == 0)
      unlink(st->jpath);
    close(st->jfd);
    st->jfd = -1;
  }
}
