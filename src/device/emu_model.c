/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The emulator's physical model: GPU profiles, the segment power model, the
 * clock a cap allows, the steady state of a synchronous job, its telemetry
 * over a run's timeline, and emulated sweeps. docs/emulator.md explains
 * every constant. Everything produced here is emulated.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/emu.h"
#include "pfi/index.h"

const double pfi_emu_grid_fine[6] = {200, 300, 400, 500, 600, 700};
const double pfi_emu_grid_coarse[4] = {200, 500, 600, 700};

/* Public vendor figures: 700 W TDP, 200 W lowest limit, 1980 MHz top SM
 * clock, 345 MHz idle clock, HBM clocks 3201 (H200) / 2619 MHz (H100),
 * 141 / 80 GB, 989 dense BF16 TFLOP/s, 450 GB/s NVLink per direction. The
 * power split (idle, static, HBM, the V-f line) is the model's choice. */
static const struct pfi_emu_profile profiles[] = {
    {"h200", "NVIDIA H200 (emulated)", 200000, 700000, 700000, 1980.0, 345.0,
     3201.0, 70.0, 100.0, 90.0, 0.10, 0.70, 0.35, 143771.0, 989.4, 450.0},
    {"h100", "NVIDIA H100 80GB HBM3 (emulated)", 200000, 700000, 700000, 1980.0,
     345.0, 2619.0, 65.0, 95.0, 75.0, 0.10, 0.70, 0.35, 81559.0, 989.4, 450.0},
};

const struct pfi_emu_profile *pfi_emu_profile_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
    if (strcmp(profiles[i].name, name) == 0)
      return &profiles[i];
  return NULL;
}

/* ---- deterministic randomness ------------------------------------------ */

