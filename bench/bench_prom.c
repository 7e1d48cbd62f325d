/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Throughput of the Prometheus text parser.
 *
 *   bench_prom [MB]            scrapes shaped like a dcgm-exporter endpoint
 *                              of an 8-GPU node (HELP/TYPE lines, one sample
 *                              per GPU for each of 20 DCGM fields, 3 of them
 *                              unknown to pfi, the label set of the real
 *                              sample in data/dcgm/ plus Kubernetes labels),
 *                              MB of text in all (default 64)
 *   bench_prom --write FILE    writes that one scrape to FILE
 *   bench_prom FILE [REPEAT]   parses FILE REPEAT times (default 1)
 *   bench_prom --fleet NODES   one scrape of NODES nodes x 8 GPUs x 40
 *                              fields (20 known, 20 not), built in memory
 *
 * Prints bytes, CPU seconds of the parsing alone (this process's CPU
 * clock, so that other work on the machine does not count) and wall
 * seconds, MB/s from the CPU time, and the numbers a peer can check:
 * GPUs, sample lines, the sum of DCGM_FI_DEV_POWER_USAGE.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfi/prom.h"

static const char *const metrics[] = {"DCGM_FI_DEV_SM_CLOCK",
                                      "DCGM_FI_DEV_MEM_CLOCK",
                                      "DCGM_FI_DEV_GPU_TEMP",
                                      "DCGM_FI_DEV_POWER_USAGE",
                                      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                      "DCGM_FI_DEV_GPU_UTIL",
                                      "DCGM_FI_DEV_MEM_COPY_UTIL",
                                      "DCGM_FI_DEV_FB_USED",
                                      "DCGM_FI_DEV_FB_FREE",
                                      "DCGM_FI_DEV_XID_ERRORS",
                                      "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                                      "DCGM_FI_PROF_SM_ACTIVE",
                                      "DCGM_FI_PROF_SM_OCCUPANCY",
                                      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                      "DCGM_FI_PROF_DRAM_ACTIVE",
                                      "DCGM_FI_PROF_PCIE_TX_BYTES",
                                      "DCGM_FI_PROF_PCIE_RX_BYTES",
                                      "DCGM_FI_PROF_NVLINK_TX_BYTES",
                                      "DCGM_FI_PROF_NVLINK_RX_BYTES",
                                      "DCGM_FI_DEV_POWER_VIOLATION"};
#define NMETRICS (sizeof metrics / sizeof metrics[0])

static double now_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Appends text to a growing buffer. */
struct buf {
  char *s;
  size_t n, cap;
};
static int put(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int put(struct buf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (k < 0)
      return -1;
    if ((size_t)k < b->cap - b->n) {
      b->n += (size_t)k;
      return 0;
    }
    size_t nc = b->cap ? 2 * b->cap : 1 << 20;
    while (nc - b->n <= (size_t)k)
      nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns)
      return -1;
    b->s = ns;
    b->cap = nc;
  }
}

/* One node's scrape: `fields` fields (the 20 above, then made-up names
 * unknown to pfi) x 8 GPUs. */
static int node_scrape(struct buf *b, int node, int fields) {
  for (int m = 0; m < fields; m++) {
    char name[64];
    if (m < (int)NMETRICS)
      snprintf(name, sizeof name, "%s", metrics[m]);
    else
      snprintf(name, sizeof name, "DCGM_FI_PROF_EXTRA_%02d", m);
    if (put(b, "# HELP %s DCGM field.\n# TYPE %s gauge\n", name, name) < 0)
      return -1;
    for (int g = 0; g < 8; g++)
      if (put(b,
              "%s{gpu=\"%d\",UUID=\"GPU-22dbdd79-f55a-92a8-aa39-%06d%06d\","
              "pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\","
              "modelName=\"NVIDIA H200\",Hostname=\"node-%05d\","
              "DCGM_FI_DRIVER_VERSION=\"580.105.08\",container=\"trainer\","
              "namespace=\"ml\",pod=\"train-7f9c\"} %.6f\n",
              name, g, node, g, 0x53 + g, g, node,
              123.456 + g * 7.5 + m + (node % 97)) < 0)
        return -1;
  }
  return 0;
}

