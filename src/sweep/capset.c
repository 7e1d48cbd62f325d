/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Guarded cap changes: locks, records, all-or-none apply, restore. */
#include "pfi/capset.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

struct cs_gpu {
  unsigned gpu;
  char uuid[96];
  struct pfi_gpu_lock lock;
  int locked;                      /* lock held */
  int forced;                      /* used without its lock */
  struct pfi_gpu_lock_holder held; /* the live holder when forced */
  int have_orig;                   /* orig is recorded */
  uint32_t orig;
  int changed; /* set by this session since the last record */
  int undone;  /* after a failed apply: 1 put back, -1 could not be */
  int noted;   /* the machine record holds a pending change */
};

struct pfi_capset {
  struct pfi_store *st;
  struct pfi_device *dev;
  char backend[32];
  char params[256];
  char cmd[32];
  unsigned flags;
  size_t n, resolved, jobs_ended;
  struct cs_gpu *g;
  long job_pid; /* the holder's job, recorded with the locks */
  unsigned long long job_start;
};

/* Rewrites GPU g's machine record: this holder, the pending change when
 * `pending` (g->orig), and the job. */
static int note(struct pfi_capset *cs, struct cs_gpu *g, int pending,
                struct pfi_error *err) {
  if (!g->locked)
    return 0;
  int rc = pfi_gpu_lock_note_job(
      &g->lock, cs->cmd, cs->st ? pfi_store_path(cs->st) : NULL, pending,
      g->orig, pending && (cs->flags & PFI_CAPSET_KEEP), cs->job_pid,
      cs->job_start, err);
  if (rc == 0)
    g->noted = pending;
  return rc;
}

/* Two paths name the same file. */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (!a || !b || !a[0] || !b[0])
    return 0;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char ra[PATH_MAX], rb[PATH_MAX];
  if (realpath(a, ra) && realpath(b, rb))
    return strcmp(ra, rb) == 0;
  return strcmp(a, b) == 0;
}

