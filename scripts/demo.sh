#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `make demo`: first a worked example on a real power-cap sweep, then the
# paper's whole campaign on the built-in emulator with its report.
set -euo pipefail
build=${1:-build}
out=${PFI_DEMO_OUT:-out}
pfi="$build/pfi"
[ -x "$pfi" ] || { echo "demo: $pfi not built (run make build)" >&2; exit 1; }

echo "== 1. PFI of the 8 real A100 workloads (measured: Emerald AI field"
echo "==    demonstration, data/real/dvfs_sweep.csv)"
"$pfi" index data/real/dvfs_sweep.csv \
  --map "job=Workload,cap_w=GPU power cap,power_w=total GPU power,tokens_per_s=throughput"

echo
echo "== 2. The paper's campaign on the EMULATED H200/H100 (calibrated to the"
echo "==    published PFI values; not measurements), analysis and report"
start=$(date +%s)
report=$("$pfi" reproduce --out "$out")
end=$(date +%s)
echo
echo "Report ($((end - start)) s): $report"
echo "Tables (CSV and JSON) are beside it in $out/."
