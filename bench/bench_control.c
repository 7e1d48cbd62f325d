/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One controller decision (pfi_ctl_step during an event) at 1,000 /
 * 10,000 / 100,000 GPUs, on one core: jobs of 8 GPUs with closed-form
 * curves (T = T_max (1 - (1 - u)^g)), every job in training and every GPU
 * reporting, after 60 s of learning in the event so that beliefs hold
 * learned points. Prints the median and the maximum of 20 timed periods.
 * Usage: bench_control [MAX_GPUS] (default 100000).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfi/control.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int bench(size_t ngpus) {
  size_t nj = ngpus / 8;
  double *mn = calloc(ngpus, sizeof *mn), *mx = calloc(ngpus, sizeof *mx);
  double *cap = malloc(ngpus * sizeof *cap);
  double *pmax = malloc(nj * sizeof *pmax), *tmax = malloc(nj * sizeof *tmax);
  double *g = malloc(nj * sizeof *g);
  struct pfi_ctl_gpu_obs *go = malloc(ngpus * sizeof *go);
  struct pfi_ctl_job_obs *jo = malloc(nj * sizeof *jo);
  struct pfi_ctl *ctl;
  struct pfi_error err;
  if (!mn || !mx || !cap || !pmax || !tmax || !g || !go || !jo) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < ngpus; i++) {
    mn[i] = 200;
    mx[i] = cap[i] = 700;
  }
  if (pfi_ctl_open(&ctl, NULL, ngpus, mn, mx, &err) < 0) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  for (size_t j = 0; j < nj; j++) {
    size_t gp[8];
    char id[32];
    for (int k = 0; k < 8; k++)
      gp[k] = j * 8 + (size_t)k;
    snprintf(id, sizeof id, "job%zu", j);
    pmax[j] = 8 * (450 + (double)(j % 7) * 30);
    tmax[j] = 1000 + (double)(j % 13) * 500;
    g[j] = 1.2 + (double)(j % 5) * 0.6;
    struct pfi_ctl_job jb = {.id = id,
                             .ngpus = 8,
                             .gpu = gp,
                             .pfi = 1.0 + (double)(j % 4) * 0.5,
                             .pfi_lo = NAN,
                             .pfi_hi = NAN,
                             .max_loss = j % 3 ? 1.0 : 0.25,
                             .protect = j % 10 == 0,
                             .pmax_w = pmax[j],
                             .tmax = tmax[j]};
    if (pfi_ctl_job_add(ctl, &jb, &err) < 0) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
  }
  double base = 0;
  for (size_t j = 0; j < nj; j++)
    base += pmax[j];
  double times[20];
  int nt = 0;
  for (int t = 1; t <= 100; t++) {
    for (size_t j = 0; j < nj; j++) {
      double pw = 0;
      for (int k = 0; k < 8; k++) {
        size_t i = j * 8 + (size_t)k;
        double d = 0.99 * cap[i], u = pmax[j] / 8;
        go[i].valid = 1;
        go[i].power_w = d < u ? d : u;
        go[i].cap_w = cap[i];
        pw += go[i].power_w;
      }
      jo[j].valid = 1;
      jo[j].phase = PFI_PHASE_TRAINING;
      jo[j].tokens_per_s = tmax[j] * (1 - pow(1 - pw / pmax[j], g[j]));
    }
    struct pfi_ctl_input in = {(double)t, t > 20, "bench", 0.75 * base, go,
                               jo,        NAN,    0,       0,           0,
                               NULL,      NULL};
    struct pfi_ctl_output out;
    double t0 = now();
    if (pfi_ctl_step(ctl, &in, &out, &err) < 0) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    double el = now() - t0;
    if (t > 80)
      times[nt++] = el;
    memcpy(cap, out.cap_w, ngpus * sizeof *cap);
  }
  qsort(times, (size_t)nt, sizeof *times, cmp);
  printf("decision, %7zu GPUs (%6zu jobs): median %8.2f ms, max %8.2f ms\n",
         ngpus, nj, 1e3 * times[nt / 2], 1e3 * times[nt - 1]);
  pfi_ctl_close(ctl);
  free(mn);
  free(mx);
  free(cap);
  free(pmax);
  free(tmax);
  free(g);
  free(go);
  free(jo);
  return 0;
}

int main(int argc, char **argv) {
  size_t max = argc > 1 ? (size_t)atol(argv[1]) : 100000;
  for (size_t n = 1000; n <= max; n *= 10)
    if (bench(n))
      return 1;
  return 0;
}
