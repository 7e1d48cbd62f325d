#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Cap plans: pfi allocate --plan on the shipped Zeus V100 traces (every
# number of the plan recomputed here by a python reference of the equal
# strategy and the curves' interpolation), pfi cap --plan on the emulator,
# all or none, and pfi restore putting each GPU back to the limit it had
# before (not the default).
. "$(dirname "$0")/lib.sh"
export PFI_EMU_STATE="$T/emu"

M="job=dataset+network+batch_size+optimizer,cap_w=power_limit,power_w=average_power,tokens_per_s=1/time_per_epoch"
Z=data/real/zeus-nsdi23/summary_power_v100.csv

# The total retained below sums raw throughput: --objective throughput.
# The reference reads the raw points: --curve raw.
"$PFI" allocate --curves "$Z" --map "$M" --cut 10% --strategy equal --objective throughput --curve raw --plan "$T/z.plan" \
  --format csv >"$T/alloc.csv" || fail "allocate --plan on Zeus V100"
python3 - "$Z" "$T/z.plan" "$T/alloc.csv" <<'PY' || fail "Zeus V100 plan differs from the reference"
import csv, sys
from collections import defaultdict
raw = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    k = "/".join([r["dataset"], r["network"], r["batch_size"], r["optimizer"]])
    raw[k].append((float(r["power_limit"]), float(r["average_power"]), 1 / float(r["time_per_epoch"])))
def interp(pts, x, col):   # by power, ties in cap order, clamped
    ps = sorted(range(len(pts)), key=lambda i: (pts[i][1], i))
    xs = [pts[i][1] for i in ps]; ys = [pts[i][col] for i in ps]
    if x <= xs[0]: return ys[0]
    if x >= xs[-1]: return ys[-1]
    for a in range(len(xs) - 1):
        if xs[a] < x <= xs[a + 1] or (x == xs[a + 1]):
            return ys[a] + (ys[a + 1] - ys[a]) * (x - xs[a]) / (xs[a + 1] - xs[a]) if xs[a + 1] > xs[a] else ys[a + 1]
jobs = {}
for k, v in raw.items():
    v.sort()
    lo, hi = sorted((v[0][1], v[-1][1]))
    jobs[k] = (lo, hi, v)
