/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reading a curves CSV (pfi_curveset_read and its kin): the column map,
 * the job-name hash, the rows on one thread. */
#include "pfi/curve.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curve_int.h"
#include "../base/scan_decimal.h"
#include "pfi/csv.h"
#include "pfi/fmt.h"

static const char *const col_names[PFI_COL__COUNT] = {
    "job",  "cap_w",      "power_w",   "tokens_per_s",
    "gpus", "power_sd_w", "tokens_sd", "runs"};

const char *pfi_curve_col_name(enum pfi_curve_col col) {
  return (unsigned)col < PFI_COL__COUNT ? col_names[col] : "?";
}

/* Eight bytes at a time, each word mixed by a multiply-xorshift; the
 * length seeds the state so that names differing only in trailing zero
 * bytes (which cannot occur: they are C strings) stay apart. */
uint64_t pfi__curve_hash(const char *s, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xC2B2AE3D27D4EB4FULL);
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 32;
    s += 8;
    n -= 8;
  }
  if (n) {
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 32;
  }
  h *= 0xC4CEB9FE1A85EC53ULL;
  h ^= h >> 29;
  return h;
}

static int jobmap_grow(struct jobmap *m, const struct pfi_curveset *set) {
  size_t ncap = m->cap ? m->cap * 2 : 1024;
  if (ncap > (size_t)UINT32_MAX)
    return PFI_ENOMEM;
  struct jobslot *ns = calloc(ncap, sizeof *ns);
  if (!ns)
    return PFI_ENOMEM;
  pfi__advise_huge(ns, ncap * sizeof *ns);
  for (size_t i = 0; i < set->n; i++) {
    uint64_t hv = m->hv[i];
    size_t h = (size_t)hv & (ncap - 1);
    while (ns[h].idx1)
      h = (h + 1) & (ncap - 1);
    ns[h].idx1 = (uint32_t)(i + 1);
    ns[h].tag = (uint32_t)(hv >> 32);
  }
  free(m->slot);
  m->slot = ns;
  m->cap = ncap;
  return 0;
}

/* Returns the curve index for `job`, whose pfi__curve_hash() is hv, or -1 when
 * absent; *hslot gets the empty slot where it would go. */
static long jobmap_get(const struct jobmap *m, const struct pfi_curveset *set,
                       const char *job, size_t len, uint64_t hv,
                       size_t *hslot) {
  uint32_t t = (uint32_t)(hv >> 32);
  size_t h = (size_t)hv & (m->cap - 1);
  while (m->slot[h].idx1) {
    size_t i = m->slot[h].idx1 - 1;
    if (m->slot[h].tag == t && pfi__curve_name_is(set->c[i].job, job, len))
      return (long)i;
    h = (h + 1) & (m->cap - 1);
  }
  *hslot = h;
  return -1;
}

static void colmap_free(struct colmap *m) {
  for (int k = 0; k < PFI_COL__COUNT; k++) {
    free(m->name[k]);
    m->name[k] = NULL;
  }
}

static int parse_map(const char *map, struct colmap *cm,
                     struct pfi_error *err) {
  memset(cm, 0, sizeof *cm);
  if (!map || !*map)
    return 0;
  char *copy = strdup(map);
  if (!copy)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || !eq[1]) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "--map: expected NAME=COLUMN, got '%s'", tok);
      break;
    }
    *eq = '\0';
    int which = -1;
    for (int k = 0; k < PFI_COL__COUNT; k++)
      if (strcmp(tok, col_names[k]) == 0)
        which = k;
    if (which < 0) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "--map: unknown column name '%s' (expected one of "
                         "job, cap_w, power_w, tokens_per_s, gpus, power_sd_w, "
                         "tokens_sd, runs)",
                         tok);
      break;
    }
    if (cm->name[which]) {
      rc = pfi_error_set(err, PFI_EINVAL, "--map: '%s' is mapped twice", tok);
      break;
    }
    for (int k = 0; k < PFI_COL__COUNT && rc == 0; k++)
      if (cm->name[k] && strcmp(cm->name[k], eq + 1) == 0)
        rc = pfi_error_set(err, PFI_EINVAL,
                           "--map: column '%s' is mapped to both %s and %s",
                           eq + 1, col_names[k], tok);
    if (rc < 0)
      break;
    cm->name[which] = strdup(eq + 1);
    cm->num[which] = 0;
    if (!cm->name[which]) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      break;
    }
  }
  free(copy);
  if (rc < 0)
    colmap_free(cm);
  return rc;
}

