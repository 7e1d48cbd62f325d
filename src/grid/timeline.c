/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Power-target timelines: spans, the overlap rule, schedule files, and the
 * RFC 3339 / ISO 8601 time helpers. See include/pfi/timeline.h. */
#include "pfi/timeline.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pfi/csv.h"

/* More spans than any real program sends; bounds the O(n^2) resolution. */
#define TIMELINE_MAX 20000

void pfi_timeline_init(struct pfi_timeline *tl) { memset(tl, 0, sizeof *tl); }

void pfi_timeline_release(struct pfi_timeline *tl) {
  if (!tl)
    return;
  free(tl->spans);
  memset(tl, 0, sizeof *tl);
}

int pfi_timeline_add(struct pfi_timeline *tl, const struct pfi_target_span *s,
                     struct pfi_error *err) {
  if (!(s->end_s > s->start_s))
    return pfi_error_set(err, PFI_EINVAL, "span %s ends before it starts",
                         s->event);
  if (!isfinite(s->limit_w) || s->limit_w < 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "span %s: power limit must be finite and >= 0",
                         s->event);
  if (s->level < PFI_LEVEL_GPU || s->level > PFI_LEVEL_METER)
    return pfi_error_set(err, PFI_EINVAL, "span %s: unknown level %d", s->event,
                         s->level);
  if (tl->n >= TIMELINE_MAX)
    return pfi_error_set(err, PFI_ERANGE, "more than %d target spans",
                         TIMELINE_MAX);
  if (tl->n == tl->cap) {
    size_t nc = tl->cap ? tl->cap * 2 : 16;
    struct pfi_target_span *ns = realloc(tl->spans, nc * sizeof *ns);
    if (!ns)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    tl->spans = ns;
    tl->cap = nc;
  }
  tl->spans[tl->n++] = *s;
  return 0;
}

/* 1 when a beats b within one source (rule 1). */
static int beats(const struct pfi_target_span *a,
                 const struct pfi_target_span *b) {
  if (a->priority != b->priority)
    return a->priority < b->priority;
  if (a->scheduled_s != b->scheduled_s)
    return a->scheduled_s > b->scheduled_s;
  int c = strcmp(a->event, b->event);
  if (c != 0)
    return c > 0;
  /* One id twice (intervals of one event that overlap, or a VTN sending
   * an id twice): the lower limit, whatever the order. */
  return a->limit_w < b->limit_w;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static const char *level_name(int l) {
  return l == PFI_LEVEL_GPU ? "gpu" : l == PFI_LEVEL_NODE ? "node" : "meter";
}

int pfi_timeline_resolve(const struct pfi_timeline *in,
                         struct pfi_timeline *out, struct pfi_error *err) {
  out->n = 0;
  if (in->n == 0)
    return 0;
  for (size_t i = 1; i < in->n; i++)
    if (in->spans[i].level != in->spans[0].level)
      return pfi_error_set(err, PFI_EINVAL,
                           "targets at two levels (%s from %s, %s from %s): "
                           "convert them to one level first",
                           level_name(in->spans[0].level), in->spans[0].event,
                           level_name(in->spans[i].level), in->spans[i].event);
  size_t nb = 2 * in->n;
  int64_t *b = malloc(nb * sizeof *b);
  if (!b)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < in->n; i++) {
    b[2 * i] = in->spans[i].start_s;
    b[2 * i + 1] = in->spans[i].end_s;
  }
  qsort(b, nb, sizeof *b, cmp_i64);
  size_t u = 0;
  for (size_t i = 0; i < nb; i++)
    if (u == 0 || b[i] != b[u - 1])
      b[u++] = b[i];
  int rc = 0;
  long last = -1; /* index in `in` of the span last written to out */
  for (size_t k = 0; k + 1 < u; k++) {
    int64_t t0 = b[k], t1 = b[k + 1];
    /* Rule 1 per source, then rule 2 across sources. */
    long best[3] = {-1, -1, -1};
    for (size_t i = 0; i < in->n; i++) {
      const struct pfi_target_span *s = &in->spans[i];
      if (s->start_s > t0 || s->end_s < t1)
        continue;
      int src = s->source >= 0 && s->source < 3 ? s->source : 0;
      if (best[src] < 0 || beats(s, &in->spans[best[src]]))
        best[src] = (long)i;
    }
    long w = -1;
    for (int src = 0; src < 3; src++)
      if (best[src] >= 0 &&
          (w < 0 || in->spans[best[src]].limit_w < in->spans[w].limit_w))
        w = best[src];
    if (w < 0) {
      last = -1;
      continue;
    }
    if (w == last && out->n > 0 && out->spans[out->n - 1].end_s == t0) {
      out->spans[out->n - 1].end_s = t1;
      continue;
    }
    struct pfi_target_span piece = in->spans[w];
    piece.start_s = t0;
    piece.end_s = t1;
    if ((rc = pfi_timeline_add(out, &piece, err)) < 0)
      break;
    last = w;
  }
  free(b);
  return rc < 0 ? rc : (int)out->n;
}