int pfi__restore_gpu(struct pfi_store *st, struct pfi_device *dev,
                     const char *backend, unsigned gpu, const char *uuid,
                     uint32_t mw, int *restored, struct pfi_error *err) {
  char now_uuid[96] = "";
  struct pfi_power_limits lim;
  uint32_t cur = 0, got = 0;
  int rc;
  *restored = 0;
  if (!uuid || !uuid[0])
    return pfi_error_set(err, PFI_ESTATE,
                         "GPU %u: the record names no GPU UUID: not restoring "
                         "a cap that cannot be checked against the GPU",
                         gpu);
  if ((rc = pfi_device_uuid(dev, gpu, now_uuid, sizeof now_uuid, err)) < 0)
    return rc;
  if (strcmp(now_uuid, uuid) != 0)
    return pfi_error_set(err, PFI_ESTATE,
                         "GPU %u is now %s, not %s as recorded: not restoring "
                         "its cap",
                         gpu, now_uuid, uuid);
  if ((rc = pfi_device_limits(dev, gpu, &lim, err)) < 0)
    return rc;
  if (mw < lim.min_mw || mw > lim.max_mw)
    return pfi_error_set(err, PFI_ERANGE,
                         "GPU %u: the recorded cap %.3f W is outside its range "
                         "%.3f..%.3f W: not restored",
                         gpu, mw / 1000.0, lim.min_mw / 1000.0,
                         lim.max_mw / 1000.0);
  /* A GPU whose cap never changed (its set failed, or pfi died before
   * reaching it) is left alone: no write is the safest write. */
  int same = pfi_device_get_cap(dev, gpu, &cur, NULL) == 0 && cur == mw;
  rc = 0;
  /* A second try: a transient failure (a busy driver) must not leave the
   * GPU capped until someone runs pfi restore. */
  if (!same && pfi_device_set_cap(dev, gpu, mw, err) < 0)
    rc = pfi_device_set_cap(dev, gpu, mw, err);
  /* Checked against the limit read back, not the enforced limit: that is
   * the lower of every limiter (an out-of-band limit a node's BMC holds,
   * say) and may have been below the recorded cap before the change too;
   * checking it would fail this restore, and every later one, for ever. */
  if (rc == 0)
    rc = pfi_device_get_cap(dev, gpu, &got, err);
  if (rc == 0 && got != mw)
    rc = pfi_error_set(err, PFI_EMISMATCH,
                       "GPU %u: restored cap %u mW but the power limit reads "
                       "%u mW",
                       gpu, mw, got);
  if (rc < 0)
    return rc;
  *restored = 1;
  if (!st)
    return 0;
  double t = NAN;
  pfi_device_now(dev, &t, NULL);
  rc = pfi_store_cap_event(st, 0, gpu, "restore", mw, t, err);
  if (rc == 0)
    rc = pfi_store_caps_clear(st, backend, gpu, err);
  if (rc < 0) {
    /* The GPU is back at its cap; only the record of it failed (a full or
     * read-only disk). Say so: the operator's first question is whether
     * the GPU is still capped. */
    char why[PFI_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", err ? err->msg : "");
    rc = pfi_error_set(err, rc,
                       "GPU %u is restored to %u mW (read back), but the "
                       "store could not record it: %s; pfi restore clears "
                       "the record once the store is writable",
                       gpu, mw, why);
  }
  return rc;
}

/* A dead holder's store: its ledger row for this GPU (same UUID, the cap
 * the machine recorded) is cleared now that the GPU is back, so that the
 * store does not later claim a change that is gone. Best effort: a store
 * that is missing, read-only or in use keeps its row, which a later
 * restore finds already in place. */
static void clear_foreign_row(const char *path, const char *uuid, uint32_t mw) {
  struct pfi_store *fs = NULL;
  struct pfi_error e;
  struct stat sb;
  if (!path[0] || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
      pfi_store_open(&fs, path, 0, &e) < 0)
    return;
  if (pfi__store_lock(fs, &e) == 0) {
    struct pfi_saved_cap *rows = NULL;
    size_t nr = 0;
    if (pfi_store_caps_pending(fs, &rows, &nr, &e) == 0) {
      for (size_t i = 0; i < nr; i++)
        if (strcmp(rows[i].uuid, uuid) == 0 && rows[i].cap_mw == mw &&
            pfi_store_cap_event(fs, 0, rows[i].gpu, "restore", mw, NAN, &e) ==
                0)
          pfi_store_caps_clear(fs, rows[i].backend, rows[i].gpu, &e);
      pfi_store_caps_sync(fs, &e);
    }
    free(rows);
  }
  pfi_store_close(fs);
}

/* Deals with the change a dead holder left pending on GPU k (see
 * capset.h). */
static int resolve_prev(struct pfi_capset *cs, size_t k,
                        struct pfi_error *err) {
  struct cs_gpu *g = &cs->g[k];
  const struct pfi_gpu_lock_holder *p = &g->lock.prev;
  /* A job the dead holder started that outlived it (one that ignores the
   * SIGTERM its parent's death sends) is ended first: it would go on
   * loading the GPU, unmeasured. */
  int ended = pfi_gpu_lock_end_job(p, NULL);
  if (ended > 0)
    cs->jobs_ended++;
  if (!p->pending)
    return 0;
  int ours = cs->st && same_file(p->store, pfi_store_path(cs->st));
  if (p->kept && !ours)
    return pfi_error_set(
        err, PFI_EBUSY,
        "GPU %u (%s) is at a limit that pfi %s recorded in %s (%.3f W "
        "before it): run pfi restore --db %s first",
        g->gpu, g->uuid, p->cmd[0] ? p->cmd : "cap",
        p->store[0] ? p->store : "a store", p->orig_mw / 1000.0,
        p->store[0] ? p->store : "STORE");
  if (p->kept && ours) {
    /* A second change recorded in the same store: the first original
     * stays the one to put back. */
    g->have_orig = 1;
    g->orig = p->orig_mw;
    return 0;
  }
  int restored = 0;
  int rc = pfi__restore_gpu(NULL, cs->dev, cs->backend, g->gpu, g->uuid,
                            p->orig_mw, &restored, err);
  if (rc < 0) {
    char why[PFI_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", err ? err->msg : "");
    return pfi_error_set(err, rc,
                         "GPU %u (%s): a pfi %s that died left it changed "
                         "(store %s) and it cannot be put back to %.3f W: "
                         "%s; nothing was changed",
                         g->gpu, g->uuid, p->cmd[0] ? p->cmd : "",
                         p->store[0] ? p->store : "none", p->orig_mw / 1000.0,
                         why);
  }
  if (!ours)
    clear_foreign_row(p->store, g->uuid, p->orig_mw);
  cs->resolved++;
  return note(cs, g, 0, err);
}

int pfi_capset_open(struct pfi_capset **out, struct pfi_store *st,
                    struct pfi_device *dev, const char *backend,
                    const char *params, const unsigned *gpus, size_t n,
                    const char *cmd, unsigned flags, struct pfi_error *err) {
  *out = NULL;
  struct pfi_capset *cs = calloc(1, sizeof *cs);
  if (!cs || !(cs->g = calloc(n ? n : 1, sizeof *cs->g))) {
    free(cs);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  cs->st = st;
  cs->dev = dev;
  cs->flags = flags;
  cs->n = n;
  snprintf(cs->backend, sizeof cs->backend, "%s", backend ? backend : "");
  snprintf(cs->params, sizeof cs->params, "%s", params ? params : "");
  snprintf(cs->cmd, sizeof cs->cmd, "%s", cmd ? cmd : "");
  for (size_t k = 0; k < n; k++)
    pfi_gpu_lock_init(&cs->g[k].lock);
  int emulated = backend && strcmp(backend, "emu") == 0, rc = 0;
  for (size_t k = 0; k < n; k++) {
    struct cs_gpu *g = &cs->g[k];
    char name[128];
    g->gpu = gpus[k];
    if ((rc = pfi_device_uuid(dev, g->gpu, g->uuid, sizeof g->uuid, err)) < 0) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "GPU %u has no UUID: pfi cannot lock it nor check "
                         "its identity when restoring its cap",
                         g->gpu);
      goto fail;
    }
    if (!g->uuid[0] || strchr(g->uuid, '/')) {
      rc =
          pfi_error_set(err, PFI_EINVAL, "GPU %u: UUID '%s' cannot name a lock",
                        g->gpu, g->uuid);
      goto fail;
    }
    if (!emulated &&
        pfi_device_name(dev, g->gpu, name, sizeof name, NULL) == 0 &&
        strstr(name, "(emulated)"))
      emulated = 1;
  }
  struct pfi_gpu_lock_dirs dirs;
  pfi_gpu_lock_dirs(dev, emulated, &dirs);
  for (size_t k = 0; k < n; k++) {
    struct cs_gpu *g = &cs->g[k];
    struct pfi_gpu_lock_holder h;
    rc = pfi_gpu_lock_acquire(&g->lock, &dirs, g->uuid, &h, err);
    if (rc == PFI_EBUSY && (flags & PFI_CAPSET_FORCE)) {
      g->forced = 1;
      g->held = h;
      continue;
    }
    if (rc == PFI_EBUSY) {
      char who[700];
      int sweep = !h.cmd[0] || strcmp(h.cmd, "sweep") == 0;
      pfi_gpu_lock_holder_str(&h, who, sizeof who);
      if (sweep && strcmp(cs->cmd, "sweep") == 0)
        rc = pfi_error_set(err, PFI_EBUSY,
                           "GPU %u (%s) is being swept by another pfi (%s): "
                           "two sweeps on one GPU would each restore the "
                           "other's cap; nothing was changed",
                           g->gpu, g->uuid, who);
      else
        rc = pfi_error_set(err, PFI_EBUSY,
                           "GPU %u (%s) is held by %s%s: nothing was changed "
                           "(%s)",
                           g->gpu, g->uuid,
                           h.cmd[0] && sweep ? "a running " : "", who,
                           h.cmd[0] && sweep ? "the sweep restores its own "
                                               "starting limit when it ends"
                                             : "try again when it ends");
      goto fail;
    }
    if (rc < 0)
      goto fail;
    g->locked = 1;
  }
  /* Every lock before any change: a refusal leaves every GPU untouched. */
  for (size_t k = 0; k < n; k++) {
    struct cs_gpu *g = &cs->g[k];
    if (!g->locked)
      continue;
    if ((rc = resolve_prev(cs, k, err)) < 0)
      goto fail;
    if (!g->lock.prev.pending || !g->have_orig)
      note(cs, g, 0, NULL);
  }
  *out = cs;
  return 0;
fail:
  pfi_capset_close(cs);
  return rc;
}

int pfi_capset_forced(const struct pfi_capset *cs, size_t k,
                      struct pfi_gpu_lock_holder *h) {
  if (!cs || k >= cs->n || !cs->g[k].forced)
    return 0;
  if (h)
    *h = cs->g[k].held;
  return 1;
}

size_t pfi_capset_resolved(const struct pfi_capset *cs) {
  return cs ? cs->resolved : 0;
}

size_t pfi_capset_jobs_ended(const struct pfi_capset *cs) {
  return cs ? cs->jobs_ended : 0;
}

int pfi_capset_job(struct pfi_capset *cs, long pid, struct pfi_error *err) {
  unsigned long long start = 0;
  if (pid > 0 && pfi_proc_start(pid, &start) != 0)
    pid = 0; /* already gone, or no /proc: nothing to find later */
  cs->job_pid = pid > 0 ? pid : 0;
  cs->job_start = pid > 0 ? start : 0;
  int rc = 0;
  for (size_t k = 0; k < cs->n; k++) {
    int r = note(cs, &cs->g[k], cs->g[k].noted, err);
    if (r < 0 && !rc)
      rc = r;
  }
  return rc;
}

int pfi_capset_undone(const struct pfi_capset *cs, size_t k) {
  return cs && k < cs->n ? cs->g[k].undone : 0;
}

int pfi_capset_original(const struct pfi_capset *cs, size_t k, uint32_t *mw) {
  if (!cs || k >= cs->n || !cs->g[k].have_orig)
    return 0;
  *mw = cs->g[k].orig;
  return 1;
}

int pfi_capset_record(struct pfi_capset *cs, struct pfi_error *err) {
  int rc;
  for (size_t k = 0; k < cs->n; k++) {
    struct cs_gpu *g = &cs->g[k];
    if (!g->have_orig) {
      if ((rc = pfi_device_get_cap(cs->dev, g->gpu, &g->orig, err)) < 0)
        return rc;
      g->have_orig = 1;
    }
    /* The machine's record first: whatever dies after this, the next pfi
     * that takes the lock knows what to put back. */
    if ((rc = note(cs, g, 1, err)) < 0)
      return rc;
  }
  if (!cs->st)
    return 0;
  struct pfi_saved_cap *caps = calloc(cs->n ? cs->n : 1, sizeof *caps);
  if (!caps)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t k = 0; k < cs->n; k++) {
    snprintf(caps[k].backend, sizeof caps[k].backend, "%s", cs->backend);
    snprintf(caps[k].params, sizeof caps[k].params, "%s", cs->params);
    caps[k].gpu = cs->g[k].gpu;
    snprintf(caps[k].uuid, sizeof caps[k].uuid, "%s", cs->g[k].uuid);
    caps[k].cap_mw = cs->g[k].orig;
  }
  rc = pfi_store_caps_record(cs->st, caps, cs->n, err);
  free(caps);
  return rc;
}