/* A missing column, located at line 1: `what` ("missing column 'x'" and
 * how it was mapped), the columns the header has, and how --map names
 * another column as `canon` (the mapped case: that the mapping is wrong). */
static int missing_column(const struct pfi_csv *csv, const char *what,
                          const char *canon, int mapped,
                          struct pfi_error *err) {
  char cols[280];
  pfi_csv_columns((const char *const *)csv->header, csv->nheader, cols,
                  sizeof cols);
  if (mapped)
    return pfi_error_setloc(err, PFI_EPARSE, csv->name, 1, 1,
                            "%s; the header has %s; check --map", what, cols);
  return pfi_error_setloc(err, PFI_EPARSE, csv->name, 1, 1,
                          "%s; the header has %s; --map %s=COLUMN reads "
                          "another column as %s",
                          what, cols, canon, canon);
}

/* Resolves the mapped names against the header: K/COLUMN and A+B+C forms
 * where the whole entry is no column of the file. */
static int resolve_forms(struct colmap *cm, const struct pfi_csv *csv,
                         int idx[PFI_COL__COUNT], struct pfi_error *err) {
  for (int k = 0; k < PFI_COL__COUNT; k++) {
    const char *nm = cm->name[k];
    if (!nm || idx[k] >= 0)
      continue;
    const char *slash = strchr(nm, '/');
    if (k != PFI_COL_JOB && slash && slash > nm && slash[1]) {
      char numbuf[64];
      size_t nl = (size_t)(slash - nm);
      double K = 0;
      if (nl < sizeof numbuf) {
        memcpy(numbuf, nm, nl);
        numbuf[nl] = '\0';
        if (pfi_parse_double(numbuf, &K) < 0)
          K = 0;
      }
      if (!(K > 0) || !isfinite(K))
        return pfi_error_set(err, PFI_EINVAL,
                             "--map: %s=%s: the numerator of K/COLUMN must "
                             "be a positive number",
                             col_names[k], nm);
      int ci = pfi_csv_find(csv, slash + 1);
      if (ci < 0) {
        char what[200];
        snprintf(what, sizeof what, "missing column '%s' (mapped to %s as %s)",
                 slash + 1, col_names[k], nm);
        return missing_column(csv, what, col_names[k], 1, err);
      }
      idx[k] = ci;
      cm->num[k] = K;
      /* From here on the column is known by its plain name (messages and
       * the duplicate-header check). */
      memmove(cm->name[k], slash + 1, strlen(slash + 1) + 1);
    } else if (k == PFI_COL_JOB && strchr(nm, '+')) {
      char *dup = strdup(nm);
      if (!dup)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      int n = 0, rc = 0;
      char *save = NULL;
      for (char *t = strtok_r(dup, "+", &save); t;
           t = strtok_r(NULL, "+", &save)) {
        if (n == MAP_MAX_PARTS) {
          rc = pfi_error_set(err, PFI_EINVAL,
                             "--map: job=%s: at most %d columns", nm,
                             MAP_MAX_PARTS);
          break;
        }
        int ci = pfi_csv_find(csv, t);
        if (ci < 0) {
          char what[200];
          snprintf(what, sizeof what,
                   "missing column '%s' (mapped to job as "
                   "%s)",
                   t, nm);
          rc = missing_column(csv, what, "job", 1, err);
          break;
        }
        cm->part[n++] = ci;
      }
      free(dup);
      if (rc < 0)
        return rc;
      if (n < 2)
        return pfi_error_set(err, PFI_EINVAL,
                             "--map: job=%s: expected COLUMN+COLUMN", nm);
      cm->nparts = n;
      idx[k] = cm->part[0];
    }
  }
  return 0;
}

/* The job name of the current record (composite when mapped so), in *buf
 * (grown as needed). NULL with *bad set to the column of an empty or
 * absent part. */