const struct pfi_target_span *pfi_timeline_at(const struct pfi_timeline *tl,
                                              int64_t t) {
  size_t lo = 0, hi = tl->n;
  while (lo < hi) { /* first span with end_s > t */
    size_t mid = lo + (hi - lo) / 2;
    if (tl->spans[mid].end_s > t)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (lo < tl->n && tl->spans[lo].start_s <= t)
    return &tl->spans[lo];
  return NULL;
}

/* ---- time helpers ------------------------------------------------------ */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static int leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly n digits at s+*p. */
static int digits(const char *s, size_t *p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[*p]))
      return -1;
    v = v * 10 + (s[(*p)++] - '0');
  }
  *out = v;
  return 0;
}

int pfi_time_parse_rfc3339(const char *s, int64_t *out, struct pfi_error *err) {
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  size_t p = 0;
  int y, mo, d, h = 0, mi = 0, se = 0;
#define BAD(code, ...)                                                         \
  do {                                                                         \
    pfi_error_set(err, code, __VA_ARGS__);                                     \
    if (err)                                                                   \
      err->column = (long)p + 1;                                               \
    return code;                                                               \
  } while (0)
  if (digits(s, &p, 4, &y) < 0 || s[p++] != '-')
    BAD(PFI_EPARSE, "date-time '%.40s': expected YYYY-MM-DD", s);
  if (digits(s, &p, 2, &mo) < 0 || s[p++] != '-' || digits(s, &p, 2, &d) < 0)
    BAD(PFI_EPARSE, "date-time '%.40s': expected YYYY-MM-DD", s);
  if (y < 1 || mo < 1 || mo > 12 || d < 1 ||
      d > mdays[mo - 1] + (mo == 2 && leap(y)))
    BAD(PFI_ERANGE, "date-time '%.40s': no such date", s);
  int64_t off = 0;
  if (s[p] == 'T' || s[p] == 't' || s[p] == ' ') {
    p++;
    if (digits(s, &p, 2, &h) < 0 || s[p++] != ':' || digits(s, &p, 2, &mi) < 0)
      BAD(PFI_EPARSE, "date-time '%.40s': expected HH:MM[:SS]", s);
    if (s[p] == ':') {
      p++;
      if (digits(s, &p, 2, &se) < 0)
        BAD(PFI_EPARSE, "date-time '%.40s': expected seconds", s);
      if (s[p] == '.') {
        p++;
        if (!isdigit((unsigned char)s[p]))
          BAD(PFI_EPARSE, "date-time '%.40s': expected fraction digits", s);
        for (int k = 0; isdigit((unsigned char)s[p]); k++, p++)
          if (k > 9)
            BAD(PFI_EPARSE, "date-time '%.40s': fraction too long", s);
      }
    }
    if (h > 23 || mi > 59 || se > 60)
      BAD(PFI_ERANGE, "date-time '%.40s': no such time of day", s);
    if (s[p] == 'Z' || s[p] == 'z')
      p++;
    else if (s[p] == '+' || s[p] == '-') {
      int sign = s[p++] == '-' ? -1 : 1, oh, om;
      if (digits(s, &p, 2, &oh) < 0 || s[p++] != ':' ||
          digits(s, &p, 2, &om) < 0)
        BAD(PFI_EPARSE, "date-time '%.40s': expected offset +HH:MM", s);
      if (oh > 23 || om > 59)
        BAD(PFI_ERANGE, "date-time '%.40s': offset out of range", s);
      off = sign * (oh * 3600 + om * 60);
    }
  }
  if (s[p] != 0)
    BAD(PFI_EPARSE, "date-time '%.40s': unexpected text", s);
#undef BAD
  *out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 +
         mi * 60 + (se > 59 ? 59 : se) - off;
  return 0;
}

