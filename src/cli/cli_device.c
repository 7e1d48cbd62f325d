/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli_device.h"

#include "../device/params.h"
#include "pfi/fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pfi__cli_open_device(const char *cmd, const char *backend,
                         const char *params, struct pfi_device **dev,
                         const char **chosen, struct pfi_error *err) {
  int rc;
  *dev = NULL;
  if (backend) {
    rc = pfi_device_open(dev, backend, params, err);
    if (rc == PFI_ENOTFOUND && !pfi_device_backend(backend)) {
      char names[256] = "";
      size_t w = 0;
      for (size_t i = 0; pfi_device_backends[i] && w < sizeof names; i++)
        w += (size_t)snprintf(names + w, sizeof names - w, "%s%s",
                              i ? ", " : "", pfi_device_backends[i]->name);
      return pfi_error_set(err, PFI_EINVAL,
                           "--backend: unknown backend '%s' (expected one of "
                           "%s)",
                           backend, names);
    }
    if (rc < 0)
      return rc;
    *chosen = pfi_device_ops_of(*dev)->name;
    return 0;
  }
  /* No backend named: real GPUs when there are any. */
  struct pfi_error nerr;
  unsigned n = 0;
  pfi_error_clear(&nerr);
  rc = pfi_device_open(dev, "nvml", NULL, &nerr);
  if (rc == 0)
    rc = pfi_device_count(*dev, &n, &nerr);
  if (rc == 0 && n > 0) {
    fprintf(stderr, "pfi %s: using the nvml backend (%u GPU%s)\n", cmd, n,
            n == 1 ? "" : "s");
    *chosen = "nvml";
    return 0;
  }
  pfi_device_close(*dev);
  *dev = NULL;
  if (rc == 0)
    snprintf(nerr.msg, sizeof nerr.msg, "nvml: no NVIDIA GPU found");
  fprintf(stderr, "pfi %s: using the emu backend (emulated GPUs): %s\n", cmd,
          nerr.msg);
  rc = pfi_device_open(dev, "emu", NULL, err);
  if (rc < 0)
    return rc;
  *chosen = "emu";
  return 0;
}

int pfi__cli_parse_gpus(const char *s, unsigned count, unsigned **out,
                        size_t *n, struct pfi_error *err) {
  return pfi__parse_gpu_list(s, count, out, n, err);
}

int pfi__cli_emulated(struct pfi_device *dev, const char *gpu_name) {
  struct pfi_device *inner = pfi_fault_inner(dev);
  const struct pfi_device_ops *ops = pfi_device_ops_of(inner ? inner : dev);
  if (ops && strcmp(ops->name, "emu") == 0)
    return 1;
  return gpu_name && strstr(gpu_name, "(emulated)") != NULL;
}
