/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Restoring the caps recorded in a store's ledger. */
#include "pfi/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pfi/device.h"
#include "pfi/gpulock.h"

/* ---- restoring caps ------------------------------------------------------ */

/* Restores the ledger rows of one open device; rows of other backends are
 * left alone. Returns the number restored or the first error (the other
 * GPUs are still tried). */
int pfi__restore_ledger(struct pfi_store *st, struct pfi_device *dev,
                        const char *backend, const char *params,
                        void (*after_first)(void *), void *arg,
                        struct pfi_error *err) {
  struct pfi_saved_cap *caps = NULL;
  size_t n = 0;
  int rc = pfi_store_caps_pending(st, &caps, &n, err);
  if (rc < 0)
    return rc;
  int done = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    struct pfi_saved_cap *c = &caps[i];
    if (strcmp(c->backend, backend) != 0 ||
        (params && strcmp(c->params, params) != 0))
      continue;
    struct pfi_error e;
    pfi_error_clear(&e);
    int r = 0;
    char uuid[96] = "";
    if (c->uuid[0] &&
        pfi_device_uuid(dev, c->gpu, uuid, sizeof uuid, &e) == 0 &&
        strcmp(uuid, c->uuid) != 0) {
      r = pfi_error_set(&e, PFI_ESTATE,
                        "GPU %u is now %s, not %s as recorded: not restoring "
                        "its cap",
                        c->gpu, uuid, c->uuid);
    }
    uint32_t got = 0, cur = 0;
    /* A GPU whose cap never changed (its set failed, or pfi died before
     * reaching it) is left alone: no write is the safest write. */
    int same = r == 0 && pfi_device_get_cap(dev, c->gpu, &cur, NULL) == 0 &&
               cur == c->cap_mw;
    /* A second try: a transient failure (a busy driver) must not leave
     * the GPU capped until someone runs pfi restore. */
    if (r == 0 && !same && pfi_device_set_cap(dev, c->gpu, c->cap_mw, &e) < 0)
      r = pfi_device_set_cap(dev, c->gpu, c->cap_mw, &e);
    /* Checked against the limit read back, not the enforced limit: that is
     * the lower of every limiter (an out-of-band limit a node's BMC holds,
     * say) and may have been below the recorded cap before the sweep too;
     * checking it would fail this restore, and every later one, for ever. */
    if (r == 0)
      r = pfi_device_get_cap(dev, c->gpu, &got, &e);
    if (r == 0 && got != c->cap_mw)
      r = pfi_error_set(&e, PFI_EMISMATCH,
                        "GPU %u: restored cap %u mW but the power limit "
                        "reads %u mW",
                        c->gpu, c->cap_mw, got);
    if (r == 0) {
      double t = NAN;
      pfi_device_now(dev, &t, NULL);
      r = pfi_store_cap_event(st, 0, c->gpu, "restore", c->cap_mw, t, &e);
      if (r == 0)
        r = pfi_store_caps_clear(st, c->backend, c->gpu, &e);
      if (r < 0) {
        /* The GPU is back at its cap; only the record of it failed (a full
         * or read-only disk). Say so: the operator's first question is
         * whether the GPU is still capped. */
        char why[PFI_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", e.msg);
        r = pfi_error_set(&e, r,
                          "GPU %u is restored to %u mW (read back), but the "
                          "store could not record it: %s; pfi restore "
                          "clears the record once the store is writable",
                          c->gpu, c->cap_mw, why);
      }
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
  free(caps);
  return first ? first : done;
}

/* A store is data, and any pfi that opens one restores its ledger: a
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

/* Takes the per-GPU locks (pfi/gpulock.h) of the ledger rows of one
 * device (backend, params) before their caps are restored: a live sweep
 * through another store may hold one of these GPUs (it recorded this
 * store's leftover cap as the one to restore, and restores it when it
 * ends); setting the cap under it would corrupt its measurement. The rows
 * then stay until that sweep ends. *fds (caller releases each and frees)
 * gets one descriptor per locked row. Returns 0, PFI_EBUSY naming the GPU
 * and its holder, or another error. */
static int lock_ledger_gpus(struct pfi_store *st, struct pfi_device *dev,
                            const struct pfi_saved_cap *caps, size_t n,
                            const char *backend, const char *params,
                            int **fds, size_t *nf, struct pfi_error *err) {
  int emulated = strcmp(backend, "emu") == 0;
  char dir[512];
  *nf = 0;
  *fds = malloc((n ? n : 1) * sizeof **fds);
  if (!*fds)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  /* The same directory the sweep chose: emulated GPUs by their names, as
   * in pfi_sweep_run. */
  for (size_t i = 0; i < n && !emulated; i++) {
    char name[128];
    if (strcmp(caps[i].backend, backend) == 0 &&
        strcmp(caps[i].params, params) == 0 &&
        pfi_device_name(dev, caps[i].gpu, name, sizeof name, NULL) == 0 &&
        strstr(name, "(emulated)"))
      emulated = 1;
  }
  pfi_gpu_lock_dir(dev, emulated, dir, sizeof dir);
  for (size_t i = 0; i < n; i++) {
    const struct pfi_saved_cap *c = &caps[i];
    struct pfi_gpu_lock_holder h;
    char who[700];
    if (strcmp(c->backend, backend) != 0 || strcmp(c->params, params) != 0 ||
        !c->uuid[0] || strchr(c->uuid, '/'))
      continue;
    int fd = pfi_gpu_lock_take(dir, c->uuid, "restore", pfi_store_path(st), &h,
                               err);
    if (fd == PFI_EBUSY)
      return pfi_error_set(
          err, PFI_EBUSY,
          "GPU %u (%s) is held by %s: its cap recorded in %s (%u mW) is not "
          "restored under it; run pfi restore --db %s when it has ended",
          c->gpu, c->uuid, pfi_gpu_lock_holder_str(&h, who, sizeof who),
          pfi_store_path(st), c->cap_mw, pfi_store_path(st));
    if (fd < 0)
      return fd;
    (*fds)[(*nf)++] = fd;
  }
  return 0;
}

int pfi_sweep_recover(struct pfi_store *st, struct pfi_error *err) {
  struct pfi_saved_cap *caps = NULL;
  size_t n = 0;
  int rc, held = pfi__store_locked(st), total = 0, first = 0;
  if (!held) {
    /* PFI_EBUSY: a live pfi owns these caps and will restore them. */
    rc = pfi__store_lock(st, err);
    if (rc < 0)
      return rc;
  }
  rc = pfi_store_caps_pending(st, &caps, &n, err);
  if (rc < 0)
    goto out;
  for (size_t i = 0; i < n; i++) {
    /* Every distinct (backend, params) once. */
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      if (strcmp(caps[j].backend, caps[i].backend) == 0 &&
          strcmp(caps[j].params, caps[i].params) == 0)
        seen = 1;
    if (seen)
      continue;
    struct pfi_device *dev = NULL;
    struct pfi_error e;
    int *fds = NULL;
    size_t nf = 0;
    pfi_error_clear(&e);
    int r = check_ledger_lib(caps[i].params, &e);
    if (r == 0)
      r = pfi_device_open(&dev, caps[i].backend,
                          caps[i].params[0] ? caps[i].params : NULL, &e);
    if (r == 0)
      r = lock_ledger_gpus(st, dev, caps, n, caps[i].backend, caps[i].params,
                           &fds, &nf, &e);
    if (r == 0)
      r = pfi__restore_ledger(st, dev, caps[i].backend, caps[i].params, NULL,
                              NULL, &e);
    for (size_t k = 0; k < nf; k++)
      pfi_gpu_lock_release(fds[k]);
    free(fds);
    pfi_device_close(dev);
    if (r < 0) {
      if (!first) {
        first = r;
        if (err)
          *err = e;
      }
    } else {
      total += r;
    }
  }
  if (first) {
    rc = first;
    goto out;
  }
  rc = pfi_store_runs_mark_interrupted(st, err);
  if (rc >= 0)
    rc = total;
out:
  free(caps);
  if (!held)
    pfi__store_unlock(st);
  return rc;
}