def f(k, x):   # throughput read off the problem's curve: points by power, first of equal powers
    lo, hi, v = jobs[k]
    seen, pts = set(), []
    for c, p, t in sorted(v, key=lambda q: q[1]):
        if p not in seen: seen.add(p); pts.append((p, t))
    x = min(max(x, lo), hi)
    if x <= pts[0][0]: return pts[0][1]
    if x >= pts[-1][0]: return pts[-1][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1: return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
H = sum(j[1] for j in jobs.values()); B = 0.9 * H
a, b = 0.0, 1.0
for _ in range(200):
    t = (a + b) / 2
    if sum(j[1] - min(j[1] - j[0], t * j[1]) for j in jobs.values()) > B: a = t
    else: b = t
power = {k: j[1] - min(j[1] - j[0], b * j[1]) for k, j in jobs.items()}
plan = {r["job"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert set(plan) == set(jobs)
bad = 0
def close(x, y, tol): return abs(x - y) <= tol * max(1.0, abs(y))
tt = tu = 0
for k, r in plan.items():
    P = power[k]; T = f(k, P); U = f(k, jobs[k][1])
    tt += T; tu += U
    cap = interp(jobs[k][2], P, 0)
    for name, want, tol in (("power_w", P, 1e-6), ("cap_w", cap, 1e-6), ("tokens_per_s", T, 1e-6),
                            ("uncapped_power_w", jobs[k][1], 1e-9), ("retained", T / U, 1e-6)):
        if not close(float(r[name]), want, tol): print(k, name, r[name], want); bad += 1
    if r["strategy"] != "equal" or float(r["cut"]) != 0.1 or r["unit"] != "1/time_per_epoch" or r["gpu_ids"] != "" or r["objective"] != "throughput":
        print(k, "plan header fields", r); bad += 1
tot = [r for r in csv.reader(open(sys.argv[3]))][-1]
if tot[0] != "TOTAL" or not close(float(tot[4]), tt / tu, 1e-6) or not close(float(tot[1]), B, 1e-6):
    print("total", tot, tt / tu, B); bad += 1
sys.exit(1 if bad else 0)
PY
# The table shows retained per job and in total.
"$PFI" allocate --curves "$Z" --map "$M" --cut 10% | grep -q '^total .*%$' || fail "table total retained"

# pfi-aware without PFI says what it needs and offers --true-pfi.
"$PFI" allocate --curves "$Z" --map "$M" --cut 10% --strategy pfi-aware >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- '--true-pfi' "$T/err" || fail "pfi-aware without features: $(cat "$T/err")"

# A plan for two jobs on GPUs 0 and 1 of the emulator.
grep -E '^dataset|^imagenet,resnet50,(64|128),' "$Z" >"$T/two.csv"
printf 'job,gpu_ids\nimagenet/resnet50/64/adadelta,0\nimagenet/resnet50/128/adadelta,1\n' >"$T/gpus.csv"
"$PFI" allocate --curves "$T/two.csv" --map "$M" --cut 4% --plan "$T/two.plan" --gpu-map "$T/gpus.csv" >/dev/null ||
  fail "allocate --plan --gpu-map"
awk -F, 'NR > 1 { print $1, $3 }' "$T/two.plan" | sort >"$T/ids"
printf 'imagenet/resnet50/128/adadelta 1\nimagenet/resnet50/64/adadelta 0\n' | cmp -s - "$T/ids" ||
  fail "gpu_ids in the plan: $(cat "$T/ids")"
caps() { "$PFI" devices --backend emu --format csv | awk -F, 'NR > 1 { printf "%s%s", s, $7; s = " " } END { print "" }'; }
# GPU 0 starts at 500 W (an operator's own limit), the others at 700 W.
"$PFI" cap --backend emu --gpus 0 --set 500 >/dev/null || fail "cap --set 500"
"$PFI" cap --backend emu --plan "$T/two.plan" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q 'needs --db' "$T/err" || fail "--plan without --db: $(cat "$T/err")"
"$PFI" cap --backend emu --plan "$T/two.plan" --db "$T/st.db" --format json >"$T/cap.json" || fail "cap --plan"
python3 - "$T/two.plan" "$T/cap.json" <<'PY' || fail "cap --plan set other limits than the plan's"
import csv, json, sys
want = {int(r["gpu_ids"]): round(float(r["cap_w"]) * 1000) / 1000 for r in csv.DictReader(open(sys.argv[1]))}
got = {o["index"]: o for o in json.load(open(sys.argv[2]))}
assert set(got) == set(want), (got, want)
for g, w in want.items():
    assert abs(got[g]["new_cap_w"] - w) < 1e-3, (g, got[g], w)
    assert got[g]["old_cap_w"] == (500.0 if g == 0 else 700.0), got[g]
PY
read -r c0 c1 c2 _ < <(caps)
near "$c1" "$(awk -F, '$3 == "1" { print $4 }' "$T/two.plan")" 0.001 "GPU 1 cap after the plan"
[ "$c2" = 700.0 ] || fail "GPU 2 changed: $c2"
# A running plan holds its GPUs: a sweep or another cap is refused.
"$PFI" cap --backend emu --gpus 1 --set 300 >/dev/null 2>"$T/err"
[ $? -ne 0 ] || fail "a GPU under a kept plan was changed by another pfi cap"
"$PFI" restore --db "$T/st.db" >/dev/null || fail "restore"
read -r c0 c1 c2 _ < <(caps)
[ "$c0 $c1 $c2" = "500.0 700.0 700.0" ] || fail "restore: caps $c0 $c1 $c2, expected 500.0 700.0 700.0"

# All or none: one cap below the emulated GPU's 200 W floor changes nothing.
awk -F, -v OFS=, 'NR == 3 { $4 = 150 } { print }' "$T/two.plan" >"$T/low.plan"
"$PFI" cap --backend emu --plan "$T/low.plan" --db "$T/st2.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "outside GPU .* range .*nothing was changed" "$T/err" || fail "low plan: $(cat "$T/err")"
read -r c0 c1 c2 _ < <(caps)
[ "$c0 $c1 $c2" = "500.0 700.0 700.0" ] || fail "low plan changed caps: $c0 $c1 $c2"

# Plan files are input: errors name file, line and column, exit 2.
expect_plan_err() {
  printf '%b' "$2" >"$T/bad.plan"
  "$PFI" cap --backend emu --plan "$T/bad.plan" --db "$T/st3.db" >/dev/null 2>"$T/err"
  local rc=$?
  [ $rc -eq 2 ] && grep -q -- "$1" "$T/err" || fail "bad plan ($1): status $rc, $(cat "$T/err")"
}
expect_plan_err "bad.plan:1:1: missing column 'cap_w'" 'job,gpu_ids\na,0\n'
expect_plan_err "bad.plan:3:1: field 'job': 'a' is planned twice" 'job,gpu_ids,cap_w\na,0,300\na,1,300\n'
expect_plan_err "bad.plan:2:7: field 'gpu_ids': 'x' is not a GPU list" 'job,cap_w,gpu_ids\na,300,x\n'
expect_plan_err "bad.plan:3:7: field 'gpu_ids': GPU 1 is also planned for job 'a' (line 2)" 'job,cap_w,gpu_ids\na,300,0-1\nb,300,1\n'
expect_plan_err "bad.plan:2:5: field 'cap_w': must be a power" 'job,gpu_ids,cap_w\na,0,-3\n'
expect_plan_err "bad.plan:2:1: job 'a' names no GPUs" 'job,gpu_ids,cap_w\na,,300\n'
expect_plan_err "bad.plan:2:1: job 'a': GPU 9 does not exist" 'job,gpu_ids,cap_w\na,9,300\n'
expect_plan_err "bad.plan:2:5: field 'gpu_ids': 2 GPUs for a job of 1" 'job,gpus,gpu_ids,cap_w\na,1,0;1,300\n'
read -r c0 c1 c2 _ < <(caps)
[ "$c0 $c1 $c2" = "500.0 700.0 700.0" ] || fail "a bad plan changed caps: $c0 $c1 $c2"
exit $((fails > 0))
