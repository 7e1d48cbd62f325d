/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/capacity.h"
#include "pfi/monotone.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const double pfi_capacity_quotes[PFI_CAPACITY_NQUOTE] = {0.01, 0.02, 0.05, 0.10,
                                                         0.20};

int pfi_capacity_problem(const struct pfi_curveset *cs, int normalize,
                         struct pfi_problem *p, struct pfi_error *err) {
  for (size_t i = 0; i < cs->n; i++) {
    const struct pfi_curve *c = &cs->c[i];
    if (!normalize) {
      int rc = pfi_problem_add_curve(p, c, err);
      if (rc < 0)
        return rc;
      continue;
    }
    if (c->n == 0)
      return pfi_error_set(err, PFI_EINVAL, "job %s has no points", c->job);
    double *px = malloc(2 * c->n * sizeof *px);
    if (!px)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    double *ty = px + c->n;
    double tmax = pfi_curve_uncapped(c)->tokens_per_s;
    for (size_t k = 0; k < c->n; k++) {
      px[k] = c->pts[k].power_w;
      ty[k] = c->pts[k].tokens_per_s / tmax;
    }
    /* The range of pfi_problem_add_curve(): power at the lowest and the
     * highest cap, in order. */
    double lo = c->pts[0].power_w, hi = c->pts[c->n - 1].power_w;
    if (lo > hi) {
      double t = lo;
      lo = hi;
      hi = t;
    }
    int rc = pfi_problem_add(p, px, ty, c->n, lo, hi, err);
    free(px);
    if (rc < 0)
      return rc;
  }
  return 0;
}

void pfi_capacity_release(struct pfi_capacity *c) {
  if (!c)
    return;
  free(c->pts);
  c->pts = NULL;
  c->n = 0;
}

struct ctx {
  const struct pfi_problem *p;
  enum pfi_strategy s;
  struct pfi_alloc_inputs in[3]; /* point, interval low, interval high */
  double H, floor_w, T0;
  double *pw;
};

/* Fraction of T0 lost at shed `shed` by variant v; < 0 on error (in rc). */
static int loss_at(struct ctx *x, int v, double shed, double *loss,
                   struct pfi_error *err) {
  double B = x->H - shed;
  if (B < x->floor_w)
    B = x->floor_w;
  if (B > x->H)
    B = x->H;
  int rc = pfi_alloc_run(x->p, x->s, B, &x->in[v], x->pw, err);
  if (rc < 0)
    return rc;
  *loss = x->T0 - pfi_alloc_total_tokens(x->p, x->pw);
  return 0;
}

/* The quote for loss fraction y from ladder values lf[0..n-1] (variant v):
 * the first crossing refined by bisection. */
static int quote(struct ctx *x, int v, const double *shed, const double *lf,
                 size_t n, double y, double *out, struct pfi_error *err) {
  size_t k = 0;
  while (k < n && !(lf[k] > y))
    k++;
  if (k == n) {
    *out = shed[n - 1];
    return 0;
  }
  if (k == 0) {
    *out = 0;
    return 0;
  }
  double a = shed[k - 1], b = shed[k];
  for (int it = 0; it < 100 && b - a > 1e-9 * x->H; it++) {
    double m = 0.5 * (a + b), l;
    int rc = loss_at(x, v, m, &l, err);
    if (rc < 0)
      return rc;
    if (l / x->T0 > y)
      b = m;
    else
      a = m;
  }
  *out = a;
  return 0;
}