static const char *record_job(const struct pfi_csv *csv,
                              const struct colmap *cm, int jidx, char **buf,
                              size_t *bufcap, int *bad, int *oom, size_t *len) {
  *bad = -1;
  *oom = 0;
  if (cm->nparts == 0) {
    const char *j = pfi_csv_field(csv, jidx);
    if (!j || !*j)
      *bad = jidx;
    else
      *len = csv->flen[jidx];
    return (j && *j) ? j : NULL;
  }
  size_t need = 1;
  for (int p = 0; p < cm->nparts; p++) {
    const char *f = pfi_csv_field(csv, cm->part[p]);
    if (!f || !*f) {
      *bad = cm->part[p];
      return NULL;
    }
    need += strlen(f) + 1;
  }
  if (need > *bufcap) {
    char *nb = realloc(*buf, need);
    if (!nb) {
      *oom = 1;
      return NULL;
    }
    *buf = nb;
    *bufcap = need;
  }
  size_t w = 0;
  for (int p = 0; p < cm->nparts; p++) {
    const char *f = pfi_csv_field(csv, cm->part[p]);
    size_t l = strlen(f);
    if (p)
      (*buf)[w++] = '/';
    memcpy(*buf + w, f, l);
    w += l;
  }
  (*buf)[w] = '\0';
  *len = w;
  return *buf;
}
void pfi__curve_rows_free(struct rows *r) {
  free(r->m.slot);
  free(r->jbuf);
  free(r->m.hv);
  r->m.slot = NULL;
  r->jbuf = NULL;
  r->m.hv = NULL;
}

/* Reads the data rows from csv's position to its end into set, in order.
 * Returns 0 at the end of the input or the first row's error, as a
 * negative code. */
/* Puts a row's point into its job's curve: curve index ci, or -1 to look
 * it up by the name's hash hv (a new job gets a curve). Returns 0, 1 when
 * the job has another GPU count on an earlier row, 2 when it has the cap
 * already (r->last is then the job's curve), or PFI_ENOMEM. */
int pfi__curve_row_apply(struct rows *r, struct pfi_curveset *set, long ci,
                         const char *job, size_t jlen, uint64_t hv,
                         const struct pfi_point *pt, double gpus,
                         struct pfi_error *err) {
  size_t hslot = 0;
  if (ci < 0)
    ci = jobmap_get(&r->m, set, job, jlen, hv, &hslot);
  struct pfi_curve *c;
  if (ci < 0) {
    if (set->n == r->m.hv_cap) {
      size_t ncap = r->m.hv_cap ? 2 * r->m.hv_cap : 1024;
      uint64_t *nh = realloc(r->m.hv, ncap * sizeof *nh);
      if (!nh)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      pfi__advise_huge(nh + r->m.hv_cap, (ncap - r->m.hv_cap) * sizeof *nh);
      r->m.hv = nh;
      r->m.hv_cap = ncap;
    }
    r->m.hv[set->n] = hv;
    if ((set->n + 1) * 2 > r->m.cap) {
      if (jobmap_grow(&r->m, set) < 0)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      (void)jobmap_get(&r->m, set, job, jlen, hv, &hslot);
    }
    c = pfi__curve_new(set, job, jlen, 1, err);
    if (!c)
      return PFI_ENOMEM;
    c->first_line = pt->line;
    c->gpus = (int)gpus;
    r->m.slot[hslot].idx1 = (uint32_t)set->n;
    r->m.slot[hslot].tag = (uint32_t)(hv >> 32);
  } else {
    c = &set->c[ci];
  }
  r->last = (long)(c - set->c);
  if (gpus > 0 && c->gpus > 0 && c->gpus != (int)gpus)
    return 1;
  if (gpus > 0 && c->gpus == 0)
    c->gpus = (int)gpus; /* the first row that says */
  int rc = pfi__curve_insert(set, c, pt, err);
  return rc == 1 ? 2 : rc;
}

/* The bytes that end or spoil a field read in place: the NUL after the
 * input, comma, line ends, and what the CSV reader would trim or unquote
 * (blanks, quote). */
static const unsigned char fast_stop[256] = {
    [0] = 1,   [','] = 1, ['\n'] = 1, ['\r'] = 1,
    ['"'] = 1, [' '] = 1, ['\t'] = 1};

