/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A job set: curves joined with features, true PFI, provenance,
 * clusters, allocation inputs, populations (jobset.h); its PFI estimates
 * and model fits are in jobset_fit.c. */
#include "pfi/jobset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/data.h"
#include "pfi/index.h"
#include "pfi/monotone.h"

/* ---- provenance ---------------------------------------------------------- */

const char *pfi_provenance_name(enum pfi_provenance p) {
  switch (p) {
  case PFI_PROV_MEASURED:
    return "measured";
  case PFI_PROV_EMULATED:
    return "emulated";
  case PFI_PROV_PUBLISHED:
    return "published";
  case PFI_PROV_MIXED:
    return "mixed";
  default:
    return "unstated";
  }
}

/* Counts of each kind of cell: emulated, measured, published, other. */
static void prov_count(const struct pfi_table *t, size_t cnt[4]) {
  static const char *const cols[] = {"provenance", "source", "origin", NULL};
  for (size_t k = 0; cols[k]; k++) {
    int c = pfi_table_find(t, cols[k]);
    if (c < 0)
      continue;
    for (size_t r = 0; r < t->nrows; r++) {
      const char *v = pfi_table_cell(t, r, (size_t)c);
      if (v && strstr(v, "emulated"))
        cnt[0]++;
      else if (v && strcasecmp(v, "measured") == 0)
        cnt[1]++;
      else if (v && strcasecmp(v, "published") == 0)
        cnt[2]++;
      else
        cnt[3]++;
    }
  }
}

static enum pfi_provenance prov_of_counts(const size_t cnt[4]) {
  static const enum pfi_provenance kind[3] = {
      PFI_PROV_EMULATED, PFI_PROV_MEASURED, PFI_PROV_PUBLISHED};
  size_t known = 0;
  int which = -1;
  for (int i = 0; i < 3; i++)
    if (cnt[i]) {
      known++;
      which = i;
    }
  if (known == 0)
    return PFI_PROV_UNSTATED;
  if (known == 1 && cnt[3] == 0)
    return kind[which];
  return PFI_PROV_MIXED;
}

enum pfi_provenance pfi_table_provenance(const struct pfi_table *t,
                                         int *any_emulated) {
  size_t cnt[4] = {0};
  prov_count(t, cnt);
  if (any_emulated)
    *any_emulated = cnt[0] > 0;
  return prov_of_counts(cnt);
}

/* Two files together: one that states nothing defers to the other. */
static enum pfi_provenance prov_join(enum pfi_provenance a,
                                     enum pfi_provenance b) {
  if (a == PFI_PROV_UNSTATED)
    return b;
  if (b == PFI_PROV_UNSTATED || a == b)
    return a;
  return PFI_PROV_MIXED;
}

const char *pfi_jobset_provenance(const struct pfi_jobset *js) {
  return pfi_provenance_name(js->prov);
}

/* ---- clusters ------------------------------------------------------------ */

void pfi_clusters_init(struct pfi_clusters *c) {
  c->kind = PFI_CLUSTERS_ARCHTASK;
  c->column = NULL;
}

void pfi_clusters_parse(struct pfi_clusters *c, const char *s) {
  pfi_clusters_init(c);
  if (!s || !*s || strcmp(s, "archtask") == 0)
    return;
  if (strcmp(s, "pooled") == 0) {
    c->kind = PFI_CLUSTERS_POOLED;
    return;
  }
  c->kind = PFI_CLUSTERS_COLUMN;
  c->column = s;
}

const char *pfi_clusters_name(const struct pfi_clusters *c) {
  switch (c->kind) {
  case PFI_CLUSTERS_POOLED:
    return "pooled";
  case PFI_CLUSTERS_COLUMN:
    return c->column ? c->column : "";
  default:
    return "archtask";
  }
}

