/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Decision records (records.h): one table of dbtable.h, described by its
 * columns; the SQL lives in the store (src/sweep/store_db.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/dbtable.h"
#include "pfi/records.h"

/* A row as stored: struct pfi_ctl_record flattened, with the run. */
struct row {
  char run[64];
  int64_t seq;
  double t_s;
  char event[64];
  double target_w;
  char job[96];
  char family[64];
  char phase[16];
  double cap_req_w, cap_enf_w, draw_w, pfi, pfi_lo, pfi_hi;
  double tput_before, tput_pred, tput_after;
  char reason[32];
  double max_loss;
  int64_t protect;
  double shortfall_w;
  int64_t complete;
};

#define T(f)                                                                   \
  { #f, PFI_COL_TEXT, offsetof(struct row, f), sizeof((struct row *)0)->f, 0 }
#define R(f)                                                                   \
  { #f, PFI_COL_REAL, offsetof(struct row, f), 0, 0 }
#define I(f)                                                                   \
  { #f, PFI_COL_INT, offsetof(struct row, f), 0, 0 }
static const struct pfi_col cols[] = {
    {"run", PFI_COL_TEXT, offsetof(struct row, run), 64,
     PFI_COL_KEY | PFI_COL_NOTNULL},
    {"seq", PFI_COL_INT, offsetof(struct row, seq), 0,
     PFI_COL_KEY | PFI_COL_NOTNULL},
    R(t_s),
    T(event),
    R(target_w),
    T(job),
    T(family),
    T(phase),
    R(cap_req_w),
    R(cap_enf_w),
    R(draw_w),
    R(pfi),
    R(pfi_lo),
    R(pfi_hi),
    R(tput_before),
    R(tput_pred),
    R(tput_after),
    T(reason),
    R(max_loss),
    I(protect),
    R(shortfall_w),
    I(complete),
};
#undef T
#undef R
#undef I

static const struct pfi_table records_table = {
    "records", cols, sizeof cols / sizeof cols[0], sizeof(struct row)};

struct pfi_records {
  struct pfi_db *db;
};

int pfi_records_open(struct pfi_records **out, const char *path, int create,
                     int durable, struct pfi_error *err) {
  *out = NULL;
  struct pfi_records *r = calloc(1, sizeof *r);
  if (!r)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  const struct pfi_table *t = &records_table;
  int rc = pfi_db_open(&r->db, path, &t, 1, "pfi_records_meta", "pfi-records",
                       create, durable, err);
  if (rc < 0) {
    free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void pfi_records_close(struct pfi_records *r) {
  if (!r)
    return;
  pfi_db_close(r->db);
  free(r);
}

static void to_row(struct row *w, const char *run,
                   const struct pfi_ctl_record *x) {
  memset(w, 0, sizeof *w);
  snprintf(w->run, sizeof w->run, "%s", run ? run : "");
  w->seq = (int64_t)x->seq;
  w->t_s = x->t_s;
  memcpy(w->event, x->event, sizeof w->event);
  w->target_w = x->target_w;
  memcpy(w->job, x->job, sizeof w->job);
  memcpy(w->family, x->family, sizeof w->family);
  memcpy(w->phase, x->phase, sizeof w->phase);
  w->cap_req_w = x->cap_req_w;
  w->cap_enf_w = x->cap_enf_w;
  w->draw_w = x->draw_w;
  w->pfi = x->pfi;
  w->pfi_lo = x->pfi_lo;
  w->pfi_hi = x->pfi_hi;
  w->tput_before = x->tput_before;
  w->tput_pred = x->tput_pred;
  w->tput_after = x->tput_after;
  snprintf(w->reason, sizeof w->reason, "%s", pfi_ctl_reason_name(x->reason));
  w->max_loss = x->max_loss;
  w->protect = x->protect;
  w->shortfall_w = x->shortfall_w;
  w->complete = x->complete;
}

int pfi_records_period(struct pfi_records *r, const char *run,
                       const struct pfi_ctl_output *out,
                       struct pfi_error *err) {
  if (out->nrec == 0 && out->ndone == 0)
    return 0;
  int rc = pfi_db_begin(r->db, err);
  if (rc < 0)
    return rc;
  /* A completed decision is written whole again: the controller keeps
   * every field of it (struct pfi_ctl_record) and the key is (run, seq). */
  struct row w;
  for (size_t i = 0; i < out->nrec + out->ndone && rc == 0; i++) {
    to_row(&w, run, i < out->nrec ? &out->rec[i] : &out->done[i - out->nrec]);
    rc = pfi_db_put(r->db, &records_table, &w, err);
  }
  if (rc == 0)
    rc = pfi_db_commit(r->db, err);
  if (rc < 0)
    pfi_db_rollback(r->db);
  return rc;
}

struct each_ctx {
  int (*fn)(void *ctx, const struct pfi_records_row *row);
  void *ctx;
};

static int each_row(void *ctx, const void *p) {
  const struct each_ctx *e = ctx;
  const struct row *w = p;
  struct pfi_records_row row;
  struct pfi_ctl_record *x = &row.rec;
  memset(&row, 0, sizeof row);
  memcpy(row.run, w->run, sizeof row.run);
  x->seq = (uint64_t)w->seq;
  x->t_s = w->t_s;
  memcpy(x->event, w->event, sizeof x->event);
  x->target_w = w->target_w;
  memcpy(x->job, w->job, sizeof x->job);
  memcpy(x->family, w->family, sizeof x->family);
  memcpy(x->phase, w->phase, sizeof x->phase);
  x->cap_req_w = w->cap_req_w;
  x->cap_enf_w = w->cap_enf_w;
  x->draw_w = w->draw_w;
  x->pfi = w->pfi;
  x->pfi_lo = w->pfi_lo;
  x->pfi_hi = w->pfi_hi;
  x->tput_before = w->tput_before;
  x->tput_pred = w->tput_pred;
  x->tput_after = w->tput_after;
  x->reason = pfi_ctl_reason_parse(w->reason);
  x->max_loss = w->max_loss;
  x->protect = (int)w->protect;
  x->shortfall_w = w->shortfall_w;
  x->complete = (int)w->complete;
  return e->fn(e->ctx, &row);
}

int pfi_records_each(struct pfi_records *r, const char *event, const char *job,
                     int (*fn)(void *ctx, const struct pfi_records_row *row),
                     void *ctx, struct pfi_error *err) {
  struct pfi_db_cond c[2];
  size_t n = 0;
  if (event)
    c[n++] = (struct pfi_db_cond){"event", PFI_DB_EQ, event, 0};
  if (job)
    c[n++] = (struct pfi_db_cond){"job", PFI_DB_EQ, job, 0};
  struct each_ctx e = {fn, ctx};
  return pfi_db_each(r->db, &records_table, c, n, 0, each_row, &e, err);
}