/* Whether rows may be read in place (fast_row), and the role of each
 * field there: a job from one column, no K/COLUMN, no column read as
 * two. */
static int fast_setup(struct rows *r, const struct pfi_csv *csv) {
  memset(r->role, 0, sizeof r->role);
  if (r->cm->nparts != 0 || csv->nheader > PFI_CURVE_FAST_FIELDS)
    return 0;
  for (int k = 0; k < PFI_COL__COUNT; k++) {
    if (r->num[k] > 0)
      return 0;
    int x = r->idx[k];
    if (x < 0)
      continue;
    if (r->role[x])
      return 0;
    r->role[x] = (signed char)(k + 1);
  }
  return 1;
}

/* The end of a field read in place: a comma, or the line's end. */
static int field_end_at(const char *p, const char *end) {
  return *p == ',' || *p == '\n' || p == end ||
         (*p == '\r' && p + 1 < end && p[1] == '\n');
}

/*
 * The row at csv's position read in place, without the CSV reader, when
 * it is the plain row of nearly every curves file: exactly as many fields
 * as the header, none quoted, blank-padded or empty where a value is
 * needed, the numbers plain decimals that are valid (read as
 * pfi_scan_decimal_n reads them: the double strtod gives), the optional
 * power_sd_w, tokens_sd and runs blank or absent, a line end "\n" or
 * "\r\n". Such a row gives what the CSV reader and the checks of
 * pfi__curve_read_rows give. Returns 1 when the row was read and put into
 * its curve (kept for the join, on the second of two threads), 0 when it
 * must be read by the CSV reader (any other row, and every row that is an
 * error, so that its message is that reader's), PFI_ENOMEM.
 */
static int fast_row(struct rows *r, struct pfi_curveset *set,
                    struct pfi_csv *csv, struct pfi_error *err) {
  const char *b = csv->buf, *p = b + csv->pos, *end = b + csv->len;
  size_t nf = 0, nh = csv->nheader;
  const char *job = NULL;
  size_t jlen = 0;
  long ci = -1;
  uint64_t hv = 0;
  /* Values by column, PFI_COL_CAP_W to PFI_COL_GPUS; gpus 0: unknown. */
  double v[PFI_COL_GPUS + 1] = {0};
  if (p >= end)
    return 0;
  for (;; nf++) {
    if (nf == nh)
      return 0;
    const char *s = p;
    int role = r->role[nf] - 1;
    if (role >= PFI_COL_CAP_W && role <= PFI_COL_GPUS) {
      if (role == PFI_COL_GPUS && field_end_at(p, end)) {
        /* blank: unknown */
      } else if (!pfi__scan_decimal_prefix(s, &p, &v[role]) ||
                 !field_end_at(p, end)) {
        /* An exponent, say: the field as a whole. */
        p = s;
        while (!fast_stop[(unsigned char)*p])
          p++;
        if (!pfi_scan_decimal_n(s, (size_t)(p - s), &v[role]))
          return 0;
      }
    } else {
      while (!fast_stop[(unsigned char)*p])
        p++;
      if (role == PFI_COL_JOB) {
        job = s;
        jlen = (size_t)(p - s);
        /* The job's curve: the last one, the next, else the hash table's
         * slot, fetched while the rest of the row is read. */
        if (r->out)
          ; /* kept for the join, which finds the curve */
        else if (r->last >= 0 &&
                 pfi__curve_name_is(set->c[r->last].job, job, jlen))
          ci = r->last;
        else if (r->last >= 0 && (size_t)r->last + 1 < set->n &&
                 pfi__curve_name_is(set->c[r->last + 1].job, job, jlen))
          ci = r->last + 1;
        else {
          hv = pfi__curve_hash(job, jlen);
#if defined(__GNUC__)
          __builtin_prefetch(&r->m.slot[(size_t)hv & (r->m.cap - 1)]);
#endif
        }
      } else if (role > PFI_COL_GPUS && p > s) {
        return 0; /* a noise column or runs given: the CSV reader's */
      }
    }
    if (*p == ',') {
      p++;
      continue;
    }
    if (field_end_at(p, end))
      break;
    return 0;
  }
  if (nf + 1 != nh || jlen == 0)
    return 0;
  /* A value to refuse: the CSV reader reads the row again and says why. */
  if (!(v[PFI_COL_CAP_W] > 0) || !(v[PFI_COL_POWER_W] > 0) ||
      !(v[PFI_COL_TOKENS_PER_S] > 0) || v[PFI_COL_CAP_W] > PFI_CURVE_CAP_W_MAX)
    return 0;
  double gpus = v[PFI_COL_GPUS];
  if (gpus != 0 && (gpus < 1 || gpus > 1e6 || gpus != (double)(long)gpus))
    return 0;
  struct pfi_point pt = {0};
  pt.cap_w = v[PFI_COL_CAP_W];
  pt.power_w = v[PFI_COL_POWER_W];
  pt.tokens_per_s = v[PFI_COL_TOKENS_PER_S];
  pt.power_sd_w = -1;
  pt.tokens_sd = -1;
  pt.line = csv->line;
  int rc = 0;
  if (r->out) {
    /* The second of two threads keeps the row for the first to join. */
    if (pfi__rowbuf_push(r->out, csv, job, jlen, &pt, gpus, r->at, r->at_line) <
        0)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  } else {
    rc = pfi__curve_row_apply(r, set, ci, job, jlen, hv, &pt, gpus, err);
  }
  if (rc > 0)
    return 0; /* a GPU count or cap that contradicts an earlier row: the
                 CSV reader reads the row again and says so */
  if (rc < 0)
    return rc;
  csv->rec_line = csv->line;
  csv->nf = 0;
  if (p < end) {
    p += *p == '\r' ? 2 : 1;
    csv->line++;
    csv->linepos = (long)(p - b);
  }
  csv->pos = (size_t)(p - b);
  return 1;
}