const char *pfi_clusters_describe(const struct pfi_clusters *c, char *buf,
                                  size_t n) {
  switch (c->kind) {
  case PFI_CLUSTERS_POOLED:
    snprintf(buf, n,
             "pooled: 3 classes, dense pretraining and fine-tuning "
             "pooled");
    break;
  case PFI_CLUSTERS_COLUMN:
    snprintf(buf, n, "column %s", c->column ? c->column : "");
    break;
  default:
    snprintf(buf, n, "archtask: 4 architecture x task clusters");
  }
  return buf;
}

const char *pfi_clusters_of(const struct pfi_clusters *c,
                            const struct pfi_features *f, size_t r,
                            struct pfi_error *err) {
  if (c->kind == PFI_CLUSTERS_COLUMN) {
    if (!c->column || pfi_table_find(&f->t, c->column) < 0) {
      char cols[280];
      pfi_csv_columns((const char *const *)f->t.header, f->t.ncols, cols,
                      sizeof cols);
      pfi_error_set(err, PFI_ENOTFOUND,
                    "features file %s has no column %s; its header has %s",
                    f->t.name, c->column ? c->column : "", cols);
      return NULL;
    }
    const char *s = pfi_features_text(f, r, c->column);
    return s ? s : "";
  }
  return c->kind == PFI_CLUSTERS_POOLED ? pfi_features_cluster(f, r, err)
                                        : pfi_features_archtask(f, r, err);
}

/* ---- loading ------------------------------------------------------------- */

/* Ratio PFI of every curve by the rule `pfi index` prints and the report
 * shows: every point, each with its own noise (standard errors where the
 * curve has them, else js->noise). A curve whose PFI is not defined or
 * not finite has pfi_ok 0. */
static int true_pfi_all(struct pfi_jobset *js, struct pfi_error *err) {
  for (size_t i = 0; i < js->cs.n; i++) {
    struct pfi_index idx;
    struct pfi_error e;
    memset(&idx, 0, sizeof idx);
    js->true_pfi[i] = 0;
    js->pfi_ok[i] = 0;
    js->pfi_why[i] = 0;
    int rc = pfi_index_compute_noise(&js->cs.c[i], PFI_INDEX_RATIO, &js->noise,
                                     &idx, &e);
    if (rc == PFI_ENOMEM)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    if (rc == 0 && idx.pfi_defined && isfinite(idx.pfi)) {
      js->true_pfi[i] = idx.pfi;
      js->pfi_ok[i] = 1;
    } else if (rc == 0) {
      js->pfi_why[i] = idx.undefined_why;
    }
    if (rc == 0)
      pfi_index_release(&idx);
  }
  return 0;
}

int pfi_jobset_set_noise(struct pfi_jobset *js, const struct pfi_noise *n,
                         struct pfi_error *err) {
  js->noise = *n;
  return true_pfi_all(js, err);
}

/* Provenance of the curves file (read again as a table: the curves reader
 * keeps no provenance column). Standard input cannot be read twice: its
 * provenance is unstated. */
static int curves_provenance(struct pfi_jobset *js, const char *cpath,
                             struct pfi_error *err) {
  if (!cpath || strcmp(cpath, "-") == 0)
    return 0;
  struct pfi_table t;
  int rc = pfi_table_load(&t, cpath, err);
  if (rc < 0)
    return rc;
  int em = 0;
  js->prov = pfi_table_provenance(&t, &em);
  js->any_emulated |= em;
  pfi_table_release(&t);
  return 0;
}

