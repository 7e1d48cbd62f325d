/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Trace store to curves.csv, features.csv and a samples CSV. */
#include "pfi/trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "pfi/device.h"
#include "pfi/emu.h"
#include "pfi/phase.h"

void pfi_summary_opts_init(struct pfi_summary_opts *o) {
  memset(o, 0, sizeof *o);
  o->warmup_fb_gib = 10;
  o->train_util_pct = 50;
  o->top_fraction = 0.10;
}

/* The columns of features.csv after job, arch, task, gpus, in this
 * order. */
enum feat {
  F_DRAM_ACTIVE,
  F_MEM_COPY_UTIL,
  F_DRAM_COPY_PRODUCT,
  F_SM_ACTIVE,
  F_TENSOR_ACTIVE,
  F_TENSOR_SM_RATIO,
  F_DRAM_SM_RATIO,
  F_ARITHMETIC_INTENSITY,
  F_NVLINK_TX_GBPS,
  F_NVLINK_RX_GBPS,
  F_PCIE_TX_GBPS,
  F_PCIE_RX_GBPS,
  F_POWER_W,
  F_SM_CLOCK_MHZ,
  F_CLOCK_FRACTION,
  F_GPU_UTIL,
  F_FB_USED_GIB,
  F_GPU_TEMP_C,
  F__COUNT
};
static const char *const feat_names[F__COUNT] = {
    "dram_active",    "mem_copy_util",        "dram_copy_product",
    "sm_active",      "tensor_active",        "tensor_sm_ratio",
    "dram_sm_ratio",  "arithmetic_intensity", "nvlink_tx_gbps",
    "nvlink_rx_gbps", "pcie_tx_gbps",         "pcie_rx_gbps",
    "power_w",        "sm_clock_mhz",         "clock_fraction",
    "gpu_util",       "fb_used_gib",          "gpu_temp_c"};

/* One run's series, one entry per sampling instant. */
struct series {
  size_t n, cap;
  double *t, *power, *fb0, *util0;
  double *mean[PFI_FIELD__COUNT]; /* mean over the run's GPUs, NaN if none */
  enum pfi_phase *ph;
};

static void series_free(struct series *s) {
  free(s->t);
  free(s->power);
  free(s->fb0);
  free(s->util0);
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    free(s->mean[f]);
  free(s->ph);
  memset(s, 0, sizeof *s);
}

static int series_grow(struct series *s) {
  if (s->n < s->cap)
    return 0;
  size_t nc = s->cap ? 2 * s->cap : 512;
  double **arrs[] = {&s->t, &s->power, &s->fb0, &s->util0};
  for (size_t i = 0; i < 4; i++) {
    double *p = realloc(*arrs[i], nc * sizeof *p);
    if (!p)
      return PFI_ENOMEM;
    *arrs[i] = p;
  }
  for (int f = 0; f < PFI_FIELD__COUNT; f++) {
    double *p = realloc(s->mean[f], nc * sizeof *p);
    if (!p)
      return PFI_ENOMEM;
    s->mean[f] = p;
  }
  enum pfi_phase *ph = realloc(s->ph, nc * sizeof *ph);
  if (!ph)
    return PFI_ENOMEM;
  s->ph = ph;
  s->cap = nc;
  return 0;
}

/* Reads a run's samples into per-instant series. The phases follow the
 * lowest-numbered GPU of the run (the paper read its traces from local
 * rank 0); power is the sum over the GPUs; other fields their mean. */
