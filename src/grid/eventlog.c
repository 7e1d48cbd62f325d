/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A recorded grid event -> the compliance record. See
 * include/pfi/eventlog.h. */
#include "pfi/eventlog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"

void pfi_eventlog_release(struct pfi_eventlog *log) {
  if (!log)
    return;
  free(log->t);
  free(log->target);
  free(log->power);
  for (size_t i = 0; i < log->nj; i++)
    free(log->job[i]);
  free(log->job);
  free(log->job_base);
  free(log->tput);
  free(log->shed);
  free(log->shed_lo);
  free(log->shed_hi);
  free(log->shed_dur);
  free(log->held_n);
  memset(log, 0, sizeof *log);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int col(const struct pfi_table *t, const char *name,
               struct pfi_error *err) {
  int c = pfi_table_find(t, name);
  if (c < 0)
    pfi_error_setloc(err, PFI_EPARSE, t->name, 1, 1,
                     "no column '%s' in the header", name);
  return c;
}

static int load_tables(struct pfi_eventlog *log, struct pfi_table *sp,
                       struct pfi_table *jp, struct pfi_error *err);

int pfi_eventlog_load(struct pfi_eventlog *log, const char *series_csv,
                      const char *jobs_csv, struct pfi_error *err) {
  memset(log, 0, sizeof *log);
  struct pfi_table s, j;
  int rc = pfi_table_load(&s, series_csv, err);
  if (rc < 0)
    return rc;
  if ((rc = pfi_table_load(&j, jobs_csv, err)) < 0) {
    pfi_table_release(&s);
    return rc;
  }
  return load_tables(log, &s, &j, err);
}

int pfi_eventlog_load_mem(struct pfi_eventlog *log, const char *series,
                          size_t slen, const char *jobs, size_t jlen,
                          struct pfi_error *err) {
  memset(log, 0, sizeof *log);
  struct pfi_table s, j;
  int rc = pfi_table_load_mem(&s, "series.csv", series, slen, err);
  if (rc < 0)
    return rc;
  if ((rc = pfi_table_load_mem(&j, "jobs.csv", jobs, jlen, err)) < 0) {
    pfi_table_release(&s);
    return rc;
  }
  return load_tables(log, &s, &j, err);
}

/* A cell of the capacity columns: empty is `empty_as`; else a finite
 * number >= 0. */
static int cap_cell(const struct pfi_table *s, size_t r, int c, double empty_as,
                    double *out, struct pfi_error *err) {
  const char *v = pfi_table_cell(s, r, (size_t)c);
  if (!v || !*v) {
    *out = empty_as;
    return 0;
  }
  int rc = pfi_table_double(s, r, (size_t)c, out, err);
  if (rc < 0)
    return rc;
  if (!(*out >= 0))
    return pfi_error_setloc(err, PFI_EPARSE, s->name, s->line[r], 1,
                            "%s: negative", s->header[c]);
  return 0;
}

/* The optional capacity columns of series.csv (shed_w and the rest). */
static int load_capacity(struct pfi_eventlog *log, const struct pfi_table *s,
                         struct pfi_error *err) {
  if (pfi_table_find(s, "shed_w") < 0)
    return 0;
  int cl = col(s, "shed_loss", err), cs = col(s, "shed_w", err),
      clo = col(s, "shed_lo_w", err), chi = col(s, "shed_hi_w", err),
      cd = col(s, "shed_duration_s", err);
  if (cl < 0 || cs < 0 || clo < 0 || chi < 0 || cd < 0)
    return PFI_EPARSE;
  size_t n = log->n;
  log->shed = malloc((n + 1) * sizeof *log->shed);
  log->shed_lo = malloc((n + 1) * sizeof *log->shed_lo);
  log->shed_hi = malloc((n + 1) * sizeof *log->shed_hi);
  log->shed_dur = malloc((n + 1) * sizeof *log->shed_dur);
  if (!log->shed || !log->shed_lo || !log->shed_hi || !log->shed_dur)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t r = 0; r < n; r++) {
    double l;
    int rc;
    if ((rc = pfi_table_double(s, r, (size_t)cl, &l, err)) < 0)
      return rc;
    if (!(l > 0 && l < 1) || (r > 0 && l != log->shed_loss))
      return pfi_error_setloc(err, PFI_EPARSE, s->name, s->line[r], 1,
                              "shed_loss: %s",
                              l > 0 && l < 1
                                  ? "differs from the first row's"
                                  : "expected a fraction in (0, 1)");
    log->shed_loss = l;
    if ((rc = cap_cell(s, r, cs, NAN, &log->shed[r], err)) < 0 ||
        (rc = cap_cell(s, r, clo, NAN, &log->shed_lo[r], err)) < 0 ||
        (rc = cap_cell(s, r, chi, NAN, &log->shed_hi[r], err)) < 0 ||
        (rc = cap_cell(s, r, cd, INFINITY, &log->shed_dur[r], err)) < 0)
      return rc;
    if (isnan(log->shed[r])) {
      log->shed_lo[r] = log->shed_hi[r] = log->shed_dur[r] = NAN;
    } else {
      if (isnan(log->shed_lo[r]))
        log->shed_lo[r] = log->shed[r];
      if (isnan(log->shed_hi[r]))
        log->shed_hi[r] = log->shed[r];
      if (!(log->shed_lo[r] <= log->shed[r] && log->shed[r] <= log->shed_hi[r]))
        return pfi_error_setloc(err, PFI_EPARSE, s->name, s->line[r], 1,
                                "shed_w: outside [shed_lo_w, shed_hi_w]");
    }
  }
  return 0;
}

