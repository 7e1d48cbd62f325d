/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Workload simulation: strategies against the oracle over sampled mixes. */
#include "pfi/sim.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "problem_int.h"

const double pfi_sim_default_cuts[PFI_SIM_DEFAULT_NCUTS] = {
    0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40};

void pfi_sim_result_release(struct pfi_sim_result *r) {
  if (!r)
    return;
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    free(r->cell[s]);
  memset(r, 0, sizeof *r);
}

/* Appends library job j to workload problem w (a copy of its breakpoints). */
static int copy_job(struct pfi_problem *w, const struct pfi_problem *lib,
                    size_t j, struct pfi_error *err) {
  size_t a = lib->off[j], b = lib->off[j + 1];
  return pfi_problem_add(w, lib->x + a, lib->y + a, b - a, lib->x[a],
                         lib->x[b - 1], err);
}

/* Makes w the workload of library jobs pick[0..S): each job a copy of its
 * library job's breakpoints, bit for bit what pfi_problem_add() of them on
 * their own range stores (the library's breakpoints are sorted and
 * distinct, their ends the range's), without its sort and checks. */
static int build_workload(struct pfi_problem *w, const struct pfi_problem *lib,
                          const size_t *pick, size_t S, struct pfi_error *err) {
  size_t npts = 0;
  for (size_t i = 0; i < S; i++)
    npts += lib->off[pick[i] + 1] - lib->off[pick[i]];
  if (S + 1 > w->jobs_cap) {
    size_t *o = realloc(w->off, (S + 1) * sizeof *o);
    if (!o)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    w->off = o;
    w->jobs_cap = S + 1;
  }
  if (npts > w->pts_cap) {
    double *x = realloc(w->x, npts * sizeof *x);
    if (!x)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    w->x = x;
    double *y = realloc(w->y, npts * sizeof *y);
    if (!y)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    w->y = y;
    w->pts_cap = npts;
  }
  size_t at = 0;
  w->off[0] = 0;
  for (size_t i = 0; i < S; i++) {
    size_t a = lib->off[pick[i]], n = lib->off[pick[i] + 1] - a;
    memcpy(w->x + at, lib->x + a, n * sizeof *w->x);
    memcpy(w->y + at, lib->y + a, n * sizeof *w->y);
    at += n;
    w->off[i + 1] = at;
  }
  w->njobs = S;
  w->npts = at;
  return 0;
}

/* Whether the library's jobs are as build_workload() needs them: at least
 * one breakpoint each, powers strictly increasing, all finite. */
static int lib_copyable(const struct pfi_problem *lib) {
  for (size_t j = 0; j < lib->njobs; j++) {
    size_t a = lib->off[j], b = lib->off[j + 1];
    if (b <= a)
      return 0;
    for (size_t k = a; k < b; k++)
      if (!isfinite(lib->x[k]) || !isfinite(lib->y[k]) ||
          (k > a && !(lib->x[k] > lib->x[k - 1])))
        return 0;
  }
  return 1;
}

/* pfi_alloc_total_tokens(), each job's throughput computed once per
 * library job and power: jobs of one library job at the same power (the
 * proportional strategies give them the same) have the same throughput.
 * The same sum, in the same order. memo: one entry per library job, all
 * empty on entry and on return. */
struct memo {
  uint64_t p; /* the power's bits */
  double v;   /* its throughput */
  int ok;
};

static double total_tokens(const struct pfi_problem *w, const size_t *pick,
                           const double *pw, struct memo *memo) {
  double t = 0;
  for (size_t i = 0; i < w->njobs; i++) {
    struct memo *mj = &memo[pick[i]];
    uint64_t bits;
    memcpy(&bits, &pw[i], sizeof bits);
    if (!mj->ok || mj->p != bits) {
      mj->v = pfi_problem_eval(w, i, pw[i]);
      mj->p = bits;
      mj->ok = 1;
    }
    t += mj->v;
  }
  /* Emptied by the workload's jobs (a library can be much larger). */
  for (size_t i = 0; i < w->njobs; i++)
    memo[pick[i]].ok = 0;
  return t;
}

