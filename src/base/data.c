/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/data.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PFI_SOURCE_DATADIR
#define PFI_SOURCE_DATADIR "data"
#endif
#ifndef PFI_DATADIR
#define PFI_DATADIR "/usr/local/share/pfi"
#endif
/* The data directory relative to the directories of the installed programs
 * and libraries (from CMAKE_INSTALL_BINDIR, _LIBDIR and _DATADIR). */
#ifndef PFI_BIN_TO_DATA
#define PFI_BIN_TO_DATA "../share/pfi"
#endif
#ifndef PFI_LIB_TO_DATA
#define PFI_LIB_TO_DATA "../share/pfi"
#endif

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static char found[PATH_MAX]; /* realpath() writes at most PATH_MAX */
static pthread_once_t found_once = PTHREAD_ONCE_INIT;

/* Whether DIR/REL, with DIR the directory of the file `path`, is a data
 * directory; if so it is copied to `found`. */
static int beside(const char *path, const char *rel) {
  char real[PATH_MAX], cand[PATH_MAX + 64];
  if (!path || !strchr(path, '/') || !realpath(path, real))
    return 0;
  char *slash = strrchr(real, '/');
  *slash = 0;
  int w = snprintf(cand, sizeof cand, "%s/%s", real, rel);
  if (w < 0 || (size_t)w >= sizeof cand || !is_dir(cand))
    return 0;
  return realpath(cand, found) != NULL;
}

/* The installed data directory found from where the code runs: beside the
 * shared library holding this function (LIBDIR/../share/pfi) or beside the
 * program (BINDIR/../share/pfi), so that an install under any prefix
 * (cmake --install build --prefix X, make install PREFIX=X) finds its own
 * data wherever it was moved. */
static void find_installed(void) {
  Dl_info info;
  char exe[PATH_MAX];
  ssize_t n;
  if (dladdr((void *)&pfi_data_dir, &info) && info.dli_fname &&
      (beside(info.dli_fname, PFI_LIB_TO_DATA) ||
       beside(info.dli_fname, PFI_BIN_TO_DATA)))
    return;
  n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    if (beside(exe, PFI_BIN_TO_DATA) || beside(exe, PFI_LIB_TO_DATA))
      return;
  }
  found[0] = 0;
}

const char *pfi_data_dir(void) {
  const char *env = getenv("PFI_DATA");
  if (env && *env)
    return env;
  pthread_once(&found_once, find_installed);
  if (found[0])
    return found;
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
