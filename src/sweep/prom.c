/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Prometheus text exposition (dcgm-exporter) to per-GPU samples. */
#include "pfi/prom.h"

#include "pfi/fmt.h"
#include "../base/curl_dl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DCGM metric names, old and new spellings, and the factor from the
 * exporter's unit to ours (device.h). */
#define DCGM(name) name, sizeof(name) - 1
static const struct {
  const char *name;
  size_t len;
  enum pfi_field field;
  double scale;
} dcgm_map[] = {
    {DCGM("DCGM_FI_DEV_POWER_USAGE"), PFI_FIELD_POWER, 1},
    {DCGM("DCGM_FI_DEV_BOARD_POWER_WATTS"), PFI_FIELD_POWER, 1},
    {DCGM("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), PFI_FIELD_ENERGY, 1e-3},
    {DCGM("DCGM_FI_DEV_SM_CLOCK"), PFI_FIELD_SM_CLOCK, 1},
    {DCGM("DCGM_FI_DEV_MEM_CLOCK"), PFI_FIELD_MEM_CLOCK, 1},
    {DCGM("DCGM_FI_DEV_GPU_UTIL"), PFI_FIELD_GPU_UTIL, 1},
    {DCGM("DCGM_FI_PROF_SM_ACTIVE"), PFI_FIELD_SM_ACTIVE, 1},
    {DCGM("DCGM_FI_PROF_SM_OCCUPANCY"), PFI_FIELD_SM_OCCUPANCY, 1},
    {DCGM("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), PFI_FIELD_TENSOR_ACTIVE, 1},
    {DCGM("DCGM_FI_PROF_DRAM_ACTIVE"), PFI_FIELD_DRAM_ACTIVE, 1},
    {DCGM("DCGM_FI_DEV_MEM_COPY_UTIL"), PFI_FIELD_MEM_COPY_UTIL, 1},
    {DCGM("DCGM_FI_PROF_NVLINK_TX_BYTES"), PFI_FIELD_NVLINK_TX, 1},
    {DCGM("DCGM_FI_PROF_NVLINK_RX_BYTES"), PFI_FIELD_NVLINK_RX, 1},
    {DCGM("DCGM_FI_PROF_PCIE_TX_BYTES"), PFI_FIELD_PCIE_TX, 1},
    {DCGM("DCGM_FI_PROF_PCIE_RX_BYTES"), PFI_FIELD_PCIE_RX, 1},
    /* The pre-profiling PCIe counters report KB/s. */
    {DCGM("DCGM_FI_DEV_PCIE_TX_THROUGHPUT"), PFI_FIELD_PCIE_TX, 1024},
    {DCGM("DCGM_FI_DEV_PCIE_RX_THROUGHPUT"), PFI_FIELD_PCIE_RX, 1024},
    {DCGM("DCGM_FI_DEV_FB_USED"), PFI_FIELD_FB_USED, 1},
    {DCGM("DCGM_FI_DEV_GPU_TEMP"), PFI_FIELD_TEMP, 1},
    /* Cumulative time throttled by the power cap, in microseconds. */
    {DCGM("DCGM_FI_DEV_POWER_VIOLATION"), PFI_FIELD_THROTTLE_POWER, 1e-6},
};

#undef DCGM

int pfi_prom_field(const char *metric, size_t len, double *scale) {
  /* Every name starts "DCGM_FI_": other metrics are ruled out at once. */
  if (len < 8 || memcmp(metric, "DCGM_FI_", 8) != 0)
    return -1;
  for (size_t i = 0; i < sizeof dcgm_map / sizeof dcgm_map[0]; i++)
    if (dcgm_map[i].len == len &&
        memcmp(dcgm_map[i].name + 8, metric + 8, len - 8) == 0) {
      if (scale)
        *scale = dcgm_map[i].scale;
      return (int)dcgm_map[i].field;
    }
  return -1;
}

struct gpuset {
  struct pfi_prom_gpu *v;
  size_t n, cap;
  size_t last; /* the GPU of the previous line: most lines repeat it */
  /* Open-addressing hash of (host, gpu) -> index + 1 into v (0: empty),
   * hcap a power of two at least twice n: a scrape of many hosts costs a
   * hash probe per line, not a scan of every GPU seen so far. None (hcap
   * 0) while there are GPUSET_SCAN records or fewer: those are scanned. */
  size_t *h, hcap;
};

/* GPU records looked for by a scan up to this many, by the hash beyond. */
#define GPUSET_SCAN 8

static size_t gpu_hash(const char *host, int gpu) {
  uint64_t x = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)host; *c; c++)
    x = (x ^ *c) * 1099511628211ull;
  x = (x ^ (uint64_t)(unsigned)gpu) * 1099511628211ull;
  return (size_t)(x ^ (x >> 29));
}

static int gpuset_rehash(struct gpuset *gs, size_t ncap) {
  size_t *nh = calloc(ncap, sizeof *nh);
  if (!nh)
    return -1;
  for (size_t i = 0; i < gs->n; i++) {
    size_t k = gpu_hash(gs->v[i].host, gs->v[i].gpu) & (ncap - 1);
    while (nh[k])
      k = (k + 1) & (ncap - 1);
    nh[k] = i + 1;
  }
  free(gs->h);
  gs->h = nh;
  gs->hcap = ncap;
  return 0;
}

/* Character classes of metric and label names: bit 1 may start a name,
 * bit 2 may continue one. A table: the tokenizer tests every byte. */
static const unsigned char name_class[256] = {['0' ... '9'] = 2,
                                              ['a' ... 'z'] = 3,
                                              ['A' ... 'Z'] = 3,
                                              ['_'] = 3,
                                              [':'] = 3};
static const unsigned char quote_or_escape[256] = {['"'] = 1, ['\\'] = 1};
static int is_name_start(int c) { return name_class[c & 0xff] & 1; }

/* The first byte of [p, e) that may be '"' or '\\', or a byte shortly
 * before it: whole 8-byte words holding neither are skipped (a zero byte
 * of x ^ "\"\"..." or x ^ "\\\\..." marks one). */
static const char *skip_plain(const char *p, const char *e) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (e - p >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t a = x ^ (ones * '"'), b = x ^ (ones * '\\');
    if (((a - ones) & ~a & highs) | ((b - ones) & ~b & highs))
      break;
    p += 8;
  }
  return p;
}
static int is_name_char(int c) { return name_class[c & 0xff] & 2; }

static void bad(struct pfi_prom_stats *st, long line, long col,
                const char *msg) {
  st->malformed++;
  if (st->nbad < PFI_PROM_BAD_MAX) {
    st->bad[st->nbad].line = line;
    st->bad[st->nbad].column = col;
    snprintf(st->bad[st->nbad].msg, sizeof st->bad[st->nbad].msg, "%s", msg);
    st->nbad++;
  }
}

/* Parses a float token [p, e) the way Prometheus writes them: 0, -1 not a
 * number, -2 a number beyond the largest double ("1e999": not the reading
 * it claims, and not "+Inf", which is written so). */
static int parse_value(const char *p, const char *e, double *out) {
  char buf[64];
  size_t n = (size_t)(e - p);
  /* Plain decimals (nearly every value an exporter writes) exactly, in
   * place; the rest as before. */
  if (pfi_scan_decimal_n(p, n, out))
    return isfinite(*out) ? 0 : -2;
  if (n == 0 || n >= sizeof buf)
    return -1;
  memcpy(buf, p, n);
  buf[n] = 0;
  if (strcmp(buf, "NaN") == 0) {
    *out = NAN;
    return 0;
  }
  if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "Inf") == 0) {
    *out = INFINITY;
    return 0;
  }
  if (strcmp(buf, "-Inf") == 0) {
    *out = -INFINITY;
    return 0;
  }
  /* strtod would accept "nan(...)", "infinity" and hex; the format
   * does not. */
  for (size_t i = 0; i < n; i++) {
    char c = buf[i];
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' ||
          c == '+' || c == '-'))
      return -1;
  }
  char *end;
  *out = strtod(buf, &end);
  if (*end)
    return -1;
  return isfinite(*out) ? 0 : -2;
}