int pfi_jobset_load(struct pfi_jobset *js, const char *cpath, const char *map,
                    const char *fpath, struct pfi_error *err) {
  memset(js, 0, sizeof *js);
  pfi_curveset_init(&js->cs);
  int rc = 0;
  if (cpath) {
    if ((rc = pfi_curveset_read(&js->cs, cpath, map, err)) < 0)
      return rc;
    js->have_curves = 1;
  }
  size_t n = js->cs.n;
  js->frow = calloc(n + 1, sizeof *js->frow);
  js->true_pfi = calloc(n + 1, sizeof *js->true_pfi);
  js->pfi_ok = calloc(n + 1, sizeof *js->pfi_ok);
  js->pfi_why = calloc(n + 1, sizeof *js->pfi_why);
  if (!js->frow || !js->true_pfi || !js->pfi_ok || !js->pfi_why) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < n; i++)
    js->frow[i] = -1;
  if ((rc = curves_provenance(js, cpath, err)) < 0)
    goto fail;
  /* The data's own noise, as pfi index estimates it (the paper's
   * repeatability for emulated curves and when the curves give nothing to
   * estimate it from). */
  pfi_noise_of(&js->cs, js->any_emulated, &js->noise);
  if ((rc = true_pfi_all(js, err)) < 0)
    goto fail;
  js->nmissing = n;
  if (fpath) {
    if ((rc = pfi_features_load(&js->f, fpath, err)) < 0)
      goto fail;
    js->have_features = 1;
    js->nmissing = 0;
    for (size_t i = 0; i < n; i++) {
      js->frow[i] = pfi_features_row(&js->f, js->cs.c[i].job);
      js->nmissing += js->frow[i] < 0;
    }
    int em = 0;
    js->prov = prov_join(js->prov, pfi_table_provenance(&js->f.t, &em));
    js->any_emulated |= em;
  }
  return 0;
fail:
  pfi_jobset_release(js);
  return rc;
}

int pfi_jobset_subset(const struct pfi_jobset *src, const unsigned char *keep,
                      struct pfi_jobset *dst, struct pfi_error *err) {
  memset(dst, 0, sizeof *dst);
  pfi_curveset_init(&dst->cs);
  size_t n = 0;
  for (size_t i = 0; i < src->cs.n; i++)
    n += keep[i] != 0;
  dst->cs.c = calloc(n + 1, sizeof *dst->cs.c);
  dst->cs.cap = n + 1;
  dst->frow = calloc(n + 1, sizeof *dst->frow);
  dst->true_pfi = calloc(n + 1, sizeof *dst->true_pfi);
  dst->pfi_ok = calloc(n + 1, sizeof *dst->pfi_ok);
  dst->pfi_why = calloc(n + 1, sizeof *dst->pfi_why);
  if (src->cs.source)
    dst->cs.source = strdup(src->cs.source);
  if (!dst->cs.c || !dst->frow || !dst->true_pfi || !dst->pfi_ok ||
      !dst->pfi_why || (src->cs.source && !dst->cs.source))
    goto nomem;
  for (size_t i = 0; i < src->cs.n; i++) {
    if (!keep[i])
      continue;
    const struct pfi_curve *c = &src->cs.c[i];
    struct pfi_curve *d = &dst->cs.c[dst->cs.n];
    *d = *c;
    d->job = strdup(c->job);
    d->pts = malloc((c->n + 1) * sizeof *d->pts);
    d->cap = c->n + 1;
    if (!d->job || !d->pts) {
      free(d->job);
      free(d->pts);
      memset(d, 0, sizeof *d);
      goto nomem;
    }
    memcpy(d->pts, c->pts, c->n * sizeof *d->pts);
    size_t j = dst->cs.n++;
    dst->frow[j] = src->frow[i];
    dst->true_pfi[j] = src->true_pfi[i];
    dst->pfi_ok[j] = src->pfi_ok[i];
    dst->pfi_why[j] = src->pfi_why ? src->pfi_why[i] : 0;
    dst->nmissing += src->frow[i] < 0;
  }
  dst->have_curves = src->have_curves;
  dst->have_features = src->have_features;
  if (src->have_features) {
    dst->f = src->f;
    dst->features_borrowed = 1;
  } else {
    dst->nmissing = dst->cs.n;
  }
  dst->prov = src->prov;
  dst->any_emulated = src->any_emulated;
  dst->curve_fit = src->curve_fit;
  dst->noise = src->noise;
  return 0;
nomem:
  pfi_jobset_release(dst);
  return pfi_error_set(err, PFI_ENOMEM, "out of memory");
}

