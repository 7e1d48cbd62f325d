/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Profiling a running job in place: holds, steadiness, restore, curve. */
#include "pfi/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "ledger.h"
#include "pfi/capset.h"
#include "pfi/device.h"
#include "pfi/phase.h"
#include "pfi/sweep.h"
#include "pfi/throughput.h"
#include "pfi/version.h"

/* ---- steadiness ---------------------------------------------------------*/

static void mean_se(const double *x, size_t n, double *mean, double *se) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += x[i];
  *mean = n ? s / (double)n : NAN;
  if (n < 2) {
    *se = NAN;
    return;
  }
  double ss = 0;
  for (size_t i = 0; i < n; i++)
    ss += (x[i] - *mean) * (x[i] - *mean);
  *se = sqrt(ss / (double)(n - 1) / (double)n);
}

int pfi_steady_check(const double *x, size_t n, const struct pfi_steady_rule *r,
                     struct pfi_steady *out) {
  double z = r && r->z > 0 ? r->z : PFI_INDEX_NOISE_Z;
  size_t min = r && r->min_samples ? r->min_samples : 8;
  memset(out, 0, sizeof *out);
  out->mean = out->sem = NAN;
  if (!r || !(r->rel_precision > 0) || !isfinite(r->rel_precision) ||
      r->z < 0 || !isfinite(r->z))
    return PFI_EINVAL;
  size_t start = 0;
  while (n - start >= 2 * min) {
    size_t m = n - start, h = m / 2;
    double m1, s1, m2, s2;
    mean_se(x + start, h, &m1, &s1);
    mean_se(x + start + h, m - h, &m2, &s2);
    if (!(fabs(m1 - m2) > z * sqrt(s1 * s1 + s2 * s2)))
      break;
    start += h;
    out->trend_cuts++;
  }
  out->start = start;
  out->n = n - start;
  mean_se(x + start, out->n, &out->mean, &out->sem);
  out->steady = out->n >= min && out->n >= 2 &&
                out->sem <= r->rel_precision * fabs(out->mean);
  /* A window that still trends (too short to cut again) is not steady. */
  if (out->steady && out->n >= 2 * 2) {
    size_t h = out->n / 2;
    double m1, s1, m2, s2;
    mean_se(x + start, h, &m1, &s1);
    mean_se(x + start + h, out->n - h, &m2, &s2);
    if (fabs(m1 - m2) > z * sqrt(s1 * s1 + s2 * s2))
      out->steady = 0;
  }
  return out->steady;
}

/* ---- the profile --------------------------------------------------------*/

struct prof {
  struct pfi_store *st;
  const struct pfi_profile_opts *o;
  struct pfi_device *dev;
  struct pfi_capset *cs;
  struct pfi_tput *tp;
  char backend[32];
  char params[256];
  unsigned *gpus;
  size_t n;
  struct pfi_emu_jobs lib;
  const struct pfi_emu_job *ej;
  int attached, virtual_time, emulated;
  char job[128];
  double *caps;
  size_t ncaps;
  /* the hold's training instants */
  double *tok, *pw;
  size_t ns, cap_ns;
};

static int stopped(const struct pfi_profile_opts *o) {
  return o->stop && *o->stop;
}

static void stage(const struct prof *p, const char *what, size_t i) {
  if (p->o->stage_hook)
    p->o->stage_hook(what, i, p->o->stage_arg);
}

static void progress(const struct prof *p, const char *event, size_t i,
                     double hold, double power, double rate) {
  if (!p->o->progress)
    return;
  struct pfi_profile_progress pr = {p->job, i,     p->ncaps, p->caps[i],
                                    hold,   power, rate,     event};
  p->o->progress(&pr, p->o->progress_arg);
}

static int has_param(const char *params, const char *key) {
  size_t kl = strlen(key);
  for (const char *q = params; q && *q;) {
    if (strncmp(q, key, kl) == 0 && q[kl] == '=')
      return 1;
    q = strchr(q, ',');
    if (q)
      q++;
  }
  return 0;
}

static void add_param(char *buf, size_t n, const char *kv) {
  size_t l = strlen(buf);
  snprintf(buf + l, n - l, "%s%s", l ? "," : "", kv);
}