struct labels {
  char host[128];
  /* UUID and modelName as spans of the line, copied only where a GPU
   * record takes them (the first line that has them). */
  const char *uuid, *uuid_end, *model, *model_end;
  int gpu;
  int has_gpu;
};

/* Copies an unescaped label value into dst (truncated to n). */
static void copy_unescaped(char *dst, size_t n, const char *p, const char *e) {
  size_t k = 0;
  if (n && !memchr(p, '\\', (size_t)(e - p))) {
    /* No escape (nearly every value): a copy. */
    k = (size_t)(e - p) < n - 1 ? (size_t)(e - p) : n - 1;
    memcpy(dst, p, k);
    dst[k] = 0;
    return;
  }
  while (p < e && k + 1 < n) {
    char c = *p++;
    if (c == '\\' && p < e) {
      c = *p++;
      if (c == 'n')
        c = '\n';
    }
    dst[k++] = c;
  }
  dst[k] = 0;
}

/* Parses `{...}` starting at *pp (which points at '{'). Returns 0 or -1
 * with *msg and *pp at the fault. */
static int parse_labels(const char **pp, const char *e, struct labels *lb,
                        const char **msg) {
  const char *p = *pp + 1;
  for (;;) {
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (p < e && *p == '}') {
      *pp = p + 1;
      return 0;
    }
    const char *ns = p;
    if (p >= e || !is_name_start((unsigned char)*p)) {
      *msg = "expected a label name or '}'";
      goto fail;
    }
    while (p < e && is_name_char((unsigned char)*p))
      p++;
    size_t nlen = (size_t)(p - ns);
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (p >= e || *p != '=') {
      *msg = "expected '=' after the label name";
      goto fail;
    }
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (p >= e || *p != '"') {
      *msg = "expected a quoted label value";
      goto fail;
    }
    const char *vs = ++p;
    /* To the closing quote or the first escape, eight bytes at a time
     * (a word with neither byte is skipped whole), then by a table; a
     * value with escapes is then walked. */
    p = skip_plain(p, e);
    while (p < e && !quote_or_escape[(unsigned char)*p])
      p++;
    while (p < e && *p != '"') {
      if (*p == '\\') {
        if (p + 1 >= e) {
          p++;
          break;
        }
        char c = p[1];
        if (c != '\\' && c != '"' && c != 'n') {
          *msg = "bad escape in a label value";
          goto fail;
        }
        p += 2;
        continue;
      }
      p++;
    }
    if (p >= e) {
      *msg = "unterminated label value";
      goto fail;
    }
    const char *ve = p++;
#define LABEL_IS(s) (nlen == sizeof(s) - 1 && memcmp(ns, s, nlen) == 0)
    if (LABEL_IS("gpu") && ve - vs >= 1 && ve - vs <= 6 &&
        !memchr(vs, '\\', (size_t)(ve - vs))) {
      /* Plain digits (the exporter's index), as strtol reads them. */
      long g = 0;
      const char *d = vs;
      while (d < ve && *d >= '0' && *d <= '9')
        g = g * 10 + (*d++ - '0');
      if (d == ve) {
        lb->gpu = (int)g;
        lb->has_gpu = 1;
      } else {
        char tmp[16];
        copy_unescaped(tmp, sizeof tmp, vs, ve);
        char *end;
        g = strtol(tmp, &end, 10);
        if (*tmp && *end == 0 && g >= 0 && g < 1000000 && ve - vs < 15) {
          lb->gpu = (int)g;
          lb->has_gpu = 1;
        }
      }
    } else if (LABEL_IS("gpu")) {
      char tmp[16];
      copy_unescaped(tmp, sizeof tmp, vs, ve);
      char *end;
      long g = strtol(tmp, &end, 10);
      if (*tmp && *end == 0 && g >= 0 && g < 1000000 && ve - vs < 15) {
        lb->gpu = (int)g;
        lb->has_gpu = 1;
      }
    } else if (LABEL_IS("Hostname") || LABEL_IS("hostname")) {
      copy_unescaped(lb->host, sizeof lb->host, vs, ve);
    } else if (LABEL_IS("UUID")) {
      lb->uuid = vs;
      lb->uuid_end = ve;
    } else if (LABEL_IS("modelName")) {
      lb->model = vs;
      lb->model_end = ve;
    }
#undef LABEL_IS
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    if (p < e && *p == ',') {
      p++;
      continue;
    }
    if (p < e && *p == '}') {
      *pp = p + 1;
      return 0;
    }
    *msg = "expected ',' or '}' after a label";
    goto fail;
  }
fail:
  *pp = p;
  return -1;
}

