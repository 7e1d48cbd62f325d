/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/index.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"

static size_t ref_index(const double *cap_w, size_t n) {
  size_t r = 0;
  for (size_t i = 1; i < n; i++)
    if (cap_w[i] > cap_w[r])
      r = i;
  return r;
}

/*
 * The rule that decides which capped points enter the ratio (index.h): the
 * largest rise of y from a higher cap to a lower one (0 on a monotone
 * curve), relative to the reference value.
 */
static double reversal(const double *cap_w, const double *y, size_t n,
                       double ref) {
  /* Caps ascending and y non-decreasing along them (a monotone curve in
   * the order curves keep their points): no pair rises, the loop below
   * would return 0. */
  size_t k = 1;
  while (k < n && cap_w[k - 1] < cap_w[k] && y[k - 1] <= y[k])
    k++;
  if (k >= n)
    return 0;
  double worst = 0;
  for (size_t a = 0; a < n; a++)
    for (size_t b = 0; b < n; b++)
      if (cap_w[a] < cap_w[b] && y[a] - y[b] > worst * ref)
        worst = (y[a] - y[b]) / ref;
  return worst;
}

/* Why point i is left out (enum pfi_index_why), 0 when it enters. rsp/rst:
 * relative standard errors of every point's power and throughput. */
static int point_why(const double *power_w, const double *tokens,
                     const double *rsp, const double *rst, size_t r, size_t i,
                     double rev_t, double rev_p) {
  double pmax = power_w[r], tmax = tokens[r];
  double loss = 1.0 - tokens[i] / tmax, save = 1.0 - power_w[i] / pmax;
  if (!(loss > 0))
    return PFI_WHY_NOT_SLOWER;
  double sl = PFI_INDEX_NOISE_Z * (tokens[i] / tmax) *
              sqrt(rst[i] * rst[i] + rst[r] * rst[r]);
  double sp = PFI_INDEX_NOISE_Z * (power_w[i] / pmax) *
              sqrt(rsp[i] * rsp[i] + rsp[r] * rsp[r]);
  if (!(loss > sl) || !(loss > rev_t))
    return PFI_WHY_LOSS_IN_NOISE;
  if (!(save > sp) || !(save > rev_p))
    return PFI_WHY_POWER_IN_NOISE;
  return 0;
}

/* Fills why[0..n-1] (0: used; the reference gets PFI_WHY_REFERENCE) and
 * returns the number of points used. */
static size_t classify(const double *power_w, const double *tokens,
                       const double *rsp, const double *rst, size_t n,
                       size_t r, double rev_t, double rev_p, int *why) {
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    why[i] = i == r ? PFI_WHY_REFERENCE
                    : point_why(power_w, tokens, rsp, rst, r, i, rev_t, rev_p);
    used += why[i] == 0;
  }
  return used;
}

const char *pfi_index_why_name(int why) {
  switch (why) {
  case PFI_WHY_NOT_SLOWER:
    return "no-loss";
  case PFI_WHY_LOSS_IN_NOISE:
    return "loss-in-noise";
  case PFI_WHY_POWER_IN_NOISE:
    return "power-in-noise";
  case PFI_WHY_REFERENCE:
    return "reference";
  default:
    return "used";
  }
}

