/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Choosing and opening a device backend for a command. Only the CLI prints. */
#ifndef PFI_CLI_DEVICE_H
#define PFI_CLI_DEVICE_H

#include <stddef.h>

#include "pfi/device.h"

/*
 * Opens backend `backend` with `params` (NULL for defaults). With `backend`
 * NULL, chooses: nvml when libnvidia-ml.so.1 loads and finds at least one
 * GPU, else emu; the choice and, for emu, why nvml was not used go to
 * stderr as one line prefixed "pfi CMD: ". `params` then applies to the
 * chosen backend only when it was named. On success *dev is open (close
 * with pfi_device_close) and *chosen points to the backend's static name.
 * Returns 0 or a negative PFI_E* code with `err` filled.
 */
int pfi__cli_open_device(const char *cmd, const char *backend,
                         const char *params, struct pfi_device **dev,
                         const char **chosen, struct pfi_error *err);

/*
 * Whether the session's GPUs are emulated: the emu backend, a fault
 * wrapper around it, or a GPU whose name says "(emulated)" (the emulator
 * behind another interface, as with the test NVML library). `gpu_name` may
 * be NULL.
 */
int pfi__cli_emulated(struct pfi_device *dev, const char *gpu_name);

/*
 * Parses a GPU list "all", "0,2,5", "0-3" or a mix ("0-1,4") for a session
 * with `count` GPUs. *out is a malloc'd array (caller frees) of *n distinct
 * indices in the order given. Returns 0, PFI_EINVAL (malformed, duplicate)
 * or PFI_ERANGE (an index >= count), with the message naming the item.
 */
int pfi__cli_parse_gpus(const char *s, unsigned count, unsigned **out,
                        size_t *n, struct pfi_error *err);

#endif
