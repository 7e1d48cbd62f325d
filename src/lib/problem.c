/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Allocation problems: jobs as piecewise-linear throughput functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/monotone.h"
#include "pfi/oracle.h"
#include "problem_int.h"

void pfi_problem_init(struct pfi_problem *p) { memset(p, 0, sizeof *p); }

void pfi_problem_release(struct pfi_problem *p) {
  if (!p)
    return;
  free(p->off);
  free(p->x);
  free(p->y);
  memset(p, 0, sizeof *p);
}

void pfi_problem_clear(struct pfi_problem *p) {
  p->njobs = 0;
  p->npts = 0;
  if (p->off)
    p->off[0] = 0;
}

static int grow(struct pfi_problem *p, size_t addpts, struct pfi_error *err) {
  if (p->njobs + 2 > p->jobs_cap) {
    size_t nc = p->jobs_cap ? 2 * p->jobs_cap : 64;
    while (nc < p->njobs + 2)
      nc *= 2;
    size_t *o = realloc(p->off, nc * sizeof *o);
    if (!o)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    if (!p->off)
      o[0] = 0;
    p->off = o;
    p->jobs_cap = nc;
  }
  if (p->npts + addpts > p->pts_cap) {
    size_t nc = p->pts_cap ? 2 * p->pts_cap : 256;
    while (nc < p->npts + addpts)
      nc *= 2;
    double *x = realloc(p->x, nc * sizeof *x);
    if (!x)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    p->x = x;
    double *y = realloc(p->y, nc * sizeof *y);
    if (!y)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    p->y = y;
    p->pts_cap = nc;
  }
  return 0;
}

/* Linear interpolation on sorted, strictly increasing xs; clamped. */
static double interp(const double *xs, const double *ys, size_t n, double x) {
  if (n == 1 || x <= xs[0])
    return ys[0];
  if (x >= xs[n - 1])
    return ys[n - 1];
  size_t lo = 0, hi = n - 1;
  if (n <= 8) {
    /* Measured curves have a handful of points: the segment the binary
     * search finds (xs[lo] <= x < xs[lo + 1]) is the count of inner
     * breakpoints at or below x, counted without branches. */
    for (size_t k = 1; k + 1 < n; k++)
      lo += xs[k] <= x;
    hi = lo + 1;
  }
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (xs[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  double t = (x - xs[lo]) / (xs[hi] - xs[lo]);
  return ys[lo] + t * (ys[hi] - ys[lo]);
}

int pfi_problem_add(struct pfi_problem *p, const double *power_w,
                    const double *tokens, size_t n, double lo_w, double hi_w,
                    struct pfi_error *err) {
  if (n == 0)
    return pfi_error_set(err, PFI_EINVAL, "a job needs at least one point");
  if (!isfinite(lo_w) || !isfinite(hi_w) || lo_w > hi_w)
    return pfi_error_set(err, PFI_EINVAL, "bad power range [%g, %g] W", lo_w,
                         hi_w);
  for (size_t i = 0; i < n; i++)
    if (!isfinite(power_w[i]) || !isfinite(tokens[i]))
      return pfi_error_set(err, PFI_EINVAL,
                           "job %zu: point %zu is not finite (%g W, %g)",
                           p->njobs + 1, i + 1, power_w[i], tokens[i]);
  /* Sort a copy by power (insertion sort, stable: the first of equal
   * powers stays first and the later ones are dropped). Curves have a
   * handful of points. */
  double sx[64], sy[64];
  double *xs = n <= 64 ? sx : malloc(n * sizeof *xs);
  double *ys = n <= 64 ? sy : malloc(n * sizeof *ys);
  int rc = 0;
  if (!xs || !ys) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = m;
    int dup = 0;
    for (size_t j = 0; j < m; j++)
      if (xs[j] == power_w[i])
        dup = 1;
    if (dup)
      continue;
    while (k > 0 && xs[k - 1] > power_w[i]) {
      xs[k] = xs[k - 1];
      ys[k] = ys[k - 1];
      k--;
    }
    xs[k] = power_w[i];
    ys[k] = tokens[i];
    m++;
  }
  if (m == 0) { /* cannot happen (n > 0), but keeps the reads in bounds */
    rc = pfi_error_set(err, PFI_EINVAL, "a job needs at least one point");
    goto out;
  }
  double span = fabs(xs[m - 1]) + fabs(xs[0]) + 1.0;
  if (lo_w < xs[0] - 1e-9 * span || hi_w > xs[m - 1] + 1e-9 * span) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "range [%g, %g] W outside the points' power span "
                       "[%g, %g] W",
                       lo_w, hi_w, xs[0], xs[m - 1]);
    goto out;
  }
  if ((rc = grow(p, m + 2, err)) < 0)
    goto out;
  size_t w = p->npts;
  p->x[w] = lo_w;
  p->y[w] = interp(xs, ys, m, lo_w);
  w++;
  for (size_t i = 0; i < m; i++)
    if (xs[i] > lo_w && xs[i] < hi_w) {
      p->x[w] = xs[i];
      p->y[w] = ys[i];
      w++;
    }
  if (hi_w > lo_w) {
    p->x[w] = hi_w;
    p->y[w] = interp(xs, ys, m, hi_w);
    w++;
  }
  p->npts = w;
  p->njobs++;
  p->off[p->njobs] = w;