static int report(const char *what, const char *s, size_t n, long repeat) {
  struct pfi_error err;
  long gpus = 0, samples = 0;
  double power = 0;
  double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID), w0 = now_s(CLOCK_MONOTONIC);
  for (long i = 0; i < repeat; i++) {
    struct pfi_prom_gpu *g = NULL;
    struct pfi_prom_stats st;
    int r = pfi_prom_parse(what, s, n, &g, &st, &err);
    if (r < 0) {
      fprintf(stderr, "bench_prom: %s:%ld:%ld: %s\n", err.file, err.line,
              err.column, err.msg);
      return 1;
    }
    gpus = r;
    samples = st.samples;
    power = 0;
    for (int k = 0; k < r; k++)
      if (g[k].s.valid & (1u << PFI_FIELD_POWER))
        power += g[k].s.v[PFI_FIELD_POWER];
    free(g);
  }
  double cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  double wall = now_s(CLOCK_MONOTONIC) - w0;
  double mb = (double)n * (double)repeat / 1e6;
  printf("bytes %zu repeat %ld cpu_s %.6f mb_s %.3f gpus %ld samples %ld "
         "power_sum %.6f wall_s %.6f\n",
         n, repeat, cpu, mb / (cpu > 0 ? cpu : 1e-9), gpus, samples, power,
         wall);
  return 0;
}

int main(int argc, char **argv) {
  struct buf b = {0};
  if (argc > 1 && strcmp(argv[1], "-h") == 0) {
    puts("usage: bench_prom [MB] | --write FILE | FILE [REPEAT] | --fleet "
         "NODES");
    return 0;
  }
  if (argc > 2 && strcmp(argv[1], "--fleet") == 0) {
    int nodes = atoi(argv[2]);
    if (nodes < 1)
      return 2;
    for (int k = 0; k < nodes; k++)
      if (node_scrape(&b, k, 40) < 0)
        return 1;
    int rc = report("fleet", b.s, b.n, 1);
    free(b.s);
    return rc;
  }
  if (node_scrape(&b, 17, (int)NMETRICS) < 0)
    return 1;
  if (argc > 2 && strcmp(argv[1], "--write") == 0) {
    FILE *fp = fopen(argv[2], "w");
    if (!fp || fwrite(b.s, 1, b.n, fp) != b.n || fclose(fp) != 0) {
      perror(argv[2]);
      return 1;
    }
    free(b.s);
    return 0;
  }
  char *end;
  double total_mb = argc > 1 ? strtod(argv[1], &end) : 64;
  if (argc > 1 && (end == argv[1] || *end)) {
    /* A file. */
    FILE *fp = fopen(argv[1], "rb");
    if (!fp) {
      perror(argv[1]);
      return 1;
    }
    b.n = 0;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) {
      if (b.cap - b.n < got + 1) {
        size_t nc = b.cap ? 2 * b.cap : 1 << 20;
        while (nc - b.n < got + 1)
          nc *= 2;
        char *ns = realloc(b.s, nc);
        if (!ns)
          return 1;
        b.s = ns;
        b.cap = nc;
      }
      memcpy(b.s + b.n, chunk, got);
      b.n += got;
    }
    fclose(fp);
    long repeat = argc > 2 ? atol(argv[2]) : 1;
    int rc = report(argv[1], b.s, b.n, repeat < 1 ? 1 : repeat);
    free(b.s);
    return rc;
  }
  if (!(total_mb > 0))
    total_mb = 64;
  long iters = (long)(total_mb * 1e6 / (double)b.n) + 1;
  int rc = report("bench", b.s, b.n, iters);
  free(b.s);
  return rc;
}