static uint64_t mix64(uint64_t z) {
  /* splitmix64's finalizer: a bijective avalanche of 64 bits. */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static uint64_t key5(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                     uint64_t e) {
  uint64_t h = mix64(a);
  h = mix64(h ^ b);
  h = mix64(h ^ c);
  h = mix64(h ^ d);
  return mix64(h ^ e);
}

/* A standard normal value that is a pure function of `key` (Box-Muller on
 * two 53-bit uniforms derived from it). */
static double normal_of(uint64_t key) {
  uint64_t a = mix64(key), b = mix64(key ^ 0x5851f42d4c957f2dull);
  double u1 = ((double)(a >> 11) + 0.5) / 9007199254740992.0;
  double u2 = (double)(b >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Noise tags, so each stream is independent of the others. */
enum {
  TAG_SPREAD_DYN = 1,
  TAG_SPREAD_STAT,
  TAG_RUN_POWER,
  TAG_RUN_TOKENS,
  TAG_S_POWER,
  TAG_S_TOKENS,
  TAG_S_CLOCK,
  TAG_S_ACT,
  TAG_S_TEMP,
  /* Appended: independent noise per link direction and for utilization,
   * and the run-to-run variation of host traffic. */
  TAG_S_NVL_TX,
  TAG_S_NVL_RX,
  TAG_S_PCIE_TX,
  TAG_S_PCIE_RX,
  TAG_S_UTIL,
  TAG_RUN_PCIE
};

/* Relative noise at the paper's level (docs/emulator.md): run-to-run
 * CV 0.4 % (power) and 0.5 % (tokens/s); sample-to-sample spread chosen so
 * that the standard error of the mean over a 30-minute run's ~330 training
 * samples is 0.04 % / 0.05 %. Manufacturing spread: 3 % of SM dynamic
 * power, 5 % of static power (docs/emulator.md). */
#define RUN_CV_POWER 0.004
#define RUN_CV_TOKENS 0.005
#define SAMPLE_CV_POWER 0.0073
#define SAMPLE_CV_TOKENS 0.0091
#define SPREAD_DYN 0.03
#define SPREAD_STAT 0.05
/* The power controller holds a segment 1 % under the cap. */
#define CAP_MARGIN 0.01

static uint64_t prof_key(const struct pfi_emu_profile *p) {
  return hash_str(p->name);
}

/* ---- the segment power model ------------------------------------------- */

/* Activity of the three step segments and of waiting at a barrier. */
struct segment {
  double share; /* share of the uncapped step (0 for wait) */
  double sm_w;  /* SM dynamic power weight relative to compute */
  double sm_act, occ, tensor, dram, copy; /* activities (0..1) */
  double util;                            /* GPU utilization (0..1) */
  double nvlink;                          /* share of NVLink bandwidth used */
  double pcie_bps;
  int clock_bound; /* 1: time scales with 1/f; 2: memory knee; 0: none */
};

enum { SEG_COMPUTE, SEG_MEMORY, SEG_COMM, SEG_WAIT, SEG__N };

static void job_segments(const struct pfi_emu_job *job, struct segment sg[]) {
  int moe = strcmp(job->arch, "moe") == 0;
  memset(sg, 0, sizeof(struct segment) * SEG__N);
  /* Dense GEMM-heavy compute keeps the tensor pipes busier and DRAM less
   * busy than MoE compute (expert routing, grouped GEMMs). */
  sg[SEG_COMPUTE] = (struct segment){1.0 - job->mem_share - job->comm_share,
                                     1.0,
                                     0.92,
                                     0.45,
                                     moe ? 0.42 : 0.62,
                                     moe ? 0.32 : 0.22,
                                     moe ? 0.40 : 0.30,
                                     1.0,
                                     0.02,
                                     1e8,
                                     1};
  sg[SEG_MEMORY] = (struct segment){job->mem_share,
                                    job->mem_sm_weight,
                                    0.55,
                                    0.30,
                                    0.03,
                                    0.85,
                                    0.85,
                                    1.0,
                                    0.02,
                                    1e8,
                                    2};
  /* A quarter of communication/host time is host work with no kernel. */
  sg[SEG_COMM] = (struct segment){
      job->comm_share, 0.10, 0.15, 0.08, 0.0, 0.10, 0.10, 0.75, 0.55, 2e9, 0};
  sg[SEG_WAIT] = (struct segment){0.0,  0.05, 0.10, 0.05, 0.0, 0.02,
                                  0.02, 1.0,  0.02, 1e8,  0};
}

/* Relative voltage at clock ratio x: flat at the floor, then linear. */
static double vfun(const struct pfi_emu_profile *p, double x) {
  double v = p->volt_zero + (1.0 - p->volt_zero) * x;
  return v < p->volt_min ? p->volt_min : v;
}

/* Power of a segment at clock ratio x: static (leakage follows the
 * voltage) + HBM + SM dynamic x * v(x)^2. Increasing in x. */
static double seg_power(const struct pfi_emu_profile *p, double stat,
                        double mem, double dyn, double x) {
  double v = vfun(p, x);
  return stat * v + mem + dyn * x * v * v;
}

struct gpu_phys {
  double dyn_f, stat_f; /* manufacturing spread factors */
};

/* The manufacturing spread is a property of the emulated hardware, not of
 * a run: it depends on the profile and the GPU's position only, so that
 * different seeds are different runs on the same GPUs. */
#define HARDWARE_KEY 0x48323030ull

static void gpu_spread(const struct pfi_emu_profile *p, unsigned rank,
                       struct gpu_phys *g) {
  g->dyn_f = 1.0 + SPREAD_DYN * normal_of(key5(HARDWARE_KEY, prof_key(p), rank,
                                               TAG_SPREAD_DYN, 0));
  g->stat_f = 1.0 + SPREAD_STAT * normal_of(key5(HARDWARE_KEY, prof_key(p),
                                                 rank, TAG_SPREAD_STAT, 0));
  /* Keep the spread physical (no negative power) even for extreme draws. */
  if (g->dyn_f < 0.85)
    g->dyn_f = 0.85;
  if (g->dyn_f > 1.15)
    g->dyn_f = 1.15;
  if (g->stat_f < 0.8)
    g->stat_f = 0.8;
  if (g->stat_f > 1.2)
    g->stat_f = 1.2;
}

/* Result of running one segment under a cap. */
struct seg_run {
  double x;       /* SM clock ratio while active */
  double duty;    /* share of time active (< 1 only below the lowest clock) */
  double power_w; /* mean power over the segment */
  double slow;    /* time multiplier relative to the uncapped segment */
};

static void run_segment(const struct pfi_emu_profile *p,
                        const struct pfi_emu_job *job, const struct gpu_phys *g,
                        const struct segment *s, double cap_w,
                        struct seg_run *r) {
  double stat = p->static_w * g->stat_f, mem = p->mem_w * s->dram;
  double dyn = job->sm_power_w * s->sm_w * g->dyn_f;
  double capm = cap_w * (1.0 - CAP_MARGIN);
  double xlo = p->sm_clock_idle_mhz / p->sm_clock_max_mhz;
  r->duty = 1.0;
  if (seg_power(p, stat, mem, dyn, 1.0) <= capm) {
    r->x = 1.0;
  } else if (seg_power(p, stat, mem, dyn, xlo) > capm) {
    /* Even the lowest clock draws too much: the GPU idles part of the
     * time (clock gating), so the mean power meets the cap. */
    r->x = xlo;
    double pa = seg_power(p, stat, mem, dyn, xlo), pi = p->idle_w;
    r->duty = capm > pi ? (capm - pi) / (pa - pi) : 0.05;
    if (r->duty < 0.05)
      r->duty = 0.05;
  } else {
    /* The highest clock whose power fits: power is increasing in x, so
     * bisection converges; 60 halvings reach double precision. */
    double lo = xlo, hi = 1.0;
    for (int i = 0; i < 60; i++) {
      double mid = 0.5 * (lo + hi);
      if (seg_power(p, stat, mem, dyn, mid) <= capm)
        lo = mid;
      else
        hi = mid;
    }
    r->x = lo;
  }
  double pa = seg_power(p, stat, mem, dyn, r->x);
  r->power_w = r->duty * pa + (1.0 - r->duty) * p->idle_w;
  double slow = 1.0;
  if (s->clock_bound == 1)
    slow = 1.0 / r->x;
  else if (s->clock_bound == 2 && r->x < p->mem_knee)
    slow = p->mem_knee / r->x; /* too few SM cycles to keep HBM busy */
  r->slow = slow / r->duty;
}

/* Nominal (spread-free, uncapped) throughput from FLOPs per token:
 * MFU = compute share x kernel efficiency of the compute segment. */
static double kernel_eff(const struct pfi_emu_job *job) {
  return strcmp(job->arch, "moe") == 0 ? 0.40 : 0.62;
}

static double nominal_tokens(const struct pfi_emu_job *job,
                             const struct pfi_emu_profile *p) {
  double c = 1.0 - job->mem_share - job->comm_share;
  double mfu = c * kernel_eff(job);
  double flops_tok = 6.0 * job->active_b * 1e9;
  return mfu * job->gpus * p->peak_tflops * 1e12 / flops_tok;
}

int pfi_emu_steady(const struct pfi_emu_job *job, const double *cap_w,
                   unsigned long seed, struct pfi_emu_steady *out,
                   struct pfi_error *err) {
  const struct pfi_emu_profile *p = pfi_emu_profile_find(job->profile);
  if (!p)
    return pfi_error_set(err, PFI_EINVAL, "job %s: unknown GPU profile '%s'",
                         job->id, job->profile);
  if (job->gpus < 1 || job->gpus > PFI_EMU_MAX_GPUS)
    return pfi_error_set(err, PFI_EINVAL, "job %s: %u GPUs is outside 1..%d",
                         job->id, job->gpus, PFI_EMU_MAX_GPUS);
  struct segment sg[SEG__N];
  job_segments(job, sg);
  double busy[PFI_EMU_MAX_GPUS];
  struct seg_run sr[PFI_EMU_MAX_GPUS][SEG__N];
  double step_rel = 0;
  memset(out, 0, sizeof *out);
  out->gpus = job->gpus;
  for (unsigned r = 0; r < job->gpus; r++) {
    double c = cap_w[r];
    if (!(c >= p->min_mw / 1000.0 - 1e-9 && c <= p->max_mw / 1000.0 + 1e-9))
      return pfi_error_set(err, PFI_EINVAL,
                           "cap %g W of GPU %u is outside %g..%g W", c, r,
                           p->min_mw / 1000.0, p->max_mw / 1000.0);
    struct gpu_phys g;
    gpu_spread(p, r, &g);
    busy[r] = 0;
    for (int k = 0; k < SEG__N; k++) {
      run_segment(p, job, &g, &sg[k], c, &sr[r][k]);
      busy[r] += sg[k].share * sr[r][k].slow;
    }
    if (busy[r] > step_rel)
      step_rel = busy[r];
  }
  double tnom = nominal_tokens(job, p);
  out->tokens_per_s = tnom / step_rel;
  out->step_s = job->tokens_per_step / out->tokens_per_s;
  for (unsigned r = 0; r < job->gpus; r++) {
    struct pfi_emu_gpu *o = &out->gpu[r];
    double e = 0, clk = 0, busy_t = 0, thr = 0;
    /* Time-weighted means over the step: each segment's stretched time,
     * plus the wait for the slowest GPU. */
    for (int k = 0; k < SEG__N; k++) {
      double t =
          k == SEG_WAIT ? step_rel - busy[r] : sg[k].share * sr[r][k].slow;
      if (t <= 0)
        continue;
      const struct segment *s = &sg[k];
      double d = sr[r][k].duty;
      e += t * sr[r][k].power_w;
      o->gpu_util += t * s->util;
      o->sm_active += t * d * s->sm_act;
      o->sm_occupancy += t * d * s->occ;
      o->tensor_active += t * d * s->tensor;
      o->dram_active += t * d * s->dram;
      o->mem_copy_util += t * d * s->copy * 100.0;
      o->nvlink_bps += t * s->nvlink * p->nvlink_gbps * 1e9;
      o->pcie_bps += t * s->pcie_bps;
      if (sr[r][k].x < 1.0 || d < 1.0)
        thr += t;
      clk += t * sr[r][k].x;
      busy_t += t;
    }
    double T = step_rel;
    o->power_w = e / T;
    o->gpu_util = 100.0 * o->gpu_util / T;
    o->sm_active /= T;
    o->sm_occupancy /= T;
    o->tensor_active /= T;
    o->dram_active /= T;
    o->mem_copy_util /= T;
    o->nvlink_bps /= T;
    o->pcie_bps /= T;
    o->throttle_frac = thr / T;
    o->sm_clock_mhz =
        busy_t > 0 ? p->sm_clock_max_mhz * clk / busy_t : p->sm_clock_idle_mhz;
    /* Never above the cap: every segment is, so their mean is too; the
     * clamp only removes rounding. */
    if (o->power_w > cap_w[r])
      o->power_w = cap_w[r];
    out->power_w += o->power_w;
  }
  return 0;
}

static uint64_t cap_key(double cap_w) {
  return (uint64_t)llround(cap_w * 1000.0);
}

static void run_factors(const struct pfi_emu_job *job, double cap_w,
                        unsigned long seed, double *pf, double *tf) {
  uint64_t j = hash_str(job->id);
  *pf = 1.0 + RUN_CV_POWER *
                  normal_of(key5(seed, j, cap_key(cap_w), TAG_RUN_POWER, 0));
  *tf = 1.0 + RUN_CV_TOKENS *
                  normal_of(key5(seed, j, cap_key(cap_w), TAG_RUN_TOKENS, 0));
}

int pfi_emu_run_rate(const struct pfi_emu_job *job, double cap_w,
                     unsigned long seed, double *tokens_per_s, double *step_s,
                     struct pfi_error *err) {
  struct pfi_emu_run *run = malloc(sizeof *run);
  double caps[PFI_EMU_MAX_GPUS];
  int rc;
  if (!run)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (unsigned r = 0; r < PFI_EMU_MAX_GPUS; r++)
    caps[r] = cap_w;
  rc = pfi_emu_run_init(run, job, caps, seed, err);
  if (rc == 0) {
    double t = run->st.tokens_per_s * run->run_tokens_f;
    if (tokens_per_s)
      *tokens_per_s = t;
    if (step_s)
      *step_s = job->tokens_per_step / t;
  }
  free(run);
  return rc;
}

void pfi_emu_timeline_init(struct pfi_emu_timeline *tl,
                           const struct pfi_emu_job *job) {
  /* torch.compile variants spend longer in startup compiling graphs. */
  int compiled = job && strstr(job->variant, "compile") &&
                 !strstr(job->variant, "no compile");
  tl->warmup_s = 40.0;
  tl->startup_s = compiled ? 240.0 : 150.0;
  tl->eval_at_s = 600.0;
  tl->eval_s = 60.0;
  tl->ckpt_at_s = 1200.0;
  tl->ckpt_s = 45.0;
  tl->duration_s = 1800.0;
}

double pfi_emu_min_run_s(void) {
  static struct pfi_emu_job compiled; /* zeros but its variant */
  struct pfi_emu_timeline tl;
  snprintf(compiled.variant, sizeof compiled.variant, "compile");
  pfi_emu_timeline_init(&tl, &compiled);
  return tl.startup_s + 60.0;
}

int pfi_emu_run_init(struct pfi_emu_run *run, const struct pfi_emu_job *job,
                     const double *cap_w, unsigned long seed,
                     struct pfi_error *err) {
  memset(run, 0, sizeof *run);
  run->job = job;
  run->prof = pfi_emu_profile_find(job->profile);
  run->seed = seed;
  if (job->gpus < 1 || job->gpus > PFI_EMU_MAX_GPUS)
    return pfi_error_set(err, PFI_EINVAL, "job %s: %u GPUs is outside 1..%d",
                         job->id, job->gpus, PFI_EMU_MAX_GPUS);
  for (unsigned r = 0; r < job->gpus; r++)
    run->cap_w[r] = cap_w[r];
  int rc = pfi_emu_steady(job, cap_w, seed, &run->st, err);
  if (rc < 0)
    return rc;
  pfi_emu_timeline_init(&run->tl, job);
  /* The run-to-run factors are keyed by the cap of rank 0, the cap a sweep
   * sets on every GPU. */
  run_factors(job, cap_w[0], seed, &run->run_power_f, &run->run_tokens_f);
  return 0;
}

static void set(struct pfi_sample *s, enum pfi_field f, double v) {
  s->v[f] = v;
  s->valid |= 1u << f;
}

static double clamp(double v, double lo, double hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* `full` 0 skips the noise of fields a sweep does not aggregate (clock,
 * activities, temperature), which keeps calibration fast; the values
 * aggregated are identical either way. */
static void sample_core(const struct pfi_emu_run *run, unsigned rank,
                        double t_s, struct pfi_sample *s, double *tokens_per_s,
                        enum pfi_phase *phase, int full) {
  const struct pfi_emu_profile *p = run->prof;
  const struct pfi_emu_job *job = run->job;
  const struct pfi_emu_timeline *tl = &run->tl;
  if (rank >= job->gpus)
    rank = job->gpus - 1;
  const struct pfi_emu_gpu *g = &run->st.gpu[rank];
  uint64_t j = hash_str(job->id), ck = cap_key(run->cap_w[rank]);
  uint64_t tk = (uint64_t)llround(t_s * 1000.0);
  double zp = normal_of(key5(run->seed, j, ck, TAG_S_POWER, tk * 64 + rank));
  double zt =
      tokens_per_s ? normal_of(key5(run->seed, j, ck, TAG_S_TOKENS, tk)) : 0;
  double zc =
      full ? normal_of(key5(run->seed, j, ck, TAG_S_CLOCK, tk * 64 + rank)) : 0;
  double za =
      full ? normal_of(key5(run->seed, j, ck, TAG_S_ACT, tk * 64 + rank)) : 0;
  double cap = run->cap_w[rank];
  double fb_full =
      clamp(job->fb_gib * 1024.0, 10240.0 + 512.0, 0.95 * p->fb_total_mib);
  double power, clock, util, sm, occ, ten, dram, copy, nvl, pcie, fb, tok;
  /* Each counter has its own noise: NVLink and PCIe per direction (~1 %
   * and ~3 % from sample to sample), GPU utilization (~0.5 %), and host
   * traffic a run-to-run factor (CV 10 %: data loading and logging depend
   * on the host, not on the GPU's work), so that no field is an exact
   * copy or an affine function of another. */
  double z_ntx = full ? normal_of(key5(run->seed, j, ck, TAG_S_NVL_TX,
                                       tk * 64 + rank))
                      : 0;
  double z_nrx = full ? normal_of(key5(run->seed, j, ck, TAG_S_NVL_RX,
                                       tk * 64 + rank))
                      : 0;
  double z_ptx = full ? normal_of(key5(run->seed, j, ck, TAG_S_PCIE_TX,
                                       tk * 64 + rank))
                      : 0;
  double z_prx = full ? normal_of(key5(run->seed, j, ck, TAG_S_PCIE_RX,
                                       tk * 64 + rank))
                      : 0;
  double z_u =
      full ? normal_of(key5(run->seed, j, ck, TAG_S_UTIL, tk * 64 + rank)) : 0;
  double pcie_run =
      1.0 + 0.10 * normal_of(key5(run->seed, j, ck, TAG_RUN_PCIE, rank));
  if (pcie_run < 0.5)
    pcie_run = 0.5;
  enum pfi_phase ph;
  memset(s, 0, sizeof *s);
  s->t_s = t_s;
  double act = 1.0 + 0.01 * za; /* activity counters jitter ~1 % */
  if (t_s < tl->warmup_s) {
    /* Process start: CUDA context, libraries; weights not yet resident. */
    ph = PFI_PHASE_WARMUP;
    fb = 512.0 + 8192.0 * clamp(t_s / tl->warmup_s, 0, 1);
    power = p->idle_w + 10.0;
    clock = p->sm_clock_idle_mhz;
    util = sm = occ = ten = dram = copy = nvl = 0;
    pcie = 5e9;
    tok = 0;
  } else if (t_s < tl->startup_s || t_s >= tl->duration_s) {
    ph = t_s < tl->startup_s ? PFI_PHASE_STARTUP : PFI_PHASE_PAUSE;
    fb = fb_full;
    power = p->idle_w + 25.0;
    clock = p->sm_clock_max_mhz;
    util = sm = occ = ten = dram = copy = nvl = 0;
    pcie = 1e9;
    tok = 0;
  } else if (t_s >= tl->ckpt_at_s && t_s < tl->ckpt_at_s + tl->ckpt_s) {
    /* Checkpoint write: GPUs mostly idle while shards go to storage. */
    ph = PFI_PHASE_PAUSE;
    fb = fb_full;
    power = p->idle_w + 30.0;
    clock = p->sm_clock_max_mhz;
    util = 3.0;
    sm = 0.02;
    occ = 0.01;
    ten = 0;
    dram = 0.03;
    copy = 3.0;
    nvl = 0;
    pcie = 8e9;
    tok = 0;
  } else {
    /* Training; the evaluation is forward-only work at ~85 % of the
     * training activity and logs no training tokens. */
    int eval = t_s >= tl->eval_at_s && t_s < tl->eval_at_s + tl->eval_s;
    double a = eval ? 0.85 : 1.0;
    ph = PFI_PHASE_TRAINING;
    fb = fb_full;
    double stat = p->static_w + p->mem_w * 0.05;
    power = stat + a * (g->power_w - stat);
    power = power * run->run_power_f * (1.0 + SAMPLE_CV_POWER * zp);
    clock = g->sm_clock_mhz * (1.0 + 0.002 * zc);
    util = clamp(a * g->gpu_util, 0, 100);
    sm = a * g->sm_active * act;
    occ = a * g->sm_occupancy * act;
    ten = a * g->tensor_active * act;
    dram = a * g->dram_active * act;
    copy = a * g->mem_copy_util * act;
    nvl = a * g->nvlink_bps; /* its own noise per direction below */
    pcie = g->pcie_bps;
    tok = eval ? 0
               : run->st.tokens_per_s * run->run_tokens_f *
                     (1.0 + SAMPLE_CV_TOKENS * zt);
  }
  /* A capped GPU's reading never exceeds its cap in this model. */
  power = clamp(power, 0, cap);
  clock = clamp(clock, p->sm_clock_idle_mhz, p->sm_clock_max_mhz);
  set(s, PFI_FIELD_POWER, power);
  s->power_mw = (uint32_t)llround(power * 1000.0);
  set(s, PFI_FIELD_SM_CLOCK, clock);
  set(s, PFI_FIELD_MEM_CLOCK, p->mem_clock_mhz);
  set(s, PFI_FIELD_GPU_UTIL, clamp(util * (1.0 + 0.005 * z_u), 0, 100));
  set(s, PFI_FIELD_SM_ACTIVE, clamp(sm, 0, 1));
  set(s, PFI_FIELD_SM_OCCUPANCY, clamp(occ, 0, 1));
  set(s, PFI_FIELD_TENSOR_ACTIVE, clamp(ten, 0, 1));
  set(s, PFI_FIELD_DRAM_ACTIVE, clamp(dram, 0, 1));
  set(s, PFI_FIELD_MEM_COPY_UTIL, clamp(copy, 0, 100));
  set(s, PFI_FIELD_NVLINK_TX, fmax(0, nvl * (1.0 + 0.01 * z_ntx)));
  set(s, PFI_FIELD_NVLINK_RX, fmax(0, nvl * (1.0 + 0.01 * z_nrx)));
  set(s, PFI_FIELD_PCIE_TX, fmax(0, pcie * pcie_run * (1.0 + 0.03 * z_ptx)));
  set(s, PFI_FIELD_PCIE_RX, fmax(0, pcie * pcie_run * (1.0 + 0.03 * z_prx)));
  set(s, PFI_FIELD_FB_USED, fb);
  /* Temperature follows power: 30 C at rest, ~0.065 C per watt. */
  set(s, PFI_FIELD_TEMP,
      30.0 + 0.065 * power +
          (full ? 0.3 * normal_of(
                            key5(run->seed, j, ck, TAG_S_TEMP, tk * 64 + rank))
                : 0));
  if (ph == PFI_PHASE_TRAINING) {
    double tt = t_s - tl->startup_s;
    set(s, PFI_FIELD_THROTTLE_POWER, g->throttle_frac * tt);
  } else {
    set(s, PFI_FIELD_THROTTLE_POWER,
        t_s > tl->startup_s ? g->throttle_frac * (t_s - tl->startup_s) : 0);
  }
  if (tokens_per_s)
    *tokens_per_s = tok;
  if (phase)
    *phase = ph;
}

void pfi_emu_run_sample(const struct pfi_emu_run *run, unsigned rank,
                        double t_s, struct pfi_sample *s, double *tokens_per_s,
                        enum pfi_phase *phase) {
  sample_core(run, rank, t_s, s, tokens_per_s, phase, 1);
}

int pfi_emu_sweep(const struct pfi_emu_job *job, const double *caps, size_t n,
                  unsigned long seed, double interval_s,
                  struct pfi_emu_point *out, struct pfi_error *err) {
  int rc = 0;
  struct pfi_emu_run *run = NULL;
  double *pw = NULL, *tok = NULL, *fb = NULL, *util = NULL;
  enum pfi_phase *ph = NULL;
  if (!(interval_s >= 0.1 && interval_s <= 600))
    return pfi_error_set(err, PFI_EINVAL,
                         "sample interval %g s is outside 0.1..600 s",
                         interval_s);
  run = malloc(sizeof *run);
  struct pfi_emu_timeline tl;
  pfi_emu_timeline_init(&tl, job);
  size_t ns = (size_t)floor(tl.duration_s / interval_s) + 1;
  pw = calloc(ns, sizeof *pw);
  tok = calloc(ns, sizeof *tok);
  fb = calloc(ns, sizeof *fb);
  util = calloc(ns, sizeof *util);
  ph = calloc(ns, sizeof *ph);
  if (!run || !pw || !tok || !fb || !util || !ph) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    double capv[PFI_EMU_MAX_GPUS];
    for (unsigned r = 0; r < PFI_EMU_MAX_GPUS; r++)
      capv[r] = caps[i];
    if ((rc = pfi_emu_run_init(run, job, capv, seed, err)) < 0)
      goto out;
    double clk = 0;
    size_t nclk = 0;
    for (size_t k = 0; k < ns; k++) {
      double t = (double)k * interval_s;
      struct pfi_sample s;
      pw[k] = 0;
      for (unsigned r = 0; r < job->gpus; r++) {
        sample_core(run, r, t, &s, r == 0 ? &tok[k] : NULL, NULL, 0);
        pw[k] += s.v[PFI_FIELD_POWER];
        if (r == 0) {
          fb[k] = s.v[PFI_FIELD_FB_USED];
          util[k] = s.v[PFI_FIELD_GPU_UTIL];
          if (tok[k] > 0) {
            clk += s.v[PFI_FIELD_SM_CLOCK];
            nclk++;
          }
        }
      }
    }
    /* The phases follow from rank 0's telemetry, as the paper's traces
     * were read from local rank 0 of each node. */
    if ((rc = pfi_phase_segment(fb, util, ns, NULL, ph, err)) < 0)
      goto out;
    struct pfi_emu_point *pt = &out[i];
    pt->cap_w = caps[i];
    if ((rc = pfi_phase_top_mean(pw, ph, ns, NULL, &pt->power_w, NULL, err)) <
        0)
      goto out;
    if ((rc = pfi_phase_top_mean(tok, ph, ns, NULL, &pt->tokens_per_s, NULL,
                                 err)) < 0)
      goto out;
    /* Standard errors of the aggregates themselves (the top 10 % of
     * training-phase samples), as pfi trace summarize computes them. */
    if ((rc = pfi_phase_top_sem(pw, ph, ns, NULL, &pt->power_sd_w, err)) < 0)
      goto out;
    if ((rc = pfi_phase_top_sem(tok, ph, ns, NULL, &pt->tokens_sd, err)) < 0)
      goto out;
    pt->sm_clock_mhz = nclk ? clk / nclk : run->st.gpu[0].sm_clock_mhz;
    pt->mem_clock_mhz = run->prof->mem_clock_mhz;
  }
out:
  free(run);
  free(pw);
  free(tok);
  free(fb);
  free(util);
  free(ph);
  return rc;
}

int pfi_emu_sweep_pfi(const struct pfi_emu_job *job, const double *caps,
                      size_t n, unsigned long seed, double *pfi,
                      struct pfi_error *err) {
  struct pfi_emu_point pts[16];
  double c[16], pw[16], tk[16];
  if (n < 2 || n > 16)
    return pfi_error_set(err, PFI_EINVAL, "a sweep needs 2..16 caps, not %zu",
                         n);
  int rc = pfi_emu_sweep(job, caps, n, seed, 5.0, pts, err);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < n; i++) {
    c[i] = pts[i].cap_w;
    pw[i] = pts[i].power_w;
    tk[i] = pts[i].tokens_per_s;
  }
  size_t used = 0;
  rc = pfi_index_ratio(c, pw, tk, n, pfi, &used);
  if (rc < 0)
    return pfi_error_set(err, rc, "ratio PFI failed");
  if (rc == 0)
    return pfi_error_set(err, PFI_ENUMERIC,
                         "job %s: no cap bound, the ratio PFI is undefined",
                         job->id);
  return 0;
}

double pfi_emu_node_other_w(unsigned gpus, double gpu_w) {
  if (!isfinite(gpu_w) || gpu_w < 0)
    return NAN;
  return PFI_EMU_HOST_W_PER_GPU * gpus + PFI_EMU_COOLING_SHARE * gpu_w;
}
