/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Replay of a grid event's power target against a set of jobs (replay.h). */
#include "pfi/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"

/* ---- timestamps ---------------------------------------------------------
 */

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Reads exactly `w` digits at s[*i]; returns the value or -1. */
static long digits_n(const char *s, size_t *i, int w) {
  long v = 0;
  for (int k = 0; k < w; k++) {
    if (!is_digit(s[*i]))
      return -1;
    v = 10 * v + (s[*i] - '0');
    (*i)++;
  }
  return v;
}

/* Reads 1 to `maxw` digits; returns the value or -1. */
static long digits_upto(const char *s, size_t *i, int maxw) {
  long v = 0;
  int k = 0;
  while (k < maxw && is_digit(s[*i])) {
    v = 10 * v + (s[*i] - '0');
    (*i)++;
    k++;
  }
  return k ? v : -1;
}

/* An optional fraction ".ddd" (1 to 9 digits) after seconds. */
static int fraction(const char *s, size_t *i, double *frac) {
  *frac = 0;
  if (s[*i] != '.')
    return 0;
  (*i)++;
  double scale = 0.1;
  int k = 0;
  while (is_digit(s[*i])) {
    if (k == 9)
      return -1;
    *frac += scale * (s[*i] - '0');
    scale /= 10;
    (*i)++;
    k++;
  }
  return k ? 0 : -1;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil). */
static long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int days_in_month(long y, long m) {
  static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
    return 29;
  return dm[m - 1];
}

/* HH:MM[:SS[.fff]] at s[*i]; hours of 1 or 2 digits when `loose_hour`. */
static int clock_part(const char *s, size_t *i, int loose_hour, double *sec,
                      const char **why) {
  /* A value out of range is reported at its first digit. */
  size_t at = *i;
  long h = loose_hour ? digits_upto(s, i, 2) : digits_n(s, i, 2);
  if (h < 0 || h > 23) {
    if (h > 23)
      *i = at;
    *why = "an hour 00-23";
    return -1;
  }
  if (s[*i] != ':') {
    *why = "':' after the hour";
    return -1;
  }
  (*i)++;
  at = *i;
  long mi = digits_n(s, i, 2);
  if (mi < 0 || mi > 59) {
    if (mi > 59)
      *i = at;
    *why = "minutes 00-59";
    return -1;
  }
  long se = 0;
  double frac = 0;
  if (s[*i] == ':') {
    (*i)++;
    at = *i;
    se = digits_n(s, i, 2);
    if (se < 0 || se > 59) {
      if (se > 59)
        *i = at;
      *why = "seconds 00-59";
      return -1;
    }
    if (fraction(s, i, &frac) < 0) {
      *why = "1 to 9 digits of a fraction of a second";
      return -1;
    }
  }
  *sec = 3600.0 * (double)h + 60.0 * (double)mi + (double)se + frac;
  return 0;
}

