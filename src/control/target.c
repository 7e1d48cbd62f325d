/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Grid targets over time (cluster.h "targets"): constant shares and powers
 * with a ramp, timeline files, and power traces to follow (the real SRP
 * and CAISO events in data/real), scaled to the cluster's baseline.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/cluster.h"

/* The longest a timeline may run, start to end: ten years of seconds, so
 * that a second is still resolved (a start of 1e62 s made ramp and hold
 * vanish below its rounding, and the event end before its middle). */
#define EVENT_MAX_S (10.0 * 365.25 * 86400.0)

void pfi_event_release(struct pfi_event *t) {
  free(t->t_s);
  free(t->frac);
  t->t_s = t->frac = NULL;
  t->n = 0;
}

/* "75%", "0.75" (share) or "300000W", "300kW", "1.2MW" (power). Returns
 * 0 share, 1 power, -1 bad. */
static int parse_level(const char *s, double *v) {
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || errno || !isfinite(x) || x <= 0)
    return -1;
  while (*end == ' ')
    end++;
  if (*end == '%' && !end[1]) {
    *v = x / 100.0;
    return *v < 1.5 ? 0 : -1;
  }
  if (!*end) {
    *v = x;
    return x < 1.5 ? 0 : -1; /* above 1.5 without a unit is ambiguous */
  }
  double mul = 0;
  if (!strcmp(end, "W"))
    mul = 1;
  else if (!strcmp(end, "kW"))
    mul = 1e3;
  else if (!strcmp(end, "MW"))
    mul = 1e6;
  if (mul == 0)
    return -1;
  *v = x * mul;
  return 1;
}

/* Minutes from midnight of "HH:MM[:SS]" or "YYYY-MM-DD HH:MM[:SS]..." or
 * a plain number of minutes; NaN when unreadable. */
