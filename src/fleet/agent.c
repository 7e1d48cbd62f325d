/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The node agent's core: assignments, leases, hold and restore, drift. */
#include "pfi/agent.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../sweep/ledger.h"
#include "pfi/capset.h"
#include "pfi/device.h"
#include "pfi/emu.h"
#include "pfi/gpulock.h"
#include "pfi/store.h"
#include "pfi/throughput.h"

struct pfi_agent {
  char node[PFI_FLEET_NAME_MAX];
  char backend[32];
  char params[256];
  char jobmap[512], tput[512], tiers[512];
  double tput_max_age; /* a tput file's line older than this is stale, s */
  struct pfi_device *dev;
  struct pfi_store *st;
  struct pfi_emu_jobs jobs;
  int emu_job; /* a job is attached to the emulated GPUs */
  unsigned n;
  char uuid[PFI_FLEET_MAX_GPUS][96];
  struct pfi_power_limits lim[PFI_FLEET_MAX_GPUS];
  struct pfi_capset *cs; /* locks, originals, restore (pfi/capset.h) */
  /* The state, mirrored in the record's meta table (fleet.*). */
  enum pfi_agent_mode mode;
  uint64_t seq;
  char event[PFI_FLEET_NAME_MAX];
  double event_end_s;
  /* The event's end on the monotonic clock, which the hold runs on:
   * event_end_s converted once, when the end arrives (an assignment that
   * brings another end, or the record at the first tick), never again, so
   * that a step of the wall clock moves no hold. NaN: not converted yet. */
  double event_end_mono;
  /* The wall clock less the monotonic one at the newest call (NaN before
   * the first): a change larger than PFI_AGENT_CLOCK_STEP_S is a step. */
  double clock_off;
  uint32_t assigned[PFI_FLEET_MAX_GPUS];
  int ledger;         /* the ledger holds this node's originals */
  /* The record could not be written (a full or read-only disk): the state
   * is in memory only (the originals in the capset, the assignment here),
   * cuts still applied, and every tick tries to write it again. */
  int unrecorded;
  struct pfi_error record_err; /* why, the newest failure */
  double lease_until; /* monotonic clock */
  struct pfi_agent_stats stats;
  /* What the job is told (pfi_agent_cap_json): why the caps are what they
   * are, and since when (Unix time). */
  char reason[PFI_FLEET_NAME_MAX];
  double since_s, now_s; /* now_s: the newest time the caller passed */
  /* Throughput posted by the jobs (pfi_agent_post_throughput), under
   * post_mu: the endpoint's thread writes, the tick reads. */
  pthread_mutex_t post_mu;
  struct posted {
    char id[PFI_FLEET_NAME_MAX];
    double mono_s;       /* when the newest report arrived */
    double rate;         /* its rate, < 0 none */
    double tokens, t_s;  /* its cumulative tokens and time, NaN none */
    int phase;           /* its phase, -1 none */
    double pause_at;     /* its announced next pause, monotonic (NaN none) */
    double pause_len;    /* and its length, s (NaN unknown) */
    double end_at;       /* its announced end, monotonic (NaN none) */
  } post[PFI_FLEET_MAX_JOBS];
  unsigned n_post;
  /* Each job's posts, a token bucket of post_burst refilled at post_rate a
   * second (under post_mu; pfi_agent_opts); the stalest job's is reused
   * when the table is full. */
  double post_rate, post_burst;
  struct post_rate {
    char id[PFI_FLEET_NAME_MAX];
    double tokens, mono_s;
  } post_rl[PFI_FLEET_MAX_JOBS];
  unsigned n_post_rl;
  char gpu_job[PFI_FLEET_MAX_GPUS][PFI_FLEET_NAME_MAX]; /* newest tick's */
  long gpu_uid[PFI_FLEET_MAX_GPUS]; /* who owns that job on the GPU: its
                                       mapping file's owner, or its compute
                                       process's user; -1 none known */
};

/* ---- the record ------------------------------------------------------------
 * fleet.seq, fleet.event, fleet.event_end, fleet.caps ("mW,mW,..." or ""). */

static int save_state(struct pfi_agent *ag, struct pfi_error *err) {
  char seq[32], end[40], caps[PFI_FLEET_MAX_GPUS * 11 + 1] = "";
  snprintf(seq, sizeof seq, "%llu", (unsigned long long)ag->seq);
  snprintf(end, sizeof end, "%.3f", ag->event_end_s);
  size_t k = 0;
  if (ag->mode != PFI_AGENT_IDLE)
    for (unsigned i = 0; i < ag->n; i++)
      k += (size_t)snprintf(caps + k, sizeof caps - k, "%s%u", i ? "," : "",
                            ag->assigned[i]);
  struct pfi_error e;
  if (!err)
    err = &e;
  int rc = pfi_store_begin(ag->st, err);
  if (rc == 0 &&
      (rc = pfi_store_meta_set(ag->st, "fleet.seq", seq, err)) == 0 &&
      (rc = pfi_store_meta_set(ag->st, "fleet.event", ag->event, err)) == 0 &&
      (rc = pfi_store_meta_set(ag->st, "fleet.event_end", end, err)) == 0 &&
      (rc = pfi_store_meta_set(ag->st, "fleet.caps", caps, err)) == 0)
    rc = pfi_store_commit(ag->st, err);
  if (rc < 0) {
    pfi_store_rollback(ag->st);
    ag->unrecorded = 1;
    ag->record_err = *err;
  }
  return rc;
}

/* Reads the record; *caps_ok when it holds one cap per GPU. */
static int load_state(struct pfi_agent *ag, int *caps_ok,
                      struct pfi_error *err) {
  char buf[PFI_FLEET_MAX_GPUS * 11 + 1];
  int rc;
  *caps_ok = 0;
  if ((rc = pfi_store_meta_get(ag->st, "fleet.seq", buf, sizeof buf, err)) < 0)
    return rc;
  if (rc == 1)
    ag->seq = strtoull(buf, NULL, 10);
  if ((rc = pfi_store_meta_get(ag->st, "fleet.event", ag->event,
                               sizeof ag->event, err)) < 0)
    return rc;
  if (rc == 0 || !pfi_fleet_name_ok(ag->event))
    ag->event[0] = 0;
  if ((rc = pfi_store_meta_get(ag->st, "fleet.event_end", buf, sizeof buf,
                               err)) < 0)
    return rc;
  ag->event_end_s = rc == 1 ? strtod(buf, NULL) : 0;
  if (!isfinite(ag->event_end_s) || !ag->event[0])
    ag->event_end_s = 0;
  if ((rc = pfi_store_meta_get(ag->st, "fleet.caps", buf, sizeof buf, err)) < 0)
    return rc;
  if (rc == 1 && buf[0]) {
    unsigned i = 0;
    char *p = buf, *end;
    while (i < ag->n && *p) {
      unsigned long v = strtoul(p, &end, 10);
      if (end == p || v == 0 || v < ag->lim[i].min_mw || v > ag->lim[i].max_mw)
        break;
      ag->assigned[i++] = (uint32_t)v;
      p = *end == ',' ? end + 1 : end;
      if (*end != ',' && *end)
        break;
    }
    *caps_ok = i == ag->n && !*p;
  }
  return 0;
}

