/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Parsers of the device layer's text parameters, internal to pfi (the
 * backends, the CLI and the fuzz target use them). Each returns 0 or
 * PFI_EINVAL / PFI_ERANGE with a message naming the offending item, and
 * never touches a device.
 */
#ifndef PFI_DEVICE_PARAMS_H
#define PFI_DEVICE_PARAMS_H

#include <stddef.h>

#include "pfi/error.h"

/*
 * The nvml backend's "lib=PATH,gpm_min_window=SECONDS". `path` (size
 * `pathsz`) receives the library to load: lib=, else $PFI_NVML_LIB, else
 * "libnvidia-ml.so.1". *gpm_min_window_s is changed only when given.
 */
int pfi__nvml_parse_params(const char *params, char *path, size_t pathsz,
                           double *gpm_min_window_s, struct pfi_error *err);

/* The fault backend's parameters (see fault.c). */
#define PFI__FAULT_OPS 4 /* set, get, sample, any */
struct pfi__fault_conf {
  char inner[32];             /* wrapped backend, default "emu" */
  const char *inner_params;   /* points into the parsed string, or NULL */
  long after[PFI__FAULT_OPS]; /* fail after this many calls; -1: never */
  int persistent;             /* every call after N fails, not just N+1 */
  int code;                   /* PFI_E* returned */
  long gpu;                   /* only this GPU; -1: all */
};
int pfi__fault_parse_params(const char *params, struct pfi__fault_conf *conf,
                            struct pfi_error *err);

/*
 * A GPU list "all", "0,2,5", "0-3" or a mix ("0-1,4") for a session with
 * `count` GPUs. *out is a malloc'd array (caller frees) of *n distinct
 * indices in the order given. Returns 0, PFI_EINVAL (malformed, duplicate),
 * PFI_ERANGE (an index >= count) or PFI_ENOMEM.
 */
int pfi__parse_gpu_list(const char *s, unsigned count, unsigned **out,
                        size_t *n, struct pfi_error *err);

#endif