/* Recent label sets and what they parsed to. */
#define LSET_CACHE 16 /* a power of two: the GPUs of a node and more */
struct lset {
  const char *text; /* the set, '{' to '}' */
  size_t len;
  struct labels lb;
  long slot; /* the GPU record the set resolved to, -1 before it has */
};

static struct pfi_prom_gpu *gpu_slot(struct gpuset *gs,
                                     const struct labels *lb) {
  if (gs->n && gs->last < gs->n) {
    struct pfi_prom_gpu *g = &gs->v[gs->last];
    if (g->gpu == lb->gpu && strcmp(g->host, lb->host) == 0)
      return g;
  }
  size_t k = 0;
  if (!gs->hcap) {
    /* A few GPUs (a node's) are looked for in turn; the hash is built
     * once there are more. */
    for (size_t i = 0; i < gs->n; i++)
      if (gs->v[i].gpu == lb->gpu && strcmp(gs->v[i].host, lb->host) == 0) {
        gs->last = i;
        return &gs->v[i];
      }
  } else {
    k = gpu_hash(lb->host, lb->gpu) & (gs->hcap - 1);
    for (; gs->h[k]; k = (k + 1) & (gs->hcap - 1)) {
      size_t i = gs->h[k] - 1;
      if (gs->v[i].gpu == lb->gpu && strcmp(gs->v[i].host, lb->host) == 0) {
        gs->last = i;
        return &gs->v[i];
      }
    }
  }
  if (gs->n >= GPUSET_SCAN && 2 * (gs->n + 1) > gs->hcap) {
    if (gpuset_rehash(gs, gs->hcap ? 2 * gs->hcap : 4 * GPUSET_SCAN) < 0)
      return NULL;
    k = gpu_hash(lb->host, lb->gpu) & (gs->hcap - 1);
    while (gs->h[k])
      k = (k + 1) & (gs->hcap - 1);
  }
  if (gs->n == gs->cap) {
    size_t nc = gs->cap ? 2 * gs->cap : 8;
    struct pfi_prom_gpu *nv = realloc(gs->v, nc * sizeof *nv);
    if (!nv)
      return NULL;
    gs->v = nv;
    gs->cap = nc;
  }
  struct pfi_prom_gpu *g = &gs->v[gs->n];
  memset(g, 0, sizeof *g);
  /* lb->host is NUL-terminated within its buffer, no longer than ours. */
  size_t hl = strnlen(lb->host, sizeof g->host - 1);
  memcpy(g->host, lb->host, hl);
  g->host[hl] = '\0';
  g->gpu = lb->gpu;
  g->order = (long)gs->n;
  if (gs->hcap)
    gs->h[k] = gs->n + 1;
  gs->last = gs->n++;
  return g;
}

