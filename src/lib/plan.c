/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/plan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"

void pfi_plan_init(struct pfi_plan *p) {
  memset(p, 0, sizeof *p);
  p->cut = NAN;
}

void pfi_plan_release(struct pfi_plan *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->n; i++) {
    free(p->j[i].job);
    free(p->j[i].gpu_ids);
  }
  free(p->j);
  free(p->strategy);
  free(p->objective);
  free(p->unit);
  free(p->source);
  pfi_plan_init(p);
}

int pfi_plan_add(struct pfi_plan *p, const struct pfi_plan_job *job,
                 struct pfi_error *err) {
  if (p->n == p->cap) {
    size_t nc = p->cap ? 2 * p->cap : 16;
    struct pfi_plan_job *nj = realloc(p->j, nc * sizeof *nj);
    if (!nj)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    p->j = nj;
    p->cap = nc;
  }
  struct pfi_plan_job *d = &p->j[p->n];
  *d = *job;
  d->job = strdup(job->job ? job->job : "");
  d->gpu_ids = NULL;
  if (job->ngpu) {
    d->gpu_ids = malloc(job->ngpu * sizeof *d->gpu_ids);
    if (d->gpu_ids)
      memcpy(d->gpu_ids, job->gpu_ids, job->ngpu * sizeof *d->gpu_ids);
  }
  if (!d->job || (job->ngpu && !d->gpu_ids)) {
    free(d->job);
    free(d->gpu_ids);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  p->n++;
  return 0;
}

/* One decimal index of at most PFI_PLAN_MAX_GPU; advances *s. */
static int parse_index(const char **s, unsigned *out) {
  const char *q = *s;
  unsigned long v = 0;
  if (*q < '0' || *q > '9')
    return -1;
  while (*q >= '0' && *q <= '9') {
    v = v * 10 + (unsigned long)(*q - '0');
    if (v > PFI_PLAN_MAX_GPU)
      return -1;
    q++;
  }
  *s = q;
  *out = (unsigned)v;
  return 0;
}

int pfi_plan_parse_gpus(const char *s, unsigned **ids, size_t *n,
                        struct pfi_error *err) {
  *ids = NULL;
  *n = 0;
  size_t cap = 0;
  unsigned *v = NULL;
  unsigned char seen[PFI_PLAN_MAX_GPU / 8 + 1];
  memset(seen, 0, sizeof seen);
  const char *q = s ? s : "";
  while (*q == ' ')
    q++;
  if (!*q)
    return 0;
  for (;;) {
    const char *tok = q;
    unsigned a, b;
    if (parse_index(&q, &a) < 0)
      goto bad;
    b = a;
    if (*q == '-') {
      q++;
      if (parse_index(&q, &b) < 0 || b < a)
        goto bad;
    }
    for (unsigned g = a;; g++) {
      /* Seen before: a bit per index (a list scan made a long range
       * quadratic: 7-40040 took seconds). */
      if (seen[g / 8] & (1u << (g % 8))) {
        free(v);
        *n = 0;
        return pfi_error_set(err, PFI_EINVAL, "GPU %u is named twice", g);
      }
      seen[g / 8] |= (unsigned char)(1u << (g % 8));
      if (*n == cap) {
        size_t nc = cap ? 2 * cap : 8;
        unsigned *nv = realloc(v, nc * sizeof *nv);
        if (!nv) {
          free(v);
          *n = 0;
          return pfi_error_set(err, PFI_ENOMEM, "out of memory");
        }
        v = nv;
        cap = nc;
      }
      v[(*n)++] = g;
      if (g == b)
        break;
    }
    while (*q == ' ')
      q++;
    if (!*q)
      break;
    if (*q != ';')
      goto bad;
    q++;
    (void)tok;
  }
  *ids = v;
  return 0;
bad:
  free(v);
  *n = 0;
  return pfi_error_set(
      err, PFI_EINVAL,
      "'%s' is not a GPU list (indices 0..%d separated by ';', "
      "ranges like 4-7)",
      s, PFI_PLAN_MAX_GPU);
}

/* The optional number in cell (r, c): NAN when absent or empty. */
static int opt_num(const struct pfi_table *t, size_t r, int c, const char *what,
                   double *out, struct pfi_error *err) {
  *out = NAN;
  if (c < 0)
    return 0;
  const char *s = pfi_table_cell(t, r, (size_t)c);
  if (!s || !*s)
    return 0;
  int rc = pfi_table_double(t, r, (size_t)c, out, err);
  if (rc < 0)
    return rc;
  (void)what;
  return 0;
}

static long cell_col(const struct pfi_table *t, size_t r, int c) {
  long col = c >= 0 ? t->col[r * t->ncols + (size_t)c] : 0;
  return col > 0 ? col : 1;
}

/* Whether GPU g is named by a job before index `upto` of p. */
static long gpu_owner(const struct pfi_plan *p, size_t upto, unsigned g) {
  for (size_t i = 0; i < upto && i < p->n; i++)
    for (size_t k = 0; k < p->j[i].ngpu; k++)
      if (p->j[i].gpu_ids[k] == g)
        return (long)i;
  return -1;
}

static int read_table(struct pfi_plan *p, struct pfi_table *t,
                      struct pfi_error *err) {
  int cj = pfi_table_find(t, "job"), cc = pfi_table_find(t, "cap_w");
  if (cj < 0 || cc < 0)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, 1, 1,
                            "missing column '%s'", cj < 0 ? "job" : "cap_w");
  int cg = pfi_table_find(t, "gpu_ids"), cn = pfi_table_find(t, "gpus");
  int cp = pfi_table_find(t, "power_w"), ct = pfi_table_find(t, "tokens_per_s");
  int cup = pfi_table_find(t, "uncapped_power_w"),
      cut = pfi_table_find(t, "uncapped_tokens_per_s"),
      cr = pfi_table_find(t, "retained"), cs = pfi_table_find(t, "strategy"),
      ccut = pfi_table_find(t, "cut"), cu = pfi_table_find(t, "unit"),
      co = pfi_table_find(t, "objective");
  p->source = strdup(t->name);
  if (!p->source)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (t->nrows == 0)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, 2, 1, "no plan rows");
  for (size_t r = 0; r < t->nrows; r++) {
    struct pfi_plan_job j;
    memset(&j, 0, sizeof j);
    j.line = t->line[r];
    const char *job = pfi_table_cell(t, r, (size_t)cj);
    if (!job || !*job)
      return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r],
                              cell_col(t, r, cj), "field 'job': empty");
    for (size_t i = 0; i < p->n; i++)
      if (strcmp(p->j[i].job, job) == 0)
        return pfi_error_setloc(
            err, PFI_EPARSE, t->name, t->line[r], cell_col(t, r, cj),
            "field 'job': '%s' is planned twice (line %ld)", job, p->j[i].line);
    j.job = (char *)job;
    int rc = pfi_table_double(t, r, (size_t)cc, &j.cap_w, err);
    if (rc < 0)
      return rc;
    if (!(j.cap_w > 0) || j.cap_w > 10000)
      return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r],
                              cell_col(t, r, cc),
                              "field 'cap_w': must be a power in watts "
                              "(0 < W <= 10000), got %g",
                              j.cap_w);
    double g = NAN;
    if ((rc = opt_num(t, r, cn, "gpus", &g, err)) < 0)
      return rc;
    if (!isnan(g)) {
      if (g < 1 || g > 1e6 || g != floor(g))
        return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r],
                                cell_col(t, r, cn),
                                "field 'gpus': must be a positive integer, "
                                "got %g",
                                g);
      j.gpus = (int)g;
    }
    static const char *const nm[] = {"power_w", "tokens_per_s",
                                     "uncapped_power_w",
                                     "uncapped_tokens_per_s", "retained"};
    const int ci[] = {cp, ct, cup, cut, cr};
    double *dst[] = {&j.power_w, &j.tokens, &j.uncapped_power_w,
                     &j.uncapped_tokens, &j.retained};
    for (int k = 0; k < 5; k++)
      if ((rc = opt_num(t, r, ci[k], nm[k], dst[k], err)) < 0)
        return rc;
    struct pfi_error ge;
    const char *gs = cg >= 0 ? pfi_table_cell(t, r, (size_t)cg) : NULL;
    if (gs && pfi_plan_parse_gpus(gs, &j.gpu_ids, &j.ngpu, &ge) < 0)
      return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r],
                              cell_col(t, r, cg), "field 'gpu_ids': %s",
                              ge.msg);
    for (size_t k = 0; k < j.ngpu; k++) {
      long o = gpu_owner(p, p->n, j.gpu_ids[k]);
      if (o >= 0) {
        unsigned g = j.gpu_ids[k];
        free(j.gpu_ids);
        return pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r],
                                cell_col(t, r, cg),
                                "field 'gpu_ids': GPU %u is also planned for "
                                "job '%s' (line %ld)",
                                g, p->j[o].job, p->j[o].line);
      }
    }
    if (j.ngpu && j.gpus && (size_t)j.gpus != j.ngpu) {
      free(j.gpu_ids);
      return pfi_error_setloc(
          err, PFI_EPARSE, t->name, t->line[r], cell_col(t, r, cg),
          "field 'gpu_ids': %zu GPUs for a job of %d", j.ngpu, j.gpus);
    }
    rc = pfi_plan_add(p, &j, err);
    free(j.gpu_ids);
    if (rc < 0)
      return rc;
    if (r == 0) {
      const char *s = cs >= 0 ? pfi_table_cell(t, r, (size_t)cs) : NULL;
      const char *u = cu >= 0 ? pfi_table_cell(t, r, (size_t)cu) : NULL;
      const char *ob = co >= 0 ? pfi_table_cell(t, r, (size_t)co) : NULL;
      if ((s && *s && !(p->strategy = strdup(s))) ||
          (ob && *ob && !(p->objective = strdup(ob))) ||
          (u && *u && !(p->unit = strdup(u))))
        return pfi_error_set(err, PFI_ENOMEM, "out of memory");
      if ((rc = opt_num(t, r, ccut, "cut", &p->cut, err)) < 0)
        return rc;
    }
  }
  return 0;
}