static int push(struct prof *p, double tok, double pw, struct pfi_error *err) {
  if (p->ns == p->cap_ns) {
    size_t nc = p->cap_ns ? 2 * p->cap_ns : 256;
    double *a = realloc(p->tok, nc * sizeof *a);
    if (!a)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    p->tok = a;
    double *b = realloc(p->pw, nc * sizeof *b);
    if (!b)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    p->pw = b;
    p->cap_ns = nc;
  }
  p->tok[p->ns] = tok;
  p->pw[p->ns] = pw;
  p->ns++;
  return 0;
}

/* Waits `s` device seconds in slices of at most the interval, noticing a
 * stop request. */
static int dev_wait(struct prof *p, double s, struct pfi_error *err) {
  int rc = pfi_device_wait(p->dev, s, err);
  if (stopped(p->o))
    return pfi_error_set(err, PFI_EINTR, "interrupted");
  return rc == PFI_EINTR ? 0 : rc;
}

/* The summed power of the GPUs now (stored as samples of run `id`). */
static int sample_power(struct prof *p, int64_t id, double now, double *power,
                        struct pfi_error *err) {
  double sum = 0;
  int any = 0, rc;
  *power = NAN;
  for (size_t i = 0; i < p->n; i++) {
    struct pfi_sample s;
    memset(&s, 0, sizeof s);
    if ((rc = pfi_device_sample(p->dev, p->gpus[i], &s, err)) < 0)
      return rc;
    s.t_s = now;
    if ((rc = pfi_store_add_sample(p->st, id, p->gpus[i], &s, err)) < 0)
      return rc;
    if (pfi_sample_has(&s, PFI_FIELD_POWER)) {
      sum += s.v[PFI_FIELD_POWER];
      any = 1;
    }
  }
  if (any) {
    *power = sum;
    if (p->emulated) {
      struct pfi_node_power np = {now, sum, NAN, NAN, PFI_NODE_SOURCE_EMULATED};
      np.other_w = pfi_emu_node_other_w((unsigned)p->n, sum);
      np.node_w = sum + np.other_w;
      if (isfinite(np.node_w) &&
          (rc = pfi_store_add_node_power(p->st, id, &np, err)) < 0)
        return rc;
    }
  }
  return 0;
}

/* The job's throughput over the last interval (stored as steps of run
 * `id`): NaN when nothing was reported, 0 outside training. */
static int sample_tokens(struct prof *p, int64_t id, double now, double *rate,
                         struct pfi_error *err) {
  int rc;
  *rate = NAN;
  if (p->attached) {
    enum pfi_phase ph;
    double r;
    if ((rc = pfi_emu_progress(p->dev, NULL, &r, &ph, err)) < 0)
      return rc;
    *rate = ph == PFI_PHASE_TRAINING ? r : 0;
    struct pfi_step s = {now, NAN, NAN, r, NAN, NAN, NAN};
    return pfi_store_add_step(p->st, id, &s, err);
  }
  if (!p->tp)
    return 0;
  if ((rc = pfi_tput_poll(p->tp, now, 0, err)) < 0)
    return rc;
  const struct pfi_step *steps;
  size_t k = pfi_tput_take(p->tp, &steps);
  double sum = 0;
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    if ((rc = pfi_store_add_step(p->st, id, &steps[i], err)) < 0)
      return rc;
    if (isfinite(steps[i].tokens_per_s) && steps[i].tokens_per_s >= 0) {
      sum += steps[i].tokens_per_s;
      m++;
    }
  }
  if (m)
    *rate = sum / (double)m;
  return 0;
}

/* Sets every GPU to mw and records each set and read-back in the store. */
static int set_caps(struct prof *p, int64_t id, uint32_t mw,
                    struct pfi_error *err) {
  uint32_t *want = malloc(p->n * sizeof *want);
  int rc = 0;
  if (!want)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < p->n; i++)
    want[i] = mw;
  double t = NAN;
  pfi_device_now(p->dev, &t, NULL);
  rc = pfi_capset_apply(p->cs, want, err);
  free(want);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < p->n && rc == 0; i++) {
    uint32_t got = 0;
    if ((rc = pfi_store_cap_event(p->st, id, p->gpus[i], "set", mw, t, err)) <
        0)
      break;
    if ((rc = pfi_device_enforced_cap(p->dev, p->gpus[i], &got, err)) < 0)
      break;
    rc = pfi_store_cap_event(p->st, id, p->gpus[i], "readback", got, t, err);
  }
  return rc;
}