void pfi_jobset_release(struct pfi_jobset *js) {
  pfi_curveset_release(&js->cs);
  if (js->have_features && !js->features_borrowed)
    pfi_features_release(&js->f);
  free(js->frow);
  free(js->true_pfi);
  free(js->pfi_ok);
  free(js->pfi_why);
  memset(js, 0, sizeof *js);
}

int pfi_jobset_require_features(const struct pfi_jobset *js, const char *why,
                                struct pfi_error *err) {
  if (!js->have_features)
    return pfi_error_set(err, PFI_EINVAL, "%s needs --features FILE", why);
  if (js->nmissing == 0)
    return 0;
  char list[256] = "";
  size_t shown = 0;
  for (size_t i = 0; i < js->cs.n && shown < 5; i++)
    if (js->frow[i] < 0) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", shown ? ", " : "",
               js->cs.c[i].job);
      shown++;
    }
  return pfi_error_setloc(err, PFI_EPARSE, js->f.t.name, 0, 0,
                          "%zu of %zu jobs of %s have no row here (%s%s); %s "
                          "needs features for every job",
                          js->nmissing, js->cs.n,
                          js->cs.source ? js->cs.source : "the curves", list,
                          js->nmissing > shown ? ", ..." : "", why);
}

int pfi_jobset_gpus(const struct pfi_jobset *js, size_t i, int *gpus,
                    struct pfi_error *err) {
  long r = js->have_features ? js->frow[i] : -1;
  int gc = js->have_features ? pfi_table_find(&js->f.t, "gpus") : -1;
  if (r >= 0 && gc >= 0) {
    double g;
    int rc = pfi_features_value(&js->f, (size_t)r, "gpus", &g, err);
    if (rc < 0)
      return rc;
    /* A GPU count is a positive whole number; converting a value beyond
     * INT_MAX to int is undefined behaviour. */
    if (!(g >= 1 && g <= 1e9) || g != floor(g))
      return pfi_error_setloc(
          err, PFI_EPARSE, js->f.t.name, js->f.t.line[r],
          js->f.t.col[(size_t)r * js->f.t.ncols + (size_t)gc],
          "gpus must be a whole number from 1 to 1e9, "
          "not %g",
          g);
    *gpus = (int)g;
    return 0;
  }
  /* The curves reader accepts whole numbers from 1 to 1e6 only. */
  if (js->cs.c[i].gpus > 0) {
    *gpus = js->cs.c[i].gpus;
    return 0;
  }
  return pfi_error_set(err, PFI_ENOTFOUND,
                       "job %s: no GPU count (a gpus column in the features "
                       "or the curves)",
                       js->cs.c[i].job);
}

/* ---- allocation inputs --------------------------------------------------- */

void pfi_jobset_inputs_release(struct pfi_jobset_inputs *a) {
  pfi_problem_release(&a->prob);
  free(a->pfi);
  free(a->dram_copy);
  free(a->moe_ft);
  free(a->is_ft);
  free(a->gpus);
  memset(a, 0, sizeof *a);
}

int pfi_jobset_check_totals(const struct pfi_jobset *js,
                            const struct pfi_problem *p,
                            struct pfi_error *err) {
  double sum_lo, sum_hi, st = 0;
  pfi_problem_bounds(p, &sum_lo, &sum_hi);
  for (size_t q = 0; q < p->npts; q++)
    st += fabs(p->y[q]);
  if (isfinite(sum_hi) && isfinite(st))
    return 0;
  return pfi_error_setloc(err, PFI_EPARSE,
                          js->cs.source ? js->cs.source : "the curves", 0, 0,
                          "the jobs' total %s exceeds the floating-point range",
                          isfinite(sum_hi) ? "throughput" : "uncapped power");
}

#define BIT(s) (1u << (s))

