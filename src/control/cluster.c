/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The emulated cluster in virtual time (cluster.h). EMULATED: jobs are the
 * emulator's (emu.h), the dynamics of a cap change are fitted to a real
 * V100 trace, everything else is the model's. docs/control.md "The
 * emulated cluster" gives every constant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/alloc.h"
#include "pfi/cluster.h"
#include "pfi/index.h"
#include "pfi/model.h"

/* Steady states are tabulated at uniform caps every CAP_STEP W. */
#define CAP_STEP 2.5
/* Paper-level noise: run-to-run CV (power, tokens/s), period-to-period. */
#define RUN_CV_POWER 0.004
#define RUN_CV_TOKENS 0.005
#define PER_CV_POWER 0.0073
#define PER_CV_TOKENS 0.0091
#define STARTUP_S 150.0

/* ---- randomness: a pure function of (seed, stream, index) -------------- */

static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double unif(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = mix64(mix64(mix64(seed) ^ a) ^ b);
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(uint64_t seed, uint64_t a, uint64_t b) {
  double u1 = unif(seed, a, b), u2 = unif(seed ^ 0x5851f42d4c957f2dull, a, b);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
enum {
  S_JOB = 1,
  S_PARAM,
  S_PHASE,
  S_RUN,
  S_PER_P,
  S_PER_T,
  S_STEP,
  S_FAULT,
  S_TIER,
  S_ANN
};

/* ---- the cluster -------------------------------------------------------- */

enum fault_kind { F_NONE, F_STALL, F_SLOW, F_FAIL, F_SILENT };

struct cjob {
  struct pfi_cluster_job info;
  const struct pfi_emu_profile *prof;
  size_t ncap;      /* table entries */
  double *tab_tok;  /* ncap noise-free tokens/s */
  double *tab_pow;  /* ncap x ngpus per-GPU power, W */
  double *tab_step; /* ncap step time, s */
  double run_pf, run_tf;
  double eval_off, ckpt_off; /* phase offsets, s */
  int fault;                 /* enum fault_kind */
  double fault_t0, fault_t1;
  double cur_cap[PFI_EMU_MAX_GPUS];
  double tok_prev, step_prev;
  int running;
};

struct pfi_cluster {
  struct pfi_cluster_config cfg;
  const struct pfi_emu_profile *prof;
  struct pfi_emu_jobs lib;
  size_t ngpus;
  struct cjob *job;
  size_t njobs, jobs_cap;
  double t;
  double *level; /* realized power of each GPU at the current time, W */
  double *goal;  /* the steady value it is moving toward, W */
  double *delay; /* dead time left before it moves, s */
  double *tau;   /* its time constant, s */
  double *cap;   /* caps in force, W */
  int *owner;    /* job id on each GPU, -1 idle */
  int *silent;   /* node telemetry stopped until (per GPU, as a flag) */
  struct pfi_ctl_gpu_obs *gobs;
  int *run_ids, *started, *ended, *phase, *tvalid;
  double *tok, *true_tok;
  double *ann_in, *ann_len, *ann_end; /* the trainers' announcements */
  size_t nstarted, nended;
  struct pfi_model model;
  double model_rmse;
  size_t next_fault_check;
  double horizon;
};

size_t pfi_cluster_ngpus(const struct pfi_cluster *cl) { return cl->ngpus; }
size_t pfi_cluster_njobs_total(const struct pfi_cluster *cl) {
  return cl->njobs;
}

void pfi_cluster_limits(const struct pfi_cluster *cl, double *min_w,
                        double *max_w) {
  for (size_t g = 0; g < cl->ngpus; g++) {
    min_w[g] = cl->prof->min_mw / 1000.0;
    max_w[g] = cl->prof->max_mw / 1000.0;
  }
}

const struct pfi_cluster_job *pfi_cluster_job_at(const struct pfi_cluster *cl,
                                                 int id) {
  return id >= 0 && (size_t)id < cl->njobs ? &cl->job[id].info : NULL;
}

static double dram_copy_of(const struct pfi_emu_job *jp, double cap_max) {
  double caps[PFI_EMU_MAX_GPUS];
  struct pfi_emu_steady st;
  for (int r = 0; r < PFI_EMU_MAX_GPUS; r++)
    caps[r] = cap_max;
  if (pfi_emu_steady(jp, caps, 1, &st, NULL) < 0)
    return NAN;
  return st.gpu[0].dram_active * st.gpu[0].mem_copy_util;
}

/* The telemetry model: PFI ~ DRAM copy product, fitted on the library's
 * own jobs of the cluster's profile (their emulated fine-grid PFI). */
static int fit_model(struct pfi_cluster *cl, struct pfi_error *err) {
  size_t n = 0;
  double *x = malloc(cl->lib.n * sizeof *x), *y = malloc(cl->lib.n * sizeof *y);
  int rc = 0;
  if (!x || !y) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  double cmax = cl->prof->max_mw / 1000.0;
  for (size_t i = 0; i < cl->lib.n; i++) {
    const struct pfi_emu_job *jp = &cl->lib.job[i];
    if (strcmp(jp->profile, cl->prof->name))
      continue;
    double p;
    if (pfi_emu_sweep_pfi(jp, pfi_emu_grid_fine, 6, cl->cfg.seed, &p, NULL) < 0)
      continue;
    x[n] = dram_copy_of(jp, cmax);
    y[n] = p;
    if (isfinite(x[n]))
      n++;
  }
  const char *names[1] = {"dram_copy_product"};
  if ((rc = pfi_model_fit(x, n, 1, y, names, &cl->model, err)) < 0)
    goto out;
  cl->model_rmse = cl->model.rmse;
out:
  free(x);
  free(y);
  return rc;
}

/* A job drawn from the emulator's parameter space: a library entry's
 * model, size and task as the template, its four calibrated parameters
 * drawn anew (ranges of the library), kept when its uncapped per-GPU power
 * is 300..690 W. */
static int draw_params(struct pfi_cluster *cl, int id, struct pfi_emu_job *jp) {
  uint64_t s = cl->cfg.seed;
  for (int tries = 0; tries < 64; tries++) {
    double u = unif(s, S_PARAM, (uint64_t)id * 64 + tries);
    size_t k = (size_t)(u * cl->lib.n) % cl->lib.n;
    *jp = cl->lib.job[k];
    if (strcmp(jp->profile, cl->prof->name))
      continue;
    uint64_t b = (uint64_t)id * 1024 + tries * 8;
    jp->mem_share = 0.02 + 0.55 * unif(s, S_PARAM + 100, b);
    jp->comm_share = 0.02 + 0.33 * unif(s, S_PARAM + 100, b + 1);
    if (jp->mem_share + jp->comm_share > 0.8)
      continue;
    jp->sm_power_w = 500 + 1500 * unif(s, S_PARAM + 100, b + 2);
    jp->mem_sm_weight = 0.1 + 0.9 * unif(s, S_PARAM + 100, b + 3);
    jp->pfi_published = jp->pfi_coarse_published = NAN;
    snprintf(jp->id, sizeof jp->id, "new%04d-%s-%s", id, jp->arch, jp->task);
    double caps[PFI_EMU_MAX_GPUS];
    struct pfi_emu_steady st;
    for (int r = 0; r < PFI_EMU_MAX_GPUS; r++)
      caps[r] = cl->prof->max_mw / 1000.0;
    if (pfi_emu_steady(jp, caps, s, &st, NULL) < 0)
      continue;
    double pg = st.power_w / jp->gpus;
    if (pg >= 300 && pg <= 690)
      return 0;
  }
  return -1;
}

static int tabulate(struct pfi_cluster *cl, struct cjob *j,
                    struct pfi_error *err) {
  double lo = cl->prof->min_mw / 1000.0, hi = cl->prof->max_mw / 1000.0;
  size_t n = (size_t)llround((hi - lo) / CAP_STEP) + 1, g = j->info.ngpus;
  j->ncap = n;
  j->tab_tok = malloc(n * sizeof *j->tab_tok);
  j->tab_step = malloc(n * sizeof *j->tab_step);
  j->tab_pow = malloc(n * g * sizeof *j->tab_pow);
  if (!j->tab_tok || !j->tab_step || !j->tab_pow)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  struct pfi_emu_steady st;
  double caps[PFI_EMU_MAX_GPUS];
  for (size_t i = 0; i < n; i++) {
    double c = i + 1 == n ? hi : lo + CAP_STEP * (double)i;
    for (int r = 0; r < PFI_EMU_MAX_GPUS; r++)
      caps[r] = c;
    int rc = pfi_emu_steady(&j->info.params, caps, cl->cfg.seed, &st, err);
    if (rc < 0)
      return rc;
    j->tab_tok[i] = st.tokens_per_s;
    j->tab_step[i] = st.step_s;
    for (size_t r = 0; r < g; r++)
      j->tab_pow[i * g + r] = st.gpu[r].power_w;
  }
  return 0;
}

/* Steady state at the job's current caps: table when uniform, else the
 * exact synchronous model. */
static void steady_now(const struct pfi_cluster *cl, const struct cjob *j,
                       double *tok, double *step, double *pow_out) {
  size_t g = j->info.ngpus;
  int uniform = 1;
  for (size_t r = 1; r < g; r++)
    if (j->cur_cap[r] != j->cur_cap[0])
      uniform = 0;
  if (!uniform) {
    struct pfi_emu_steady st;
    if (pfi_emu_steady(&j->info.params, j->cur_cap, cl->cfg.seed, &st, NULL) ==
        0) {
      *tok = st.tokens_per_s;
      *step = st.step_s;
      for (size_t r = 0; r < g; r++)
        pow_out[r] = st.gpu[r].power_w;
      return;
    }
  }
  double lo = cl->prof->min_mw / 1000.0;
  double x = (j->cur_cap[0] - lo) / CAP_STEP;
  if (x < 0)
    x = 0;
  if (x > (double)(j->ncap - 1))
    x = (double)(j->ncap - 1);
  size_t i = (size_t)floor(x);
  if (i + 1 >= j->ncap)
    i = j->ncap - 2;
  double w = x - (double)i;
  *tok = j->tab_tok[i] + w * (j->tab_tok[i + 1] - j->tab_tok[i]);
  *step = j->tab_step[i] + w * (j->tab_step[i + 1] - j->tab_step[i]);
  for (size_t r = 0; r < g; r++)
    pow_out[r] = j->tab_pow[i * g + r] +
                 w * (j->tab_pow[(i + 1) * g + r] - j->tab_pow[i * g + r]);
}

int pfi_cluster_true_curve(const struct pfi_cluster *cl, int id,
                           double *power_w, double *tokens, size_t n) {
  if (id < 0 || (size_t)id >= cl->njobs || n < 2 || n > 64)
    return PFI_EINVAL;
  const struct cjob *j = &cl->job[id];
  size_t g = j->info.ngpus;
  for (size_t k = 0; k < n; k++) {
    double x = (double)(j->ncap - 1) * (double)k / (double)(n - 1);
    size_t i = (size_t)llround(x);
    double p = 0;
    for (size_t r = 0; r < g; r++)
      p += j->tab_pow[i * g + r];
    power_w[k] = p * j->run_pf;
    tokens[k] = j->tab_tok[i] * j->run_tf;
  }
  return (int)n;
}

/* Adds job `id` on GPUs gpu[0..n), running from start to end. */
static int add_job(struct pfi_cluster *cl, const size_t *gpu, size_t n,
                   double start, double end, struct pfi_error *err) {
  if (cl->njobs == cl->jobs_cap) {
    size_t nc = cl->jobs_cap ? 2 * cl->jobs_cap : 64;
    struct cjob *nj = realloc(cl->job, nc * sizeof *nj);
    if (!nj)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    cl->job = nj;
    cl->jobs_cap = nc;
  }
  int id = (int)cl->njobs;
  struct cjob *j = &cl->job[id];
  memset(j, 0, sizeof *j);
  cl->njobs++;
  uint64_t s = cl->cfg.seed;
  struct pfi_cluster_job *in = &j->info;
  in->id = id;
  in->ngpus = n;
  memcpy(in->gpu, gpu, n * sizeof *gpu);
  in->start_s = start;
  in->end_s = end;
  /* Library entry of this size, or a new one from the parameter space. */
  int lib = unif(s, S_JOB, (uint64_t)id * 8 + 1) < cl->cfg.library_share;
  int found = 0;
  if (lib) {
    size_t k0 = (size_t)(unif(s, S_JOB, (uint64_t)id * 8 + 2) * cl->lib.n);
    for (size_t q = 0; q < cl->lib.n && !found; q++) {
      const struct pfi_emu_job *e = &cl->lib.job[(k0 + q) % cl->lib.n];
      if (!strcmp(e->profile, cl->prof->name) && e->gpus == n) {
        in->params = *e;
        found = 1;
      }
    }
  }
  if (!found) {
    if (draw_params(cl, id, &in->params) < 0)
      return pfi_error_set(err, PFI_ENUMERIC,
                           "cluster: no job could be drawn for job %d", id);
    lib = 0;
  }
  in->params.gpus = (unsigned)n;
  in->library = lib;
  snprintf(in->family, sizeof in->family, "%s", in->params.model);
  snprintf(in->name, sizeof in->name, "j%04d-%.88s", id, in->params.id);
  j->prof = cl->prof;
  int rc = tabulate(cl, j, err);
  if (rc < 0)
    return rc;
  j->run_pf = 1 + RUN_CV_POWER * gauss(s, S_RUN, (uint64_t)id * 2);
  j->run_tf = 1 + RUN_CV_TOKENS * gauss(s, S_RUN, (uint64_t)id * 2 + 1);
  j->eval_off = cl->cfg.eval_every_s * unif(s, S_PHASE, (uint64_t)id * 2);
  j->ckpt_off = cl->cfg.ckpt_every_s * unif(s, S_PHASE, (uint64_t)id * 2 + 1);
  if (cl->cfg.ckpt_wave_s > 0) {
    /* A checkpoint begins where x + ckpt_off is a multiple of the cadence
     * (phase_at): at the wave's x. */
    double x = cl->cfg.ckpt_wave_s - start - STARTUP_S;
    double m = fmod(x, cl->cfg.ckpt_every_s);
    j->ckpt_off = m > 0 ? cl->cfg.ckpt_every_s - m : -m;
  }
  /* What the controller is told: uncapped point and the model's PFI. */
  double pmax = 0;
  for (size_t r = 0; r < n; r++)
    pmax += j->tab_pow[(j->ncap - 1) * n + r];
  in->pmax_w = pmax * j->run_pf;
  in->tmax = j->tab_tok[j->ncap - 1] * j->run_tf;
  double x = dram_copy_of(&in->params, cl->prof->max_mw / 1000.0);
  in->pfi_est = pfi_model_predict(&cl->model, &x);
  if (!(in->pfi_est > 0.3))
    in->pfi_est = 0.3;
  double half = 1.96 * cl->model_rmse;
  in->pfi_lo = in->pfi_est - half > 0.3 ? in->pfi_est - half : 0.3;
  in->pfi_hi = in->pfi_est + half;
  double tp;
  in->true_pfi =
      pfi_emu_sweep_pfi(&in->params, pfi_emu_grid_fine, 6, s, &tp, NULL) == 0
          ? tp
          : NAN;
  /* SLA: tiers Flex 10/25/50 % for a share of jobs, protection. */
  double u = unif(s, S_TIER, (uint64_t)id * 4);
  static const double tiers[3] = {0.10, 0.25, 0.50};
  in->max_loss =
      u < cl->cfg.tiered_share
          ? tiers[(size_t)(unif(s, S_TIER, (uint64_t)id * 4 + 1) * 3) % 3]
          : 1.0;
  in->protect = unif(s, S_TIER, (uint64_t)id * 4 + 2) < cl->cfg.protect_share;
  in->min_cap_w = 0;
  /* The tiered jobs' longest event and notice; deadlines on a share of
   * the jobs (a stream of their own: the draws above are unchanged). */
  in->max_event_s = in->max_loss < 1 ? cl->cfg.tier_max_event_s : 0;
  in->notice_s = in->max_loss < 1 ? cl->cfg.tier_notice_s : 0;
  in->deadline_tput =
      cl->cfg.deadline_share > 0 &&
              unif(s, S_TIER, (uint64_t)id * 4 + 3) < cl->cfg.deadline_share
          ? cl->cfg.deadline_frac * in->tmax
          : 0;
  for (size_t r = 0; r < n; r++)
    j->cur_cap[r] = cl->prof->max_mw / 1000.0;
  return id;
}

static size_t pick_size(struct pfi_cluster *cl, int k, size_t avail) {
  static const size_t sizes[3] = {8, 16, 32};
  double u = unif(cl->cfg.seed, S_JOB, (uint64_t)k * 8 + 5);
  size_t want = u < 0.6 ? sizes[0] : u < 0.85 ? sizes[1] : sizes[2];
  while (want > avail && want > 8)
    want /= 2;
  if (want > avail)
    want = avail;
  return want;
}

static double job_len(struct pfi_cluster *cl, int k) {
  double u = unif(cl->cfg.seed, S_JOB, (uint64_t)k * 8 + 6);
  double len = -log(u) * cl->cfg.job_hours * 3600.0;
  return len < 1800 ? 1800 : len;
}

/* Places jobs on free GPU blocks (whole free runs, first fit). */
static int fill_free(struct pfi_cluster *cl, double t, int initial,
                     struct pfi_error *err) {
  size_t target_busy = initial ? (size_t)(cl->cfg.fill * cl->ngpus) : cl->ngpus;
  size_t busy = 0;
  for (size_t g = 0; g < cl->ngpus; g++)
    busy += cl->owner[g] >= 0;
  size_t g = 0;
  while (g < cl->ngpus && busy < target_busy) {
    if (cl->owner[g] >= 0) {
      g++;
      continue;
    }
    size_t run = 0;
    while (g + run < cl->ngpus && cl->owner[g + run] < 0)
      run++;
    if (run < 8 && run < cl->ngpus) {
      g += run;
      continue;
    }
    int k = (int)cl->njobs;
    size_t n =
        pick_size(cl, k, run < PFI_EMU_MAX_GPUS ? run : PFI_EMU_MAX_GPUS);
    if (busy + n > target_busy && initial)
      break;
    size_t gpus[PFI_EMU_MAX_GPUS];
    for (size_t r = 0; r < n; r++)
      gpus[r] = g + r;
    double len = job_len(cl, k);
    /* Jobs running at t = 0 started earlier (past their start-up), or,
     * cold_start, all start then. */
    double start =
        initial && cl->cfg.cold_start ? t
        : initial ? t - len * unif(cl->cfg.seed, S_JOB, k * 8 + 7) - STARTUP_S
                  : t + 60.0 * (1 + 9 * unif(cl->cfg.seed, S_JOB, k * 8 + 7));
    int rc = add_job(cl, gpus, n, start, start + len, err);
    if (rc < 0)
      return rc;
    for (size_t r = 0; r < n; r++)
      cl->owner[g + r] = rc;
    busy += n;
    g += n;
  }
  return 0;
}

/* Faults: one of each kind per 250 GPUs per 3 hours, on random jobs at
 * random times, drawn once when the job is created is simpler but biases
 * toward long jobs; instead each job draws whether it is hit. */
static void draw_faults(struct pfi_cluster *cl, struct cjob *j) {
  if (!cl->cfg.faults)
    return;
  uint64_t s = cl->cfg.seed, id = (uint64_t)j->info.id;
  double len = j->info.end_s - j->info.start_s;
  /* Per GPU-hour rate: 4 kinds x 1 per (250 GPUs x 3 h). */
  double rate = (double)j->info.ngpus * len / 3600.0 / (250.0 * 3.0);
  double u = unif(s, S_FAULT, id * 8);
  if (u >= rate * 4)
    return;
  j->fault = 1 + (int)(unif(s, S_FAULT, id * 8 + 1) * 4) % 4;
  double dur = j->fault == F_STALL  ? 90
               : j->fault == F_SLOW ? 300
               : j->fault == F_FAIL ? 180
                                    : 120;
  double a = j->info.start_s + STARTUP_S, b = j->info.end_s - dur;
  if (b < a)
    b = a;
  j->fault_t0 = a + (b - a) * unif(s, S_FAULT, id * 8 + 2);
  j->fault_t1 = j->fault_t0 + dur;
}

int pfi_cluster_open(struct pfi_cluster **out,
                     const struct pfi_cluster_config *c, const char *jobs_path,
                     double horizon_s, struct pfi_error *err) {
  *out = NULL;
  const struct pfi_emu_profile *prof = pfi_emu_profile_find(c->profile);
  if (!prof)
    return pfi_error_set(err, PFI_EINVAL, "cluster: unknown profile '%s'",
                         c->profile);
  if ((double)c->nodes * c->gpus_per_node > 1e6)
    return pfi_error_set(err, PFI_EINVAL, "cluster: more than 1e6 GPUs");
  struct pfi_cluster *cl = calloc(1, sizeof *cl);
  if (!cl)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  cl->cfg = *c;
  cl->prof = prof;
  cl->ngpus = (size_t)c->nodes * c->gpus_per_node;
  cl->horizon = horizon_s;
  int rc = pfi_emu_jobs_load(&cl->lib, jobs_path, err);
  if (rc < 0) {
    free(cl);
    return rc;
  }
  size_t G = cl->ngpus;
  cl->level = calloc(G, sizeof *cl->level);
  cl->goal = calloc(G, sizeof *cl->goal);
  cl->delay = calloc(G, sizeof *cl->delay);
  cl->tau = calloc(G, sizeof *cl->tau);
  cl->cap = malloc(G * sizeof *cl->cap);
  cl->owner = malloc(G * sizeof *cl->owner);
  cl->silent = calloc(G, sizeof *cl->silent);
  cl->gobs = calloc(G, sizeof *cl->gobs);
  if (!cl->level || !cl->goal || !cl->delay || !cl->tau || !cl->cap ||
      !cl->owner || !cl->silent || !cl->gobs) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto fail;
  }
  for (size_t g = 0; g < G; g++) {
    cl->cap[g] = prof->max_mw / 1000.0;
    cl->owner[g] = -1;
    cl->level[g] = cl->goal[g] = prof->idle_w;
    cl->tau[g] = PFI_CLUSTER_UP_TAU_S;
  }
  if ((rc = fit_model(cl, err)) < 0)
    goto fail;
  if ((rc = fill_free(cl, 0, 1, err)) < 0)
    goto fail;
  for (size_t i = 0; i < cl->njobs; i++)
    draw_faults(cl, &cl->job[i]);
  *out = cl;
  return 0;
fail:
  pfi_cluster_close(cl);
  return rc;
}

void pfi_cluster_close(struct pfi_cluster *cl) {
  if (!cl)
    return;
  for (size_t i = 0; i < cl->njobs; i++) {
    free(cl->job[i].tab_tok);
    free(cl->job[i].tab_pow);
    free(cl->job[i].tab_step);
  }
  free(cl->job);
  pfi_emu_jobs_release(&cl->lib);
  pfi_model_release(&cl->model);
  free(cl->level);
  free(cl->goal);
  free(cl->delay);
  free(cl->tau);
  free(cl->cap);
  free(cl->owner);
  free(cl->silent);
  free(cl->gobs);
  free(cl->run_ids);
  free(cl->started);
  free(cl->ended);
  free(cl->phase);
  free(cl->tvalid);
  free(cl->tok);
  free(cl->true_tok);
  free(cl->ann_in);
  free(cl->ann_len);
  free(cl->ann_end);
  free(cl);
}

/* Mean over [0, T] and end value of a first-order lag with dead time d
 * from level L toward S. */
static void lag(double L, double S, double T, double d, double tau,
                double *mean, double *end) {
  if (L == S) {
    *mean = *end = S;
    return;
  }
  if (T <= d) {
    *mean = *end = L;
    return;
  }
  double e = exp(-(T - d) / tau);
  *end = S + (L - S) * e;
  *mean = S + (L - S) * (d + tau * (1.0 - e)) / T;
}

static int grow_obs(struct pfi_cluster *cl) {
  size_t n = cl->njobs + 1;
  int *a;
  double *d;
#define GROW(field, type)                                                      \
  if (!(field = realloc(field, n * sizeof(type))))                             \
    return PFI_ENOMEM;
  (void)a;
  (void)d;
  GROW(cl->run_ids, int);
  GROW(cl->started, int);
  GROW(cl->ended, int);
  GROW(cl->phase, int);
  GROW(cl->tvalid, int);
  GROW(cl->tok, double);
  GROW(cl->true_tok, double);
  GROW(cl->ann_in, double);
  GROW(cl->ann_len, double);
  GROW(cl->ann_end, double);
#undef GROW
  return 0;
}

/* Phase of job j at time t (seconds since the epoch of the run). */
static int phase_at(const struct pfi_cluster *cl, const struct cjob *j,
                    double t) {
  double tau = t - j->info.start_s;
  if (tau < STARTUP_S)
    return PFI_PHASE_STARTUP;
  double x = tau - STARTUP_S;
  if (cl->cfg.ckpt_s > 0 &&
      fmod(x + j->ckpt_off, cl->cfg.ckpt_every_s) < cl->cfg.ckpt_s)
    return -2; /* checkpoint (reported as a pause) */
  if (cl->cfg.eval_s > 0 &&
      fmod(x + j->eval_off, cl->cfg.eval_every_s) < cl->cfg.eval_s)
    return PFI_PHASE_PAUSE; /* evaluation */
  return PFI_PHASE_TRAINING;
}

/* Start of job j's first pause (checkpoint or evaluation, phase_at's
 * schedules) after time t, and its length. */
static double next_pause(const struct pfi_cluster *cl, const struct cjob *j,
                         double t, double *len) {
  double t0 = j->info.start_s + STARTUP_S, x = t - t0, best = INFINITY;
  const double every[2] = {cl->cfg.ckpt_every_s, cl->cfg.eval_every_s};
  const double plen[2] = {cl->cfg.ckpt_s, cl->cfg.eval_s};
  const double off[2] = {j->ckpt_off, j->eval_off};
  *len = NAN;
  for (int k = 0; k < 2; k++) {
    if (!(plen[k] > 0))
      continue;
    /* Starts where x + off is a multiple of the period. */
    double xs = ceil((x + off[k]) / every[k]) * every[k] - off[k];
    if (xs <= x)
      xs += every[k];
    if (xs < best) {
      best = xs;
      *len = plen[k];
    }
  }
  return t0 + best;
}

int pfi_cluster_step(struct pfi_cluster *cl, const double *cap_w, double dt,
                     struct pfi_cluster_obs *obs, struct pfi_error *err) {
  if (!(dt > 0 && dt <= 3600))
    return pfi_error_set(err, PFI_EINVAL, "cluster: period %g s", dt);
  double t0 = cl->t, t1 = t0 + dt, tm = t0 + 0.5 * dt;
  const struct pfi_emu_profile *p = cl->prof;
  double lo = p->min_mw / 1000.0, hi = p->max_mw / 1000.0;
  uint64_t s = cl->cfg.seed, tick = (uint64_t)llround(t1 * 1000.0);
  cl->nstarted = cl->nended = 0;
  /* Endings free their GPUs; new jobs are placed on them (starting a few
   * minutes later). */
  size_t before = cl->njobs;
  for (size_t i = 0; i < before; i++) {
    struct cjob *j = &cl->job[i];
    if (j->running && j->info.end_s <= t1) {
      j->running = 0;
      for (size_t r = 0; r < j->info.ngpus; r++)
        cl->owner[j->info.gpu[r]] = -1;
    }
  }
  int rc = fill_free(cl, t1, 0, err);
  if (rc < 0)
    return rc;
  for (size_t i = before; i < cl->njobs; i++)
    draw_faults(cl, &cl->job[i]);
  if (grow_obs(cl) < 0)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < before; i++) {
    struct cjob *j = &cl->job[i];
    if (!j->running && j->info.end_s <= t1 && j->info.end_s > t0 &&
        j->info.start_s <= t0)
      cl->ended[cl->nended++] = (int)i;
  }
  for (size_t g = 0; g < cl->ngpus; g++) {
    double c = cap_w ? cap_w[g] : hi;
    cl->cap[g] = c < lo ? lo : c > hi ? hi : c;
    cl->gobs[g].valid = 1;
  }
  /* Targets: idle unless a running job says otherwise. */
  double *target = malloc(cl->ngpus * sizeof *target);
  if (!target)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  /* ... and, for a GPU whose job changes phase within the period, the
   * steady value before the change and when it comes (s into the period,
   * -1: none). */
  double *target0 = malloc(cl->ngpus * sizeof *target0);
  double *split_at = malloc(cl->ngpus * sizeof *split_at);
  if (!target0 || !split_at) {
    free(target);
    free(target0);
    free(split_at);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  for (size_t g = 0; g < cl->ngpus; g++) {
    target[g] = target0[g] = p->idle_w;
    split_at[g] = -1;
  }
  size_t nrun = 0;
  double stat = p->static_w + p->mem_w * 0.05;
  for (size_t i = 0; i < cl->njobs; i++) {
    struct cjob *j = &cl->job[i];
    if (j->info.start_s > t1 - 1e-9 || j->info.end_s <= t1)
      continue;
    if (!j->running) {
      j->running = 1;
      cl->started[cl->nstarted++] = (int)i;
    }
    size_t n = j->info.ngpus;
    int changed = 0;
    for (size_t r = 0; r < n; r++) {
      double c = cl->cap[j->info.gpu[r]];
      if (c != j->cur_cap[r])
        changed = 1;
      j->cur_cap[r] = c;
    }
    double tok, step, pw[PFI_EMU_MAX_GPUS];
    steady_now(cl, j, &tok, &step, pw);
    /* A phase that changes within the period (a pause beginning or
     * ending): the draw follows it from that instant (the lag below, in
     * two pieces), the period's throughput is its training share, and the
     * trainer reports the period as not training. */
    int pha = phase_at(cl, j, t0 + 1e-6 * dt);
    int phb = phase_at(cl, j, t1 - 1e-6 * dt);
    int ph = phase_at(cl, j, tm), tvalid = 1;
    double split = -1; /* offset of the change in the period, s (-1: none) */
    if (pha != phb) {
      double a = t0, b = t1;
      for (int it = 0; it < 40; it++) {
        double m = 0.5 * (a + b);
        if (phase_at(cl, j, m) == pha)
          a = m;
        else
          b = m;
      }
      split = 0.5 * (a + b) - t0;
      ph = pha != PFI_PHASE_TRAINING ? pha : phb;
    } else {
      pha = phb = ph;
    }
    double busy = 1.0; /* share of time the GPUs do the step's work */
    int in_fault = j->fault && tm >= j->fault_t0 && tm < j->fault_t1;
    double tw[PFI_EMU_MAX_GPUS]; /* training draw, the fault's effect in */
    for (size_t r = 0; r < n; r++)
      tw[r] = pw[r];
    if (in_fault) {
      if (j->fault == F_STALL)
        busy = 0.4; /* data loader: GPUs wait for input 60 % of the time */
      else if (j->fault == F_SLOW)
        busy = 0.7; /* one worker at 70 % pace; the others wait for it */
      else if (j->fault == F_FAIL)
        busy = 0.0; /* a worker died: no steps until the restart */
      for (size_t r = 0; r < n; r++) {
        int slow_rank = j->fault == F_SLOW && r == 0;
        if (!slow_rank)
          tw[r] = p->idle_w + busy * (pw[r] - p->idle_w);
        if (j->fault == F_FAIL)
          tw[r] = p->idle_w + 25.0;
      }
    }
    double train_share = split < 0 ? ph == PFI_PHASE_TRAINING
                                   : ((pha == PFI_PHASE_TRAINING ? split : 0) +
                                      (phb == PFI_PHASE_TRAINING ? dt - split
                                                                 : 0)) /
                                         dt;
    tok *= busy * train_share;
    double pw0[PFI_EMU_MAX_GPUS]; /* steady draw before the change */
    for (size_t r = 0; r < n; r++) {
      double v[2];
      for (int w = 0; w < 2; w++) {
        int q = w ? phb : pha;
        v[w] = q == PFI_PHASE_STARTUP ? p->idle_w + 25.0
               : q == -2              ? p->idle_w + 30.0 /* checkpoint */
               : q == PFI_PHASE_PAUSE ? stat + 0.85 * (pw[r] - stat)
                                      : tw[r];
      }
      pw0[r] = v[0];
      pw[r] = v[1];
    }
    if (in_fault && j->fault == F_SILENT) {
      /* The node agent stops reporting: every GPU of the job's nodes. */
      unsigned gpn = cl->cfg.gpus_per_node;
      for (size_t r = 0; r < n; r++) {
        size_t node = j->info.gpu[r] / gpn;
        for (size_t g = node * gpn; g < (node + 1) * gpn && g < cl->ngpus; g++)
          cl->gobs[g].valid = 0;
      }
    }
    /* Throughput follows a cap change at the job's next step: the step in
     * flight finishes at the old rate. */
    double tnew = tok * j->run_tf, tmean = tnew;
    if (changed && j->tok_prev > 0 && tnew > 0) {
      double frac = unif(s, S_STEP, tick * 4099 + i) * j->step_prev / dt;
      if (frac > 1)
        frac = 1;
      tmean = frac * j->tok_prev + (1 - frac) * tnew;
    }
    j->tok_prev = tnew;
    j->step_prev = step;
    for (size_t r = 0; r < n; r++) {
      target[j->info.gpu[r]] = pw[r] * j->run_pf;
      target0[j->info.gpu[r]] = pw0[r] * j->run_pf;
      split_at[j->info.gpu[r]] = split;
    }
    cl->run_ids[nrun] = (int)i;
    cl->phase[nrun] = ph == -2 ? PFI_PHASE_PAUSE : ph;
    cl->tvalid[nrun] = tvalid;
    /* The trainer announces its next pause announce_s ahead (it knows the
     * step of its next evaluation and checkpoint, and its step time: its
     * estimate off by up to announce_err_s, one error per pause, drawn
     * from the pause's start; an estimate under 0 is announced as 0). */
    cl->ann_in[nrun] = cl->ann_len[nrun] = cl->ann_end[nrun] = NAN;
    double aerr = cl->cfg.announce_err_s;
    if (cl->cfg.announce_s > 0) {
      /* Its end: the emulated job stops at the start of the period its end
       * falls in. */
      double at = floor((j->info.end_s - t1) / dt) * dt;
      if (at >= 0 && at <= cl->cfg.announce_s) {
        if (aerr > 0)
          at += aerr * (2 * unif(s, S_ANN, 2 * (uint64_t)i) - 1);
        cl->ann_end[nrun] = at > 0 ? at : 0;
      }
    }
    if (cl->cfg.announce_s > 0 && ph == PFI_PHASE_TRAINING &&
        phase_at(cl, j, t1) == PFI_PHASE_TRAINING) {
      double len, start = next_pause(cl, j, t1, &len), at = start - t1;
      if (at >= 0 && at <= cl->cfg.announce_s) {
        if (aerr > 0)
          at += aerr * (2 * unif(s, S_ANN,
                                 (uint64_t)llround(start * 1000.0) * 8191 +
                                     2 * (uint64_t)i + 1) -
                        1);
        cl->ann_in[nrun] = at > 0 ? at : 0;
        cl->ann_len[nrun] = len;
      }
    }
    cl->true_tok[nrun] = tmean;
    cl->tok[nrun] =
        tmean * (1 + PER_CV_TOKENS * gauss(s, S_PER_T, tick * 4099 + i));
    if (cl->tok[nrun] < 0)
      cl->tok[nrun] = 0;
    nrun++;
  }
  /* Realized power: after a change of a GPU's steady value (cap, phase,
   * fault), the fitted dead time, then the first-order lag toward it (a
   * GPU never holds more than its cap). */
  double total = 0;
  for (size_t g = 0; g < cl->ngpus; g++) {
    double mean = 0;
    double piece[2] = {split_at[g] > 0 ? split_at[g] : 0, dt};
    for (int w = split_at[g] > 0 ? 0 : 1; w < 2; w++) {
      double T = w ? dt - piece[0] : piece[0], tg = w ? target[g] : target0[g];
      double S = tg < cl->cap[g] ? tg : cl->cap[g];
      double L = cl->level[g], m, end;
      if (S != cl->goal[g]) {
        int down = S < L;
        cl->goal[g] = S;
        cl->delay[g] =
            down ? PFI_CLUSTER_DOWN_DELAY_S : PFI_CLUSTER_UP_DELAY_S;
        cl->tau[g] = down ? PFI_CLUSTER_DOWN_TAU_S : PFI_CLUSTER_UP_TAU_S;
      }
      lag(L, S, T, cl->delay[g], cl->tau[g], &m, &end);
      cl->delay[g] = cl->delay[g] > T ? cl->delay[g] - T : 0;
      cl->level[g] = end;
      mean += m * T / dt;
    }
    double v =
        mean * (1 + PER_CV_POWER * gauss(s, S_PER_P, tick * 1048573 + g));
    v = v < 0 ? 0 : v;
    total += v;
    cl->gobs[g].power_w = v;
    cl->gobs[g].cap_w = cl->cap[g];
  }
  free(target);
  free(target0);
  free(split_at);
  cl->t = t1;
  obs->t_s = t1;
  obs->gpu = cl->gobs;
  obs->power_w = total;
  obs->njobs = nrun;
  obs->job = cl->run_ids;
  obs->tokens = cl->tok;
  obs->true_tokens = cl->true_tok;
  obs->phase = cl->phase;
  obs->tvalid = cl->tvalid;
  obs->pause_in = cl->ann_in;
  obs->pause_len = cl->ann_len;
  obs->end_in = cl->ann_end;
  obs->started = cl->started;
  obs->nstarted = cl->nstarted;
  obs->ended = cl->ended;
  obs->nended = cl->nended;
  return 0;
}
