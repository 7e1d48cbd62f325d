#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Decisions on the monotone fit (the default, --curve monotone) against the
# raw points (--curve raw): a hand-made curve whose power and throughput
# fall at the top cap, worked out by hand; the Phoenix A100 columns of
# docs/operator.md's before/after table, computed; the shipped real sets
# (Zeus V100 and A40), where no default capacity quote or ladder step has a negative
# loss and no allocation keeps more than all of a job's throughput (both
# happen on the raw points); and --true-pfi with a job whose PFI is
# undefined.
. "$(dirname "$0")/lib.sh"

M="job=dataset+network+batch_size+optimizer,cap_w=power_limit,power_w=average_power,tokens_per_s=1/time_per_epoch"
ZD=data/real/zeus-nsdi23

# Caps 100, 200, 300 W drew 90, 120, 110 W at 50, 80, 70 tokens/s. The
# isotonic fit pools the last two: power 90, 115, 115 and throughput 50,
# 75, 75, so the job spans [90, 115] W through (90, 50) and (115, 75); the
# cap at 115 W is 200 W (the first cap the fit reaches it at). A 10 % cut
# of 115 W leaves 103.5 W: 50 + 25 * 13.5 / 25 = 63.5 tokens/s, 63.5 / 75
# = 0.846667 retained, cap 100 + 100 * 13.5 / 25 = 154 W. On the raw
# points the top is the 300 W point (110 W, 70): 99 W, 50 + 20 * 9 / 20 =
# 59 tokens/s, 0.842857, and a cap read off the raw points by power.
cat >"$T/c.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s
a,100,90,50
a,200,120,80
a,300,110,70
CSV
"$PFI" allocate --curves "$T/c.csv" --cut 10% --objective throughput --format csv >"$T/m.csv" 2>"$T/err" ||
  fail "allocate, monotone: $(cat "$T/err")"
grep -q '^a,103.500000,154.000000,63.500000,0.846667,' "$T/m.csv" || fail "monotone fit: $(cat "$T/m.csv")"
grep -q '1 of 1 curves fall as the cap rises' "$T/err" || fail "no note of the fit: $(cat "$T/err")"
"$PFI" allocate --curves "$T/c.csv" --cut 10% --objective throughput --curve raw --format csv >"$T/r.csv" ||
  fail "allocate --curve raw"
grep -q '^a,99.000000,[0-9.]*,59.000000,0.842857,' "$T/r.csv" || fail "raw points: $(cat "$T/r.csv")"
"$PFI" allocate --curves "$T/c.csv" --cut 10% --curve flat >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- "--curve: 'flat': expected monotone or raw" "$T/err" || fail "bad --curve: $(cat "$T/err")"
# The capacity of the same job: 25 W can be shed, and every step of the
# ladder loses (75 - (50 + 25 (1 - s/25))) / 75 = s / 75 of the fit.
"$PFI" capacity --curves "$T/c.csv" --objective throughput --steps 5 --format csv >"$T/cap.csv" 2>/dev/null ||
  fail "capacity on the hand-made curve"
python3 - "$T/cap.csv" <<'PY' || fail "capacity of the fit differs from the hand computation"
import csv, sys
bad = 0
for r in csv.DictReader(open(sys.argv[1])):
    if r["kind"] != "ladder": continue
    s = float(r["shed_w"])
    if abs(float(r["loss_frac"]) - s / 75) > 1e-9: print(r); bad += 1
sys.exit(1 if bad else 0)
PY

# The real sets: every default capacity ladder step and quote of every
# strategy loses nothing negative, and no allocation (oracle, equal, at
# cuts of 1 to 30 %) keeps more than all of a job's throughput or of the
# total; on the raw points both happen (the checks can fail).
check() { # FILE MODE -> number of violations on stdout
  local f=$1 mode=$2 v=0
  # (fail in this command substitution would not count: "error" instead)
  "$PFI" capacity --curves "$f" --map "$M" --curve "$mode" --steps 40 --format csv >"$T/q.csv" 2>/dev/null ||
    { echo "error: capacity $f $mode"; return; }
  v=$(python3 - "$T/q.csv" <<'PY'
import csv, sys
print(sum(1 for r in csv.DictReader(open(sys.argv[1])) if r["loss_frac"] and float(r["loss_frac"]) < 0))
PY
)
  for s in oracle equal; do
    for cut in 1% 5% 10% 30%; do
      "$PFI" allocate --curves "$f" --map "$M" --cut $cut --strategy $s --curve "$mode" --format csv >"$T/a.csv" 2>/dev/null ||
        { echo "error: allocate $f $s $cut $mode"; return; }
      v=$((v + $(awk -F, 'NR > 1 && $5 > 1 + 1e-12 { n++ } END { print n + 0 }' "$T/a.csv")))
    done
  done
  echo "$v"
}
for g in v100 a40; do
  n=$(check "$ZD/summary_power_$g.csv" monotone)
  [ "$n" = 0 ] || fail "$g: $n negative losses or retained shares above 1 under the default"
  n=$(check "$ZD/summary_power_$g.csv" raw)
  [ "$n" -gt 0 ] 2>/dev/null || fail "$g: the raw points show no negative loss or share above 1 (the check cannot fail)"
done

