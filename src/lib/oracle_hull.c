/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The oracle's hull segments (oracle.c): each job's upper concave hull,
 * the segments' sort by slope, and a library's segments sorted once.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_int.h"
#include "problem_int.h"

/* Slope of the chord between breakpoints a < b, computed exactly as a hull
 * segment's slope is. */
static double chord(const double *x, const double *y, uint32_t a, uint32_t b) {
  return (y[b] - y[a]) / (x[b] - x[a]);
}

/* Upper concave hull of job breakpoints [a, b] (relative indices); appends
 * its segments. Collinear points are dropped (the gap test below then sees
 * no gap on them).
 *
 * A point is kept only when the computed slopes of its two segments
 * strictly decrease, compared as the very numbers stored in the segments.
 * The greedy fill relies on it: a job's segments must come out of the
 * sort in hull order. (An exact cross-product test can keep a vertex of
 * nearly collinear points whose two rounded slopes come out equal or in
 * the wrong order; the sort then filled a later segment first, the job's
 * power no longer matched the point whose value was computed, and an
 * overestimated value pruned the true optimum.) Dropping such a vertex
 * moves the envelope by a rounding error only, far below the tolerance. */
int pfi__oracle_hull(const struct pfi_problem *p, size_t job, uint32_t a,
                     uint32_t b, struct seg **out, size_t *n, size_t *cap) {
  const double *x = p->x + p->off[job], *y = p->y + p->off[job];
  /* The hull's stack: on the C stack for curves of up to 128 points (all
   * measured ones), else on the heap. */
  uint32_t sbuf[130];
  uint32_t *st = b - a + 1 <= 128 ? sbuf : malloc((b - a + 2) * sizeof *st);
  size_t top = 0;
  if (!st)
    return -1;
  for (uint32_t i = a; i <= b; i++) {
    while (top >= 2) {
      uint32_t s0 = st[top - 2], s1 = st[top - 1];
      if (!(chord(x, y, s0, s1) > chord(x, y, s1, i)))
        top--;
      else
        break;
    }
    st[top++] = i;
  }
  for (size_t k = 0; k + 1 < top; k++) {
    if (*n == *cap) {
      size_t nc = *cap ? 2 * *cap : 64;
      struct seg *s = realloc(*out, nc * sizeof *s);
      if (!s) {
        if (st != sbuf)
          free(st);
        return -1;
      }
      *out = s;
      *cap = nc;
    }
    struct seg *s = &(*out)[(*n)++];
    s->a = st[k];
    s->b = st[k + 1];
    s->len = x[s->b] - x[s->a];
    s->slope = (y[s->b] - y[s->a]) / s->len;
    s->job = job;
  }
  if (st != sbuf)
    free(st);
  return 0;
}

