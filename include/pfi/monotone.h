/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Monotone fits of measured curves: a lower cap cannot make a job faster
 * or draw more power, so a curve for decisions (allocation, capacity) can
 * replace its noisy points by the closest sequence, in weighted least
 * squares, that does not fall as the cap rises: isotonic regression, by
 * pool-adjacent-violators (docs/index-and-stats.md). The raw points stay
 * what indices and reports show; the fit is a separate array.
 */
#ifndef PFI_MONOTONE_H
#define PFI_MONOTONE_H

#include <stddef.h>

#include "pfi/curve.h"

/*
 * Weighted isotonic regression of y[0..n-1] (in order) with weights
 * w[0..n-1] (NULL: all 1): out[i] minimizes sum w_i (y_i - out_i)^2 under
 * out[0] <= out[1] <= ... <= out[n-1]. Each out[i] is the weighted mean of
 * the block of adjacent values it was pooled with. `out` may be `y`.
 * Returns 0, or PFI_EINVAL when a weight is not finite and positive or a
 * value is not finite (out untouched). O(n); no allocation for n <= 64,
 * else PFI_ENOMEM possible.
 */
int pfi_isotonic(const double *y, const double *w, size_t n, double *out);

/*
 * The monotone fit of curve c (points in cap order): out[0..c->n-1] are
 * c's points with power_w and tokens_per_s replaced by their isotonic fits
 * in cap order, each point weighted by its runs (1 when unknown). The
 * highest cap stays the uncapped reference. Returns 0, PFI_EINVAL, or
 * PFI_ENOMEM.
 */
int pfi_curve_monotone(const struct pfi_curve *c, struct pfi_point *out);

#endif