static int cmp_gpu(const void *a, const void *b) {
  const struct pfi_prom_gpu *x = a, *y = b;
  int c = strcmp(x->host, y->host);
  if (c)
    return c;
  return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

int pfi_prom_parse(const char *name, const char *text, size_t len,
                   struct pfi_prom_gpu **gpus, struct pfi_prom_stats *stats,
                   struct pfi_error *err) {
  struct pfi_prom_stats local;
  struct pfi_prom_stats *st = stats ? stats : &local;
  struct gpuset gs = {0};
  int rc = 0;
  /* The counters only: bad[] past nbad is never read, and clearing its
   * 2 kB would cost more than parsing a small scrape's comment lines. */
  memset(st, 0, offsetof(struct pfi_prom_stats, bad));
  *gpus = NULL;
  const char *p = text, *end = text + len;
  const char *nul_at = memchr(text, '\0', len);
  struct lset cache[LSET_CACHE];
  int ncache = 0; /* sets cached (the ring's write position) */
  long line = 0;
  while (p < end) {
    const char *ls = p;
    const char *le = memchr(p, '\n', (size_t)(end - p));
    if (!le)
      le = end;
    p = le < end ? le + 1 : end;
    line++;
    st->lines++;
    /* The first NUL of the text is looked for once; it is in this line
     * when it lies before the line's end. */
    const char *nul = nul_at && nul_at < le ? nul_at : NULL;
    if (nul) {
      rc = pfi_error_setloc(err, PFI_EPARSE, name, line, (long)(nul - ls) + 1,
                            "NUL byte: not Prometheus text");
      goto out;
    }
    const char *e = le;
    if (e > ls && e[-1] == '\r')
      e--;
    const char *q = ls;
    while (q < e && (*q == ' ' || *q == '\t'))
      q++;
    if (q == e || *q == '#')
      continue;
    /* metric name */
    if (!is_name_start((unsigned char)*q)) {
      bad(st, line, (long)(q - ls) + 1, "expected a metric name");
      continue;
    }
    const char *ms = q;
    while (q < e && is_name_char((unsigned char)*q))
      q++;
    size_t mlen = (size_t)(q - ms);
    struct labels lb; /* what the fields need, not the whole host buffer */
    lb.host[0] = '\0';
    lb.uuid = lb.uuid_end = lb.model = lb.model_end = NULL;
    lb.gpu = -1;
    lb.has_gpu = 0;
    struct lset *set = NULL; /* the cache entry of this line's set */
    if (q < e && *q == '{') {
      /* An exporter repeats each GPU's label set on every metric: a set
       * byte for byte the same as a recent one parses the same (the
       * parse reads nothing past its '}'), so its result is reused. */
      int hit = 0;
      for (int k = 0; k < LSET_CACHE && !hit; k++) {
        struct lset *c = &cache[(ncache - 1 - k) & (LSET_CACHE - 1)];
        if (k < ncache && c->len <= (size_t)(e - q) &&
            memcmp(q, c->text, c->len) == 0) {
          lb = c->lb;
          q += c->len;
          hit = 1;
          set = c;
        }
      }
      if (!hit) {
        const char *msg = NULL, *q0 = q;
        if (parse_labels(&q, e, &lb, &msg) < 0) {
          bad(st, line, (long)(q - ls) + 1, msg);
          continue;
        }
        struct lset *c = &cache[ncache & (LSET_CACHE - 1)];
        c->text = q0;
        c->len = (size_t)(q - q0);
        c->lb = lb;
        c->slot = -1;
        set = c;
        ncache++;
      }
    }
    if (q >= e || (*q != ' ' && *q != '\t')) {
      bad(st, line, (long)(q - ls) + 1, "expected a space before the value");
      continue;
    }
    while (q < e && (*q == ' ' || *q == '\t'))
      q++;
    const char *vs = q;
    while (q < e && *q != ' ' && *q != '\t')
      q++;
    double v;
    int pv = parse_value(vs, q, &v);
    if (pv < 0) {
      bad(st, line, (long)(vs - ls) + 1,
          pv == -2 ? "value is beyond the range of a double"
                   : "value is not a number");
      continue;
    }
    while (q < e && (*q == ' ' || *q == '\t'))
      q++;
    double ts_s = NAN;
    if (q < e) {
      const char *ts = q;
      while (q < e && *q != ' ' && *q != '\t')
        q++;
      double tsv;
      int ok = parse_value(ts, q, &tsv) == 0 && isfinite(tsv);
      while (q < e && (*q == ' ' || *q == '\t'))
        q++;
      if (!ok || q < e) {
        bad(st, line, (long)(ts - ls) + 1,
            ok ? "trailing text after the timestamp"
               : "timestamp is not a number");
        continue;
      }
      ts_s = tsv / 1000.0; /* Prometheus timestamps are milliseconds */
    }
    st->samples++;
    double scale = 1;
    int f = pfi_prom_field(ms, mlen, &scale);
    if (f < 0) {
      st->unknown++;
      continue;
    }
    st->mapped++;
    if (!lb.has_gpu) {
      st->nogpu++;
      continue;
    }
    /* A set seen before resolves to the same record (records are only
     * appended while parsing): no hash of the host name again. */
    struct pfi_prom_gpu *g =
        set && set->slot >= 0 ? &gs.v[set->slot] : gpu_slot(&gs, &lb);
    if (!g) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    if (set)
      set->slot = g - gs.v;
    if (!g->uuid[0] && lb.uuid)
      copy_unescaped(g->uuid, sizeof g->uuid, lb.uuid, lb.uuid_end);
    if (!g->model[0] && lb.model)
      copy_unescaped(g->model, sizeof g->model, lb.model, lb.model_end);
    if (isfinite(ts_s) && ts_s > g->s.t_s)
      g->s.t_s = ts_s;
    /* NaN or infinite readings are "not valid", as DCGM's blank values. */
    if (isfinite(v)) {
      g->s.v[f] = v * scale;
      g->s.valid |= 1u << f;
      if (f == PFI_FIELD_POWER && v >= 0 && v < 4.0e6)
        g->s.power_mw = (uint32_t)llround(v * 1000.0);
      if (f == PFI_FIELD_ENERGY && v >= 0 && v < 1.8e19)
        g->s.energy_mj = (uint64_t)v;
    }
  }
  if (gs.n > 1)
    qsort(gs.v, gs.n, sizeof *gs.v, cmp_gpu);
  *gpus = gs.v;
  gs.v = NULL;
  rc = (int)gs.n;
out:
  free(gs.v);
  free(gs.h);
  return rc;
}

int pfi_prom_bad_error(const struct pfi_prom_stats *stats, int i,
                       const char *name, struct pfi_error *err) {
  if (i < 0 || i >= stats->nbad)
    return pfi_error_set(err, PFI_EINVAL, "no malformed line %d", i);
  return pfi_error_setloc(err, PFI_EPARSE, name, stats->bad[i].line,
                          stats->bad[i].column, "%s", stats->bad[i].msg);
}

struct body {
  char *p;
  size_t n, cap;
  int overflow;
};

/* A scrape of a node is tens of kB; 64 MiB bounds a broken endpoint. */
#define BODY_MAX (64u << 20)

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg) {
  struct body *b = arg;
  size_t n = size * nmemb;
  if (b->n + n + 1 > BODY_MAX) {
    b->overflow = 1;
    return 0;
  }
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 65536;
    while (nc < b->n + n + 1)
      nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np)
      return 0;
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->n, ptr, n);
  b->n += n;
  b->p[b->n] = 0;
  return n;
}