/* Workers of a simulation: two where the machine has two processors or
 * more (the results do not depend on it). */
static size_t sim_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 2 ? 2 : 1;
}

/* Mean and 95 % t-interval of v[0..n-1], n >= 2. */
static void mean_ci(const double *v, size_t n, double *mean, double *lo,
                    double *hi) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m += v[i];
  m /= (double)n;
  double ss = 0;
  for (size_t i = 0; i < n; i++)
    ss += (v[i] - m) * (v[i] - m);
  double sd = sqrt(ss / (double)(n - 1));
  double h = gsl_cdf_tdist_Pinv(0.975, (double)(n - 1)) * sd / sqrt((double)n);
  *mean = m;
  *lo = m - h;
  *hi = m + h;
}

/* What the workers share, and each one's own state. */
struct sim_shared {
  const struct pfi_problem *lib;
  int copyable;                   /* lib_copyable(lib) */
  const struct pfi__hull_lib *hl; /* the library's hulls, when copyable */
  const struct pfi_alloc_inputs *in;
  const struct pfi_sim_config *cfg;
  const size_t *pick; /* library jobs of workloads b0.. (S each) */
  size_t b0, b1;      /* the batch of workloads being scored */
  unsigned run;
  double *tot[PFI_STRAT__COUNT]; /* tot[s][c * W + w] */
  pthread_mutex_t lock;          /* progress */
  size_t done;
};

struct sim_worker {
  struct sim_shared *sh;
  size_t first, step; /* workloads first, first + step, ... */
  pthread_t th;
  int rc; /* 0, or the error of workload err_w */
  size_t err_w;
  struct pfi_error err;
};

/* Scores workloads first, first + step, ... until the end or the first
 * error (each workload is independent of the others, so the results do not
 * depend on how the workloads are split). */
static void *sim_work(void *arg) {
  struct sim_worker *wk = arg;
  struct sim_shared *sh = wk->sh;
  const struct pfi_problem *lib = sh->lib;
  const struct pfi_alloc_inputs *in = sh->in;
  const struct pfi_sim_config *cfg = sh->cfg;
  size_t W = cfg->workloads, S = cfg->size, C = cfg->ncuts;
  struct pfi_error *err = &wk->err;
  int rc = 0;
  size_t w = sh->b0 + wk->first;
  struct pfi_problem wp;
  pfi_problem_init(&wp);
  struct pfi_alloc_plan *plan[PFI_STRAT__COUNT] = {0};
  size_t L = lib->njobs;
  double *pw = malloc(S * sizeof *pw);
  double *wpfi = malloc(S * sizeof *wpfi), *wdram = malloc(S * sizeof *wdram);
  int *wmoe = malloc(S * sizeof *wmoe);
  struct memo *memo = calloc(L + 1, sizeof *memo);
  if (!pw || !wpfi || !wdram || !wmoe || !memo) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  struct pfi_alloc_inputs win = {in && in->pfi ? wpfi : NULL,
                                 in && in->dram_copy ? wdram : NULL,
                                 in && in->moe_ft ? wmoe : NULL};
  for (; w < sh->b1; w += wk->step) {
    const size_t *pick = sh->pick + (w - sh->b0) * S;
    if (sh->copyable) {
      if ((rc = build_workload(&wp, lib, pick, S, err)) < 0)
        goto out;
    } else {
      pfi_problem_clear(&wp);
      for (size_t i = 0; i < S; i++)
        if ((rc = copy_job(&wp, lib, pick[i], err)) < 0)
          goto out;
    }
    for (size_t i = 0; i < S; i++) {
      size_t j = pick[i];
      wpfi[i] = in && in->pfi ? in->pfi[j] : 0;
      wdram[i] = in && in->dram_copy ? in->dram_copy[j] : 0;
      wmoe[i] = in && in->moe_ft ? in->moe_ft[j] : 0;
    }
    double lo, hi;
    pfi_problem_bounds(&wp, &lo, &hi);
    /* Each strategy prepared once for the workload, run at every cut: the
     * results are pfi_alloc_run's, bit for bit (alloc.h). */
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      pfi_alloc_plan_free(plan[s]);
      plan[s] = NULL;
      if ((sh->run & (1u << s)) &&
          (rc = pfi__alloc_plan_new_lib(&plan[s], &wp, (enum pfi_strategy)s,
                                        &win, sh->hl, pick, L, err)) < 0)
        goto out;
    }
    for (size_t c = 0; c < C; c++) {
      double B = (1 - cfg->cuts[c]) * hi;
      if (B < lo) {
        /* The cut lies below the sampled jobs' floors: this workload
         * cannot take it. Counted per cut (pfi_sim_cell.feasible), not an
         * error: the other workloads still answer. */
        for (int s = 0; s < PFI_STRAT__COUNT; s++)
          if (sh->run & (1u << s))
            sh->tot[s][c * W + w] = NAN;
        continue;
      }
      for (int s = 0; s < PFI_STRAT__COUNT; s++) {
        if (!(sh->run & (1u << s)))
          continue;
        if ((rc = pfi_alloc_plan_run(plan[s], B, pw, err)) < 0)
          goto out;
        sh->tot[s][c * W + w] = total_tokens(&wp, pick, pw, memo) / (double)S;
      }
    }
    if (cfg->progress) {
      pthread_mutex_lock(&sh->lock);
      sh->done++;
      cfg->progress(sh->done, W, cfg->progress_arg);
      pthread_mutex_unlock(&sh->lock);
    }
  }
