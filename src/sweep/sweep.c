/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The sweep harness: caps, job, telemetry, throughput, restore. */
#include "pfi/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "internal.h"
#include "pfi/capset.h"
#include "pfi/device.h"
#include "pfi/duration.h"
#include "pfi/emu.h"
#include "pfi/sensor.h"
#include "pfi/prom.h"
#include "pfi/throughput.h"
#include "pfi/version.h"
#include "sweep_int.h"

extern char **environ;

/* GPU memory counts as released below this, MiB: a driver context alone
 * holds a few hundred MiB. */
#define FB_RELEASED_MIB 1024.0
/* Longest extra wait for memory to be released after the cooldown, s. */
#define FB_RELEASE_MAX_S 600.0
/* In virtual time a command is real: the harness waits (real time, up to
 * this many ms without news) for it to report progress up to the device
 * clock before advancing the clock further. */
#define LOCKSTEP_IDLE_MS 2000
/* ... and before its first report, up to this long (ms, and at most the
 * run's duration): a real job's start-up (imports, building the model,
 * loading data) is silent. */
#define LOCKSTEP_FIRST_MS 120000
/* Longest wait, real seconds, for the job's stdout to be matched to its end
 * once the job is stopped (then 1 s more before the matcher is given up). */
#define TPUT_DRAIN_S 2.0

static int stopped(const struct pfi_sweep_opts *o) {
  return o->stop && *o->stop;
}

static void stage(const struct sweep *sw, const char *what, size_t i) {
  if (sw->o->stage_hook)
    sw->o->stage_hook(what, i, sw->o->stage_arg);
}

static void progress(const struct sweep *sw, const char *event, size_t i,
                     double cap, double elapsed, double power, double rate) {
  if (!sw->o->progress)
    return;
  struct pfi_sweep_progress p = {
      .job = sw->job_name,
      .cap_index = i,
      .n_caps = sw->o->n_caps,
      .cap_w = cap,
      .elapsed_s = elapsed,
      .duration_s = sw->o->duration_s > 0 ? sw->o->duration_s : 1800,
      .power_w = power,
      .tokens_per_s = rate,
      .event = event};
  sw->o->progress(&p, sw->o->progress_arg);
}

int pfi_sweep_parse_gpus(const char *s, unsigned **gpus, size_t *n,
                         struct pfi_error *err) {
  *gpus = NULL;
  *n = 0;
  if (!s || strcmp(s, "all") == 0)
    return 0;
  unsigned *v = NULL;
  size_t k = 0, cap = 0;
  const char *p = s;
  int rc = 0;
  while (*p) {
    char *end;
    errno = 0;
    unsigned long a = strtoul(p, &end, 10);
    if (end == p || errno || a > 1023 || *p == '-' || *p == '+') {
      rc = pfi_error_set(err, PFI_EINVAL, "--gpus '%s': bad GPU index at '%s'",
                         s, p);
      goto out;
    }
    unsigned long b = a;
    p = end;
    if (*p == '-') {
      p++;
      errno = 0;
      b = strtoul(p, &end, 10);
      if (end == p || errno || b > 1023 || b < a || *p == '+') {
        rc = pfi_error_set(err, PFI_EINVAL, "--gpus '%s': bad range", s);
        goto out;
      }
      p = end;
    }
    for (unsigned long g = a; g <= b; g++) {
      for (size_t j = 0; j < k; j++)
        if (v[j] == g) {
          rc = pfi_error_set(err, PFI_EINVAL, "--gpus '%s': GPU %lu twice", s,
                             g);
          goto out;
        }
      if (k == cap) {
        size_t nc = cap ? 2 * cap : 8;
        unsigned *nv = realloc(v, nc * sizeof *nv);
        if (!nv) {
          rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
          goto out;
        }
        v = nv;
        cap = nc;
      }
      v[k++] = (unsigned)g;
    }
    if (*p == ',')
      p++;
    else if (*p) {
      rc =
          pfi_error_set(err, PFI_EINVAL, "--gpus '%s': unexpected '%c'", s, *p);
      goto out;
    }
  }
  if (k == 0) {
    rc = pfi_error_set(err, PFI_EINVAL, "--gpus '%s': no GPU", s);
    goto out;
  }
  *gpus = v;
  *n = k;
  v = NULL;
out:
  free(v);
  return rc;
}

/* ---- telemetry ----------------------------------------------------------- */

/* The node's power at `now` beside its GPUs' gpu_w (store.h's node_power):
 * the emulator's node model on emulated GPUs, RAPL's package and DRAM
 * power over the interval since the previous reading on measured ones
 * (nothing for the first reading of a run, or without RAPL). */
static int node_power(struct sweep *sw, int64_t run_id, double now,
                      double gpu_w, struct pfi_error *err) {
  struct pfi_node_power np = {now, gpu_w, NAN, NAN, NULL};
  if (sw->emulated) {
    np.other_w = pfi_emu_node_other_w((unsigned)sw->n, gpu_w);
    np.source = PFI_NODE_SOURCE_EMULATED;
  } else if (sw->bmc) {
    double w;
    struct pfi_error e;
    pfi_error_clear(&e);
    if (sw->res->bmc_gave_up)
      return 0;
    if (pfi_bmc_read(sw->bmc, &w, &e) < 0) {
      if (sw->res->bmc_failures++ == 0)
        sw->res->bmc_first = e;
      /* A failed reading loses one instant; a BMC that keeps failing (each
       * try up to the interval) is not read again. */
      if (++sw->bmc_failing >= PFI_SWEEP_BMC_GIVE_UP)
        sw->res->bmc_gave_up = 1;
      return 0;
    }
    sw->bmc_failing = 0;
    if (!isfinite(gpu_w))
      return 0;
    np.node_w = w;
    np.other_w = w - gpu_w;
    np.source = PFI_NODE_SOURCE_DCMI;
    return pfi_store_add_node_power(sw->st, run_id, &np, err);
  } else if (sw->rapl) {
    double uj[PFI_RAPL_MAX];
    struct pfi_error e;
    if (pfi_rapl_read(sw->rapl, uj, &e) < 0)
      return 0; /* a counter that cannot be read loses one interval */
    if (isfinite(sw->rapl_t) && now > sw->rapl_t)
      np.other_w =
          pfi_rapl_power_w(sw->rapl, sw->rapl_uj, uj, now - sw->rapl_t);
    memcpy(sw->rapl_uj, uj, sw->rapl->n * sizeof *uj);
    sw->rapl_t = now;
    np.source = PFI_NODE_SOURCE_RAPL;
  }
  if (!np.source || !isfinite(np.other_w) || !isfinite(gpu_w))
    return 0;
  np.node_w = gpu_w + np.other_w;
  return pfi_store_add_node_power(sw->st, run_id, &np, err);
}

