/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reading a curves CSV's data rows on two threads, with the result and
 * every error of one thread. */
#include "pfi/curve.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "curve_int.h"
#include "pfi/csv.h"

int pfi__rowbuf_push(struct rowbuf *b, const struct pfi_csv *csv,
                     const char *job, size_t jlen, const struct pfi_point *pt,
                     double gpus, size_t at, long at_line) {
  if (b->n == b->cap) {
    size_t ncap = b->cap ? 2 * b->cap : 4096;
    struct rowrec *nr = realloc(b->r, ncap * sizeof *nr);
    if (!nr)
      return PFI_ENOMEM;
    pfi__advise_huge(nr + b->cap, (ncap - b->cap) * sizeof *nr);
    b->r = nr;
    b->cap = ncap;
  }
  struct rowrec *x = &b->r[b->n++];
  x->pt = *pt;
  x->joff = (uint32_t)(job - csv->buf);
  x->jlen = (uint32_t)jlen;
  x->at = (uint32_t)at;
  x->skip = (uint32_t)(pt->line - at_line);
  x->gpus = (int)gpus;
  return 0;
}

/* ---- reading on two threads ---- */

/* Inputs smaller than this are read on one thread: the second thread's
 * start and the join would cost more than they save. */
#define TWO_THREADS_MIN ((size_t)4 << 20)

/* The number of threads to read csv's data rows with: `threads` when
 * given (1 or 2), else two for a large input when a processor is idle
 * (the one-minute load average below the processors less one). The second
 * thread costs 0.1-0.2 s of CPU more on a 300,000-job file (its copy of
 * the bytes, its rows, the join): on a machine whose processors are all
 * busy, two threads take longer than one. */
int pfi__curve_threads_for(const struct pfi_csv *csv, int threads) {
  if (threads > 0)
    return threads >= 2 ? 2 : 1;
  if (csv->len - csv->pos < TWO_THREADS_MIN)
    return 1;
  long np = sysconf(_SC_NPROCESSORS_ONLN);
  double load;
  if (np < 2 || getloadavg(&load, 1) != 1)
    return 1;
  return load < (double)np - 1.0 ? 2 : 1;
}

/* The second half of the input, parsed by a thread of its own from a copy
 * of its bytes: its rows' values, checked as one thread checks them, for
 * the first thread to join. The original bytes stay as they were, so that
 * the rows can be read on from any row, one thread as always, whenever a
 * row cannot simply be joined. */
struct half {
  struct rows r;
  struct rowbuf rows;
  struct pfi_csv csv;
  struct pfi_curveset set; /* stays empty */
  struct pfi_error err;
  const char *src; /* csv's bytes from the split on (read only) */
  size_t len;
  int rc;
};

static void *half_main(void *arg) {
  struct half *h = arg;
  h->csv.buf = malloc(h->len + 1);
  if (!h->csv.buf) {
    h->rc = PFI_ENOMEM;
    return NULL;
  }
  pfi__advise_huge(h->csv.buf, h->len);
  memcpy(h->csv.buf, h->src, h->len);
  h->csv.buf[h->len] = '\0';
  h->csv.len = h->len;
  h->csv.line = 1;
  h->rc = pfi__curve_read_rows(&h->r, &h->set, &h->csv, &h->err);
  return NULL;
}

static void half_free(struct half *h) {
  pfi__curve_rows_free(&h->r);
  free(h->rows.r);
  free(h->csv.f);
  free(h->csv.fline);
  free(h->csv.fcol);
  free(h->csv.flen);
  free(h->csv.buf);
}

/*
 * Joins the second half's rows, in order, as one thread would have read
 * them after the first half (csv is at the split, its line there is
 * base + 1). A row one thread would refuse for what an earlier row said
 * (a cap of its job again, another GPU count), and the row where the
 * second thread stopped on an error, are read again from the original
 * bytes on, by one thread, which gives the same set and the same error.
 */
