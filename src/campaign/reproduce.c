/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The emulated campaign, end to end (reproduce.h). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfi/campaign.h"
#include "pfi/emu.h"
#include "pfi/report.h"
#include "pfi/reproduce.h"
#include "pfi/store.h"
#include "pfi/sweep.h"
#include "pfi/trace.h"

void pfi_reproduce_opts_init(struct pfi_reproduce_opts *o) {
  memset(o, 0, sizeof *o);
  o->out_dir = "out";
  o->seed = PFI_EMU_DEFAULT_SEED;
  o->duration_s = 1800;
  o->interval_s = 5;
  pfi_report_opts_init(&o->report);
}

struct ctx {
  const struct pfi_reproduce_opts *o;
  size_t job_i, njobs;
};

static void say(const struct pfi_reproduce_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct pfi_reproduce_opts *o, const char *fmt, ...) {
  if (!o->progress)
    return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  o->progress(buf, o->progress_arg);
}

/* One line per finished group: enough to follow a campaign of ~190 runs
 * without flooding the terminal with every run or sample. */
static void sweep_progress(const struct pfi_sweep_progress *p, void *arg) {
  struct ctx *c = arg;
  if (strcmp(p->event, "end") != 0 && strcmp(p->event, "skip") != 0)
    return;
  if (p->cap_index + 1 != p->n_caps)
    return;
  say(c->o, "campaign: group %zu of %zu done: %s (%zu caps)", c->job_i + 1,
      c->njobs, p->job, p->n_caps);
}

/* Removes a file, ignoring "does not exist". */
static int remove_file(const char *path, struct pfi_error *err) {
  if (unlink(path) == 0 || errno == ENOENT)
    return 0;
  return pfi_error_set(err, PFI_EIO, "%s: cannot remove: %s", path,
                       strerror(errno));
}

/* Removes the emulator's private state directory (flat: cap files and
 * their locks). */
static void remove_state_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

