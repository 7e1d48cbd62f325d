#!/usr/bin/env bash
# `make demo`: a worked example on the real A100 power-cap sweep.
set -euo pipefail
build=${1:-build}
echo "== PFI of the 8 real A100 workloads (Emerald AI field demonstration, data/real/dvfs_sweep.csv)"
"$build/pfi" index data/real/dvfs_sweep.csv \
  --map "job=Workload,cap_w=GPU power cap,power_w=total GPU power,tokens_per_s=throughput"