int pfi_plan_read_mem(struct pfi_plan *p, const char *name, const char *data,
                      size_t len, struct pfi_error *err) {
  pfi_plan_init(p);
  struct pfi_table t;
  int rc = pfi_table_load_mem(&t, name, data, len, err);
  if (rc < 0)
    return rc;
  rc = read_table(p, &t, err);
  pfi_table_release(&t);
  if (rc < 0)
    pfi_plan_release(p);
  return rc;
}

int pfi_plan_read(struct pfi_plan *p, const char *path, struct pfi_error *err) {
  pfi_plan_init(p);
  struct pfi_table t;
  int rc = pfi_table_load(&t, path, err);
  if (rc < 0)
    return rc;
  rc = read_table(p, &t, err);
  pfi_table_release(&t);
  if (rc < 0)
    pfi_plan_release(p);
  return rc;
}

int pfi_plan_assign_gpus(struct pfi_plan *p, const char *map_path,
                         struct pfi_error *err) {
  struct pfi_table t;
  int rc = pfi_table_load(&t, map_path, err);
  if (rc < 0)
    return rc;
  int cj = pfi_table_find(&t, "job"), cg = pfi_table_find(&t, "gpu_ids");
  if (cj < 0 || cg < 0) {
    rc = pfi_error_setloc(err, PFI_EPARSE, t.name, 1, 1, "missing column '%s'",
                          cj < 0 ? "job" : "gpu_ids");
    goto out;
  }
  for (size_t i = 0; i < p->n; i++) {
    free(p->j[i].gpu_ids);
    p->j[i].gpu_ids = NULL;
    p->j[i].ngpu = 0;
  }
  for (size_t r = 0; r < t.nrows; r++) {
    const char *job = pfi_table_cell(&t, r, (size_t)cj);
    const char *gs = pfi_table_cell(&t, r, (size_t)cg);
    size_t i;
    for (i = 0; i < p->n; i++)
      if (job && strcmp(p->j[i].job, job) == 0)
        break;
    if (i == p->n)
      continue;
    struct pfi_plan_job *j = &p->j[i];
    if (j->ngpu) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r],
                            cell_col(&t, r, cj),
                            "field 'job': '%s' is mapped twice", job);
      goto out;
    }
    struct pfi_error ge;
    unsigned *ids;
    size_t n;
    if (pfi_plan_parse_gpus(gs ? gs : "", &ids, &n, &ge) < 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r],
                            cell_col(&t, r, cg), "field 'gpu_ids': %s", ge.msg);
      goto out;
    }
    /* A job the plan caps must have GPUs to cap: an empty list would plan
     * it and change nothing. */
    if (n == 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r],
                            cell_col(&t, r, cg),
                            "field 'gpu_ids': empty: job '%s' needs its GPUs",
                            job);
      goto out;
    }
    for (size_t k = 0; k < n; k++) {
      long o = gpu_owner(p, p->n, ids[k]);
      if (o >= 0) {
        rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r],
                              cell_col(&t, r, cg),
                              "field 'gpu_ids': GPU %u is also mapped to job "
                              "'%s'",
                              ids[k], p->j[o].job);
        free(ids);
        goto out;
      }
    }
    if (n && j->gpus && (size_t)j->gpus != n) {
      rc = pfi_error_setloc(
          err, PFI_EPARSE, t.name, t.line[r], cell_col(&t, r, cg),
          "field 'gpu_ids': %zu GPUs for job '%s' of %d", n, job, j->gpus);
      free(ids);
      goto out;
    }
    j->gpu_ids = ids;
    j->ngpu = n;
    if (!j->gpus)
      j->gpus = (int)n;
  }