int pfi_index_ratio(const double *cap_w, const double *power_w,
                    const double *tokens, size_t n, double *pfi,
                    size_t *points_used) {
  if (n < 2)
    return PFI_EINVAL;
  size_t r = ref_index(cap_w, n);
  double pmax = power_w[r], tmax = tokens[r];
  double sum = 0.0;
  size_t used = 0;
  double rev_t = reversal(cap_w, tokens, n, tmax);
  double rev_p = reversal(cap_w, power_w, n, pmax);
  double rsp[2] = {PFI_INDEX_DEFAULT_REL_SD_POWER,
                   PFI_INDEX_DEFAULT_REL_SD_POWER};
  double rst[2] = {PFI_INDEX_DEFAULT_REL_SD_TOKENS,
                   PFI_INDEX_DEFAULT_REL_SD_TOKENS};
  for (size_t i = 0; i < n; i++) {
    if (i == r)
      continue;
    /* Every point has the default noise: indices 0 and 1 of the two-entry
     * arrays stand for point i and the reference. */
    double p2[2] = {power_w[i], pmax}, t2[2] = {tokens[i], tmax};
    if (point_why(p2, t2, rsp, rst, 1, 0, rev_t, rev_p) != 0)
      continue;
    sum += (1.0 - power_w[i] / pmax) / (1.0 - tokens[i] / tmax);
    used++;
  }
  if (points_used)
    *points_used = used;
  if (used == 0)
    return 0;
  *pfi = sum / (double)used;
  return 1;
}

int pfi_index_area(const double *cap_w, const double *power_w,
                   const double *tokens, size_t n, double *area) {
  if (n < 2)
    return PFI_EINVAL;
  size_t r = ref_index(cap_w, n);
  double pmax = power_w[r], tmax = tokens[r];
  /* Sort normalized points by power; n is small (insertion sort). */
  double xs[64], ys[64];
  double *x = xs, *y = ys;
  if (n > 64) {
    x = malloc(n * sizeof *x);
    y = malloc(n * sizeof *y);
    if (!x || !y) {
      free(x == xs ? NULL : x);
      free(y == ys ? NULL : y);
      return PFI_ENOMEM;
    }
  }
  for (size_t i = 0; i < n; i++) {
    double xi = power_w[i] / pmax, yi = tokens[i] / tmax;
    size_t k = i;
    while (k > 0 && x[k - 1] > xi) {
      x[k] = x[k - 1];
      y[k] = y[k - 1];
      k--;
    }
    x[k] = xi;
    y[k] = yi;
  }
  double s = 0.5 * x[0] * y[0]; /* from the boundary point (0, 0) */
  for (size_t i = 1; i < n; i++)
    s += 0.5 * (x[i] - x[i - 1]) * (y[i] + y[i - 1]);
  if (x != xs) {
    free(x);
    free(y);
  }
  *area = s - 0.5;
  return 0;
}

int pfi_index_ce(const double *power_w, const double *tokens, size_t n,
                 double *ce) {
  if (n < 2)
    return PFI_EINVAL;
  /* The logarithms of a short curve are taken once (the same values). */
  double lx[32], ly[32];
  int keep = n <= 32;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(power_w[i] > 0) || !(tokens[i] > 0))
      return PFI_EINVAL;
    double a = log(power_w[i]), b = log(tokens[i]);
    if (keep) {
      lx[i] = a;
      ly[i] = b;
    }
    mx += a;
    my += b;
  }
  mx /= (double)n;
  my /= (double)n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    double dx = (keep ? lx[i] : log(power_w[i])) - mx,
           dy = (keep ? ly[i] : log(tokens[i])) - my;
    sxx += dx * dx;
    sxy += dx * dy;
  }
  if (!(sxx > 1e-300))
    return 0;
  *ce = 1.0 - sxy / sxx;
  return 1;
}

int pfi_index_compute(const struct pfi_curve *c, struct pfi_index *out,
                      struct pfi_error *err) {
  return pfi_index_compute_defs(c, PFI_INDEX_ALL, out, err);
}

int pfi_index_compute_defs(const struct pfi_curve *c, unsigned defs,
                           struct pfi_index *out, struct pfi_error *err) {
  return pfi_index_compute_noise(c, defs, NULL, out, err);
}

/* A point's relative standard error of power (tokens) under `nz`. */
static double point_rel_sd(double sd, double v, int runs, double rel,
                           const struct pfi_noise *nz) {
  if (sd >= 0)
    return sd / v;
  if (nz->per_run && runs > 1)
    return rel / sqrt((double)runs);
  return rel;
}

/* Capped points where the cap bound: power fell below P_max by more than
 * the noise (the power half of point_why()). */