static int sample_all(struct sweep *sw, int64_t run_id, double now,
                      double *power, struct pfi_error *err) {
  const struct pfi_sweep_opts *o = sw->o;
  *power = NAN;
  double sum = 0;
  int any = 0, rc;
  if (o->telemetry && strncmp(o->telemetry, "dcgm-exporter:", 14) == 0) {
    struct pfi_prom_gpu *g = NULL;
    struct pfi_prom_stats ps;
    struct pfi_error e;
    int n = pfi_prom_scrape(o->telemetry + 14,
                            o->interval_s > 0 ? o->interval_s : 5, &g, &ps, &e);
    if (n < 0) {
      if (sw->res->telemetry_failures++ == 0)
        sw->res->telemetry_first = e;
    }
    /* A failed scrape loses one interval of telemetry, not the run. */
    for (int k = 0; k < n; k++) {
      for (size_t i = 0; i < sw->n; i++) {
        if ((unsigned)g[k].gpu != sw->gpus[i])
          continue;
        struct pfi_sample s = g[k].s;
        s.t_s = now;
        if ((rc = pfi_store_add_sample(sw->st, run_id, sw->gpus[i], &s, err)) <
            0) {
          free(g);
          return rc;
        }
        if (pfi_sample_has(&s, PFI_FIELD_POWER)) {
          sum += s.v[PFI_FIELD_POWER];
          any = 1;
        }
      }
    }
    free(g);
  } else {
    for (size_t i = 0; i < sw->n; i++) {
      struct pfi_sample *s = &sw->samples[i];
      memset(s, 0, sizeof *s);
      if ((rc = pfi_device_sample(sw->dev, sw->gpus[i], s, err)) < 0)
        return rc;
      s->t_s = now;
      if ((rc = pfi_store_add_sample(sw->st, run_id, sw->gpus[i], s, err)) < 0)
        return rc;
      if (pfi_sample_has(s, PFI_FIELD_POWER)) {
        sum += s->v[PFI_FIELD_POWER];
        any = 1;
      }
    }
  }
  if (any) {
    *power = sum;
    if ((rc = node_power(sw, run_id, now, sum, err)) < 0)
      return rc;
  }
  return 0;
}

struct stage_arg {
  const struct sweep *sw;
  size_t ci;
};

static void after_first_restore(void *arg) {
  struct stage_arg *sa = arg;
  stage(sa->sw, "restoring", sa->ci);
}

/* ---- one run --------------------------------------------------------------*/

/* Sets every GPU's cap and checks the enforced limit. */
static int set_caps(struct sweep *sw, int64_t run_id, uint32_t mw,
                    struct pfi_error *err) {
  for (size_t i = 0; i < sw->n; i++) {
    double t = NAN;
    pfi_device_now(sw->dev, &t, NULL);
    int rc = pfi_device_set_cap(sw->dev, sw->gpus[i], mw, err);
    if (rc < 0)
      return rc;
    if ((rc = pfi_store_cap_event(sw->st, run_id, sw->gpus[i], "set", mw, t,
                                  err)) < 0)
      return rc;
    uint32_t got = 0;
    if ((rc = pfi_device_enforced_cap(sw->dev, sw->gpus[i], &got, err)) < 0)
      return rc;
    if ((rc = pfi_store_cap_event(sw->st, run_id, sw->gpus[i], "readback", got,
                                  t, err)) < 0)
      return rc;
    if (got != mw)
      return pfi_error_set(err, PFI_EMISMATCH,
                           "GPU %u: set a cap of %u mW but the enforced limit "
                           "reads %u mW; stopping",
                           sw->gpus[i], mw, got);
  }
  return 0;
}

/* Records every GPU's cap before the run changes it: on the machine (the
 * GPU's lock record) and in the store's ledger (pfi/capset.h). */
static int record_caps(struct sweep *sw, struct pfi_error *err) {
  return pfi_capset_record(sw->cs, err);
}

/* Waits `seconds` on the device clock in slices of at most `slice`, so a
 * stop request is noticed. Returns 0, PFI_EINTR or a device error. */
static int dev_wait(struct sweep *sw, double seconds, double slice,
                    struct pfi_error *err) {
  while (seconds > 1e-9) {
    if (stopped(sw->o))
      return pfi_error_set(err, PFI_EINTR, "interrupted");
    double d = seconds < slice ? seconds : slice;
    int rc = pfi_device_wait(sw->dev, d, err);
    if (rc == PFI_EINTR && stopped(sw->o))
      return rc;
    if (rc < 0 && rc != PFI_EINTR)
      return rc;
    seconds -= d;
  }
  return stopped(sw->o) ? pfi_error_set(err, PFI_EINTR, "interrupted") : 0;
}

/* In virtual time, lets a live command catch up with the device clock: waits
 * (real time) while it reports progress, until its job time reaches `now`,
 * it exits, or it has been silent for LOCKSTEP_IDLE_MS. A job that fell
 * silent once (finished reporting, or never reports job time) is not waited
 * for again in this run, so it costs one timeout, not one per interval. */