/*
 * Folds a replicate row into the point of curve c with its cap: the point
 * becomes the mean of its runs (runs counts them), and the set's pool
 * gains the row's squared deviation relative to the mean (Welford's
 * update, (x - m_old)(x - m_new) / m_new^2: the relative scatter to first
 * order in the noise).
 */
static void replicate(struct pfi_curveset *set, struct pfi_curve *c,
                      const struct pfi_point *pt) {
  struct pfi_point *p = NULL;
  for (size_t i = 0; i < c->n && !p; i++)
    if (c->pts[i].cap_w == pt->cap_w)
      p = &c->pts[i];
  if (!p)
    return;
  double k = p->runs > 1 ? (double)p->runs : 1.0;
  double mp = p->power_w + (pt->power_w - p->power_w) / (k + 1),
         mt = p->tokens_per_s + (pt->tokens_per_s - p->tokens_per_s) / (k + 1);
  set->rep_ss_power +=
      (pt->power_w - p->power_w) * (pt->power_w - mp) / (mp * mp);
  set->rep_ss_tokens += (pt->tokens_per_s - p->tokens_per_s) *
                        (pt->tokens_per_s - mt) / (mt * mt);
  set->rep_dof++;
  set->rep_groups += k == 1.0;
  p->power_w = mp;
  p->tokens_per_s = mt;
  p->runs = (int)k + 1;
}

