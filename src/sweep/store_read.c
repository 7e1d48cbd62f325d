/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store's read path: the iterators over runs, samples (decoding
 * schema 2's packed rows), steps and node power, and a field's maximum. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store_int.h"

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
  /* This connection's own samples of the open batch are read too, and
   * its journal's frames (merged first). */
  if (st->jframes ||
      (st->in_batch && (st->npend || st->npsteps || st->npnodes))) {
    int rc = pfi__store_sql(st, err);
    if (rc == 0 && st->in_batch && st->npend)
      rc = pfi__store_flush_samples(st, err);
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
      return pfi__store_blob_error(it->st->path, it->run, it->t, it->off, it->n,
                                   why, err);
    if (r == 0) {
      if (it->got != it->want) {
        char m[96];
        snprintf(m, sizeof m, "%lld GPU entries where the row says %lld",
                 it->got, it->want);
        return pfi__store_blob_error(it->st->path, it->run, it->t, it->off,
                                     it->n, m, err);
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
    if (((st->jframes ||
          (st->in_batch && (st->npend || st->npsteps || st->npnodes))) &&
         pfi__store_sql(st, NULL) < 0) ||
        (st->in_batch && st->npend && pfi__store_flush_samples(st, NULL) < 0) ||
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
