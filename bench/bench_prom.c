/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Throughput of the Prometheus text parser, MB/s, on scrapes shaped like a
 * dcgm-exporter endpoint of an 8-GPU node: HELP/TYPE lines and one sample
 * per GPU for each of 20 DCGM fields (3 of them unknown to pfi), with the
 * label set of the real sample in data/dcgm/ plus Kubernetes labels.
 * Usage: bench_prom [MB] (default 64 MB of text in total).
 */
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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  double total_mb = argc > 1 ? atof(argv[1]) : 64;
  if (!(total_mb > 0))
    total_mb = 64;
  /* One scrape. */
  size_t cap = 1 << 20, n = 0;
  char *s = malloc(cap);
  if (!s)
    return 1;
  for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
    n += (size_t)snprintf(s + n, cap - n,
                          "# HELP %s DCGM field.\n# TYPE %s gauge\n",
                          metrics[m], metrics[m]);
    for (int g = 0; g < 8; g++)
      n += (size_t)snprintf(
          s + n, cap - n,
          "%s{gpu=\"%d\",UUID=\"GPU-22dbdd79-f55a-92a8-aa39-322198e72e%02d\","
          "pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName="
          "\"NVIDIA H200\",Hostname=\"node-017\",DCGM_FI_DRIVER_VERSION="
          "\"580.105.08\",container=\"trainer\",namespace=\"ml\",pod="
          "\"train-7f9c\"} %.6f\n",
          metrics[m], g, g, 0x53 + g, g, 123.456 + g * 7.5 + m);
  }
  long iters = (long)(total_mb * 1e6 / (double)n) + 1;
  struct pfi_error err;
  long gpus = 0;
  double t0 = now_s();
  for (long i = 0; i < iters; i++) {
    struct pfi_prom_gpu *g = NULL;
    struct pfi_prom_stats st;
    int r = pfi_prom_parse("bench", s, n, &g, &st, &err);
    if (r < 0) {
      fprintf(stderr, "bench_prom: parse failed\n");
      return 1;
    }
    gpus += r;
    free(g);
  }
  double dt = now_s() - t0;
  double mb = (double)n * (double)iters / 1e6;
  printf("bench_prom: %ld scrapes of %zu bytes (8 GPUs x 20 fields), %.1f MB "
         "in %.3f s: %.0f MB/s, %.0f scrapes/s (%ld GPU samples)\n",
         iters, n, mb, dt, mb / dt, (double)iters / dt, gpus);
  free(s);
  return 0;
}