int pfi__curve_read_rows(struct rows *r, struct pfi_curveset *set,
                         struct pfi_csv *csv, struct pfi_error *err) {
  int rc;
  int fast = fast_setup(r, csv);
  for (;;) {
    r->at = csv->pos;
    r->at_line = csv->line;
    if (fast && (rc = fast_row(r, set, csv, err)) != 0) {
      if (rc < 0)
        return rc;
      continue;
    }
    if ((rc = pfi_csv_next(csv, err)) != 1)
      break;
    /* More fields than the header names means the columns are shifted
     * (an unquoted comma in a job name, say): every value of the row would
     * be read from the wrong column. */
    if (csv->nf > csv->nheader) {
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name,
                            csv->fline[csv->nheader], csv->fcol[csv->nheader],
                            "record has %zu fields, header has %zu", csv->nf,
                            csv->nheader);
      break;
    }
    int bad, oom;
    size_t jlen = 0;
    const char *job = record_job(csv, r->cm, r->idx[PFI_COL_JOB], &r->jbuf,
                                 &r->jcap, &bad, &oom, &jlen);
    if (oom) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      break;
    }
    if (!job) {
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->rec_line,
                            pfi_csv_field(csv, bad) ? csv->fcol[bad] : 1,
                            "field 'job': empty");
      break;
    }
    /* The curve of this row: the last one or the next in order, else the
     * hash table's, whose slot is fetched from memory while the numbers
     * are parsed (in a large table it is a cache miss). */
    long ci = -1;
    uint64_t hv = 0;
    if (r->out)
      ; /* kept for the join, which finds the curve */
    else if (r->last >= 0 && strcmp(set->c[r->last].job, job) == 0)
      ci = r->last;
    else if (r->last >= 0 && (size_t)r->last + 1 < set->n &&
             strcmp(set->c[r->last + 1].job, job) == 0)
      ci = r->last + 1;
    else {
      hv = pfi__curve_hash(job, jlen);
#if defined(__GNUC__)
      __builtin_prefetch(&r->m.slot[(size_t)hv & (r->m.cap - 1)]);
#endif
    }
    struct pfi_point pt = {0};
    pt.power_sd_w = -1;
    pt.tokens_sd = -1;
    pt.line = csv->rec_line;
    static const char *const what[] = {NULL, "cap_w", "power_w",
                                       "tokens_per_s"};
    double *dst[] = {NULL, &pt.cap_w, &pt.power_w, &pt.tokens_per_s};
    for (int k = PFI_COL_CAP_W; k <= PFI_COL_TOKENS_PER_S; k++) {
      /* Plain decimals, nearly every field of a curves file, are read
       * in place; anything else (and every error) by pfi_csv_double. */
      const char *fs = pfi_csv_field(csv, r->idx[k]);
      if (!fs || !pfi_scan_decimal_n(fs, csv->flen[r->idx[k]], dst[k])) {
        rc = pfi_csv_double(csv, r->idx[k], what[k], dst[k], err);
        if (rc < 0)
          return rc;
      }
      if (r->num[k] > 0 && *dst[k] > 0) {
        *dst[k] = r->num[k] / *dst[k]; /* K/COLUMN */
        if (!isfinite(*dst[k]) || !(*dst[k] > 0)) {
          rc = pfi_error_setloc(err, PFI_EPARSE, csv->name,
                                csv->fline[r->idx[k]], csv->fcol[r->idx[k]],
                                "field '%s': %g/%s is not a finite positive "
                                "number",
                                what[k], r->num[k],
                                pfi_csv_field(csv, r->idx[k]));
          return rc;
        }
      }
      if (*dst[k] <= 0) {
        rc = pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->fline[r->idx[k]],
                              csv->fcol[r->idx[k]],
                              "field '%s': must be positive, got %g", what[k],
                              *dst[k]);
        return rc;
      }
    }
    if (pt.cap_w > PFI_CURVE_CAP_W_MAX) {
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name,
                            csv->fline[r->idx[PFI_COL_CAP_W]],
                            csv->fcol[r->idx[PFI_COL_CAP_W]],
                            "field 'cap_w': %g W is not a GPU's power cap "
                            "(at most %g W)",
                            pt.cap_w, (double)PFI_CURVE_CAP_W_MAX);
      return rc;
    }
    double gpus = 0;
    const char *gs = pfi_csv_field(csv, r->idx[PFI_COL_GPUS]);
    /* Like every optional column, gpus may be blank in a row: unknown. */
    if (r->idx[PFI_COL_GPUS] >= 0 && gs && *gs) {
      if (!pfi_scan_decimal_n(gs, csv->flen[r->idx[PFI_COL_GPUS]], &gpus) &&
          (rc = pfi_csv_double(csv, r->idx[PFI_COL_GPUS], "gpus", &gpus, err)) <
              0)
        return rc;
      if (gpus < 1 || gpus > 1e6 || gpus != (double)(long)gpus) {
        rc = pfi_error_setloc(
            err, PFI_EPARSE, csv->name, csv->fline[r->idx[PFI_COL_GPUS]],
            csv->fcol[r->idx[PFI_COL_GPUS]],
            "field 'gpus': must be a positive integer, got %g", gpus);
        return rc;
      }
    }
    static const char *const owhat[] = {"power_sd_w", "tokens_sd", "runs"};
    double *odst[3];
    double runs = 0;
    odst[0] = &pt.power_sd_w;
    odst[1] = &pt.tokens_sd;
    odst[2] = &runs;
    for (int k = 0; k < 3; k++) {
      int ci = r->idx[PFI_COL_POWER_SD_W + k];
      const char *s = pfi_csv_field(csv, ci);
      if (ci < 0 || !s || !*s)
        continue; /* optional and blank: unknown */
      rc = pfi_csv_double(csv, ci, owhat[k], odst[k], err);
      if (rc < 0)
        return rc;
      if (*odst[k] < 0) {
        rc = pfi_error_setloc(
            err, PFI_EPARSE, csv->name, csv->fline[ci], csv->fcol[ci],
            "field '%s': must not be negative, got %g", owhat[k], *odst[k]);
        return rc;
      }
    }
    if (runs != floor(runs)) {
      int ci = r->idx[PFI_COL_RUNS];
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name, csv->fline[ci],
                            csv->fcol[ci],
                            "field 'runs': must be a whole number of runs, "
                            "got %g",
                            runs);
      return rc;
    }
    pt.runs = runs > 1e9 ? 1000000000 : (int)runs;

    if (r->out) {
      /* The second thread keeps the row for the first to join. */
      if (pfi__rowbuf_push(r->out, csv, job, jlen, &pt, gpus, r->at,
                           r->at_line) < 0) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        break;
      }
      continue;
    }
    rc = pfi__curve_row_apply(r, set, ci, job, jlen, hv, &pt, gpus, err);
    if (rc == 1) {
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name,
                            csv->fline[r->idx[PFI_COL_GPUS]],
                            csv->fcol[r->idx[PFI_COL_GPUS]],
                            "field 'gpus': job '%s' has %d GPUs on an earlier "
                            "row but %g here",
                            job, set->c[r->last].gpus, gpus);
      return rc;
    }
    if (rc == 2 && r->idx[PFI_COL_POWER_SD_W] < 0 &&
        r->idx[PFI_COL_TOKENS_SD] < 0 && r->idx[PFI_COL_RUNS] < 0) {
      /* A file without sd or runs columns that repeats a job's cap holds
       * replicate runs (formats.md): the point becomes their mean, and
       * their scatter goes to the set's pool (pfi_noise_estimate()). */
      replicate(set, &set->c[r->last], &pt);
      rc = 0;
      continue;
    }
    if (rc == 2) {
      rc = pfi_error_setloc(
          err, PFI_EPARSE, csv->name, csv->fline[r->idx[PFI_COL_CAP_W]],
          csv->fcol[r->idx[PFI_COL_CAP_W]],
          "field 'cap_w': duplicate cap %g W for job '%s'", pt.cap_w, job);
      return rc;
    }
    if (rc < 0)
      return rc;
  }
  return rc < 0 ? rc : 0;
}

