/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The sweep's job: starting the command with its environment, reaping and
 * stopping it, collecting its throughput reports (src/sweep/sweep.c runs
 * the sweep around it). */
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
#include "pfi/prom.h"
#include "pfi/throughput.h"
#include "pfi/version.h"
#include "sweep_int.h"

extern char **environ;

/* ---- the job ------------------------------------------------------------- */

static void append_env(char ***envp, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append_env(char ***envp, size_t *n, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  va_end(ap);
  if (s)
    (*envp)[(*n)++] = s;
}

/* Starts the command: fork/exec without a shell, in its own process group,
 * with the run's parameters in its environment. A CLOEXEC pipe carries an
 * exec failure's errno back, so "command not found" is an error here and
 * not a mysterious exit status 127 later. */
int pfi__sweep_start_command(struct sweep *sw, struct job *jb, double cap_w,
                             int64_t run_id, struct pfi_error *err) {
  const struct pfi_sweep_opts *o = sw->o;
  int errpipe[2] = {-1, -1}, outpipe[2] = {-1, -1};
  char **envp = NULL;
  size_t nenv = 0, base = 0;
  int rc = 0;
  while (environ && environ[base])
    base++;
  envp = calloc(base + 16, sizeof *envp);
  if (!envp)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  /* Our variables first: the child's getenv() finds the first match. */
  append_env(&envp, &nenv, "PFI_CAP_W=%g", cap_w);
  append_env(&envp, &nenv, "PFI_RUN_ID=%lld", (long long)run_id);
  append_env(&envp, &nenv, "PFI_JOB=%s", sw->job_name);
  append_env(&envp, &nenv, "PFI_DURATION_S=%g",
             o->duration_s > 0 ? o->duration_s : 1800);
  append_env(&envp, &nenv, "PFI_SEED=%llu", (unsigned long long)o->seed);
  append_env(&envp, &nenv, "PFI_SWEEP_DB=%s", pfi_store_path(sw->st));
  if (o->emulate)
    append_env(&envp, &nenv, "PFI_EMULATE=%s", o->emulate);
  if (sw->tp && pfi_tput_path(sw->tp))
    append_env(&envp, &nenv, "PFI_THROUGHPUT_JSONL=%s", pfi_tput_path(sw->tp));
  {
    char list[1024] = "";
    size_t off = 0;
    for (size_t i = 0; i < sw->n && off + 12 < sizeof list; i++)
      off += (size_t)snprintf(list + off, sizeof list - off, "%s%u",
                              i ? "," : "", sw->gpus[i]);
    append_env(&envp, &nenv, "PFI_GPUS=%s", list);
    /* The job's CUDA sees the swept GPUs, numbered as NVML numbers them
     * (pfi_sweep_run refused an environment that chose others). */
    if (sw->cuda_env) {
      append_env(&envp, &nenv, "CUDA_VISIBLE_DEVICES=%s", list);
      append_env(&envp, &nenv, "CUDA_DEVICE_ORDER=PCI_BUS_ID");
    }
  }
  size_t ours = nenv;
  /* The inherited environment, less the variables set above. */
  for (size_t i = 0; i < base; i++) {
    int dup = 0;
    for (size_t k = 0; k < ours && !dup; k++) {
      size_t kl = (size_t)(strchr(envp[k], '=') - envp[k]) + 1;
      dup = strncmp(environ[i], envp[k], kl) == 0;
    }
    if (!dup)
      envp[nenv++] = environ[i];
  }
  envp[nenv] = NULL;

  if (pipe2(errpipe, O_CLOEXEC) != 0 ||
      (sw->tp && pfi_tput_kind(sw->tp) == PFI_TPUT_REGEX &&
       pipe2(outpipe, O_CLOEXEC) != 0)) {
    rc = pfi_error_set(err, PFI_EIO, "pipe: %s", strerror(errno));
    goto out;
  }
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    rc = pfi_error_set(err, PFI_ECHILD, "fork: %s", strerror(errno));
    goto out;
  }
  if (pid == 0) {
    setpgid(0, 0);
#ifdef __linux__
    /* If pfi dies the job is told to stop too: it must not run on under a
     * cap that the next pfi is about to restore. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    /* pfi may have died between fork and prctl: then nobody would stop
     * the job (nor restore its caps before the next pfi does). */
    if (getppid() != parent)
      _exit(127);
#endif
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    if (outpipe[1] >= 0)
      dup2(outpipe[1], STDOUT_FILENO);
    execvpe(o->argv[0], o->argv, envp);
    int e = errno;
    if (write(errpipe[1], &e, sizeof e) < 0) {
    }
    _exit(127);
  }
  setpgid(pid, pid); /* also here, so the group exists before we signal it */
  close(errpipe[1]);
  errpipe[1] = -1;
  if (outpipe[1] >= 0) {
    close(outpipe[1]);
    outpipe[1] = -1;
  }
  int e = 0;
  ssize_t r;
  do
    r = read(errpipe[0], &e, sizeof e);
  while (r < 0 && errno == EINTR);
  if (r == (ssize_t)sizeof e) {
    waitpid(pid, NULL, 0);
    rc = pfi_error_set(err, PFI_ECHILD, "cannot run '%s': %s", o->argv[0],
                       strerror(e));
    goto out;
  }
  jb->pid = pid;
  jb->out_fd = outpipe[0];
  outpipe[0] = -1;
  if (jb->out_fd >= 0)
    fcntl(jb->out_fd, F_SETFL, fcntl(jb->out_fd, F_GETFL) | O_NONBLOCK);
out:
  for (int i = 0; i < 2; i++) {
    if (errpipe[i] >= 0)
      close(errpipe[i]);
    if (outpipe[i] >= 0)
      close(outpipe[i]);
  }
  for (size_t i = 0; i < ours; i++)
    free(envp[i]);
  free(envp);
  return rc;
}

