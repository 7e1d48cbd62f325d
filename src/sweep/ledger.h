/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The sweep lock and the checked restore of a GPU's limit: the store's
 * ledger of changed caps, as the sweep (sweep.c, recover.c) and the node
 * agent (src/fleet/agent.c) keep it. Internal to libpfi. */
#ifndef PFI_SWEEP_LEDGER_H
#define PFI_SWEEP_LEDGER_H

#include <stdint.h>

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

/*
 * Puts GPU `gpu` of `dev` back to `mw`, checked: the GPU's UUID must be
 * `uuid` (non-empty), `mw` within its range; a GPU already at `mw` is not
 * written; the set is tried twice and read back. *restored says whether
 * the limit now reads `mw`. With a store, logs a "restore" event and
 * removes the (backend, gpu) ledger row (an error then says the GPU is
 * back and only the record failed).
 */
struct pfi_device;
int pfi__restore_gpu(struct pfi_store *st, struct pfi_device *dev,
                     const char *backend, unsigned gpu, const char *uuid,
                     uint32_t mw, int *restored, struct pfi_error *err);

#endif
