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