static double dev_now(struct pfi_agent *ag) {
  double t = 0;
  pfi_device_now(ag->dev, &t, NULL);
  return t;
}

/* Every GPU's limit before the first change is known (recorded, or in
 * memory when the record could not be written). */
static int all_originals(const struct pfi_agent *ag) {
  uint32_t mw;
  for (unsigned i = 0; i < ag->n; i++)
    if (!pfi_capset_original(ag->cs, i, &mw))
      return 0;
  return ag->n > 0;
}

/* No cap above the GPU's limit before the first change (in memory): what
 * the agent may apply without a record, since a restore gives back at
 * least that much whatever happens to the record (a cut is always safe). */
static int within_originals(const struct pfi_agent *ag, const uint32_t *caps) {
  uint32_t mw;
  for (unsigned i = 0; i < ag->n; i++)
    if (!pfi_capset_original(ag->cs, i, &mw) || caps[i] > mw)
      return 0;
  return 1;
}

/* Records every GPU's present limit as its original (machine record and
 * ledger; an older record wins). */
static int record_originals(struct pfi_agent *ag, struct pfi_error *err) {
  if (ag->ledger)
    return 0;
  struct pfi_error e;
  if (!err)
    err = &e;
  int rc = pfi_capset_record(ag->cs, err);
  if (rc == 0)
    ag->ledger = 1;
  else if (all_originals(ag)) {
    ag->unrecorded = 1; /* known, in memory: the next ticks write them */
    ag->record_err = *err;
  }
  return rc;
}

static void set_reason(struct pfi_agent *ag, const char *why) {
  if (strcmp(ag->reason, why) != 0) {
    snprintf(ag->reason, sizeof ag->reason, "%s", why);
    ag->since_s = ag->now_s;
  }
}

int pfi_agent_restore(struct pfi_agent *ag, struct pfi_error *err) {
  int rc = 0;
  if (ag->ledger || ag->mode != PFI_AGENT_IDLE)
    set_reason(ag, "restore");
  else if (!ag->reason[0])
    set_reason(ag, "none");
  uint32_t mw;
  int kept = 0; /* originals known in memory only (not recorded) */
  for (unsigned i = 0; i < ag->n && !ag->ledger; i++)
    kept |= pfi_capset_original(ag->cs, i, &mw);
  if (ag->ledger || kept) {
    rc = pfi_capset_restore(ag->cs, NULL, NULL, err);
    /* Every GPU back at its original (read back) and only the record of it
     * failed (a full disk): restored, the record written by a later tick. */
    int back = 1;
    for (unsigned i = 0; i < ag->n; i++)
      back &= !pfi_capset_original(ag->cs, i, &mw);
    if (rc < 0 && back && ag->n > 0) {
      ag->unrecorded = 1;
      if (err)
        ag->record_err = *err;
      rc = 0;
    }
    /* Rows the ledger holds that the machine's records lost (they are
     * cleared by a restore, so only a damaged record leaves these). */
    struct pfi_saved_cap *rows = NULL;
    size_t nr = 0;
    if (rc >= 0 && pfi_store_caps_pending(ag->st, &rows, &nr, err) == 0)
      for (size_t i = 0; i < nr && rc >= 0; i++) {
        int restored = 0;
        if (strcmp(rows[i].backend, ag->backend) != 0 || rows[i].gpu >= ag->n)
          continue;
        int r = pfi__restore_gpu(ag->st, ag->dev, ag->backend, rows[i].gpu,
                                 rows[i].uuid, rows[i].cap_mw, &restored, err);
        rc = r < 0 ? r : rc + restored;
      }
    free(rows);
    if (rc < 0)
      return rc; /* GPUs that failed stay recorded: the next tick retries */
    ag->ledger = 0;
    ag->stats.restores++;
  }
  ag->mode = PFI_AGENT_IDLE;
  ag->event[0] = 0;
  ag->event_end_s = 0;
  ag->event_end_mono = NAN;
  memset(ag->assigned, 0, sizeof ag->assigned);
  /* The GPUs are back: a state that cannot be written (a full disk) is
   * kept in memory, reported (ag->unrecorded) and written by a later
   * tick; an agent started on a full disk runs. */
  save_state(ag, NULL);
  return rc;
}

/* Sets caps[0..n) all-or-none; on failure every GPU changed goes back to
 * the limit it had just before: the previous assignment during an event.
 * (pfi_capset_apply puts GPUs back to their originals instead, which
 * would raise caps during an event, so the agent applies itself, under
 * the capset's locks and after its record.) */
static int apply_caps(struct pfi_agent *ag, const uint32_t *caps,
                      const uint32_t *was, struct pfi_error *err) {
  uint32_t prev[PFI_FLEET_MAX_GPUS];
  unsigned done = 0;
  int rc = 0;
  for (unsigned i = 0; i < ag->n && rc == 0; i++)
    rc = pfi_device_get_cap(ag->dev, i, &prev[i], err);
  if (rc < 0)
    return rc;
  double t = dev_now(ag);
  for (; done < ag->n; done++) {
    unsigned i = done;
    uint32_t got = 0;
    if (prev[i] != caps[i] &&
        (rc = pfi_device_set_cap(ag->dev, i, caps[i], err)) < 0)
      break;
    if ((rc = pfi_device_get_cap(ag->dev, i, &got, err)) < 0)
      break;
    if (got != caps[i]) {
      rc = pfi_error_set(err, PFI_EMISMATCH,
                         "GPU %u: set %u mW but the limit reads %u mW", i,
                         caps[i], got);
      break;
    }
  }
  if (rc < 0) {
    for (unsigned i = 0; i <= done && i < ag->n; i++)
      pfi_device_set_cap(ag->dev, i, prev[i], NULL);
    return rc;
  }
  /* A limit that differed from an unchanged assignment had drifted: the
   * new assignment re-applies it, and it is recorded as that. The node's
   * changes in one transaction (one commit rather than one per GPU). */
  int tx = pfi_store_begin(ag->st, NULL) == 0;
  for (unsigned i = 0; i < ag->n; i++) {
    int drift = was && was[i] == caps[i];
    if (prev[i] != caps[i])
      pfi_store_cap_event(ag->st, 0, i, drift ? "reapply" : "set", caps[i], t,
                          NULL);
    ag->stats.reapplied += prev[i] != caps[i] && drift;
  }
  if (tx && pfi_store_commit(ag->st, NULL) < 0)
    pfi_store_rollback(ag->st);
  return 0;
}

