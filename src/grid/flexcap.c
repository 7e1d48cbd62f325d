/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Flexible capacity under the tier contract; tier files. See
 * include/pfi/flexcap.h. */
#include "pfi/flexcap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/alloc.h"
#include "pfi/csv.h"
#include "pfi/features.h"
#include "pfi/meter.h"
#include "pfi/model.h"
#include "pfi/monotone.h"
#include "pfi/objective.h"
#include "pfi/oracle.h"

static int check_curve(const struct pfi_flex_job *j, const double *t,
                       struct pfi_error *err) {
  if (j->n < 2)
    return pfi_error_set(err, PFI_EINVAL, "job %s: a curve needs 2 points",
                         j->job);
  for (size_t i = 0; i < j->n; i++) {
    if (!isfinite(j->power_w[i]) || j->power_w[i] < 0 || !isfinite(t[i]) ||
        t[i] < 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "job %s: point %zu is not finite and >= 0", j->job,
                           i + 1);
    if (i > 0 && !(j->power_w[i] > j->power_w[i - 1]))
      return pfi_error_set(err, PFI_EINVAL,
                           "job %s: powers must increase (point %zu)", j->job,
                           i + 1);
  }
  if (!(t[j->n - 1] > 0))
    return pfi_error_set(err, PFI_EINVAL,
                         "job %s: uncapped throughput must be > 0", j->job);
  return 0;
}

int pfi_flex_floor(const struct pfi_flex_job *j, double duration_s,
                   double notice_s, const double *tput, double *floor_w,
                   struct pfi_error *err) {
  if (!tput)
    tput = j->tput;
  int rc = check_curve(j, tput, err);
  if (rc < 0)
    return rc;
  if (!j->tier)
    return pfi_error_set(err, PFI_EINVAL, "job %s: no tier", j->job);
  size_t n = j->n;
  const double *p = j->power_w;
  if (duration_s > j->tier->max_event_s || notice_s < j->tier->notice_s) {
    *floor_w = p[n - 1];
    return 0;
  }
  double thr = (1 - j->tier->max_loss) * tput[n - 1];
  /* Down from the top: the first segment whose lower end falls below the
   * threshold holds the floor (throughput must stay above it all the way
   * down from uncapped, since caps come down continuously). */
  for (size_t k = n - 1; k > 0; k--) {
    double t0 = tput[k - 1], t1 = tput[k];
    if (t0 >= thr)
      continue;
    if (t1 <= thr) { /* a dip at the top (noise): no lower than here */
      *floor_w = p[k];
      return 0;
    }
    *floor_w = p[k - 1] + (thr - t0) * (p[k] - p[k - 1]) / (t1 - t0);
    return 0;
  }
  *floor_w = p[0];
  return 0;
}

/* The oracle's quotes over jobs' [floor, uncapped] with throughput `which`
 * (0 mid, 1 lo, 2 hi), each job's throughput turned into its value under
 * `obj` (NULL: the sum of raw throughput, pfid's live quote). */
