/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/gate.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/index.h"

void pfi_gate_opts_init(struct pfi_gate_opts *o) {
  o->pfi_tol = 0.10;
  o->tput_tol = 0.02;
  o->draws = 2000;
  o->seed = 1;
  o->ref_noise = o->new_noise = NULL;
}

static int cap_match(double a, double b) {
  double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
  return fabs(a - b) <= 1e-9 * (m > 1.0 ? m : 1.0);
}

/* Relative standard error of a point's throughput under noise `nz`
 * (index.c's rule: the sd column, else the noise, per run when an
 * estimate). */
static double rel_sd(const struct pfi_point *p, const struct pfi_noise *nz) {
  if (p->tokens_sd >= 0)
    return p->tokens_sd / p->tokens_per_s;
  if (!nz)
    return PFI_INDEX_DEFAULT_REL_SD_TOKENS;
  if (nz->per_run && p->runs > 1)
    return nz->rel_sd_tokens / sqrt((double)p->runs);
  return nz->rel_sd_tokens;
}

/* PFI estimate, interval and draws of one curve. */
static int one(const struct pfi_curve *c, const struct pfi_gate_opts *o,
               const struct pfi_noise *nz, unsigned long seed, double *sample,
               int *ok, double *v, double *lo, double *hi, size_t *points,
               int *undef, struct pfi_error *err) {
  struct pfi_index ix;
  int rc = pfi_index_compute_noise(c, PFI_INDEX_ALL, nz, &ix, err);
  if (rc < 0)
    return rc;
  *ok = ix.pfi_defined;
  *v = *lo = *hi = ix.pfi_defined ? ix.pfi : 0;
  *points = ix.points_used;
  *undef = ix.undefined_why;
  pfi_index_release(&ix);
  rc = pfi_index_draws_noise(c, o->draws, seed, nz, sample, err);
  if (rc < 0)
    return rc;
  if (rc > 0 && *ok) {
    double *s = malloc(o->draws * sizeof *s);
    if (!s)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t d = 0; d < o->draws; d++)
      if (isfinite(sample[d]))
        s[m++] = sample[d];
    gsl_sort(s, 1, m);
    *lo = gsl_stats_quantile_from_sorted_data(s, 1, m, 0.025);
    *hi = gsl_stats_quantile_from_sorted_data(s, 1, m, 0.975);
    free(s);
  }
  return 0;
}

int pfi_gate_compare(const struct pfi_curve *ref, const struct pfi_curve *new_c,
                     const struct pfi_gate_opts *o, struct pfi_gate_job *out,
                     struct pfi_error *err) {
  struct pfi_gate_opts def;
  if (!o) {
    pfi_gate_opts_init(&def);
    o = &def;
  }
  memset(out, 0, sizeof *out);
  if (!isfinite(o->pfi_tol) || o->pfi_tol < 0 || !isfinite(o->tput_tol) ||
      o->tput_tol < 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "gate: tolerances must be finite and >= 0");
  if (o->draws == 0)
    return pfi_error_set(err, PFI_EINVAL, "gate: needs at least 1 draw");
  if (ref->n < 2 || new_c->n < 2)
    return pfi_error_set(err, PFI_EINVAL,
                         "gate: job '%s' needs at least 2 points per sweep",
                         ref->job);
  double *a = malloc(2 * o->draws * sizeof *a);
  if (!a)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  double *b = a + o->draws;
  int rc =
      one(ref, o, o->ref_noise, o->seed, a, &out->ref_ok, &out->pfi_ref,
          &out->ref_lo, &out->ref_hi, &out->ref_points, &out->ref_undef, err);
  if (rc == 0)
    rc =
        one(new_c, o, o->new_noise, o->seed + 1, b, &out->new_ok, &out->pfi_new,
            &out->new_lo, &out->new_hi, &out->new_points, &out->new_undef, err);
  if (rc < 0) {
    free(a);
    return rc;
  }
  if (out->ref_ok && out->new_ok) {
    out->diff = out->pfi_new - out->pfi_ref;
    size_t m = 0;
    for (size_t d = 0; d < o->draws; d++)
      if (isfinite(a[d]) && isfinite(b[d]))
        a[m++] = b[d] - a[d];
    if (m > 0) {
      gsl_sort(a, 1, m);
      out->diff_lo = gsl_stats_quantile_from_sorted_data(a, 1, m, 0.025);
      out->diff_hi = gsl_stats_quantile_from_sorted_data(a, 1, m, 0.975);
      out->diff_ok = 1;
      out->pfi_beyond_noise = out->diff_lo > 0 || out->diff_hi < 0;
      out->pfi_fail = out->pfi_beyond_noise &&
                      fabs(out->diff) > o->pfi_tol * fabs(out->pfi_ref);
    }
  }
  free(a);

  /* Throughput at the common caps: the largest drop. */
  double worst = INFINITY;
  for (size_t i = 0; i < ref->n; i++)
    for (size_t j = 0; j < new_c->n; j++) {
      if (!cap_match(ref->pts[i].cap_w, new_c->pts[j].cap_w))
        continue;
      double ch = new_c->pts[j].tokens_per_s / ref->pts[i].tokens_per_s - 1;
      double ra = rel_sd(&ref->pts[i], o->ref_noise),
             rb = rel_sd(&new_c->pts[j], o->new_noise);
      double sig = (1 + ch) * sqrt(ra * ra + rb * rb);
      out->ncommon++;
      if (ch < worst) {
        worst = ch;
        out->worst_cap_w = ref->pts[i].cap_w;
        out->worst_change = ch;
        out->worst_sigma = sig;
      }
    }
  if (out->ncommon) {
    /* The largest of ncommon drops is tested: its level is split over the
     * caps (Bonferroni), so that a job without a change fails this check
     * with probability at most PFI_GATE_ALPHA_TPUT, whatever the grid. */
    out->tput_z =
        gsl_cdf_ugaussian_Qinv(PFI_GATE_ALPHA_TPUT / (double)out->ncommon);
    out->tput_beyond_noise =
        out->worst_change < 0 &&
        -out->worst_change > out->tput_z * out->worst_sigma;
    out->tput_fail = out->tput_beyond_noise && -out->worst_change > o->tput_tol;
  }
  const struct pfi_point *ur = pfi_curve_uncapped(ref),
                         *un = pfi_curve_uncapped(new_c);
  out->tpw_ref = ur->tokens_per_s / ur->power_w;
  out->tpw_new = un->tokens_per_s / un->power_w;
  out->tpw_change = out->tpw_new / out->tpw_ref - 1;
  if (!isfinite(out->tpw_change) || !isfinite(out->worst_change) ||
      !isfinite(out->diff_lo) || !isfinite(out->diff_hi))
    return pfi_error_set(err, PFI_ERANGE,
                         "gate: job '%s': a change is not a finite number (the "
                         "values span more than a double's range)",
                         ref->job);
  int checked = out->diff_ok || out->ncommon > 0;
  out->verdict = (!checked || out->pfi_fail || out->tput_fail) ? PFI_GATE_FAIL
                                                               : PFI_GATE_PASS;
  return 0;
}