/* Puts back GPUs changed by this session (after a failed apply). Returns
 * the number that could not be put back; `first` gets the first error. */
static int undo(struct pfi_capset *cs, struct pfi_error *first) {
  int bad = 0;
  for (size_t k = cs->n; k-- > 0;) {
    struct cs_gpu *g = &cs->g[k];
    if (!g->changed)
      continue;
    struct pfi_error e;
    int restored = 0;
    pfi_error_clear(&e);
    if (pfi__restore_gpu(NULL, cs->dev, cs->backend, g->gpu, g->uuid, g->orig,
                         &restored, &e) < 0) {
      if (!bad && first)
        *first = e;
      bad++;
      g->undone = -1;
    } else {
      g->changed = 0;
      g->undone = 1;
    }
  }
  return bad;
}

int pfi_capset_apply(struct pfi_capset *cs, const uint32_t *mw,
                     struct pfi_error *err) {
  int rc;
  for (size_t k = 0; k < cs->n; k++)
    cs->g[k].undone = 0;
  for (size_t k = 0; k < cs->n; k++) {
    struct pfi_power_limits lim;
    if ((rc = pfi_device_limits(cs->dev, cs->g[k].gpu, &lim, err)) < 0)
      return rc;
    if (mw[k] < lim.min_mw || mw[k] > lim.max_mw)
      return pfi_error_set(err, PFI_ERANGE,
                           "%.3f W is outside GPU %u's power-limit range "
                           "%.3f..%.3f W; nothing was changed",
                           mw[k] / 1000.0, cs->g[k].gpu, lim.min_mw / 1000.0,
                           lim.max_mw / 1000.0);
  }
  if ((rc = pfi_capset_record(cs, err)) < 0)
    return rc;
  for (size_t k = 0; k < cs->n; k++) {
    struct cs_gpu *g = &cs->g[k];
    uint32_t cur = 0, back = 0;
    if ((rc = pfi_device_get_cap(cs->dev, g->gpu, &cur, err)) < 0)
      break;
    if (cur == mw[k])
      continue;
    rc = pfi_device_set_cap(cs->dev, g->gpu, mw[k], err);
    /* A rejected set changed nothing on that GPU; once accepted, the GPU
     * counts as changed even if reading it back fails. */
    if (rc == 0)
      g->changed = 1;
    if (rc == 0) {
      double t = NAN;
      pfi_device_now(cs->dev, &t, NULL);
      if (cs->st)
        pfi_store_cap_event(cs->st, 0, g->gpu, "set", mw[k], t, NULL);
      rc = pfi_device_get_cap(cs->dev, g->gpu, &back, err);
    }
    if (rc == 0 && back != mw[k])
      rc = pfi_error_set(err, PFI_EMISMATCH,
                         "GPU %u reads back %.3f W after setting %.3f W",
                         g->gpu, back / 1000.0, mw[k] / 1000.0);
    if (rc < 0)
      break;
  }
  if (rc == 0)
    return 0;
  struct pfi_error first;
  pfi_error_clear(&first);
  int bad = undo(cs, &first);
  if (!err)
    return rc;
  size_t l = strlen(err->msg);
  if (bad)
    snprintf(err->msg + l, sizeof err->msg - l,
             "; %d GPU(s) could not be put back (%s): they stay recorded", bad,
             first.msg);
  else {
    snprintf(err->msg + l, sizeof err->msg - l,
             "; the GPUs changed were put back");
    struct pfi_error e;
    pfi_capset_commit(cs, &e);
  }
  return rc;
}

