/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The backend list and the pfi_device_* wrappers: one place where GPU
 * indices and power-limit requests are validated, so every backend sees
 * only requests that are in range.
 */
#include <stdlib.h>
#include <string.h>

#include "pfi/device.h"

/* The backend list, from backends.def. Each line declares an extern table
 * and adds it to the array, in the file's order. */
#define PFI_BACKEND(sym) extern const struct pfi_device_ops sym;
#include "backends.def"
#undef PFI_BACKEND

const struct pfi_device_ops *const pfi_device_backends[] = {
#define PFI_BACKEND(sym) &sym,
#include "backends.def"
#undef PFI_BACKEND
    NULL};

struct pfi_device {
  const struct pfi_device_ops *ops;
  void *ctx;
};

static const char *const field_names[] = {
#define PFI__FIELD_NAME(name, str, unit) str,
    PFI_FIELD_MAP(PFI__FIELD_NAME)
#undef PFI__FIELD_NAME
};

static const char *const field_units[] = {
#define PFI__FIELD_UNIT(name, str, unit) unit,
    PFI_FIELD_MAP(PFI__FIELD_UNIT)
#undef PFI__FIELD_UNIT
};

const char *pfi_field_name(enum pfi_field f) {
  if ((int)f < 0 || f >= PFI_FIELD__COUNT)
    return NULL;
  return field_names[f];
}

const char *pfi_field_unit(enum pfi_field f) {
  if ((int)f < 0 || f >= PFI_FIELD__COUNT)
    return NULL;
  return field_units[f];
}

int pfi_field_by_name(const char *name) {
  if (!name)
    return -1;
  for (int i = 0; i < PFI_FIELD__COUNT; i++)
    if (strcmp(field_names[i], name) == 0)
      return i;
  return -1;
}

const struct pfi_device_ops *pfi_device_backend(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; pfi_device_backends[i]; i++)
    if (strcmp(pfi_device_backends[i]->name, name) == 0)
      return pfi_device_backends[i];
  return NULL;
}

int pfi_device_open(struct pfi_device **dev, const char *backend,
                    const char *params, struct pfi_error *err) {
  int rc = 0;
  struct pfi_device *d = NULL;
  *dev = NULL;
  const struct pfi_device_ops *ops = pfi_device_backend(backend);
  if (!ops)
    return pfi_error_set(err, PFI_ENOTFOUND, "unknown device backend '%s'",
                         backend ? backend : "(null)");
  if (ops->version < 1 || !ops->open)
    return pfi_error_set(err, PFI_ENOTSUP,
                         "device backend '%s' cannot be opened", ops->name);
  d = calloc(1, sizeof *d);
  if (!d)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  d->ops = ops;
  rc = ops->open(&d->ctx, params, err);
  if (rc < 0)
    goto out;
  *dev = d;
  d = NULL;
out:
  free(d);
  return rc < 0 ? rc : 0;
}

void pfi_device_close(struct pfi_device *dev) {
  if (!dev)
    return;
  if (dev->ops->close)
    dev->ops->close(dev->ctx);
  free(dev);
}

const struct pfi_device_ops *pfi_device_ops_of(const struct pfi_device *dev) {
  return dev ? dev->ops : NULL;
}

void *pfi_device_ctx(const struct pfi_device *dev) {
  return dev ? dev->ctx : NULL;
}

static int notsup(const struct pfi_device *dev, const char *what,
                  struct pfi_error *err) {
  return pfi_error_set(err, PFI_ENOTSUP,
                       "device backend '%s' does not support %s",
                       dev->ops->name, what);
}

int pfi_device_count(struct pfi_device *dev, unsigned *n,
                     struct pfi_error *err) {
  if (!dev || !n)
    return pfi_error_set(err, PFI_EINVAL, "no device session");
  if (!dev->ops->count)
    return notsup(dev, "counting GPUs", err);
  return dev->ops->count(dev->ctx, n, err);
}

/* Checks that `gpu` is one of the session's GPUs. */
static int check_gpu(struct pfi_device *dev, unsigned gpu,
                     struct pfi_error *err) {
  unsigned n = 0;
  int rc = pfi_device_count(dev, &n, err);
  if (rc < 0)
    return rc;
  if (gpu >= n)
    return pfi_error_set(err, PFI_ERANGE,
                         "GPU %u does not exist (the %s backend has %u GPU%s)",
                         gpu, dev->ops->name, n, n == 1 ? "" : "s");
  return 0;
}

