/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#ifndef PFI_SOURCE_DATADIR
#define PFI_SOURCE_DATADIR "data"
#endif
#ifndef PFI_DATADIR
#define PFI_DATADIR "/usr/local/share/pfi"
#endif

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *pfi_data_dir(void) {
  const char *env = getenv("PFI_DATA");
  if (env && *env)
    return env;
  if (is_dir(PFI_SOURCE_DATADIR))
    return PFI_SOURCE_DATADIR;
  return PFI_DATADIR;
}

int pfi_data_path(const char *rel, char *buf, size_t n, struct pfi_error *err) {
  int w = snprintf(buf, n, "%s/%s", pfi_data_dir(), rel);
  if (w < 0 || (size_t)w >= n)
    return pfi_error_set(err, PFI_ERANGE, "data path too long: %s", rel);
  struct stat st;
  if (stat(buf, &st) != 0)
    return pfi_error_set(err, PFI_ENOTFOUND,
                         "data file not found: %s (set PFI_DATA to pfi's data "
                         "directory)",
                         buf);
  return 0;
}