out:
  wk->rc = rc;
  wk->err_w = w;
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    pfi_alloc_plan_free(plan[s]);
  pfi_problem_release(&wp);
  free(pw);
  free(wpfi);
  free(wdram);
  free(wmoe);
  free(memo);
  return NULL;
}

int pfi_sim_run(const struct pfi_problem *lib,
                const struct pfi_alloc_inputs *in,
                const struct pfi_sim_config *cfg, struct pfi_sim_result *out,
                struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  size_t L = lib->njobs, W = cfg->workloads, S = cfg->size, C = cfg->ncuts;
  if (L == 0)
    return pfi_error_set(err, PFI_EINVAL, "the job library is empty");
  if (W < 2)
    return pfi_error_set(err, PFI_EINVAL,
                         "at least 2 workloads are needed for an interval");
  if (S == 0 || C == 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "workload size and cuts must be "
                         "non-empty");
  /* The result arrays hold C x W doubles per strategy: a count whose byte
   * size wraps around would allocate too little. */
  if (W > SIZE_MAX / sizeof(double) / C || S > SIZE_MAX / sizeof(double))
    return pfi_error_set(err, PFI_EINVAL,
                         "%zu workloads x %zu cuts (or %zu jobs) is too large",
                         W, C, S);
  for (size_t c = 0; c < C; c++)
    if (!(cfg->cuts[c] >= 0 && cfg->cuts[c] < 1))
      return pfi_error_set(err, PFI_EINVAL, "cut %g outside [0, 1)",
                           cfg->cuts[c]);
  unsigned want = cfg->strategies;
  unsigned run = want | (1u << PFI_STRAT_ORACLE) | (1u << PFI_STRAT_EQUAL);
  if (in && in->pfi)
    run |= 1u << PFI_STRAT_PFI_AWARE;
  int rc = 0;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_ran_discrete_t *disc = NULL;
  /* Workloads are scored in batches: a batch's jobs are drawn first, in
   * workload order (the random stream is the one of drawing them workload
   * by workload), then its workloads are scored on the workers. */
  size_t batch = ((size_t)1 << 20) / S;
  if (batch < 1)
    batch = 1;
  if (batch > 1024)
    batch = 1024;
  if (batch > W)
    batch = W;
  size_t *pick = malloc(batch * S * sizeof *pick);
  /* tot[s][c * W + w]: tokens/s per job of strategy s. */
  double *tot[PFI_STRAT__COUNT] = {0};
  double *tmp = malloc(W * sizeof *tmp);
  size_t *nfeas = NULL; /* per cut: workloads that could take it */
  if (!rng || !pick || !tmp)
    goto nomem;
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    if (run & (1u << s))
      if (!(tot[s] = malloc(C * W * sizeof *tot[s])))
        goto nomem;
  gsl_rng_set(rng, cfg->seed);
  if (cfg->sample_weight) {
    double sum = 0;
    for (size_t j = 0; j < L; j++) {
      if (!(cfg->sample_weight[j] >= 0) || !isfinite(cfg->sample_weight[j])) {
        rc =
            pfi_error_set(err, PFI_EINVAL, "bad sampling weight of job %zu", j);
        goto out;
      }
      sum += cfg->sample_weight[j];
    }
    if (!(sum > 0)) {
      rc = pfi_error_set(err, PFI_EINVAL, "every sampling weight is zero");
      goto out;
    }
    if (!(disc = gsl_ran_discrete_preproc(L, cfg->sample_weight)))
      goto nomem;
  }
  {
    struct sim_shared sh = {
        lib, 0, NULL, in, cfg, pick, 0, 0, run, {0}, PTHREAD_MUTEX_INITIALIZER,
        0};
    memcpy(sh.tot, tot, sizeof sh.tot);
    /* The library's hull segments, computed and sorted once for every
     * workload's oracle (a job with too many points: none, and each
     * workload's oracle says so as it would have). */
    sh.copyable = lib_copyable(lib);
    struct pfi__hull_lib *hl = NULL;
    if (sh.copyable) {
      struct pfi_error he;
      if (pfi__hull_lib_new(&hl, lib, &he) == PFI_ENOMEM)
        goto nomem;
    }
    sh.hl = hl;
    size_t nt = cfg->threads ? cfg->threads : sim_threads();
    if (nt > batch)
      nt = batch;
    if (nt < 1)
      nt = 1;
    if (nt > 64)
      nt = 64;
    struct sim_worker wk[64];
    for (size_t b0 = 0; b0 < W && rc == 0; b0 += batch) {
      size_t b1 = W - b0 < batch ? W : b0 + batch;
      for (size_t q = 0; q < (b1 - b0) * S; q++)
        pick[q] = disc ? gsl_ran_discrete(rng, disc)
                       : (size_t)gsl_rng_uniform_int(rng, L);
      sh.b0 = b0;
      sh.b1 = b1;
      uint64_t started = 0;
      for (size_t t = 0; t < nt; t++) {
        wk[t] = (struct sim_worker){&sh, t, nt, 0, 0, 0, {0}};
        pfi_error_clear(&wk[t].err);
      }
      /* Worker 0 runs here, the others on threads (one that cannot be
       * started runs here after). */
      for (size_t t = 1; t < nt; t++)
        if (pthread_create(&wk[t].th, NULL, sim_work, &wk[t]) == 0)
          started |= (uint64_t)1 << t;
      sim_work(&wk[0]);
      for (size_t t = 1; t < nt; t++)
        if (started & ((uint64_t)1 << t))
          pthread_join(wk[t].th, NULL);
        else
          sim_work(&wk[t]);
      /* The error of the first failing workload, as one pass in order
       * would have met it. */
      size_t bad = SIZE_MAX;
      for (size_t t = 0; t < nt; t++)
        if (wk[t].rc < 0 && (bad == SIZE_MAX || wk[t].err_w < wk[bad].err_w))
          bad = t;
      if (bad != SIZE_MAX) {
        rc = wk[bad].rc;
        if (err)
          *err = wk[bad].err;
      }
    }
    pthread_mutex_destroy(&sh.lock);
    pfi__hull_lib_free(hl);
    if (rc < 0)
      goto out;
  }
  out->ncuts = C;
  out->workloads = W;
  /* The workloads that could take each cut, moved to the front of every
   * strategy's row, in order (with every workload feasible nothing moves
   * and the sums below are the same bit for bit). */
  if (!(nfeas = calloc(C, sizeof *nfeas)))
    goto nomem;
  for (size_t c = 0; c < C; c++)
    for (size_t w = 0; w < W; w++) {
      if (isnan(tot[PFI_STRAT_ORACLE][c * W + w]))
        continue;
      for (int s2 = 0; s2 < PFI_STRAT__COUNT; s2++)
        if (tot[s2])
          tot[s2][c * W + nfeas[c]] = tot[s2][c * W + w];
      nfeas[c]++;
    }
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (!(want & (1u << s)))
      continue;
    if (!(out->cell[s] = calloc(C, sizeof *out->cell[s])))
      goto nomem;
    for (size_t c = 0; c < C; c++) {
      struct pfi_sim_cell *cell = &out->cell[s][c];
      size_t nf = nfeas[c];
      cell->feasible = nf;
      if (nf < 2) {
        /* Fewer than two workloads: no mean with an interval. */
        cell->gap_mean = cell->gap_lo = cell->gap_hi = NAN;
        cell->tokens_mean = cell->closed_pct = NAN;
        cell->vs_aware_mean = cell->vs_aware_lo = cell->vs_aware_hi = NAN;
        continue;
      }
      size_t nw = nf; /* the values below are over these */
      const double *o = tot[PFI_STRAT_ORACLE] + c * W, *v = tot[s] + c * W;
      /* The oracle is optimal to a relative 1e-9 (oracle.h): a strategy
       * "above" it by less is rounding, counted as no gap. */
      for (size_t w = 0; w < nw; w++) {
        tmp[w] = o[w] - v[w];
        if (tmp[w] < 0 && -tmp[w] <= 1e-9 * (fabs(o[w]) + 1e-300))
          tmp[w] = 0;
      }
      mean_ci(tmp, nw, &cell->gap_mean, &cell->gap_lo, &cell->gap_hi);
      double tm = 0;
      for (size_t w = 0; w < nw; w++)
        tm += v[w];
      cell->tokens_mean = tm / (double)nw;
      double geq = 0, omean = 0;
      for (size_t w = 0; w < nw; w++) {
        geq += o[w] - tot[PFI_STRAT_EQUAL][c * W + w];
        omean += o[w];
      }
      geq /= (double)nw;
      omean /= (double)nw;
      /* The share of a zero gap is undefined (no cut, or equal optimal). */
      if (geq > 1e-9 * (fabs(omean) + 1e-300)) {
        cell->closed_defined = 1;
        cell->closed_pct = 100 * (geq - cell->gap_mean) / geq;
      } else {
        cell->closed_pct = NAN;
      }
      if (tot[PFI_STRAT_PFI_AWARE]) {
        const double *a = tot[PFI_STRAT_PFI_AWARE] + c * W;
        for (size_t w = 0; w < nw; w++)
          tmp[w] = v[w] - a[w];
        mean_ci(tmp, nw, &cell->vs_aware_mean, &cell->vs_aware_lo,
                &cell->vs_aware_hi);
        cell->vs_aware_defined = 1;
      }
    }
  }
  rc = 0;
  goto out;