static int quotes(const struct pfi_flex_job *jobs, size_t nj, double duration_s,
                  double notice_s, size_t steps, int which,
                  const struct pfi_objective *obj, struct pfi_flexcap *out,
                  double *q, struct pfi_error *err) {
  struct pfi_problem raw, pr;
  pfi_problem_init(&raw);
  pfi_problem_init(&pr);
  int rc = 0;
  const char **names = calloc(nj + 1, sizeof *names);
  int *gpus = calloc(nj + 1, sizeof *gpus);
  if (!names || !gpus)
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
  out->eligible = 0;
  out->uncapped_w = out->floor_w = 0;
  for (size_t i = 0; i < nj && rc >= 0; i++) {
    const struct pfi_flex_job *j = &jobs[i];
    const double *t = which == 1   ? j->tput_lo
                      : which == 2 ? j->tput_hi
                                   : j->tput;
    double fl;
    if ((rc = pfi_flex_floor(j, duration_s, notice_s, t, &fl, err)) < 0)
      break;
    names[i] = j->job;
    gpus[i] = j->gpus;
    rc = pfi_problem_add(&raw, j->power_w, t, j->n, fl, j->power_w[j->n - 1],
                         err);
  }
  const struct pfi_problem *use = &raw;
  if (rc >= 0 && obj) {
    rc = pfi_objective_problem(&raw, obj, gpus, NULL, names, &pr, NULL, err);
    use = &pr;
  }
  /* Floors read from the problem solved: a minimum share may raise them. */
  for (size_t i = 0; rc >= 0 && i < use->njobs; i++) {
    double lo = pfi_problem_lo(use, i), hi = pfi_problem_hi(use, i);
    out->uncapped_w += hi;
    out->floor_w += lo;
    out->eligible += lo < hi;
  }
  if (rc >= 0) {
    struct pfi_capacity cap;
    memset(&cap, 0, sizeof cap);
    if (out->uncapped_w - out->floor_w <= 1e-9 * out->uncapped_w) {
      for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
        q[k] = 0; /* nothing may be cut for this event */
    } else if ((rc = pfi_capacity_compute(use, PFI_STRAT_ORACLE, NULL, NULL,
                                          NULL, steps, &cap, err)) >= 0) {
      for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
        q[k] = cap.quote_w[k];
    }
    pfi_capacity_release(&cap);
  }
  pfi_problem_release(&raw);
  pfi_problem_release(&pr);
  free(names);
  free(gpus);
  return rc < 0 ? rc : 0;
}

int pfi_flexcap_compute(const struct pfi_flex_job *jobs, size_t nj,
                        double duration_s, double notice_s, size_t steps,
                        struct pfi_flexcap *out, struct pfi_error *err) {
  return pfi_flexcap_compute_objective(jobs, nj, duration_s, notice_s, steps,
                                       NULL, out, err);
}

int pfi_flexcap_compute_objective(const struct pfi_flex_job *jobs, size_t nj,
                                  double duration_s, double notice_s,
                                  size_t steps, const struct pfi_objective *obj,
                                  struct pfi_flexcap *out,
                                  struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  out->duration_s = duration_s;
  if (nj == 0)
    return pfi_error_set(err, PFI_EINVAL, "flexible capacity: no jobs");
  int has_iv = jobs[0].tput_lo && jobs[0].tput_hi;
  for (size_t i = 0; i < nj; i++)
    if ((jobs[i].tput_lo && jobs[i].tput_hi) != has_iv)
      return pfi_error_set(err, PFI_EINVAL,
                           "flexible capacity: job %s: intervals for every "
                           "job or for none",
                           jobs[i].job);
  int rc = quotes(jobs, nj, duration_s, notice_s, steps, 0, obj, out,
                  out->quote_w, err);
  if (rc < 0)
    return rc;
  struct pfi_flexcap mid = *out;
  if (has_iv) {
    struct pfi_flexcap tmp;
    double lo[PFI_CAPACITY_NQUOTE], hi[PFI_CAPACITY_NQUOTE];
    if ((rc = quotes(jobs, nj, duration_s, notice_s, steps, 1, obj, &tmp, lo,
                     err)) < 0 ||
        (rc = quotes(jobs, nj, duration_s, notice_s, steps, 2, obj, &tmp, hi,
                     err)) < 0)
      return rc;
    for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
      double a = fmin(lo[k], hi[k]), b = fmax(lo[k], hi[k]);
      mid.quote_lo_w[k] = fmin(a, mid.quote_w[k]);
      mid.quote_hi_w[k] = fmax(b, mid.quote_w[k]);
    }
    mid.has_interval = 1;
  } else
    for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
      mid.quote_lo_w[k] = mid.quote_hi_w[k] = mid.quote_w[k];
  *out = mid;
  return 0;
}

/* ---- live capacity from operating points -------------------------------- */

#define LIVE_PTS 9