static int join_rows(struct rows *r, struct pfi_curveset *set,
                     struct pfi_csv *csv, struct half *h,
                     struct pfi_error *err) {
  size_t split = csv->pos;
  long base = csv->line - 1;
  for (size_t k = 0; k < h->rows.n; k++) {
    const struct rowrec *x = &h->rows.r[k];
    const char *job = h->csv.buf + x->joff;
    long ci = -1;
    uint64_t hv = 0;
    /* A name read in place ends at its comma, not a NUL: by length. */
    if (r->last >= 0 && pfi__curve_name_is(set->c[r->last].job, job, x->jlen))
      ci = r->last;
    else if (r->last >= 0 && (size_t)r->last + 1 < set->n &&
             pfi__curve_name_is(set->c[r->last + 1].job, job, x->jlen))
      ci = r->last + 1;
    else
      hv = pfi__curve_hash(job, x->jlen);
    struct pfi_point pt = x->pt;
    pt.line += base;
    int rc =
        pfi__curve_row_apply(r, set, ci, job, x->jlen, hv, &pt, x->gpus, err);
    if (rc < 0)
      return rc;
    if (rc > 0) {
      csv->pos = split + x->at;
      csv->linepos = (long)csv->pos;
      csv->line = pt.line - (long)x->skip;
      return pfi__curve_read_rows(r, set, csv, err);
    }
  }
  if (h->rc < 0) {
    csv->pos = split + h->r.at;
    csv->linepos = (long)csv->pos;
    csv->line = h->r.at_line + base;
    return pfi__curve_read_rows(r, set, csv, err);
  }
  csv->pos = csv->len;
  return 0;
}

/*
 * Reads csv's data rows on two threads, with the result and every error
 * (message, file, line, column) one thread gives: another thread parses
 * the rows from a line end near the middle on, from a copy of their
 * bytes, while this one reads the rows before it; this one then joins
 * the other's rows in order. A first half with a quote (a quoted field
 * may hold the line end) is read on one thread, as are composite job
 * names and inputs of 4 GiB or more.
 */
int pfi__curve_read_rows_2(struct rows *r, struct pfi_curveset *set,
                           struct pfi_csv *csv, struct pfi_error *err) {
  size_t pos = csv->pos, len = csv->len;
  int can =
      len - pos >= 2 && r->cm->nparts == 0 && len - pos < (size_t)UINT32_MAX;
  const char *mid = can ? memchr(csv->buf + pos + (len - pos) / 2, '\n',
                                 len - pos - (len - pos) / 2)
                        : NULL;
  size_t split = mid ? (size_t)(mid - csv->buf) + 1 : len;
  if (split >= len || memchr(csv->buf + pos, '"', split - pos))
    return pfi__curve_read_rows(r, set, csv, err);
  struct half *h = calloc(1, sizeof *h);
  if (!h)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  h->r.cm = r->cm;
  memcpy(h->r.idx, r->idx, sizeof h->r.idx);
  memcpy(h->r.num, r->num, sizeof h->r.num);
  h->r.last = -1;
  h->r.out = &h->rows;
  h->r.at_line = 1;
  h->csv.name = csv->name;
  h->csv.nheader = csv->nheader;
  h->csv.header = csv->header;
  h->src = csv->buf + split;
  h->len = len - split;
  pthread_t th;
  if (pthread_create(&th, NULL, half_main, h) != 0) {
    free(h);
    return pfi__curve_read_rows(r, set, csv, err);
  }
  /* Without a quote in it, the first half ends at the split, where its
   * last record ends: the reader sees no byte beyond it. */
  csv->len = split;
  int rc = pfi__curve_read_rows(r, set, csv, err);
  csv->len = len;
  pthread_join(th, NULL);
  if (rc == 0 && csv->pos != split)
    rc = pfi_error_set(err, PFI_ESTATE,
                       "two-thread read: split at %zu, "
                       "first half ended at %zu",
                       split, csv->pos);
  if (rc == 0)
    rc = join_rows(r, set, csv, h, err);
  half_free(h);
  free(h);
  return rc;
}
