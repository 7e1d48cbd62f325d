/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/curve.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/fmt.h"

/* A large block about to be filled: backed by huge pages where the system
 * lends them on request (transparent huge pages, "madvise"), one page
 * fault per 2 MiB instead of per 4 KiB (as pfi_read_file's buffer).
 * Advice only: nothing changes where it is not taken. */
static void advise_huge(void *p, size_t n) {
#if defined(MADV_HUGEPAGE)
  const uintptr_t H = (uintptr_t)1 << 21;
  if (n < 4 * H)
    return;
  uintptr_t a = ((uintptr_t)p + H - 1) & ~(H - 1),
            b = ((uintptr_t)p + n) & ~(H - 1);
  if (b > a)
    (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

static const char *const col_names[PFI_COL__COUNT] = {
    "job",  "cap_w",      "power_w",   "tokens_per_s",
    "gpus", "power_sd_w", "tokens_sd", "runs"};

const char *pfi_curve_col_name(enum pfi_curve_col col) {
  return (unsigned)col < PFI_COL__COUNT ? col_names[col] : "?";
}

void pfi_curveset_init(struct pfi_curveset *set) {
  memset(set, 0, sizeof *set);
}

/* ---- the pool of a set read from a file ---- */

/* Blocks, newest first, from which a read set's job names and first point
 * arrays are cut: two allocations per job, and their memory faulted in a
 * 4 KiB page at a time, cost more than the rest of reading a large file's
 * new job. Blocks double up to 64 MiB; large ones are advised to huge
 * pages, as pfi_read_file's buffer is. Nothing is freed before the set. */
struct pool_block {
  struct pool_block *next;
  size_t used, cap;
  /* cap bytes follow, 16-byte aligned */
  _Alignas(16) unsigned char data[];
};

static void *pool_alloc(struct pfi_curveset *set, size_t n) {
  struct pool_block *b = set->pool;
  n = (n + 15) & ~(size_t)15;
  if (!b || b->cap - b->used < n) {
    size_t cap = b ? b->cap * 2 : (size_t)1 << 20;
    if (cap > (size_t)64 << 20)
      cap = (size_t)64 << 20;
    if (cap < n)
      cap = n;
    struct pool_block *nb = malloc(sizeof *nb + cap);
    if (!nb)
      return NULL;
    advise_huge(nb->data, cap);
    nb->next = b;
    nb->used = 0;
    nb->cap = cap;
    set->pool = b = nb;
  }
  void *p = b->data + b->used;
  b->used += n;
  return p;
}

/* Whether p lies in one of set's pool blocks (then it is not freed). */
static int in_pool(const struct pfi_curveset *set, const void *p) {
  for (const struct pool_block *b = set->pool; b; b = b->next)
    if ((const unsigned char *)p >= b->data &&
        (const unsigned char *)p < b->data + b->cap)
      return 1;
  return 0;
}

void pfi_curveset_release(struct pfi_curveset *set) {
  if (!set)
    return;
  for (size_t i = 0; i < set->n; i++) {
    if (!set->pool || !in_pool(set, set->c[i].job))
      free(set->c[i].job);
    if (!set->pool || !in_pool(set, set->c[i].pts))
      free(set->c[i].pts);
  }
  for (struct pool_block *b = set->pool, *nx; b; b = nx) {
    nx = b->next;
    free(b);
  }
  free(set->c);
  free(set->source);
  free(set->unit);
  memset(set, 0, sizeof *set);
}

struct pfi_curve *pfi_curveset_find(const struct pfi_curveset *set,
                                    const char *job) {
  for (size_t i = 0; i < set->n; i++)
    if (strcmp(set->c[i].job, job) == 0)
      return &set->c[i];
  return NULL;
}

/* A new curve for job (len bytes) at the end of set; its name and room
 * for six points cut from set's pool when `pooled`. */
static struct pfi_curve *new_curve(struct pfi_curveset *set, const char *job,
                                   size_t len, int pooled,
                                   struct pfi_error *err) {
  if (set->n == set->cap) {
    size_t ncap = set->cap ? set->cap * 2 : 16;
    struct pfi_curve *nc = realloc(set->c, ncap * sizeof *nc);
    if (!nc) {
      pfi_error_set(err, PFI_ENOMEM, "out of memory");
      return NULL;
    }
    advise_huge(nc + set->cap, (ncap - set->cap) * sizeof *nc);
    set->c = nc;
    set->cap = ncap;
  }
  struct pfi_curve *c = &set->c[set->n];
  memset(c, 0, sizeof *c);
  c->job = pooled ? pool_alloc(set, len + 1) : malloc(len + 1);
  if (c->job)
    memcpy(c->job, job, len + 1);
  if (c->job && pooled) {
    c->pts = pool_alloc(set, 6 * sizeof *c->pts);
    if (!c->pts) {
      pfi_error_set(err, PFI_ENOMEM, "out of memory");
      return NULL;
    }
    c->cap = 6;
  }
  if (!c->job) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    return NULL;
  }
  set->n++;
  return c;
}

/* Inserts keeping caps ascending. Returns 1 on a duplicate cap. */
static int curve_insert(const struct pfi_curveset *set, struct pfi_curve *c,
                        const struct pfi_point *pt, struct pfi_error *err) {
  if (c->n == c->cap) {
    /* Room for six points first: measured grids have four to six caps
     * (200-700 W in steps of 100 on an H200), and a large file holds
     * hundreds of thousands of curves. */
    size_t ncap = c->cap ? c->cap * 2 : 6;
    struct pfi_point *np;
    if (set->pool && c->pts && in_pool(set, c->pts)) {
      /* Out of the pool's room: the points move to an allocation. */
      np = malloc(ncap * sizeof *np);
      if (np)
        memcpy(np, c->pts, c->n * sizeof *np);
    } else {
      np = realloc(c->pts, ncap * sizeof *np);
    }
    if (!np)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    c->pts = np;
    c->cap = ncap;
  }
  size_t k = c->n;
  while (k > 0 && c->pts[k - 1].cap_w > pt->cap_w)
    k--;
  if (k > 0 && c->pts[k - 1].cap_w == pt->cap_w)
    return 1;
  memmove(&c->pts[k + 1], &c->pts[k], (c->n - k) * sizeof *c->pts);
  c->pts[k] = *pt;
  c->n++;
  return 0;
}

int pfi_curveset_add(struct pfi_curveset *set, const char *job,
                     const struct pfi_point *pt, struct pfi_error *err) {
  struct pfi_curve *c = pfi_curveset_find(set, job);
  if (!c) {
    c = new_curve(set, job, strlen(job), 0, err);
    if (!c)
      return PFI_ENOMEM;
    c->first_line = pt->line;
  }
  int rc = curve_insert(set, c, pt, err);
  if (rc == 1)
    return pfi_error_set(err, PFI_EINVAL, "job '%s': duplicate cap %g W", job,
                         pt->cap_w);
  return rc;
}

static int cap_match(double a, double b) {
  double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
  return fabs(a - b) <= 1e-9 * (m > 1.0 ? m : 1.0);
}

/* Index of the first point of `c` whose cap matches `cap`, or -1. */
static long find_cap(const struct pfi_curve *c, double cap) {
  for (size_t i = 0; i < c->n; i++)
    if (cap_match(c->pts[i].cap_w, cap))
      return (long)i;
  return -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int pfi_curveset_restrict(struct pfi_curveset *set, const double *caps,
                          size_t ncaps, struct pfi_error *err) {
  for (size_t j = 0; j < ncaps; j++)
    if (!isfinite(caps[j]) || !(caps[j] > 0))
      return pfi_error_set(err, PFI_EINVAL,
                           "--caps: cap %g is not a positive number", caps[j]);
  double *u = malloc((ncaps ? ncaps : 1) * sizeof *u);
  if (!u)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (ncaps)
    memcpy(u, caps, ncaps * sizeof *u);
  qsort(u, ncaps, sizeof *u, cmp_double);
  size_t m = 0;
  int rc = 0;
  for (size_t j = 0; j < ncaps; j++) {
    if (m > 0 && cap_match(u[m - 1], u[j])) {
      /* A cap listed twice is a typo for another cap, not a request. */
      rc = pfi_error_set(err, PFI_EINVAL, "--caps: cap %g W is listed twice",
                         u[j]);
      goto out;
    }
    u[m++] = u[j];
  }
  if (m < 2) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "--caps: needs at least 2 distinct caps, got %zu", m);
    goto out;
  }
  /* Check every job first, so that a failure leaves the set unchanged. */
  for (size_t i = 0; i < set->n; i++)
    for (size_t j = 0; j < m; j++)
      if (find_cap(&set->c[i], u[j]) < 0) {
        rc = pfi_error_setloc(err, PFI_EPARSE, set->source,
                              set->c[i].first_line, 1,
                              "job '%s' has no point at cap %g W requested "
                              "by --caps",
                              set->c[i].job, u[j]);
        goto out;
      }
  for (size_t i = 0; i < set->n; i++) {
    struct pfi_curve *c = &set->c[i];
    size_t w = 0;
    /* Points are sorted by cap, as are the requested caps, so the kept
     * points stay sorted and their indices only grow. */
    for (size_t j = 0; j < m; j++) {
      long k = find_cap(c, u[j]);
      c->pts[w++] = c->pts[k];
    }
    c->n = w;
  }
out:
  free(u);
  return rc;
}

