/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Phase segmentation and the top-10 % steady-state aggregate. */
#include <math.h>
#include <stdlib.h>

#include "pfi/phase.h"

void pfi_phase_params_init(struct pfi_phase_params *p) {
  p->loaded_mib = 10240.0; /* 10 GiB, the paper's warmup threshold */
  p->train_util = 50.0;
  p->top_frac = 0.10;
}

const char *pfi_phase_name(enum pfi_phase ph) {
  switch (ph) {
  case PFI_PHASE_WARMUP:
    return "warmup";
  case PFI_PHASE_STARTUP:
    return "startup";
  case PFI_PHASE_TRAINING:
    return "training";
  case PFI_PHASE_PAUSE:
    return "pause";
  }
  return NULL;
}

static int check_params(const struct pfi_phase_params *p,
                        struct pfi_error *err) {
  if (!(p->loaded_mib >= 0) || !isfinite(p->loaded_mib))
    return pfi_error_set(err, PFI_EINVAL,
                         "loaded frame-buffer threshold %g MiB "
                         "is not a finite non-negative value",
                         p->loaded_mib);
  if (!(p->train_util > 0 && p->train_util <= 100))
    return pfi_error_set(err, PFI_EINVAL,
                         "training utilization threshold %g %% is outside "
                         "(0, 100]",
                         p->train_util);
  if (!(p->top_frac > 0 && p->top_frac <= 1))
    return pfi_error_set(err, PFI_EINVAL, "top fraction %g is outside (0, 1]",
                         p->top_frac);
  return 0;
}

int pfi_phase_segment(const double *fb_used_mib, const double *gpu_util,
                      size_t n, const struct pfi_phase_params *p,
                      enum pfi_phase *out, struct pfi_error *err) {
  struct pfi_phase_params def;
  if (!p) {
    pfi_phase_params_init(&def);
    p = &def;
  }
  int rc = check_params(p, err);
  if (rc < 0)
    return rc;
  if (n > 0 && (!gpu_util || !out))
    return pfi_error_set(err, PFI_EINVAL, "no utilization series to segment");
  int loaded = 0, training = 0;
  for (size_t i = 0; i < n; i++) {
    double fb = fb_used_mib ? fb_used_mib[i] : NAN;
    double u = gpu_util[i];
    /* A missing frame-buffer reading cannot show warmup; count it loaded.
     * Loading is latched: a run does not unload its weights mid-way. */
    if (!loaded && (isnan(fb) || fb >= p->loaded_mib))
      loaded = 1;
    int busy = !isnan(u) && u >= p->train_util;
    if (!loaded && !busy)
      out[i] = PFI_PHASE_WARMUP;
    else if (!training && !busy)
      out[i] = PFI_PHASE_STARTUP;
    else if (busy) {
      training = loaded = 1;
      out[i] = PFI_PHASE_TRAINING;
    } else
      out[i] = PFI_PHASE_PAUSE;
  }
  return 0;
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

/* Selects the training-phase samples of `values` and sorts them in
 * descending order into a new buffer *out (caller frees); *m gets their
 * count and *k the size of the top fraction. */
static int top_select(const double *values, const enum pfi_phase *phase,
                      size_t n, const struct pfi_phase_params *p, double **out,
                      size_t *m_out, size_t *k_out, struct pfi_error *err) {
  size_t m = 0;
  double *buf = malloc((n ? n : 1) * sizeof *buf);
  *out = NULL;
  if (!buf)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    if (phase[i] == PFI_PHASE_TRAINING && isfinite(values[i]))
      buf[m++] = values[i];
  if (m == 0) {
    free(buf);
    return pfi_error_set(err, PFI_ENOTFOUND,
                         "no training-phase sample (GPU utilization never "
                         "reached %g %%)",
                         p->train_util);
  }
  qsort(buf, m, sizeof *buf, cmp_desc);
  size_t k = (size_t)ceil(p->top_frac * (double)m - 1e-9);
  if (k < 1)
    k = 1;
  if (k > m)
    k = m;
  *out = buf;
  *m_out = m;
  *k_out = k;
  return 0;
}

/* Mean of buf[0..k), summed from the smallest so that the result does not
 * depend on input order. */
static double mean_of(const double *buf, size_t k) {
  double s = 0;
  for (size_t i = k; i-- > 0;)
    s += buf[i];
  double mean = s / (double)k;
  if (!isfinite(mean)) {
    /* The sum overflowed (finite values near DBL_MAX, as a job that
     * reports nonsense can log): the mean of the scaled values cannot. */
    s = 0;
    for (size_t i = k; i-- > 0;)
      s += buf[i] / (double)k;
    mean = s;
  }
  return mean;
}

static int check_args(const double *values, const enum pfi_phase *phase,
                      size_t n, const struct pfi_phase_params **p,
                      struct pfi_phase_params *def, const void *outp,
                      struct pfi_error *err) {
  if (!*p) {
    pfi_phase_params_init(def);
    *p = def;
  }
  int rc = check_params(*p, err);
  if (rc < 0)
    return rc;
  if (!outp || (n > 0 && (!values || !phase)))
    return pfi_error_set(err, PFI_EINVAL, "no series to aggregate");
  return 0;
}

int pfi_phase_top_mean(const double *values, const enum pfi_phase *phase,
                       size_t n, const struct pfi_phase_params *p, double *mean,
                       size_t *used, struct pfi_error *err) {
  struct pfi_phase_params def;
  double *buf = NULL;
  size_t m = 0, k = 0;
  int rc = check_args(values, phase, n, &p, &def, mean, err);
  if (rc < 0)
    return rc;
  if (used)
    *used = 0;
  if ((rc = top_select(values, phase, n, p, &buf, &m, &k, err)) < 0)
    return rc;
  *mean = mean_of(buf, k);
  if (used)
    *used = k;
  free(buf);
  return 0;
}

int pfi_phase_top_sem(const double *values, const enum pfi_phase *phase,
                      size_t n, const struct pfi_phase_params *p, double *sem,
                      struct pfi_error *err) {
  struct pfi_phase_params def;
  double *buf = NULL;
  size_t m = 0, k = 0;
  int rc = check_args(values, phase, n, &p, &def, sem, err);
  if (rc < 0)
    return rc;
  if ((rc = top_select(values, phase, n, p, &buf, &m, &k, err)) < 0)
    return rc;
  *sem = -1;
  if (k >= 2) {
    double mean = mean_of(buf, k), ss = 0;
    for (size_t i = 0; i < k; i++) {
      double d = buf[i] - mean;
      ss += d * d;
    }
    double v = sqrt(ss / (double)(k - 1)) / sqrt((double)k);
    if (isfinite(v))
      *sem = v;
  }
  free(buf);
  return 0;
}
