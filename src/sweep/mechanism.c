/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The mechanism summary of a trace store (mechanism.csv, one of the
 * summaries `pfi trace summarize` writes): the steady-state clocks of every
 * run, for the report's mechanism figure: the SM clock falls under a cap
 * while the memory clock stays (the report's section 2). curves.csv and
 * features.csv keep only power, throughput and the uncapped run's
 * telemetry, so the clocks of every run are read from its samples here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/device.h"
#include "pfi/phase.h"
#include "pfi/store.h"
#include "pfi/trace.h"

/* Steady-state values of one run's first GPU: SM clock, memory clock and
 * power (NaN when no valid training-phase sample). */
static int run_clocks(struct pfi_store *st, int64_t run, double out[3],
                      struct pfi_error *err) {
  static const int fields[5] = {PFI_FIELD_FB_USED, PFI_FIELD_GPU_UTIL,
                                PFI_FIELD_SM_CLOCK, PFI_FIELD_MEM_CLOCK,
                                PFI_FIELD_POWER};
  struct pfi_store_iter *q = NULL;
  double *v[5] = {NULL};
  enum pfi_phase *ph = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  out[0] = out[1] = out[2] = NAN;
  if ((rc = pfi_store_samples_open(st, run, PFI_STORE_FIRST_GPU, &q, err)) < 0)
    return rc;
  int src;
  struct pfi_store_sample smp;
  while ((src = pfi_store_samples_next(q, &smp, err)) == 1) {
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
    /* An invalid or NULL reading is "not valid", never zero. */
    for (int k = 0; k < 5; k++)
      v[k][n] = (smp.valid >> fields[k]) & 1u ? smp.v[fields[k]] : NAN;
    n++;
  }
  if (src < 0) {
    rc = src;
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
  pfi_store_iter_close(q);
  for (int k = 0; k < 5; k++)
    free(v[k]);
  free(ph);
  return rc;
}

static void put_num(FILE *fp, double v) {
  if (isfinite(v))
    fprintf(fp, "%.6g", v);
}

int pfi_trace_mechanism(struct pfi_store *st, const char *path,
                        struct pfi_error *err) {
  /* The newest complete run of each (job, cap): the one a resumed sweep
   * kept, as the summaries use. */
  struct pfi_store_iter *q = NULL;
  FILE *fp = NULL;
  int rc = 0, rows = 0;
  if ((rc = pfi_store_runs_open(st, PFI_RUNS_NEWEST_COMPLETE, &q, err)) < 0)
    return rc;
  fp = fopen(path, "w");
  if (!fp) {
    rc = pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
    goto out;
  }
  fputs("job,cap_w,sm_clock_mhz,mem_clock_mhz,power_w,source\n", fp);
  int src;
  struct pfi_store_run run;
  while ((src = pfi_store_runs_next(q, &run, err)) == 1) {
    double cap = run.cap_w;
    char jobbuf[256], srcbuf[32];
    snprintf(jobbuf, sizeof jobbuf, "%s", run.job);
    snprintf(srcbuf, sizeof srcbuf, "%s", run.source);
    double c[3];
    if ((rc = run_clocks(st, run.id, c, err)) != 0)
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
  if (src < 0) {
    rc = src;
    goto out;
  }
out:
  pfi_store_iter_close(q);
  if (fp && fclose(fp) != 0 && rc == 0)
    rc = pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  return rc ? rc : rows;
}
