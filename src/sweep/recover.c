/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Restoring the caps recorded in a store's ledger. */
#include "pfi/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pfi/device.h"

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
    pfi_error_clear(&e);
    int r = check_ledger_lib(caps[i].params, &e);
    if (r == 0)
      r = pfi_device_open(&dev, caps[i].backend,
                          caps[i].params[0] ? caps[i].params : NULL, &e);
    if (r == 0)
      r = pfi__restore_ledger(st, dev, caps[i].backend, caps[i].params, NULL,
                              NULL, &e);
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