static void lockstep(struct sweep *sw, struct job *jb, int64_t run_id,
                     double now, struct pfi_error *err) {
  if (!sw->virtual_time || jb->pid <= 0 || !sw->tp || jb->lockstep_off)
    return;
  double quiet_since = pfi__mono_now();
  double run_s = sw->o->duration_s > 0 ? sw->o->duration_s : 1800;
  while (!pfi__sweep_reap(jb, 0) && !stopped(sw->o) &&
         !(isfinite(jb->last_job_t) && jb->last_job_t >= now)) {
    double limit_ms = LOCKSTEP_IDLE_MS;
    if (jb->reports == 0)
      limit_ms = run_s * 1000.0 < LOCKSTEP_FIRST_MS ? run_s * 1000.0
                                                    : LOCKSTEP_FIRST_MS;
    if ((pfi__mono_now() - quiet_since) * 1000.0 >= limit_ms) {
      jb->lockstep_off = 1;
      return;
    }
    double before = jb->last_job_t;
    if (jb->out_fd >= 0) {
      struct pollfd pf = {jb->out_fd, POLLIN, 0};
      poll(&pf, 1, 5);
    } else {
      pfi__sweep_pause_ms(2);
    }
    if (pfi__sweep_collect(sw, jb, run_id, now, 0, err) < 0)
      return;
    if (!(jb->last_job_t == before) &&
        !(isnan(before) && isnan(jb->last_job_t)))
      quiet_since = pfi__mono_now();
  }
}

static int cooldown(struct sweep *sw, struct pfi_error *err) {
  const struct pfi_sweep_opts *o = sw->o;
  double cd = o->cooldown_s < 0 ? 0 : (o->cooldown_s > 0 ? o->cooldown_s : 60);
  double iv = o->interval_s > 0 ? o->interval_s : 5;
  int rc = dev_wait(sw, cd, iv, err);
  if (rc < 0)
    return rc;
  /* Then until the job's memory is gone (a process that outlives its
   * SIGKILL briefly, or a driver that is slow to free it). */
  for (double waited = 0; waited < FB_RELEASE_MAX_S; waited += iv) {
    int busy = 0;
    for (size_t i = 0; i < sw->n; i++) {
      struct pfi_sample s;
      memset(&s, 0, sizeof s);
      if (pfi_device_sample(sw->dev, sw->gpus[i], &s, NULL) == 0 &&
          pfi_sample_has(&s, PFI_FIELD_FB_USED) &&
          s.v[PFI_FIELD_FB_USED] >= FB_RELEASED_MIB)
        busy = 1;
    }
    if (!busy)
      return 0;
    if ((rc = dev_wait(sw, iv, iv, err)) < 0)
      return rc;
  }
  return 0;
}

/* The run's copy of the job's standard output (regex kind, where pfi reads
 * it): DB-logs/run-ID.stdout beside the store, named in the store's meta
 * (run.ID.stdout). */