int pfi_capset_restore(struct pfi_capset *cs, void (*after_first)(void *),
                       void *arg, struct pfi_error *err) {
  int done = 0, first = 0;
  struct pfi_saved_cap *rows = NULL;
  size_t nr = 0;
  if (cs->st) {
    int rc = pfi_store_caps_pending(cs->st, &rows, &nr, err);
    if (rc < 0)
      return rc;
  }
  for (size_t k = 0; k < cs->n; k++) {
    struct cs_gpu *g = &cs->g[k];
    if (!g->have_orig)
      continue;
    uint32_t mw = g->orig;
    /* The ledger row, when there is one, must agree with what this
     * session recorded: a store changed under it is not trusted. */
    for (size_t i = 0; i < nr; i++)
      if (strcmp(rows[i].backend, cs->backend) == 0 && rows[i].gpu == g->gpu &&
          rows[i].cap_mw != mw && !first) {
        first = pfi_error_set(err, PFI_ESTATE,
                              "GPU %u: the store's ledger says %.3f W, this "
                              "pfi recorded %.3f W before its change: "
                              "restoring %.3f W",
                              g->gpu, rows[i].cap_mw / 1000.0, mw / 1000.0,
                              mw / 1000.0);
      }
    struct pfi_error e;
    int restored = 0;
    pfi_error_clear(&e);
    int r = pfi__restore_gpu(cs->st, cs->dev, cs->backend, g->gpu, g->uuid, mw,
                             &restored, &e);
    if (restored) {
      g->have_orig = 0;
      g->changed = 0;
      note(cs, g, 0, NULL);
    }
    if (r < 0) {
      if (!first) {
        first = r;
        if (err)
          *err = e;
      }
      continue;
    }
    done++;
    if (after_first && done == 1)
      after_first(arg);
  }
  free(rows);
  if (cs->st) {
    struct pfi_error e;
    pfi_store_caps_sync(cs->st, &e);
  }
  return first ? first : done;
}

int pfi_capset_commit(struct pfi_capset *cs, struct pfi_error *err) {
  int rc = 0;
  for (size_t k = 0; k < cs->n; k++) {
    struct cs_gpu *g = &cs->g[k];
    if (cs->st && g->have_orig) {
      int r = pfi_store_caps_clear(cs->st, cs->backend, g->gpu, err);
      if (r < 0 && !rc)
        rc = r;
    }
    g->have_orig = 0;
    g->changed = 0;
    note(cs, g, 0, NULL);
  }
  if (cs->st) {
    struct pfi_error e;
    pfi_store_caps_sync(cs->st, &e);
  }
  return rc;
}

void pfi_capset_close(struct pfi_capset *cs) {
  if (!cs)
    return;
  for (size_t k = 0; k < cs->n; k++)
    pfi_gpu_lock_drop(&cs->g[k].lock);
  free(cs->g);
  free(cs);
}
