/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The allocation objective: one factor per job, applied in one place. */
#include "pfi/objective.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pfi/csv.h"

static const char *const kinds[PFI_OBJ__COUNT] = {"work", "throughput", "jobs"};

void pfi_objective_init(struct pfi_objective *o) {
  o->kind = PFI_OBJ_WORK;
  o->weight = NULL;
  o->min_share = 0;
}

double pfi_objective_factor(enum pfi_objective_kind k, double weight,
                            double gpus, double tmax) {
  double g = k == PFI_OBJ_WORK && gpus > 0 ? gpus : 1.0;
  if (k == PFI_OBJ_THROUGHPUT)
    return weight;
  if (!(tmax > 0) || !isfinite(tmax))
    return 1.0;
  return weight * g / tmax;
}

const char *pfi_objective_name(enum pfi_objective_kind k) {
  return (unsigned)k < PFI_OBJ__COUNT ? kinds[k] : "?";
}

int pfi_objective_parse(const char *name) {
  if (!name)
    return -1;
  for (int i = 0; i < PFI_OBJ__COUNT; i++)
    if (strcmp(name, kinds[i]) == 0)
      return i;
  return -1;
}

const char *pfi_objective_unit(const struct pfi_objective *o, int gpus_known,
                               const char *throughput_unit, char *buf,
                               size_t n) {
  const char *u = o->kind == PFI_OBJ_THROUGHPUT
                      ? (throughput_unit ? throughput_unit : "tokens/s")
                  : o->kind == PFI_OBJ_WORK && gpus_known ? "GPU-equivalents"
                                                          : "job-equivalents";
  snprintf(buf, n, "%s%s", o->weight ? "weighted " : "", u);
  return buf;
}

const char *pfi_objective_describe(const struct pfi_objective *o,
                                   int gpus_known, char *buf, size_t n) {
  const char *what =
      o->kind == PFI_OBJ_WORK
          ? (gpus_known ? "work kept, each job's share of its uncapped "
                          "throughput x its GPUs"
                        : "work kept, each job's share of its uncapped "
                          "throughput (no GPU counts: each job counted once)")
      : o->kind == PFI_OBJ_THROUGHPUT
          ? "sum of raw throughput (the paper's; depends on each job's unit)"
          : "each job counts once, by its share of its uncapped throughput";
  char ms[64] = "";
  if (o->min_share > 0)
    snprintf(ms, sizeof ms, ", each job keeps >= %.4g %%", 100 * o->min_share);
  snprintf(buf, n, "objective %s: %s%s%s", pfi_objective_name(o->kind), what,
           o->weight ? ", weighted per job" : "", ms);
  return buf;
}

static int job_err(struct pfi_error *err, const char *const *names, size_t i,
                   const char *fmt_tail, double v) {
  if (names && names[i])
    return pfi_error_set(err, PFI_EINVAL, "job %s: %s (%g)", names[i], fmt_tail,
                         v);
  return pfi_error_set(err, PFI_EINVAL, "job %zu: %s (%g)", i + 1, fmt_tail, v);
}