# The Phoenix A100 columns of docs/operator.md's before/after table (raw
# points, then the fit), computed with the commands the table names and
# compared with the page: curves that fall, negative ladder steps, the 1 %
# and 5 % quotes (oracle / equal, W, rounded) and the throughput the oracle
# keeps at a 1 % cut.
AM="job=Workload,cap_w=GPU power cap,power_w=total GPU power,tokens_per_s=throughput"
A=data/real/dvfs_sweep.csv
for mode in raw monotone; do
  "$PFI" capacity --curves "$A" --map "$AM" --curve "$mode" --steps 20 --format csv >"$T/a100_$mode.csv" 2>/dev/null ||
    fail "A100 capacity $mode"
  "$PFI" allocate --curves "$A" --map "$AM" --curve "$mode" --cut 1% --strategy oracle --objective throughput \
    --format csv >"$T/a100_alloc_$mode.csv" 2>"$T/a100_err_$mode" || fail "A100 allocate $mode"
done
python3 - "$T" docs/operator.md <<'PY' || fail "A100 columns of docs/operator.md differ from what pfi computes"
import csv, re, sys
t, doc = sys.argv[1], open(sys.argv[2]).read()
cols = []
for mode in ("raw", "monotone"):
    rows = list(csv.DictReader(open(f"{t}/a100_{mode}.csv")))
    neg = sum(1 for r in rows if r["kind"] == "ladder" and float(r["loss_frac"]) < 0)
    q = {(r["strategy"], float(r["loss_frac"])): float(r["shed_w"]) for r in rows if r["kind"] == "quote"}
    tot = [r for r in csv.DictReader(open(f"{t}/a100_alloc_{mode}.csv"))][-1]
    err = open(f"{t}/a100_err_{mode}").read()
    m = re.search(r"(\d+) of (\d+) curves fall", err)
    fall = f"{m.group(1)} of {m.group(2)}" if m else "0 of 8"
    cols.append([fall, str(neg),
                 "%.0f / %.0f W" % (q[("oracle", 0.01)], q[("equal", 0.01)]),
                 "%.0f / %.0f W" % (q[("oracle", 0.05)], q[("equal", 0.05)]),
                 "%.2f %%" % (100 * float(tot["retained"]))])
labels = ["curves that fall as the cap rises", "capacity ladder steps with a negative loss",
          "capacity quote at <= 1 % loss", "capacity quote at <= 5 % loss",
          "throughput the oracle keeps at a 1 % cut"]
for k, lab in enumerate(labels):
    line = next(l for l in doc.splitlines() if l.startswith("| " + lab))
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    want = [cols[0][k], cols[1][k]]
    assert cells[-2:] == want, (lab, cells[-2:], want)
PY

# --true-pfi with a job whose PFI is undefined (b draws 50 W at every cap:
# the cap never bound): pfi-aware counts it as PFI 0, says so, exits 0.
cat >"$T/u.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s
a,100,100,60
a,200,200,100
b,100,50,40
b,200,50,40
c,100,90,80
c,200,150,100
CSV
"$PFI" allocate --curves "$T/u.csv" --cut 10% --strategy pfi-aware --true-pfi --format csv >"$T/o.csv" 2>"$T/err" ||
  fail "allocate --true-pfi with an undefined PFI: exit $? $(cat "$T/err")"
grep -q '1 job without a ratio PFI count as PFI 0, the least flexible.*: b (the cap never bound)' "$T/err" ||
  fail "undefined PFI not stated: $(cat "$T/err")"
grep -q '^b,50.000000,' "$T/o.csv" || fail "b not left at its power: $(cat "$T/o.csv")"
# pfi simulate goes on past cuts some workloads cannot take (the A40 set:
# ten jobs' floors exceed 60 % of their uncapped power in every draw and
# 40 % in some) and says, per cut, what share of workloads could not.
"$PFI" simulate --curves "$ZD/summary_power_a40.csv" --map "$M" --workloads 50 --size 10 \
  --cuts 10,40,60 --strategies oracle,equal --format json >"$T/s.json" 2>"$T/err" ||
  fail "simulate past an infeasible cut: exit $? $(cat "$T/err")"
python3 - "$T/s.json" <<'PY' || fail "simulate: infeasible shares"
import json, sys
j = json.load(open(sys.argv[1]))
inf = j["infeasible_pct"]
assert inf[0] == 0 and 0 < inf[1] < 100 and inf[2] == 100, inf
# a share of 50 workloads is a multiple of 2 %
assert abs(inf[1] / 2 - round(inf[1] / 2)) < 1e-9, inf
for s in ("oracle", "equal"):
    g = j["strategies"][s]["gap_tokens_per_s_per_job"]
    assert g[0] is not None and g[1] is not None and g[2] is None, g
PY
"$PFI" simulate --curves "$ZD/summary_power_a40.csv" --map "$M" --workloads 50 --size 10 \
  --cuts 10,40,60 --strategies oracle,equal >"$T/s.txt" 2>/dev/null || fail "simulate table past an infeasible cut"
grep -q "could not take the cut.*10 %: 0.0 %, 40 %: [0-9.]* %, 60 %: 100.0 %" "$T/s.txt" ||
  fail "simulate table: $(tail -3 "$T/s.txt")"
exit $((fails > 0))