static double minutes_of(const char *s) {
  int y, mo, d, h, mi;
  double sec = 0;
  char *end;
  int date_end = 0, time_end = 0;
  if (sscanf(s, "%4d-%2d-%2d%n %2d:%2d%n", &y, &mo, &d, &date_end, &h, &mi,
             &time_end) == 5) {
    /* The date and the time are separated by a space ("2025-05-0414:45"
     * matches the pattern too, and has none). */
    if (s[date_end] != ' ')
      return NAN;
    if (s[time_end] == ':')
      sec = strtod(s + time_end + 1, NULL);
    return (double)(d * 1440 + h * 60 + mi) + sec / 60.0;
  }
  if (sscanf(s, "%2d:%2d", &h, &mi) == 2 && strchr(s, ':'))
    return (double)(h * 60 + mi);
  errno = 0;
  double x = strtod(s, &end);
  if (end != s && !errno && isfinite(x))
    return x;
  return NAN;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Reads a two-column trace CSV (header, time, power): rows whose time
 * column starts with `date` (when not NULL) and lies in [from, to) minutes
 * (NaN: no limit). The baseline is the median power of the file's first 15
 * rows. */
static int read_trace(struct pfi_event *t, const char *path, const char *date,
                      double from, double to, double *baseline,
                      struct pfi_error *err) {
  FILE *f = fopen(path, "r");
  if (!f)
    return pfi_error_set(err, PFI_EIO, "%s: cannot open", path);
  char line[512];
  long ln = 0;
  size_t cap = 0, nfirst = 0;
  double first[15];
  int rc = 0;
  double t0 = NAN;
  while (fgets(line, sizeof line, f)) {
    ln++;
    if (!strchr(line, '\n') && !feof(f)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, path, ln, 0, "line too long");
      break;
    }
    if (ln == 1)
      continue; /* header */
    char *comma = strchr(line, ',');
    if (!comma) {
      rc =
          pfi_error_setloc(err, PFI_EPARSE, path, ln, 1, "expected time,power");
      break;
    }
    *comma = 0;
    char *end;
    errno = 0;
    double pw = strtod(comma + 1, &end);
    while (*end == '\r' || *end == '\n' || *end == ' ')
      end++;
    double m = minutes_of(line);
    if (end == comma + 1 || *end || errno || !isfinite(pw) || pw <= 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, path, ln, (long)(comma - line) + 2,
                            "power: not a positive number");
      break;
    }
    if (!isfinite(m)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, path, ln, 1,
                            "time: not HH:MM, a timestamp or minutes");
      break;
    }
    if (nfirst < 15)
      first[nfirst++] = pw;
    if (date && strncmp(line, date, strlen(date)))
      continue;
    double mod = fmod(m, 1440.0);
    if ((isfinite(from) && mod < from) || (isfinite(to) && mod >= to))
      continue;
    if (t->n == cap) {
      cap = cap ? 2 * cap : 256;
      double *a = realloc(t->t_s, cap * sizeof *a);
      if (!a) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        break;
      }
      t->t_s = a;
      a = realloc(t->frac, cap * sizeof *a);
      if (!a) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        break;
      }
      t->frac = a;
    }
    if (t->n == 0)
      t0 = m;
    if (t->n > 0 && !(m * 60.0 - t0 * 60.0 > t->t_s[t->n - 1])) {
      rc = pfi_error_setloc(err, PFI_EPARSE, path, ln, 1,
                            "time does not increase");
      break;
    }
    t->t_s[t->n] = (m - t0) * 60.0;
    t->frac[t->n] = pw; /* scaled below */
    t->n++;
  }
  fclose(f);
  if (rc == 0 && t->n < 2)
    rc = pfi_error_set(err, PFI_EPARSE, "%s: fewer than 2 rows in the window",
                       path);
  if (rc < 0) {
    pfi_event_release(t);
    return rc;
  }
  qsort(first, nfirst, sizeof *first, cmp_d);
  *baseline = nfirst % 2 ? first[nfirst / 2]
                         : 0.5 * (first[nfirst / 2 - 1] + first[nfirst / 2]);
  for (size_t i = 0; i < t->n; i++)
    t->frac[i] /= *baseline;
  return 0;
}