static int load_series(struct pfi_store *st, int64_t run_id, struct series *s,
                       struct pfi_error *err) {
  struct pfi_store_iter *it = NULL;
  int rc = pfi_store_samples_open(st, run_id, PFI_STORE_ALL_GPUS, &it, err);
  if (rc < 0)
    return rc;
  int rank0 = -1, r;
  double sum[PFI_FIELD__COUNT];
  int cnt[PFI_FIELD__COUNT];
  int have_power = 0;
  double cur_t = NAN;
  struct pfi_store_sample smp;
  while ((r = pfi_store_samples_next(it, &smp, err)) == 1) {
    int gpu = (int)smp.gpu;
    double t = smp.t_s;
    if (rank0 < 0 || gpu < rank0)
      rank0 = gpu; /* rows of the first instant come lowest GPU first */
    if (!(t == cur_t)) {
      if (s->n > 0 || !isnan(cur_t)) {
        /* close the previous instant */
        size_t k = s->n - 1;
        for (int f = 0; f < PFI_FIELD__COUNT; f++)
          s->mean[f][k] = cnt[f] ? sum[f] / cnt[f] : NAN;
        s->power[k] = have_power ? sum[PFI_FIELD_POWER] : NAN;
      }
      if ((rc = series_grow(s)) < 0) {
        pfi_error_set(err, rc, "out of memory");
        goto out;
      }
      size_t k = s->n++;
      s->t[k] = t;
      s->fb0[k] = s->util0[k] = NAN;
      memset(sum, 0, sizeof sum);
      memset(cnt, 0, sizeof cnt);
      have_power = 0;
      cur_t = t;
    }
    size_t k = s->n - 1;
    for (int f = 0; f < PFI_FIELD__COUNT; f++)
      if ((smp.valid >> f) & 1u) {
        double v = smp.v[f];
        sum[f] += v;
        cnt[f]++;
        if (f == PFI_FIELD_POWER)
          have_power = 1;
        if (gpu == rank0 && f == PFI_FIELD_FB_USED)
          s->fb0[k] = v;
        if (gpu == rank0 && f == PFI_FIELD_GPU_UTIL)
          s->util0[k] = v;
      }
  }
  if (r < 0) {
    rc = r;
    goto out;
  }
  if (s->n) {
    size_t k = s->n - 1;
    for (int f = 0; f < PFI_FIELD__COUNT; f++)
      s->mean[f][k] = cnt[f] ? sum[f] / cnt[f] : NAN;
    s->power[k] = have_power ? sum[PFI_FIELD_POWER] : NAN;
  }
out:
  pfi_store_iter_close(it);
  return rc;
}

/* Throughput reports of a run, each labelled with the phase of the latest
 * sampling instant at or before it. */
static int load_steps(struct pfi_store *st, int64_t run_id,
                      const struct series *s, double **vals,
                      enum pfi_phase **phs, size_t *n, struct pfi_error *err) {
  struct pfi_store_iter *q = NULL;
  size_t k = 0, cap = 0;
  double *v = NULL;
  enum pfi_phase *p = NULL;
  int rc = 0, r;
  if ((rc = pfi_store_steps_open(st, run_id, &q, err)) < 0)
    goto out;
  size_t j = 0;
  struct pfi_store_step stp;
  while ((r = pfi_store_steps_next(q, &stp, err)) == 1) {
    double t = stp.t_s;
    double rate = stp.tokens_per_s;
    while (j + 1 < s->n && s->t[j + 1] <= t)
      j++;
    if (s->n == 0 || t < s->t[0])
      continue; /* before the first sample: no phase known */
    if (k == cap) {
      size_t nc = cap ? 2 * cap : 512;
      double *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      v = nv;
      enum pfi_phase *np = realloc(p, nc * sizeof *np);
      if (!np) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      p = np;
      cap = nc;
    }
    v[k] = rate;
    p[k] = s->ph[j];
    k++;
  }
  if (r < 0) {
    rc = r;
    goto out;
  }
  *vals = v;
  *phs = p;
  *n = k;
  v = NULL;
  p = NULL;
out:
  free(v);
  free(p);
  pfi_store_iter_close(q);
  return rc;
}