int pfi_flex_live(const struct pfi_flex_live_job *jobs, size_t nj,
                  size_t steps, struct pfi_flexcap *out, size_t *skipped,
                  struct pfi_error *err) {
  return pfi_flex_live_event(jobs, nj, 0, steps, out, skipped, err);
}

static double model_t(double tput, double g, double u) {
  return tput * (1 - pow(1 - u, g));
}

int pfi_flex_live_event(const struct pfi_flex_live_job *jobs, size_t nj,
                        double duration_s, size_t steps,
                        struct pfi_flexcap *out, size_t *skipped,
                        struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  if (!(duration_s >= 0))
    return pfi_error_set(err, PFI_EINVAL,
                         "flexible capacity: event length must be >= 0");
  size_t skip = 0, m = 0, fixed_n = 0;
  double fixed_w = 0; /* jobs at or under their lowest caps: held */
  struct pfi_flex_job *fj = calloc(nj ? nj : 1, sizeof *fj);
  struct pfi_tier *tier = calloc(nj ? nj : 1, sizeof *tier);
  double *buf = calloc((nj ? nj : 1) * 4 * LIVE_PTS, sizeof *buf);
  int rc = 0;
  if (!fj || !tier || !buf) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < nj; i++) {
    const struct pfi_flex_live_job *j = &jobs[i];
    double hi = j->power_w, lo = j->min_w;
    if (!(isfinite(hi) && hi > 0 && isfinite(j->tput) && j->tput > 0)) {
      skip++;
      continue;
    }
    if (!(isfinite(lo) && lo >= 0) || lo >= hi) {
      fixed_w += hi; /* draws under its lowest caps: nothing to shed */
      fixed_n++;
      continue;
    }
    double pfi = isfinite(j->pfi) && j->pfi > 0 ? j->pfi : 1.5;
    double plo = isfinite(j->pfi_lo) && j->pfi_lo > 0 ? j->pfi_lo : 1.0;
    int has_phi = isfinite(j->pfi_hi) && j->pfi_hi > 0;
    if (plo > pfi)
      plo = pfi;
    double g = pfi_curve_model_exponent(pfi, lo, hi);
    double gl = pfi_curve_model_exponent(plo, lo, hi);
    double gh = has_phi ? pfi_curve_model_exponent(j->pfi_hi, lo, hi) : g;
    double *p = buf + m * 4 * LIVE_PTS, *t = p + LIVE_PTS,
           *tl = t + LIVE_PTS, *th = tl + LIVE_PTS;
    size_t n = LIVE_PTS;
    for (size_t k = 0; k + 1 < n; k++) {
      double x = lo + (hi - lo) * (double)k / (double)(n - 1);
      double u = x / hi;
      p[k] = x;
      t[k] =
          j->believe ? j->believe(j->believe_arg, x) : model_t(j->tput, g, u);
      if (!(isfinite(t[k]) && t[k] >= 0)) {
        rc = pfi_error_set(err, PFI_EINVAL,
                           "flexible capacity: job %s: believed throughput "
                           "at %.1f W is not finite and >= 0",
                           j->job, x);
        goto out;
      }
      if (t[k] > j->tput)
        t[k] = j->tput;
      tl[k] = fmin(t[k], model_t(j->tput, gl, u));
      th[k] =
          has_phi ? fmax(t[k], fmin(j->tput, model_t(j->tput, gh, u))) : t[k];
    }
    p[n - 1] = hi;
    t[n - 1] = th[n - 1] = tl[n - 1] = j->tput;
    snprintf(tier[m].name, sizeof tier[m].name, "live");
    tier[m].max_loss =
        j->max_loss >= 0 && j->max_loss < 1 ? j->max_loss : 1.0;
    tier[m].max_event_s = isfinite(j->max_event_s) && j->max_event_s > 0
                              ? j->max_event_s
                              : INFINITY;
    tier[m].notice_s = 0;
    fj[m] = (struct pfi_flex_job){j->job, p, t, tl, th, n, &tier[m], 0};
    m++;
  }
  if (skipped)
    *skipped = skip;
  if (m + fixed_n == 0) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "flexible capacity: no job with a draw and a "
                       "throughput");
    goto out;
  }
  if (m > 0 &&
      (rc = pfi_flexcap_compute(fj, m, duration_s, 0, steps, out, err)) < 0)
    goto out;
  /* The longest event this quote holds for: the shortest bound among the
   * jobs that may be cut (a job held for this event adds nothing). */
  out->duration_s = INFINITY;
  for (size_t i = 0; i < m; i++) {
    double fl;
    if (pfi_flex_floor(&fj[i], duration_s, 0, NULL, &fl, NULL) == 0 &&
        fl < fj[i].power_w[fj[i].n - 1] &&
        tier[i].max_event_s < out->duration_s)
      out->duration_s = tier[i].max_event_s;
  }
  out->uncapped_w += fixed_w;
  out->floor_w += fixed_w;
