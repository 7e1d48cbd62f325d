/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pfid's records file: the published assignments, the log of what pfid
 * did, and the decisions of its control module, three tables of
 * dbtable.h (docs/fleet.md, "The control module in pfid" and `pfid`;
 * the SQL is in the store).
 */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/dbtable.h"
#include "pfid_int.h"

struct assign_row {
  int64_t id;
  double t_s;
  char leader[PFI_FLEET_NAME_MAX], node[PFI_FLEET_NAME_MAX];
  int64_t seq;
  char event[PFI_FLEET_NAME_MAX], kind[16];
  double target_w;
  char caps_mw[PFI_FLEET_MAX_GPUS * 11 + 1];
};

struct log_row {
  int64_t id;
  double t_s;
  char pfid[PFI_FLEET_NAME_MAX], what[32], detail[512];
};

struct audit_row {
  int64_t id;
  double t_s;
  char pfid[PFI_FLEET_NAME_MAX], who[PFI_API_TOKEN_NAME_MAX], role[16],
      peer[80], method[8], path[128], body[384];
  int64_t status;
  char error[256];
};

struct decision_row {
  int64_t epoch, seq;
  double t_s;
  char leader[PFI_FLEET_NAME_MAX], event[64];
  double target_w;
  char job[96], family[64], phase[16], reason[32];
  double cap_req_w, cap_enf_w, draw_w, pfi, pfi_lo, pfi_hi, tput_before,
      tput_pred, tput_after, max_loss;
  int64_t protect;
  double shortfall_w;
  int64_t complete;
};

#define NN PFI_COL_NOTNULL
#define KEY (PFI_COL_KEY | PFI_COL_NOTNULL)
#define COL(S, f, ty, fl)                                                      \
  {                                                                            \
#f, ty, offsetof(struct S, f),                                             \
        ty == PFI_COL_TEXT ? sizeof((struct S *)0)->f : 0, fl                  \
  }

static const struct pfi_col assign_cols[] = {
    COL(assign_row, id, PFI_COL_AUTO, 0),
    COL(assign_row, t_s, PFI_COL_REAL, NN),
    COL(assign_row, leader, PFI_COL_TEXT, NN),
    COL(assign_row, node, PFI_COL_TEXT, KEY),
    COL(assign_row, seq, PFI_COL_INT, KEY),
    COL(assign_row, event, PFI_COL_TEXT, NN),
    COL(assign_row, kind, PFI_COL_TEXT, NN),
    COL(assign_row, target_w, PFI_COL_REAL, 0),
    COL(assign_row, caps_mw, PFI_COL_TEXT, NN),
};

static const struct pfi_col log_cols[] = {
    COL(log_row, id, PFI_COL_AUTO, 0),
    COL(log_row, t_s, PFI_COL_REAL, NN),
    COL(log_row, pfid, PFI_COL_TEXT, NN),
    COL(log_row, what, PFI_COL_TEXT, NN),
    COL(log_row, detail, PFI_COL_TEXT, NN),
};

static const struct pfi_col audit_cols[] = {
    COL(audit_row, id, PFI_COL_AUTO, 0),
    COL(audit_row, t_s, PFI_COL_REAL, NN),
    COL(audit_row, pfid, PFI_COL_TEXT, NN),
    COL(audit_row, who, PFI_COL_TEXT, NN),
    COL(audit_row, role, PFI_COL_TEXT, NN),
    COL(audit_row, peer, PFI_COL_TEXT, NN),
    COL(audit_row, method, PFI_COL_TEXT, NN),
    COL(audit_row, path, PFI_COL_TEXT, NN),
    COL(audit_row, body, PFI_COL_TEXT, NN),
    COL(audit_row, status, PFI_COL_INT, NN),
    COL(audit_row, error, PFI_COL_TEXT, 0),
};