char *pfi_time_format_rfc3339(int64_t t, char *buf, size_t n) {
  int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  int64_t secs = t - days * 86400;
  /* civil_from_days (H. Hinnant). */
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  unsigned d = doy - (153 * mp + 2) / 5 + 1;
  unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  snprintf(buf, n, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d,
           (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
  return buf;
}

int pfi_duration_parse_iso8601(const char *s, double *out_s, int *forever,
                               struct pfi_error *err) {
  size_t p = 0;
  double sign = 1, total = 0;
  int any = 0, in_time = 0, years = -1, others = 0;
  /* Order of the designators, so that "P1D2Y" is refused. */
  const char *order_date = "YMWD", *order_time = "HMS";
  int last = -1;
  if (forever)
    *forever = 0;
#define BAD(...)                                                               \
  do {                                                                         \
    pfi_error_set(err, PFI_EPARSE, __VA_ARGS__);                               \
    if (err)                                                                   \
      err->column = (long)p + 1;                                               \
    return PFI_EPARSE;                                                         \
  } while (0)
  if (s[p] == '-') {
    sign = -1;
    p++;
  }
  if (s[p++] != 'P')
    BAD("duration '%.40s': expected ISO 8601 'P...'", s);
  while (s[p]) {
    if (s[p] == 'T') {
      if (in_time)
        BAD("duration '%.40s': second 'T'", s);
      in_time = 1;
      last = -1;
      p++;
      if (!isdigit((unsigned char)s[p]))
        BAD("duration '%.40s': expected a number after 'T'", s);
      continue;
    }
    if (!isdigit((unsigned char)s[p]))
      BAD("duration '%.40s': expected a number", s);
    double v = 0;
    size_t nd = 0;
    while (isdigit((unsigned char)s[p])) {
      if (++nd > 12)
        BAD("duration '%.40s': number too long", s);
      v = v * 10 + (s[p++] - '0');
    }
    if (s[p] == '.' || s[p] == ',') {
      p++;
      double f = 0.1;
      if (!isdigit((unsigned char)s[p]))
        BAD("duration '%.40s': expected fraction digits", s);
      for (int k = 0; isdigit((unsigned char)s[p]); k++, p++, f /= 10)
        if (k < 9)
          v += (s[p] - '0') * f;
      if (!in_time || s[p] != 'S')
        BAD("duration '%.40s': a fraction only on seconds", s);
    }
    const char *ord = in_time ? order_time : order_date;
    const char *pos = s[p] ? strchr(ord, s[p]) : NULL;
    if (!pos)
      BAD("duration '%.40s': expected a designator (%s)", s,
          in_time ? "H, M, S" : "Y, M, W, D");
    int idx = (int)(pos - ord);
    if (idx <= last || (!in_time && last >= 2 && idx >= 2))
      BAD("duration '%.40s': designator out of order", s);
    last = idx;
    double unit;
    if (in_time)
      unit = s[p] == 'H' ? 3600 : s[p] == 'M' ? 60 : 1;
    else
      unit = s[p] == 'Y'   ? 365 * 86400.0
             : s[p] == 'M' ? 30 * 86400.0
             : s[p] == 'W' ? 7 * 86400.0
                           : 86400.0;
    if (!in_time && s[p] == 'Y')
      years = (int)v;
    else if (v > 0)
      others = 1;
    total += v * unit;
    any = 1;
    p++;
  }
  if (!any)
    BAD("duration '%.40s': no value", s);
  if (in_time && last < 0)
    BAD("duration '%.40s': nothing after 'T'", s);
#undef BAD
  if (years == 9999 && !others && sign > 0 && forever)
    *forever = 1;
  *out_s = sign * total;
  return 0;
}

/* ---- schedule files ---------------------------------------------------- */

/* Column of a cell; a cell missing from a short record is reported at the
 * start of its line. */
static long cell_col(const struct pfi_table *t, size_t r, size_t c) {
  long col = t->col[r * t->ncols + c];
  return col > 0 ? col : 1;
}

static int parse_when(const struct pfi_table *t, size_t r, size_t c,
                      int64_t *out, struct pfi_error *err) {
  const char *s = pfi_table_cell(t, r, c);
  long line = t->line[r], col = cell_col(t, r, c);
  if (!s || !*s)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, line, col,
                            "%s: empty time", t->header[c]);
  char *end;
  double v = strtod(s, &end);
  if (*end == 0 && end != s && isdigit((unsigned char)s[0])) {
    if (!(v >= 0 && v < (double)PFI_TIME_FOREVER))
      return pfi_error_setloc(err, PFI_ERANGE, t->name, line, col,
                              "%s: Unix time %s out of range", t->header[c], s);
    *out = (int64_t)floor(v);
    return 0;
  }
  struct pfi_error e2;
  pfi_error_clear(&e2);
  int rc = pfi_time_parse_rfc3339(s, out, &e2);
  if (rc < 0)
    return pfi_error_setloc(err, rc, t->name, line, col + e2.column - 1,
                            "%s: %s", t->header[c], e2.msg);
  return 0;
}

static int parse_limit(const struct pfi_table *t, size_t r, size_t c,
                       double baseline_w, double *out, struct pfi_error *err) {
  const char *s = pfi_table_cell(t, r, c);
  long line = t->line[r], col = cell_col(t, r, c);
  if (!s || !*s)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, line, col,
                            "limit: empty");
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v) || v < 0)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, line, col,
                            "limit: '%.40s' is not a power >= 0", s);
  double mul = 1;
  while (*end == ' ')
    end++;
  if (*end == 0 || strcasecmp(end, "W") == 0)
    mul = 1;
  else if (strcasecmp(end, "kW") == 0)
    mul = 1e3;
  else if (strcasecmp(end, "MW") == 0)
    mul = 1e6;
  else if (strcmp(end, "%") == 0) {
    if (!(baseline_w > 0))
      return pfi_error_setloc(err, PFI_EINVAL, t->name, line, col,
                              "limit: a percentage needs a baseline "
                              "(--baseline W)");
    mul = baseline_w / 100;
  } else
    return pfi_error_setloc(
        err, PFI_EPARSE, t->name, line, col + (long)(end - s),
        "limit: unknown unit '%.20s' (W, kW, MW or %%)", end);
  *out = v * mul;
  if (!isfinite(*out) || *out > 1e12)
    return pfi_error_setloc(err, PFI_ERANGE, t->name, line, col,
                            "limit: '%.40s' is beyond 1 TW", s);
  return 0;
}