/* Sortable key of a double: larger slope -> smaller key (descending). */
static uint64_t desc_key(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  u = (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
  return ~u;
}

struct kix {
  uint64_t k;
  size_t i;
};

/* Sorts segments by slope, descending, ties in build order (job, then
 * segment): a stable LSD radix sort of (key, index) pairs, 11 bits per pass,
 * passes whose digit is the same for every key skipped, then one
 * permutation of the segments. Linear time; deterministic. */
int pfi__oracle_sort_segs(struct seg **sp, size_t n) {
  if (n < 2)
    return 0;
  const struct seg *s = *sp;
  struct kix *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  struct seg *tmp = malloc(n * sizeof *tmp);
  size_t *cnt = malloc(2049 * sizeof *cnt);
  if (!a || !b || !tmp || !cnt) {
    free(a);
    free(b);
    free(tmp);
    free(cnt);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    a[i].k = desc_key(s[i].slope);
    a[i].i = i;
  }
  /* Few segments (a sampled workload's): 8-bit digits, and only those
   * that differ between keys, cost less than 11-bit passes. Same stable
   * LSD order: by key, ties by index. */
  if (n <= 4096) {
    uint64_t all_and = ~0ULL, all_or = 0;
    for (size_t i = 0; i < n; i++) {
      all_and &= a[i].k;
      all_or |= a[i].k;
    }
    size_t c8[256];
    for (int shift = 0; shift < 64; shift += 8) {
      if ((((all_and ^ all_or) >> shift) & 0xFF) == 0)
        continue; /* one digit for all: the order stays */
      memset(c8, 0, sizeof c8);
      for (size_t i = 0; i < n; i++)
        c8[(a[i].k >> shift) & 0xFF]++;
      size_t sum = 0;
      for (int d = 0; d < 256; d++) {
        size_t t = c8[d];
        c8[d] = sum;
        sum += t;
      }
      for (size_t i = 0; i < n; i++)
        b[c8[(a[i].k >> shift) & 0xFF]++] = a[i];
      struct kix *t = a;
      a = b;
      b = t;
    }
  }
  for (int shift = 0; shift < 64 && n > 4096; shift += 11) {
    memset(cnt, 0, 2049 * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
      cnt[((a[i].k >> shift) & 0x7FF) + 1]++;
    if (cnt[((a[0].k >> shift) & 0x7FF) + 1] == n)
      continue; /* one digit for all: the order stays */
    for (size_t d = 0; d < 2048; d++)
      cnt[d + 1] += cnt[d];
    for (size_t i = 0; i < n; i++)
      b[cnt[(a[i].k >> shift) & 0x7FF]++] = a[i];
    struct kix *t = a;
    a = b;
    b = t;
  }
  for (size_t i = 0; i < n; i++)
    tmp[i] = s[a[i].i];
  free(a);
  free(b);
  free(*sp);
  *sp = tmp; /* the sorted copy replaces the array */
  free(cnt);
  return 0;
}

/* The largest |y| of job i's breakpoints. */
double pfi__oracle_job_ymax(const struct pfi_problem *p, size_t i) {
  double ym = 0;
  for (size_t k = p->off[i]; k < p->off[i + 1]; k++)
    if (fabs(p->y[k]) > ym)
      ym = fabs(p->y[k]);
  return ym;
}

static int cmp_kix(const void *a, const void *b) {
  const struct kix *x = a, *y = b;
  if (x->k != y->k)
    return x->k < y->k ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

void pfi__hull_lib_free(struct pfi__hull_lib *h) {
  if (!h)
    return;
  free(h->off);
  free(h->seg);
  free(h->rank);
  free(h->ymax);
  free(h);
}

int pfi__hull_lib_new(struct pfi__hull_lib **out, const struct pfi_problem *lib,
                      struct pfi_error *err) {
  *out = NULL;
  struct pfi__hull_lib *h = calloc(1, sizeof *h);
  size_t L = lib->njobs, cap = 0, M = 0;
  struct kix *ki = NULL;
  if (!h || !(h->off = malloc((L + 1) * sizeof *h->off)) ||
      !(h->ymax = malloc((L + 1) * sizeof *h->ymax)))
    goto nomem;
  h->njobs = L;
  h->off[0] = 0;
  for (size_t j = 0; j < L; j++) {
    size_t m = lib->off[j + 1] - lib->off[j];
    if (m > UINT32_MAX / 2) {
      pfi__hull_lib_free(h);
      return pfi_error_set(err, PFI_EINVAL, "job %zu has too many points", j);
    }
    if (pfi__oracle_hull(lib, j, 0, (uint32_t)(m - 1), &h->seg, &M, &cap) < 0)
      goto nomem;
    h->off[j + 1] = M;
    h->ymax[j] = pfi__oracle_job_ymax(lib, j);
  }
  if (!(h->rank = malloc((M + 1) * sizeof *h->rank)) ||
      !(ki = malloc((M + 1) * sizeof *ki)))
    goto nomem;
  for (size_t t = 0; t < M; t++) {
    ki[t].k = desc_key(h->seg[t].slope);
    ki[t].i = t;
  }
  qsort(ki, M, sizeof *ki, cmp_kix);
  for (size_t t = 0; t < M; t++) {
    if (t > 0 && ki[t].k != ki[t - 1].k)
      h->nrank++;
    h->rank[ki[t].i] = (uint32_t)h->nrank;
  }
  if (M > 0)
    h->nrank++;
  free(ki);
  *out = h;
  return 0;
nomem:
  free(ki);
  pfi__hull_lib_free(h);
  return pfi_error_set(err, PFI_ENOMEM, "out of memory");
}
