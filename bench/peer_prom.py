#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The peer of pfi's Prometheus text parser: prometheus_client's
text_string_to_metric_families on the same scrape text, every family and
sample consumed. Prints the text's size, the CPU seconds of parsing, MB/s,
and the numbers to compare with pfi's: GPU samples of the known DCGM
fields per (Hostname, gpu) and the sum of DCGM_FI_DEV_POWER_USAGE.

usage: peer_prom.py FILE [REPEAT]
"""
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

KNOWN = {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS",
         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_SM_CLOCK",
         "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
         "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
         "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
         "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_PROF_NVLINK_TX_BYTES",
         "DCGM_FI_PROF_NVLINK_RX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES",
         "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
         "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "DCGM_FI_DEV_FB_USED",
         "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_VIOLATION"}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    text = open(sys.argv[1]).read()
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    gpus, power, samples = set(), 0.0, 0
    t0 = time.process_time()
    for _ in range(repeat):
        gpus, power, samples = set(), 0.0, 0
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                samples += 1
                if s.name in KNOWN and "gpu" in s.labels:
                    gpus.add((s.labels.get("Hostname", ""), s.labels["gpu"]))
                    if s.name == "DCGM_FI_DEV_POWER_USAGE":
                        power += s.value
    dt = time.process_time() - t0
    mb = len(text.encode()) * repeat / 1e6
    print("bytes %d repeat %d cpu_s %.6f mb_s %.3f gpus %d samples %d "
          "power_sum %.6f" % (len(text.encode()), repeat, dt, mb / dt,
                              len(gpus), samples, power))


if __name__ == "__main__":
    main()