static int open_stdout_log(struct sweep *sw, int64_t run_id, int *fd,
                           char *path, size_t n, struct pfi_error *err) {
  snprintf(path, n, "%s-logs", pfi_store_path(sw->st));
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  size_t l = strlen(path);
  snprintf(path + l, n - l, "/run-%lld.stdout", (long long)run_id);
  *fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (*fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  char key[64];
  snprintf(key, sizeof key, "run.%lld.stdout", (long long)run_id);
  return pfi_store_meta_set(sw->st, key, path, err);
}

static int one_run(struct sweep *sw, size_t ci, struct pfi_sweep_result *res,
                   struct pfi_error *err) {
  const struct pfi_sweep_opts *o = sw->o;
  double cap_w = o->caps_w[ci];
  double duration = o->duration_s > 0 ? o->duration_s : 1800;
  double iv = o->interval_s > 0 ? o->interval_s : 5;
  double grace = o->grace_s > 0 ? o->grace_s : 10;
  uint32_t mw = (uint32_t)llround(cap_w * 1000.0);
  struct job jb = {.pid = -1,
                   .out_fd = -1,
                   .last_rate = NAN,
                   .last_job_t = NAN,
                   .attach_at = NAN,
                   .first_report_t = NAN};
  struct pfi_run_info ri;
  int rc = 0, recorded = 0, in_batch = 0;
  double batch_t0 = 0;
  const char *final_state = PFI_RUN_FAILED;
  int exit_status = -1;
  sw->rapl_t = NAN; /* RAPL power is over intervals within the run */
  double t0 = 0, now = 0;
  int log_fd = -1;
  char log_path[4200] = "";

  /* Check the cap against every GPU's limits before changing anything. */
  for (size_t i = 0; i < sw->n; i++) {
    struct pfi_power_limits lim;
    if ((rc = pfi_device_limits(sw->dev, sw->gpus[i], &lim, err)) < 0)
      return rc;
    if (mw < lim.min_mw || mw > lim.max_mw)
      return pfi_error_set(
          err, PFI_ERANGE, "cap %g W is outside GPU %u's range %.0f..%.0f W",
          cap_w, sw->gpus[i], lim.min_mw / 1000.0, lim.max_mw / 1000.0);
  }
  memset(&ri, 0, sizeof ri);
  snprintf(ri.job, sizeof ri.job, "%s", sw->job_name);
  if (sw->ej) {
    snprintf(ri.arch, sizeof ri.arch, "%s", sw->ej->arch);
    snprintf(ri.task, sizeof ri.task, "%s", sw->ej->task);
  }
  ri.cap_w = cap_w;
  ri.gpus = sw->ej ? sw->ej->gpus : (unsigned)sw->n;
  snprintf(ri.source, sizeof ri.source, "%s",
           sw->emulated ? PFI_SOURCE_EMULATED : PFI_SOURCE_MEASURED);
  snprintf(ri.command, sizeof ri.command, "%s", sw->command);
  if ((rc = pfi_device_now(sw->dev, &t0, err)) < 0)
    goto out;
  ri.t_start_s = t0;
  ri.exit_status = -1;
  if ((rc = pfi_store_run_begin(sw->st, &ri, err)) < 0)
    goto out;
  if (sw->tp && pfi_tput_kind(sw->tp) == PFI_TPUT_REGEX && o->argv &&
      (rc = open_stdout_log(sw, ri.id, &log_fd, log_path, sizeof log_path,
                            err)) < 0)
    goto out;
  if ((rc = record_caps(sw, err)) < 0)
    goto out;
  recorded = 1;
  stage(sw, "recorded", ci);

  if ((rc = set_caps(sw, ri.id, mw, err)) < 0)
    goto out;
  stage(sw, "set", ci);
  progress(sw, "start", ci, cap_w, 0, NAN, NAN);

  /* Start the job. */
  if (sw->ej && o->argv && o->argv[0] && sw->tp) {
    /* The command's own start-up stands for the group's (pfi/emu.h,
     * pfi_emu_attach_at): the load starts at the first report. */
    jb.attach_pending = 1;
  } else if (sw->ej) {
    if ((rc = pfi_emu_attach(sw->dev, sw->gpus, sw->n, sw->ej,
                             (unsigned long)o->seed, err)) < 0)
      goto out;
    jb.attached = 1;
  }
  if (sw->tp && (rc = pfi_tput_start(sw->tp, t0, pfi__wall_now(), err)) < 0)
    goto out;
  if (o->argv && o->argv[0] &&
      (rc = pfi__sweep_start_command(sw, &jb, cap_w, ri.id, err)) < 0)
    goto out;
  if (jb.out_fd >= 0 && sw->tp) {
    /* Drained continuously from here on, whatever the interval; kept in
     * the run's log and passed on. */
    pfi_tput_tee(sw->tp, o->stdout_fd > 0 ? o->stdout_fd : -1, log_fd);
    pfi_tput_clock(sw->tp, t0, !sw->virtual_time);
    if ((rc = pfi_tput_attach(sw->tp, jb.out_fd, err)) < 0)
      goto out;
    jb.out_fd = -1;
    jb.streaming = 1;
  }
  /* Named in the GPUs' lock records: if pfi dies and the job ignores the
   * SIGTERM that sends, the next pfi on these GPUs ends it. */
  if (jb.pid > 0)
    pfi_capset_job(sw->cs, jb.pid, NULL);

  /* Sample until the duration, the job's exit or a stop request. */
  double elapsed = 0;
  for (;;) {
    if ((rc = dev_wait(sw, iv, iv, err)) < 0)
      goto out;
    if ((rc = pfi_device_now(sw->dev, &now, err)) < 0)
      goto out;
    if (sw->tp)
      pfi_tput_clock(sw->tp, now, !sw->virtual_time);
    if (jb.attach_pending && now >= jb.attach_at) {
      struct pfi_emu_timeline tl;
      pfi_emu_timeline_init(&tl, sw->ej);
      if ((rc = pfi_emu_attach_at(
               sw->dev, sw->gpus, sw->n, sw->ej, (unsigned long)o->seed,
               tl.startup_s + (now - jb.attach_at), err)) < 0)
        goto out;
      jb.attach_pending = 0;
      jb.attached = 1;
    }
    elapsed = now - t0;
    if (!in_batch) {
      if ((rc = pfi_store_begin(sw->st, err)) < 0)
        goto out;
      in_batch = 1;
      batch_t0 = pfi__mono_now();
    }
    double power;
    if ((rc = sample_all(sw, ri.id, now, &power, err)) < 0)
      goto out;
    lockstep(sw, &jb, ri.id, now, err);
    if ((rc = pfi__sweep_collect(sw, &jb, ri.id, now, 0, err)) < 0)
      goto out;
    /* One transaction per interval at wall-clock pace; in virtual time,
     * where intervals pass in microseconds, one per quarter second of wall
     * time (a commit costs far more than an interval's rows). */
    if (!sw->virtual_time || pfi__mono_now() - batch_t0 >= 0.25) {
      if ((rc = pfi_store_commit(sw->st, err)) < 0)
        goto out;
      in_batch = 0;
    }
    progress(sw, "sample", ci, cap_w, elapsed, power, jb.last_rate);
    stage(sw, "sample", ci);
    if (elapsed >= duration - 1e-9)
      break;
    if (o->report_window_s > 0 && isfinite(jb.first_report_t) &&
        now >= jb.first_report_t + o->report_window_s)
      break;
    /* A command that exits ends the run once the device clock has
     * reached the last throughput it reported. */
    if (jb.pid > 0 && pfi__sweep_reap(&jb, 0) &&
        !(isfinite(jb.last_job_t) && jb.last_job_t > now))
      break;
  }
  rc = 0;
out:
  if (in_batch) {
    /* Keep what was sampled: the batch is consistent on its own. A batch
     * that cannot be committed fails the run (in virtual time one batch
     * can hold the whole run): it must not be marked complete without its
     * samples. */
    struct pfi_error e2;
    if (pfi_store_commit(sw->st, &e2) < 0) {
      pfi_store_rollback(sw->st);
      if (rc == 0) {
        rc = e2.code ? e2.code : PFI_EDB;
        *err = e2;
      }
    }
  }
  if (jb.pid > 0) {
    int was_running = !pfi__sweep_reap(&jb, 0);
    pfi__sweep_stop_command(&jb, grace);
    pfi_capset_job(sw->cs, 0, NULL);
    struct pfi_error e2;
    pfi_error_clear(&e2);
    if (jb.streaming) {
      /* Bounded: a matcher stuck in one line must not keep the caps. */
      int r = pfi_tput_detach(sw->tp, TPUT_DRAIN_S, &e2);
      if (r < 0 && rc == 0) {
        rc = r;
        *err = e2;
      }
    }
    pfi__sweep_collect(sw, &jb, ri.id, now, 1, &e2);
    if (jb.out_fd >= 0)
      close(jb.out_fd);
    if (log_fd >= 0 && jb.streaming && pfi_tput_tee_error(sw->tp)) {
      char key[64], val[4400];
      snprintf(key, sizeof key, "run.%lld.stdout", (long long)ri.id);
      snprintf(val, sizeof val, "%s (cut short: %s)", log_path,
               strerror((int)pfi_tput_tee_error(sw->tp)));
      pfi_store_meta_set(sw->st, key, val, &e2);
    }
    if (WIFEXITED(jb.status))
      exit_status = WEXITSTATUS(jb.status);
    else if (WIFSIGNALED(jb.status))
      exit_status = 128 + WTERMSIG(jb.status);
    /* The harness ended a running job: that is the normal end of a run.
     * A job that ended by itself must have succeeded. */
    if (rc == 0 && !was_running && exit_status != 0) {
      rc = pfi_error_set(err, PFI_ECHILD,
                         "the job exited with status %d at %g W; caps "
                         "restored",
                         exit_status, cap_w);
      res->runs_failed++;
    }
    if (sw->tp) {
      struct pfi_error first, first_reset;
      long bad = pfi_tput_bad_lines(sw->tp, &first);
      if (bad && !res->tput_bad_lines)
        res->tput_first_bad = first;
      res->tput_bad_lines += bad;
      long resets = pfi_tput_resets(sw->tp, &first_reset);
      if (resets && !res->tput_resets)
        res->tput_first_reset = first_reset;
      res->tput_resets += resets;
      if (bad || resets)
        pfi__sweep_mark_lost(sw, ri.id, bad, &first, resets, &first_reset, res);
    }
  }
  if (jb.attached)
    pfi_emu_detach(sw->dev);
  if (recorded) {
    struct pfi_error e2;
    pfi_error_clear(&e2);
    struct stage_arg sa = {sw, ci};
    int r = pfi_capset_restore(sw->cs, after_first_restore, &sa, &e2);
    if (r < 0 && rc == 0) {
      rc = r;
      *err = e2;
    } else if (r < 0) {
      /* Keep the first error but say that restoring failed too. */
      char buf[PFI_ERROR_MSG_MAX];
      pfi_error_format(&e2, buf, sizeof buf);
      size_t l = strlen(err->msg);
      snprintf(err->msg + l, sizeof err->msg - l,
               "; restoring caps also failed: %s", buf);
    }
    if (r < 0) {
      /* The operator must learn that GPUs may still be capped, and how to
       * put them back. */
      size_t l = strlen(err->msg);
      snprintf(err->msg + l, sizeof err->msg - l,
               "; caps not restored stay recorded: run pfi restore --db %s",
               pfi_store_path(sw->st));
    }
    stage(sw, "restored", ci);
    progress(sw, "restore", ci, cap_w, now - t0, NAN, NAN);
  }
  if (ri.id > 0) {
    if (rc == 0)
      final_state = PFI_RUN_COMPLETE;
    else if (rc == PFI_EINTR)
      final_state = PFI_RUN_INTERRUPTED;
    struct pfi_error e2;
    if (pfi_store_run_end(sw->st, ri.id, final_state, now, exit_status, &e2) <
            0 &&
        rc == 0) {
      rc = PFI_EDB;
      *err = e2;
    }
  }
  progress(sw, "end", ci, cap_w, now - t0, NAN, jb.last_rate);
  if (log_fd >= 0) {
    /* The reader thread that wrote it is joined. A job that wrote nothing
     * leaves no empty file: the meta key says so instead. */
    struct stat sb;
    if (fstat(log_fd, &sb) == 0 && sb.st_size == 0 && unlink(log_path) == 0) {
      char key[64];
      struct pfi_error e2;
      snprintf(key, sizeof key, "run.%lld.stdout", (long long)ri.id);
      pfi_store_meta_set(sw->st, key, "none (the job wrote nothing to it)",
                         &e2);
    }
    close(log_fd);
  }
  res->reports += jb.reports;
  return rc;
}

/* ---- one sweep per GPU ----------------------------------------------------*/

/* Takes the per-GPU lock (include/pfi/gpulock.h) of each GPU, by UUID,
 * for the whole sweep, and puts back first what a dead pfi left changed
 * on them (pfi/capset.h). Two sweeps on one GPU through different stores
 * would each record the other's cap as the one to restore, and the GPU
 * could end at a sweep cap for good; an operator's pfi cap would be undone
 * by the restore, or would corrupt the measurement. */
static int lock_gpus(struct sweep *sw, struct pfi_error *err) {
  return pfi_capset_open(&sw->cs, sw->st, sw->dev, sw->backend, sw->params,
                         sw->gpus, sw->n, "sweep", 0, err);
}

/* ---- the job's default name ----------------------------------------------*/

static const char *base_name(const char *p) {
  const char *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

/* python, python3, python3.11, pypy3: an interpreter whose first operand is
 * the script. */
static int is_python(const char *b) {
  const char *rest = NULL;
  if (strncmp(b, "python", 6) == 0)
    rest = b + 6;
  else if (strncmp(b, "pypy", 4) == 0)
    rest = b + 4;
  if (!rest)
    return 0;
  for (; *rest; rest++)
    if (!((*rest >= '0' && *rest <= '9') || *rest == '.'))
      return 0;
  return 1;
}

/* Launchers whose options come before the script they start. */
static int is_launcher(const char *b) {
  static const char *const names[] = {"torchrun", "accelerate", "deepspeed",
                                      "mpirun",   "srun",       "uv",
                                      "bash",     "sh"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(b, names[i]) == 0)
      return 1;
  return 0;
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The word of argv that names what runs: the script behind interpreters and
 * launchers (python3 -u train.py, torchrun --nproc-per-node 8 train.py,
 * python -m torch.distributed.run ... train.py, env A=1 python3 x.py), a
 * module run with -m, else the program itself. */
static const char *job_word(char *const *argv) {
  size_t i = 0;
  while (argv[i] && strcmp(base_name(argv[i]), "env") == 0) {
    i++;
    while (argv[i] && (argv[i][0] == '-' || strchr(argv[i], '='))) {
      /* env's options with a value: -u NAME, -C DIR */
      if ((strcmp(argv[i], "-u") == 0 || strcmp(argv[i], "-C") == 0) &&
          argv[i + 1])
        i++;
      i++;
    }
  }
  if (!argv[i])
    return argv[0];
  const char *prog = base_name(argv[i]);
  int py = is_python(prog), launcher = is_launcher(prog);
  if (!py && !launcher)
    return prog;
  for (size_t j = i + 1; argv[j]; j++) {
    const char *a = argv[j];
    if (strcmp(a, "-m") == 0 && argv[j + 1]) {
      const char *m = argv[++j];
      if (strcmp(m, "torch.distributed.run") == 0 ||
          strcmp(m, "torch.distributed.launch") == 0) {
        py = 0; /* a launcher now: its script ends in .py */
        continue;
      }
      return m;
    }
    if (ends_with(a, ".py") || ends_with(a, ".sh"))
      return base_name(a);
    if (py && a[0] != '-')
      return base_name(a);
    /* python's options that take a value: -X opt, -W arg, -c cmd */
    if (py && (strcmp(a, "-X") == 0 || strcmp(a, "-W") == 0) && argv[j + 1])
      j++;
    else if (py && strcmp(a, "-c") == 0)
      return prog;
  }
  return prog;
}

void pfi_sweep_job_name(char *const *argv, char *buf, size_t n) {
  if (!buf || n == 0)
    return;
  buf[0] = 0;
  if (!argv || !argv[0])
    return;
  /* FNV-1a (64-bit) of every word, each ended by a NUL byte. */
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; argv[i]; i++) {
    for (const unsigned char *p = (const unsigned char *)argv[i];; p++) {
      h ^= *p;
      h *= 1099511628211ULL;
      if (!*p)
        break;
    }
  }
  const char *w = job_word(argv);
  size_t len = strlen(w);
  if (ends_with(w, ".py") || ends_with(w, ".sh"))
    len -= 3;
  if (len > 96)
    len = 96;
  snprintf(buf, n, "%.*s-%08x", (int)len, w, (unsigned)(h ^ (h >> 32)));
}

/* CUDA numbers GPUs in its own order unless CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * which is NVML's; the job gets CUDA_VISIBLE_DEVICES = the swept GPUs in
 * that order (sweep_job.c). An environment that already chooses other GPUs,
 * or another order, would have the job train on GPUs pfi neither caps nor
 * measures: refused. CUDA_VISIBLE_DEVICES may list the same GPUs by index
 * or by UUID, in the sweep's order. */
static int check_cuda_env(struct sweep *sw, struct pfi_error *err) {
  const char *ord = getenv("CUDA_DEVICE_ORDER");
  if (ord && *ord && strcmp(ord, "PCI_BUS_ID") != 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "the environment sets CUDA_DEVICE_ORDER=%s: the job's "
                         "GPU numbers would not be NVML's, whose GPUs pfi "
                         "caps; unset it (pfi sweep sets PCI_BUS_ID)",
                         ord);
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  if (!cvd)
    return 0;
  char want[1024] = "", uuids[4096] = "";
  size_t off = 0, uoff = 0;
  for (size_t i = 0; i < sw->n && off + 12 < sizeof want; i++)
    off += (size_t)snprintf(want + off, sizeof want - off, "%s%u", i ? "," : "",
                            sw->gpus[i]);
  for (size_t i = 0; i < sw->n && uoff + 100 < sizeof uuids; i++) {
    char u[96];
    struct pfi_error e;
    if (pfi_device_uuid(sw->dev, sw->gpus[i], u, sizeof u, &e) < 0) {
      uuids[0] = 0;
      break;
    }
    uoff += (size_t)snprintf(uuids + uoff, sizeof uuids - uoff, "%s%s",
                             i ? "," : "", u);
  }
  if (strcmp(cvd, want) == 0 || (uuids[0] && strcmp(cvd, uuids) == 0))
    return 0;
  return pfi_error_set(err, PFI_EINVAL,
                       "the environment sets CUDA_VISIBLE_DEVICES=%s, but the "
                       "sweep caps and measures GPU(s) %s (NVML's numbers): "
                       "the job would train on GPUs pfi neither caps nor "
                       "measures; unset CUDA_VISIBLE_DEVICES (pfi sweep sets "
                       "it to the swept GPUs) or choose those GPUs with "
                       "--gpus",
                       cvd, want);
}

/* A job's name must say one command: a store that holds runs of `name`
 * with another command is not resumed with this one. */
static int check_job_command(struct sweep *sw, struct pfi_error *err) {
  char had[sizeof sw->command];
  int r = pfi_store_job_command(sw->st, sw->job_name, had, sizeof had, err);
  if (r <= 0)
    return r;
  if (strcmp(had, sw->command) == 0)
    return 0;
  return pfi_error_set(err, PFI_EINVAL,
                       "%s holds runs of job '%s' made by another command "
                       "('%s'; this one is '%s'): give this sweep its own "
                       "name with --job NAME, or use another store",
                       pfi_store_path(sw->st), sw->job_name, had, sw->command);
}

/* ---- the sweep ------------------------------------------------------------*/

static int has_param(const char *params, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = params; p && *p;) {
    if (strncmp(p, key, kl) == 0 && p[kl] == '=')
      return 1;
    p = strchr(p, ',');
    if (p)
      p++;
  }
  return 0;
}

static void add_param(char *buf, size_t n, const char *kv) {
  size_t l = strlen(buf);
  snprintf(buf + l, n - l, "%s%s", l ? "," : "", kv);
}

int pfi_sweep_run(struct pfi_store *st, const struct pfi_sweep_opts *o,
                  struct pfi_sweep_result *res, struct pfi_error *err) {
  struct sweep sw;
  struct pfi_sweep_result local;
  int rc = 0;
  memset(&sw, 0, sizeof sw);
  if (!res)
    res = &local;
  memset(res, 0, sizeof *res);
  sw.st = st;
  sw.o = o;
  sw.res = res;
  snprintf(sw.backend, sizeof sw.backend, "%s",
           o->backend ? o->backend : "emu");
  /* The parameters are recorded in the cap ledger to reopen the backend
   * after a crash: they must fit whole, with room for what is added. */
  if (o->backend_params && strlen(o->backend_params) > 160)
    return pfi_error_set(err, PFI_EINVAL,
                         "backend parameters longer than 160 characters");
  snprintf(sw.params, sizeof sw.params, "%s",
           o->backend_params ? o->backend_params : "");
  int has_cmd = o->argv && o->argv[0];
  if (!has_cmd && !o->emulate)
    return pfi_error_set(err, PFI_EINVAL,
                         "nothing to run: give a command or "
                         "an emulated job");
  if (o->n_caps == 0)
    return pfi_error_set(err, PFI_EINVAL, "no caps to sweep");
  for (size_t i = 0; i < o->n_caps; i++)
    if (!(o->caps_w[i] > 0 && o->caps_w[i] < 1e5))
      return pfi_error_set(err, PFI_EINVAL, "cap %g W is not a valid cap",
                           o->caps_w[i]);
  /* The same bounds as the command line's (0: the default; a negative
   * cooldown: none). */
  if ((o->duration_s != 0 && pfi_duration_check(PFI_DUR_DURATION, o->duration_s,
                                                "duration", err) < 0) ||
      (o->interval_s != 0 && pfi_duration_check(PFI_DUR_INTERVAL, o->interval_s,
                                                "interval", err) < 0) ||
      (o->cooldown_s > 0 && pfi_duration_check(PFI_DUR_COOLDOWN, o->cooldown_s,
                                               "cooldown", err) < 0) ||
      (o->grace_s != 0 &&
       pfi_duration_check(PFI_DUR_GRACE, o->grace_s, "grace", err) < 0))
    return PFI_EINVAL;
  if (o->telemetry && strcmp(o->telemetry, "device") != 0 &&
      (strncmp(o->telemetry, "dcgm-exporter:", 14) != 0 || !o->telemetry[14]))
    return pfi_error_set(err, PFI_EINVAL,
                         "--telemetry '%s': expected device or "
                         "dcgm-exporter:URL",
                         o->telemetry);
  if ((rc = pfi__store_lock(st, err)) < 0)
    return rc;

  if (o->emulate) {
    if (strcmp(sw.backend, "emu") != 0) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "an emulated job runs on the emu backend only");
      goto out;
    }
    if ((rc = pfi_emu_jobs_load(&sw.lib, NULL, err)) < 0)
      goto out;
    sw.ej = pfi_emu_job_find(&sw.lib, o->emulate);
    if (!sw.ej) {
      rc = pfi_error_set(err, PFI_ENOTFOUND,
                         "no job '%s' in the job library (pfi emulate jobs)",
                         o->emulate);
      goto out;
    }
    /* The emulated node gets the job's GPU count unless told otherwise, so
     * that the summed power is the job's aggregate power. */
    if (!has_param(sw.params, "gpus")) {
      char kv[32];
      snprintf(kv, sizeof kv, "gpus=%u", sw.ej->gpus);
      add_param(sw.params, sizeof sw.params, kv);
    }
    if (!has_param(sw.params, "profile")) {
      char kv[32];
      snprintf(kv, sizeof kv, "profile=%s", sw.ej->profile);
      add_param(sw.params, sizeof sw.params, kv);
    }
  }
  if (strcmp(sw.backend, "emu") == 0) {
    if (!has_param(sw.params, "seed")) {
      char kv[48];
      snprintf(kv, sizeof kv, "seed=%llu", (unsigned long long)o->seed);
      add_param(sw.params, sizeof sw.params, kv);
    }
    if (o->real_time && !has_param(sw.params, "realtime"))
      add_param(sw.params, sizeof sw.params, "realtime=1");
    const char *rt = getenv("PFI_EMU_REALTIME");
    sw.virtual_time =
        !(strstr(sw.params, "realtime=1") || (rt && strcmp(rt, "1") == 0));
  }
  if (o->job && *o->job)
    snprintf(sw.job_name, sizeof sw.job_name, "%s", o->job);
  else if (sw.ej)
    snprintf(sw.job_name, sizeof sw.job_name, "%s", sw.ej->id);
  else
    pfi_sweep_job_name(o->argv, sw.job_name, sizeof sw.job_name);
  if (has_cmd) {
    size_t off = 0;
    for (size_t i = 0; o->argv[i] && off + 2 < sizeof sw.command; i++)
      off += (size_t)snprintf(sw.command + off, sizeof sw.command - off, "%s%s",
                              i ? " " : "", o->argv[i]);
  } else {
    snprintf(sw.command, sizeof sw.command, "emulate %s", o->emulate);
  }
  if ((rc = check_job_command(&sw, err)) < 0)
    goto out;
  if (o->throughput && *o->throughput) {
    if (!has_cmd) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "--throughput needs a command to read it from");
      goto out;
    }
    if ((rc = pfi_tput_open(&sw.tp, o->throughput, err)) < 0)
      goto out;
  }
  /* Put back whatever a crashed pfi left capped before touching anything. */
  if ((rc = pfi_sweep_recover(st, err)) < 0)
    goto out;
  if ((rc = pfi_device_open(&sw.dev, sw.backend,
                            sw.params[0] ? sw.params : NULL, err)) < 0)
    goto out;
  unsigned count = 0;
  if ((rc = pfi_device_count(sw.dev, &count, err)) < 0)
    goto out;
  if (o->gpus && o->n_gpus) {
    sw.gpus = malloc(o->n_gpus * sizeof *sw.gpus);
    if (!sw.gpus) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    for (size_t i = 0; i < o->n_gpus; i++) {
      if (o->gpus[i] >= count) {
        rc = pfi_error_set(err, PFI_ERANGE,
                           "GPU %u does not exist (the device has %u)",
                           o->gpus[i], count);
        goto out;
      }
      sw.gpus[i] = o->gpus[i];
    }
    sw.n = o->n_gpus;
  } else {
    sw.gpus = malloc((count ? count : 1) * sizeof *sw.gpus);
    if (!sw.gpus) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    for (unsigned i = 0; i < count; i++)
      sw.gpus[i] = i;
    sw.n = count;
  }
  if (sw.n == 0) {
    rc = pfi_error_set(err, PFI_ENOTFOUND, "no GPU to sweep");
    goto out;
  }
  /* Data is emulated on the emu backend and on any backend whose GPUs say
   * so in their name (the fault wrapper, the test NVML library). */
  sw.emulated = strcmp(sw.backend, "emu") == 0;
  for (size_t i = 0; i < sw.n && !sw.emulated; i++) {
    char name[128];
    struct pfi_error e;
    if (pfi_device_name(sw.dev, sw.gpus[i], name, sizeof name, &e) == 0 &&
        strstr(name, "(emulated)"))
      sw.emulated = 1;
  }
  /* The emu backend's GPUs are seen by no CUDA program: a job there keeps
   * the CUDA environment it was given. */
  sw.cuda_env = has_cmd && strcmp(sw.backend, "emu") != 0;
  if (sw.cuda_env && (rc = check_cuda_env(&sw, err)) < 0)
    goto out;
  if ((rc = lock_gpus(&sw, err)) < 0)
    goto out;
  /* Node power: the emulator's node on emulated GPUs; on measured ones
   * the BMC's reading when --bmc names a reader, else the RAPL zones of
   * this machine, when it has readable ones. */
  if (sw.emulated) {
    snprintf(res->node_power, sizeof res->node_power, "%s",
             PFI_NODE_SOURCE_EMULATED);
  } else if (o->bmc && strcmp(o->bmc, "none") != 0) {
    /* The whole node from the BMC; one reading now, before any cap
     * changes, so that a BMC that cannot be read stops the sweep here. */
    sw.bmc = calloc(1, sizeof *sw.bmc);
    if (!sw.bmc) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      goto out;
    }
    double w;
    struct pfi_error e;
    pfi_error_clear(&e);
    if ((rc = pfi_bmc_open(o->bmc, sw.bmc, err)) < 0)
      goto out;
    /* Each reading within the sampling interval (1 to 10 s). */
    double iv = o->interval_s > 0 ? o->interval_s : 5;
    sw.bmc->timeout_s = iv < 1                   ? 1
                        : iv > PFI_BMC_TIMEOUT_S ? PFI_BMC_TIMEOUT_S
                                                 : iv;
    if (pfi_bmc_read(sw.bmc, &w, &e) < 0) {
      rc = pfi_error_set(err, PFI_EIO, "--bmc %s: the first reading failed: %s",
                         o->bmc, e.msg);
      goto out;
    }
    snprintf(res->node_power, sizeof res->node_power, "%s",
             PFI_NODE_SOURCE_DCMI);
  } else if (!o->powercap || strcmp(o->powercap, "none") != 0) {
    sw.rapl = calloc(1, sizeof *sw.rapl);
    sw.rapl_uj = calloc(PFI_RAPL_MAX, sizeof *sw.rapl_uj);
    struct pfi_error e;
    /* Zones, among them a package (the power of no interval is then 0,
     * not NAN). */
    if (sw.rapl && sw.rapl_uj && pfi_rapl_open(o->powercap, sw.rapl, &e) > 0 &&
        pfi_rapl_power_w(sw.rapl, sw.rapl_uj, sw.rapl_uj, 1) == 0) {
      res->rapl_zones = sw.rapl->n;
      snprintf(res->node_power, sizeof res->node_power, "%s",
               PFI_NODE_SOURCE_RAPL);
    } else {
      if (sw.rapl)
        res->rapl_zones = sw.rapl->n;
      free(sw.rapl);
      free(sw.rapl_uj);
      sw.rapl = NULL;
      sw.rapl_uj = NULL;
    }
  }
  sw.samples = calloc(sw.n, sizeof *sw.samples);
  if (!sw.samples) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  {
    char seed[32], had[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    /* One campaign, one seed: runs of another seed in the same store
     * would break "same seed, same bytes" of its summaries. */
    int g = pfi_store_meta_get(st, "seed", had, sizeof had, err);
    if (g < 0) {
      rc = g;
      goto out;
    }
    if (g == 1 && strcmp(had, seed) != 0) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "%s holds a campaign with seed %s: resume it with "
                         "--seed %s, or use another store for seed %s",
                         pfi_store_path(st), had, had, seed);
      goto out;
    }
    if ((rc = pfi_store_meta_set(st, "seed", seed, err)) < 0 ||
        (rc = pfi_store_meta_set(st, "backend", sw.backend, err)) < 0 ||
        (rc = pfi_store_meta_set(
             st, "source",
             sw.emulated ? PFI_SOURCE_EMULATED : PFI_SOURCE_MEASURED, err)) <
            0 ||
        (rc = pfi_store_meta_set(st, "pfi_version_last", PFI_VERSION_STRING,
                                 err)) < 0)
      goto out;
    const struct pfi_emu_profile *prof =
        sw.ej ? pfi_emu_profile_find(sw.ej->profile) : NULL;
    if (prof) {
      char clk[32];
      snprintf(clk, sizeof clk, "%g", prof->sm_clock_max_mhz);
      if ((rc = pfi_store_meta_set(st, "sm_clock_max_mhz", clk, err)) < 0)
        goto out;
    }
  }
  for (size_t ci = 0; ci < o->n_caps; ci++) {
    if (stopped(o)) {
      rc = pfi_error_set(err, PFI_EINTR, "interrupted");
      goto out;
    }
    int64_t done_id;
    int f = pfi_store_run_find_complete(st, sw.job_name, o->caps_w[ci],
                                        &done_id, err);
    if (f < 0) {
      rc = f;
      goto out;
    }
    if (f) {
      res->runs_skipped++;
      progress(&sw, "skip", ci, o->caps_w[ci], 0, NAN, NAN);
      continue;
    }
    if ((rc = one_run(&sw, ci, res, err)) < 0)
      goto out;
    res->runs_done++;
    if (ci + 1 < o->n_caps && (rc = cooldown(&sw, err)) < 0)
      goto out;
  }
out:
  if (rc == PFI_EINTR)
    pfi_error_set(err, PFI_EINTR, "interrupted; caps restored");
  pfi_capset_close(sw.cs);
  pfi_device_close(sw.dev);
  pfi_tput_close(sw.tp);
  pfi_emu_jobs_release(&sw.lib);
  free(sw.gpus);
  free(sw.samples);
  free(sw.rapl);
  free(sw.rapl_uj);
  free(sw.bmc);
  pfi__store_unlock(st);
  return rc;
}