/* The wall clock at the edges: a step (the wall clock less the monotonic
 * one changed by more than PFI_AGENT_CLOCK_STEP_S since the previous call)
 * is counted for the log; the end of a held event is converted to the
 * monotonic clock once (from the record, at the first call after open). */
static void see_clock(struct pfi_agent *ag, double now_s, double mono_s) {
  double off = now_s - mono_s;
  if (isfinite(ag->clock_off) &&
      fabs(off - ag->clock_off) > PFI_AGENT_CLOCK_STEP_S) {
    ag->stats.clock_steps++;
    ag->stats.clock_step_s = off - ag->clock_off;
  }
  ag->clock_off = off;
  if (ag->event[0] && ag->event_end_s > 0 && isnan(ag->event_end_mono))
    ag->event_end_mono = mono_s + (ag->event_end_s - now_s);
}

int pfi_agent_handle(struct pfi_agent *ag, const char *msg, size_t len,
                     double now_s, double mono_s, struct pfi_error *err) {
  struct pfi_fleet_assign a;
  int rc = pfi_fleet_assign_decode(msg, len, &a, err);
  if (rc < 0) {
    ag->stats.rejected++;
    return rc;
  }
  if (strcmp(a.node, ag->node) != 0)
    return 0;
  ag->now_s = now_s;
  see_clock(ag, now_s, mono_s);
  if (a.seq <= ag->seq) {
    ag->stats.ignored++;
    return 0;
  }
  /* A jump of the sequence or an event end beyond the bounds (a forgery
   * would lock the node out or hold it for years): refused. */
  if ((rc = pfi_fleet_assign_check(&a, ag->seq, now_s, err)) < 0) {
    ag->stats.rejected++;
    return rc;
  }
  if (!a.restore) {
    if (a.n != ag->n) {
      ag->stats.rejected++;
      return pfi_error_set(err, PFI_EINVAL,
                           "assignment %llu has %u caps for %u GPUs",
                           (unsigned long long)a.seq, a.n, ag->n);
    }
    for (unsigned i = 0; i < a.n; i++)
      if (a.cap_mw[i] < ag->lim[i].min_mw || a.cap_mw[i] > ag->lim[i].max_mw) {
        ag->stats.rejected++;
        return pfi_error_set(err, PFI_EINVAL,
                             "assignment %llu: GPU %u cap %u mW outside "
                             "%u..%u mW",
                             (unsigned long long)a.seq, i, a.cap_mw[i],
                             ag->lim[i].min_mw, ag->lim[i].max_mw);
      }
  }
  ag->seq = a.seq;
  ag->lease_until = mono_s + a.lease_s;
  if (a.restore) {
    rc = pfi_agent_restore(ag, err);
    if (rc < 0)
      return rc;
    ag->stats.applied++;
    return 1;
  }
  /* Originals first, then the assignment into the record, then the caps:
   * a crash at any point leaves a record the next start can act on. */
  uint32_t prev[PFI_FLEET_MAX_GPUS];
  enum pfi_agent_mode prev_mode = ag->mode;
  char prev_event[PFI_FLEET_NAME_MAX];
  double prev_end = ag->event_end_s, prev_end_mono = ag->event_end_mono;
  memcpy(prev, ag->assigned, sizeof prev);
  memcpy(prev_event, ag->event, sizeof prev_event);
  /* A record that cannot be written (a full disk) stops no cut: with every
   * GPU's original known in memory, caps at or below it are applied (the
   * record is written by a later tick), anything else is refused. */
  int bare = 0;
  if ((rc = record_originals(ag, err)) < 0) {
    if (!all_originals(ag) || !within_originals(ag, a.cap_mw))
      return rc;
    bare = 1;
  }
  memcpy(ag->assigned, a.cap_mw, sizeof a.cap_mw);
  memcpy(ag->event, a.event, sizeof ag->event);
  /* An end already held keeps its conversion: the same end seen again
   * through a wall clock stepped since is not moved. */
  if (!a.event[0])
    ag->event_end_mono = NAN;
  else if (a.event_end_s != prev_end || isnan(ag->event_end_mono))
    ag->event_end_mono = mono_s + (a.event_end_s - now_s);
  ag->event_end_s = a.event_end_s;
  ag->mode = PFI_AGENT_TRACKING;
  if ((rc = save_state(ag, err)) < 0 && !bare && all_originals(ag) &&
      within_originals(ag, a.cap_mw))
    bare = 1;
  if ((rc < 0 && !bare) ||
      (rc = apply_caps(ag, a.cap_mw, prev_mode != PFI_AGENT_IDLE ? prev : NULL,
                       err)) < 0) {
    ag->mode = prev_mode;
    memcpy(ag->assigned, prev, sizeof prev);
    memcpy(ag->event, prev_event, sizeof ag->event);
    ag->event_end_s = prev_end;
    ag->event_end_mono = prev_end_mono;
    save_state(ag, NULL);
    ag->stats.rejected++;
    /* From idle, the GPUs are back at their originals: their records go
     * (a no-op restore), so that no other pfi finds a change pending. */
    if (prev_mode == PFI_AGENT_IDLE)
      pfi_agent_restore(ag, NULL);
    return rc;
  }
  ag->stats.applied++;
  if (prev_mode == PFI_AGENT_IDLE || memcmp(prev, a.cap_mw, sizeof prev) ||
      strcmp(prev_event, a.event) != 0)
    ag->since_s = now_s; /* the caps in force changed */
  set_reason(ag, a.reason[0] ? a.reason : a.event[0] ? "event" : "assigned");
  return 1;
}

/* Writes what the record could not take (ag->unrecorded): the originals
 * kept in memory and the state; idle, the ledger rows of a restore whose
 * record failed (each GPU is already back: only the record is written). */
static void record_retry(struct pfi_agent *ag) {
  struct pfi_error e;
  int rc = 0;
  if (ag->mode != PFI_AGENT_IDLE && !ag->ledger) {
    rc = record_originals(ag, &e);
  } else if (ag->mode == PFI_AGENT_IDLE) {
    struct pfi_saved_cap *rows = NULL;
    size_t nr = 0;
    rc = pfi_store_caps_pending(ag->st, &rows, &nr, &e);
    for (size_t i = 0; rc >= 0 && i < nr; i++) {
      int restored = 0;
      if (strcmp(rows[i].backend, ag->backend) == 0 && rows[i].gpu < ag->n)
        rc = pfi__restore_gpu(ag->st, ag->dev, ag->backend, rows[i].gpu,
                              rows[i].uuid, rows[i].cap_mw, &restored, &e);
    }
    free(rows);
    if (rc >= 0)
      ag->ledger = 0;
  }
  if (rc >= 0)
    rc = save_state(ag, &e);
  if (rc >= 0)
    ag->unrecorded = 0;
  else
    ag->record_err = e;
}