/* The point of hold i from the window x[start..start+n) of its instants. */
static int summarize(struct prof *p, struct pfi_profile_point *pt, size_t start,
                     size_t n, double *window_mean, struct pfi_error *err) {
  int rc = 0;
  pt->window = n;
  double m, se;
  mean_se(p->tok, p->ns, &pt->mean_tokens_per_s, &se);
  mean_se(p->pw, p->ns, &pt->mean_power_w, &se);
  mean_se(p->tok + start, n, &m, &se);
  *window_mean = m;
  if (n == 0)
    return 0;
  enum pfi_phase *ph = malloc(n * sizeof *ph);
  if (!ph)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    ph[i] = PFI_PHASE_TRAINING;
  if ((rc = pfi_phase_top_mean(p->tok + start, ph, n, NULL, &pt->tokens_per_s,
                               NULL, err)) < 0 ||
      (rc = pfi_phase_top_sem(p->tok + start, ph, n, NULL, &pt->tokens_sd,
                              err)) < 0 ||
      (rc = pfi_phase_top_mean(p->pw + start, ph, n, NULL, &pt->power_w, NULL,
                               err)) < 0 ||
      (rc = pfi_phase_top_sem(p->pw + start, ph, n, NULL, &pt->power_sd_w,
                              err)) < 0)
    pt->tokens_per_s = pt->power_w = NAN;
  free(ph);
  /* A window whose top 10 % is one value: the window's own standard
   * error stands for the aggregate's. */
  if (rc == 0 && !(pt->tokens_sd >= 0))
    pt->tokens_sd = se;
  if (rc == 0 && !(pt->power_sd_w >= 0))
    mean_se(p->pw + start, n, &m, &pt->power_sd_w);
  if (!(pt->tokens_sd >= 0))
    pt->tokens_sd = -1;
  if (!(pt->power_sd_w >= 0))
    pt->power_sd_w = -1;
  return rc;
}