static size_t count_bound(const double *power_w, const double *rsp, size_t n,
                          size_t r, double rev_p) {
  size_t k = 0;
  double pmax = power_w[r];
  for (size_t i = 0; i < n; i++) {
    if (i == r)
      continue;
    double save = 1.0 - power_w[i] / pmax;
    double sp = PFI_INDEX_NOISE_Z * (power_w[i] / pmax) *
                sqrt(rsp[i] * rsp[i] + rsp[r] * rsp[r]);
    k += save > sp && save > rev_p;
  }
  return k;
}

int pfi_index_compute_noise(const struct pfi_curve *c, unsigned defs,
                            const struct pfi_noise *noise,
                            struct pfi_index *out, struct pfi_error *err) {
  struct pfi_noise paper;
  if (!noise) {
    pfi_noise_paper(&paper);
    noise = &paper;
  }
  memset(out, 0, sizeof *out);
  size_t n = c->n;
  if (n < 2)
    return pfi_error_set(err, PFI_EINVAL,
                         "job '%s': needs at least 2 points, has %zu", c->job,
                         n);
  /* A curve has a handful of points: its work space is on the stack. */
  double sbuf[5 * 16];
  int swhy[16];
  double *buf = n <= 16 ? sbuf : malloc(5 * n * sizeof *buf);
  int *why = n <= 16 ? swhy : malloc(n * sizeof *why);
  if (!buf || !why) {
    if (buf != sbuf)
      free(buf);
    if (why != swhy)
      free(why);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  double *cap = buf, *pw = buf + n, *tk = buf + 2 * n, *rsp = buf + 3 * n,
         *rst = buf + 4 * n;
  for (size_t i = 0; i < n; i++) {
    const struct pfi_point *pt = &c->pts[i];
    cap[i] = pt->cap_w;
    pw[i] = pt->power_w;
    tk[i] = pt->tokens_per_s;
    rsp[i] = point_rel_sd(pt->power_sd_w, pt->power_w, pt->runs,
                          noise->rel_sd_power, noise);
    rst[i] = point_rel_sd(pt->tokens_sd, pt->tokens_per_s, pt->runs,
                          noise->rel_sd_tokens, noise);
  }
  const struct pfi_point *ref = pfi_curve_uncapped(c);
  out->t_max = ref->tokens_per_s;
  out->p_max = ref->power_w;
  out->loss_floor = reversal(cap, tk, n, tk[n - 1]);
  out->power_floor = reversal(cap, pw, n, pw[n - 1]);
  /* The reference is the last point (caps ascending): the floors are the
   * rule's reversals (classify's thresholds). */
  size_t used = classify(pw, tk, rsp, rst, n, n - 1, out->loss_floor,
                         out->power_floor, why);
  double sum = 0;
  for (size_t i = 0; i + 1 < n; i++)
    if (why[i] == 0)
      sum += (1.0 - pw[i] / out->p_max) / (1.0 - tk[i] / out->t_max);
  out->points_used = used;
  out->pfi_defined = used > 0;
  out->points_bound = count_bound(pw, rsp, n, n - 1, out->power_floor);
  out->undefined_why = used                ? PFI_UNDEF_NONE
                       : out->points_bound ? PFI_UNDEF_NO_LOSS
                                           : PFI_UNDEF_NEVER_BOUND;
  out->pfi = used ? sum / (double)used : 0.0;
  int rc;
  rc = pfi_index_area(cap, pw, tk, n, &out->pfi_area);
  if (rc < 0) {
    if (buf != sbuf)
      free(buf);
    if (why != swhy)
      free(why);
    return pfi_error_set(err, rc, "out of memory");
  }
  rc = (defs & PFI_INDEX_CE) ? pfi_index_ce(pw, tk, n, &out->pfi_ce) : 0;
  out->ce_defined = rc == 1;
  if (!out->ce_defined)
    out->pfi_ce = 0.0;
  /* Valid input (positive, finite) can still overflow: a power 1e300 times
   * P_max makes P/P_max infinite. A non-finite index is no index; it must
   * not pass for "undefined" or reach a table as inf or nan. */
  const char *bad = (out->pfi_defined && !isfinite(out->pfi))     ? "ratio"
                    : !isfinite(out->pfi_area)                    ? "area"
                    : (out->ce_defined && !isfinite(out->pfi_ce)) ? "ce"
                                                                  : NULL;
  if (bad) {
    if (buf != sbuf)
      free(buf);
    if (why != swhy)
      free(why);
    return pfi_error_set(err, PFI_ERANGE,
                         "job '%s': the %s PFI is not a finite number (the "
                         "power or throughput values span more than a "
                         "double's range)",
                         c->job, bad);
  }
  /* Capped points left out, with the reason. */
  size_t nex = 0;
  for (size_t i = 0; i + 1 < n; i++)
    nex += why[i] != 0;
  if (nex) {
    out->excluded_caps = malloc(nex * sizeof *out->excluded_caps);
    out->excluded_why = malloc(nex * sizeof *out->excluded_why);
    if (!out->excluded_caps || !out->excluded_why) {
      if (buf != sbuf)
        free(buf);
      if (why != swhy)
        free(why);
      pfi_index_release(out);
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    }
    for (size_t i = 0, k = 0; i + 1 < n; i++)
      if (why[i] != 0) {
        out->excluded_why[k] = why[i];
        out->excluded_caps[k++] = c->pts[i].cap_w;
      }
  }
  out->n_excluded = nex;
  if (buf != sbuf)
    free(buf);
  if (why != swhy)
    free(why);
  return 0;
}

void pfi_index_release(struct pfi_index *out) {
  if (!out)
    return;
  free(out->excluded_caps);
  out->excluded_caps = NULL;
  free(out->excluded_why);
  out->excluded_why = NULL;
  out->n_excluded = 0;
}

int pfi_index_draws(const struct pfi_curve *c, size_t draws, unsigned long seed,
                    double default_rel_sd_power, double default_rel_sd_tokens,
                    double *sample, struct pfi_error *err) {
  struct pfi_noise nz;
  pfi_noise_given(&nz, default_rel_sd_power, default_rel_sd_tokens);
  return pfi_index_draws_noise(c, draws, seed, &nz, sample, err);
}

int pfi_index_draws_noise(const struct pfi_curve *c, size_t draws,
                          unsigned long seed, const struct pfi_noise *noise,
                          double *sample, struct pfi_error *err) {
  struct pfi_noise paper;
  if (!noise) {
    pfi_noise_paper(&paper);
    noise = &paper;
  }
  double default_rel_sd_power = noise->rel_sd_power,
         default_rel_sd_tokens = noise->rel_sd_tokens;
  size_t n = c->n;
  if (draws == 0)
    return pfi_error_set(err, PFI_EINVAL, "--ci: needs at least 1 draw");
  if (n < 2)
    return pfi_error_set(err, PFI_EINVAL,
                         "job '%s': needs at least 2 points, has %zu", c->job,
                         n);
  if (!isfinite(default_rel_sd_power) || default_rel_sd_power < 0 ||
      !isfinite(default_rel_sd_tokens) || default_rel_sd_tokens < 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "default relative noise must be finite and >= 0");
  int rc = 0;
  int *why = NULL;
  double *buf = malloc(4 * n * sizeof *buf);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  for (size_t d = 0; d < draws; d++)
    sample[d] = NAN;
  if (!buf || !rng) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  gsl_rng_set(rng, seed);
  double *sdp = buf, *sdt = buf + n, *pw = buf + 2 * n, *tk = buf + 3 * n;
  for (size_t i = 0; i < n; i++) {
    const struct pfi_point *pt = &c->pts[i];
    sdp[i] = point_rel_sd(pt->power_sd_w, pt->power_w, pt->runs,
                          default_rel_sd_power, noise) *
             pt->power_w;
    sdt[i] = point_rel_sd(pt->tokens_sd, pt->tokens_per_s, pt->runs,
                          default_rel_sd_tokens, noise) *
             pt->tokens_per_s;
    if (pt->power_sd_w >= 0)
      sdp[i] = pt->power_sd_w;
    if (pt->tokens_sd >= 0)
      sdt[i] = pt->tokens_sd;
  }
  int scaled = noise->dof > 0;
  /* The points averaged are those pfi_index_compute() averages (the rule
   * in index.h, with the points' own standard errors or the default
   * noise); the draws keep that choice fixed. Re-deciding it per draw would
   * let a cap that did not bind (T_i = T_max) enter about half of the draws
   * with a denominator near zero, and the interval would describe that
   * artefact instead of the measurement noise of the estimate. */
  const struct pfi_point *ref = pfi_curve_uncapped(c);
  why = malloc(n * sizeof *why);
  double *cw = malloc(3 * n * sizeof *cw);
  if (!why || !cw) {
    free(cw);
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const struct pfi_point *pt = &c->pts[i];
    cw[i] = pt->cap_w;
    pw[i] = pt->power_w;
    tk[i] = pt->tokens_per_s;
    cw[n + i] = point_rel_sd(pt->power_sd_w, pt->power_w, pt->runs,
                             default_rel_sd_power, noise);
    cw[2 * n + i] = point_rel_sd(pt->tokens_sd, pt->tokens_per_s, pt->runs,
                                 default_rel_sd_tokens, noise);
  }
  size_t nused =
      classify(pw, tk, cw + n, cw + 2 * n, n, n - 1,
               reversal(cw, tk, n, tk[n - 1]), reversal(cw, pw, n, pw[n - 1]),
               why);
  free(cw);
  (void)ref;
  size_t ok = 0;
  for (size_t d = 0; d < draws && nused > 0; d++) {
    /* Power then throughput, point by point in cap order: the order of the
     * random stream is part of the reproducibility contract. */
    if (scaled) {
      /* The noise estimate's own uncertainty: one scale per draw, drawn
       * before the points (a known noise draws nothing here, so its
       * stream is unchanged). */
      double x = gsl_ran_chisq(rng, (double)noise->dof);
      double f = x > 0 ? sqrt((double)noise->dof / x) : 1.0;
      for (size_t i = 0; i < n; i++) {
        double fp = c->pts[i].power_sd_w < 0 ? f : 1.0,
               ft = c->pts[i].tokens_sd < 0 ? f : 1.0;
        pw[i] = c->pts[i].power_w + gsl_ran_gaussian(rng, sdp[i] * fp);
        tk[i] = c->pts[i].tokens_per_s + gsl_ran_gaussian(rng, sdt[i] * ft);
      }
    } else {
      for (size_t i = 0; i < n; i++) {
        pw[i] = c->pts[i].power_w + gsl_ran_gaussian(rng, sdp[i]);
        tk[i] = c->pts[i].tokens_per_s + gsl_ran_gaussian(rng, sdt[i]);
      }
    }
    double pmax = pw[n - 1], tmax = tk[n - 1], sum = 0;
    for (size_t i = 0; i + 1 < n; i++)
      if (why[i] == 0)
        sum += (1.0 - pw[i] / pmax) / (1.0 - tk[i] / tmax);
    double v = sum / (double)nused;
    /* A draw whose throughput lands exactly on T_max divides by zero; it
     * is dropped (it has probability zero unless the noise is zero). */
    if (isfinite(v)) {
      sample[d] = v;
      ok++;
    }
  }
  rc = (int)(ok > (size_t)2147483647 ? 2147483647 : ok);
out:
  free(why);
  free(buf);
  if (rng)
    gsl_rng_free(rng);
  return rc;
}

int pfi_index_ci(const struct pfi_curve *c, size_t draws, unsigned long seed,
                 double default_rel_sd_power, double default_rel_sd_tokens,
                 double *lo, double *hi, struct pfi_error *err) {
  struct pfi_noise nz;
  pfi_noise_given(&nz, default_rel_sd_power, default_rel_sd_tokens);
  return pfi_index_ci_noise(c, draws, seed, &nz, lo, hi, err);
}

int pfi_index_ci_noise(const struct pfi_curve *c, size_t draws,
                       unsigned long seed, const struct pfi_noise *noise,
                       double *lo, double *hi, struct pfi_error *err) {
  if (draws == 0)
    return pfi_error_set(err, PFI_EINVAL, "--ci: needs at least 1 draw");
  double *sample = malloc(draws * sizeof *sample);
  if (!sample)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = pfi_index_draws_noise(c, draws, seed, noise, sample, err);
  if (rc > 0) {
    size_t ok = 0;
    for (size_t d = 0; d < draws; d++)
      if (isfinite(sample[d]))
        sample[ok++] = sample[d];
    gsl_sort(sample, 1, ok);
    *lo = gsl_stats_quantile_from_sorted_data(sample, 1, ok, 0.025);
    *hi = gsl_stats_quantile_from_sorted_data(sample, 1, ok, 0.975);
    /* Interpolating between equal draws can round the 2.5 % point one ulp
     * above the 97.5 % point (a job whose SDs are 0): never lo > hi. */
    if (*lo > *hi)
      *lo = *hi;
  }
  free(sample);
  return rc;
}

void pfi_noise_paper(struct pfi_noise *n) {
  memset(n, 0, sizeof *n);
  n->rel_sd_power = PFI_INDEX_DEFAULT_REL_SD_POWER;
  n->rel_sd_tokens = PFI_INDEX_DEFAULT_REL_SD_TOKENS;
  n->source = PFI_NOISE_PAPER;
}

void pfi_noise_given(struct pfi_noise *n, double rel_sd_power,
                     double rel_sd_tokens) {
  memset(n, 0, sizeof *n);
  n->rel_sd_power = rel_sd_power;
  n->rel_sd_tokens = rel_sd_tokens;
  n->source = PFI_NOISE_GIVEN;
}

const char *pfi_noise_source_name(int source) {
  switch (source) {
  case PFI_NOISE_COLUMNS:
    return "sd columns";
  case PFI_NOISE_REPLICATES:
    return "replicate runs";
  case PFI_NOISE_UNBOUND:
    return "points the cap cannot bind";
  case PFI_NOISE_GIVEN:
    return "given";
  default:
    return "paper default";
  }
}

int pfi_noise_parse(const char *s, struct pfi_noise *n, struct pfi_error *err) {
  const char *c = s ? strchr(s, ',') : NULL;
  double v[2];
  char a[64];
  size_t la = c ? (size_t)(c - s) : 0;
  int ok = c && la < sizeof a;
  if (ok) {
    memcpy(a, s, la);
    a[la] = '\0';
    /* Two finite numbers (pfi_parse_double()), each from 0 to 100. */
    ok = pfi_parse_double(a, &v[0]) == 0 &&
         pfi_parse_double(c + 1, &v[1]) == 0 && v[0] >= 0 && v[0] <= 100 &&
         v[1] >= 0 && v[1] <= 100;
  }
  if (!ok)
    return pfi_error_set(err, PFI_EINVAL,
                         "--noise: expected P,T: two percentages from 0 to "
                         "100, got '%s'",
                         s ? s : "");
  pfi_noise_given(n, v[0] / 100.0, v[1] / 100.0);
  return 0;
}

const char *pfi_noise_describe(const struct pfi_noise *n, char *buf,
                               size_t len) {
  if (len == 0)
    return buf;
  if (n->source == PFI_NOISE_COLUMNS) {
    snprintf(buf, len, "each point's sd columns");
    return buf;
  }
  char dof[64] = "";
  if (n->dof)
    snprintf(dof, sizeof dof, ", %zu degrees of freedom", n->dof);
  snprintf(buf, len, "%.3g %% of power, %.3g %% of throughput (%s%s)",
           n->rel_sd_power * 100.0, n->rel_sd_tokens * 100.0,
           pfi_noise_source_name(n->source), dof);
  return buf;
}

const char *pfi_index_undefined_reason(int why) {
  switch (why) {
  case PFI_UNDEF_NEVER_BOUND:
    return "the cap never bound";
  case PFI_UNDEF_NO_LOSS:
    return "throughput never fell beyond the noise";
  default:
    return "";
  }
}

void pfi_noise_acc_add(struct pfi_noise_acc *a, const double *power_w,
                       const double *tokens, size_t k) {
  if (k < 2)
    return;
  double mp = 0, mt = 0;
  for (size_t i = 0; i < k; i++) {
    mp += log(power_w[i]);
    mt += log(tokens[i]);
  }
  mp /= (double)k;
  mt /= (double)k;
  for (size_t i = 0; i < k; i++) {
    double dp = log(power_w[i]) - mp, dt = log(tokens[i]) - mt;
    a->ss_power += dp * dp;
    a->ss_tokens += dt * dt;
  }
  a->dof += k - 1;
  a->points += k;
}

int pfi_noise_acc_finish(const struct pfi_noise_acc *a, int source,
                         struct pfi_noise *n) {
  if (a->dof < PFI_NOISE_MIN_DOF)
    return 0;
  memset(n, 0, sizeof *n);
  /* Log deviations: the relative sd to first order, the same for every
   * unit of the columns. */
  n->rel_sd_power = sqrt(a->ss_power / (double)a->dof);
  n->rel_sd_tokens = sqrt(a->ss_tokens / (double)a->dof);
  n->source = source;
  n->per_run = 1;
  n->dof = a->dof;
  n->points = a->points;
  return 1;
}

void pfi_noise_estimate(const struct pfi_curveset *set, struct pfi_noise *n) {
  pfi_noise_paper(n);
  int all_sd = set->n > 0;
  for (size_t j = 0; j < set->n && all_sd; j++)
    for (size_t i = 0; i < set->c[j].n; i++)
      if (set->c[j].pts[i].power_sd_w < 0 || set->c[j].pts[i].tokens_sd < 0) {
        all_sd = 0;
        break;
      }
  if (all_sd) {
    n->source = PFI_NOISE_COLUMNS;
    return;
  }
  /* Replicate rows: their pooled scatter (curve.h, rep_ss_*). */
  struct pfi_noise_acc rep = {set->rep_ss_power, set->rep_ss_tokens,
                              set->rep_dof, set->rep_dof + set->rep_groups};
  if (pfi_noise_acc_finish(&rep, PFI_NOISE_REPLICATES, n))
    return;
  struct pfi_noise_acc acc = {0};
  double pbuf[64], tbuf[64];
  for (size_t j = 0; j < set->n; j++) {
    const struct pfi_curve *c = &set->c[j];
    double g = c->gpus > 0 ? (double)c->gpus : 1.0;
    size_t k = 0;
    /* A job's points whose power per GPU stays well below the cap: no cap
     * slowed them, so their spread is run-to-run noise (a job of more than
     * 64 such points contributes its first 64). */
    for (size_t i = 0; i < c->n && k < 64; i++) {
      const struct pfi_point *pt = &c->pts[i];
      if (pt->power_w / g < PFI_NOISE_UNBOUND_FRAC * pt->cap_w &&
          (pt->power_sd_w < 0 || pt->tokens_sd < 0) && pt->runs <= 1) {
        pbuf[k] = pt->power_w;
        tbuf[k++] = pt->tokens_per_s;
      }
    }
    pfi_noise_acc_add(&acc, pbuf, tbuf, k);
  }
  pfi_noise_acc_finish(&acc, PFI_NOISE_UNBOUND, n);
}

void pfi_noise_of(const struct pfi_curveset *set, int emulated,
                  struct pfi_noise *n) {
  pfi_noise_estimate(set, n);
  if (emulated && n->source != PFI_NOISE_COLUMNS)
    pfi_noise_paper(n);
}