int pfi_agent_record_error(const struct pfi_agent *ag, struct pfi_error *err) {
  if (!ag->unrecorded)
    return 0;
  if (err)
    *err = ag->record_err;
  return 1;
}

/* Re-applies every limit that is not the assignment. */
static int fix_drift(struct pfi_agent *ag, struct pfi_error *err) {
  int first = 0;
  for (unsigned i = 0; i < ag->n; i++) {
    uint32_t cur = 0;
    struct pfi_error e;
    int rc = pfi_device_get_cap(ag->dev, i, &cur, &e);
    if (rc == 0 && cur == ag->assigned[i])
      continue;
    if (rc == 0)
      rc = pfi_device_set_cap(ag->dev, i, ag->assigned[i], &e);
    if (rc == 0) {
      ag->stats.reapplied++;
      pfi_store_cap_event(ag->st, 0, i, "reapply", ag->assigned[i], dev_now(ag),
                          NULL);
    } else if (!first) {
      first = rc;
      if (err)
        *err = e;
    }
  }
  return first;
}

/* The job on GPU `gpu` from the mapping directory, into buf ("" none), and
 * in *uid the user it belongs to (the mapping file's owner, the Slurm
 * prolog giving it to the job's user; the compute process's user), -1 when
 * none is known or it is root's. */
static void job_of(struct pfi_agent *ag, unsigned gpu, char *buf, size_t n,
                   long *uid) {
  struct stat sb;
  buf[0] = 0;
  *uid = -1;
  if (ag->emu_job) {
    if ((size_t)snprintf(buf, n, "emu-%.58s", ag->node) >= n ||
        !pfi_fleet_name_ok(buf))
      buf[0] = 0;
    return;
  }
  if (!ag->jobmap[0]) {
    /* No mapping directory: the Slurm job of the GPU's compute processes
     * (their cgroups), when the backend lists them (NVML). */
    unsigned pids[64];
    size_t np = 0;
    if (pfi_device_processes(ag->dev, gpu, pids, 64, &np, NULL) < 0)
      return;
    for (size_t i = 0; i < np && i < 64; i++)
      if (pfi_fleet_cgroup_job((long)pids[i], NULL, buf, n, NULL) == 1 &&
          pfi_fleet_name_ok(buf)) {
        char proc[32];
        snprintf(proc, sizeof proc, "/proc/%u", pids[i]);
        if (stat(proc, &sb) == 0 && sb.st_uid != 0)
          *uid = (long)sb.st_uid;
        return;
      }
    buf[0] = 0;
    return;
  }
  char path[600], line[PFI_FLEET_NAME_MAX + 2];
  snprintf(path, sizeof path, "%s/%u", ag->jobmap, gpu);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return;
  ssize_t k = read(fd, line, sizeof line - 1);
  long owner = fstat(fd, &sb) == 0 && sb.st_uid != 0 ? (long)sb.st_uid : -1;
  close(fd);
  if (k <= 0)
    return;
  line[k] = 0;
  line[strcspn(line, "\r\n \t")] = 0;
  if (pfi_fleet_name_ok(line) && strlen(line) < n) {
    memcpy(buf, line, strlen(line) + 1);
    *uid = owner;
  }
}