/* One hold: cap i until steady, max_hold_s, the budget or a stop. */
static int hold(struct prof *p, size_t i, double *elapsed,
                struct pfi_profile_result *res, double *wmean,
                struct pfi_error *err) {
  const struct pfi_profile_opts *o = p->o;
  struct pfi_profile_point *pt = &res->pts[i];
  double iv = o->interval_s > 0 ? o->interval_s : PFI_PROFILE_INTERVAL_S;
  double min_hold = o->min_hold_s > 0 ? o->min_hold_s : PFI_PROFILE_MIN_HOLD_S;
  double max_hold = o->max_hold_s > 0 ? o->max_hold_s : PFI_PROFILE_MAX_HOLD_S;
  struct pfi_noise paper;
  pfi_noise_paper(&paper);
  const struct pfi_noise *nz = o->noise ? o->noise : &paper;
  double prec = o->rel_precision > 0 ? o->rel_precision : PFI_PROFILE_PRECISION;
  struct pfi_steady_rule rt = {0, fmax(prec, nz->rel_sd_tokens), 0};
  struct pfi_steady_rule rp = {0, fmax(prec, nz->rel_sd_power), 0};
  size_t min_n = (size_t)ceil(min_hold / iv);
  rt.min_samples = rp.min_samples = min_n > 8 ? min_n : 8;
  uint32_t mw = (uint32_t)llround(p->caps[i] * 1000.0);
  struct pfi_run_info ri;
  int rc, in_batch = 0;
  size_t instants = 0;
  double t0 = 0, now = 0, batch_t0 = 0;
  memset(&ri, 0, sizeof ri);
  memset(pt, 0, sizeof *pt);
  pt->cap_w = p->caps[i];
  pt->steady_at_s = NAN;
  pt->power_w = pt->tokens_per_s = NAN;
  pt->power_sd_w = pt->tokens_sd = -1;
  p->ns = 0;
  snprintf(ri.job, sizeof ri.job, "%s", p->job);
  if (p->ej) {
    snprintf(ri.arch, sizeof ri.arch, "%s", p->ej->arch);
    snprintf(ri.task, sizeof ri.task, "%s", p->ej->task);
  }
  ri.cap_w = p->caps[i];
  ri.gpus = p->ej ? p->ej->gpus : (unsigned)p->n;
  snprintf(ri.source, sizeof ri.source, "%s",
           p->emulated ? PFI_SOURCE_EMULATED : PFI_SOURCE_MEASURED);
  snprintf(ri.command, sizeof ri.command, "profile of %s, hold %zu of %zu",
           p->job, i + 1, p->ncaps);
  if ((rc = pfi_device_now(p->dev, &t0, err)) < 0)
    return rc;
  ri.t_start_s = t0;
  ri.exit_status = -1;
  if ((rc = pfi_store_run_begin(p->st, &ri, err)) < 0)
    return rc;
  pt->run_id = ri.id;
  char key[64];
  snprintf(key, sizeof key, "run.%lld.kind", (long long)ri.id);
  if ((rc = pfi_store_meta_set(p->st, key, "profile", err)) < 0)
    goto out;
  if ((rc = set_caps(p, ri.id, mw, err)) < 0)
    goto out;
  stage(p, "set", i);
  progress(p, "set", i, 0, NAN, NAN);
  for (;;) {
    if (!in_batch) {
      if ((rc = pfi_store_begin(p->st, err)) < 0)
        goto out;
      in_batch = 1;
      batch_t0 = pfi__mono_now();
    }
    if ((rc = dev_wait(p, iv, err)) < 0)
      goto out;
    if ((rc = pfi_device_now(p->dev, &now, err)) < 0)
      goto out;
    double power, rate;
    if ((rc = sample_power(p, ri.id, now, &power, err)) < 0 ||
        (rc = sample_tokens(p, ri.id, now, &rate, err)) < 0)
      goto out;
    if (!p->virtual_time || pfi__mono_now() - batch_t0 >= 0.25) {
      if ((rc = pfi_store_commit(p->st, err)) < 0)
        goto out;
      in_batch = 0;
    }
    pt->hold_s = now - t0;
    /* Only training instants count: a pause (evaluation, checkpoint) is
     * neither throughput nor the power of training at this cap. Nor is the
     * first instant: its interval began under the previous cap (a job's
     * reports of that interval mix both). */
    if (++instants > 1 && isfinite(rate) && rate > 0 && isfinite(power) &&
        (rc = push(p, rate, power, err)) < 0)
      goto out;
    pt->samples = p->ns;
    stage(p, "sample", i);
    progress(p, "sample", i, pt->hold_s, power, rate);
    struct pfi_steady st_t, st_p;
    int ok = pt->hold_s >= min_hold - 1e-9 &&
             pfi_steady_check(p->tok, p->ns, &rt, &st_t) == 1 &&
             pfi_steady_check(p->pw, p->ns, &rp, &st_p) == 1;
    int budget_hit =
        o->budget_s > 0 && *elapsed + pt->hold_s >= o->budget_s - 1e-9;
    if (ok || pt->hold_s >= max_hold - 1e-9 || budget_hit) {
      if (!ok) {
        pfi_steady_check(p->tok, p->ns, &rt, &st_t);
        pfi_steady_check(p->pw, p->ns, &rp, &st_p);
      }
      size_t start = st_t.start > st_p.start ? st_t.start : st_p.start;
      pt->steady = ok;
      if (ok)
        pt->steady_at_s = pt->hold_s;
      if ((rc = summarize(p, pt, start, p->ns - start, wmean, err)) < 0 &&
          rc != PFI_ENOTFOUND)
        goto out;
      rc = 0;
      progress(p, ok ? "steady" : "limit", i, pt->hold_s, power, rate);
      break;
    }
  }
  rc = 0;
out:
  if (in_batch) {
    struct pfi_error e2;
    if (pfi_store_commit(p->st, &e2) < 0) {
      pfi_store_rollback(p->st);
      if (rc == 0) {
        rc = e2.code ? e2.code : PFI_EDB;
        *err = e2;
      }
    }
  }
  *elapsed += pt->hold_s;
  {
    struct pfi_error e2;
    char val[160];
    snprintf(key, sizeof key, "run.%lld.steady", (long long)ri.id);
    if (pt->steady)
      snprintf(val, sizeof val, "steady after %.6g s (%zu instants)",
               pt->steady_at_s, pt->window);
    else
      snprintf(val, sizeof val, "not steady when left after %.6g s",
               pt->hold_s);
    if (rc == 0)
      pfi_store_meta_set(p->st, key, val, &e2);
    const char *state = rc == 0           ? PFI_RUN_COMPLETE
                        : rc == PFI_EINTR ? PFI_RUN_INTERRUPTED
                                          : PFI_RUN_FAILED;
    if (pfi_store_run_end(p->st, ri.id, state, now, -1, &e2) < 0 && rc == 0) {
      rc = e2.code ? e2.code : PFI_EDB;
      *err = e2;
    }
  }
  return rc;
}

