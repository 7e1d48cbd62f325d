/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Where pfi finds its data files (job library, published tables, real
 * measurements): $PFI_DATA if set and not empty; else the installed data
 * directory relative to the running code, LIBDIR/../share/pfi beside the
 * shared libpfi or BINDIR/../share/pfi beside the program (whatever prefix
 * it was installed under); else the source tree's data/ when it exists
 * (running from a build tree); else the data directory of the configured
 * prefix.
 */
#ifndef PFI_DATA_H
#define PFI_DATA_H

#include <stddef.h>

#include "pfi/error.h"

/* The data directory in use (static storage). */
const char *pfi_data_dir(void);

/* Writes "<data dir>/<rel>" into buf. Returns 0, or PFI_ERANGE when it does
 * not fit, or PFI_ENOTFOUND (with a message naming the path) when the file
 * does not exist. */
int pfi_data_path(const char *rel, char *buf, size_t n, struct pfi_error *err);

#endif