static const struct pfi_col decision_cols[] = {
    COL(decision_row, epoch, PFI_COL_INT, KEY),
    COL(decision_row, seq, PFI_COL_INT, KEY),
    COL(decision_row, t_s, PFI_COL_REAL, NN),
    COL(decision_row, leader, PFI_COL_TEXT, NN),
    COL(decision_row, event, PFI_COL_TEXT, NN),
    COL(decision_row, target_w, PFI_COL_REAL, 0),
    COL(decision_row, job, PFI_COL_TEXT, 0),
    /* Added after the others: a file of an older pfid gains them when
     * opened, its rows NULL there (dbtable.h). */
    COL(decision_row, family, PFI_COL_TEXT, 0),
    COL(decision_row, phase, PFI_COL_TEXT, 0),
    COL(decision_row, reason, PFI_COL_TEXT, NN),
    COL(decision_row, cap_req_w, PFI_COL_REAL, 0),
    COL(decision_row, cap_enf_w, PFI_COL_REAL, 0),
    COL(decision_row, draw_w, PFI_COL_REAL, 0),
    COL(decision_row, pfi, PFI_COL_REAL, 0),
    COL(decision_row, pfi_lo, PFI_COL_REAL, 0),
    COL(decision_row, pfi_hi, PFI_COL_REAL, 0),
    COL(decision_row, tput_before, PFI_COL_REAL, 0),
    COL(decision_row, tput_pred, PFI_COL_REAL, 0),
    COL(decision_row, tput_after, PFI_COL_REAL, 0),
    COL(decision_row, max_loss, PFI_COL_REAL, 0),
    COL(decision_row, protect, PFI_COL_INT, 0),
    COL(decision_row, shortfall_w, PFI_COL_REAL, 0),
    COL(decision_row, complete, PFI_COL_INT, NN),
};
#undef COL
#undef KEY
#undef NN

#define TABLE(name, cols, S)                                                   \
  { name, cols, sizeof cols / sizeof cols[0], sizeof(struct S) }
static const struct pfi_table assign_table =
    TABLE("fleet_assignments", assign_cols, assign_row);
static const struct pfi_table log_table = TABLE("fleet_log", log_cols, log_row);
static const struct pfi_table decision_table =
    TABLE("fleet_decisions", decision_cols, decision_row);
static const struct pfi_table audit_table =
    TABLE("fleet_audit", audit_cols, audit_row);
#undef TABLE

/* ---- rows that could not be written --------------------------------------
 * Every row goes through a queue (a ring of PFID_REC_QUEUE, oldest first):
 * written at once (or, between pfid_records_begin and _end, together in one
 * transaction); a write that fails (a full file system, an I/O error)
 * leaves its rows queued, and the next write, or the period's
 * pfid_records_flush, writes them first, in order, once it can. Past the
 * bound the oldest are dropped and counted. */
struct pfid_rec_item {
  const struct pfi_table *t;
  union {
    struct assign_row a;
    struct log_row l;
    struct decision_row dn;
    struct audit_row au;
  } u;
};

struct pfid_rec {
  pthread_mutex_t mu;
  struct pfid_rec_item *q; /* PFID_REC_QUEUE */
  size_t head, len;
  int deferred;   /* between begin and end */
  int failing;    /* the newest write failed */
  unsigned long failed, dropped, written_late;
  char err[256];  /* the newest failure */
};

/* Writes the queue in one transaction: 0, or -1 (all kept). With r->mu. */
static int rec_write(struct pfi_pfid *d, struct pfid_rec *r) {
  struct pfi_error e;
  if (!r->len)
    return 0;
  int rc = pfi_db_begin(d->db, &e);
  for (size_t i = 0; rc == 0 && i < r->len; i++) {
    struct pfid_rec_item *it = &r->q[(r->head + i) % PFID_REC_QUEUE];
    rc = pfi_db_put(d->db, it->t, &it->u, &e);
  }
  if (rc == 0)
    rc = pfi_db_commit(d->db, &e);
  if (rc < 0) {
    pfi_db_rollback(d->db);
    r->failed++;
    if (!r->failing)
      fprintf(stderr,
              "pfid %s: records: cannot write %s: %s (%zu rows held in "
              "memory until it can)\n",
              d->id, d->o.records, e.msg, r->len);
    r->failing = 1;
    snprintf(r->err, sizeof r->err, "%.250s", e.msg);
    return -1;
  }
  if (r->failing) {
    r->written_late += r->len;
    fprintf(stderr, "pfid %s: records: written again (%zu rows held)\n",
            d->id, r->len);
  }
  r->failing = 0;
  r->head = r->len = 0;
  return 0;
}

static void rec_put(struct pfi_pfid *d, const struct pfi_table *t,
                    const void *row, size_t size) {
  struct pfid_rec *r = d->rec;
  if (!r || !d->db)
    return;
  pthread_mutex_lock(&r->mu);
  if (r->len == PFID_REC_QUEUE) {
    r->head = (r->head + 1) % PFID_REC_QUEUE;
    r->len--;
    r->dropped++;
  }
  struct pfid_rec_item *it = &r->q[(r->head + r->len++) % PFID_REC_QUEUE];
  it->t = t;
  memcpy(&it->u, row, size);
  if (!r->deferred)
    rec_write(d, r);
  pthread_mutex_unlock(&r->mu);
}