/* The default schedule: PFI_PROFILE_CAPS caps from the highest limit all
 * the GPUs allow down to the lowest, whole watts. */
static int default_caps(struct prof *p, struct pfi_error *err) {
  uint32_t lo = 0, hi = UINT32_MAX;
  for (size_t i = 0; i < p->n; i++) {
    struct pfi_power_limits lim;
    int rc = pfi_device_limits(p->dev, p->gpus[i], &lim, err);
    if (rc < 0)
      return rc;
    if (lim.min_mw > lo)
      lo = lim.min_mw;
    if (lim.max_mw < hi)
      hi = lim.max_mw;
  }
  if (hi < lo)
    return pfi_error_set(err, PFI_ERANGE,
                         "the GPUs have no power limit in common");
  p->ncaps = PFI_PROFILE_CAPS;
  p->caps = malloc(p->ncaps * sizeof *p->caps);
  if (!p->caps)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  double a = ceil(lo / 1000.0), b = floor(hi / 1000.0);
  for (size_t k = 0; k < p->ncaps; k++)
    p->caps[k] = round(b - (b - a) * (double)k / (double)(p->ncaps - 1));
  return 0;
}

static void after_first_restore(void *arg) {
  const struct prof *p = arg;
  stage(p, "restoring", 0);
}