int pfi_device_name(struct pfi_device *dev, unsigned gpu, char *buf, size_t n,
                    struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!buf || n == 0)
    return pfi_error_set(err, PFI_EINVAL, "no buffer for the GPU name");
  if (!dev->ops->name_of)
    return notsup(dev, "GPU names", err);
  return dev->ops->name_of(dev->ctx, gpu, buf, n, err);
}

int pfi_device_uuid(struct pfi_device *dev, unsigned gpu, char *buf, size_t n,
                    struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!buf || n == 0)
    return pfi_error_set(err, PFI_EINVAL, "no buffer for the GPU UUID");
  if (!dev->ops->uuid_of)
    return notsup(dev, "GPU UUIDs", err);
  return dev->ops->uuid_of(dev->ctx, gpu, buf, n, err);
}

int pfi_device_limits(struct pfi_device *dev, unsigned gpu,
                      struct pfi_power_limits *lim, struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!lim)
    return pfi_error_set(err, PFI_EINVAL, "no limits struct");
  if (!dev->ops->limits)
    return notsup(dev, "power-limit constraints", err);
  return dev->ops->limits(dev->ctx, gpu, lim, err);
}

int pfi_device_get_cap(struct pfi_device *dev, unsigned gpu, uint32_t *mw,
                       struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!mw)
    return pfi_error_set(err, PFI_EINVAL, "no output for the power limit");
  if (!dev->ops->get_cap)
    return notsup(dev, "reading the power limit", err);
  return dev->ops->get_cap(dev->ctx, gpu, mw, err);
}

int pfi_device_set_cap(struct pfi_device *dev, unsigned gpu, uint32_t mw,
                       struct pfi_error *err) {
  struct pfi_power_limits lim;
  int rc = pfi_device_limits(dev, gpu, &lim, err);
  if (rc < 0)
    return rc;
  if (!dev->ops->set_cap)
    return notsup(dev, "setting the power limit", err);
  /* Validated here, before the backend, so an out-of-range request never
   * reaches a real GPU; the message speaks watts, as operators do. */
  if (mw < lim.min_mw || mw > lim.max_mw)
    return pfi_error_set(err, PFI_ERANGE,
                         "power limit %.3f W for GPU %u is outside its range "
                         "%.3f..%.3f W",
                         mw / 1000.0, gpu, lim.min_mw / 1000.0,
                         lim.max_mw / 1000.0);
  return dev->ops->set_cap(dev->ctx, gpu, mw, err);
}

int pfi_device_enforced_cap(struct pfi_device *dev, unsigned gpu, uint32_t *mw,
                            struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!mw)
    return pfi_error_set(err, PFI_EINVAL, "no output for the enforced limit");
  if (!dev->ops->enforced_cap)
    return notsup(dev, "reading the enforced power limit", err);
  return dev->ops->enforced_cap(dev->ctx, gpu, mw, err);
}

int pfi_device_processes(struct pfi_device *dev, unsigned gpu, unsigned *pids,
                         size_t max, size_t *n, struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!n || (max && !pids))
    return pfi_error_set(err, PFI_EINVAL, "no output for the processes");
  if (dev->ops->version < 2 || !dev->ops->processes)
    return notsup(dev, "listing the processes on a GPU", err);
  return dev->ops->processes(dev->ctx, gpu, pids, max, n, err);
}

int pfi_device_sample(struct pfi_device *dev, unsigned gpu,
                      struct pfi_sample *s, struct pfi_error *err) {
  int rc = check_gpu(dev, gpu, err);
  if (rc < 0)
    return rc;
  if (!s)
    return pfi_error_set(err, PFI_EINVAL, "no sample struct");
  if (!dev->ops->sample)
    return notsup(dev, "telemetry samples", err);
  /* Backends fill only what they support; start from "nothing valid". */
  memset(s, 0, sizeof *s);
  return dev->ops->sample(dev->ctx, gpu, s, err);
}

int pfi_device_now(struct pfi_device *dev, double *t_s, struct pfi_error *err) {
  if (!dev || !t_s)
    return pfi_error_set(err, PFI_EINVAL, "no device session");
  if (dev->ops->version < 1 || !dev->ops->now)
    return notsup(dev, "a device clock", err);
  return dev->ops->now(dev->ctx, t_s, err);
}

int pfi_device_wait(struct pfi_device *dev, double seconds,
                    struct pfi_error *err) {
  if (!dev)
    return pfi_error_set(err, PFI_EINVAL, "no device session");
  if (!(seconds >= 0) || seconds > 1e9)
    return pfi_error_set(err, PFI_EINVAL, "cannot wait %g s", seconds);
  if (!dev->ops->wait)
    return notsup(dev, "waiting on the device clock", err);
  return dev->ops->wait(dev->ctx, seconds, err);
}