out:
  free(fj);
  free(tier);
  free(buf);
  return rc;
}

/* ---- estimates from a model ------------------------------------------- */

static int est_cmp(const void *a, const void *b) {
  return strcmp(((const struct pfi_flex_estimate *)a)->job,
                ((const struct pfi_flex_estimate *)b)->job);
}

int pfi_flex_estimates_load(const char *model, const char *features,
                            struct pfi_flex_estimate **out, size_t *n,
                            struct pfi_error *err) {
  *out = NULL;
  *n = 0;
  struct pfi_model m;
  struct pfi_features f;
  memset(&f, 0, sizeof f);
  int rc = pfi_model_load(&m, model, err);
  if (rc < 0)
    return rc;
  if ((rc = pfi_features_load(&f, features, err)) < 0) {
    pfi_model_release(&m);
    return rc;
  }
  size_t nr = f.t.nrows;
  struct pfi_flex_estimate *e = calloc(nr ? nr : 1, sizeof *e);
  double *x = calloc(m.k ? m.k : 1, sizeof *x);
  if (!e || !x)
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t r = 0; rc >= 0 && r < nr; r++) {
    size_t row = r;
    const char *job = pfi_table_cell(&f.t, r, (size_t)f.job_col);
    if ((rc = pfi_model_design(&f, &row, 1, (const char *const *)m.features,
                               m.k, x, err)) < 0)
      break;
    rc = pfi_model_predict_interval(&m, x, &e[r].pfi, &e[r].lo, &e[r].hi, err);
    if (rc < 0) {
      char why[PFI_ERROR_MSG_MAX];
      snprintf(why, sizeof why, "%s", err ? err->msg : "");
      pfi_error_setloc(err, rc, features, f.t.line[r], 1,
                       "job %.60s: no prediction interval: %.200s",
                       job ? job : "", why);
      break;
    }
    rc = 0;
    snprintf(e[r].job, sizeof e[r].job, "%s", job ? job : "");
  }
  free(x);
  pfi_features_release(&f);
  pfi_model_release(&m);
  if (rc < 0) {
    free(e);
    return rc;
  }
  qsort(e, nr, sizeof *e, est_cmp);
  *out = e;
  *n = nr;
  return 0;
}

const struct pfi_flex_estimate *
pfi_flex_estimate_find(const struct pfi_flex_estimate *e, size_t n,
                       const char *job) {
  struct pfi_flex_estimate key;
  snprintf(key.job, sizeof key.job, "%s", job);
  return n ? bsearch(&key, e, n, sizeof *e, est_cmp) : NULL;
}

/* ---- tier files -------------------------------------------------------- */

static int cell_num(const struct pfi_table *t, size_t r, int c, double lo,
                    double hi, int pct, double *out, struct pfi_error *err) {
  const char *s = pfi_table_cell(t, r, (size_t)c);
  long col = t->col[r * t->ncols + (size_t)c];
  if (col <= 0)
    col = 1;
  if (!s || !*s)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r], col,
                            "%s: empty", t->header[c]);
  char *end;
  double v = strtod(s, &end);
  if (pct && *end == '%') {
    v /= 100;
    end++;
  }
  if (end == s || *end || !isfinite(v) || v < lo || v > hi)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r], col,
                            "%s: '%.40s' is not a number in [%g, %g]%s",
                            t->header[c], s, lo, hi,
                            pct ? " (or a percentage)" : "");
  *out = v;
  return 0;
}