/* Opens the device and the GPUs' guarded set; attaches the emulated job. */
static int setup(struct prof *p, struct pfi_error *err) {
  const struct pfi_profile_opts *o = p->o;
  int rc;
  snprintf(p->backend, sizeof p->backend, "%s",
           o->backend ? o->backend : "emu");
  if (o->backend_params && strlen(o->backend_params) > 160)
    return pfi_error_set(err, PFI_EINVAL,
                         "backend parameters longer than 160 characters");
  snprintf(p->params, sizeof p->params, "%s",
           o->backend_params ? o->backend_params : "");
  int is_emu = strcmp(p->backend, "emu") == 0;
  if (o->emu_job || o->emulate) {
    if (!is_emu)
      return pfi_error_set(err, PFI_EINVAL,
                           "an emulated job runs on the emu backend only");
    if (o->emu_job) {
      p->ej = o->emu_job;
    } else {
      if ((rc = pfi_emu_jobs_load(&p->lib, NULL, err)) < 0)
        return rc;
      p->ej = pfi_emu_job_find(&p->lib, o->emulate);
      if (!p->ej)
        return pfi_error_set(err, PFI_ENOTFOUND,
                             "no job '%s' in the job library (pfi emulate "
                             "jobs)",
                             o->emulate);
    }
    char kv[64];
    if (!has_param(p->params, "gpus")) {
      snprintf(kv, sizeof kv, "gpus=%u", p->ej->gpus);
      add_param(p->params, sizeof p->params, kv);
    }
    if (!has_param(p->params, "profile")) {
      snprintf(kv, sizeof kv, "profile=%s", p->ej->profile);
      add_param(p->params, sizeof p->params, kv);
    }
  } else if (!o->throughput || strncmp(o->throughput, "jsonl:", 6) != 0) {
    return pfi_error_set(err, PFI_EINVAL,
                         "no job to profile: give an emulated job or the "
                         "running job's jsonl:PATH reports");
  }
  if (is_emu) {
    char kv[48];
    if (!has_param(p->params, "seed")) {
      snprintf(kv, sizeof kv, "seed=%llu", (unsigned long long)o->seed);
      add_param(p->params, sizeof p->params, kv);
    }
    const char *rt = getenv("PFI_EMU_REALTIME");
    p->virtual_time =
        !(strstr(p->params, "realtime=1") || (rt && strcmp(rt, "1") == 0));
  }
  if (o->job && *o->job)
    snprintf(p->job, sizeof p->job, "%s", o->job);
  else
    snprintf(p->job, sizeof p->job, "%s", p->ej ? p->ej->id : "profile");
  if (o->throughput && !p->ej) {
    if ((rc = pfi_tput_open(&p->tp, o->throughput, err)) < 0)
      return rc;
    if (pfi_tput_kind(p->tp) != PFI_TPUT_JSONL)
      return pfi_error_set(err, PFI_EINVAL,
                           "a running job's reports are read from jsonl:PATH");
  }
  /* Put back whatever a crashed pfi left capped before touching anything. */
  if ((rc = pfi_sweep_recover(p->st, err)) < 0)
    return rc;
  if ((rc = pfi_device_open(&p->dev, p->backend,
                            p->params[0] ? p->params : NULL, err)) < 0)
    return rc;
  unsigned count = 0;
  if ((rc = pfi_device_count(p->dev, &count, err)) < 0)
    return rc;
  size_t n = o->gpus && o->n_gpus ? o->n_gpus : count;
  p->gpus = malloc((n ? n : 1) * sizeof *p->gpus);
  if (!p->gpus)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    p->gpus[i] = o->gpus && o->n_gpus ? o->gpus[i] : (unsigned)i;
    if (p->gpus[i] >= count)
      return pfi_error_set(err, PFI_ERANGE,
                           "GPU %u does not exist (the device has %u)",
                           p->gpus[i], count);
  }
  p->n = n;
  if (!n)
    return pfi_error_set(err, PFI_ENOTFOUND, "no GPU to profile");
  p->emulated = is_emu;
  for (size_t i = 0; i < p->n && !p->emulated; i++) {
    char name[128];
    struct pfi_error e;
    if (pfi_device_name(p->dev, p->gpus[i], name, sizeof name, &e) == 0 &&
        strstr(name, "(emulated)"))
      p->emulated = 1;
  }
  if (o->caps_w && o->n_caps) {
    p->ncaps = o->n_caps;
    p->caps = malloc(p->ncaps * sizeof *p->caps);
    if (!p->caps)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    memcpy(p->caps, o->caps_w, p->ncaps * sizeof *p->caps);
  } else if ((rc = default_caps(p, err)) < 0) {
    return rc;
  }
  /* Every cap within every GPU's range before anything changes. */
  for (size_t k = 0; k < p->ncaps; k++)
    for (size_t i = 0; i < p->n; i++) {
      struct pfi_power_limits lim;
      uint32_t mw = (uint32_t)llround(p->caps[k] * 1000.0);
      if ((rc = pfi_device_limits(p->dev, p->gpus[i], &lim, err)) < 0)
        return rc;
      if (!(p->caps[k] > 0) || mw < lim.min_mw || mw > lim.max_mw)
        return pfi_error_set(
            err, PFI_ERANGE, "cap %g W is outside GPU %u's range %.0f..%.0f W",
            p->caps[k], p->gpus[i], lim.min_mw / 1000.0, lim.max_mw / 1000.0);
    }
  if ((rc = pfi_capset_open(&p->cs, p->st, p->dev, p->backend, p->params,
                            p->gpus, p->n, "profile", 0, err)) < 0)
    return rc;
  char seed[32], had[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
  /* One store, one seed, as a sweep's (its summaries' "same seed, same
   * bytes"). */
  int g = pfi_store_meta_get(p->st, "seed", had, sizeof had, err);
  if (g < 0)
    return g;
  if (g == 1 && strcmp(had, seed) != 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "%s holds data of seed %s: profile into it with "
                         "--seed %s, or use another store",
                         pfi_store_path(p->st), had, had);
  if ((rc = pfi_store_meta_set(p->st, "seed", seed, err)) < 0 ||
      (rc = pfi_store_meta_set(p->st, "backend", p->backend, err)) < 0 ||
      (rc = pfi_store_meta_set(
           p->st, "source",
           p->emulated ? PFI_SOURCE_EMULATED : PFI_SOURCE_MEASURED, err)) < 0 ||
      (rc = pfi_store_meta_set(p->st, "pfi_version_last", PFI_VERSION_STRING,
                               err)) < 0)
    return rc;
  if (p->ej) {
    struct pfi_emu_timeline tl;
    pfi_emu_timeline_init(&tl, p->ej);
    double jt = o->job_t_s > 0 ? o->job_t_s : tl.startup_s;
    if ((rc = pfi_emu_attach_at(p->dev, p->gpus, p->n, p->ej,
                                (unsigned long)o->seed, jt, err)) < 0)
      return rc;
    p->attached = 1;
  } else {
    double t0 = 0;
    pfi_device_now(p->dev, &t0, NULL);
    if ((rc = pfi_tput_start(p->tp, t0, pfi__wall_now(), err)) < 0)
      return rc;
  }
  return 0;
}