/* Standard error of the mean of the training-phase values. */
struct run_row {
  int64_t id;
  char job[128], arch[32], task[32], source[16];
  double cap_w;
  int gpus;
  double len_s; /* t_end - t_start, NaN when unknown */
  /* results */
  int ok;      /* power and throughput: a curve point */
  int ok_feat; /* training-phase telemetry: a features row */
  /* why a run is no curve point: its samples' training-phase count, its
   * throughput reports, those at training-phase instants, and whether any
   * sample showed the GPUs loaded (frame buffer past the warm-up threshold)
   * or computing (utilization > 0) */
  size_t ntrain, nsteps, nsteps_train;
  int busy;
  double power_w, tokens, power_sd, tokens_sd;
  double feat[F__COUNT];
  /* Node power (store.h's node_power), the same aggregate over the same
   * training-phase instants: ok_node when the run has it. */
  int ok_node;
  double node_w, node_sd;
  char node_src[16];
};

static void put_num(FILE *fp, double v) {
  if (isfinite(v))
    fprintf(fp, ",%.10g", v);
  else
    fputs(",", fp);
}

/* A CSV cell: quoted when it holds a comma, quote or newline. */
static void put_text(FILE *fp, const char *s, int first) {
  if (!first)
    fputc(',', fp);
  if (strpbrk(s, ",\"\n\r")) {
    fputc('"', fp);
    for (; *s; s++) {
      if (*s == '"')
        fputc('"', fp);
      fputc(*s, fp);
    }
    fputc('"', fp);
  } else {
    fputs(s, fp);
  }
}

static double ratio(double a, double b) {
  return isfinite(a) && isfinite(b) && b > 0 ? a / b : NAN;
}

static int top_mean(const double *v, const enum pfi_phase *ph, size_t n,
                    const struct pfi_phase_params *pp, double *out) {
  struct pfi_error e;
  size_t used = 0;
  if (pfi_phase_top_mean(v, ph, n, pp, out, &used, &e) < 0 || used == 0) {
    *out = NAN;
    return -1;
  }
  return 0;
}

/* The run's node power at each instant of its series (NaN where the
 * instant has none), aggregated as power is. */
