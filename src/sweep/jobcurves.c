/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Curves with each job's ratio PFI and interval (jobcurves.h). */
#include "pfi/jobcurves.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/index.h"
#include "pfi/jobset.h"
#include "pfi/store.h"
#include "pfi/trace.h"

void pfi_jobcurves_release(struct pfi_jobcurves *d) {
  pfi_curveset_release(&d->cs);
  free(d->pfi);
  free(d->pfi_ok);
  free(d->pfi_why);
  memset(d, 0, sizeof *d);
}

/* The provenance of the curves file by the job set's one rule
 * (pfi_table_provenance(), include/pfi/jobset.h): any emulated row labels
 * the data emulated; measured only when every row says so. */
static void provenance(const char *path, int *emulated, int *measured) {
  if (!path || strcmp(path, "-") == 0)
    return;
  struct pfi_table t;
  struct pfi_error e;
  if (pfi_table_load(&t, path, &e) < 0)
    return;
  int any = 0;
  enum pfi_provenance pv = pfi_table_provenance(&t, &any);
  if (any)
    *emulated = 1;
  else if (pv == PFI_PROV_MEASURED)
    *measured = 1;
  pfi_table_release(&t);
}

const char *pfi_jobcurves_provenance(const struct pfi_jobcurves *d) {
  return d->emulated ? "emulated" : d->measured ? "measured" : "input";
}

int pfi_jobcurves_load(struct pfi_jobcurves *d, const char *path,
                       const char *map, int with_pfi, unsigned long draws,
                       unsigned long seed, struct pfi_error *err) {
  return pfi_jobcurves_load_noise(d, path, map, with_pfi, draws, seed, NULL,
                                  err);
}

int pfi_jobcurves_load_noise(struct pfi_jobcurves *d, const char *path,
                             const char *map, int with_pfi, unsigned long draws,
                             unsigned long seed, const struct pfi_noise *given,
                             struct pfi_error *err) {
  memset(d, 0, sizeof *d);
  int rc =
      pfi_curves_read_any(&d->cs, path, map, &d->emulated, &d->measured, err);
  if (rc < 0)
    return rc;
  if (!with_pfi)
    return 0;
  /* One noise for the rule and the interval, as pfi index takes it. */
  if (given)
    d->noise = *given;
  else
    pfi_noise_of(&d->cs, d->emulated, &d->noise);
  size_t n = d->cs.n;
  d->pfi = calloc(3 * n + 1, sizeof *d->pfi);
  d->pfi_ok = calloc(n + 1, sizeof *d->pfi_ok);
  d->pfi_why = calloc(n + 1, sizeof *d->pfi_why);
  if (!d->pfi || !d->pfi_ok || !d->pfi_why)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  d->pfi_lo = d->pfi + n;
  d->pfi_hi = d->pfi + 2 * n;
  for (size_t i = 0; i < n; i++) {
    struct pfi_index ix;
    rc = pfi_index_compute_noise(&d->cs.c[i], PFI_INDEX_RATIO, &d->noise, &ix,
                                 err);
    if (rc < 0)
      return rc;
    int ok = ix.pfi_defined;
    d->pfi[i] = ok ? ix.pfi : 0;
    d->pfi_why[i] = ok ? 0 : ix.undefined_why;
    pfi_index_release(&ix);
    d->pfi_ok[i] = ok;
    d->pfi_lo[i] = d->pfi_hi[i] = d->pfi[i];
    if (!ok) {
      d->n_undefined++;
      continue;
    }
    double lo, hi;
    rc = pfi_index_ci_noise(&d->cs.c[i], draws, seed, &d->noise, &lo, &hi, err);
    if (rc < 0)
      return rc;
    if (rc > 0) {
      d->pfi_lo[i] = lo;
      d->pfi_hi[i] = hi;
    }
  }
  return 0;
}

static int is_sqlite(const char *path) {
  if (!path || strcmp(path, "-") == 0)
    return 0;
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return 0;
  char magic[16];
  size_t n = fread(magic, 1, sizeof magic, fp);
  fclose(fp);
  return n == 16 && memcmp(magic, "SQLite format 3", 16) == 0;
}

int pfi_curves_read_any(struct pfi_curveset *set, const char *path,
                        const char *map, int *emulated, int *measured,
                        struct pfi_error *err) {
  int em = 0, me = 0;
  if (!emulated)
    emulated = &em;
  if (!measured)
    measured = &me;
  if (!is_sqlite(path)) {
    int rc = pfi_curveset_read(set, path, map, err);
    if (rc >= 0)
      provenance(path, emulated, measured);
    return rc;
  }
  pfi_curveset_init(set);
  const char *tmpd = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/pfi-gate-XXXXXX",
           tmpd && *tmpd ? tmpd : "/tmp");
  if (!mkdtemp(dir))
    return pfi_error_set(err, PFI_EIO, "cannot create a temporary directory");
  struct pfi_store *st = NULL;
  int rc = pfi_store_open(&st, path, PFI_STORE_READONLY, err);
  if (rc >= 0) {
    struct pfi_summary_opts so;
    pfi_summary_opts_init(&so);
    rc = pfi_trace_summarize(st, dir, &so, err);
    pfi_store_close(st);
  } else if (err && err->code == PFI_EDB) {
    err->code = PFI_EPARSE;
    rc = PFI_EPARSE;
  }
  char cpath[4200], fpath[4200];
  snprintf(cpath, sizeof cpath, "%s/curves.csv", dir);
  snprintf(fpath, sizeof fpath, "%s/features.csv", dir);
  if (rc >= 0) {
    rc = pfi_curveset_read(set, cpath, NULL, err);
    if (rc >= 0) {
      provenance(cpath, emulated, measured);
      /* Messages name the store, not the temporary file. */
      char *src = strdup(path);
      if (src) {
        free(set->source);
        set->source = src;
      }
    }
  }
  remove(cpath);
  remove(fpath);
  rmdir(dir);
  return rc;
}
