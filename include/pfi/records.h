/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The controller's decision records in SQLite: one row per decision per
 * job (control.h struct pfi_ctl_record), inserted before the caps are
 * applied and completed after. The table is one of dbtable.h (its SQL in
 * the store, src/sweep/store_db.c). docs/control.md "Records" gives the
 * schema.
 */
#ifndef PFI_RECORDS_H
#define PFI_RECORDS_H

#include "pfi/control.h"
#include "pfi/error.h"

struct pfi_records;

/*
 * Opens (`create` 1: creates or appends to) a records database. `durable`
 * 0 lets SQLite skip the fsync of each period (emulated runs, whose caps
 * are not real); 1 syncs every period (a live controller). A file that is
 * not a records database is PFI_EDB naming it. Close with
 * pfi_records_close().
 */
int pfi_records_open(struct pfi_records **r, const char *path, int create,
                     int durable, struct pfi_error *err);
void pfi_records_close(struct pfi_records *r);

/*
 * Writes one period in one transaction: inserts the decisions out->rec
 * (pending) and completes out->done. `run` names the run (the records of
 * several runs can share a database; "" when one). Call it before
 * applying out->cap_w. Returns 0 or PFI_EDB.
 */
int pfi_records_period(struct pfi_records *r, const char *run,
                       const struct pfi_ctl_output *out, struct pfi_error *err);

/* One row as read back. */
struct pfi_records_row {
  char run[64];
  struct pfi_ctl_record rec;
};

/*
 * Calls `fn` for each row (ordered by run, then seq) whose event and job
 * match (NULL: any). `fn` returns 0 to go on or a negative code to stop
 * (returned). Returns 0, PFI_EDB, or fn's code.
 */
int pfi_records_each(struct pfi_records *r, const char *event, const char *job,
                     int (*fn)(void *ctx, const struct pfi_records_row *row),
                     void *ctx, struct pfi_error *err);

#endif
