/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Guarded cap changes: the one way pfi changes GPU power limits (a sweep,
 * `pfi cap`, `pfi cap --db`, a cap plan, the controller), with the same
 * record, lock and restore guarantees everywhere:
 *
 *   - lock: every GPU's lock (pfi/gpulock.h) is held from open to close, in
 *     every lock directory of the machine; a GPU another live pfi holds is
 *     refused (PFI_EBUSY naming it) unless PFI_CAPSET_FORCE;
 *   - a dead holder's change is dealt with first: a lock whose record holds
 *     a pending change of a pfi that died (a SIGKILLed sweep, another
 *     store's unrestored ledger) is put back to the limit recorded there
 *     before anything else (and that store's ledger row cleared when it can
 *     be opened), so that a later "original" is never a dead sweep's cap;
 *     a change kept on purpose (`pfi cap --db S`) is refused, naming S;
 *   - record: before a limit changes, the limit found is written to the
 *     lock's record on the machine and, with a store, committed to the
 *     store's cap ledger with synchronous=FULL and checkpointed into the
 *     main database file (a copy of the file without its -wal has it);
 *   - apply: all or none: every target is checked against its GPU's range
 *     first; each set is read back; on a failure the GPUs already changed
 *     are put back;
 *   - restore: each recorded limit is set again and read back, checked
 *     against the GPU's identity (UUID) and range and against the machine's
 *     record, then the ledger row and the machine's pending record cleared.
 *
 * Typical uses:
 *   sweep:     open(st) -> for each cap: record, set..., restore -> close
 *   cap plan:  open(st, PFI_CAPSET_KEEP) -> apply -> close (pfi restore --db
 *              st puts every GPU back later; a kill before close leaves the
 *              records, and pfi restore --db st puts them back too)
 *   pfi cap:   open(NULL) -> apply -> commit -> close (a pfi cap killed in
 *              the middle is undone by the next pfi that takes the locks)
 */
#ifndef PFI_CAPSET_H
#define PFI_CAPSET_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/device.h"
#include "pfi/error.h"
#include "pfi/gpulock.h"
#include "pfi/store.h"

struct pfi_capset;

/* Flags of pfi_capset_open. */
#define PFI_CAPSET_FORCE 1u /* use GPUs another live pfi holds, unlocked */
#define PFI_CAPSET_KEEP 2u  /* changes are kept: records stay after close */

/*
 * Opens a guarded set of the `n` GPUs `gpus` of the open device `dev`
 * (opened as backend `backend` with parameters `params`, both recorded in
 * the ledger to reopen it after a crash). `st` (may be NULL: no ledger)
 * is the store whose ledger records the originals; the caller holds its
 * sweep lock or none is needed. `cmd` names the holder in the locks'
 * records ("sweep", "cap"). Every GPU must have a UUID (PFI_EINVAL
 * otherwise: it could be neither locked nor checked when restored).
 * Returns 0, PFI_EBUSY (a GPU held by a live pfi, or a kept change of
 * another store), or another error; on failure nothing is held.
 */
int pfi_capset_open(struct pfi_capset **out, struct pfi_store *st,
                    struct pfi_device *dev, const char *backend,
                    const char *params, const unsigned *gpus, size_t n,
                    const char *cmd, unsigned flags, struct pfi_error *err);

/* GPU k was used without its lock (PFI_CAPSET_FORCE): returns 1 and fills
 * `h` with its holder; 0 otherwise. */
int pfi_capset_forced(const struct pfi_capset *cs, size_t k,
                      struct pfi_gpu_lock_holder *h);

/* The number of pending changes of dead holders that open put back, and
 * of jobs such holders had left running that open ended (SIGKILL to the
 * job's process group, only when its pid still runs with the recorded
 * start time). */
size_t pfi_capset_resolved(const struct pfi_capset *cs);
size_t pfi_capset_jobs_ended(const struct pfi_capset *cs);

/* Records (pid > 0) or forgets (0) the job this holder runs on the GPUs, in
 * every GPU's machine record: a job that outlives a killed holder is ended
 * by the next pfi that takes the locks or restores the ledger. */
int pfi_capset_job(struct pfi_capset *cs, long pid, struct pfi_error *err);

/*
 * Records every GPU's current limit as its original (machine record, then
 * ledger), unless one is already recorded (the older wins). Must precede
 * any change; pfi_capset_apply calls it. Returns 0 or an error (nothing
 * may be changed then).
 */
int pfi_capset_record(struct pfi_capset *cs, struct pfi_error *err);

/* GPU k's recorded original limit, mW: 1 when recorded, 0 when not. */
int pfi_capset_original(const struct pfi_capset *cs, size_t k, uint32_t *mw);

/*
 * Sets mw[k] on every GPU k, all or none: records first, checks every
 * target against its GPU's range (PFI_ERANGE, nothing changed), sets and
 * reads back each (PFI_EMISMATCH when the limit reads otherwise); after a
 * failure the GPUs already changed are put back to their originals (the
 * error says whether that succeeded). A GPU already at its target is not
 * written.
 */
int pfi_capset_apply(struct pfi_capset *cs, const uint32_t *mw,
                     struct pfi_error *err);

/* After a failed pfi_capset_apply: 1 when GPU k was changed and put back,
 * -1 when it was changed and could not be, 0 when it was not changed. */
int pfi_capset_undone(const struct pfi_capset *cs, size_t k);

/*
 * Puts every recorded GPU back to its original, reads it back, and clears
 * its ledger row and machine record. `after_first` (may be NULL) is called
 * once the first GPU is back (a fault-injection point). Returns the number
 * restored or the first error (the others are still tried; a GPU that
 * failed keeps its records).
 */
int pfi_capset_restore(struct pfi_capset *cs, void (*after_first)(void *),
                       void *arg, struct pfi_error *err);

/* The limits now set are the intended ones: clears the pending records
 * (ledger rows and machine records) without changing any limit. */
int pfi_capset_commit(struct pfi_capset *cs, struct pfi_error *err);

/* Releases the locks and frees; changes no limit and leaves the records as
 * they are. Safe with NULL. */
void pfi_capset_close(struct pfi_capset *cs);

/* ---- restoring a store's ledger (pfi restore) ---------------------------*/

/* What happened to one ledger row. */
struct pfi_restore_row {
  struct pfi_saved_cap cap; /* the row as the store holds it */
  int restored;             /* the GPU's limit reads the recorded cap */
  int cleared;              /* the row is gone from the ledger */
  long job_ended;           /* pid of a dead sweep's job ended, or 0 */
  struct pfi_error err;     /* why not, when not (code 0 otherwise) */
};

/*
 * Restores every row of `st`'s ledger: opens each recorded backend with its
 * recorded parameters (a library named there only when $PFI_NVML_LIB names
 * it; an emulator state directory named there only when it exists), takes
 * each GPU's lock, checks the row (UUID non-empty and the GPU's, cap within
 * the GPU's range, cap equal to the machine's record of the limit before
 * the change, or already in place when the machine has none), sets it,
 * reads it back and clears the row and the record; marks runs left
 * "running" as interrupted. Takes the store's sweep lock unless held
 * (PFI_EBUSY: a live pfi owns the store). *rows (may be NULL; caller
 * frees) gets one entry per row. Returns the number restored or the first
 * error.
 */
int pfi_ledger_restore(struct pfi_store *st, struct pfi_restore_row **rows,
                       size_t *nrows, struct pfi_error *err);

/* 1 when a live pfi owns `st` (a sweep running with it, or a restore of
 * it): its ledger is that pfi's to restore. 0 otherwise. */
int pfi_ledger_owned(struct pfi_store *st);

#endif