int pfi_time_parse(const char *s, enum pfi_time_kind *kind, double *seconds,
                   size_t *bad, struct pfi_error *err) {
  size_t i = 0;
  const char *why = "a timestamp";
  while (s[i] == ' ' || s[i] == '\t')
    i++;
  size_t start = i;
  /* The form is told by what follows the first run of digits. */
  size_t j = i;
  while (is_digit(s[j]))
    j++;
  if (j == i) {
    why = "a timestamp (YYYY-MM-DD HH:MM[:SS][+HH:MM], HH:MM[:SS] or "
          "seconds)";
    goto bad;
  }
  if (s[j] == '-' && j - i == 4) {
    long y = digits_n(s, &i, 4);
    i++; /* '-' */
    size_t at = i;
    long mo = digits_n(s, &i, 2);
    if (mo < 1 || mo > 12) {
      if (mo >= 0)
        i = at;
      why = "a month 01-12";
      goto bad;
    }
    if (s[i] != '-') {
      why = "'-' after the month";
      goto bad;
    }
    i++;
    at = i;
    long d = digits_n(s, &i, 2);
    if (d < 1 || d > days_in_month(y, mo)) {
      if (d >= 0)
        i = at;
      why = "a day of that month";
      goto bad;
    }
    if (s[i] != ' ' && s[i] != 'T') {
      why = "' ' or 'T' and a time of day after the date";
      goto bad;
    }
    i++;
    double sec;
    if (clock_part(s, &i, 0, &sec, &why) < 0)
      goto bad;
    double off = 0;
    if (s[i] == 'Z') {
      i++;
    } else if (s[i] == '+' || s[i] == '-') {
      int sign = s[i] == '-' ? -1 : 1;
      i++;
      at = i;
      long oh = digits_n(s, &i, 2);
      if (oh < 0 || oh > 23) {
        if (oh > 23)
          i = at;
        why = "an offset hour 00-23";
        goto bad;
      }
      long om = 0;
      if (s[i] == ':')
        i++;
      if (is_digit(s[i])) {
        at = i;
        om = digits_n(s, &i, 2);
        if (om < 0 || om > 59) {
          if (om > 59)
            i = at;
          why = "offset minutes 00-59";
          goto bad;
        }
      }
      off = sign * (3600.0 * (double)oh + 60.0 * (double)om);
    }
    *kind = PFI_TIME_DATETIME;
    *seconds = 86400.0 * (double)days_from_civil(y, mo, d) + sec - off;
  } else if (s[j] == ':') {
    double sec;
    if (clock_part(s, &i, 1, &sec, &why) < 0)
      goto bad;
    *kind = PFI_TIME_CLOCK;
    *seconds = sec;
  } else {
    /* Seconds: digits with an optional fraction; 15 integer digits keep
     * every value exact enough and far from overflow. */
    if (j - i > 15) {
      i += 15;
      why = "at most 15 digits of seconds";
      goto bad;
    }
    double v = 0;
    while (is_digit(s[i]))
      v = 10 * v + (s[i++] - '0');
    if (s[i] == '.') {
      i++;
      double scale = 0.1;
      if (!is_digit(s[i])) {
        why = "digits after '.'";
        goto bad;
      }
      while (is_digit(s[i])) {
        v += scale * (s[i++] - '0');
        scale /= 10;
      }
    }
    *kind = PFI_TIME_SECONDS;
    *seconds = v;
  }
  while (s[i] == ' ' || s[i] == '\t')
    i++;
  if (s[i] != '\0') {
    why = "the end of the timestamp";
    goto bad;
  }
  (void)start;
  return 0;
bad:
  if (bad)
    *bad = i;
  return pfi_error_set(err, PFI_EPARSE, "bad timestamp '%.40s': expected %s",
                       s + start, why);
}

/* ---- target traces ------------------------------------------------------
 */

void pfi_target_release(struct pfi_target *tg) {
  if (!tg)
    return;
  if (tg->label)
    for (size_t k = 0; k < tg->n; k++)
      free(tg->label[k]);
  free(tg->label);
  free(tg->name);
  free(tg->t_s);
  free(tg->power_w);
  free(tg->line);
  memset(tg, 0, sizeof *tg);
}

static int find_col(const struct pfi_csv *csv, const char *given,
                    const char *const *dflt, const char *what, int *idx,
                    struct pfi_error *err) {
  if (given) {
    *idx = pfi_csv_find(csv, given);
    if (*idx < 0)
      return pfi_error_setloc(err, PFI_EPARSE, csv->name, 1, 0,
                              "no %s column '%s' in the header", what, given);
    return 0;
  }
  for (size_t k = 0; dflt[k]; k++)
    if ((*idx = pfi_csv_find(csv, dflt[k])) >= 0)
      return 0;
  return pfi_error_setloc(err, PFI_EPARSE, csv->name, 1, 0,
                          "no %s column (looked for %s, %s or %s; name it "
                          "with --%s-col)",
                          what, dflt[0], dflt[1], dflt[2],
                          strcmp(what, "time") == 0 ? "time" : "power");
}

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *d = malloc(n + 1);
  if (d)
    memcpy(d, s, n + 1);
  return d;
}