int pfi_objective_gpus(const int *gpus, size_t n, const char *const *names,
                       int *known, struct pfi_error *err) {
  size_t have = 0;
  for (size_t i = 0; gpus && i < n; i++)
    have += gpus[i] > 0;
  if (have == 0 || have == n) {
    *known = n > 0 && have == n;
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if (!(gpus[i] > 0)) {
      if (names && names[i])
        return pfi_error_set(err, PFI_EINVAL,
                             "job %s has no GPU count while other jobs have "
                             "one: the work objective weighs each job by its "
                             "GPUs (give every job a gpus column value, or "
                             "--objective jobs)",
                             names[i]);
      return pfi_error_set(err, PFI_EINVAL,
                           "job %zu has no GPU count while other jobs have "
                           "one: the work objective weighs each job by its "
                           "GPUs",
                           i + 1);
    }
  return 0;
}

/* The factor f_i of job i, such that v = y / T * f (work, jobs) or
 * v = y * f (throughput); *known as pfi_objective_gpus(). */
static double tmax_of(const struct pfi_problem *raw, const double *tmax,
                      size_t i) {
  return tmax ? tmax[i] : pfi_problem_eval(raw, i, pfi_problem_hi(raw, i));
}

static int factors(const struct pfi_problem *raw, const struct pfi_objective *o,
                   const int *gpus, const double *tmax,
                   const char *const *names, double *f, int *known,
                   struct pfi_error *err) {
  size_t n = raw->njobs;
  if ((unsigned)o->kind >= PFI_OBJ__COUNT)
    return pfi_error_set(err, PFI_EINVAL, "unknown objective %d", (int)o->kind);
  if (!(o->min_share >= 0 && o->min_share < 1))
    return pfi_error_set(err, PFI_EINVAL, "minimum share %g is outside [0, 1)",
                         o->min_share);
  *known = 0;
  if (o->kind == PFI_OBJ_WORK) {
    int rc = pfi_objective_gpus(gpus, n, names, known, err);
    if (rc < 0)
      return rc;
  }
  for (size_t i = 0; i < n; i++) {
    double w = o->weight ? o->weight[i] : 1.0;
    if (!isfinite(w) || w < 0)
      return job_err(err, names, i, "weight is negative or not finite", w);
    double t = tmax_of(raw, tmax, i);
    if ((o->kind != PFI_OBJ_THROUGHPUT || o->min_share > 0) &&
        (!(t > 0) || !isfinite(t)))
      return job_err(err, names, i,
                     "uncapped throughput is not positive: cannot count its "
                     "share",
                     t);
    double g = o->kind == PFI_OBJ_WORK && *known ? (double)gpus[i] : 1.0;
    f[i] = w * g;
  }
  int any = n == 0;
  for (size_t i = 0; i < n && !any; i++)
    any = f[i] > 0;
  if (!any)
    return pfi_error_set(err, PFI_EINVAL,
                         "every job's weight is 0: nothing to maximize");
  return 0;
}

int pfi_objective_scale(const struct pfi_problem *raw,
                        const struct pfi_objective *o, const int *gpus,
                        const double *tmax, const char *const *names,
                        double *scale, struct pfi_error *err) {
  int known;
  int rc = factors(raw, o, gpus, tmax, names, scale, &known, err);
  if (rc < 0)
    return rc;
  if (o->kind != PFI_OBJ_THROUGHPUT)
    for (size_t i = 0; i < raw->njobs; i++)
      scale[i] /= tmax_of(raw, tmax, i);
  return 0;
}

/* The lowest power of job i above which its throughput stays >= target. */
static double share_floor(const struct pfi_problem *p, size_t i,
                          double target) {
  size_t a = p->off[i], b = p->off[i + 1];
  for (size_t k = b - 1; k > a; k--) {
    if (p->y[k - 1] >= target)
      continue;
    /* y[k] >= target > y[k-1]: the crossing inside the segment. */
    double x0 = p->x[k - 1], x1 = p->x[k], y0 = p->y[k - 1], y1 = p->y[k];
    double x = x0 + (target - y0) / (y1 - y0) * (x1 - x0);
    if (!(x >= x0))
      x = x0;
    if (!(x <= x1))
      x = x1;
    return x;
  }
  return p->x[a];
}

int pfi_objective_problem(const struct pfi_problem *raw,
                          const struct pfi_objective *o, const int *gpus,
                          const double *tmax, const char *const *names,
                          struct pfi_problem *out, int *gpus_known,
                          struct pfi_error *err) {
  size_t n = raw->njobs;
  pfi_problem_clear(out);
  double *f = malloc((n + 1) * sizeof *f);
  size_t maxm = 1;
  for (size_t i = 0; i < n; i++)
    if (raw->off[i + 1] - raw->off[i] > maxm)
      maxm = raw->off[i + 1] - raw->off[i];
  double *y = malloc(maxm * sizeof *y);
  int known = 0, rc;
  if (!f || !y) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = factors(raw, o, gpus, tmax, names, f, &known, err)) < 0)
    goto out;
  for (size_t i = 0; i < n; i++) {
    size_t a = raw->off[i], b = raw->off[i + 1];
    double t = tmax_of(raw, tmax, i);
    for (size_t k = a; k < b; k++)
      /* y / T first: without weights or GPUs, the bits of dividing by T
       * (pfi_problem_normalize). */
      y[k - a] = o->kind == PFI_OBJ_THROUGHPUT ? raw->y[k] * f[i]
                                               : raw->y[k] / t * f[i];
    double lo = raw->x[a], hi = raw->x[b - 1];
    if (o->min_share > 0)
      lo = share_floor(raw, i, o->min_share * t);
    if ((rc = pfi_problem_add(out, raw->x + a, y, b - a, lo, hi, err)) < 0)
      goto out;
  }
  if (gpus_known)
    *gpus_known = known;
  rc = 0;