/* A tier's name and the row it is on, to find the names given twice by
 * sorting (n log n; a pairwise check took 29 s for 100,000 rows). */
struct tier_row {
  const char *name;
  size_t row;
};

static int tier_row_cmp(const void *a, const void *b) {
  const struct tier_row *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->row > y->row) - (x->row < y->row);
}

/* The first row (in file order) whose name an earlier row has, or nrows
 * when every name is distinct; -1 when out of memory. */
static long first_repeat(const struct pfi_table *t, int ct) {
  size_t n = t->nrows;
  if (n < 2)
    return (long)n;
  struct tier_row *v = malloc(n * sizeof *v);
  if (!v)
    return -1;
  for (size_t r = 0; r < n; r++) {
    const char *nm = pfi_table_cell(t, r, (size_t)ct);
    v[r].name = nm ? nm : "";
    v[r].row = r;
  }
  qsort(v, n, sizeof *v, tier_row_cmp);
  /* Within a run of equal names the rows ascend: all but the first of the
   * run repeat an earlier row. */
  size_t first = n;
  for (size_t i = 1; i < n; i++)
    if (strcmp(v[i].name, v[i - 1].name) == 0 && v[i].row < first)
      first = v[i].row;
  free(v);
  return (long)first;
}

int pfi_tiers_load_mem(const char *name, const char *data, size_t len,
                       struct pfi_tier **out, size_t *n,
                       struct pfi_error *err) {
  *out = NULL;
  *n = 0;
  struct pfi_table t;
  int rc = pfi_table_load_mem(&t, name, data, len, err);
  if (rc < 0)
    return rc;
  int ct = pfi_table_find(&t, "tier"), cl = pfi_table_find(&t, "max_loss"),
      ce = pfi_table_find(&t, "max_event_s"),
      cn = pfi_table_find(&t, "notice_s");
  struct pfi_tier *v = NULL;
  if (ct < 0 || cl < 0) {
    rc = pfi_error_setloc(err, PFI_EPARSE, name, 1, 1,
                          "tiers: the header must name tier and max_loss "
                          "(optional: max_event_s, notice_s)");
    goto out;
  }
  v = calloc(t.nrows ? t.nrows : 1, sizeof *v);
  long repeat = v ? first_repeat(&t, ct) : -1;
  if (repeat < 0) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t r = 0; r < t.nrows; r++) {
    const char *nm = pfi_table_cell(&t, r, (size_t)ct);
    if (!nm || !*nm || strlen(nm) >= PFI_NAME_MAX) {
      rc = pfi_error_setloc(err, PFI_EPARSE, name, t.line[r], 1,
                            "tier: expected a name of 1-63 bytes");
      goto out;
    }
    if ((long)r == repeat) {
      rc = pfi_error_setloc(err, PFI_EPARSE, name, t.line[r], 1,
                            "tier: '%s' is defined twice", nm);
      goto out;
    }
    snprintf(v[r].name, sizeof v[r].name, "%s", nm);
    v[r].max_event_s = INFINITY;
    if ((rc = cell_num(&t, r, cl, 0, 1, 1, &v[r].max_loss, err)) < 0)
      goto out;
    const char *e = ce >= 0 ? pfi_table_cell(&t, r, (size_t)ce) : NULL;
    if (e && *e &&
        (rc = cell_num(&t, r, ce, 0, 1e9, 0, &v[r].max_event_s, err)) < 0)
      goto out;
    const char *no = cn >= 0 ? pfi_table_cell(&t, r, (size_t)cn) : NULL;
    if (no && *no &&
        (rc = cell_num(&t, r, cn, 0, 1e9, 0, &v[r].notice_s, err)) < 0)
      goto out;
  }
  *out = v;
  *n = t.nrows;
  v = NULL;
  rc = 0;