/* Reads the records of an opened CSV into tg. */
static int target_read(struct pfi_target *tg, struct pfi_csv *csv,
                       const char *time_col, const char *power_col,
                       struct pfi_error *err) {
  static const char *const tdef[] = {"timestamp", "time", "t", NULL};
  static const char *const pdef[] = {"total", "power_w", "power", NULL};
  int ti, pi, rc;
  if ((rc = find_col(csv, time_col, tdef, "time", &ti, err)) < 0)
    return rc;
  if ((rc = find_col(csv, power_col, pdef, "power", &pi, err)) < 0)
    return rc;
  tg->name = dup_str(csv->name);
  if (!tg->name)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  size_t cap = 0;
  while ((rc = pfi_csv_next(csv, err)) == 1) {
    if (tg->n == cap) {
      size_t nc = cap ? 2 * cap : 64;
      double *t = realloc(tg->t_s, nc * sizeof *t);
      if (t)
        tg->t_s = t;
      double *p = realloc(tg->power_w, nc * sizeof *p);
      if (p)
        tg->power_w = p;
      char **l = realloc(tg->label, nc * sizeof *l);
      if (l)
        tg->label = l;
      long *ln = realloc(tg->line, nc * sizeof *ln);
      if (ln)
        tg->line = ln;
      if (!t || !p || !l || !ln)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      cap = nc;
    }
    const char *tf = pfi_csv_field(csv, ti);
    if (!tf)
      return pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->rec_line, 0,
                              "record has no field '%s'", csv->header[ti]);
    enum pfi_time_kind kind;
    double t;
    size_t badpos = 0;
    if (pfi_time_parse(tf, &kind, &t, &badpos, err) < 0) {
      char msg[PFI_ERROR_MSG_MAX];
      memcpy(msg, err->msg, sizeof msg);
      return pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->fline[ti],
                              csv->fcol[ti] + (long)badpos, "%s", msg);
    }
    if (tg->n > 0 && kind != tg->kind)
      return pfi_error_setloc(
          err, PFI_EPARSE, csv->name, csv->fline[ti], csv->fcol[ti],
          "timestamp '%.40s' is not of the same form as line %ld's", tf,
          tg->line[0]);
    if (tg->n > 0 && !(t > tg->t_s[tg->n - 1]))
      return pfi_error_setloc(
          err, PFI_EPARSE, csv->name, csv->fline[ti], csv->fcol[ti],
          "time '%.40s' does not come after line %ld's '%.40s' (samples "
          "must be in strictly increasing time order)",
          tf, tg->line[tg->n - 1], tg->label[tg->n - 1]);
    double pw;
    if ((rc = pfi_csv_double(csv, pi, "power", &pw, err)) < 0)
      return rc;
    if (pw < 0)
      return pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->fline[pi],
                              csv->fcol[pi], "negative power %g W", pw);
    char *lab = dup_str(tf);
    if (!lab)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    /* Labels are printed in tables: trim the spaces the parser allowed. */
    size_t a = 0, b = strlen(lab);
    while (lab[a] == ' ' || lab[a] == '\t')
      a++;
    while (b > a && (lab[b - 1] == ' ' || lab[b - 1] == '\t'))
      b--;
    memmove(lab, lab + a, b - a);
    lab[b - a] = '\0';
    tg->kind = kind;
    tg->t_s[tg->n] = t;
    tg->power_w[tg->n] = pw;
    tg->label[tg->n] = lab;
    tg->line[tg->n] = csv->rec_line;
    tg->n++;
  }
  if (rc < 0)
    return rc;
  if (tg->n < 2)
    return pfi_error_setloc(err, PFI_EPARSE, csv->name,
                            tg->n ? tg->line[tg->n - 1] : 1, 0,
                            "a target trace needs at least 2 samples, "
                            "found %zu",
                            tg->n);
  return 0;
}

static int target_finish(struct pfi_target *tg, struct pfi_csv *csv,
                         const char *time_col, const char *power_col,
                         struct pfi_error *err) {
  int rc = target_read(tg, csv, time_col, power_col, err);
  pfi_csv_close(csv);
  if (rc < 0)
    pfi_target_release(tg);
  return rc;
}

int pfi_target_load(struct pfi_target *tg, const char *path,
                    const char *time_col, const char *power_col,
                    struct pfi_error *err) {
  memset(tg, 0, sizeof *tg);
  struct pfi_csv csv;
  int rc = pfi_csv_open(&csv, path, err);
  if (rc < 0)
    return rc;
  return target_finish(tg, &csv, time_col, power_col, err);
}