out:
  free(f);
  free(y);
  return rc;
}

/* ---- weights file ---- */

int pfi_objective_weights_read_mem(const char *name, const char *data,
                                   size_t len, const char *const *jobs,
                                   size_t n, double *w, struct pfi_error *err) {
  struct pfi_table t;
  int rc = pfi_table_load_mem(&t, name, data, len, err);
  if (rc < 0)
    return rc;
  long *line = calloc(n + 1, sizeof *line);
  if (!line) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  int cj = pfi_table_find(&t, "job"), cw = pfi_table_find(&t, "weight");
  if (cj < 0 || cw < 0) {
    rc = pfi_table_missing(&t, err, "weights need the columns job and weight");
    goto out;
  }
  for (size_t r = 0; r < t.nrows; r++) {
    const char *job = pfi_table_cell(&t, r, (size_t)cj);
    if (!job)
      continue;
    size_t i = 0;
    while (i < n && strcmp(jobs[i], job) != 0)
      i++;
    if (i == n)
      continue;
    double v;
    const char *s = pfi_table_cell(&t, r, (size_t)cw);
    long col = t.col[r * t.ncols + (size_t)cw];
    if (!s || pfi_parse_double(s, &v) < 0 || !(v >= 0) || v > 1e300) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r], col,
                            "weight: '%.40s' is not a number >= 0 (job %.80s)",
                            s ? s : "", job);
      goto out;
    }
    if (line[i] && !(w[i] == v)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r], col,
                            "weight: job %.80s has weight %g on line %ld and "
                            "%g here",
                            job, w[i], line[i], v);
      goto out;
    }
    w[i] = v;
    line[i] = t.line[r];
  }
  for (size_t i = 0; i < n; i++)
    if (!line[i]) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, 0, 0,
                            "no weight for job %.80s", jobs[i]);
      goto out;
    }
  rc = 0;
out:
  free(line);
  pfi_table_release(&t);
  return rc;
}

int pfi_objective_weights_read(const char *path, const char *const *jobs,
                               size_t n, double *w, struct pfi_error *err) {
  char *data;
  size_t len;
  int rc = pfi_read_file(path, &data, &len, err);
  if (rc < 0)
    return rc;
  rc = pfi_objective_weights_read_mem(strcmp(path, "-") == 0 ? "<stdin>" : path,
                                      data, len, jobs, n, w, err);
  free(data);
  return rc;
}

int pfi_power_parse(const char *s, double *watts, struct pfi_error *err) {
  if (!s)
    return pfi_error_set(err, PFI_EINVAL, "missing power");
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v))
    return pfi_error_set(err, PFI_EINVAL,
                         "power '%.40s' is not a number (use 150kW, 2.5MW or "
                         "90000W)",
                         s);
  while (isspace((unsigned char)*end))
    end++;
  double mul;
  if (*end == '\0' || strcmp(end, "W") == 0)
    mul = 1;
  else if (strcmp(end, "kW") == 0)
    mul = 1e3;
  else if (strcmp(end, "MW") == 0)
    mul = 1e6;
  else
    return pfi_error_set(err, PFI_EINVAL,
                         "power '%.40s': unknown unit (W, kW or MW)", s);
  v *= mul;
  if (!(v > 0) || v > 1e12)
    return pfi_error_set(err, PFI_EINVAL,
                         "power '%.40s' must be above 0 and at most 1 TW", s);
  *watts = v;
  return 0;
}