int pfi_schedule_load_mem(const char *name, const char *data, size_t len,
                          double baseline_w, struct pfi_timeline *out,
                          struct pfi_error *err) {
  struct pfi_table t;
  int rc = pfi_table_load_mem(&t, name, data, len, err);
  if (rc < 0)
    return rc;
  int cs = pfi_table_find(&t, "start"), ce = pfi_table_find(&t, "end"),
      cl = pfi_table_find(&t, "limit"), cv = pfi_table_find(&t, "level"),
      cp = pfi_table_find(&t, "priority");
  if (cs < 0 || ce < 0 || cl < 0) {
    rc = pfi_error_setloc(err, PFI_EPARSE, name, 1, 1,
                          "schedule: the header must name start, end and "
                          "limit (optional: level, priority)");
    goto out;
  }
  for (size_t r = 0; r < t.nrows; r++) {
    struct pfi_target_span s;
    memset(&s, 0, sizeof s);
    long line = t.line[r];
    if ((rc = parse_when(&t, r, (size_t)cs, &s.start_s, err)) < 0 ||
        (rc = parse_when(&t, r, (size_t)ce, &s.end_s, err)) < 0 ||
        (rc = parse_limit(&t, r, (size_t)cl, baseline_w, &s.limit_w, err)) < 0)
      goto out;
    if (s.end_s <= s.start_s) {
      rc =
          pfi_error_setloc(err, PFI_EPARSE, name, line,
                           cell_col(&t, r, (size_t)ce), "end: not after start");
      goto out;
    }
    s.level = PFI_LEVEL_GPU;
    const char *lv = cv >= 0 ? pfi_table_cell(&t, r, (size_t)cv) : NULL;
    if (lv && *lv) {
      if (strcasecmp(lv, "gpu") == 0)
        s.level = PFI_LEVEL_GPU;
      else if (strcasecmp(lv, "node") == 0)
        s.level = PFI_LEVEL_NODE;
      else if (strcasecmp(lv, "meter") == 0)
        s.level = PFI_LEVEL_METER;
      else {
        rc = pfi_error_setloc(err, PFI_EPARSE, name, line,
                              cell_col(&t, r, (size_t)cv),
                              "level: '%.20s' is not gpu, node or meter", lv);
        goto out;
      }
    }
    const char *pv = cp >= 0 ? pfi_table_cell(&t, r, (size_t)cp) : NULL;
    if (pv && *pv) {
      char *end;
      long v = strtol(pv, &end, 10);
      if (*end || v < 0 || v > 1000000) {
        rc = pfi_error_setloc(err, PFI_EPARSE, name, line,
                              cell_col(&t, r, (size_t)cp),
                              "priority: '%.20s' is not an integer in "
                              "0..1000000",
                              pv);
        goto out;
      }
      s.priority = (int)v;
    }
    s.source = PFI_SRC_SCHEDULE;
    s.scheduled_s = 0;
    snprintf(s.event, sizeof s.event, "%.100s:%ld", name, line);
    snprintf(s.kind, sizeof s.kind, "SCHEDULE");
    if ((rc = pfi_timeline_add(out, &s, err)) < 0)
      goto out;
  }
  rc = 0;
out:
  pfi_table_release(&t);
  return rc;
}

int pfi_schedule_load(const char *path, double baseline_w,
                      struct pfi_timeline *out, struct pfi_error *err) {
  char *buf;
  size_t len;
  int rc = pfi_read_file(path, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = pfi_schedule_load_mem(path, buf, len, baseline_w, out, err);
  free(buf);
  return rc;
}