int pfi_target_load_mem(struct pfi_target *tg, const char *name,
                        const char *data, size_t len, const char *time_col,
                        const char *power_col, struct pfi_error *err) {
  memset(tg, 0, sizeof *tg);
  struct pfi_csv csv;
  int rc = pfi_csv_open_mem(&csv, name, data, len, err);
  if (rc < 0)
    return rc;
  return target_finish(tg, &csv, time_col, power_col, err);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double pfi_target_baseline_auto(const struct pfi_target *tg) {
  size_t m = 0;
  while (m < tg->n &&
         (m == 0 || tg->t_s[m] - tg->t_s[0] < PFI_REPLAY_BASELINE_WINDOW_S))
    m++;
  double *v = malloc(m * sizeof *v);
  if (!v)
    return NAN;
  memcpy(v, tg->power_w, m * sizeof *v);
  qsort(v, m, sizeof *v, cmp_double);
  /* Halves first: the sum of two samples near DBL_MAX overflows. */
  double med = m % 2 ? v[m / 2] : 0.5 * v[m / 2 - 1] + 0.5 * v[m / 2];
  free(v);
  return med;
}

double pfi_target_dt(const struct pfi_target *tg, size_t k) {
  if (tg->n < 2)
    return 0;
  if (k + 1 < tg->n)
    return tg->t_s[k + 1] - tg->t_s[k];
  return tg->t_s[tg->n - 1] - tg->t_s[tg->n - 2];
}

/* ---- replay -------------------------------------------------------------
 */

void pfi_replay_release(struct pfi_replay *r) {
  if (!r)
    return;
  free(r->cut);
  free(r->budget_w);
  free(r->power_w);
  free(r->tokens_per_s);
  free(r->normalized);
  free(r->feasible);
  free(r->short_w);
  free(r->job_power_w);
  free(r->job_retained);
  free(r->job_retained_event);
  free(r->job_mean_power_w);
  memset(r, 0, sizeof *r);
}

int pfi_replay_run(const struct pfi_problem *p, enum pfi_strategy s,
                   const struct pfi_alloc_inputs *in,
                   const struct pfi_target *tg, double baseline_w,
                   double event_min_cut, struct pfi_replay *out,
                   struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  if (p->njobs == 0)
    return pfi_error_set(err, PFI_EINVAL, "replay needs at least one job");
  if (!(baseline_w > 0) || !isfinite(baseline_w))
    return pfi_error_set(err, PFI_EINVAL,
                         "baseline %g W: must be a positive finite power",
                         baseline_w);
  if (!(event_min_cut > 0 && event_min_cut <= 1))
    return pfi_error_set(err, PFI_EINVAL,
                         "least event cut %g: must be in (0, 1]",
                         event_min_cut);
  if ((int)s < 0 || s >= PFI_STRAT__COUNT)
    return pfi_error_set(err, PFI_EINVAL, "unknown strategy %d", (int)s);
  struct pfi_alloc_inputs none = {NULL, NULL, NULL};
  if (!in)
    in = &none;
  size_t n = tg->n, nj = p->njobs;
  int rc = 0;
  double *tmax = NULL, *num = NULL, *num_ev = NULL;
  out->strategy = s;
  out->n = n;
  out->njobs = nj;
  out->cut = calloc(n, sizeof *out->cut);
  out->budget_w = calloc(n, sizeof *out->budget_w);
  out->power_w = calloc(n, sizeof *out->power_w);
  out->tokens_per_s = calloc(n, sizeof *out->tokens_per_s);
  out->normalized = calloc(n, sizeof *out->normalized);
  out->feasible = calloc(n, sizeof *out->feasible);
  out->short_w = calloc(n, sizeof *out->short_w);
  out->job_power_w = calloc(n * nj, sizeof *out->job_power_w);
  out->job_retained = calloc(nj, sizeof *out->job_retained);
  out->job_retained_event = calloc(nj, sizeof *out->job_retained_event);
  out->job_mean_power_w = calloc(nj, sizeof *out->job_mean_power_w);
  tmax = calloc(nj, sizeof *tmax);
  num = calloc(nj, sizeof *num);
  num_ev = calloc(nj, sizeof *num_ev);
  if (!out->cut || !out->budget_w || !out->power_w || !out->tokens_per_s ||
      !out->normalized || !out->feasible || !out->short_w ||
      !out->job_power_w || !out->job_retained || !out->job_retained_event ||
      !out->job_mean_power_w || !tmax || !num || !num_ev) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  double sum_lo, sum_hi, tmax_tot = 0;
  pfi_problem_bounds(p, &sum_lo, &sum_hi);
  for (size_t i = 0; i < nj; i++) {
    tmax[i] = pfi_problem_eval(p, i, pfi_problem_hi(p, i));
    tmax_tot += tmax[i];
  }
  double dt_all = 0, dt_ev = 0, tok_num = 0, tok_num_ev = 0, cut_ev = 0;
  for (size_t k = 0; k < n; k++) {
    double cut = 1 - tg->power_w[k] / baseline_w;
    if (cut < 0)
      cut = 0;
    double budget = (1 - cut) * sum_hi;
    double *x = out->job_power_w + k * nj;
    out->cut[k] = cut;
    out->budget_w[k] = budget;
    struct pfi_error e2;
    pfi_error_clear(&e2);
    if (pfi_problem_check_budget(p, budget, &e2) == 0) {
      rc = pfi_alloc_run(p, s, budget, in, x, err);
      if (rc < 0)
        goto out;
      out->feasible[k] = 1;
    } else {
      /* Only a budget below the floors can fail the check here: the cut is
       * never negative, so the budget never exceeds the ceilings' sum by
       * more than rounding. Every job runs at its floor. */
      if (budget > sum_hi) {
        for (size_t i = 0; i < nj; i++)
          x[i] = pfi_problem_hi(p, i);
        out->feasible[k] = 1;
      } else {
        for (size_t i = 0; i < nj; i++)
          x[i] = pfi_problem_lo(p, i);
        out->feasible[k] = 0;
      }
    }
    double pw = 0, tok = 0;
    for (size_t i = 0; i < nj; i++) {
      pw += x[i];
      tok += pfi_problem_eval(p, i, x[i]);
    }
    out->power_w[k] = pw;
    out->tokens_per_s[k] = tok;
    out->normalized[k] = tmax_tot > 0 ? tok / tmax_tot : 0;
    if (!out->feasible[k]) {
      out->short_w[k] = pw - budget;
      out->infeasible_steps++;
      if (out->short_w[k] > out->infeasible_max_w)
        out->infeasible_max_w = out->short_w[k];
    }
    double dt = pfi_target_dt(tg, k);
    dt_all += dt;
    out->energy_j += dt * pw;
    tok_num += dt * tok;
    if (cut > out->max_cut)
      out->max_cut = cut;
    for (size_t i = 0; i < nj; i++) {
      double ti = pfi_problem_eval(p, i, x[i]);
      num[i] += dt * ti;
      out->job_mean_power_w[i] += dt * x[i];
      if (cut >= event_min_cut)
        num_ev[i] += dt * ti;
    }
    if (cut >= event_min_cut) {
      out->event_steps++;
      dt_ev += dt;
      tok_num_ev += dt * tok;
      cut_ev += dt * cut;
    }
  }
  /* Ratios with a zero denominator (jobs whose uncapped throughput is 0,
   * or no event step) are defined as 1: nothing could be lost. */
  out->retained =
      dt_all > 0 && tmax_tot > 0 ? tok_num / (dt_all * tmax_tot) : 1;
  out->retained_event =
      dt_ev > 0 && tmax_tot > 0 ? tok_num_ev / (dt_ev * tmax_tot) : 1;
  out->mean_cut = dt_ev > 0 ? cut_ev / dt_ev : 0;
  for (size_t i = 0; i < nj; i++) {
    out->job_retained[i] =
        dt_all > 0 && tmax[i] > 0 ? num[i] / (dt_all * tmax[i]) : 1;
    out->job_retained_event[i] =
        dt_ev > 0 && tmax[i] > 0 ? num_ev[i] / (dt_ev * tmax[i]) : 1;
    out->job_mean_power_w[i] =
        dt_all > 0 ? out->job_mean_power_w[i] / dt_all : 0;
  }
out:
  free(tmax);
  free(num);
  free(num_ev);
  if (rc < 0)
    pfi_replay_release(out);
  return rc;
}