/* Takes ownership of both tables. */
static int load_tables(struct pfi_eventlog *log, struct pfi_table *sp,
                       struct pfi_table *jp, struct pfi_error *err) {
  struct pfi_table s = *sp, j = *jp;
  const char *series_csv = s.name, *jobs_csv = j.name;
  int rc = 0;
  double *tmp = NULL;
  size_t *last = NULL;
  int ct = col(&s, "t_s", err), cg = col(&s, "target_w", err),
      cp = col(&s, "power_w", err);
  int jt = col(&j, "t_s", err), jj = col(&j, "job", err),
      jv = col(&j, "tokens_per_s", err), jh = pfi_table_find(&j, "held");
  if (ct < 0 || cg < 0 || cp < 0 || jt < 0 || jj < 0 || jv < 0) {
    rc = PFI_EPARSE;
    goto out;
  }
  size_t n = s.nrows;
  log->n = n;
  log->t = malloc((n + 1) * sizeof *log->t);
  log->target = malloc((n + 1) * sizeof *log->target);
  log->power = malloc((n + 1) * sizeof *log->power);
  tmp = malloc((n + 1) * sizeof *tmp);
  if (!log->t || !log->target || !log->power || !tmp) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t r = 0; r < n; r++) {
    if ((rc = pfi_table_double(&s, r, (size_t)ct, &log->t[r], err)) < 0 ||
        (rc = pfi_table_double(&s, r, (size_t)cg, &log->target[r], err)) < 0 ||
        (rc = pfi_table_double(&s, r, (size_t)cp, &log->power[r], err)) < 0)
      goto out;
    if (log->target[r] < 0 || log->power[r] < 0 ||
        (r > 0 && !(log->t[r] > log->t[r - 1]))) {
      rc = pfi_error_setloc(err, PFI_EPARSE, s.name, s.line[r], 1, "%s",
                            r > 0 && !(log->t[r] > log->t[r - 1])
                                ? "t_s: times must increase"
                                : "negative power");
      goto out;
    }
  }
  if ((rc = load_capacity(log, &s, err)) < 0)
    goto out;
  /* The event: the longest run of target > 0. */
  size_t best0 = 0, best1 = 0;
  for (size_t r = 0; r < n;) {
    if (!(log->target[r] > 0)) {
      r++;
      continue;
    }
    size_t a = r;
    while (r < n && log->target[r] > 0)
      r++;
    if (r - a > best1 - best0) {
      best0 = a;
      best1 = r;
    }
  }
  if (best1 == best0 || best0 == 0) {
    rc = pfi_error_set(err, PFI_EINVAL, "%s: %s", series_csv,
                       best1 == best0 ? "no event (no sample with target_w > 0)"
                                      : "no sample before the event to take "
                                        "the baseline from");
    goto out;
  }
  log->ev0 = best0;
  log->ev1 = best1;
  memcpy(tmp, log->power, best0 * sizeof *tmp);
  log->baseline_w = median(tmp, best0);
  /* Jobs, in order of appearance. */
  log->job = calloc(j.nrows + 1, sizeof *log->job);
  if (!log->job) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t r = 0; r < j.nrows; r++) {
    const char *nm = pfi_table_cell(&j, r, (size_t)jj);
    if (!nm || !*nm) {
      rc =
          pfi_error_setloc(err, PFI_EPARSE, j.name, j.line[r], 1, "job: empty");
      goto out;
    }
    size_t k = 0;
    while (k < log->nj && strcmp(log->job[k], nm) != 0)
      k++;
    if (k == log->nj && !(log->job[log->nj++] = strdup(nm))) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
  }
  size_t ne = best1 - best0, nj = log->nj;
  log->job_base = calloc(nj + 1, sizeof *log->job_base);
  log->tput = malloc((ne * nj + 1) * sizeof *log->tput);
  last = calloc(nj + 1, sizeof *last);
  double *cnt = calloc(nj + 1, sizeof *cnt), *cur = calloc(nj + 1, sizeof *cur);
  int *held = calloc(nj + 1, sizeof *held);
  if (jh >= 0)
    log->held_n = calloc(nj + 1, sizeof *log->held_n);
  if (!log->job_base || !log->tput || !last || !cnt || !cur || !held ||
      (jh >= 0 && !log->held_n)) {
    free(cnt);
    free(cur);
    free(held);
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t k = 0; k < nj; k++)
    cur[k] = NAN;
  /* Walk the job rows in time order with the series. */
  size_t r = 0;
  double prev_t = -INFINITY;
  for (size_t q = 0; q <= n && rc >= 0; q++) {
    double until = q < n ? log->t[q] : INFINITY;
    for (; r < j.nrows && rc >= 0; r++) {
      double t, v;
      if ((rc = pfi_table_double(&j, r, (size_t)jt, &t, err)) < 0 ||
          (rc = pfi_table_double(&j, r, (size_t)jv, &v, err)) < 0)
        break;
      if (t < prev_t || v < 0) {
        rc = pfi_error_setloc(err, PFI_EPARSE, j.name, j.line[r], 1, "%s",
                              v < 0 ? "negative throughput"
                                    : "t_s: times must not decrease");
        break;
      }
      if (t > until)
        break;
      prev_t = t;
      const char *nm = pfi_table_cell(&j, r, (size_t)jj);
      size_t k = 0;
      while (strcmp(log->job[k], nm) != 0)
        k++;
      cur[k] = v;
      if (jh >= 0) {
        /* held: 1, 0, or empty (unknown: held). */
        const char *hc = pfi_table_cell(&j, r, (size_t)jh);
        if (hc && *hc && strcmp(hc, "0") && strcmp(hc, "1")) {
          rc = pfi_error_setloc(err, PFI_EPARSE, j.name, j.line[r],
                                (unsigned)jh + 1, "held: expected 0 or 1");
          break;
        }
        held[k] = !(hc && strcmp(hc, "0") == 0);
      }
      if (q < best0 || (q == best0 && t < log->t[best0])) {
        log->job_base[k] += v;
        cnt[k]++;
      }
    }
    if (rc < 0 || q >= n)
      break;
    if (q >= best0 && q < best1)
      for (size_t k = 0; k < nj; k++) {
        if (isnan(cur[k])) {
          rc = pfi_error_set(err, PFI_EINVAL,
                             "%s: job %s has no throughput sample by t_s = "
                             "%.3f",
                             jobs_csv, log->job[k], log->t[q]);
          break;
        }
        log->tput[(q - best0) * nj + k] = cur[k];
        if (jh >= 0 && held[k])
          log->held_n[k] = q - best0 + 1;
      }
  }
  for (size_t k = 0; rc >= 0 && k < nj; k++) {
    if (cnt[k] == 0) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "%s: job %s has no sample before the event (its "
                         "baseline)",
                         jobs_csv, log->job[k]);
      break;
    }
    log->job_base[k] /= cnt[k];
  }
  free(cnt);
  free(cur);
  free(held);
  if (rc >= 0)
    rc = 0;