void pfid_records_begin(struct pfi_pfid *d) {
  if (!d->rec)
    return;
  pthread_mutex_lock(&d->rec->mu);
  d->rec->deferred = 1;
  pthread_mutex_unlock(&d->rec->mu);
}

void pfid_records_end(struct pfi_pfid *d) {
  if (!d->rec)
    return;
  pthread_mutex_lock(&d->rec->mu);
  d->rec->deferred = 0;
  rec_write(d, d->rec);
  pthread_mutex_unlock(&d->rec->mu);
}

void pfid_records_flush(struct pfi_pfid *d) { pfid_records_end(d); }

void pfid_records_state(struct pfi_pfid *d, struct pfid_records_state *s) {
  memset(s, 0, sizeof *s);
  if (!d->rec)
    return;
  pthread_mutex_lock(&d->rec->mu);
  s->failing = d->rec->failing;
  s->pending = d->rec->len;
  s->failed = d->rec->failed;
  s->dropped = d->rec->dropped;
  s->written_late = d->rec->written_late;
  snprintf(s->err, sizeof s->err, "%.250s", d->rec->err);
  pthread_mutex_unlock(&d->rec->mu);
}

void pfid_records_close(struct pfi_pfid *d) {
  if (!d->rec)
    return;
  pfid_records_end(d); /* a last try */
  pthread_mutex_destroy(&d->rec->mu);
  free(d->rec->q);
  free(d->rec);
  d->rec = NULL;
}