int pfi_agent_tick(struct pfi_agent *ag, double now_s, double mono_s,
                   struct pfi_fleet_telemetry *t, struct pfi_error *err) {
  int first = 0, rc;
  ag->now_s = now_s;
  see_clock(ag, now_s, mono_s);
  if (ag->unrecorded)
    record_retry(ag);
  /* The event's end and the lease on the monotonic clock. */
  int in_event = ag->event[0] && mono_s < ag->event_end_mono;
  if (ag->mode == PFI_AGENT_TRACKING && mono_s > ag->lease_until) {
    if (in_event) {
      ag->mode = PFI_AGENT_HOLD; /* lost during an event: hold */
      set_reason(ag, "hold");
    } else
      first = pfi_agent_restore(ag, err); /* lost outside an event */
  } else if (ag->mode == PFI_AGENT_HOLD && !in_event)
    first = pfi_agent_restore(ag, err); /* held to the event's end */
  else if (ag->mode == PFI_AGENT_IDLE && ag->ledger)
    first = pfi_agent_restore(ag, err); /* a restore that failed before */
  if (first > 0)
    first = 0; /* the count of GPUs restored */
  if (ag->mode != PFI_AGENT_IDLE && (rc = fix_drift(ag, err)) < 0 && !first)
    first = rc;
  if (!t)
    return first;
  memset(t, 0, sizeof *t);
  t->node_w = -1; /* node power: pfi_agent_node_power fills it */
  snprintf(t->node, sizeof t->node, "%s", ag->node);
  t->t_s = now_s;
  t->seq_applied = ag->seq;
  t->mode = ag->mode;
  t->record_failed = ag->unrecorded;
  t->reapplied = ag->stats.reapplied;
  t->n = ag->n;
  unsigned stale_jobs = 0;
  for (unsigned i = 0; i < ag->n; i++) {
    struct pfi_fleet_gpu *g = &t->gpu[i];
    snprintf(g->uuid, sizeof g->uuid, "%s", ag->uuid[i]);
    g->min_mw = ag->lim[i].min_mw;
    g->max_mw = ag->lim[i].max_mw;
    g->default_mw = ag->lim[i].default_mw;
    g->assigned_mw = ag->mode != PFI_AGENT_IDLE ? ag->assigned[i] : 0;
    /* The limit it restores: pfid's ceiling for the GPU in a module built
     * during an event or its recovery (a new leader, a rebuild). */
    uint32_t orig;
    g->restore_mw = ag->mode != PFI_AGENT_IDLE && ag->cs &&
                            pfi_capset_original(ag->cs, i, &orig)
                        ? orig
                        : 0;
    struct pfi_sample s;
    if ((rc = pfi_device_get_cap(ag->dev, i, &g->cap_mw, err)) < 0 ||
        (rc = pfi_device_enforced_cap(ag->dev, i, &g->enforced_mw, err)) < 0)
      first = first ? first : rc;
    g->power_w = -1;
    if (pfi_device_sample(ag->dev, i, &s, NULL) == 0 &&
        pfi_sample_has(&s, PFI_FIELD_POWER) && isfinite(s.v[PFI_FIELD_POWER]))
      g->power_w = s.v[PFI_FIELD_POWER];
    long owner;
    job_of(ag, i, g->job, sizeof g->job, &owner);
    pthread_mutex_lock(&ag->post_mu);
    memcpy(ag->gpu_job[i], g->job, sizeof g->job);
    ag->gpu_uid[i] = owner;
    pthread_mutex_unlock(&ag->post_mu);
    if (!g->job[0])
      continue;
    unsigned j = 0;
    while (j < t->n_jobs && strcmp(t->job[j].id, g->job) != 0)
      j++;
    if (j < t->n_jobs || t->n_jobs == PFI_FLEET_MAX_JOBS)
      continue;
    snprintf(t->job[j].id, sizeof t->job[j].id, "%s", g->job);
    t->job[j].tokens_per_s = -1;
    t->job[j].max_loss = -1;
    t->job[j].max_event_s = t->job[j].notice_s = t->job[j].deadline_tput = 0;
    t->job[j].phase = -1;
    t->job[j].pause_in_s = t->job[j].pause_len_s = t->job[j].end_in_s = -1;
    t->n_jobs++;
    if (ag->tiers[0]) {
      char path[600], buf[128];
      snprintf(path, sizeof path, "%s/%s", ag->tiers, g->job);
      int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      ssize_t k = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
      if (fd >= 0)
        close(fd);
      if (k > 0) {
        buf[k] = 0;
        pfi_fleet_tier_line(buf, &t->job[j]);
      }
    }
    double rate = -1, pause_at = NAN, pause_len = NAN, end_at = NAN;
    int phase = -1, posted = 0;
    pthread_mutex_lock(&ag->post_mu);
    for (unsigned q = 0; q < ag->n_post; q++)
      if (strcmp(ag->post[q].id, g->job) == 0 &&
          mono_s - ag->post[q].mono_s <= PFI_AGENT_POST_TTL_S) {
        posted = 1;
        rate = ag->post[q].rate;
        phase = ag->post[q].phase;
        pause_at = ag->post[q].pause_at;
        pause_len = ag->post[q].pause_len;
        end_at = ag->post[q].end_at;
      }
    pthread_mutex_unlock(&ag->post_mu);
    if (posted && rate >= 0) {
      /* posted by the job itself: newer than any file */
    } else if (ag->emu_job) {
      if (pfi_emu_progress(ag->dev, NULL, &rate, NULL, NULL) < 0)
        rate = -1;
    } else if (ag->tput[0]) {
      char path[600];
      struct pfi_step_phase ph;
      double line_t = NAN, mtime = NAN;
      snprintf(path, sizeof path, "%s/%s.jsonl", ag->tput, g->job);
      if (pfi_fleet_tail_report(path, &rate, &ph, &line_t, &mtime, NULL) != 1)
        rate = -1;
      else if (!pfi_fleet_tput_current(now_s, line_t, mtime, ag->tput_max_age,
                                       NULL)) {
        /* A job that stopped writing: its last line is not its throughput
         * now, nor its phase. */
        ag->stats.tput_stale++;
        stale_jobs++;
        rate = -1;
      } else if (!posted) {
        phase = ph.phase;
        /* A pause announced after the line's Unix time. */
        if (isfinite(ph.next_pause_s) && isfinite(line_t) &&
            fabs(line_t - now_s) < 3600) {
          pause_at = mono_s + (line_t + ph.next_pause_s - now_s);
          pause_len = ph.next_pause_len_s;
        }
        if (isfinite(ph.end_in_s) && isfinite(line_t) &&
            fabs(line_t - now_s) < 3600)
          end_at = mono_s + (line_t + ph.end_in_s - now_s);
      }
    }
    /* One job's report beyond what pfid takes must not make the node's
     * whole telemetry refused: its throughput is left out (unknown). */
    if (isfinite(rate) && rate > PFI_FLEET_TPUT_MAX) {
      ag->stats.tput_dropped++;
      rate = -1;
    }
    t->job[j].tokens_per_s = isfinite(rate) && rate >= 0 ? rate : -1;
    t->job[j].phase = phase;
    if (isfinite(pause_at) && pause_at >= mono_s) {
      t->job[j].pause_in_s = pause_at - mono_s;
      t->job[j].pause_len_s = pause_len > 0 ? pause_len : -1;
    }
    if (isfinite(end_at) && end_at >= mono_s)
      t->job[j].end_in_s = end_at - mono_s;
  }
  ag->stats.tput_stale_jobs = stale_jobs;
  return first;
}

void pfi_agent_stats(const struct pfi_agent *ag, struct pfi_agent_stats *s) {
  *s = ag->stats;
  s->mode = ag->mode;
  s->seq = ag->seq;
  s->event_end_s = ag->event_end_s;
  s->cannot_record = ag->unrecorded;
}

double pfi_agent_event_left(const struct pfi_agent *ag, double mono_s) {
  if (!ag->event[0] || ag->mode == PFI_AGENT_IDLE ||
      !(ag->event_end_mono > mono_s))
    return 0;
  return ag->event_end_mono - mono_s;
}

/* ---- open / close ----------------------------------------------------------
 */

static int open_gpus(struct pfi_agent *ag, struct pfi_error *err) {
  int rc = pfi_device_count(ag->dev, &ag->n, err);
  if (rc < 0)
    return rc;
  if (ag->n == 0 || ag->n > PFI_FLEET_MAX_GPUS)
    return pfi_error_set(err, PFI_ERANGE, "%u GPUs on this node (1..%d)", ag->n,
                         PFI_FLEET_MAX_GPUS);
  for (unsigned i = 0; i < ag->n; i++) {
    if (pfi_device_uuid(ag->dev, i, ag->uuid[i], sizeof ag->uuid[i], NULL) < 0)
      ag->uuid[i][0] = 0;
    if ((rc = pfi_device_limits(ag->dev, i, &ag->lim[i], err)) < 0)
      return rc;
  }
  unsigned gpus[PFI_FLEET_MAX_GPUS];
  for (unsigned i = 0; i < ag->n; i++)
    gpus[i] = i;
  /* KEEP: the agent's changes outlive it on purpose (a restarted agent
   * holds an event's caps); its own store keeps the originals. */
  rc = pfi_capset_open(&ag->cs, ag->st, ag->dev, ag->backend, ag->params, gpus,
                       ag->n, "agent", PFI_CAPSET_KEEP, err);
  if (rc < 0)
    return rc;
  for (unsigned i = 0; i < ag->n; i++) {
    uint32_t mw;
    if (pfi_capset_original(ag->cs, i, &mw))
      ag->ledger = 1;
  }
  return 0;
}