static int read_csv(struct pfi_curveset *set, struct pfi_csv *csv,
                    const char *map, int threads, struct pfi_error *err) {
  struct colmap cm;
  char **names = cm.name;
  int idx[PFI_COL__COUNT];
  int rc = parse_map(map, &cm, err);
  if (rc < 0)
    return rc;
  for (int k = 0; k < PFI_COL__COUNT; k++)
    idx[k] = pfi_csv_find(csv, names[k] ? names[k] : col_names[k]);
  rc = resolve_forms(&cm, csv, idx, err);
  for (int k = 0; k < PFI_COL__COUNT && rc == 0; k++) {
    const char *want = names[k] ? names[k] : col_names[k];
    if (idx[k] < 0 && (k <= PFI_COL_TOKENS_PER_S || names[k])) {
      char what[200];
      if (names[k])
        snprintf(what, sizeof what, "missing column '%s' (mapped to %s)", want,
                 col_names[k]);
      else
        snprintf(what, sizeof what, "missing column '%s'", want);
      rc = missing_column(csv, what, col_names[k], names[k] != NULL, err);
      break;
    }
  }
  /* A column used under a name the header holds twice is ambiguous: say so
   * rather than read whichever comes first. The header record's fields are
   * still the current record (nothing was read since the open). */
  for (int k = 0; k < PFI_COL__COUNT && rc == 0; k++) {
    if (idx[k] < 0)
      continue;
    for (size_t h = (size_t)idx[k] + 1; h < csv->nheader; h++)
      if (strcmp(csv->header[h], csv->header[idx[k]]) == 0) {
        rc = pfi_error_setloc(
            err, PFI_EPARSE, csv->name, 1, h < csv->nf ? csv->fcol[h] : 1,
            "column '%s' appears twice in the header (columns %d and %zu)",
            csv->header[h], idx[k] + 1, h + 1);
        break;
      }
  }
  if (rc == 0) {
    /* The throughput's unit: tokens/s unless the column is mapped. */
    char ubuf[160];
    if (cm.num[PFI_COL_TOKENS_PER_S] > 0)
      snprintf(ubuf, sizeof ubuf, "%g/%s", cm.num[PFI_COL_TOKENS_PER_S],
               names[PFI_COL_TOKENS_PER_S]);
    else
      snprintf(ubuf, sizeof ubuf, "%s",
               names[PFI_COL_TOKENS_PER_S] ? names[PFI_COL_TOKENS_PER_S]
                                           : "tokens/s");
    set->unit = strdup(ubuf);
    set->source = strdup(csv->name);
    if (!set->unit || !set->source)
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  struct rows r;
  memset(&r, 0, sizeof r);
  r.cm = &cm;
  memcpy(r.idx, idx, sizeof r.idx);
  memcpy(r.num, cm.num, sizeof r.num);
  r.last = -1;
  colmap_free(&cm);
  if (rc < 0)
    return rc;
  if (jobmap_grow(&r.m, set) < 0)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (pfi__curve_threads_for(csv, threads) >= 2)
    rc = pfi__curve_read_rows_2(&r, set, csv, err);
  else
    rc = pfi__curve_read_rows(&r, set, csv, err);
  if (rc < 0)
    goto out;
  rc = 0;
  for (size_t i = 0; i < set->n; i++)
    if (set->c[i].n < 2) {
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name, set->c[i].first_line, 1,
                            "job '%s': has %zu point, needs at least 2",
                            set->c[i].job, set->c[i].n);
      break;
    }
  if (rc == 0 && set->n == 0)
    rc = pfi_error_setloc(err, PFI_EPARSE, csv->name, 2, 1, "no data rows");
out:
  pfi__curve_rows_free(&r);
  return rc;
}

