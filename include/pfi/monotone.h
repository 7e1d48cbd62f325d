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

/*
 * Which curve the decisions (allocation, the oracle, capacity, plans,
 * simulate, replay) read: the monotone fit (the default; a curve that does
 * not violate monotonicity is its own fit, bit for bit, so emulated and
 * published curves are decided on unchanged) or the raw points. Indices,
 * intervals and the gate always read the raw points.
 */
enum pfi_curve_fit { PFI_CURVE_MONOTONE = 0, PFI_CURVE_RAW = 1 };

/* "monotone" or "raw". */
const char *pfi_curve_fit_name(enum pfi_curve_fit f);

/* Parses "monotone" or "raw" into *f; PFI_EINVAL otherwise. */
int pfi_curve_fit_parse(const char *s, enum pfi_curve_fit *f);

/* 1 when a point's power or throughput falls as the cap rises (the fit
 * changes the curve), else 0. */
int pfi_curve_violates(const struct pfi_curve *c);

/*
 * Throughput at the top of the curve that decisions read: the highest
 * cap's tokens_per_s, of the monotone fit under PFI_CURVE_MONOTONE (the
 * raw value when the curve does not violate monotonicity or the fit
 * fails). 0 for an empty curve.
 */
double pfi_curve_fit_top(const struct pfi_curve *c, enum pfi_curve_fit f);

/* The per-GPU cap that realizes aggregate power `power_w` on the curve
 * decisions read: pfi_curve_cap_at() of the monotone fit under
 * PFI_CURVE_MONOTONE when c violates monotonicity, else of c itself (bit
 * for bit). NAN for a curve without points. */
double pfi_curve_fit_cap_at(const struct pfi_curve *c, enum pfi_curve_fit f,
                            double power_w);

/* The count of curves of `cs` that pfi_curve_violates(). */
size_t pfi_curveset_violations(const struct pfi_curveset *cs);

#endif