/* ---- a small string -> index hash map for fast loading ---- */

/* A slot holds the curve index + 1 (0 = empty) and the upper 32 bits of
 * the name's hash: a probe compares names only when the tags agree, so a
 * lookup in a large table touches one slot per probe, not the curves. */
struct jobslot {
  uint32_t idx1, tag;
};

struct jobmap {
  size_t cap; /* power of two */
  struct jobslot *slot;
  uint64_t *hv;  /* hash of each curve's name, so growing rehashes nothing */
  size_t hv_cap; /* entries allocated in hv */
};

/* Eight bytes at a time, each word mixed by a multiply-xorshift; the
 * length seeds the state so that names differing only in trailing zero
 * bytes (which cannot occur: they are C strings) stay apart. */
static uint64_t hash_str(const char *s, size_t n) {
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
  advise_huge(ns, ncap * sizeof *ns);
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

/* Returns the curve index for `job`, whose hash_str() is hv, or -1 when
 * absent; *hslot gets the empty slot where it would go. */
static long jobmap_get(const struct jobmap *m, const struct pfi_curveset *set,
                       const char *job, uint64_t hv, size_t *hslot) {
  uint32_t t = (uint32_t)(hv >> 32);
  size_t h = (size_t)hv & (m->cap - 1);
  while (m->slot[h].idx1) {
    size_t i = m->slot[h].idx1 - 1;
    if (m->slot[h].tag == t && strcmp(set->c[i].job, job) == 0)
      return (long)i;
    h = (h + 1) & (m->cap - 1);
  }
  *hslot = h;
  return -1;
}

/* ---- reading ---- */

/*
 * A --map entry beyond NAME=COLUMN: `job=A+B+C` builds the job name from
 * several columns (joined by '/'), and `NUM=K/COLUMN` for a number column
 * reads K divided by the column (throughput from a time per unit of work:
 * tokens_per_s=1/time_per_epoch). A whole entry that names a column of the
 * file is always read as that column.
 */
#define MAP_MAX_PARTS 8

struct colmap {
  char *name[PFI_COL__COUNT]; /* mapped column name, or NULL */
  double num[PFI_COL__COUNT]; /* K of K/COLUMN; 0 when plain */
  int nparts;                 /* job columns when composite (>= 2), else 0 */
  int part[MAP_MAX_PARTS];    /* their indices */
};

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
          snprintf(what, sizeof what, "missing column '%s' (mapped to job as "
                   "%s)", t, nm);
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

/* Rows the second of two threads read, for the first to join: each
 * row's point (its line counted from the second half's first), its job
 * name (an offset in the second half's bytes), and where its reading
 * began (the end of the row before), to read on from there in one thread
 * when the join cannot take the row. */
struct rowrec {
  struct pfi_point pt;
  uint32_t joff, jlen; /* job name in the second half's bytes */
  uint32_t at;         /* offset where the row's reading began */
  uint32_t skip;       /* pt.line minus the line there (blank lines) */
  int gpus;
};

struct rowbuf {
  struct rowrec *r;
  size_t n, cap;
};

static int rowbuf_push(struct rowbuf *b, const struct pfi_csv *csv,
                       const char *job, size_t jlen, const struct pfi_point *pt,
                       double gpus, size_t at, long at_line) {
  if (b->n == b->cap) {
    size_t ncap = b->cap ? 2 * b->cap : 4096;
    struct rowrec *nr = realloc(b->r, ncap * sizeof *nr);
    if (!nr)
      return PFI_ENOMEM;
    advise_huge(nr + b->cap, (ncap - b->cap) * sizeof *nr);
    b->r = nr;
    b->cap = ncap;
  }
  struct rowrec *x = &b->r[b->n++];
  x->pt = *pt;
  x->joff = (uint32_t)(job - csv->buf);
  x->jlen = (uint32_t)jlen;
  x->at = (uint32_t)at;
  x->skip = (uint32_t)(pt->line - at_line);
  x->gpus = (int)gpus;
  return 0;
}

/* What the reading of data rows needs beside the set and the CSV reader:
 * the resolved columns, a job-name buffer and the hash of job names. */
struct rows {
  const struct colmap *cm; /* composite job columns (names already freed) */
  int idx[PFI_COL__COUNT];
  double num[PFI_COL__COUNT];
  char *jbuf;
  size_t jcap;
  struct jobmap m;
  /* Rows of one job usually follow each other, or (a telemetry export
   * sorted by time) the jobs follow each other in the same order at every
   * timestamp or cap: trying the last job's curve and the next one in
   * order of first appearance skips the hash lookup, and its cache misses
   * in a large table, for both layouts. */
  long last;
  struct rowbuf *out; /* the second of two threads: rows kept, not joined */
  size_t at;          /* where the reading of the current row began */
  long at_line;       /* the line there */
};

static void rows_free(struct rows *r) {
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
static int row_apply(struct rows *r, struct pfi_curveset *set, long ci,
                     const char *job, size_t jlen, uint64_t hv,
                     const struct pfi_point *pt, double gpus,
                     struct pfi_error *err) {
  size_t hslot = 0;
  if (ci < 0)
    ci = jobmap_get(&r->m, set, job, hv, &hslot);
  struct pfi_curve *c;
  if (ci < 0) {
    if (set->n == r->m.hv_cap) {
      size_t ncap = r->m.hv_cap ? 2 * r->m.hv_cap : 1024;
      uint64_t *nh = realloc(r->m.hv, ncap * sizeof *nh);
      if (!nh)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      advise_huge(nh + r->m.hv_cap, (ncap - r->m.hv_cap) * sizeof *nh);
      r->m.hv = nh;
      r->m.hv_cap = ncap;
    }
    r->m.hv[set->n] = hv;
    if ((set->n + 1) * 2 > r->m.cap) {
      if (jobmap_grow(&r->m, set) < 0)
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      (void)jobmap_get(&r->m, set, job, hv, &hslot);
    }
    c = new_curve(set, job, jlen, 1, err);
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
  int rc = curve_insert(set, c, pt, err);
  return rc == 1 ? 2 : rc;
}

static int read_rows(struct rows *r, struct pfi_curveset *set,
                     struct pfi_csv *csv, struct pfi_error *err) {
  int rc;
  for (;;) {
    r->at = csv->pos;
    r->at_line = csv->line;
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
      hv = hash_str(job, jlen);
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
      if (rowbuf_push(r->out, csv, job, jlen, &pt, gpus, r->at, r->at_line) <
          0) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        break;
      }
      continue;
    }
    rc = row_apply(r, set, ci, job, jlen, hv, &pt, gpus, err);
    if (rc == 1) {
      rc = pfi_error_setloc(err, PFI_EPARSE, csv->name,
                            csv->fline[r->idx[PFI_COL_GPUS]],
                            csv->fcol[r->idx[PFI_COL_GPUS]],
                            "field 'gpus': job '%s' has %d GPUs on an earlier "
                            "row but %g here",
                            job, set->c[r->last].gpus, gpus);
      return rc;
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

/* ---- reading on two threads ---- */

/* Inputs smaller than this are read on one thread: the second thread's
 * start and the join would cost more than they save. */
#define TWO_THREADS_MIN ((size_t)4 << 20)

/* The number of threads to read csv's data rows with: `threads` when
 * given (1 or 2), else two for a large input when a processor is idle
 * (the one-minute load average below the processors less one). The second
 * thread costs 0.1-0.2 s of CPU more on a 300,000-job file (its copy of
 * the bytes, its rows, the join): on a machine whose processors are all
 * busy, two threads take longer than one. */
static int threads_for(const struct pfi_csv *csv, int threads) {
  if (threads > 0)
    return threads >= 2 ? 2 : 1;
  if (csv->len - csv->pos < TWO_THREADS_MIN)
    return 1;
  long np = sysconf(_SC_NPROCESSORS_ONLN);
  double load;
  if (np < 2 || getloadavg(&load, 1) != 1)
    return 1;
  return load < (double)np - 1.0 ? 2 : 1;
}

/* The second half of the input, parsed by a thread of its own from a copy
 * of its bytes: its rows' values, checked as one thread checks them, for
 * the first thread to join. The original bytes stay as they were, so that
 * the rows can be read on from any row, one thread as always, whenever a
 * row cannot simply be joined. */
struct half {
  struct rows r;
  struct rowbuf rows;
  struct pfi_csv csv;
  struct pfi_curveset set; /* stays empty */
  struct pfi_error err;
  const char *src; /* csv's bytes from the split on (read only) */
  size_t len;
  int rc;
};

static void *half_main(void *arg) {
  struct half *h = arg;
  h->csv.buf = malloc(h->len + 1);
  if (!h->csv.buf) {
    h->rc = PFI_ENOMEM;
    return NULL;
  }
  advise_huge(h->csv.buf, h->len);
  memcpy(h->csv.buf, h->src, h->len);
  h->csv.buf[h->len] = '\0';
  h->csv.len = h->len;
  h->csv.line = 1;
  h->rc = read_rows(&h->r, &h->set, &h->csv, &h->err);
  return NULL;
}

static void half_free(struct half *h) {
  rows_free(&h->r);
  free(h->rows.r);
  free(h->csv.f);
  free(h->csv.fline);
  free(h->csv.fcol);
  free(h->csv.flen);
  free(h->csv.buf);
}

/*
 * Joins the second half's rows, in order, as one thread would have read
 * them after the first half (csv is at the split, its line there is
 * base + 1). A row one thread would refuse for what an earlier row said
 * (a cap of its job again, another GPU count), and the row where the
 * second thread stopped on an error, are read again from the original
 * bytes on, by one thread, which gives the same set and the same error.
 */
static int join_rows(struct rows *r, struct pfi_curveset *set,
                     struct pfi_csv *csv, struct half *h,
                     struct pfi_error *err) {
  size_t split = csv->pos;
  long base = csv->line - 1;
  for (size_t k = 0; k < h->rows.n; k++) {
    const struct rowrec *x = &h->rows.r[k];
    const char *job = h->csv.buf + x->joff;
    long ci = -1;
    uint64_t hv = 0;
    if (r->last >= 0 && strcmp(set->c[r->last].job, job) == 0)
      ci = r->last;
    else if (r->last >= 0 && (size_t)r->last + 1 < set->n &&
             strcmp(set->c[r->last + 1].job, job) == 0)
      ci = r->last + 1;
    else
      hv = hash_str(job, x->jlen);
    struct pfi_point pt = x->pt;
    pt.line += base;
    int rc = row_apply(r, set, ci, job, x->jlen, hv, &pt, x->gpus, err);
    if (rc < 0)
      return rc;
    if (rc > 0) {
      csv->pos = split + x->at;
      csv->linepos = (long)csv->pos;
      csv->line = pt.line - (long)x->skip;
      return read_rows(r, set, csv, err);
    }
  }
  if (h->rc < 0) {
    csv->pos = split + h->r.at;
    csv->linepos = (long)csv->pos;
    csv->line = h->r.at_line + base;
    return read_rows(r, set, csv, err);
  }
  csv->pos = csv->len;
  return 0;
}

/*
 * Reads csv's data rows on two threads, with the result and every error
 * (message, file, line, column) one thread gives: another thread parses
 * the rows from a line end near the middle on, from a copy of their
 * bytes, while this one reads the rows before it; this one then joins
 * the other's rows in order. A first half with a quote (a quoted field
 * may hold the line end) is read on one thread, as are composite job
 * names and inputs of 4 GiB or more.
 */
static int read_rows_2(struct rows *r, struct pfi_curveset *set,
                       struct pfi_csv *csv, struct pfi_error *err) {
  size_t pos = csv->pos, len = csv->len;
  int can =
      len - pos >= 2 && r->cm->nparts == 0 && len - pos < (size_t)UINT32_MAX;
  const char *mid = can ? memchr(csv->buf + pos + (len - pos) / 2, '\n',
                                 len - pos - (len - pos) / 2)
                        : NULL;
  size_t split = mid ? (size_t)(mid - csv->buf) + 1 : len;
  if (split >= len || memchr(csv->buf + pos, '"', split - pos))
    return read_rows(r, set, csv, err);
  struct half *h = calloc(1, sizeof *h);
  if (!h)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  h->r.cm = r->cm;
  memcpy(h->r.idx, r->idx, sizeof h->r.idx);
  memcpy(h->r.num, r->num, sizeof h->r.num);
  h->r.last = -1;
  h->r.out = &h->rows;
  h->r.at_line = 1;
  h->csv.name = csv->name;
  h->csv.nheader = csv->nheader;
  h->csv.header = csv->header;
  h->src = csv->buf + split;
  h->len = len - split;
  pthread_t th;
  if (pthread_create(&th, NULL, half_main, h) != 0) {
    free(h);
    return read_rows(r, set, csv, err);
  }
  /* Without a quote in it, the first half ends at the split, where its
   * last record ends: the reader sees no byte beyond it. */
  csv->len = split;
  int rc = read_rows(r, set, csv, err);
  csv->len = len;
  pthread_join(th, NULL);
  if (rc == 0 && csv->pos != split)
    rc = pfi_error_set(err, PFI_ESTATE,
                       "two-thread read: split at %zu, "
                       "first half ended at %zu",
                       split, csv->pos);
  if (rc == 0)
    rc = join_rows(r, set, csv, h, err);
  half_free(h);
  free(h);
  return rc;
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
  if (threads_for(csv, threads) >= 2)
    rc = read_rows_2(&r, set, csv, err);
  else
    rc = read_rows(&r, set, csv, err);
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
  rows_free(&r);
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

/* Whether point a comes before point b in the order by power, ties in cap
 * order (the points are stored by cap, so by index). */
static int before(const struct pfi_curve *c, size_t a, size_t b) {
  return c->pts[a].power_w < c->pts[b].power_w ||
         (c->pts[a].power_w == c->pts[b].power_w && a < b);
}

/*
 * Interpolates y at power_w over the points ordered by power (ties in cap
 * order). The two points around power_w are found in one pass: `hi` is the
 * first point in that order with power >= power_w, `lo` the last one with
 * power < power_w. No sorted copy is made, so there is no allocation that
 * could fail (a failed one used to return 0 as if it were the answer).
 * A curve without points has no value: NAN.
 */
static double interp_by_power(const struct pfi_curve *c, double power_w,
                              int want_cap) {
  size_t n = c->n;
  if (n == 0)
    return NAN;
#define Y(i) (want_cap ? c->pts[i].cap_w : c->pts[i].tokens_per_s)
  size_t first = 0, last = 0;
  long lo = -1, hi = -1;
  for (size_t i = 0; i < n; i++) {
    if (before(c, i, first))
      first = i;
    if (before(c, last, i))
      last = i;
    if (c->pts[i].power_w < power_w) {
      if (lo < 0 || before(c, (size_t)lo, i))
        lo = (long)i;
    } else if (hi < 0 || before(c, i, (size_t)hi)) {
      hi = (long)i;
    }
  }
  double y;
  if (power_w <= c->pts[first].power_w)
    y = Y(first);
  else if (power_w >= c->pts[last].power_w)
    y = Y(last);
  else {
    /* Here both exist: power_w lies strictly inside the power range. */
    double x0 = c->pts[lo].power_w, x1 = c->pts[hi].power_w;
    if (x1 > x0) {
      double dy = Y(hi) - Y(lo);
      double num = dy * (power_w - x0);
      /* Values near DBL_MAX: the product overflows where the fraction of
       * the interval, taken first, does not (the result lies between the
       * two points, so it is finite). The usual order otherwise, so that
       * ordinary inputs give the same bits as always. */
      if (isfinite(num) && isfinite(x1 - x0))
        y = Y(lo) + num / (x1 - x0);
      else
        y = Y(lo) + dy * ((0.5 * power_w - 0.5 * x0) / (0.5 * x1 - 0.5 * x0));
    } else {
      y = Y(hi);
    }
  }
#undef Y
  return y;
}

double pfi_curve_tokens_at(const struct pfi_curve *c, double power_w) {
  return interp_by_power(c, power_w, 0);
}

double pfi_curve_cap_at(const struct pfi_curve *c, double power_w) {
  return interp_by_power(c, power_w, 1);
}