int pfi_agent_open(struct pfi_agent **out, const struct pfi_agent_opts *o,
                   double now_s, struct pfi_error *err) {
  struct pfi_agent *ag = calloc(1, sizeof *ag);
  int rc, caps_ok = 0;
  if (!ag)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  ag->event_end_mono = ag->clock_off = NAN;
  pthread_mutex_init(&ag->post_mu, NULL);
  if (!o->node || !pfi_fleet_name_ok(o->node)) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "node name '%s': expected 1..63 letters, digits, _ "
                       "or -",
                       o->node ? o->node : "");
    goto fail;
  }
  if (!o->record || !o->record[0]) {
    rc = pfi_error_set(err, PFI_EINVAL, "no record path");
    goto fail;
  }
  /* A burst under one report would refuse every report. */
  if (!(o->post_rate >= 0 && o->post_rate <= 1e6) ||
      !(o->post_burst == 0 || (o->post_burst >= 1 && o->post_burst <= 1e6))) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "throughput posts: rate %g a second and burst %g: "
                       "expected 0 (the default) or a rate up to 1e6 and a "
                       "burst of 1..1e6",
                       o->post_rate, o->post_burst);
    goto fail;
  }
  ag->post_rate = o->post_rate > 0 ? o->post_rate : PFI_AGENT_POST_RATE;
  ag->post_burst = o->post_burst > 0 ? o->post_burst : PFI_AGENT_POST_BURST;
  snprintf(ag->node, sizeof ag->node, "%s", o->node);
  snprintf(ag->backend, sizeof ag->backend, "%s",
           o->backend ? o->backend : "emu");
  if (o->params && strlen(o->params) >= sizeof ag->params) {
    rc = pfi_error_set(err, PFI_EINVAL, "backend parameters too long");
    goto fail;
  }
  snprintf(ag->params, sizeof ag->params, "%s", o->params ? o->params : "");
  snprintf(ag->jobmap, sizeof ag->jobmap, "%s",
           o->jobmap_dir ? o->jobmap_dir : "");
  snprintf(ag->tput, sizeof ag->tput, "%s", o->tput_dir ? o->tput_dir : "");
  ag->tput_max_age = o->tput_max_age_s > 0 ? o->tput_max_age_s
                                           : PFI_AGENT_TPUT_MAX_AGE_S;
  snprintf(ag->tiers, sizeof ag->tiers, "%s", o->tier_dir ? o->tier_dir : "");
  if ((rc = pfi_store_open(&ag->st, o->record, PFI_STORE_CREATE, err)) < 0)
    goto fail;
  /* The store's lock says a live process owns its ledger: pfi restore
   * leaves the caps of a running agent alone. */
  if ((rc = pfi__store_lock(ag->st, err)) < 0)
    goto fail;
  if ((rc = pfi_device_open(&ag->dev, ag->backend,
                            ag->params[0] ? ag->params : NULL, err)) < 0 ||
      (rc = open_gpus(ag, err)) < 0)
    goto fail;
  if (o->emu_job) {
    const struct pfi_emu_job *j;
    unsigned gpus[PFI_FLEET_MAX_GPUS];
    for (unsigned i = 0; i < ag->n; i++)
      gpus[i] = i;
    if ((rc = pfi_emu_jobs_load(&ag->jobs, NULL, err)) < 0)
      goto fail;
    if (!(j = pfi_emu_job_find(&ag->jobs, o->emu_job))) {
      rc = pfi_error_set(err, PFI_ENOTFOUND, "no job %s in the job library",
                         o->emu_job);
      goto fail;
    }
    if ((rc = pfi_emu_attach(ag->dev, gpus, ag->n, j, PFI_EMU_DEFAULT_SEED,
                             err)) < 0)
      goto fail;
    ag->emu_job = 1;
  }
  struct pfi_saved_cap *pend = NULL;
  size_t npend = 0;
  if ((rc = pfi_store_caps_pending(ag->st, &pend, &npend, err)) < 0 ||
      (rc = load_state(ag, &caps_ok, err)) < 0) {
    free(pend);
    goto fail;
  }
  free(pend);
  ag->ledger |= npend > 0;
  if (ag->ledger && caps_ok && ag->event[0] && ag->event_end_s > now_s) {
    /* Restarted during an event: hold what the record says; the
     * controller's next assignment (a newer sequence number) takes over. */
    ag->mode = PFI_AGENT_HOLD;
    ag->now_s = now_s;
    set_reason(ag, "hold");
    if ((rc = fix_drift(ag, err)) < 0)
      goto fail;
  } else if ((ag->now_s = now_s, rc = pfi_agent_restore(ag, err)) < 0) {
    goto fail;
  }
  *out = ag;
  return 0;
fail:
  pfi_agent_close(ag);
  return rc;
}

void pfi_agent_close(struct pfi_agent *ag) {
  if (!ag)
    return;
  if (ag->emu_job)
    pfi_emu_detach(ag->dev);
  pfi_capset_close(ag->cs);
  pfi_device_close(ag->dev);
  if (ag->st)
    pfi__store_unlock(ag->st);
  pfi_store_close(ag->st);
  pfi_emu_jobs_release(&ag->jobs);
  pthread_mutex_destroy(&ag->post_mu);
  free(ag);
}

/* ---- throughput posted by the jobs ----------------------------------------
 */

int pfi_fleet_cgroup_job(long pid, const char *cgroup_path, char *buf,
                         size_t n, struct pfi_error *err) {
  char path[64], text[4096];
  if (!cgroup_path) {
    snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
    cgroup_path = path;
  }
  int fd = open(cgroup_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", cgroup_path,
                         strerror(errno));
  ssize_t k = read(fd, text, sizeof text - 1);
  close(fd);
  if (k < 0)
    return pfi_error_set(err, PFI_EIO, "%s: cannot read", cgroup_path);
  text[k] = 0;
  /* Lines "ID:CONTROLLERS:PATH"; a component "job_<digits>" (Slurm's
   * .../uid_U/job_N/step_S/... or /system.slice/slurmstepd.scope/job_N/...). */
  for (char *p = text; (p = strstr(p, "/job_")); p++) {
    char *d = p + 5, *e = d;
    while (*e >= '0' && *e <= '9')
      e++;
    if (e == d || (*e != '/' && *e != '\n' && *e != 0) || e - d > 18)
      continue;
    if ((size_t)snprintf(buf, n, "slurm-%.*s", (int)(e - d), d) >= n)
      return pfi_error_set(err, PFI_ERANGE, "job id too long");
    return 1;
  }
  buf[0] = 0;
  return 0;
}