nomem:
  rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
out:
  if (rc < 0)
    pfi_sim_result_release(out);
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    free(tot[s]);
  gsl_rng_free(rng);
  if (disc)
    gsl_ran_discrete_free(disc);
  free(pick);
  free(tmp);
  free(nfeas);
  return rc;
}

static int mix_weights(struct pfi_table *tp, const int *is_ft, const int *gpus,
                       size_t njobs, double *weight, size_t *fallbacks,
                       struct pfi_error *err);

int pfi_mix_weights(const char *mix_path, const int *is_ft, const int *gpus,
                    size_t njobs, double *weight, size_t *fallbacks,
                    struct pfi_error *err) {
  struct pfi_table t;
  int rc = pfi_table_load(&t, mix_path, err);
  if (rc < 0)
    return rc;
  return mix_weights(&t, is_ft, gpus, njobs, weight, fallbacks, err);
}

int pfi_mix_weights_mem(const char *name, const char *data, size_t len,
                        const int *is_ft, const int *gpus, size_t njobs,
                        double *weight, size_t *fallbacks,
                        struct pfi_error *err) {
  struct pfi_table t;
  int rc = pfi_table_load_mem(&t, name, data, len, err);
  if (rc < 0)
    return rc;
  return mix_weights(&t, is_ft, gpus, njobs, weight, fallbacks, err);
}

