/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Curves and sets of curves: building them point by point, the pool of a
 * set read from a file, restricting a set to some caps, interpolation. The
 * reading of curves files is curve_read.c (one thread) and
 * curve_threads.c (two). */
#include "pfi/curve.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "curve_int.h"
#include "../base/huge_int.h"

void pfi_curveset_init(struct pfi_curveset *set) {
  memset(set, 0, sizeof *set);
}

/* ---- the pool of a set read from a file ---- */

/* Blocks, newest first, from which a read set's job names and first point
 * arrays are cut: two allocations per job, and their memory faulted in a
 * 4 KiB page at a time, cost more than the rest of reading a large file's
 * new job. Blocks double up to 64 MiB; large ones are advised to huge
 * pages, as pfi_read_file's buffer is. Nothing is freed before the set. */
struct pool_block {
  struct pool_block *next;
  size_t used, cap;
  /* cap bytes follow, 16-byte aligned */
  _Alignas(16) unsigned char data[];
};

static void *pool_alloc(struct pfi_curveset *set, size_t n) {
  struct pool_block *b = set->pool;
  n = (n + 15) & ~(size_t)15;
  if (!b || b->cap - b->used < n) {
    size_t cap = b ? b->cap * 2 : (size_t)1 << 20;
    if (cap > (size_t)64 << 20)
      cap = (size_t)64 << 20;
    if (cap < n)
      cap = n;
    struct pool_block *nb = malloc(sizeof *nb + cap);
    if (!nb)
      return NULL;
    pfi__advise_huge(nb->data, cap);
    nb->next = b;
    nb->used = 0;
    nb->cap = cap;
    set->pool = b = nb;
  }
  void *p = b->data + b->used;
  b->used += n;
  return p;
}

/* Whether p lies in one of set's pool blocks (then it is not freed). */
static int in_pool(const struct pfi_curveset *set, const void *p) {
  for (const struct pool_block *b = set->pool; b; b = b->next)
    if ((const unsigned char *)p >= b->data &&
        (const unsigned char *)p < b->data + b->cap)
      return 1;
  return 0;
}

void pfi_curveset_release(struct pfi_curveset *set) {
  if (!set)
    return;
  for (size_t i = 0; i < set->n; i++) {
    if (!set->pool || !in_pool(set, set->c[i].job))
      free(set->c[i].job);
    if (!set->pool || !in_pool(set, set->c[i].pts))
      free(set->c[i].pts);
  }
  for (struct pool_block *b = set->pool, *nx; b; b = nx) {
    nx = b->next;
    free(b);
  }
  free(set->c);
  free(set->source);
  free(set->unit);
  memset(set, 0, sizeof *set);
}

struct pfi_curve *pfi_curveset_find(const struct pfi_curveset *set,
                                    const char *job) {
  for (size_t i = 0; i < set->n; i++)
    if (strcmp(set->c[i].job, job) == 0)
      return &set->c[i];
  return NULL;
}

/* A new curve for job (len bytes) at the end of set; its name and room
 * for six points cut from set's pool when `pooled`. */
struct pfi_curve *pfi__curve_new(struct pfi_curveset *set, const char *job,
                                 size_t len, int pooled,
                                 struct pfi_error *err) {
  if (set->n == set->cap) {
    size_t ncap = set->cap ? set->cap * 2 : 16;
    struct pfi_curve *nc = realloc(set->c, ncap * sizeof *nc);
    if (!nc) {
      pfi_error_set(err, PFI_ENOMEM, "out of memory");
      return NULL;
    }
    pfi__advise_huge(nc + set->cap, (ncap - set->cap) * sizeof *nc);
    set->c = nc;
    set->cap = ncap;
  }
  struct pfi_curve *c = &set->c[set->n];
  memset(c, 0, sizeof *c);
  c->job = pooled ? pool_alloc(set, len + 1) : malloc(len + 1);
  if (c->job) {
    /* job need not end at len (a name read in place ends at a comma). */
    memcpy(c->job, job, len);
    c->job[len] = '\0';
  }
  if (c->job && pooled) {
    c->pts = pool_alloc(set, 6 * sizeof *c->pts);
    if (!c->pts) {
      pfi_error_set(err, PFI_ENOMEM, "out of memory");
      return NULL;
    }
    c->cap = 6;
  }
  if (!c->job) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    return NULL;
  }
  set->n++;
  return c;
}

/* Inserts keeping caps ascending. Returns 1 on a duplicate cap. */
int pfi__curve_insert(const struct pfi_curveset *set, struct pfi_curve *c,
                      const struct pfi_point *pt, struct pfi_error *err) {
  if (c->n == c->cap) {
    /* Room for six points first: measured grids have four to six caps
     * (200-700 W in steps of 100 on an H200), and a large file holds
     * hundreds of thousands of curves. */
    size_t ncap = c->cap ? c->cap * 2 : 6;
    struct pfi_point *np;
    if (set->pool && c->pts && in_pool(set, c->pts)) {
      /* Out of the pool's room: the points move to an allocation. */
      np = malloc(ncap * sizeof *np);
      if (np)
        memcpy(np, c->pts, c->n * sizeof *np);
    } else {
      np = realloc(c->pts, ncap * sizeof *np);
    }
    if (!np)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    c->pts = np;
    c->cap = ncap;
  }
  size_t k = c->n;
  while (k > 0 && c->pts[k - 1].cap_w > pt->cap_w)
    k--;
  if (k > 0 && c->pts[k - 1].cap_w == pt->cap_w)
    return 1;
  memmove(&c->pts[k + 1], &c->pts[k], (c->n - k) * sizeof *c->pts);
  c->pts[k] = *pt;
  c->n++;
  return 0;
}