int pfi_event_parse(struct pfi_event *t, const char *spec, double start_s,
                    double ramp_s, double hold_s, struct pfi_error *err) {
  memset(t, 0, sizeof *t);
  t->start_s = start_s;
  t->ramp_s = ramp_s;
  t->hold_s = hold_s;
  if (!(start_s >= 0 && ramp_s >= 0 && hold_s > 0 &&
        start_s + ramp_s + hold_s <= EVENT_MAX_S))
    return pfi_error_set(err, PFI_EINVAL,
                         "event start %g s, ramp %g s, hold %g s", start_s,
                         ramp_s, hold_s);
  double v;
  int k = parse_level(spec, &v);
  if (k >= 0) {
    t->kind = k;
    t->value = v;
    snprintf(t->desc, sizeof t->desc, "%s", spec);
    return 0;
  }
  if (!strncmp(spec, "trace:", 6)) {
    double base;
    int rc = read_trace(t, spec + 6, NULL, NAN, NAN, &base, err);
    if (rc < 0)
      return rc;
    t->kind = 3;
    t->ramp_s = 0;
    t->hold_s = t->t_s[t->n - 1];
    snprintf(t->desc, sizeof t->desc, "trace %s", spec + 6);
    return 0;
  }
  FILE *f = fopen(spec, "r");
  if (!f)
    return pfi_error_set(err, PFI_EINVAL,
                         "target '%s': not a share (75%%), a power (300kW), "
                         "trace:FILE or a readable timeline file",
                         spec);
  char line[256];
  long ln = 0;
  int got = 0, rc = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    char *h = strchr(line, '#');
    if (h)
      *h = 0;
    char a[64], b[64], c[64], d[64], extra[8];
    int n = sscanf(line, "%63s %63s %63s %63s %7s", a, b, c, d, extra);
    if (n <= 0)
      continue;
    /* A field of 63 bytes or more was cut by sscanf and read as two. */
    if (strlen(a) >= 63 || (n > 1 && strlen(b) >= 63) ||
        (n > 2 && strlen(c) >= 63) || (n > 3 && strlen(d) >= 63)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln, 1,
                            "a field longer than 62 characters");
      break;
    }
    if (n != 4 || got) {
      rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln, 1,
                            got ? "one event per timeline file"
                                : "expected: start_s ramp_s hold_s target");
      break;
    }
    double s0, r0, h0;
    char *e1, *e2, *e3;
    s0 = strtod(a, &e1);
    r0 = strtod(b, &e2);
    h0 = strtod(c, &e3);
    if (*e1 || *e2 || *e3 || !(s0 >= 0 && r0 >= 0 && h0 > 0) ||
        !(s0 + r0 + h0 <= EVENT_MAX_S)) {
      rc = pfi_error_setloc(
          err, PFI_EPARSE, spec, ln, 1,
          "start, ramp, hold: non-negative seconds (hold > 0), together at "
          "most ten years");
      break;
    }
    int kk = parse_level(d, &v);
    if (kk < 0) {
      rc = pfi_error_setloc(
          err, PFI_EPARSE, spec, ln, 4,
          "target: a share (75%%, 0.75) or a power (W, kW, MW)");
      break;
    }
    t->kind = kk == 0 ? 0 : 1;
    t->value = v;
    t->start_s = s0;
    t->ramp_s = r0;
    t->hold_s = h0;
    got = 1;
  }
  fclose(f);
  if (rc == 0 && !got)
    rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln, 0, "no event in the file");
  if (rc == 0)
    snprintf(t->desc, sizeof t->desc, "timeline %s", spec);
  return rc;
}

double pfi_event_end(const struct pfi_event *t) {
  return t->start_s + t->ramp_s + t->hold_s;
}

double pfi_event_target(const struct pfi_event *t, double ts, double base) {
  double s = ts - t->start_s;
  if (s < 0 || ts >= pfi_event_end(t))
    return NAN;
  if (t->kind == 3) {
    size_t i = 0;
    while (i + 1 < t->n && t->t_s[i + 1] <= s)
      i++;
    double f = t->frac[i];
    if (i + 1 < t->n) {
      double w = (s - t->t_s[i]) / (t->t_s[i + 1] - t->t_s[i]);
      f += w * (t->frac[i + 1] - t->frac[i]);
    }
    return f * base;
  }
  double level = t->kind == 0 ? t->value * base : t->value;
  if (t->ramp_s > 0 && s < t->ramp_s)
    return base + (level - base) * s / t->ramp_s;
  return level;
}

int pfi_event_srp(struct pfi_event *t, const char *path, const char *date,
                  const char *from, const char *to, double cut,
                  struct pfi_emerald *em, struct pfi_error *err) {
  memset(t, 0, sizeof *t);
  double a = minutes_of(from), b = minutes_of(to), base;
  if (!isfinite(a) || !isfinite(b) || b <= a)
    return pfi_error_set(err, PFI_EINVAL, "window %s..%s is not HH:MM..HH:MM",
                         from, to);
  int rc = read_trace(t, path, date, a, b, &base, err);
  if (rc < 0)
    return rc;
  t->kind = 3;
  t->hold_s = t->t_s[t->n - 1] + 60.0;
  snprintf(t->desc, sizeof t->desc, "%s %s %s-%s", path, date, from, to);
  if (em) {
    em->baseline_w = base;
    double s = 0, above = 0;
    for (size_t i = 0; i < t->n; i++) {
      s += 1.0 - t->frac[i];
      above += t->frac[i] > 1.0 - cut;
    }
    em->mean_cut = s / (double)t->n;
    em->minutes = (double)t->n;
    em->minutes_above = above;
  }
  return 0;
}