int pfi_prom_scrape(const char *url, double timeout_s,
                    struct pfi_prom_gpu **gpus, struct pfi_prom_stats *stats,
                    struct pfi_error *err) {
  struct body b = {0};
  char ebuf[CURL_ERROR_SIZE] = "";
  int rc;
  *gpus = NULL;
  CURL *c = pfi__curl_easy_init();
  if (!c)
    return pfi__curl_error()
               ? pfi_error_set(err, PFI_EIO, "%s: %s", url, pfi__curl_error())
               : pfi_error_set(err, PFI_ENOMEM, "cannot start libcurl");
  pfi__curl_setopt_ptr(c, CURLOPT_URL, url);
  pfi__curl_setopt_write(c, CURLOPT_WRITEFUNCTION, on_data);
  pfi__curl_setopt_ptr(c, CURLOPT_WRITEDATA, &b);
  pfi__curl_setopt_ptr(c, CURLOPT_ERRORBUFFER, ebuf);
  pfi__curl_setopt_long(c, CURLOPT_NOSIGNAL, 1L);
  pfi__curl_setopt_long(c, CURLOPT_FAILONERROR, 1L);
  pfi__curl_setopt_ptr(c, CURLOPT_PROTOCOLS_STR, "http,https");
  long ms = timeout_s > 0 ? (long)(timeout_s * 1000) : 5000;
  pfi__curl_setopt_long(c, CURLOPT_TIMEOUT_MS, (long)ms);
  pfi__curl_setopt_long(c, CURLOPT_CONNECTTIMEOUT_MS, (long)ms);
  CURLcode cc = pfi__curl_easy_perform(c);
  if (cc != CURLE_OK) {
    rc = pfi_error_set(err, PFI_EIO, "%s: %s", url,
                       b.overflow ? "response larger than 64 MiB"
                       : ebuf[0]  ? ebuf
                                  : pfi__curl_easy_strerror(cc));
    goto out;
  }
  rc = pfi_prom_parse(url, b.p ? b.p : "", b.n, gpus, stats, err);
out:
  pfi__curl_easy_cleanup(c);
  free(b.p);
  return rc;
}