int pfi_curveset_read_threads(struct pfi_curveset *set, const char *path,
                              const char *map, int threads,
                              struct pfi_error *err) {
  struct pfi_csv csv;
  pfi_curveset_init(set);
  int rc = pfi_csv_open(&csv, path, err);
  if (rc < 0)
    return rc;
  rc = read_csv(set, &csv, map, threads, err);
  /* A file truncated under the reader: that error, not what its NULs
   * looked like to the parser. */
  int lost = pfi_csv_lost(&csv, err);
  if (lost < 0)
    rc = lost;
  pfi_csv_close(&csv);
  if (rc < 0)
    pfi_curveset_release(set);
  return rc;
}

int pfi_curveset_read(struct pfi_curveset *set, const char *path,
                      const char *map, struct pfi_error *err) {
  return pfi_curveset_read_threads(set, path, map, 0, err);
}

int pfi_curveset_read_mem_threads(struct pfi_curveset *set, const char *name,
                                  const char *data, size_t len, const char *map,
                                  int threads, struct pfi_error *err) {
  struct pfi_csv csv;
  pfi_curveset_init(set);
  int rc = pfi_csv_open_mem(&csv, name, data, len, err);
  if (rc < 0)
    return rc;
  rc = read_csv(set, &csv, map, threads, err);
  pfi_csv_close(&csv);
  if (rc < 0)
    pfi_curveset_release(set);
  return rc;
}

int pfi_curveset_read_mem(struct pfi_curveset *set, const char *name,
                          const char *data, size_t len, const char *map,
                          struct pfi_error *err) {
  return pfi_curveset_read_mem_threads(set, name, data, len, map, 0, err);
}