int pfid_records_open(struct pfi_pfid *d, struct pfi_error *err) {
  if (!(d->rec = calloc(1, sizeof *d->rec)) ||
      !(d->rec->q = calloc(PFID_REC_QUEUE, sizeof *d->rec->q))) {
    free(d->rec);
    d->rec = NULL;
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  pthread_mutex_init(&d->rec->mu, NULL);
  /* Two pfid on one host may share the file (the standby writes only once
   * it leads): the store waits for the other's transaction. */
  const struct pfi_table *t[] = {&assign_table, &log_table, &decision_table,
                                 &audit_table};
  int rc = pfi_db_open(&d->db, d->o.records, t, 4, NULL, NULL, 1, 1, err);
  /* A file that is not a database, or whose tables cannot take pfid's
   * (a missing key or NOT NULL column), is bad input (exit 2), as for the
   * stores. */
  if (rc == PFI_EDB) {
    if (err)
      err->code = PFI_EPARSE;
    rc = PFI_EPARSE;
  }
  return rc;
}

void pfid_records_log(struct pfi_pfid *d, const char *what,
                      const char *detail) {
  struct log_row w;
  memset(&w, 0, sizeof w);
  w.t_s = pfid_wall();
  snprintf(w.pfid, sizeof w.pfid, "%s", d->id);
  snprintf(w.what, sizeof w.what, "%s", what);
  snprintf(w.detail, sizeof w.detail, "%s", detail);
  rec_put(d, &log_table, &w, sizeof w);
}

void pfid_records_assign(struct pfi_pfid *d, const struct pfi_fleet_assign *a,
                         const char *kind) {
  struct assign_row w;
  memset(&w, 0, sizeof w);
  size_t k = 0;
  for (unsigned i = 0; i < a->n; i++)
    k += (size_t)snprintf(w.caps_mw + k, sizeof w.caps_mw - k, "%s%u",
                          i ? "," : "", a->cap_mw[i]);
  w.t_s = a->issued_s;
  snprintf(w.leader, sizeof w.leader, "%s", d->id);
  snprintf(w.node, sizeof w.node, "%s", a->node);
  w.seq = (int64_t)a->seq;
  snprintf(w.event, sizeof w.event, "%s", a->event);
  snprintf(w.kind, sizeof w.kind, "%s", kind);
  w.target_w = a->event[0] ? d->target_w : NAN;
  rec_put(d, &assign_table, &w, sizeof w);
}

void pfid_records_decision(struct pfi_pfid *d, const struct pfi_ctl_record *r) {
  struct decision_row w;
  memset(&w, 0, sizeof w);
  w.epoch = d->ctl_epoch;
  w.seq = (int64_t)r->seq;
  /* The decision's own time (r->t_s, on the module's clock: seconds since
   * its build plus 1 ms, pfid_ctl.c) as Unix time. Its row is written
   * again when it completes, a period or more later (its job's next
   * decision, or its settled throughput); stamped at that write, it came
   * after the decisions made since and the assignment that carried it. */
  w.t_s = pfid_wall() - (pfid_mono() - d->ctl_t0 + 1e-3 - r->t_s);
  snprintf(w.leader, sizeof w.leader, "%s", d->id);
  snprintf(w.event, sizeof w.event, "%s", r->event);
  w.target_w = r->target_w;
  snprintf(w.job, sizeof w.job, "%s", r->job);
  snprintf(w.family, sizeof w.family, "%s", r->family);
  snprintf(w.phase, sizeof w.phase, "%s", r->phase);
  snprintf(w.reason, sizeof w.reason, "%s", pfi_ctl_reason_name(r->reason));
  w.cap_req_w = r->cap_req_w;
  w.cap_enf_w = r->cap_enf_w;
  w.draw_w = r->draw_w;
  w.pfi = r->pfi;
  w.pfi_lo = r->pfi_lo;
  w.pfi_hi = r->pfi_hi;
  w.tput_before = r->tput_before;
  w.tput_pred = r->tput_pred;
  w.tput_after = r->tput_after;
  w.max_loss = r->max_loss;
  w.protect = r->protect;
  w.shortfall_w = r->shortfall_w;
  w.complete = r->complete;
  rec_put(d, &decision_table, &w, sizeof w);
}

struct assign_ctx {
  int (*fn)(void *ctx, const struct pfid_assign_rec *a);
  void *ctx;
};

static int assign_row_cb(void *ctx, const void *p) {
  const struct assign_ctx *c = ctx;
  const struct assign_row *w = p;
  struct pfid_assign_rec a = {w->id,  w->t_s,   w->leader, w->node,
                              w->seq, w->event, w->kind,   w->caps_mw};
  return c->fn(c->ctx, &a);
}

int pfid_records_assignments(struct pfi_pfid *d, int64_t since, size_t limit,
                             int (*fn)(void *ctx,
                                       const struct pfid_assign_rec *a),
                             void *ctx, struct pfi_error *err) {
  struct pfi_db_cond c = {"id", PFI_DB_GT, NULL, (double)since};
  struct assign_ctx ac = {fn, ctx};
  return pfi_db_each(d->db, &assign_table, &c, 1, limit, assign_row_cb, &ac,
                     err);
}

/* The audit trail (docs/security.md "Audit"): text fields are cut to their
 * column's size. */
void pfid_records_audit(struct pfi_pfid *d, const struct pfid_audit_rec *a) {
  struct audit_row w;
  memset(&w, 0, sizeof w);
  w.t_s = a->t_s;
  snprintf(w.pfid, sizeof w.pfid, "%s", d->id);
  snprintf(w.who, sizeof w.who, "%s", a->who);
  snprintf(w.role, sizeof w.role, "%s", a->role);
  snprintf(w.peer, sizeof w.peer, "%s", a->peer);
  snprintf(w.method, sizeof w.method, "%s", a->method);
  snprintf(w.path, sizeof w.path, "%s", a->path);
  snprintf(w.body, sizeof w.body, "%s", a->body);
  w.status = a->status;
  snprintf(w.error, sizeof w.error, "%s", a->error ? a->error : "");
  rec_put(d, &audit_table, &w, sizeof w);
}

struct audit_ctx {
  int (*fn)(void *ctx, const struct pfid_audit_rec *a);
  void *ctx;
};

static int audit_row_cb(void *ctx, const void *p) {
  const struct audit_ctx *c = ctx;
  const struct audit_row *w = p;
  struct pfid_audit_rec a = {w->id,   w->t_s,    w->pfid,   w->who,
                             w->role, w->peer,   w->method, w->path,
                             w->body, w->status, w->error};
  return c->fn(c->ctx, &a);
}

int pfid_records_audits(struct pfi_pfid *d, const struct pfid_audit_filter *f,
                        int (*fn)(void *ctx, const struct pfid_audit_rec *a),
                        void *ctx, struct pfi_error *err) {
  struct pfi_db_cond c[3] = {{"id", PFI_DB_GT, NULL, (double)f->since}};
  size_t nc = 1;
  if (!isnan(f->after_s))
    c[nc++] = (struct pfi_db_cond){"t_s", PFI_DB_GT, NULL, f->after_s};
  if (f->who)
    c[nc++] = (struct pfi_db_cond){"who", PFI_DB_EQ, f->who, 0};
  struct audit_ctx ac = {fn, ctx};
  return f->last ? pfi_db_each_last(d->db, &audit_table, c, nc, f->limit,
                                    audit_row_cb, &ac, err)
                 : pfi_db_each(d->db, &audit_table, c, nc, f->limit,
                               audit_row_cb, &ac, err);
}