/* Index, interval and loss of the holds done. */
static int finish(struct prof *p, struct pfi_profile_result *res,
                  const double *wmean, struct pfi_error *err) {
  const struct pfi_profile_opts *o = p->o;
  size_t ref = SIZE_MAX;
  for (size_t i = 0; i < res->n; i++)
    if (isfinite(res->pts[i].tokens_per_s) &&
        (ref == SIZE_MAX || res->pts[i].cap_w > res->pts[ref].cap_w))
      ref = i;
  if (ref != SIZE_MAX && wmean[ref] > 0) {
    double tref = wmean[ref], lost = 0, over = 0, n = 0;
    for (size_t i = 0; i < res->n; i++) {
      const struct pfi_profile_point *pt = &res->pts[i];
      if (!pt->samples || !isfinite(wmean[i]))
        continue;
      double k = (double)pt->samples;
      lost += (tref - pt->mean_tokens_per_s) * k;
      over += (wmean[i] - pt->mean_tokens_per_s) * k;
      n += k;
    }
    if (n > 0) {
      res->lost_share = lost / (tref * n);
      res->overhead_share = over / (tref * n);
    }
  }
  struct pfi_curveset set;
  int rc = pfi_profile_curves(res, &set, err);
  if (rc == PFI_ENOTFOUND)
    return 0;
  if (rc < 0)
    return rc;
  if (set.n == 1 && set.c[0].n >= 2) {
    struct pfi_noise nz;
    pfi_noise_of(&set, p->emulated, &nz);
    if (nz.source != PFI_NOISE_COLUMNS && o->noise)
      nz = *o->noise;
    if ((rc = pfi_index_compute_noise(&set.c[0], PFI_INDEX_ALL, &nz,
                                      &res->index, err)) == 0) {
      res->index_ok = 1;
      size_t draws = o->draws ? o->draws : PFI_PROFILE_DRAWS;
      rc = pfi_index_ci_noise(&set.c[0], draws, o->ci_seed, &nz, &res->ci_lo,
                              &res->ci_hi, err);
      if (rc > 0)
        rc = 0;
    }
  }
  pfi_curveset_release(&set);
  return rc;
}

int pfi_profile_curves(const struct pfi_profile_result *res,
                       struct pfi_curveset *set, struct pfi_error *err) {
  pfi_curveset_init(set);
  size_t k = 0;
  for (size_t i = 0; i < res->n; i++) {
    const struct pfi_profile_point *pt = &res->pts[i];
    if (!(isfinite(pt->tokens_per_s) && pt->tokens_per_s > 0 &&
          isfinite(pt->power_w) && pt->power_w > 0))
      continue;
    struct pfi_point q = {pt->cap_w,
                          pt->power_w,
                          pt->tokens_per_s,
                          pt->power_sd_w,
                          pt->tokens_sd,
                          1,
                          0};
    int rc = pfi_curveset_add(set, res->job, &q, err);
    if (rc < 0) {
      pfi_curveset_release(set);
      return rc;
    }
    k++;
  }
  if (!k)
    return pfi_error_set(err, PFI_ENOTFOUND, "no hold gave a point");
  return 0;
}