int pfi_curveset_add(struct pfi_curveset *set, const char *job,
                     const struct pfi_point *pt, struct pfi_error *err) {
  struct pfi_curve *c = pfi_curveset_find(set, job);
  if (!c) {
    c = pfi__curve_new(set, job, strlen(job), 0, err);
    if (!c)
      return PFI_ENOMEM;
    c->first_line = pt->line;
  }
  int rc = pfi__curve_insert(set, c, pt, err);
  if (rc == 1)
    return pfi_error_set(err, PFI_EINVAL, "job '%s': duplicate cap %g W", job,
                         pt->cap_w);
  return rc;
}

static int cap_match(double a, double b) {
  double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
  return fabs(a - b) <= 1e-9 * (m > 1.0 ? m : 1.0);
}

/* Index of the first point of `c` whose cap matches `cap`, or -1. */
static long find_cap(const struct pfi_curve *c, double cap) {
  for (size_t i = 0; i < c->n; i++)
    if (cap_match(c->pts[i].cap_w, cap))
      return (long)i;
  return -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int pfi_curveset_restrict(struct pfi_curveset *set, const double *caps,
                          size_t ncaps, struct pfi_error *err) {
  for (size_t j = 0; j < ncaps; j++)
    if (!isfinite(caps[j]) || !(caps[j] > 0))
      return pfi_error_set(err, PFI_EINVAL,
                           "--caps: cap %g is not a positive number", caps[j]);
  double *u = malloc((ncaps ? ncaps : 1) * sizeof *u);
  if (!u)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (ncaps)
    memcpy(u, caps, ncaps * sizeof *u);
  qsort(u, ncaps, sizeof *u, cmp_double);
  size_t m = 0;
  int rc = 0;
  for (size_t j = 0; j < ncaps; j++) {
    if (m > 0 && cap_match(u[m - 1], u[j])) {
      /* A cap listed twice is a typo for another cap, not a request. */
      rc = pfi_error_set(err, PFI_EINVAL, "--caps: cap %g W is listed twice",
                         u[j]);
      goto out;
    }
    u[m++] = u[j];
  }
  if (m < 2) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "--caps: needs at least 2 distinct caps, got %zu", m);
    goto out;
  }
  /* Check every job first, so that a failure leaves the set unchanged. */
  for (size_t i = 0; i < set->n; i++)
    for (size_t j = 0; j < m; j++)
      if (find_cap(&set->c[i], u[j]) < 0) {
        rc = pfi_error_setloc(err, PFI_EPARSE, set->source,
                              set->c[i].first_line, 1,
                              "job '%s' has no point at cap %g W requested "
                              "by --caps",
                              set->c[i].job, u[j]);
        goto out;
      }
  for (size_t i = 0; i < set->n; i++) {
    struct pfi_curve *c = &set->c[i];
    size_t w = 0;
    /* Points are sorted by cap, as are the requested caps, so the kept
     * points stay sorted and their indices only grow. */
    for (size_t j = 0; j < m; j++) {
      long k = find_cap(c, u[j]);
      c->pts[w++] = c->pts[k];
    }
    c->n = w;
  }
out:
  free(u);
  return rc;
}

/* Whether point a comes before point b in the order by power, ties in cap
 * order (the points are stored by cap, so by index). */
static int before(const struct pfi_curve *c, size_t a, size_t b) {
  return c->pts[a].power_w < c->pts[b].power_w ||
         (c->pts[a].power_w == c->pts[b].power_w && a < b);
}

/*
 * Interpolates y at power_w over the points ordered by power (ties in cap
 * order). The two points around power_w are found in one pass: `hi` is the
 * first point in that order with power >= power_w, `lo` the last one with
 * power < power_w. No sorted copy is made, so there is no allocation that
 * could fail (a failed one used to return 0 as if it were the answer).
 * A curve without points has no value: NAN.
 */
static double interp_by_power(const struct pfi_curve *c, double power_w,
                              int want_cap) {
  size_t n = c->n;
  if (n == 0)
    return NAN;
#define Y(i) (want_cap ? c->pts[i].cap_w : c->pts[i].tokens_per_s)
  size_t first = 0, last = 0;
  long lo = -1, hi = -1;
  for (size_t i = 0; i < n; i++) {
    if (before(c, i, first))
      first = i;
    if (before(c, last, i))
      last = i;
    if (c->pts[i].power_w < power_w) {
      if (lo < 0 || before(c, (size_t)lo, i))
        lo = (long)i;
    } else if (hi < 0 || before(c, i, (size_t)hi)) {
      hi = (long)i;
    }
  }
  double y;
  if (power_w <= c->pts[first].power_w)
    y = Y(first);
  else if (power_w >= c->pts[last].power_w)
    y = Y(last);
  else {
    /* Here both exist: power_w lies strictly inside the power range. */
    double x0 = c->pts[lo].power_w, x1 = c->pts[hi].power_w;
    if (x1 > x0) {
      double dy = Y(hi) - Y(lo);
      double num = dy * (power_w - x0);
      /* Values near DBL_MAX: the product overflows where the fraction of
       * the interval, taken first, does not (the result lies between the
       * two points, so it is finite). The usual order otherwise, so that
       * ordinary inputs give the same bits as always. */
      if (isfinite(num) && isfinite(x1 - x0))
        y = Y(lo) + num / (x1 - x0);
      else
        y = Y(lo) + dy * ((0.5 * power_w - 0.5 * x0) / (0.5 * x1 - 0.5 * x0));
    } else {
      y = Y(hi);
    }
  }
#undef Y
  return y;
}

double pfi_curve_tokens_at(const struct pfi_curve *c, double power_w) {
  return interp_by_power(c, power_w, 0);
}

double pfi_curve_cap_at(const struct pfi_curve *c, double power_w) {
  return interp_by_power(c, power_w, 1);
}
