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
 * The lock file is also the machine's own record of a change in progress:
 * its holder writes who it is (pid, command, store) and, before it changes
 * the GPU's limit, the limit it found (orig_mw), which stays in the file
 * until that limit is back. A crafted or copied store cannot change this
 * record, so a restore from a store checks the store's cap against it, and
 * the next pfi that takes a dead holder's lock finds what to put back even
 * when the store is lost.
 *
 * The directories (pfi_gpu_lock_dirs) are fixed per machine, so that no
 * environment variable can split the exclusion: for emulated GPUs the
 * emulator's state directory (that directory is the emulated machine:
 * tests run many side by side); for real GPUs /run/lock when writable and
 * /tmp, the lock taken in each (a process that cannot write /run/lock is
 * still excluded through /tmp). $PFI_LOCK_DIR adds a directory for real
 * GPUs (e.g. one shared by containers that see the same GPUs) and never
 * replaces the fixed ones; emulated GPUs ignore it.
 */
#ifndef PFI_GPULOCK_H
#define PFI_GPULOCK_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/device.h"
#include "pfi/error.h"

/* Who holds (or last held) a GPU's lock, as its record says; empty fields
 * when unknown. */
struct pfi_gpu_lock_holder {
  long pid;        /* 0 when unknown */
  char cmd[32];    /* "sweep", "cap", "restore" or "" */
  char store[512]; /* the holder's trace store, "" when none or unknown */
  /* A change not yet undone: the GPU's limit before it, mW. Only set from a
   * file owned by this user or root (another user's file is not trusted). */
  int pending;
  uint32_t orig_mw;
  /* The change is kept on purpose (`pfi cap --db`): only `pfi restore --db
   * STORE` undoes it; others refuse to touch the GPU, naming STORE. */
  int kept;
  /* The job the holder started on the GPU (a sweep's command), so that a
   * job that outlives a killed holder can be found: its pid and its start
   * time (clock ticks since boot, /proc/PID/stat field 22). 0 when none. */
  long job_pid;
  unsigned long long job_start;
};

/* The directories a GPU's lock is taken in (see above). */
#define PFI_GPU_LOCK_DIRS_MAX 3
struct pfi_gpu_lock_dirs {
  size_t n;
  char dir[PFI_GPU_LOCK_DIRS_MAX][512];
};

/*
 * The lock directories for GPUs of the open session `dev` (may be NULL).
 * `emulated`: the GPUs are the emulator's (behind any backend): the emu
 * session's state directory, or for another backend's emulated GPUs (the
 * test NVML library, the fault wrapper) the emulator's default state
 * directory. Never fails; a path longer than 511 bytes is truncated.
 */
void pfi_gpu_lock_dirs(struct pfi_device *dev, int emulated,
                       struct pfi_gpu_lock_dirs *d);

/* One GPU's lock, held in every directory of a pfi_gpu_lock_dirs. */
struct pfi_gpu_lock {
  int fd[PFI_GPU_LOCK_DIRS_MAX];
  size_t n;
  char uuid[96];
  /* The record found when the lock was taken: its last holder's (dead or
   * finished), with any change it left pending. */
  struct pfi_gpu_lock_holder prev;
};

/*
 * Takes the lock of the GPU with UUID `uuid` in every directory of `d`
 * without waiting; records nothing (pfi_gpu_lock_note does, once the
 * caller has dealt with l->prev). Returns 0, PFI_EBUSY when another
 * process holds it (`holder`, when not NULL, filled from its record, and
 * `err` naming it), PFI_EINVAL for a UUID that cannot name a file (empty,
 * or with '/'), or PFI_EIO when a lock file cannot be opened. On failure
 * nothing stays held. `l` must be released with pfi_gpu_lock_drop.
 */
int pfi_gpu_lock_acquire(struct pfi_gpu_lock *l,
                         const struct pfi_gpu_lock_dirs *d, const char *uuid,
                         struct pfi_gpu_lock_holder *holder,
                         struct pfi_error *err);

/*
 * Replaces the record of a held lock: this process's pid, `cmd`, `store`
 * (may be NULL) and, when `pending`, the limit to put back (`orig_mw`) and
 * whether the change is kept (`kept`). Returns 0 or PFI_EIO when no
 * directory's file could be written (the caller must then not change the
 * GPU: nothing on the machine would say how to put it back).
 */
int pfi_gpu_lock_note(struct pfi_gpu_lock *l, const char *cmd,
                      const char *store, int pending, uint32_t orig_mw,
                      int kept, struct pfi_error *err);

/* The same, also naming the holder's job (job_pid 0: none). */
int pfi_gpu_lock_note_job(struct pfi_gpu_lock *l, const char *cmd,
                          const char *store, int pending, uint32_t orig_mw,
                          int kept, long job_pid, unsigned long long job_start,
                          struct pfi_error *err);

/* The start time of process `pid` (clock ticks since boot), into *start.
 * Returns 0, or -1 when there is no such process (or no /proc). */
int pfi_proc_start(long pid, unsigned long long *start);

/*
 * Ends the job a dead holder left running (h->job_pid), SIGKILL to its
 * process group, but only when a process of that pid still runs with the
 * recorded start time and leads its own process group (so a reused pid is
 * never signalled). Returns 1 when it was killed, 0 when there was none,
 * or PFI_ENOPERM / PFI_EIO with `err` saying why it could not be.
 */
int pfi_gpu_lock_end_job(const struct pfi_gpu_lock_holder *h,
                         struct pfi_error *err);

/* Releases the lock (records stay as last written); safe on a lock never
 * taken if it was zeroed or failed to acquire. */
void pfi_gpu_lock_drop(struct pfi_gpu_lock *l);

/* Sets every descriptor of `l` to -1 (a lock not held). */
void pfi_gpu_lock_init(struct pfi_gpu_lock *l);

/*
 * Single-directory form: takes the lock of `uuid` in `dir` and records
 * `cmd`, this process's pid and `store` (nothing pending). Returns the
 * descriptor (>= 0; release with pfi_gpu_lock_release), PFI_EBUSY (with
 * `holder` and `err`), PFI_EINVAL or PFI_EIO, as pfi_gpu_lock_acquire.
 */
int pfi_gpu_lock_take(const char *dir, const char *uuid, const char *cmd,
                      const char *store, struct pfi_gpu_lock_holder *holder,
                      struct pfi_error *err);

/* Releases a lock taken by pfi_gpu_lock_take; fd < 0 is a no-op. */
void pfi_gpu_lock_release(int fd);

/*
 * Parses a lock file's record (`n` bytes of `buf`, not NUL-terminated):
 * lines pid=N, cmd=WORD, store=PATH, orig_mw=N, kept=1, job=PID:START, in
 * any order,
 * others ignored; a field missing or malformed (a pid not a positive
 * decimal, an orig_mw not a decimal below 2^32) is left empty (pending 0
 * without a valid orig_mw), and control characters in cmd or store become
 * '?', so that a record can never put a second line into a message. Never
 * fails: a record is only as good as the file it came from.
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