int pfi_agent_post_throughput(struct pfi_agent *ag, const char *job,
                              const char *body, size_t len, long peer_pid,
                              long peer_uid, double mono_s, double *rate,
                              struct pfi_error *err) {
  if (!pfi_fleet_name_ok(job))
    return pfi_error_set(err, PFI_ENOTFOUND,
                         "job '%.64s': not a name of 1..63 letters, digits, "
                         "_ or -",
                         job);
  /* The jobs of the newest tick; the mapping files when they name it
   * already (a job that just started). Processes are looked at by the
   * tick only (the device belongs to its thread). */
  int here = 0, owned = 0;
  char on[PFI_FLEET_NAME_MAX];
  pthread_mutex_lock(&ag->post_mu);
  for (unsigned i = 0; i < ag->n; i++)
    if (strcmp(ag->gpu_job[i], job) == 0) {
      here = 1;
      owned |= peer_uid > 0 && ag->gpu_uid[i] == peer_uid;
    }
  pthread_mutex_unlock(&ag->post_mu);
  for (unsigned i = 0; i < ag->n && (ag->jobmap[0] || ag->emu_job); i++) {
    long owner;
    job_of(ag, i, on, sizeof on, &owner);
    if (strcmp(on, job) == 0) {
      here = 1;
      owned |= peer_uid > 0 && owner == peer_uid;
    }
  }
  if (!here)
    return pfi_error_set(err, PFI_ENOTFOUND, "no GPU of node %s runs job %s",
                         ag->node, job);
  if (peer_pid > 0) {
    /* The poster must be in the job: a process of Slurm job N posts for
     * slurm-N only; one in no Slurm job, for a job its user owns on this
     * node (the mapping file's owner, the job's compute processes' user);
     * root for any. */
    char mine[PFI_FLEET_NAME_MAX];
    int r = pfi_fleet_cgroup_job(peer_pid, NULL, mine, sizeof mine, NULL);
    if (r == 1 && strcmp(mine, job) != 0)
      return pfi_error_set(err, PFI_ENOPERM,
                           "process %ld belongs to job %s, not %s", peer_pid,
                           mine, job);
    if (r != 1 && peer_uid != 0 && !owned)
      return pfi_error_set(err, PFI_ENOPERM,
                           "process %ld (uid %ld) is not in job %s: neither "
                           "in its Slurm job nor its user",
                           peer_pid, peer_uid, job);
  }
  /* The job's rate, once the poster is known to be in it (so that no one
   * else can spend it where the poster is known). */
  pthread_mutex_lock(&ag->post_mu);
  unsigned k = 0;
  while (k < ag->n_post_rl && strcmp(ag->post_rl[k].id, job) != 0)
    k++;
  if (k == ag->n_post_rl) {
    if (k == PFI_FLEET_MAX_JOBS) {
      k = 0;
      for (unsigned i = 1; i < ag->n_post_rl; i++)
        if (ag->post_rl[i].mono_s < ag->post_rl[k].mono_s)
          k = i;
    } else {
      ag->n_post_rl++;
    }
    snprintf(ag->post_rl[k].id, sizeof ag->post_rl[k].id, "%s", job);
    ag->post_rl[k].tokens = ag->post_burst;
    ag->post_rl[k].mono_s = mono_s;
  }
  struct post_rate *rl = &ag->post_rl[k];
  if (mono_s > rl->mono_s) {
    rl->tokens += (mono_s - rl->mono_s) * ag->post_rate;
    if (rl->tokens > ag->post_burst)
      rl->tokens = ag->post_burst;
    rl->mono_s = mono_s;
  }
  int over = rl->tokens < 1;
  if (!over)
    rl->tokens -= 1;
  pthread_mutex_unlock(&ag->post_mu);
  if (over)
    return pfi_error_set(err, PFI_EBUSY,
                         "job %s: more than %g reports a second (a burst "
                         "of %g): this one is dropped",
                         job, ag->post_rate, ag->post_burst);
  /* One line: a trailing newline is allowed, nothing after it. */
  size_t l = len;
  if (l && body[l - 1] == '\n')
    l--;
  if (l && body[l - 1] == '\r')
    l--;
  const char *nl = memchr(body, '\n', l);
  if (nl)
    return pfi_error_set(err, PFI_EPARSE,
                         "body:2: one report per request (a second line "
                         "starts at byte %zu)",
                         (size_t)(nl - body) + 2);
  struct pfi_step st;
  struct pfi_step_phase ph;
  int rc = pfi_jsonl_parse_line_phase("body", 1, body, l, &st, NULL, &ph, err);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return pfi_error_set(err, PFI_EPARSE, "body:1: empty report");
  pthread_mutex_lock(&ag->post_mu);
  unsigned q = 0;
  while (q < ag->n_post && strcmp(ag->post[q].id, job) != 0)
    q++;
  const struct posted *was = q < ag->n_post ? &ag->post[q] : NULL;
  double r = -1;
  if (isfinite(st.tokens_per_s)) {
    r = st.tokens_per_s;
  } else if (was && isfinite(st.tokens) && isfinite(st.job_t_s) &&
             isfinite(was->tokens) && isfinite(was->t_s) &&
             st.job_t_s > was->t_s && st.tokens >= was->tokens) {
    r = (st.tokens - was->tokens) / (st.job_t_s - was->t_s);
  }
  /* pfid's bound: a report above it is refused whole, and nothing of the
   * job's changes. */
  if (!(r <= PFI_FLEET_TPUT_MAX)) {
    pthread_mutex_unlock(&ag->post_mu);
    return pfi_error_set(err, PFI_ERANGE,
                         "body:1: %s %.6g tokens/s is above %.0e, the most "
                         "telemetry carries",
                         isfinite(st.tokens_per_s) ? "tokens_per_s"
                                                   : "the rate of tokens",
                         r, PFI_FLEET_TPUT_MAX);
  }
  if (q == ag->n_post) {
    /* A new job: reuse the stalest entry when the table is full. */
    if (q == PFI_FLEET_MAX_JOBS) {
      q = 0;
      for (unsigned i = 1; i < ag->n_post; i++)
        if (ag->post[i].mono_s < ag->post[q].mono_s)
          q = i;
    } else {
      ag->n_post++;
    }
    memset(&ag->post[q], 0, sizeof ag->post[q]);
    snprintf(ag->post[q].id, sizeof ag->post[q].id, "%s", job);
    ag->post[q].tokens = ag->post[q].t_s = NAN;
    ag->post[q].rate = -1;
    ag->post[q].phase = -1;
    ag->post[q].pause_at = ag->post[q].pause_len = ag->post[q].end_at = NAN;
  }
  struct posted *p = &ag->post[q];
  p->tokens = st.tokens;
  p->t_s = st.job_t_s;
  p->mono_s = mono_s;
  /* The phase and the next pause its trainer announced, from the time the
   * report arrived. */
  p->phase = ph.phase;
  p->pause_at = isfinite(ph.next_pause_s) ? mono_s + ph.next_pause_s : NAN;
  p->pause_len = ph.next_pause_len_s;
  p->end_at = isfinite(ph.end_in_s) ? mono_s + ph.end_in_s : NAN;
  p->rate = isfinite(r) && r >= 0 ? r : -1;
  pthread_mutex_unlock(&ag->post_mu);
  if (!(r >= 0 && isfinite(r)))
    return 0;
  *rate = r;
  return 1;
}

/* ---- throughput from a job's JSONL file ------------------------------------
 */