static int summarize_node(struct pfi_store *st, struct run_row *rr,
                          const struct series *s,
                          const struct pfi_phase_params *pp,
                          struct pfi_error *err) {
  struct pfi_store_iter *it = NULL;
  int rc = pfi_store_node_power_open(st, rr->id, &it, err);
  if (rc < 0)
    return rc;
  double *v = malloc((s->n ? s->n : 1) * sizeof *v);
  if (!v) {
    pfi_store_iter_close(it);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  for (size_t k = 0; k < s->n; k++)
    v[k] = NAN;
  struct pfi_node_power np;
  size_t k = 0, got = 0;
  int r;
  /* Both by time: a merge. */
  while ((r = pfi_store_node_power_next(it, &np, err)) == 1) {
    while (k < s->n && s->t[k] < np.t_s)
      k++;
    if (k < s->n && s->t[k] == np.t_s) {
      v[k] = np.node_w;
      if (!got++)
        snprintf(rr->node_src, sizeof rr->node_src, "%s", np.source);
    }
  }
  if (r < 0)
    rc = r;
  else if (got && top_mean(v, s->ph, s->n, pp, &rr->node_w) == 0 &&
           rr->node_w > 0) {
    struct pfi_error e2;
    rr->ok_node = 1;
    if (pfi_phase_top_sem(v, s->ph, s->n, pp, &rr->node_sd, &e2) < 0)
      rr->node_sd = -1;
  }
  free(v);
  pfi_store_iter_close(it);
  return rc;
}

static int open_out(const char *dir, const char *name, char *tmp, size_t n,
                    FILE **fp, struct pfi_error *err);
static int close_out(const char *dir, const char *name, const char *tmp,
                     FILE *fp, struct pfi_error *err);

/* DIR/node_curves.csv: the curve points whose runs have node power, with
 * it beside the GPU power (docs/sweep.md); jobs with fewer than two such
 * points are left out. No node power anywhere: no file (an old one is
 * removed, so that the directory matches the store). */
static int write_node_curves(const char *out_dir, const struct run_row *rows,
                             size_t nr, struct pfi_error *err) {
  size_t any = 0;
  for (size_t i = 0; i < nr; i++)
    any += rows[i].ok && rows[i].ok_node;
  char tmp[4096];
  if (!any) {
    snprintf(tmp, sizeof tmp, "%s/node_curves.csv", out_dir);
    remove(tmp);
    return 0;
  }
  FILE *fp;
  int rc = open_out(out_dir, "node_curves.csv", tmp, sizeof tmp, &fp, err);
  if (rc < 0)
    return rc;
  fputs("job,cap_w,power_w,tokens_per_s,gpus,power_sd_w,tokens_sd,runs,source,"
        "node_power_w,node_power_sd_w,node_source\n",
        fp);
  for (size_t i = 0; i < nr;) {
    size_t j = i, good = 0;
    while (j < nr && strcmp(rows[j].job, rows[i].job) == 0)
      j++;
    for (size_t k = i; k < j; k++)
      good += rows[k].ok && rows[k].ok_node;
    for (size_t k = i; good >= 2 && k < j; k++) {
      const struct run_row *rr = &rows[k];
      if (!rr->ok || !rr->ok_node)
        continue;
      put_text(fp, rr->job, 1);
      put_num(fp, rr->cap_w);
      put_num(fp, rr->power_w);
      put_num(fp, rr->tokens);
      fprintf(fp, ",%d", rr->gpus);
      put_num(fp, rr->power_sd >= 0 ? rr->power_sd : NAN);
      put_num(fp, rr->tokens_sd >= 0 ? rr->tokens_sd : NAN);
      fputs(",1", fp);
      put_text(fp, rr->source, 0);
      put_num(fp, rr->node_w);
      put_num(fp, rr->node_sd >= 0 ? rr->node_sd : NAN);
      put_text(fp, rr->node_src, 0);
      fputc('\n', fp);
    }
    i = j;
  }
  return close_out(out_dir, "node_curves.csv", tmp, fp, err);
}

static int summarize_run(struct pfi_store *st, struct run_row *rr,
                         const struct pfi_phase_params *pp, double clock_max,
                         struct pfi_error *err) {
  struct series s;
  double *tv = NULL;
  enum pfi_phase *tph = NULL;
  size_t nt = 0;
  int rc;
  memset(&s, 0, sizeof s);
  rr->ok = 0;
  if ((rc = load_series(st, rr->id, &s, err)) < 0)
    goto out;
  if (s.n == 0)
    goto out;
  if ((rc = pfi_phase_segment(s.fb0, s.util0, s.n, pp, s.ph, err)) < 0)
    goto out;
  if ((rc = load_steps(st, rr->id, &s, &tv, &tph, &nt, err)) < 0)
    goto out;
  rc = 0;
  {
    size_t ntrain = 0;
    for (size_t k = 0; k < s.n; k++) {
      ntrain += s.ph[k] == PFI_PHASE_TRAINING;
      /* Loaded (past the frame-buffer threshold) or computing. */
      if (s.util0[k] > 0 || s.ph[k] != PFI_PHASE_WARMUP)
        rr->busy = 1;
    }
    rr->ntrain = ntrain;
    rr->nsteps = nt;
    for (size_t k = 0; k < nt; k++)
      rr->nsteps_train += tph[k] == PFI_PHASE_TRAINING;
    if (ntrain == 0)
      goto out;
  }
  rr->ok_feat = 1;
  if (top_mean(s.power, s.ph, s.n, pp, &rr->power_w) == 0 &&
      top_mean(tv, tph, nt, pp, &rr->tokens) == 0 && rr->tokens > 0 &&
      rr->power_w > 0) {
    rr->ok = 1;
    /* Standard errors of the aggregates themselves (the top 10 % of
     * training-phase samples), as the Monte Carlo intervals need. */
    struct pfi_error e2;
    if (pfi_phase_top_sem(s.power, s.ph, s.n, pp, &rr->power_sd, &e2) < 0)
      rr->power_sd = -1;
    if (pfi_phase_top_sem(tv, tph, nt, pp, &rr->tokens_sd, &e2) < 0)
      rr->tokens_sd = -1;
    if ((rc = summarize_node(st, rr, &s, pp, err)) < 0)
      goto out;
  }
  double m[PFI_FIELD__COUNT];
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    top_mean(s.mean[f], s.ph, s.n, pp, &m[f]);
  double *F = rr->feat;
  F[F_DRAM_ACTIVE] = m[PFI_FIELD_DRAM_ACTIVE];
  F[F_MEM_COPY_UTIL] = m[PFI_FIELD_MEM_COPY_UTIL];
  F[F_DRAM_COPY_PRODUCT] =
      m[PFI_FIELD_DRAM_ACTIVE] * m[PFI_FIELD_MEM_COPY_UTIL];
  F[F_SM_ACTIVE] = m[PFI_FIELD_SM_ACTIVE];
  F[F_TENSOR_ACTIVE] = m[PFI_FIELD_TENSOR_ACTIVE];
  F[F_TENSOR_SM_RATIO] =
      ratio(m[PFI_FIELD_TENSOR_ACTIVE], m[PFI_FIELD_SM_ACTIVE]);
  F[F_DRAM_SM_RATIO] = ratio(m[PFI_FIELD_DRAM_ACTIVE], m[PFI_FIELD_SM_ACTIVE]);
  F[F_ARITHMETIC_INTENSITY] =
      ratio(m[PFI_FIELD_TENSOR_ACTIVE], m[PFI_FIELD_DRAM_ACTIVE]);
  F[F_NVLINK_TX_GBPS] = m[PFI_FIELD_NVLINK_TX] * 1e-9;
  F[F_NVLINK_RX_GBPS] = m[PFI_FIELD_NVLINK_RX] * 1e-9;
  F[F_PCIE_TX_GBPS] = m[PFI_FIELD_PCIE_TX] * 1e-9;
  F[F_PCIE_RX_GBPS] = m[PFI_FIELD_PCIE_RX] * 1e-9;
  F[F_POWER_W] = m[PFI_FIELD_POWER];
  F[F_SM_CLOCK_MHZ] = m[PFI_FIELD_SM_CLOCK];
  F[F_CLOCK_FRACTION] = ratio(m[PFI_FIELD_SM_CLOCK], clock_max);
  F[F_GPU_UTIL] = m[PFI_FIELD_GPU_UTIL];
  F[F_FB_USED_GIB] = m[PFI_FIELD_FB_USED] / 1024.0;
  F[F_GPU_TEMP_C] = m[PFI_FIELD_TEMP];
out:
  series_free(&s);
  free(tv);
  free(tph);
  return rc;
}

/* The SM clock that 1.0 of clock_fraction stands for: the store's record
 * of the GPU's maximum when the sweep knew it, else the highest SM clock
 * any sample of the store shows. */
static double clock_max_of(struct pfi_store *st) {
  char v[64];
  double c = NAN;
  if (pfi_store_meta_get(st, "sm_clock_max_mhz", v, sizeof v, NULL) == 1) {
    char *end;
    c = strtod(v, &end);
    if (*end || !(c > 0))
      c = NAN;
  }
  if (isfinite(c))
    return c;
  c = pfi_store_field_max(st, PFI_FIELD_SM_CLOCK);
  return c > 0 ? c : NAN;
}

static int open_out(const char *dir, const char *name, char *tmp, size_t n,
                    FILE **fp, struct pfi_error *err) {
  snprintf(tmp, n, "%s/%s.tmp", dir, name);
  *fp = fopen(tmp, "w");
  if (!*fp)
    return pfi_error_set(err, PFI_EIO, "%s: %s", tmp, strerror(errno));
  return 0;
}

static int close_out(const char *dir, const char *name, const char *tmp,
                     FILE *fp, struct pfi_error *err) {
  char final[4096];
  int bad = ferror(fp);
  if (fclose(fp) != 0 || bad) {
    remove(tmp);
    return pfi_error_set(err, PFI_EIO, "%s: write failed", tmp);
  }
  snprintf(final, sizeof final, "%s/%s", dir, name);
  if (rename(tmp, final) != 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", final, strerror(errno));
  return 0;
}

/* The number of distinct jobs of rows (ordered by job). */
static long jobs_all(const struct run_row *rows, size_t nr) {
  long n = 0;
  for (size_t i = 0; i < nr; i++)
    n += i == 0 || strcmp(rows[i].job, rows[i - 1].job) != 0;
  return n;
}

/* Why no run has training-phase samples, for the message: GPUs that were
 * never loaded or computing (an emulated node with no load: a command on the
 * emu backend without --emulate GROUP), emulated runs shorter than the emulated
 * jobs' start-up, or neither. */
static void no_training_hint(const struct run_row *rows, size_t nr, char *buf,
                             size_t n) {
  double longest = 0, need = pfi_emu_min_run_s();
  int emulated = 0, busy = 0;
  for (size_t i = 0; i < nr; i++) {
    busy |= rows[i].busy;
    if (!strcmp(rows[i].source, PFI_SOURCE_EMULATED)) {
      emulated = 1;
      if (rows[i].len_s > longest)
        longest = rows[i].len_s;
    }
  }
  buf[0] = 0;
  if (!busy && emulated)
    snprintf(buf, n,
             " (the emulated GPUs were idle through every run: a command on "
             "the emu backend needs --emulate GROUP for their load, and "
             "with --throughput that load starts at the command's first "
             "report, so check the reports with pfi sweep --smoke)");
  else if (!busy)
    snprintf(buf, n, " (the GPUs were idle through every run)");
  else if (emulated && longest < need)
    snprintf(buf, n,
             " (the emulated runs last %gs, shorter than the emulated jobs' "
             "warm-up and startup: sweep with --duration %gs or more, or "
             "run a command that reports throughput, whose first report "
             "ends the start-up)",
             longest, need);
}

int pfi_trace_summarize(struct pfi_store *st, const char *out_dir,
                        const struct pfi_summary_opts *o,
                        struct pfi_error *err) {
  struct pfi_summary_opts def;
  if (!o) {
    pfi_summary_opts_init(&def);
    o = &def;
  }
  struct pfi_phase_params pp;
  pfi_phase_params_init(&pp);
  pp.loaded_mib = o->warmup_fb_gib * 1024.0;
  pp.train_util = o->train_util_pct;
  pp.top_frac = o->top_fraction;
  if (!(o->warmup_fb_gib >= 0 && o->warmup_fb_gib < 1e6) ||
      !(o->train_util_pct >= 0 && o->train_util_pct <= 100) ||
      !(o->top_fraction > 0 && o->top_fraction <= 1))
    return pfi_error_set(err, PFI_EINVAL,
                         "summary thresholds out of range (frame buffer "
                         "%g GiB, utilization %g %%, top fraction %g)",
                         o->warmup_fb_gib, o->train_util_pct, o->top_fraction);
  struct run_row *rows = NULL;
  size_t nr = 0, cr = 0;
  struct pfi_store_iter *q = NULL;
  FILE *fc = NULL, *ff = NULL;
  char tc[4096], tf[4096];
  int rc = 0, r;
  long skipped = 0, nocurve = 0, jobs = 0;
  /* The newest complete run of each (job, cap). */
  if ((rc = pfi_store_runs_open(st, PFI_RUNS_NEWEST_COMPLETE, &q, err)) < 0)
    goto out;
  struct pfi_store_run run;
  while ((r = pfi_store_runs_next(q, &run, err)) == 1) {
    if (nr == cr) {
      size_t nc = cr ? 2 * cr : 32;
      struct run_row *nv = realloc(rows, nc * sizeof *nv);
      if (!nv) {
        rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        goto out;
      }
      rows = nv;
      cr = nc;
    }
    struct run_row *rr = &rows[nr++];
    memset(rr, 0, sizeof *rr);
    rr->id = run.id;
    snprintf(rr->job, sizeof rr->job, "%s", run.job);
    snprintf(rr->arch, sizeof rr->arch, "%s", run.arch);
    snprintf(rr->task, sizeof rr->task, "%s", run.task);
    rr->cap_w = run.cap_w;
    rr->gpus = run.gpus;
    rr->len_s = run.has_t_start && run.has_t_end ? run.t_end_s - run.t_start_s
                                                 : NAN;
    snprintf(rr->source, sizeof rr->source, "%s", run.source);
  }
  if (r < 0) {
    rc = r;
    goto out;
  }
  if (nr == 0) {
    rc = pfi_error_set(err, PFI_ENOTFOUND, "%s: no complete run to summarize",
                       pfi_store_path(st));
    goto out;
  }
  /* Counted first: a summary that fails for want of usable runs still says
   * which lost their reports. */
  if (o->runs_tput_lost || o->first_tput_lost) {
    long lost = 0;
    long long first = -1;
    for (size_t i = 0; i < nr; i++) {
      char key[64];
      snprintf(key, sizeof key, "run.%lld.tput_lost", (long long)rows[i].id);
      if (pfi_store_meta_get(st, key, NULL, 0, NULL) == 1 && lost++ == 0)
        first = (long long)rows[i].id;
    }
    if (o->runs_tput_lost)
      *o->runs_tput_lost = lost;
    if (o->first_tput_lost)
      *o->first_tput_lost = first;
  }
  double clock_max = clock_max_of(st);
  for (size_t i = 0; i < nr; i++) {
    if ((rc = summarize_run(st, &rows[i], &pp, clock_max, err)) < 0)
      goto out;
    if (!rows[i].ok)
      skipped++;
  }
  if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    rc = pfi_error_set(err, PFI_EIO, "%s: %s", out_dir, strerror(errno));
    goto out;
  }
  if ((rc = open_out(out_dir, "curves.csv", tc, sizeof tc, &fc, err)) < 0 ||
      (rc = open_out(out_dir, "features.csv", tf, sizeof tf, &ff, err)) < 0)
    goto out;
  fputs(
      "job,cap_w,power_w,tokens_per_s,gpus,power_sd_w,tokens_sd,runs,source\n",
      fc);
  fputs("job,arch,task,gpus", ff);
  for (int f = 0; f < F__COUNT; f++)
    fprintf(ff, ",%s", feat_names[f]);
  fputs(",source\n", ff);
  for (size_t i = 0; i < nr;) {
    size_t j = i;
    while (j < nr && strcmp(rows[j].job, rows[i].job) == 0)
      j++;
    size_t good = 0;
    const struct run_row *top = NULL;
    for (size_t k = i; k < j; k++) {
      good += rows[k].ok != 0;
      if (rows[k].ok_feat)
        top = &rows[k]; /* rows are ordered by cap: the last is uncapped */
    }
    if (good >= 2) {
      for (size_t k = i; k < j; k++) {
        const struct run_row *rr = &rows[k];
        if (!rr->ok)
          continue;
        put_text(fc, rr->job, 1);
        put_num(fc, rr->cap_w);
        put_num(fc, rr->power_w);
        put_num(fc, rr->tokens);
        fprintf(fc, ",%d", rr->gpus);
        put_num(fc,
                rr->power_sd >= 0 ? rr->power_sd : NAN); /* unknown: blank */
        put_num(fc, rr->tokens_sd >= 0 ? rr->tokens_sd : NAN);
        fputs(",1", fc);
        put_text(fc, rr->source, 0);
        fputc('\n', fc);
      }
    } else {
      nocurve++;
    }
    if (top) {
      put_text(ff, top->job, 1);
      put_text(ff, top->arch, 0);
      put_text(ff, top->task, 0);
      fprintf(ff, ",%d", top->gpus);
      for (int f = 0; f < F__COUNT; f++)
        put_num(ff, top->feat[f]);
      put_text(ff, top->source, 0);
      fputc('\n', ff);
      jobs++;
    }
    i = j;
  }
  if (jobs == 0) {
    /* Nothing to write: no file is left (the partial ones are removed at
     * out), and the message says why. */
    char hint[400];
    no_training_hint(rows, nr, hint, sizeof hint);
    rc = pfi_error_set(err, PFI_ENOTFOUND,
                       "%s: no complete run has training-phase samples%s; "
                       "nothing written",
                       pfi_store_path(st), hint);
    goto out;
  }
  {
    /* A curves.csv of no curve is not written (nor left from an earlier
     * summary). */
    size_t points = 0;
    for (size_t i = 0; i < nr; i++)
      points += rows[i].ok != 0;
    if (points == 0 || nocurve == jobs_all(rows, nr)) {
      char final[4096];
      fclose(fc);
      fc = NULL;
      remove(tc);
      snprintf(final, sizeof final, "%s/curves.csv", out_dir);
      remove(final);
      if (o->curves_written)
        *o->curves_written = 0;
    } else {
      rc = close_out(out_dir, "curves.csv", tc, fc, err);
      fc = NULL;
      if (o->curves_written)
        *o->curves_written = 1;
    }
  }
  if (rc == 0)
    rc = close_out(out_dir, "features.csv", tf, ff, err);
  else
    fclose(ff);
  ff = NULL;
  if (rc == 0)
    rc = write_node_curves(out_dir, rows, nr, err);
  if (rc < 0)
    goto out;
  /* The mechanism summary: the steady-state clocks of every run. */
  {
    char tm[4096], fm[4096];
    snprintf(tm, sizeof tm, "%s/mechanism.csv.tmp", out_dir);
    snprintf(fm, sizeof fm, "%s/mechanism.csv", out_dir);
    if ((rc = pfi_trace_mechanism(st, tm, err)) < 0) {
      remove(tm);
      goto out;
    }
    if (rename(tm, fm) != 0) {
      rc = pfi_error_set(err, PFI_EIO, "%s: %s", fm, strerror(errno));
      remove(tm);
      goto out;
    }
  }
  rc = (int)jobs;
out:
  if (fc) {
    fclose(fc);
    remove(tc);
  }
  if (ff) {
    fclose(ff);
    remove(tf);
  }
  if (o->runs_skipped)
    *o->runs_skipped = skipped;
  if (o->jobs_without_curve)
    *o->jobs_without_curve = nocurve;
  pfi_store_iter_close(q);
  free(rows);
  return rc;
}

long pfi_trace_export(struct pfi_store *st, FILE *out, struct pfi_error *err) {
  struct pfi_store_iter *runs = NULL, *q = NULL;
  long rows = 0;
  int r, rs;
  /* Every run by id and its samples by time, then GPU. */
  if ((rows = pfi_store_runs_open(st, PFI_RUNS_ALL, &runs, err)) < 0)
    goto out;
  fputs("run_id,job,cap_w,source,gpu,t_s", out);
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    fprintf(out, ",%s", pfi_field_name(f));
  fputc('\n', out);
  struct pfi_store_run run;
  while ((rs = pfi_store_runs_next(runs, &run, err)) == 1) {
    if ((r = pfi_store_samples_open(st, run.id, PFI_STORE_ALL_GPUS, &q, err)) <
        0) {
      rows = r;
      goto out;
    }
    struct pfi_store_sample smp;
    while ((r = pfi_store_samples_next(q, &smp, err)) == 1) {
      fprintf(out, "%lld", (long long)smp.run_id);
      put_text(out, run.job, 0);
      put_num(out, run.cap_w);
      put_text(out, run.source, 0);
      fprintf(out, ",%d", (int)smp.gpu);
      put_num(out, smp.t_s);
      for (int f = 0; f < PFI_FIELD__COUNT; f++) {
        if ((smp.valid >> f) & 1u)
          put_num(out, smp.v[f]);
        else
          fputc(',', out);
      }
      fputc('\n', out);
      rows++;
    }
    pfi_store_iter_close(q);
    q = NULL;
    if (r < 0) {
      rows = r;
      goto out;
    }
  }
  if (rs < 0) {
    rows = rs;
    goto out;
  }
  if (fflush(out) != 0 || ferror(out))
    rows = pfi_error_set(err, PFI_EIO, "writing the export failed");
out:
  pfi_store_iter_close(q);
  pfi_store_iter_close(runs);
  return rows;
}