out:
  pfi_table_release(&t);
  return rc;
}

/* A CSV field: quoted when it holds a comma, quote or line break. */
static void put_field(FILE *fp, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, fp);
    return;
  }
  fputc('"', fp);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', fp);
    fputc(*s, fp);
  }
  fputc('"', fp);
}

static void put_num(FILE *fp, double v) {
  if (isfinite(v))
    fprintf(fp, ",%.10g", v);
  else
    fputs(",", fp);
}

int pfi_plan_write(const struct pfi_plan *p, const char *path,
                   struct pfi_error *err) {
  if (!path || strcmp(path, "-") == 0)
    return pfi_error_set(err, PFI_EINVAL, "--plan: needs a file name");
  FILE *fp = fopen(path, "w");
  if (!fp)
    return pfi_error_set(err, PFI_EIO, "%s: cannot create: %s", path,
                         strerror(errno));
  fputs("job,gpus,gpu_ids,cap_w,power_w,tokens_per_s,uncapped_power_w,"
        "uncapped_tokens_per_s,retained,strategy,cut,unit,objective\n",
        fp);
  for (size_t i = 0; i < p->n; i++) {
    const struct pfi_plan_job *j = &p->j[i];
    put_field(fp, j->job);
    if (j->gpus)
      fprintf(fp, ",%d,", j->gpus);
    else
      fputs(",,", fp);
    for (size_t k = 0; k < j->ngpu; k++)
      fprintf(fp, "%s%u", k ? ";" : "", j->gpu_ids[k]);
    put_num(fp, j->cap_w);
    put_num(fp, j->power_w);
    put_num(fp, j->tokens);
    put_num(fp, j->uncapped_power_w);
    put_num(fp, j->uncapped_tokens);
    put_num(fp, j->retained);
    fputc(',', fp);
    put_field(fp, p->strategy ? p->strategy : "");
    put_num(fp, p->cut);
    fputc(',', fp);
    put_field(fp, p->unit ? p->unit : "");
    fputc(',', fp);
    put_field(fp, p->objective ? p->objective : "");
    fputc('\n', fp);
  }
  int bad = ferror(fp);
  if (fclose(fp) != 0 || bad)
    return pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  return 0;
}