out:
  if (xs && xs != sx)
    free(xs);
  if (ys && ys != sy)
    free(ys);
  return rc;
}

int pfi_problem_add_curve(struct pfi_problem *p, const struct pfi_curve *c,
                          struct pfi_error *err) {
  if (c->n == 0)
    return pfi_error_set(err, PFI_EINVAL, "job %s has no points", c->job);
  /* Any number of points: a sweep in 5 W steps has a hundred. */
  double sx[64], sy[64];
  struct pfi_point sf[64];
  size_t n = c->n;
  int fit = p->curve_fit == PFI_CURVE_MONOTONE && pfi_curve_violates(c);
  double *px = n <= 64 ? sx : malloc(n * sizeof *px);
  double *ty = n <= 64 ? sy : malloc(n * sizeof *ty);
  struct pfi_point *fp = !fit ? NULL : n <= 64 ? sf : malloc(n * sizeof *fp);
  int rc;
  if (!px || !ty || (fit && !fp)) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  const struct pfi_point *pts = c->pts;
  if (fit) {
    if ((rc = pfi_curve_monotone(c, fp)) < 0) {
      rc = rc == PFI_ENOMEM
               ? pfi_error_set(err, PFI_ENOMEM, "out of memory")
               : pfi_error_set(err, PFI_EINVAL, "job %s: a point is not finite",
                               c->job);
      goto out;
    }
    pts = fp;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    /* Points the fit pooled to one power: the highest cap's (the most
     * throughput at that power) stands for them. */
    if (fit && i + 1 < n && pts[i + 1].power_w == pts[i].power_w)
      continue;
    px[m] = pts[i].power_w;
    ty[m] = pts[i].tokens_per_s;
    m++;
  }
  double lo = pts[0].power_w, hi = pts[n - 1].power_w;
  if (lo > hi) {
    double t = lo;
    lo = hi;
    hi = t;
  }
  rc = pfi_problem_add(p, px, ty, m, lo, hi, err);
out:
  if (px && px != sx)
    free(px);
  if (ty && ty != sy)
    free(ty);
  if (fp && fp != sf)
    free(fp);
  return rc;
}

double pfi_problem_eval(const struct pfi_problem *p, size_t i, double power_w) {
  size_t a = p->off[i], b = p->off[i + 1];
  return interp(p->x + a, p->y + a, b - a, power_w);
}

int pfi_problem_normalize(struct pfi_problem *p, struct pfi_error *err) {
  for (size_t i = 0; i < p->njobs; i++) {
    double t = pfi_problem_eval(p, i, pfi_problem_hi(p, i));
    if (!(t > 0) || !isfinite(t))
      return pfi_error_set(err, PFI_EINVAL,
                           "job %zu: uncapped throughput %g is not positive: "
                           "cannot normalize",
                           i + 1, t);
  }
  for (size_t i = 0; i < p->njobs; i++) {
    size_t a = p->off[i], b = p->off[i + 1];
    double t = p->y[b - 1];
    for (size_t k = a; k < b; k++)
      p->y[k] /= t;
  }
  return 0;
}

void pfi_problem_bounds(const struct pfi_problem *p, double *sum_lo,
                        double *sum_hi) {
  double lo = 0, hi = 0;
  for (size_t i = 0; i < p->njobs; i++) {
    lo += pfi_problem_lo(p, i);
    hi += pfi_problem_hi(p, i);
  }
  *sum_lo = lo;
  *sum_hi = hi;
}

static double power_tol(const struct pfi_problem *p) {
  double s = 0;
  for (size_t i = 0; i < p->njobs; i++)
    s += fabs(pfi_problem_hi(p, i));
  return 1e-9 * (s + 1.0);
}

void pfi__bounds(const struct pfi_problem *p, struct pfi_bounds *b) {
  pfi_problem_bounds(p, &b->lo, &b->hi);
  b->tol = power_tol(p);
}

int pfi__check_budget(const struct pfi_bounds *b, double budget_w,
                      struct pfi_error *err) {
  double lo = b->lo, hi = b->hi, tol = b->tol;
  if (!isfinite(lo) || !isfinite(hi))
    return pfi_error_set(err, PFI_EINVAL,
                         "the jobs' powers sum beyond the floating-point "
                         "range");
  if (!isfinite(budget_w))
    return pfi_error_set(err, PFI_EINVAL, "budget is not finite");
  if (budget_w < lo - tol)
    return pfi_error_set(err, PFI_EINFEASIBLE,
                         "infeasible by %.3f W: budget %.3f W is below the "
                         "jobs' floors (%.3f W in all)",
                         lo - budget_w, budget_w, lo);
  if (budget_w > hi + tol)
    return pfi_error_set(err, PFI_EINFEASIBLE,
                         "infeasible by %.3f W: budget %.3f W is above the "
                         "jobs' uncapped power (%.3f W in all)",
                         budget_w - hi, budget_w, hi);
  return 0;
}

int pfi_problem_check_budget(const struct pfi_problem *p, double budget_w,
                             struct pfi_error *err) {
  struct pfi_bounds b;
  pfi__bounds(p, &b);
  return pfi__check_budget(&b, budget_w, err);
}
