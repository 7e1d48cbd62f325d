/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Write speed of the trace store in the shape of a full emulated campaign:
 * 35 groups x 5 caps, 30-minute runs sampled every 5 s (360 intervals),
 * 16 GPUs each with every field valid, one transaction per interval (as
 * pfi sweep commits), plus one throughput step per interval.
 * Usage: bench_store [DB|- [BATCH]]: DB default (or "-") a file in /tmp,
 * removed afterwards; BATCH intervals per transaction (default 1). Prints
 * the rows per second of this process's CPU time (user + system) and of
 * the wall time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pfi/store.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* This process's CPU seconds, user and system (the kernel's work of the
 * writes counts): other work on a shared machine disturbs it less than
 * the wall time. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
  char path[256];
  int own = argc < 2 || strcmp(argv[1], "-") == 0;
  if (own)
    snprintf(path, sizeof path, "/tmp/pfi-bench-store-%ld.db", (long)getpid());
  else
    snprintf(path, sizeof path, "%s", argv[1]);
  struct pfi_store *st;
  struct pfi_error err;
  if (pfi_store_open(&st, path, PFI_STORE_CREATE, &err) < 0) {
    fprintf(stderr, "bench_store: %s\n", err.msg);
    return 1;
  }
  const int groups = 35, caps = 5, intervals = 360, gpus = 16;
  /* Intervals per transaction: pfi sweep commits at least once a second of
   * wall time, which in virtual time is many intervals. */
  int batch = argc > 2 ? atoi(argv[2]) : 1;
  if (batch < 1)
    batch = 1;
  long rows = 0;
  double t0 = now_s(), c0 = cpu_s();
  for (int g = 0; g < groups; g++)
    for (int c = 0; c < caps; c++) {
      struct pfi_run_info ri;
      memset(&ri, 0, sizeof ri);
      snprintf(ri.job, sizeof ri.job, "group-%d", g);
      snprintf(ri.source, sizeof ri.source, "emulated");
      ri.cap_w = 200 + 100 * c;
      ri.gpus = gpus;
      if (pfi_store_run_begin(st, &ri, &err) < 0)
        goto fail;
      for (int k = 1; k <= intervals; k++) {
        if (k % batch == 1 % batch && pfi_store_begin(st, &err) < 0)
          goto fail;
        for (int u = 0; u < gpus; u++) {
          struct pfi_sample s;
          memset(&s, 0, sizeof s);
          s.t_s = 5.0 * k;
          for (int f = 0; f < PFI_FIELD__COUNT; f++)
            s.v[f] = 100.0 + f + u + 0.001 * k;
          s.valid = (1u << PFI_FIELD__COUNT) - 1;
          if (pfi_store_add_sample(st, ri.id, (unsigned)u, &s, &err) < 0)
            goto fail;
          rows++;
        }
        struct pfi_step sp = {5.0 * k, 5.0 * k, 1e6 * k, 5e4, k, 2.0, 0.4};
        if (pfi_store_add_step(st, ri.id, &sp, &err) < 0 ||
            ((k % batch == 0 || k == intervals) &&
             pfi_store_commit(st, &err) < 0))
          goto fail;
      }
      if (pfi_store_run_end(st, ri.id, PFI_RUN_COMPLETE, 1800, 0, &err) < 0)
        goto fail;
    }
  double dt = now_s() - t0, dc = cpu_s() - c0;
  pfi_store_close(st);
  printf("bench_store: %d runs, %ld sample rows (%d fields each), %d "
         "interval(s) per transaction: %.2f s CPU, %.0f rows/s of CPU; "
         "%.2f s wall, %.0f rows/s wall\n",
         groups * caps, rows, PFI_FIELD__COUNT, batch, dc, rows / dc, dt,
         rows / dt);
  if (own) {
    char p2[300];
    unlink(path);
    snprintf(p2, sizeof p2, "%s-wal", path);
    unlink(p2);
    snprintf(p2, sizeof p2, "%s-shm", path);
    unlink(p2);
  }
  return 0;
fail:
  fprintf(stderr, "bench_store: %s\n", err.msg);
  pfi_store_close(st);
  return 1;
}