int pfi__sweep_reap(struct job *jb, int block) {
  if (jb->pid <= 0 || jb->exited)
    return jb->exited;
  int status;
  pid_t r;
  do
    r = waitpid(jb->pid, &status, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == jb->pid) {
    jb->exited = 1;
    jb->status = status;
  } else if (r < 0) {
    jb->exited = 1;
    jb->status = 0;
  }
  return jb->exited;
}

/* Real-time pause for child bookkeeping (never for the device clock). */
void pfi__sweep_pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Ends the command: SIGTERM to its process group, SIGKILL after the
 * grace period (real seconds: the job is a real process). */
void pfi__sweep_stop_command(struct job *jb, double grace_s) {
  if (jb->pid <= 0 || pfi__sweep_reap(jb, 0))
    return;
  kill(-jb->pid, SIGTERM);
  long waited = 0, limit = (long)(grace_s * 1000);
  while (!pfi__sweep_reap(jb, 0) && waited < limit) {
    pfi__sweep_pause_ms(10);
    waited += 10;
  }
  if (!jb->exited) {
    kill(-jb->pid, SIGKILL);
    /* Bounded: a process stuck in the GPU driver (uninterruptible sleep
     * after a GPU fault) outlives SIGKILL, and waiting for it without end
     * would keep the GPUs capped. The caps are restored without it; it is
     * left to init once pfi exits. */
    waited = 0;
    while (!pfi__sweep_reap(jb, 0) && waited < KILL_WAIT_MS) {
      pfi__sweep_pause_ms(10);
      waited += 10;
    }
    if (!jb->exited) {
      jb->exited = 1;
      jb->status = SIGKILL; /* as waitpid reports a SIGKILLed process */
    }
  }
}

/* Marks in the store a run some of whose throughput reports were lost
 * (malformed, over-long or unmatched lines) or whose cumulative counter
 * reset: meta keys run.ID.tput_lost and run.ID.tput_resets, each "N: the
 * first, located". `pfi trace summarize` counts them. */
void pfi__sweep_mark_lost(struct sweep *sw, int64_t run_id, long bad,
                          const struct pfi_error *first, long resets,
                          const struct pfi_error *first_reset,
                          struct pfi_sweep_result *res) {
  char key[64], val[PFI_ERROR_MSG_MAX + 400], loc[PFI_ERROR_MSG_MAX + 300];
  struct pfi_error e;
  if (bad) {
    snprintf(key, sizeof key, "run.%lld.tput_lost", (long long)run_id);
    snprintf(val, sizeof val, "%ld: %s", bad,
             pfi_error_format(first, loc, sizeof loc));
    pfi_store_meta_set(sw->st, key, val, &e);
    res->runs_tput_lost++;
  }
  if (resets) {
    snprintf(key, sizeof key, "run.%lld.tput_resets", (long long)run_id);
    snprintf(val, sizeof val, "%ld: %s", resets,
             pfi_error_format(first_reset, loc, sizeof loc));
    pfi_store_meta_set(sw->st, key, val, &e);
  }
}

/* Collects the job's throughput reports and stores them. */
int pfi__sweep_collect(struct sweep *sw, struct job *jb, int64_t run_id,
                       double now, int final, struct pfi_error *err) {
  int rc = 0;
  if (jb->attached) {
    double rate = NAN;
    if ((rc = pfi_emu_progress(sw->dev, NULL, &rate, NULL, err)) < 0)
      return rc;
    if (!sw->tp) {
      struct pfi_step s = {.t_s = now,
                           .job_t_s = NAN,
                           .tokens = NAN,
                           .tokens_per_s = rate,
                           .step = NAN,
                           .loss = NAN,
                           .mfu = NAN};
      jb->last_rate = rate;
      jb->last_job_t = now;
      return pfi_store_add_step(sw->st, run_id, &s, err);
    }
  }
  if (!sw->tp)
    return 0;
  if ((rc = pfi_tput_poll(sw->tp, now, final, err)) < 0)
    return rc;
  const struct pfi_step *steps;
  size_t n = pfi_tput_take(sw->tp, &steps);
  for (size_t i = 0; i < n; i++) {
    if ((rc = pfi_store_add_step(sw->st, run_id, &steps[i], err)) < 0)
      return rc;
    if (steps[i].t_s > jb->last_job_t || !isfinite(jb->last_job_t))
      jb->last_job_t = steps[i].t_s;
    if (!(steps[i].t_s >= jb->first_report_t))
      jb->first_report_t = steps[i].t_s;
    jb->reports++;
  }
  if (jb->attach_pending && n && isnan(jb->attach_at))
    jb->attach_at = jb->first_report_t;
  double r = pfi_tput_last_rate(sw->tp);
  if (isfinite(r))
    jb->last_rate = r;
  return 0;
}