int pfi_jobset_inputs_build(const struct pfi_jobset *js, unsigned strategies,
                            int need_mix, const struct pfi_estimate_opts *est,
                            struct pfi_jobset_inputs *a,
                            struct pfi_error *err) {
  memset(a, 0, sizeof *a);
  pfi_problem_init(&a->prob);
  a->prob.curve_fit = js->curve_fit;
  size_t n = js->cs.n;
  int rc;
  for (size_t i = 0; i < n; i++)
    if ((rc = pfi_problem_add_curve(&a->prob, &js->cs.c[i], err)) < 0)
      return rc;
  if ((rc = pfi_jobset_check_totals(js, &a->prob, err)) < 0)
    return rc;
  int need_pfi =
      (strategies & (BIT(PFI_STRAT_PFI_AWARE) | BIT(PFI_STRAT_PFI_CURVE))) != 0;
  int need_dram = (strategies & BIT(PFI_STRAT_DRAM_COPY)) != 0;
  int need_moe = (strategies & BIT(PFI_STRAT_MOE_FT_WEIGHTED)) != 0;
  if (need_pfi && !(a->pfi = calloc(n + 1, sizeof *a->pfi)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (need_dram && !(a->dram_copy = calloc(n + 1, sizeof *a->dram_copy)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (need_moe && !(a->moe_ft = calloc(n + 1, sizeof *a->moe_ft)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (need_mix && (!(a->is_ft = calloc(n + 1, sizeof *a->is_ft)) ||
                   !(a->gpus = calloc(n + 1, sizeof *a->gpus))))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (need_pfi) {
    struct pfi_estimate_opts dflt;
    if (!est) {
      pfi_estimate_opts_init(&dflt);
      est = &dflt;
    }
    if ((rc = pfi_jobset_estimate(js, est, a->pfi, err)) < 0)
      return rc;
  }
  if (need_dram &&
      (rc = pfi_jobset_require_features(js, "strategy dram-copy", err)) < 0)
    return rc;
  if (need_moe && (rc = pfi_jobset_require_features(
                       js, "strategy moe-ft-weighted", err)) < 0)
    return rc;
  if (need_mix &&
      (rc = pfi_jobset_require_features(js, "the production mix", err)) < 0)
    return rc;
  for (size_t i = 0; i < n; i++) {
    size_t r = (size_t)js->frow[i];
    if (need_dram && (rc = pfi_features_value(&js->f, r, "dram_copy_product",
                                              &a->dram_copy[i], err)) < 0)
      return rc;
    if (need_moe || need_mix) {
      int m, f;
      if ((rc = pfi_features_class(&js->f, r, &m, &f, err)) < 0)
        return rc;
      if (need_moe)
        a->moe_ft[i] = m && f;
      if (need_mix)
        a->is_ft[i] = f;
    }
    if (need_mix && (rc = pfi_jobset_gpus(js, i, &a->gpus[i], err)) < 0)
      return rc;
  }
  a->in.pfi = a->pfi;
  a->in.dram_copy = a->dram_copy;
  a->in.moe_ft = a->moe_ft;
  return 0;
}

/* ---- population ---------------------------------------------------------- */

int pfi_population_of(const char *const *jobs, size_t n,
                      struct pfi_population *p, struct pfi_error *err) {
  memset(p, 0, sizeof *p);
  p->n = n;
  p->other = n;
  char path[4096];
  if (pfi_data_path("paper/h200_headline_groups.csv", path, sizeof path, err) <
      0)
    return PFI_ENOTFOUND;
  struct pfi_table t;
  int rc = pfi_table_load(&t, path, err);
  if (rc < 0)
    return rc;
  int gc = pfi_table_find(&t, "group");
  unsigned char *seen = calloc(t.nrows + 1, 1);
  if (!seen) {
    pfi_table_release(&t);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  size_t dup = 0;
  p->headline_total = gc >= 0 ? t.nrows : 0;
  for (size_t i = 0; gc >= 0 && i < n; i++)
    for (size_t r = 0; r < t.nrows; r++) {
      const char *g = pfi_table_cell(&t, r, (size_t)gc);
      if (g && jobs[i] && strcmp(g, jobs[i]) == 0) {
        dup += seen[r];
        seen[r] = 1;
        p->headline++;
        break;
      }
    }
  p->other = n - p->headline;
  p->paper = p->headline_total > 0 && p->other == 0 && dup == 0 &&
             p->headline == p->headline_total;
  free(seen);
  pfi_table_release(&t);
  return 0;
}

int pfi_jobset_population(const struct pfi_jobset *js, struct pfi_population *p,
                          struct pfi_error *err) {
  const char **ids = malloc((js->cs.n + 1) * sizeof *ids);
  if (!ids)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < js->cs.n; i++)
    ids[i] = js->cs.c[i].job;
  int rc = pfi_population_of(ids, js->cs.n, p, err);
  free(ids);
  return rc;
}

const char *pfi_population_describe(const struct pfi_population *p, char *buf,
                                    size_t n) {
  if (p->paper)
    snprintf(buf, n, "the paper's %zu H200 headline groups", p->n);
  else if (p->headline_total == 0)
    snprintf(buf, n, "%zu jobs (the paper's headline groups are not installed)",
             p->n);
  else if (p->other == 0)
    snprintf(buf, n, "%zu jobs, %zu of the paper's %zu H200 headline groups",
             p->n, p->headline, p->headline_total);
  else
    snprintf(buf, n,
             "%zu jobs, %zu of them not among the paper's %zu H200 headline "
             "groups",
             p->n, p->other, p->headline_total);
  return buf;
}

int pfi_paper_headline(const char *metric, double *value,
                       struct pfi_error *err) {
  char path[4096];
  int rc =
      pfi_data_path("paper/published_headlines.csv", path, sizeof path, err);
  if (rc < 0)
    return rc;
  struct pfi_table t;
  if ((rc = pfi_table_load(&t, path, err)) < 0)
    return rc;
  int mc = pfi_table_find(&t, "metric"), vc = pfi_table_find(&t, "value");
  rc = pfi_error_set(err, PFI_ENOTFOUND, "%s: no metric %s", path, metric);
  for (size_t r = 0; mc >= 0 && vc >= 0 && r < t.nrows; r++) {
    const char *m = pfi_table_cell(&t, r, (size_t)mc);
    if (m && strcmp(m, metric) == 0) {
      rc = pfi_table_double(&t, r, (size_t)vc, value, err);
      if (rc == 0)
        pfi_error_clear(err);
      break;
    }
  }
  pfi_table_release(&t);
  return rc;
}

const char *pfi_data_default(const char *rel, char *buf, size_t n) {
  struct pfi_error e;
  if (pfi_data_path(rel, buf, n, &e) < 0)
    return NULL;
  return access(buf, R_OK) == 0 ? buf : NULL;
}

int pfi_jobset_objective_problem(const struct pfi_jobset *js,
                                 const struct pfi_objective *o,
                                 const struct pfi_problem *raw,
                                 struct pfi_problem *out, int *gpus_known,
                                 struct pfi_error *err) {
  size_t n = js->cs.n;
  const char **names = calloc(n + 1, sizeof *names);
  int *gpus = calloc(n + 1, sizeof *gpus);
  double *tmax = calloc(n + 1, sizeof *tmax);
  int rc = 0;
  if (!names || !gpus || !tmax) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n && rc == 0; i++) {
    const struct pfi_curve *c = &js->cs.c[i];
    names[i] = c->job;
    /* T_i of the curve the problem holds (its monotone fit by default). */
    tmax[i] = pfi_curve_fit_top(c, (enum pfi_curve_fit)js->curve_fit);
    int g = 0;
    /* Only the work objective reads GPU counts. */
    if (o->kind == PFI_OBJ_WORK) {
      rc = pfi_jobset_gpus(js, i, &g, err);
      if (rc == PFI_ENOTFOUND) {
        g = 0;
        rc = 0;
      }
    }
    gpus[i] = g;
  }
  if (rc == 0)
    rc = pfi_objective_problem(raw, o, gpus, tmax, names, out, gpus_known,
                               err);
out:
  free(names);
  free(gpus);
  free(tmax);
  return rc;
}
