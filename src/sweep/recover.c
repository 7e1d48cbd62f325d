/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Restoring the caps recorded in a store's ledger (pfi restore). */
#include "pfi/capset.h"
#include "pfi/sweep.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "pfi/device.h"
#include "pfi/gpulock.h"

/* A store is data, and restoring its ledger opens the backend it names: a
 * crafted store naming a library to load ("lib=PATH", also inside a fault
 * backend's inner parameters) would make that pfi, often root on a GPU
 * node, run the library's code. A library named in the ledger is loaded
 * only when the environment names the same one ($PFI_NVML_LIB). Returns 0
 * when the parameters may be used. */
static int check_ledger_lib(const char *params, struct pfi_error *err) {
  const char *env = getenv("PFI_NVML_LIB");
  for (const char *p = params; p && (p = strstr(p, "lib=")) != NULL; p += 4) {
    const char *v = p + 4;
    size_t len = strcspn(v, ",");
    if (env && *env && strlen(env) == len && strncmp(env, v, len) == 0)
      continue;
    return pfi_error_set(err, PFI_ENOPERM,
                         "the store's cap ledger names the library %.*s: "
                         "not loaded from a store; to restore with it, run "
                         "pfi restore with PFI_NVML_LIB=%.*s",
                         (int)len, v, (int)len, v);
  }
  return 0;
}

/* Nor does a store create files: an emulator state directory named in it
 * ("state=DIR") is opened only when it exists (the emulator would create
 * it, and its files, wherever the store says; a state that does not exist
 * holds no changed cap). */