/* Computes the weights from a loaded mix table, then releases it. */
static int mix_weights(struct pfi_table *tp, const int *is_ft, const int *gpus,
                       size_t njobs, double *weight, size_t *fallbacks,
                       struct pfi_error *err) {
  struct pfi_table t = *tp;
  int rc = 0;
  static const char *const cols[] = {"task", "min_gpus", "max_gpus", "share"};
  int ci[4];
  for (int k = 0; k < 4; k++)
    if ((ci[k] = pfi_table_find(&t, cols[k])) < 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, 1, 1,
                            "mix file has no '%s' column", cols[k]);
      goto out;
    }
  size_t nr = t.nrows;
  size_t *count = calloc(nr + 1, sizeof *count);
  int *row_of = malloc((njobs + 1) * sizeof *row_of);
  double *lo = malloc((nr + 1) * sizeof *lo),
         *hi = malloc((nr + 1) * sizeof *hi),
         *share = malloc((nr + 1) * sizeof *share);
  int *ft = malloc((nr + 1) * sizeof *ft);
  if (!count || !row_of || !lo || !hi || !share || !ft) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out2;
  }
  for (size_t r = 0; r < nr; r++) {
    const char *task = pfi_table_cell(&t, r, (size_t)ci[0]);
    if (task && strcasecmp(task, "ft") == 0)
      ft[r] = 1;
    else if (task && strcasecmp(task, "pt") == 0)
      ft[r] = 0;
    else {
      rc = pfi_error_setloc(
          err, PFI_EPARSE, t.name, t.line[r],
          t.col[r * t.ncols + ci[0]] ? t.col[r * t.ncols + ci[0]] : 1,
          "task must be 'pt' or 'ft'");
      goto out2;
    }
    if ((rc = pfi_table_double(&t, r, (size_t)ci[1], &lo[r], err)) < 0 ||
        (rc = pfi_table_double(&t, r, (size_t)ci[2], &hi[r], err)) < 0 ||
        (rc = pfi_table_double(&t, r, (size_t)ci[3], &share[r], err)) < 0)
      goto out2;
    /* Shares are proportions: the bound keeps sums of them finite. */
    if (share[r] < 0 || share[r] > 1e12 || lo[r] > hi[r]) {
      rc = pfi_error_setloc(err, PFI_EPARSE, t.name, t.line[r],
                            t.col[r * t.ncols + ci[3]],
                            "share must be in [0, 1e12] and min_gpus <= "
                            "max_gpus");
      goto out2;
    }
  }
  for (size_t j = 0; j < njobs; j++) {
    row_of[j] = -1;
    for (size_t r = 0; r < nr; r++)
      if (ft[r] == (is_ft[j] != 0) && gpus[j] >= lo[r] && gpus[j] <= hi[r]) {
        row_of[j] = (int)r;
        count[r]++;
        break;
      }
    weight[j] = 0;
  }
  size_t fb = 0;
  for (size_t r = 0; r < nr; r++) {
    if (share[r] == 0)
      continue;
    if (count[r] > 0) {
      for (size_t j = 0; j < njobs; j++)
        if (row_of[j] == (int)r)
          weight[j] += share[r] / (double)count[r];
      continue;
    }
    /* No job in the row's GPU range: its share goes to every job of the
     * task class. */
    size_t m = 0;
    for (size_t j = 0; j < njobs; j++)
      m += (is_ft[j] != 0) == ft[r];
    if (m == 0) {
      rc = pfi_error_setloc(err, PFI_EINVAL, t.name, t.line[r], 1,
                            "the library has no %s job for this row",
                            ft[r] ? "fine-tuning" : "pretraining");
      goto out2;
    }
    for (size_t j = 0; j < njobs; j++)
      if ((is_ft[j] != 0) == ft[r])
        weight[j] += share[r] / (double)m;
    fb++;
  }
  if (fallbacks)
    *fallbacks = fb;
  rc = 0;
out2:
  free(count);
  free(row_of);
  free(lo);
  free(hi);
  free(share);
  free(ft);
out:
  pfi_table_release(&t);
  return rc;
}