out:
  free(v);
  pfi_table_release(&t);
  return rc;
}

int pfi_tiers_load(const char *path, struct pfi_tier **out, size_t *n,
                   struct pfi_error *err) {
  char *buf;
  size_t len;
  int rc = pfi_read_file(path, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = pfi_tiers_load_mem(path, buf, len, out, n, err);
  free(buf);
  return rc;
}

/* ---- the jobs of a curves file, with their tiers ---- */

void pfi_flex_jobs_release(struct pfi_flex_jobs *c) {
  pfi_curveset_release(&c->cs);
  free(c->tiers);
  free(c->jobs);
  free(c->buf);
}

static int cmp_point_power(const void *a, const void *b) {
  const struct pfi_point *x = a, *y = b;
  return (x->power_w > y->power_w) - (x->power_w < y->power_w);
}

int pfi_flex_jobs_load(struct pfi_flex_jobs *c, const char *curves,
                       const char *map, const char *tiers, const char *contract,
                       const char *tier, struct pfi_error *err) {
  return pfi_flex_jobs_load_fit(c, curves, map, tiers, contract, tier,
                                PFI_CURVE_MONOTONE, err);
}

int pfi_flex_jobs_load_fit(struct pfi_flex_jobs *c, const char *curves,
                           const char *map, const char *tiers,
                           const char *contract, const char *tier,
                           enum pfi_curve_fit fit, struct pfi_error *err) {
  memset(c, 0, sizeof *c);
  c->curve_fit = fit;
  pfi_curveset_init(&c->cs);
  int rc;
  struct pfi_table ct;
  memset(&ct, 0, sizeof ct);
  if ((rc = pfi_curveset_read(&c->cs, curves, map, err)) < 0 ||
      (rc = pfi_tiers_load(tiers, &c->tiers, &c->ntiers, err)) < 0)
    return rc;
  if (contract && (rc = pfi_table_load(&ct, contract, err)) < 0)
    return rc;
  int cj = contract ? pfi_table_find(&ct, "job") : -1,
      ctr = contract ? pfi_table_find(&ct, "tier") : -1;
  if (contract && (cj < 0 || ctr < 0)) {
    rc = pfi_error_setloc(err, PFI_EPARSE, contract, 1, 1,
                          "contract: the header must name job and tier");
    goto out;
  }
  size_t npts = 0;
  for (size_t i = 0; i < c->cs.n; i++)
    npts += c->cs.c[i].n;
  c->n = c->cs.n;
  c->jobs = calloc(c->n ? c->n : 1, sizeof *c->jobs);
  c->buf = malloc((4 * npts + 1) * sizeof *c->buf);
  if (!c->jobs || !c->buf) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  c->has_sd = 1;
  for (size_t i = 0; i < c->cs.n; i++)
    for (size_t k = 0; k < c->cs.c[i].n; k++)
      if (!(c->cs.c[i].pts[k].tokens_sd >= 0))
        c->has_sd = 0;
  double *b = c->buf;
  for (size_t i = 0; i < c->cs.n; i++) {
    struct pfi_curve *cv = &c->cs.c[i];
    struct pfi_flex_job *j = &c->jobs[i];
    const char *tn = tier;
    for (size_t r = 0; contract && r < ct.nrows; r++) {
      const char *jn = pfi_table_cell(&ct, r, (size_t)cj);
      if (jn && strcmp(jn, cv->job) == 0)
        tn = pfi_table_cell(&ct, r, (size_t)ctr);
    }
    if (!tn) {
      rc = pfi_error_set(err, PFI_EPARSE,
                         "job %s: no tier (not in %s; --tier sets one for "
                         "all jobs)",
                         cv->job, contract ? contract : "a contract");
      goto out;
    }
    for (size_t k = 0; k < c->ntiers; k++)
      if (strcmp(c->tiers[k].name, tn) == 0)
        j->tier = &c->tiers[k];
    if (!j->tier) {
      rc = pfi_error_set(err, PFI_EPARSE, "job %s: tier '%s' is not in %s",
                         cv->job, tn, tiers);
      goto out;
    }
    /* The points decisions read: the monotone fit under
     * PFI_CURVE_MONOTONE when the curve's power or throughput falls as the
     * cap rises (already ordered by power; of points the fit pooled to one
     * power, the highest cap's stands for them, as pfi_problem_add_curve
     * keeps), else the raw points sorted by realized power (equal powers
     * keep the first). */
    int fitted = fit == PFI_CURVE_MONOTONE && pfi_curve_violates(cv);
    struct pfi_point *pts = malloc(cv->n * sizeof *pts);
    if (!pts) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    if (fitted) {
      if ((rc = pfi_curve_monotone(cv, pts)) < 0) {
        free(pts);
        rc = rc == PFI_ENOMEM
                 ? pfi_error_set(err, PFI_ENOMEM, "out of memory")
                 : pfi_error_set(err, PFI_EINVAL,
                                 "job %s: a point is not finite", cv->job);
        goto out;
      }
    } else {
      memcpy(pts, cv->pts, cv->n * sizeof *pts);
      qsort(pts, cv->n, sizeof *pts, cmp_point_power);
    }
    size_t m = 0;
    double *pw = b, *t = b + cv->n, *lo = b + 2 * cv->n, *hi = b + 3 * cv->n;
    for (size_t k = 0; k < cv->n; k++) {
      if (fitted && k + 1 < cv->n && pts[k + 1].power_w == pts[k].power_w)
        continue;
      if (m > 0 && !(pts[k].power_w > pw[m - 1]))
        continue;
      pw[m] = pts[k].power_w;
      t[m] = pts[k].tokens_per_s;
      lo[m] = fmax(0, t[m] - 1.96 * pts[k].tokens_sd);
      hi[m] = t[m] + 1.96 * pts[k].tokens_sd;
      m++;
    }
    free(pts);
    j->job = cv->job;
    j->power_w = pw;
    j->tput = t;
    j->tput_lo = c->has_sd ? lo : NULL;
    j->tput_hi = c->has_sd ? hi : NULL;
    j->n = m;
    j->gpus = cv->gpus;
    b += 4 * cv->n;
  }
  rc = 0;
out:
  pfi_table_release(&ct);
  return rc;
}

int pfi_flex_jobs_at_level(struct pfi_flex_jobs *c,
                           const struct pfi_meter_config *cfg, int level,
                           unsigned gpus_per_node, struct pfi_error *err) {
  if (level == PFI_LEVEL_GPU)
    return 0;
  if (gpus_per_node == 0 ||
      (level != PFI_LEVEL_NODE && level != PFI_LEVEL_METER))
    return pfi_error_set(err, PFI_EINVAL,
                         "level %d, %u GPUs per node: expected node or meter "
                         "and at least 1",
                         level, gpus_per_node);
  double *b = c->buf;
  for (size_t i = 0; i < c->n; i++) {
    const struct pfi_curve *cv = &c->cs.c[i];
    struct pfi_flex_job *j = &c->jobs[i];
    unsigned gpus = cv->gpus > 0 ? (unsigned)cv->gpus : 1;
    unsigned nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
    double *pw = b; /* j->power_w: this job's block of c->buf */
    for (size_t k = 0; k < j->n; k++) {
      double g = pw[k];
      pw[k] = pfi_meter_job_power_w(cfg, g, nodes, level);
      if (!isfinite(pw[k]) || (k > 0 && !(pw[k] > pw[k - 1])))
        return pfi_error_set(err, PFI_EINVAL,
                             "job %s: point %zu (GPU power %g W) is %g W at "
                             "the %s, not above the point below it: the "
                             "supplies' efficiency curve rises faster than "
                             "the load",
                             j->job, k + 1, g, pw[k],
                             level == PFI_LEVEL_NODE ? "node" : "meter");
    }
    b += 4 * cv->n;
  }
  return 0;
}