static int check_ledger_state(const char *params, struct pfi_error *err) {
  for (const char *p = params; p && (p = strstr(p, "state=")) != NULL; p += 6) {
    if (p != params && p[-1] != ',' && p[-1] != '=')
      continue;
    const char *v = p + 6;
    size_t len = strcspn(v, ",");
    char dir[PATH_MAX];
    struct stat sb;
    if (len == 0 || len >= sizeof dir)
      return pfi_error_set(err, PFI_EINVAL,
                           "the store's cap ledger names an unusable "
                           "emulator state directory");
    memcpy(dir, v, len);
    dir[len] = '\0';
    if (lstat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
      return pfi_error_set(err, PFI_ESTATE,
                           "the store's cap ledger names the emulator state "
                           "directory %s, which does not exist: not created "
                           "from a store, nothing restored there",
                           dir);
  }
  return 0;
}

/* Checks a ledger row against the machine's record of the GPU's lock,
 * held in `l`: a row that the machine did not record (a crafted store,
 * a copy whose change is long undone) is not acted on, unless the GPU
 * already reads its cap (then there is nothing to write, only a row to
 * clear). Returns 0 when the row may be restored. */
static int check_row(struct pfi_device *dev, const struct pfi_saved_cap *c,
                     const struct pfi_gpu_lock *l, struct pfi_error *err) {
  const struct pfi_gpu_lock_holder *p = &l->prev;
  if (p->pending) {
    if (p->orig_mw == c->cap_mw)
      return 0;
    return pfi_error_set(
        err, PFI_ESTATE,
        "GPU %u (%s): the store records %.3f W to restore, but this "
        "machine recorded %.3f W before the change (store %s): not "
        "restored",
        c->gpu, c->uuid, c->cap_mw / 1000.0, p->orig_mw / 1000.0,
        p->store[0] ? p->store : "unknown");
  }
  uint32_t cur = 0;
  int rc = pfi_device_get_cap(dev, c->gpu, &cur, err);
  if (rc < 0)
    return rc;
  if (cur == c->cap_mw)
    return 0;
  return pfi_error_set(err, PFI_ESTATE,
                       "GPU %u (%s): the store records %.3f W to restore, but "
                       "this machine has no change of that GPU pending (its "
                       "limit is %.3f W): the row is stale or not of this "
                       "machine; not restored (pfi cap --set sets a limit "
                       "by hand)",
                       c->gpu, c->uuid, c->cap_mw / 1000.0, cur / 1000.0);
}

/* Restores the rows of one device (backend, params); others are left. */
static int restore_device(struct pfi_store *st, struct pfi_restore_row *rows,
                          size_t n, const char *backend, const char *params,
                          struct pfi_error *err) {
  struct pfi_device *dev = NULL;
  int rc = check_ledger_lib(params, err), first = 0, done = 0;
  if (rc == 0)
    rc = check_ledger_state(params, err);
  if (rc == 0)
    rc = pfi_device_open(&dev, backend, params[0] ? params : NULL, err);
  if (rc < 0) {
    for (size_t i = 0; i < n; i++)
      if (strcmp(rows[i].cap.backend, backend) == 0 &&
          strcmp(rows[i].cap.params, params) == 0)
        rows[i].err = *err;
    return rc;
  }
  int emulated = strcmp(backend, "emu") == 0;
  for (size_t i = 0; i < n && !emulated; i++) {
    char name[128];
    if (strcmp(rows[i].cap.backend, backend) == 0 &&
        strcmp(rows[i].cap.params, params) == 0 &&
        pfi_device_name(dev, rows[i].cap.gpu, name, sizeof name, NULL) == 0 &&
        strstr(name, "(emulated)"))
      emulated = 1;
  }
  struct pfi_gpu_lock_dirs dirs;
  pfi_gpu_lock_dirs(dev, emulated, &dirs);
  for (size_t i = 0; i < n; i++) {
    struct pfi_restore_row *r = &rows[i];
    const struct pfi_saved_cap *c = &r->cap;
    if (strcmp(c->backend, backend) != 0 || strcmp(c->params, params) != 0)
      continue;
    struct pfi_gpu_lock l;
    struct pfi_gpu_lock_holder h;
    char who[700];
    int x = 0;
    pfi_error_clear(&r->err);
    if (!c->uuid[0])
      x = pfi_error_set(&r->err, PFI_ESTATE,
                        "GPU %u: the store's ledger names no GPU UUID: not "
                        "restoring a cap that cannot be checked against the "
                        "GPU",
                        c->gpu);
    if (x == 0) {
      x = pfi_gpu_lock_acquire(&l, &dirs, c->uuid, &h, &r->err);
      if (x == PFI_EBUSY)
        x = pfi_error_set(
            &r->err, PFI_EBUSY,
            "GPU %u (%s) is held by %s: its cap recorded in %s (%u mW) is "
            "not restored under it; run pfi restore --db %s when it has "
            "ended",
            c->gpu, c->uuid, pfi_gpu_lock_holder_str(&h, who, sizeof who),
            pfi_store_path(st), c->cap_mw, pfi_store_path(st));
      if (x == 0) {
        char uuid[96] = "";
        /* The job of the sweep that died, if it outlived it. */
        if (pfi_gpu_lock_end_job(&l.prev, NULL) > 0)
          r->job_ended = l.prev.job_pid;
        /* The identity first: the machine's record is of that UUID. */
        if (pfi_device_uuid(dev, c->gpu, uuid, sizeof uuid, &r->err) == 0 &&
            strcmp(uuid, c->uuid) != 0)
          x = pfi_error_set(&r->err, PFI_ESTATE,
                            "GPU %u is now %s, not %s as recorded: not "
                            "restoring its cap",
                            c->gpu, uuid, c->uuid);
        if (x == 0)
          x = check_row(dev, c, &l, &r->err);
        if (x == 0)
          x = pfi__restore_gpu(st, dev, backend, c->gpu, c->uuid, c->cap_mw,
                               &r->restored, &r->err);
        if (r->restored)
          pfi_gpu_lock_note(&l, "restore", pfi_store_path(st), 0, 0, 0, NULL);
        r->cleared = x == 0;
        pfi_gpu_lock_drop(&l);
      }
    }
    if (x < 0) {
      if (!first) {
        first = x;
        *err = r->err;
      }
      continue;
    }
    done++;
  }
  {
    struct pfi_error e;
    pfi_store_caps_sync(st, &e);
  }
  pfi_device_close(dev);
  return first ? first : done;
}

int pfi_ledger_restore(struct pfi_store *st, struct pfi_restore_row **out,
                       size_t *nout, struct pfi_error *err) {
  struct pfi_saved_cap *caps = NULL;
  struct pfi_restore_row *rows = NULL;
  size_t n = 0;
  int rc, held = pfi__store_locked(st), total = 0, first = 0;
  struct pfi_error firsterr;
  if (out)
    *out = NULL;
  if (nout)
    *nout = 0;
  if (!held) {
    /* PFI_EBUSY: a live pfi owns these caps and will restore them. */
    rc = pfi__store_lock(st, err);
    if (rc < 0)
      return rc;
  }
  rc = pfi_store_caps_pending(st, &caps, &n, err);
  if (rc < 0)
    goto out;
  rows = calloc(n ? n : 1, sizeof *rows);
  if (!rows) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    rows[i].cap = caps[i];
  for (size_t i = 0; i < n; i++) {
    /* Every distinct (backend, params) once. */
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      if (strcmp(caps[j].backend, caps[i].backend) == 0 &&
          strcmp(caps[j].params, caps[i].params) == 0)
        seen = 1;
    if (seen)
      continue;
    struct pfi_error e;
    pfi_error_clear(&e);
    int r = restore_device(st, rows, n, caps[i].backend, caps[i].params, &e);
    if (r < 0) {
      if (!first) {
        first = r;
        firsterr = e;
      }
    } else {
      total += r;
    }
  }
  if (first) {
    rc = first;
    if (err)
      *err = firsterr;
  } else {
    rc = pfi_store_runs_mark_interrupted(st, err);
    if (rc >= 0)
      rc = total;
  }
  if (out) {
    *out = rows;
    rows = NULL;
    if (nout)
      *nout = n;
  }
out:
  free(rows);
  free(caps);
  if (!held)
    pfi__store_unlock(st);
  return rc;
}

int pfi_sweep_recover(struct pfi_store *st, struct pfi_error *err) {
  return pfi_ledger_restore(st, NULL, NULL, err);
}

int pfi_ledger_owned(struct pfi_store *st) {
  if (pfi__store_locked(st))
    return 0;
  struct pfi_error e;
  if (pfi__store_lock(st, &e) == PFI_EBUSY)
    return 1;
  pfi__store_unlock(st);
  return 0;
}
