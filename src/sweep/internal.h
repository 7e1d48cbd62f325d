/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal helpers shared by the sweep module's source files. */
#ifndef PFI_SWEEP_INTERNAL_H
#define PFI_SWEEP_INTERNAL_H

#include "pfi/error.h"
#include "pfi/store.h"

/*
 * The sweep lock: an exclusive flock(2) on the store's file, held by the pfi
 * that owns the caps in the ledger for as long as it runs. The kernel drops
 * it when that process dies (even by SIGKILL), which is how a later pfi
 * tells a crashed sweep from a live one. Returns 0 (held), PFI_EBUSY
 * (another live process holds it) or PFI_EIO.
 */
int pfi__store_lock(struct pfi_store *st, struct pfi_error *err);
void pfi__store_unlock(struct pfi_store *st);
int pfi__store_locked(const struct pfi_store *st);

/* Fills `err` with SQLite's message for a failed call. Returns PFI_EDB. */
int pfi__store_dberr(struct pfi_store *st, struct pfi_error *err,
                     const char *what);

/*
 * Restores the ledger rows of backend `backend` (and `params` unless NULL)
 * on the open device `dev`: sets each recorded cap, checks the power
 * limit, logs a "restore" event and removes the row. `after_first` (may be
 * NULL) is called once the first GPU is restored (a fault-injection point).
 * Returns the number restored or the first error; the other GPUs are still
 * tried and a GPU that failed keeps its row.
 */
struct pfi_device;
int pfi__restore_ledger(struct pfi_store *st, struct pfi_device *dev,
                        const char *backend, const char *params,
                        void (*after_first)(void *), void *arg,
                        struct pfi_error *err);

#endif
