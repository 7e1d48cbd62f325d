#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The controller's validation (docs/control.md "Validation"): the default
# EMULATED cluster (125 x 8 H200, out-of-sample jobs), a 3-hour event at
# 75 % of the baseline, seeds 1..N (default 10), each also run with
# equal-weight cuts; prints each measure against its goal. Usage:
#   bench/validate_control.sh [BUILD_DIR [SEEDS [JSON [ARG...]]]]
# (about 45 s a seed). JSON: also keep pfi control's JSON there ('' for
# none). ARG...: more pfi control arguments, after the defaults (so that
# they win), e.g. --margin 0.003, or --hold 30m for a shorter event.
# PFI_CLUSTER: the cluster instead of 'default', e.g. announce_s=10 (the
# trainers announce their pauses 10 s ahead).
set -euo pipefail
B=${1:-build}
N=${2:-10}
J=${3:-}
shift $(($# < 3 ? $# : 3))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$B/pfi" control --emulate "${PFI_CLUSTER:-default}" --target 75% --seeds "$N" --format json \
  "$@" >"$out"
if [ "$#" -gt 0 ]; then echo "pfi control arguments added: $*"; fi
if [ -n "$J" ]; then cp "$out" "$J"; fi
/usr/bin/python3 - "$out" <<'PY'
import json, os, statistics as st, sys
d = json.load(open(sys.argv[1]))
rs = [r["controller"] for r in d["runs"]]
w = [r["within_1pct"] for r in rs]
a = [r["seconds_above_1pct"] for r in rs]
pk = [r["recovery_peak_w"] / r["baseline_w"] for r in rs]
print(f"EMULATED: {len(rs)} seeds, {d['gpus']} GPUs, target {d['target']}, cluster {os.environ.get('PFI_CLUSTER', 'default')}, "
      f"objective {d.get('objective', 'throughput')} (the gap closed is in its value)")
print(f"within 1 % of the target after the ramp: mean {st.mean(w):.3f} "
      f"(min {min(w):.3f}, max {max(w):.3f}); goal >= 0.99 in every seed")
print(f"  per seed {', '.join(f'{x:.4f}' for x in w)}")
p99 = [r["tracking_p99"] for r in rs]
print(f"tracking error after the ramp: mean {st.mean(r['tracking_mean'] for r in rs):.4f}, "
      f"p99 {st.mean(p99):.4f} (max {max(p99):.4f})")
sa = [r["seconds_above"] for r in rs]
print(f"seconds above the target: mean {st.mean(sa):.1f} a seed (per seed "
      f"{', '.join(f'{x:.0f}' for x in sa)}; no goal)")
print(f"seconds above target + 1 %: {sum(a):.0f} over all seeds "
      f"(per seed {', '.join(f'{x:.0f}' for x in a)}); goal 0")
print(f"gap closed, whole event: {d['gap_closed_mean']:.3f} +- "
      f"{d['gap_closed_ci95']:.3f} (95 % t); goal >= 0.90")
print(f"gap closed after 10 min: {d['gap_closed_after_10min_mean']:.3f} +- "
      f"{d['gap_closed_after_10min_ci95']:.3f}; goal >= 0.95")
print(f"recovery peak / baseline: max {max(pk):.4f}, mean {st.mean(pk):.4f}, "
      f"{sum(p > 1 for p in pk)} of {len(pk)} seeds above; goal <= 1")
print(f"gap closed against the oracle held to the same tiers as the "
      f"controller and equal-weight cuts: "
      f"{d['gap_closed_tiers_mean']:.3f} +- {d['gap_closed_tiers_ci95']:.3f}, "
      f"after 10 min {d['gap_closed_tiers_after_10min_mean']:.3f} +- "
      f"{d['gap_closed_tiers_after_10min_ci95']:.3f} (the goals 0.90 / 0.95 "
      f"held to an oracle that keeps the tiers)")
print(f"share of the gap above that the oracle held to the tiers closes "
      f"itself: {d['oracle_tiers_gap_share_mean']:.3f} +- "
      f"{d['oracle_tiers_gap_share_ci95']:.3f} (the most a tier-keeping "
      f"allocation could close of it)")
print(f"rollbacks {sum(r['rollbacks'] for r in rs)}, anomalies "
      f"{sum(r['anomalies'] for r in rs)}, tier violations "
      f"{st.mean(r['tier_violation_job_s'] for r in rs):.0f} job-s a seed, "
      f"cap changes {st.mean(r['cap_changes_per_gpu_h'] for r in rs):.0f} per GPU-hour")
rec = [r["recovery_s"] for r in rs]
done = [x for x in rec if x is not None]
print(f"caps all back within the 20-minute tail: {len(done)} of {len(rec)} seeds; "
      f"caps all back after (s, per seed): "
      f"{', '.join('-' if x is None else f'{x:.0f}' for x in rec)}")
PY
