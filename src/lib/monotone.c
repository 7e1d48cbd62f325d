/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/monotone.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/error.h"

int pfi_isotonic(const double *y, const double *w, size_t n, double *out) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(y[i]) || (w && !(isfinite(w[i]) && w[i] > 0)))
      return PFI_EINVAL;
  if (n == 0)
    return 0;
  /* Blocks on a stack: mean, weight and length of each pooled block. */
  double sm[64], sw[64];
  size_t sl[64];
  double *bm = sm, *bw = sw;
  size_t *bl = sl;
  if (n > 64) {
    bm = malloc(n * sizeof *bm);
    bw = malloc(n * sizeof *bw);
    bl = malloc(n * sizeof *bl);
    if (!bm || !bw || !bl) {
      free(bm);
      free(bw);
      free(bl);
      return PFI_ENOMEM;
    }
  }
  size_t nb = 0;
  for (size_t i = 0; i < n; i++) {
    bm[nb] = y[i];
    bw[nb] = w ? w[i] : 1.0;
    bl[nb] = 1;
    nb++;
    /* Pool while the last block falls below the one before it. */
    while (nb > 1 && bm[nb - 2] > bm[nb - 1]) {
      double ww = bw[nb - 2] + bw[nb - 1];
      bm[nb - 2] = (bw[nb - 2] * bm[nb - 2] + bw[nb - 1] * bm[nb - 1]) / ww;
      bw[nb - 2] = ww;
      bl[nb - 2] += bl[nb - 1];
      nb--;
    }
  }
  for (size_t b = 0, i = 0; b < nb; b++)
    for (size_t k = 0; k < bl[b]; k++)
      out[i++] = bm[b];
  if (bm != sm) {
    free(bm);
    free(bw);
    free(bl);
  }
  return 0;
}

int pfi_curve_monotone(const struct pfi_curve *c, struct pfi_point *out) {
  size_t n = c->n;
  double sbuf[3 * 64];
  double *buf = n <= 64 ? sbuf : malloc(3 * n * sizeof *buf);
  if (!buf)
    return PFI_ENOMEM;
  double *p = buf, *t = buf + n, *w = buf + 2 * n;
  for (size_t i = 0; i < n; i++) {
    p[i] = c->pts[i].power_w;
    t[i] = c->pts[i].tokens_per_s;
    w[i] = c->pts[i].runs > 1 ? (double)c->pts[i].runs : 1.0;
  }
  int rc = pfi_isotonic(p, w, n, p);
  if (rc == 0)
    rc = pfi_isotonic(t, w, n, t);
  if (rc == 0)
    for (size_t i = 0; i < n; i++) {
      out[i] = c->pts[i];
      out[i].power_w = p[i];
      out[i].tokens_per_s = t[i];
    }
  if (buf != sbuf)
    free(buf);
  return rc;
}

const char *pfi_curve_fit_name(enum pfi_curve_fit f) {
  return f == PFI_CURVE_RAW ? "raw" : "monotone";
}

int pfi_curve_fit_parse(const char *s, enum pfi_curve_fit *f) {
  if (s && strcmp(s, "monotone") == 0)
    *f = PFI_CURVE_MONOTONE;
  else if (s && strcmp(s, "raw") == 0)
    *f = PFI_CURVE_RAW;
  else
    return PFI_EINVAL;
  return 0;
}

int pfi_curve_violates(const struct pfi_curve *c) {
  for (size_t i = 1; i < c->n; i++)
    if (c->pts[i].power_w < c->pts[i - 1].power_w ||
        c->pts[i].tokens_per_s < c->pts[i - 1].tokens_per_s)
      return 1;
  return 0;
}

double pfi_curve_fit_top(const struct pfi_curve *c, enum pfi_curve_fit f) {
  if (c->n == 0)
    return 0.0;
  double top = c->pts[c->n - 1].tokens_per_s;
  if (f == PFI_CURVE_RAW || !pfi_curve_violates(c))
    return top;
  /* The last value of the isotonic fit is the weighted mean of the
   * trailing block: the fit of the whole curve gives it. */
  struct pfi_point sbuf[64];
  struct pfi_point *fit = c->n <= 64 ? sbuf : malloc(c->n * sizeof *fit);
  if (!fit)
    return top;
  if (pfi_curve_monotone(c, fit) == 0)
    top = fit[c->n - 1].tokens_per_s;
  if (fit != sbuf)
    free(fit);
  return top;
}

size_t pfi_curveset_violations(const struct pfi_curveset *cs) {
  size_t k = 0;
  for (size_t i = 0; i < cs->n; i++)
    k += (size_t)pfi_curve_violates(&cs->c[i]);
  return k;
}

double pfi_curve_fit_cap_at(const struct pfi_curve *c, enum pfi_curve_fit f,
                            double power_w) {
  if (f == PFI_CURVE_RAW || c->n == 0 || !pfi_curve_violates(c))
    return pfi_curve_cap_at(c, power_w);
  struct pfi_point sbuf[64];
  struct pfi_point *fit = c->n <= 64 ? sbuf : malloc(c->n * sizeof *fit);
  if (!fit)
    return pfi_curve_cap_at(c, power_w);
  double cap;
  struct pfi_curve fc = *c;
  fc.pts = fit;
  if (pfi_curve_monotone(c, fit) == 0)
    cap = pfi_curve_cap_at(&fc, power_w);
  else
    cap = pfi_curve_cap_at(c, power_w);
  if (fit != sbuf)
    free(fit);
  return cap;
}
