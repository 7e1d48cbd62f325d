#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Emulated jobs that are not in the published library, for out-of-sample
# tests of the telemetry model and the allocation strategies:
#
#   scripts/new-emulated-jobs.sh [-n N] [-s SEED] [-p PFI] OUTDIR
#   pfi simulate --curves LIB/curves.csv --features LIB/features.csv \
#       --test-curves OUTDIR/curves.csv --test-features OUTDIR/features.csv
#
# Each new job is drawn from the emulator's parameter space: two calibrated
# H200 library jobs of the same architecture and task are picked at random,
# and every numeric parameter of the new job (memory-bound and
# communication shares, SM power and its memory-segment weight, model size, sequence length, tokens per
# step, frame buffer) is the same random convex combination of theirs, so it
# stays inside the region the calibration populated. GPU count and cap grid
# come from the first parent. The new jobs are swept on the emulator through
# the ordinary harness (pfi sweep --emulate) and summarized by pfi trace
# summarize, exactly as the library's own curves and features are. Everything
# here is EMULATED. Same N and seed, same files.
set -euo pipefail
n=20
seed=1
PFI=${PFI:-pfi}
while getopts "n:s:p:" o; do
  case $o in
  n) n=$OPTARG ;;
  s) seed=$OPTARG ;;
  p) PFI=$OPTARG ;;
  *) echo "usage: $0 [-n N] [-s SEED] [-p PFI] OUTDIR" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-n N] [-s SEED] [-p PFI] OUTDIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")/.." && pwd)
data=${PFI_DATA:-$here/data}
lib=$data/jobs/jobs.csv
[ -r "$lib" ] || { echo "$0: no job library at $lib (set PFI_DATA)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "$0: python3 is needed" >&2; exit 1; }
mkdir -p "$out/data/jobs"
cp "$data"/jobs/*.csv "$out/data/jobs/" 2>/dev/null || true
python3 - "$lib" "$out/data/jobs/jobs.csv" "$n" "$seed" >"$out/new-jobs.txt" <<'PY'
import csv, random, sys
src, dst, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = list(csv.DictReader(open(src, newline="")))
fields = list(rows[0].keys())
lib = [r for r in rows if r["profile"] == "h200"]
mix = [f for f in ["params_b", "active_b", "seq_len", "tokens_per_step",
                   "fb_gib", "mem_share", "comm_share", "sm_power_w",
                   "mem_sm_weight"] if f in fields]
# Columns the calibration wrote about the parent (its emulated PFI, power,
# throughput...) do not describe the new job: left empty.
derived = [f for f in fields if f in ("pfi_emulated", "pfi_coarse_emulated",
           "uncapped_power_w", "tmax_tokens_per_s", "mfu", "calibration_seed")]
classes = sorted({(r["arch"], r["task"]) for r in lib})
rng = random.Random(seed)
new = []
for k in range(n):
    arch, task = classes[k % len(classes)]
    pool = [r for r in lib if (r["arch"], r["task"]) == (arch, task)]
    a, b = rng.choice(pool), rng.choice(pool)
    w = rng.random()
    r = dict(a)
    for f in mix:
        r[f] = "%.6g" % (w * float(a[f]) + (1 - w) * float(b[f]))
    r["id"] = "new-%s-%s-%02d-x%s" % (arch, task, k, a["gpus"])
    r["source"] = "emulated"
    r["model"] = "new (%s/%s)" % (a["model"], b["model"])
    r["variant"] = "new job, weight %.3f" % w
    for f in derived:
        r[f] = ""
    r["pfi_published"] = ""
    r["pfi_coarse_published"] = ""
    new.append(r)
with open(dst, "w", newline="") as fp:
    wr = csv.DictWriter(fp, fieldnames=fields, lineterminator="\n")
    wr.writeheader()
    wr.writerows(new)
for r in new:
    caps = r["caps"].replace(";", ",").replace(" ", ",").strip(",")
    print(r["id"], caps)
PY
rm -f "$out/new.db" "$out/sweep.log"
while read -r id caps; do
  PFI_DATA="$out/data" "$PFI" sweep --emulate "$id" --caps "$caps" \
    --db "$out/new.db" --seed "$seed" >/dev/null 2>>"$out/sweep.log" ||
    { tail -n 5 "$out/sweep.log" >&2; exit 1; }
done <"$out/new-jobs.txt"
PFI_DATA="$out/data" "$PFI" trace summarize "$out/new.db" --out "$out" \
  >/dev/null 2>>"$out/sweep.log" || { tail -n 5 "$out/sweep.log" >&2; exit 1; }
echo "$0: $(wc -l <"$out/new-jobs.txt") emulated jobs: $out/curves.csv, $out/features.csv"