out:
  free(tmp);
  free(last);
  pfi_table_release(&s);
  pfi_table_release(&j);
  if (rc < 0)
    pfi_eventlog_release(log);
  return rc;
}

int pfi_eventlog_compliance(const struct pfi_eventlog *log,
                            const struct pfi_meter_config *cfg, unsigned nodes,
                            const struct pfi_contract_job *contract, size_t nc,
                            const struct pfi_tier *tiers, size_t ntiers,
                            double notice_s, struct pfi_compliance_input *in,
                            double **meter_w, struct pfi_contract_job **jobs,
                            struct pfi_error *err) {
  memset(in, 0, sizeof *in);
  *meter_w = NULL;
  *jobs = NULL;
  if (nodes == 0)
    return pfi_error_set(err, PFI_EINVAL, "nodes must be >= 1");
  size_t ne = log->ev1 - log->ev0;
  /* The meter's samples, then (with the held column) each job's held
   * time: one allocation, freed by the caller as *meter_w. */
  double *m = malloc((ne + log->nj + 1) * sizeof *m);
  double *dts = malloc((log->n + 1) * sizeof *dts);
  struct pfi_contract_job *cj = calloc(log->nj + 1, sizeof *cj);
  if (!m || !dts || !cj) {
    free(m);
    free(dts);
    free(cj);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  for (size_t q = 0; q < ne; q++)
    m[q] = pfi_meter_job_power_w(cfg, log->power[log->ev0 + q], nodes,
                                 PFI_LEVEL_METER);
  size_t nd = 0;
  for (size_t q = 1; q < log->n; q++)
    dts[nd++] = log->t[q] - log->t[q - 1];
  double dt = nd ? median(dts, nd) : 1;
  free(dts);
  for (size_t k = 0; k < log->nj; k++) {
    size_t c = 0;
    while (c < nc && strcmp(contract[c].job, log->job[k]) != 0)
      c++;
    if (c == nc) {
      free(m);
      free(cj);
      return pfi_error_set(err, PFI_EINVAL,
                           "job %s is in the log but not in the contract",
                           log->job[k]);
    }
    cj[k] = contract[c];
    cj[k].job = log->job[k];
    cj[k].baseline_tput = log->job_base[k];
  }
  in->nt = ne;
  in->dt_s = dt;
  in->target_w = log->target + log->ev0;
  in->realized_w = log->power + log->ev0;
  in->meter_w = m;
  in->baseline_w = log->baseline_w;
  in->baseline_meter_w =
      pfi_meter_job_power_w(cfg, log->baseline_w, nodes, PFI_LEVEL_METER);
  in->nj = log->nj;
  in->jobs = cj;
  in->tput = log->tput;
  in->ntier = ntiers;
  in->tiers = tiers;
  in->event_s = (double)ne * dt;
  in->notice_s = notice_s;
  in->tol = 0.01;
  if (log->held_n) {
    for (size_t k = 0; k < log->nj; k++)
      m[ne + k] = (double)log->held_n[k] * dt;
    in->held_s = m + ne;
  }
  *meter_w = m;
  *jobs = cj;
  return 0;
}

int pfi_eventlog_delivered(const struct pfi_eventlog *log, double asked,
                           struct pfi_delivered *d, struct pfi_error *err) {
  memset(d, 0, sizeof *d);
  if (!(asked > 0 && asked < 1))
    return pfi_error_set(err, PFI_EINVAL, "asked cut %g: expected 0..1",
                         asked);
  if (log->ev1 <= log->ev0 || !(log->baseline_w > 0))
    return pfi_error_set(err, PFI_EINVAL, "no event with a baseline");
  double s = 0;
  size_t above = 0;
  for (size_t i = log->ev0; i < log->ev1; i++) {
    double f = log->power[i] / log->baseline_w;
    s += 1.0 - f;
    above += f > 1.0 - asked;
  }
  d->asked = asked;
  d->samples = log->ev1 - log->ev0;
  d->mean_cut = s / (double)d->samples;
  d->share_above = (double)above / (double)d->samples;
  return 0;
}

int pfi_eventlog_quote_at_start(const struct pfi_eventlog *log, size_t *row,
                                struct pfi_error *err) {
  if (log->shed && log->n > 0)
    for (size_t r = log->ev0 < log->n ? log->ev0 + 1 : log->n; r-- > 0;)
      if (!isnan(log->shed[r])) {
        *row = r;
        return 0;
      }
  return pfi_error_set(err, PFI_ENOTFOUND,
                       "series.csv: %s", log->shed
                                             ? "no capacity quote by the "
                                               "event's start"
                                             : "no capacity columns");
}
