/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Benchmark: parse and index a large curves file.
 *
 * usage: bench_index [FILE [JOBS]]
 *
 * Writes a synthetic curves file of JOBS jobs (default 1,000,000) x 6 caps
 * (200..700 W) to FILE (default: a temporary file under /tmp, removed at
 * the end; a FILE given is kept), then times reading it with
 * pfi_curveset_read() and computing all three PFI definitions of every job
 * with pfi_index_compute(). Prints MB/s and jobs/s measured with
 * CLOCK_MONOTONIC. The curves are synthetic (throughput ~ cap^alpha with
 * per-job alpha, scale and noise): they exercise the code, they are not
 * measurements.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pfi/curve.h"
#include "pfi/index.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A fixed-seed generator, so that every run writes the same bytes. */
static unsigned long long rng_state = 0x2545F4914F6CDD1DULL;
static double uniform01(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static int generate(const char *path, long jobs) {
  FILE *fp = fopen(path, "w");
  if (!fp) {
    perror(path);
    return -1;
  }
  static char iobuf[1 << 20];
  setvbuf(fp, iobuf, _IOFBF, sizeof iobuf);
  fputs("job,cap_w,power_w,tokens_per_s,gpus\n", fp);
  static const int caps[6] = {200, 300, 400, 500, 600, 700};
  for (long j = 0; j < jobs; j++) {
    int gpus = 8 << (int)(uniform01() * 3); /* 8, 16 or 32 */
    double tmax = 1e4 * (1.0 + 9.0 * uniform01());
    /* Throughput ~ cap^alpha: a ratio PFI near 1/alpha, 1.1 to 2.9, the
     * range the paper reports. */
    double alpha = 0.35 + 0.55 * uniform01();
    /* Rows of a job in descending cap order: the reader sorts them. */
    for (int k = 5; k >= 0; k--) {
      double frac = caps[k] / 700.0;
      double p = gpus * caps[k] * (0.92 + 0.05 * uniform01());
      double t = tmax * pow(frac, alpha) * (0.998 + 0.004 * uniform01());
      fprintf(fp, "job%07ld,%d,%.2f,%.3f,%d\n", j, caps[k], p, t, gpus);
    }
  }
  if (fclose(fp) != 0) {
    perror(path);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  char tmpl[] = "/tmp/pfi-bench-curves-XXXXXX";
  const char *path = NULL;
  int remove_after = 0;
  long jobs = 1000000;
  if (argc > 1 &&
      (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: bench_index [FILE [JOBS]]\n");
    return 0;
  }
  if (argc > 1) {
    path = argv[1];
  } else {
    int fd = mkstemp(tmpl);
    if (fd < 0) {
      perror("mkstemp");
      return 1;
    }
    close(fd);
    path = tmpl;
    remove_after = 1;
  }
  if (argc > 2) {
    char *end;
    jobs = strtol(argv[2], &end, 10);
    if (*end || jobs < 1) {
      fprintf(stderr, "bench_index: JOBS must be a positive integer\n");
      return 2;
    }
  }
  fprintf(stderr, "bench_index: writing %ld jobs x 6 caps to %s\n", jobs, path);
  if (generate(path, jobs) < 0)
    return 1;
  FILE *fp = fopen(path, "rb");
  if (!fp || fseek(fp, 0, SEEK_END) != 0) {
    perror(path);
    return 1;
  }
  double mb = (double)ftell(fp) / 1e6;
  fclose(fp);

  struct pfi_curveset set;
  struct pfi_error err;
  double t0 = now_s();
  if (pfi_curveset_read(&set, path, NULL, &err) < 0) {
    fprintf(stderr, "bench_index: %s:%ld:%ld: %s\n", err.file, err.line,
            err.column, err.msg);
    return 1;
  }
  double t1 = now_s();
  double sum = 0;
  size_t defined = 0;
  for (size_t i = 0; i < set.n; i++) {
    struct pfi_index ix;
    if (pfi_index_compute(&set.c[i], &ix, &err) < 0) {
      fprintf(stderr, "bench_index: %s\n", err.msg);
      return 1;
    }
    if (ix.pfi_defined) {
      sum += ix.pfi;
      defined++;
    }
    pfi_index_release(&ix);
  }
  double t2 = now_s();
  size_t n = set.n;
  pfi_curveset_release(&set);
  if (remove_after)
    unlink(path);

  printf("bench_index: %zu jobs x 6 caps, %.1f MB (synthetic curves)\n", n, mb);
  printf("  parse:          %7.3f s  %8.1f MB/s  %10.0f jobs/s\n", t1 - t0,
         mb / (t1 - t0), (double)n / (t1 - t0));
  printf("  index:          %7.3f s  %8s       %10.0f jobs/s\n", t2 - t1, "",
         (double)n / (t2 - t1));
  printf("  parse + index:  %7.3f s  %8.1f MB/s  %10.0f jobs/s\n", t2 - t0,
         mb / (t2 - t0), (double)n / (t2 - t0));
  printf("  (mean ratio PFI over %zu defined jobs: %.6f)\n", defined,
         defined ? sum / (double)defined : 0.0);
  return 0;
}
