/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi sweep --smoke`: one short run of a job at one cap, into a store of
 * its own that is removed afterwards, to check its throughput reports end
 * to end before a campaign. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/store.h"
#include "pfi/sweep.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Removes the smoke store's directory: its files (the store, its -wal,
 * -shm and -samples, its -logs directory and the logs in it). */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char p[4200];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (unlink(p) != 0 && (errno == EISDIR || errno == EPERM))
      remove_dir(p);
  }
  closedir(d);
  rmdir(dir);
}

/* The report of the store's one run. */
static int read_back(struct pfi_store *st, struct pfi_sweep_smoke *out,
                     struct pfi_error *err) {
  struct pfi_store_iter *it = NULL;
  struct pfi_store_run run;
  double t0 = NAN, *v = NULL;
  size_t n = 0, cv = 0;
  int rc = pfi_store_runs_open(st, PFI_RUNS_ALL, &it, err), r;
  if (rc < 0)
    return rc;
  int64_t id = -1;
  while ((r = pfi_store_runs_next(it, &run, err)) == 1) {
    id = run.id;
    t0 = run.has_t_start ? run.t_start_s : NAN;
    out->run_s =
        run.has_t_start && run.has_t_end ? run.t_end_s - run.t_start_s : NAN;
    snprintf(out->state, sizeof out->state, "%s", run.state);
  }
  pfi_store_iter_close(it);
  it = NULL;
  if (r < 0)
    return r;
  if (id < 0)
    return 0;
  if ((rc = pfi_store_steps_open(st, id, &it, err)) < 0)
    return rc;
  struct pfi_store_step s;
  while ((r = pfi_store_steps_next(it, &s, err)) == 1) {
    if (!isfinite(s.tokens_per_s))
      continue;
    if (n == cv) {
      size_t nc = cv ? 2 * cv : 64;
      double *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        r = pfi_error_set(err, PFI_ENOMEM, "out of memory");
        break;
      }
      v = nv;
      cv = nc;
    }
    v[n++] = s.tokens_per_s;
    if (isnan(out->first_s))
      out->first_s = s.t_s - t0;
    out->last_s = s.t_s - t0;
  }
  pfi_store_iter_close(it);
  if (r < 0) {
    free(v);
    return r;
  }
  out->rates = (long)n;
  if (n) {
    qsort(v, n, sizeof *v, cmp_double);
    out->rate_min = v[0];
    out->rate_max = v[n - 1];
    out->rate_median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  free(v);
  return 0;
}

int pfi_sweep_smoke(const struct pfi_sweep_opts *o, struct pfi_sweep_smoke *out,
                    struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  out->first_s = out->last_s = out->run_s = NAN;
  out->rate_min = out->rate_median = out->rate_max = NAN;
  if (!o->argv || !o->argv[0] || !o->throughput || !*o->throughput)
    return pfi_error_set(err, PFI_EINVAL,
                         "--smoke checks a command's throughput reports: "
                         "give --throughput and -- COMMAND");
  if (o->n_caps == 0)
    return pfi_error_set(err, PFI_EINVAL, "no cap to run at");
  /* The highest cap asked for: the run that changes the GPUs least. */
  double cap = o->caps_w[0];
  for (size_t i = 1; i < o->n_caps; i++)
    if (o->caps_w[i] > cap)
      cap = o->caps_w[i];
  struct pfi_sweep_opts so = *o;
  so.caps_w = &cap;
  so.n_caps = 1;
  if (!(so.duration_s > 0))
    so.duration_s = PFI_SMOKE_DURATION_S;
  if (!(so.interval_s > 0))
    so.interval_s = so.duration_s < 1 ? so.duration_s : 1;
  so.cooldown_s = -1;
  so.report_window_s = PFI_SMOKE_WINDOW_S;
  out->cap_w = cap;
  out->duration_s = so.duration_s;
  const char *tmp = getenv("TMPDIR");
  snprintf(out->dir, sizeof out->dir, "%s/pfi-smoke-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(out->dir))
    return pfi_error_set(err, PFI_EIO, "%s: %s", out->dir, strerror(errno));
  char db[4200];
  snprintf(db, sizeof db, "%s/smoke.db", out->dir);
  struct pfi_store *st = NULL;
  int rc = pfi_store_open(&st, db, PFI_STORE_CREATE, err);
  if (rc < 0) {
    remove_dir(out->dir);
    return rc;
  }
  rc = pfi_sweep_run(st, &so, &out->res, err);
  struct pfi_error e2;
  pfi_error_clear(&e2);
  int rb = read_back(st, out, &e2);
  if (rc == 0 && rb < 0) {
    rc = rb;
    *err = e2;
  }
  out->reports = out->res.reports;
  /* A store whose ledger still holds caps is what puts them back: kept,
   * and the error (which names it) says to run pfi restore. */
  struct pfi_saved_cap *pend = NULL;
  size_t npend = 0;
  int keep = pfi_store_caps_pending(st, &pend, &npend, &e2) < 0 || npend > 0;
  free(pend);
  pfi_store_close(st);
  if (keep)
    out->kept = 1;
  else
    remove_dir(out->dir);
  return rc;
}
