/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-GPU locks: an exclusive flock(2) on DIR/pfi-sweep-<UUID>.lock, held
 * by whatever pfi changes a GPU's power limit, for as long as it may
 * change it: a sweep for its whole run, `pfi cap` while it sets limits,
 * the crash recovery while it restores a ledger. Two of them on one GPU
 * would overwrite each other's caps (a sweep restores the cap it found at
 * its start, undoing an operator's change; an operator's change corrupts
 * the sweep's measurement). The kernel drops a lock when its holder dies,
 * even by SIGKILL, so a crashed holder never blocks anyone.
 *
 * The holder writes who it is into the file (pid, command, store), which a
 * refused pfi reads to name it. The record is advisory: it may be empty
 * for a moment after the lock is taken, or when the file is not writable
 * by the holder (a lock file created by another user).
 *
 * DIR is $PFI_LOCK_DIR when set; for emulated GPUs the emulator's state
 * directory (their UUIDs are the same in every state directory, which are
 * separate devices); else /run/lock when writable, else /tmp. Everything
 * that takes the locks must agree on DIR, so all use pfi_gpu_lock_dir().
 */
#ifndef PFI_GPULOCK_H
#define PFI_GPULOCK_H

#include <stddef.h>

#include "pfi/device.h"
#include "pfi/error.h"

/* Who holds a GPU's lock, as its record says; empty fields when unknown. */
struct pfi_gpu_lock_holder {
  long pid;        /* 0 when unknown */
  char cmd[32];    /* "sweep", "cap", "restore" or "" */
  char store[512]; /* the holder's trace store, "" when none or unknown */
};

/*
 * The lock directory for GPUs of the open session `dev` (may be NULL), into
 * buf (n bytes). `emulated`: the GPUs are the emulator's (behind any
 * backend). Never fails; a path longer than buf is truncated.
 */
void pfi_gpu_lock_dir(struct pfi_device *dev, int emulated, char *buf,
                      size_t n);

/*
 * Takes the exclusive lock of the GPU with UUID `uuid` in directory `dir`
 * without waiting, and records `cmd` (e.g. "sweep"), this process's pid and
 * `store` (may be NULL) in it. Returns the lock's descriptor (>= 0; release
 * with pfi_gpu_lock_release), PFI_EBUSY when another process holds it (with
 * `holder`, when not NULL, filled from its record, and `err` saying so),
 * PFI_EINVAL for a UUID that cannot be a file name (empty, or with '/'),
 * or PFI_EIO when the lock file cannot be opened (the message suggests
 * PFI_LOCK_DIR).
 */
int pfi_gpu_lock_take(const char *dir, const char *uuid, const char *cmd,
                      const char *store, struct pfi_gpu_lock_holder *holder,
                      struct pfi_error *err);

/* Releases a lock taken by pfi_gpu_lock_take; fd < 0 is a no-op. */
void pfi_gpu_lock_release(int fd);

/*
 * Parses a lock file's record (`n` bytes of `buf`, not NUL-terminated):
 * lines pid=N, cmd=WORD, store=PATH, in any order, others ignored; a field
 * missing or malformed (a pid not a positive decimal) is left empty, and
 * control characters in cmd or store become '?', so that a record can
 * never put a second line into a message. Never fails: the record is only
 * advisory.
 */
void pfi_gpu_lock_holder_parse(const char *buf, size_t n,
                               struct pfi_gpu_lock_holder *h);

/*
 * Describes `h` in words into buf: "pfi sweep (pid 123, store /x/t.db)",
 * "pfi cap (pid 9)", or "another pfi" when the record was empty. Returns
 * buf.
 */
char *pfi_gpu_lock_holder_str(const struct pfi_gpu_lock_holder *h, char *buf,
                              size_t n);

#endif
