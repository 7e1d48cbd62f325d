/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Choosing and opening a device backend for a command. Only the CLI prints. */
#ifndef PFI_CLI_DEVICE_H
#define PFI_CLI_DEVICE_H

#include <stddef.h>

#include "pfi/device.h"

/*
 * The backend a command uses: `backend` (its --backend) when given, else
 * $PFI_BACKEND when set and not empty, else NULL.
 */
const char *pfi__cli_backend(const char *backend);

/*
 * Opens backend pfi__cli_backend(`backend`) with `params` (NULL for
 * defaults). With neither --backend nor $PFI_BACKEND, opens nvml and
 * requires at least one GPU, saying so on stderr as one line prefixed
 * "pfi CMD: "; it never falls back to the emulator. When nvml cannot be
 * used (no libnvidia-ml.so.1, the driver not loaded, no GPU) the error is
 * PFI_EUNINIT or the backend's own (exit 1), its message starting "NVML not
 * available: " and naming --backend emu. On success *dev is open (close
 * with pfi_device_close) and *chosen points to the backend's static name.
 * Returns 0 or a negative PFI_E* code with `err` filled.
 */
int pfi__cli_open_device(const char *cmd, const char *backend,
                         const char *params, struct pfi_device **dev,
                         const char **chosen, struct pfi_error *err);

/*
 * For a command that opens its device later, through the library (pfi
 * sweep): opens and closes the nvml backend now, so that an unusable NVML
 * gives the error of pfi__cli_open_device before anything is created.
 * Other backends: returns 0 without opening them.
 */
int pfi__cli_probe_device(const char *backend, const char *params,
                          struct pfi_error *err);

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

/*
 * The test hook of the commands that cap GPUs (pfi sweep, pfi profile):
 * PFI_SWEEP_KILL_AT=STAGE[:CAP[:N]] makes pfi kill itself with SIGKILL at
 * the N-th (default 1st) time the library reaches stage STAGE during cap
 * index CAP (0-based; default any). pfi__cli_kill_at_init reads the
 * variable into *k and returns 1 when it is set, then *hook and *arg are
 * the library's stage hook and its argument; 0 when it is not.
 */
struct pfi__cli_kill_at {
  char stage[64];
  long cap, nth, seen;
};
int pfi__cli_kill_at_init(struct pfi__cli_kill_at *k,
                          void (**hook)(const char *, size_t, void *),
                          void **arg);

/*
 * The signals of a command that caps GPUs: SIGINT, SIGTERM and SIGHUP call
 * `on_stop` (without SA_RESTART: a sleeping device wait returns early), and
 * the signals whose default action would kill pfi with the GPUs capped are
 * ignored, so that they become failed writes on the ordinary error path
 * (which restores the caps): SIGPIPE when stderr is a pipe whose reader has
 * gone (`... 2>&1 | tee log` and a dropped SSH session), SIGXFSZ when the
 * store outgrows the file size limit.
 */
void pfi__cli_cap_signals(void (*on_stop)(int));

/*
 * Checks that --emulate ID names a job of the job library. Returns 0, or
 * the command's exit status: 2 (usage, "pfi CMD: --emulate: no job ...")
 * or the status of a library that cannot be read.
 */
int pfi__cli_emulate_known(const char *cmd, const char *id);

#endif