int pfi_capacity_compute(const struct pfi_problem *p, enum pfi_strategy s,
                         const struct pfi_alloc_inputs *in,
                         const double *pfi_lo, const double *pfi_hi,
                         size_t steps, struct pfi_capacity *out,
                         struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  out->strategy = s;
  if (steps == 0)
    return pfi_error_set(err, PFI_EINVAL, "capacity: needs at least 1 step");
  if (p->njobs == 0)
    return pfi_error_set(err, PFI_EINVAL, "capacity: no jobs");
  if (!pfi_lo != !pfi_hi)
    return pfi_error_set(err, PFI_EINVAL,
                         "capacity: a PFI interval needs both ends");
  static const struct pfi_alloc_inputs none = {NULL, NULL, NULL};
  struct ctx x;
  memset(&x, 0, sizeof x);
  x.p = p;
  x.s = s;
  x.in[0] = x.in[1] = x.in[2] = in ? *in : none;
  int uses_pfi = s == PFI_STRAT_PFI_AWARE || s == PFI_STRAT_PFI_CURVE;
  int nv = 1;
  if (uses_pfi && pfi_lo) {
    x.in[1].pfi = pfi_lo;
    x.in[2].pfi = pfi_hi;
    nv = 3;
    out->has_interval = 1;
  }
  pfi_problem_bounds(p, &x.floor_w, &x.H);
  for (size_t i = 0; i < p->njobs; i++)
    x.T0 += pfi_problem_eval(p, i, pfi_problem_hi(p, i));
  if (!(x.T0 > 0) || !isfinite(x.T0))
    return pfi_error_set(err, PFI_EINVAL,
                         "capacity: the uncapped throughput is not positive");
  out->uncapped_w = x.H;
  out->floor_w = x.floor_w;
  out->uncapped_tokens = x.T0;
  size_t n = steps + 1;
  x.pw = malloc((p->njobs + 1) * sizeof *x.pw);
  double *shed = malloc(n * 4 * sizeof *shed);
  out->pts = calloc(n, sizeof *out->pts);
  int rc = 0;
  if (!x.pw || !shed || !out->pts) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto done;
  }
  out->n = n;
  double *lf[3] = {shed + n, shed + 2 * n, shed + 3 * n};
  double room = x.H - x.floor_w;
  for (size_t k = 0; k < n; k++) {
    shed[k] = k == steps ? room : room * (double)k / (double)steps;
    struct pfi_capacity_point *pt = &out->pts[k];
    pt->shed_w = shed[k];
    pt->shed_frac = shed[k] / x.H;
    for (int v = 0; v < nv; v++) {
      double l;
      rc = loss_at(&x, v, shed[k], &l, err);
      if (rc < 0)
        goto done;
      lf[v][k] = l / x.T0;
      if (v == 0) {
        pt->loss = l;
        pt->tokens = x.T0 - l;
        pt->loss_frac = l / x.T0;
      }
    }
    pt->loss_lo_frac = pt->loss_hi_frac = pt->loss_frac;
    for (int v = 1; v < nv; v++) {
      if (lf[v][k] < pt->loss_lo_frac)
        pt->loss_lo_frac = lf[v][k];
      if (lf[v][k] > pt->loss_hi_frac)
        pt->loss_hi_frac = lf[v][k];
    }
  }
  for (int q = 0; q < PFI_CAPACITY_NQUOTE; q++) {
    double y = pfi_capacity_quotes[q], lo = 0, hi = 0;
    for (int v = 0; v < nv; v++) {
      double w;
      rc = quote(&x, v, shed, lf[v], n, y, &w, err);
      if (rc < 0)
        goto done;
      if (v == 0)
        out->quote_w[q] = lo = hi = w;
      if (w < lo)
        lo = w;
      if (w > hi)
        hi = w;
    }
    out->quote_lo_w[q] = lo;
    out->quote_hi_w[q] = hi;
  }
done:
  free(x.pw);
  free(shed);
  return rc;
}

int pfi_capacity_problem_objective(const struct pfi_curveset *cs,
                                   const struct pfi_objective *o,
                                   struct pfi_problem *p, int *gpus_known,
                                   struct pfi_error *err) {
  size_t n = cs->n;
  struct pfi_problem raw;
  pfi_problem_init(&raw);
  raw.curve_fit = p->curve_fit;
  const char **names = calloc(n + 1, sizeof *names);
  int *gpus = calloc(n + 1, sizeof *gpus);
  double *tmax = calloc(n + 1, sizeof *tmax);
  int rc;
  if (!names || !gpus || !tmax) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    names[i] = cs->c[i].job;
    gpus[i] = cs->c[i].gpus;
    tmax[i] = pfi_curve_fit_top(&cs->c[i], (enum pfi_curve_fit)p->curve_fit);
  }
  if ((rc = pfi_capacity_problem(cs, 0, &raw, err)) == 0)
    rc = pfi_objective_problem(&raw, o, gpus, tmax, names, p, gpus_known,
                               err);
out:
  pfi_problem_release(&raw);
  free(names);
  free(gpus);
  free(tmax);
  return rc;
}