int pfi_reproduce_run(const struct pfi_reproduce_opts *o,
                      struct pfi_error *err) {
  struct pfi_emu_jobs jobs;
  memset(&jobs, 0, sizeof jobs);
  struct pfi_store *st = NULL;
  char path[4096], state[4096] = "";
  int rc;
  const char *out = o->out_dir ? o->out_dir : "out";
  struct ctx c = {.o = o};

  if ((rc = pfi_report_mkdirs(out, err)) != 0)
    return rc;
  if ((rc = pfi_emu_jobs_load(&jobs, o->jobs_path, err)) != 0)
    return rc;
  c.njobs = jobs.n;
  /* A fresh store every time: resuming an earlier campaign with other
   * options would mix runs. */
  static const char *const suffix[] = {"", "-wal", "-shm"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/campaign.db%s", out, suffix[i]);
    if ((rc = remove_file(path, err)) != 0)
      goto out;
  }
  snprintf(path, sizeof path, "%s/campaign.db", out);
  if ((rc = pfi_store_open(&st, path, PFI_STORE_CREATE, err)) != 0)
    goto out;
  char seedbuf[32];
  snprintf(seedbuf, sizeof seedbuf, "%lu", o->seed);
  if ((rc = pfi_store_meta_set(st, "seed", seedbuf, err)) != 0 ||
      (rc = pfi_store_meta_set(st, "source", "emulated", err)) != 0 ||
      (rc = pfi_store_meta_set(st, "campaign", "pfi reproduce", err)) != 0)
    goto out;
  /* The emulated GPUs keep their caps in a state directory of their own,
   * so a campaign never touches another session's emulated devices. It is
   * thrown away at the end, so a memory file system is preferred: the
   * emulator writes its cap file durably (fsync) at every cap change, a
   * cost that buys nothing for a throwaway directory. */
  const char *tmp = getenv("TMPDIR");
  struct stat sb;
  if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) &&
      access("/dev/shm", W_OK) == 0)
    tmp = "/dev/shm";
  snprintf(state, sizeof state, "%s/pfi-reproduce-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(state)) {
    rc = pfi_error_set(err, PFI_EIO, "%s: %s", state, strerror(errno));
    state[0] = '\0';
    goto out;
  }
  size_t runs = 0;
  for (size_t i = 0; i < jobs.n; i++)
    runs += jobs.job[i].n_caps;
  say(o,
      "campaign: %zu groups, %zu runs on the emulator (virtual time), "
      "seed %lu",
      jobs.n, runs, o->seed);
  for (size_t i = 0; i < jobs.n; i++) {
    const struct pfi_emu_job *j = &jobs.job[i];
    char params[4600];
    snprintf(params, sizeof params, "profile=%s,gpus=%u,seed=%lu,state=%s",
             j->profile, j->gpus, o->seed, state);
    struct pfi_sweep_opts so;
    memset(&so, 0, sizeof so);
    so.backend = "emu";
    so.backend_params = params;
    so.caps_w = j->caps;
    so.n_caps = j->n_caps;
    so.duration_s = o->duration_s > 0 ? o->duration_s : 1800;
    so.interval_s = o->interval_s > 0 ? o->interval_s : 5;
    so.emulate = j->id;
    so.job = j->id;
    so.seed = o->seed;
    so.has_seed = 1;
    so.stop = o->stop;
    so.progress = sweep_progress;
    so.progress_arg = &c;
    c.job_i = i;
    struct pfi_sweep_result res;
    memset(&res, 0, sizeof res);
    if ((rc = pfi_sweep_run(st, &so, &res, err)) != 0)
      goto out;
    if (res.runs_failed) {
      rc = pfi_error_set(err, PFI_ECHILD, "%s: %zu emulated runs failed", j->id,
                         res.runs_failed);
      goto out;
    }
  }
  struct pfi_report_opts ro = o->report;
  ro.seed = o->seed;
  ro.progress = o->progress;
  ro.progress_arg = o->progress_arg;
  char what[1024], dur[64];
  double dur_s = o->duration_s > 0 ? o->duration_s : 1800;
  /* Whole minutes read as minutes; anything else (a 90 s test run) in
   * seconds, so that the first screen never rounds a run to "0-minute". */
  if (fmod(dur_s, 60.0) == 0.0)
    snprintf(dur, sizeof dur, "%g-minute", dur_s / 60.0);
  else
    snprintf(dur, sizeof dur, "%g-second", dur_s);
  size_t n100 = 0;
  for (size_t i = 0; i < jobs.n; i++)
    n100 += strcmp(jobs.job[i].profile, "h100") == 0;
  snprintf(what, sizeof what,
           "pfi reproduce swept all %zu groups of the job library (%zu on "
           "an emulated H200, %zu on an emulated H100) through the sweep "
           "harness on the emu backend in virtual time: each group on its "
           "published cap grid (fine: 200 to 700 W in 100 W steps; coarse: "
           "200, 500, 600, 700 W), %s runs sampled every %g s, "
           "%zu runs in all, seed %lu, into one trace store (campaign.db), "
           "then summarized (top 10 %% of training-phase samples) and "
           "analysed as below.",
           jobs.n, jobs.n - n100, n100, dur,
           o->interval_s > 0 ? o->interval_s : 5, runs, o->seed);
  ro.what_ran = what;
  say(o, "campaign: summarizing the trace store into %s", out);
  enum pfi_campaign_stage stage;
  if ((rc = pfi_campaign_report(st, out, &ro, &stage, err)) < 0) {
    /* Short runs end before the emulated jobs leave their warm-up, so no
     * run has a training phase to summarize; name the option that did it
     * (the summary names the duration that works). */
    double d = o->duration_s > 0 ? o->duration_s : 1800;
    if (stage == PFI_STAGE_SUMMARIZE && rc != PFI_ENOMEM && rc != PFI_EIO &&
        d < pfi_emu_min_run_s()) {
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      rc = pfi_error_set(err, rc,
                         "%s; --duration %gs is shorter than the emulated "
                         "jobs' warm-up",
                         msg, d);
    }
    goto out;
  }
out:
  pfi_store_close(st);
  if (state[0])
    remove_state_dir(state);
  pfi_emu_jobs_release(&jobs);
  return rc < 0 ? rc : 0;
}