int pfi_fleet_tput_current(double now_s, double line_t, double mtime_s,
                           double max_age_s, double *age_s) {
  double age = isfinite(line_t)    ? now_s - line_t
               : isfinite(mtime_s) ? now_s - mtime_s
                                   : NAN;
  if (age_s)
    *age_s = isfinite(age) ? age : NAN;
  /* NaN anywhere (no time known, a bound not given) fails the test. */
  return max_age_s > 0 && age <= max_age_s && age >= -max_age_s;
}

int pfi_fleet_tail_rate(const char *path, double *rate, struct pfi_error *err) {
  return pfi_fleet_tail_report(path, rate, NULL, NULL, NULL, err);
}

int pfi_fleet_tail_report(const char *path, double *rate,
                          struct pfi_step_phase *ph, double *line_t,
                          double *mtime_s, struct pfi_error *err) {
  struct pfi_step_phase ph0;
  if (!ph)
    ph = &ph0;
  ph->phase = -1;
  ph->next_pause_s = ph->next_pause_len_s = ph->end_in_s = NAN;
  if (line_t)
    *line_t = NAN;
  if (mtime_s)
    *mtime_s = NAN;
  enum { TAIL = 65536 };
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return errno == ENOENT
               ? 0
               : pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  struct stat sb;
  char *buf = malloc(TAIL + 1);
  ssize_t k = -1;
  if (buf && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
    off_t off = sb.st_size > TAIL ? sb.st_size - TAIL : 0;
    k = pread(fd, buf, TAIL, off);
    if (mtime_s)
      *mtime_s = (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec / 1e9;
  }
  close(fd);
  if (k < 0) {
    free(buf);
    return pfi_error_set(err, PFI_EIO, "%s: cannot read", path);
  }
  buf[k] = 0;
  /* Complete lines only, newest first. */
  struct pfi_step s[2];
  int got = 0;
  char *end = memrchr(buf, '\n', (size_t)k);
  while (end && got < 2) {
    *end = 0;
    char *start = memrchr(buf, '\n', (size_t)(end - buf));
    char *line = start ? start + 1 : buf;
    if (!start && k == TAIL)
      break; /* a line cut by the window */
    int el = 0;
    if (pfi_jsonl_parse_line_phase(path, 0, line, strlen(line), &s[got], &el,
                                   got == 0 ? ph : NULL, NULL) == 1) {
      if (got == 0 && line_t && !el)
        *line_t = s[0].job_t_s;
      if (got == 0 && isfinite(s[0].tokens_per_s)) {
        *rate = s[0].tokens_per_s;
        free(buf);
        return 1;
      }
      got++;
    }
    end = start;
  }
  free(buf);
  if (got == 2 && isfinite(s[0].tokens) && isfinite(s[1].tokens) &&
      isfinite(s[0].job_t_s) && isfinite(s[1].job_t_s) &&
      s[0].job_t_s > s[1].job_t_s && s[0].tokens >= s[1].tokens) {
    *rate = (s[0].tokens - s[1].tokens) / (s[0].job_t_s - s[1].job_t_s);
    return isfinite(*rate) ? 1 : 0;
  }
  return 0;
}

/* ---- the cap as the job sees it --------------------------------------------
 */

int pfi_agent_cap_json(const struct pfi_agent *ag,
                       const struct pfi_fleet_telemetry *t, char *buf,
                       size_t n, struct pfi_error *err) {
  json_t *g = json_array(), *jobs = json_array();
  json_t *o = json_pack("{s:i s:s s:f s:s s:s s:f s:I}", "v", 1, "node",
                        ag->node, "t", t->t_s, "mode",
                        pfi_agent_mode_name(ag->mode), "reason",
                        ag->reason[0] ? ag->reason : "none", "since",
                        ag->since_s, "seq", (json_int_t)ag->seq);
  if (!g || !jobs || !o) {
    json_decref(g);
    json_decref(jobs);
    json_decref(o);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  json_object_set_new(o, "event", json_string(ag->event));
  if (ag->event[0])
    json_object_set_new(o, "event_end", json_real(ag->event_end_s));
  for (unsigned i = 0; i < t->n; i++) {
    const struct pfi_fleet_gpu *u = &t->gpu[i];
    json_t *x = json_pack("{s:i s:f s:f s:f s:f s:f}", "gpu", (int)i, "cap_w",
                          u->cap_mw / 1000.0, "enforced_w",
                          u->enforced_mw / 1000.0, "default_w",
                          u->default_mw / 1000.0, "min_w", u->min_mw / 1000.0,
                          "max_w", u->max_mw / 1000.0);
    if (x && u->job[0])
      json_object_set_new(x, "job", json_string(u->job));
    json_array_append_new(g, x);
  }
  /* Per job: its GPUs, the mean cap over them and the mean default, and
   * the share of the default its caps allow. */
  for (unsigned j = 0; j < t->n_jobs; j++) {
    double cap = 0, def = 0;
    json_t *gl = json_array();
    unsigned m = 0;
    for (unsigned i = 0; i < t->n; i++)
      if (strcmp(t->gpu[i].job, t->job[j].id) == 0) {
        cap += t->gpu[i].cap_mw / 1000.0;
        def += t->gpu[i].default_mw / 1000.0;
        json_array_append_new(gl, json_integer(i));
        m++;
      }
    if (!m) {
      json_decref(gl);
      continue;
    }
    json_t *x = json_pack("{s:s s:o s:f s:f}", "job", t->job[j].id, "gpus", gl,
                          "cap_w", cap / m, "default_w", def / m);
    if (x && def > 0)
      json_object_set_new(x, "share_of_default", json_real(cap / def));
    if (x && t->job[j].max_loss >= 0)
      json_object_set_new(x, "max_loss", json_real(t->job[j].max_loss));
    json_array_append_new(jobs, x);
  }
  json_object_set_new(o, "gpus", g);
  json_object_set_new(o, "jobs", jobs);
  char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15));
  json_decref(o);
  if (!s)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  size_t len = strlen(s);
  if (len + 2 > n) {
    free(s);
    return pfi_error_set(err, PFI_ERANGE, "cap status does not fit %zu bytes",
                         n);
  }
  memcpy(buf, s, len);
  buf[len++] = '\n';
  buf[len] = 0;
  free(s);
  return (int)len;
}

int pfi_agent_cap_write(const char *path, const char *json, size_t len,
                        struct pfi_error *err) {
  char tmp[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      sizeof tmp)
    return pfi_error_set(err, PFI_EINVAL, "%s: path too long", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                0644);
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", tmp, strerror(errno));
  size_t off = 0;
  while (off < len) {
    ssize_t k = write(fd, json + off, len - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return pfi_error_set(err, PFI_EIO, "%s: %s", tmp, strerror(e));
    }
    off += (size_t)k;
  }
  /* Readers see the old file or the new one, never a part. */
  if (fchmod(fd, 0644) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(e));
  }
  return 0;
}
