/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Per-run clocks from a trace store, for the report's mechanism figure: the
 * SM clock falls under a cap while the memory clock stays (METHOD.md
 * section 3). The summaries (curves.csv, features.csv) keep only power,
 * throughput and the uncapped run's telemetry, so the clocks of every run
 * are read from the samples here.
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/device.h"
#include "pfi/phase.h"
#include "pfi/report.h"
#include "pfi/store.h"

static int dberr(sqlite3 *db, struct pfi_error *err, const char *what) {
  return pfi_error_set(err, PFI_EDB, "trace store: %s: %s", what,
                       sqlite3_errmsg(db));
}

/* Steady-state values of one run's first GPU: SM clock, memory clock and
 * power (NaN when no valid training-phase sample). */
static int run_clocks(sqlite3 *db, sqlite3_int64 run, double out[3],
                      struct pfi_error *err) {
  static const char sql[] =
      "SELECT valid, fb_used_mib, gpu_util, sm_clock_mhz, mem_clock_mhz, "
      "power_w FROM samples WHERE run_id = ?1 AND gpu = (SELECT min(gpu) "
      "FROM samples WHERE run_id = ?1) ORDER BY t_s";
  static const int fields[5] = {PFI_FIELD_FB_USED, PFI_FIELD_GPU_UTIL,
                                PFI_FIELD_SM_CLOCK, PFI_FIELD_MEM_CLOCK,
                                PFI_FIELD_POWER};
  sqlite3_stmt *q = NULL;
  double *v[5] = {NULL};
  enum pfi_phase *ph = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  out[0] = out[1] = out[2] = NAN;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
    return dberr(db, err, "reading samples");
  sqlite3_bind_int64(q, 1, run);
  int src;
  while ((src = sqlite3_step(q)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? 2 * cap : 512;
      for (int k = 0; k < 5; k++) {
        double *p = realloc(v[k], cap * sizeof *p);
        if (!p) {
          rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
          goto out;
        }
        v[k] = p;
      }
    }
    sqlite3_int64 valid = sqlite3_column_int64(q, 0);
    for (int k = 0; k < 5; k++) {
      /* An invalid or NULL reading is "not valid", never zero. */
      int ok = (valid >> fields[k]) & 1 &&
               sqlite3_column_type(q, k + 1) != SQLITE_NULL;
      v[k][n] = ok ? sqlite3_column_double(q, k + 1) : NAN;
    }
    n++;
  }
  if (src != SQLITE_DONE) {
    rc = dberr(db, err, "reading samples");
    goto out;
  }
  if (n == 0)
    goto out;
  ph = malloc(n * sizeof *ph);
  if (!ph) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = pfi_phase_segment(v[0], v[1], n, NULL, ph, err)) != 0)
    goto out;
  for (int k = 0; k < 3; k++) {
    double m;
    int r = pfi_phase_top_mean(v[2 + k], ph, n, NULL, &m, NULL, err);
    if (r == 0)
      out[k] = m;
    else if (r != PFI_ENOTFOUND) {
      rc = r;
      goto out;
    }
  }
  pfi_error_clear(err);
out:
  sqlite3_finalize(q);
  for (int k = 0; k < 5; k++)
    free(v[k]);
  free(ph);
  return rc;
}

static void put_num(FILE *fp, double v) {
  if (isfinite(v))
    fprintf(fp, "%.6g", v);
}

int pfi_report_mechanism(struct pfi_store *st, const char *path,
                         struct pfi_error *err) {
  sqlite3 *db = pfi_store_db(st);
  /* The newest complete run of each (job, cap): the one a resumed sweep
   * kept, as the summaries use. */
  static const char sql[] =
      "SELECT max(id), job, cap_w, source FROM runs WHERE state = "
      "'complete' GROUP BY job, cap_w ORDER BY job, cap_w";
  sqlite3_stmt *q = NULL;
  FILE *fp = NULL;
  int rc = 0, rows = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
    return dberr(db, err, "reading runs");
  fp = fopen(path, "w");
  if (!fp) {
    rc = pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
    goto out;
  }
  fputs("job,cap_w,sm_clock_mhz,mem_clock_mhz,power_w,source\n", fp);
  int src;
  while ((src = sqlite3_step(q)) == SQLITE_ROW) {
    sqlite3_int64 id = sqlite3_column_int64(q, 0);
    const char *job = (const char *)sqlite3_column_text(q, 1);
    double cap = sqlite3_column_double(q, 2);
    const char *source = (const char *)sqlite3_column_text(q, 3);
    char jobbuf[256], srcbuf[32];
    snprintf(jobbuf, sizeof jobbuf, "%s", job ? job : "");
    snprintf(srcbuf, sizeof srcbuf, "%s", source ? source : "");
    double c[3];
    if ((rc = run_clocks(db, id, c, err)) != 0)
      goto out;
    /* Job ids come from the store: quote them when CSV needs it. */
    if (strpbrk(jobbuf, ",\"\r\n")) {
      fputc('"', fp);
      for (const char *p = jobbuf; *p; p++) {
        if (*p == '"')
          fputc('"', fp);
        fputc(*p, fp);
      }
      fputc('"', fp);
    } else {
      fputs(jobbuf, fp);
    }
    fprintf(fp, ",%.6g,", cap);
    put_num(fp, c[0]);
    fputc(',', fp);
    put_num(fp, c[1]);
    fputc(',', fp);
    put_num(fp, c[2]);
    fprintf(fp, ",%s\n", strpbrk(srcbuf, ",\"\r\n") ? "" : srcbuf);
    rows++;
  }
  if (src != SQLITE_DONE) {
    rc = dberr(db, err, "reading runs");
    goto out;
  }
out:
  sqlite3_finalize(q);
  if (fp && fclose(fp) != 0 && rc == 0)
    rc = pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  return rc ? rc : rows;
}