void pfi_profile_result_release(struct pfi_profile_result *res) {
  if (!res)
    return;
  free(res->pts);
  res->pts = NULL;
  pfi_index_release(&res->index);
}

int pfi_profile_run(struct pfi_store *st, const struct pfi_profile_opts *o,
                    struct pfi_profile_result *res, struct pfi_error *err) {
  struct prof p;
  int rc = 0, recorded = 0;
  double *wmean = NULL;
  memset(&p, 0, sizeof p);
  memset(res, 0, sizeof *res);
  res->ci_lo = res->ci_hi = res->lost_share = res->overhead_share = NAN;
  p.st = st;
  p.o = o;
  if ((o->interval_s != 0 &&
       !(o->interval_s >= 0.01 && o->interval_s <= 600)) ||
      o->min_hold_s < 0 || o->max_hold_s < 0 || o->budget_s < 0 ||
      o->rel_precision < 0 || !(o->rel_precision < 1))
    return pfi_error_set(err, PFI_EINVAL,
                         "profile: an interval of 0.01..600 s, holds, budget "
                         "and precision >= 0 (precision < 1)");
  if (o->max_hold_s > 0 && o->min_hold_s > o->max_hold_s)
    return pfi_error_set(err, PFI_EINVAL,
                         "profile: the shortest hold (%g s) is longer than "
                         "the longest (%g s)",
                         o->min_hold_s, o->max_hold_s);
  if ((rc = pfi__store_lock(st, err)) < 0)
    return rc;
  if ((rc = setup(&p, err)) < 0)
    goto out;
  snprintf(res->job, sizeof res->job, "%s", p.job);
  res->emulated = p.emulated;
  res->pts = calloc(p.ncaps, sizeof *res->pts);
  wmean = calloc(p.ncaps, sizeof *wmean);
  if (!res->pts || !wmean) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = pfi_capset_record(p.cs, err)) < 0)
    goto out;
  recorded = 1;
  stage(&p, "recorded", 0);
  for (size_t i = 0; i < p.ncaps; i++) {
    if (o->budget_s > 0 && res->total_s >= o->budget_s - 1e-9)
      break;
    if (stopped(o)) {
      rc = pfi_error_set(err, PFI_EINTR, "interrupted");
      goto out;
    }
    wmean[i] = NAN;
    rc = hold(&p, i, &res->total_s, res, &wmean[i], err);
    res->n = i + 1;
    if (rc < 0)
      goto out;
  }
out:
  if (p.attached)
    pfi_emu_detach(p.dev);
  if (recorded) {
    struct pfi_error e2;
    pfi_error_clear(&e2);
    int r = pfi_capset_restore(p.cs, after_first_restore, &p, &e2);
    if (r < 0 && rc == 0) {
      rc = r;
      *err = e2;
    } else if (r < 0) {
      char buf[PFI_ERROR_MSG_MAX];
      pfi_error_format(&e2, buf, sizeof buf);
      size_t l = strlen(err->msg);
      snprintf(err->msg + l, sizeof err->msg - l,
               "; restoring caps also failed: %s", buf);
    }
    if (r < 0) {
      size_t l = strlen(err->msg);
      snprintf(err->msg + l, sizeof err->msg - l,
               "; caps not restored stay recorded: run pfi restore --db %s",
               pfi_store_path(st));
    }
    stage(&p, "restored", 0);
    if (p.ncaps)
      progress(&p, "restore", res->n ? res->n - 1 : 0, 0, NAN, NAN);
  }
  if (rc == 0 && res->pts) {
    /* Holds with a point (an interrupted hold's is dropped). */
    rc = finish(&p, res, wmean, err);
  }
  if (rc == PFI_EINTR)
    pfi_error_set(err, PFI_EINTR, "interrupted; caps restored");
  pfi_capset_close(p.cs);
  pfi_device_close(p.dev);
  pfi_tput_close(p.tp);
  pfi_emu_jobs_release(&p.lib);
  free(p.gpus);
  free(p.caps);
  free(p.tok);
  free(p.pw);
  free(wmean);
  pfi__store_unlock(st);
  return rc;
}
