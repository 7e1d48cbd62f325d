#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The allocation objective (docs/predict-allocate.md, "The objective"):
#  - a plan does not depend on the unit a job reports in: the same three
#    jobs with ResNet in images/s and in kimages/s give byte-identical
#    plans, capacity quotes, operator-report tables and simulations under
#    the default objective, while the raw sum (--objective throughput)
#    moves ResNet's cap;
#  - a two-job split worked by hand under each objective, weights, the
#    minimum share and --budget;
#  - bad input: exit 2 with one line naming the field.
. "$(dirname "$0")/lib.sh"
expect_usage() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  head -n 1 "$T/err" | grep -Eq -- "$pat" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
}

# ---- unit-free by default -------------------------------------------------
# BERT and GPT report samples/s, ResNet images/s (u/) or kimages/s (k/):
# the same measurements, ResNet's divided by 1000 as text. GPT runs on 32
# GPUs, the others on 8.
mkdir -p "$T/u" "$T/k"
cat >"$T/u/c.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s,gpus
bert,150,1150,610,8
bert,200,1500,760,8
bert,250,1820,840,8
bert,300,2100,870,8
gpt,150,4600,95,32
gpt,200,6000,120,32
gpt,250,7300,133,32
gpt,300,8400,138,32
resnet,150,1180,9050,8
resnet,200,1540,11200,8
resnet,250,1860,12350,8
resnet,300,2150,12800,8
CSV
awk -F, 'BEGIN { OFS = "," } $1 == "resnet" { $4 = $4 / 1000 } { print }' "$T/u/c.csv" >"$T/k/c.csv"
grep -q '^resnet,150,1180,9.05,8$' "$T/k/c.csv" || fail "kimages/s fixture: $(cat "$T/k/c.csv")"
cat >"$T/f.csv" <<'CSV'
job,arch,task,gpus,dram_copy_product
bert,dense,ft,8,0.2
gpt,dense,pt,32,0.5
resnet,dense,pt,8,0.1
CSV
cp "$T/f.csv" "$T/u/f.csv"
cp "$T/f.csv" "$T/k/f.csv"
# drop_tokens FILE: a CSV without its throughput columns (the only ones
# in the job's unit).
drop_tokens() {
  python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [i for i, h in enumerate(rows[0]) if h not in ("tokens_per_s", "uncapped_tokens_per_s", "unit")]
for r in rows:
    print(",".join(r[i] for i in keep if i < len(r)))
PY
}
for d in u k; do
  for s in oracle equal pfi-aware pfi-curve; do
    "$PFI" allocate --curves "$T/$d/c.csv" --cut 10% --strategy $s --true-pfi --format csv \
      --plan "$T/$d/plan-$s.csv" >"$T/$d/a-$s.csv" || fail "allocate $s ($d)"
  done
  "$PFI" allocate --curves "$T/$d/c.csv" --cut 10% --objective throughput --format csv \
    --plan "$T/$d/plan-raw.csv" >"$T/$d/a-raw.csv" || fail "allocate raw ($d)"
  (cd "$T/$d" && "$PFI" capacity --curves c.csv --steps 10 >cap.txt) || fail "capacity ($d)"
  (cd "$T/$d" && "$PFI" capacity --curves c.csv --steps 10 --format csv >cap.csv) || fail "capacity csv ($d)"
  "$PFI" report --quiet --no-figures --out "$T/$d/rep" "$T/$d/c.csv" >/dev/null 2>"$T/$d/rep.err" ||
    fail "report ($d): $(cat "$T/$d/rep.err")"
  (cd "$T/$d" && "$PFI" simulate --curves c.csv --features f.csv --true-pfi --workloads 30 --size 6 \
    --cuts 10,20 --strategies oracle,equal,pfi-aware,pfi-curve --format json >sim.json) ||
    fail "simulate ($d)"
done
for s in oracle equal pfi-aware pfi-curve; do
  cmp -s <(drop_tokens "$T/u/a-$s.csv") <(drop_tokens "$T/k/a-$s.csv") ||
    fail "allocate $s: the plan depends on ResNet's unit: $(cat "$T/u/a-$s.csv") vs $(cat "$T/k/a-$s.csv")"
  cmp -s <(drop_tokens "$T/u/plan-$s.csv") <(drop_tokens "$T/k/plan-$s.csv") ||
    fail "plan $s depends on ResNet's unit"
done
# The raw sum does depend on it (the defect the default removes): ResNet's
# cap moves.
rcap() { awk -F, '$1 == "resnet" { print $3 }' "$1"; }
[ "$(rcap "$T/u/a-raw.csv")" != "$(rcap "$T/k/a-raw.csv")" ] ||
  fail "--objective throughput: ResNet's cap the same in images/s and kimages/s ($(rcap "$T/u/a-raw.csv"))"
[ "$(rcap "$T/u/a-raw.csv")" != "$(rcap "$T/u/a-oracle.csv")" ] ||
  fail "the default objective gave the raw sum's plan in images/s"
cmp -s "$T/u/cap.txt" "$T/k/cap.txt" || fail "capacity depends on ResNet's unit: $(diff "$T/u/cap.txt" "$T/k/cap.txt")"
cmp -s "$T/u/cap.csv" "$T/k/cap.csv" || fail "capacity CSV depends on ResNet's unit"
grep -q '^objective work: ' "$T/u/cap.txt" || fail "capacity does not name its objective: $(head -3 "$T/u/cap.txt")"
for t in cap_plan capacity capacity_quote; do
  [ -f "$T/u/rep/$t.csv" ] || { fail "report: no $t.csv ($(ls "$T/u/rep"))"; continue; }
  cmp -s "$T/u/rep/$t.csv" "$T/k/rep/$t.csv" || fail "report $t.csv depends on ResNet's unit: $(diff "$T/u/rep/$t.csv" "$T/k/rep/$t.csv")"
done
grep -q 'objective work' "$T/u/rep/report.html" || fail "report page does not name its objective"
cmp -s "$T/u/sim.json" "$T/k/sim.json" || fail "simulate depends on ResNet's unit: $(diff "$T/u/sim.json" "$T/k/sim.json" | head)"
grep -q '"objective": "work"' "$T/u/sim.json" || fail "simulate JSON does not name its objective"
# Replay of an event (the caps at each step, every total): the same bytes.
printf 'time,power_w\n0,13000\n600,13000\n1200,11000\n1800,10400\n2400,13000\n' >"$T/tgt.csv"
for d in u k; do
  (cd "$T/$d" && "$PFI" replay --curves c.csv --target "$T/tgt.csv" --baseline 13680 --show caps --format csv \
    >replay.csv && "$PFI" replay --curves c.csv --target "$T/tgt.csv" --baseline 13680 >replay.txt) ||
    fail "replay ($d)"
done
cmp -s "$T/u/replay.csv" "$T/k/replay.csv" || fail "replay caps depend on ResNet's unit: $(diff "$T/u/replay.csv" "$T/k/replay.csv" | head)"
cmp -s "$T/u/replay.txt" "$T/k/replay.txt" || fail "replay totals depend on ResNet's unit"
grep -q '^objective work' "$T/u/replay.txt" || fail "replay does not name its objective"
# The report's cap plan at a 10 % cut is the plan pfi allocate writes.
python3 - "$T/u/rep/cap_plan.csv" "$T/u/plan-oracle.csv" <<'PY' || fail "report cap table differs from pfi allocate's plan"
import csv, sys
rep = {r["job"]: r for r in csv.DictReader(open(sys.argv[1]))}
plan = {r["job"]: r for r in csv.DictReader(open(sys.argv[2]))}
bad = 0
for j, r in plan.items():
    a, b = float(rep[j]["cap_w_cut_10"]), float(r["cap_w"])
    if abs(a - b) > 0.05 + 1e-9:  # the report rounds to 0.1 W
        print(j, a, b); bad += 1
sys.exit(bad)
PY

# pfi grid capacity (the tier contract's quotes): the same bytes in
# images/s and kimages/s under the default, in table, CSV and JSON, with
# and without standard errors (the quotes' ranges); the raw sum's quote
# moves with ResNet's unit.
printf 'tier,max_loss\nflex,30%%\n' >"$T/tiers.csv"
for d in u k; do
  awk -F, 'BEGIN { OFS = "," } NR == 1 { print $0, "tokens_sd"; next } { print $0, $4 * 0.01 }' \
    "$T/$d/c.csv" >"$T/$d/csd.csv"
  for f in c csd; do
    for fmt in table csv json; do
      (cd "$T/$d" && "$PFI" grid capacity --curves $f.csv --tiers "$T/tiers.csv" --tier flex \
        --format $fmt >gc-$f.$fmt) || fail "grid capacity $f $fmt ($d)"
    done
  done
  (cd "$T/$d" && "$PFI" grid capacity --curves c.csv --tiers "$T/tiers.csv" --tier flex \
    --objective throughput --format csv >gc-raw.csv) || fail "grid capacity raw ($d)"
done
for f in c csd; do
  for fmt in table csv json; do
    cmp -s "$T/u/gc-$f.$fmt" "$T/k/gc-$f.$fmt" ||
      fail "grid capacity ($f, $fmt) depends on ResNet's unit: $(diff "$T/u/gc-$f.$fmt" "$T/k/gc-$f.$fmt")"
  done
done
! cmp -s "$T/u/gc-raw.csv" "$T/k/gc-raw.csv" ||
  fail "grid capacity --objective throughput: the same quotes in images/s and kimages/s"
! cmp -s "$T/u/gc-raw.csv" "$T/u/gc-c.csv" || fail "grid capacity: the default gave the raw sum's quotes"
grep -q 'objective work: ' "$T/u/gc-c.table" || fail "grid capacity does not name its objective: $(cat "$T/u/gc-c.table")"
grep -q '"objective": "work"' "$T/u/gc-c.json" || fail "grid capacity JSON does not name its objective"
# By hand, the two-job case below (A 32 GPUs 1000 -> 2000 W, 600 -> 1000;
# B 8 GPUs, 100 -> 400), a 100 % tier (no floor above the curves'):
# under work B sheds first (7.5e-4 x 8 = 0.006 per W against A's 0.0128)
# out of 40 GPU-equivalents: the 1 % quote (0.4) is 0.4 / 0.006 = 66.667 W,
# 5 % (2) 333.33 W; under throughput A's 0.4/W against B's 0.3/W, B first
# out of 1400: 1 % (14) is 46.667 W; with weights A 1, B 4 under work B's
# slope is 0.024 and A's still 0.0128: A first, out of 64: 1 % (0.64) is
# 50 W.
cat >"$T/two_gc.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s,gpus
A,100,1000,600,32
A,200,2000,1000,32
B,100,1000,100,8
B,200,2000,400,8
CSV
printf 'tier,max_loss\nall,100%%\n' >"$T/tall.csv"
printf 'job,weight\nA,1\nB,4\n' >"$T/w14.csv"
gcq() { # LOSS-PCT ARGS...: the shed quoted at that loss for a 15 min event
  local l=$1
  shift
  "$PFI" grid capacity --curves "$T/two_gc.csv" --tiers "$T/tall.csv" --tier all --duration 900 \
    --format csv "$@" | awk -F, -v l="$l" '$3 == l { print $4 }'
}
near "$(gcq 1)" 66.6667 0.01 "grid capacity work 1 %"
near "$(gcq 5)" 333.333 0.01 "grid capacity work 5 %"
near "$(gcq 1 --objective throughput)" 46.6667 0.01 "grid capacity throughput 1 %"
near "$(gcq 1 --weights "$T/w14.csv")" 50 0.01 "grid capacity weighted 1 %"
# Monotone fits: C's throughput falls at its top cap (800 -> 780); the fit
# pools the two to 790, so the default quotes C as the curve
# (1000, 500), (1500, 790), (2000, 790) written out by hand; --curve raw
# reads the fall as measured.
printf 'job,cap_w,power_w,tokens_per_s,gpus\nC,100,1000,500,8\nC,200,1500,800,8\nC,300,2000,780,8\n' >"$T/dip.csv"
printf 'job,cap_w,power_w,tokens_per_s,gpus\nC,100,1000,500,8\nC,200,1500,790,8\nC,300,2000,790,8\n' >"$T/dipfit.csv"
for f in dip dipfit; do
  "$PFI" grid capacity --curves "$T/$f.csv" --tiers "$T/tall.csv" --tier all --format csv >"$T/$f.gc" ||
    fail "grid capacity $f"
done
"$PFI" grid capacity --curves "$T/dip.csv" --tiers "$T/tall.csv" --tier all --curve raw --format csv \
  >"$T/dipraw.gc" || fail "grid capacity --curve raw"
cmp -s "$T/dip.gc" "$T/dipfit.gc" || fail "grid capacity: not the monotone fit: $(diff "$T/dip.gc" "$T/dipfit.gc")"
! cmp -s "$T/dip.gc" "$T/dipraw.gc" || fail "grid capacity --curve raw: the fit's quotes"
expect_usage "--curve: 'smooth': expected monotone or raw" grid capacity --curves "$T/dip.csv" --tiers "$T/tall.csv" --tier all --curve smooth
expect_usage "unknown objective 'tokens'" grid capacity --curves "$T/dip.csv" --tiers "$T/tall.csv" --tier all --objective tokens

# ---- a two-job split worked by hand ---------------------------------------
# A: 32 GPUs, 1000 W -> 2000 W, 600 -> 1000 units/s (slope 0.4/W, T 1000).
# B: 8 GPUs, 1000 W -> 2000 W, 100 -> 400 units/s (slope 0.3/W, T 400).
# A 25 % cut of 4000 W leaves 3000 W, 1000 W above the floors: one job's
# room; both curves are lines, so it all goes to the larger value per W:
#   throughput  A 0.4 > B 0.3                         -> A 2000, B 1000
#   jobs        A 0.4/1000 = 4e-4 < B 0.3/400 = 7.5e-4 -> A 1000, B 2000
#   work        A 4e-4 x 32 = 0.0128 > B 7.5e-4 x 8    -> A 2000, B 1000
#   jobs, weights A 3, B 1: 1.2e-3 > 7.5e-4            -> A 2000, B 1000
#   throughput, min share 50 %: B >= 1000 + 100/0.3 = 1333.33 W, A the
#               rest, 1666.67 W
cat >"$T/two.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s,gpus
A,100,1000,600,32
A,200,2000,1000,32
B,100,1000,100,8
B,200,2000,400,8
CSV
pw() { awk -F, -v j="$1" '$1 == j { print $2 }' "$T/o.csv"; }
split_is() { # OBJECTIVE-ARGS... -- A B
  local args=() a b
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  a=$2 b=$3
  "$PFI" allocate --curves "$T/two.csv" "${args[@]}" --format csv >"$T/o.csv" 2>"$T/o.err" ||
    { fail "allocate ${args[*]}: $(cat "$T/o.err")"; return; }
  near "$(pw A)" "$a" 1e-3 "${args[*]}: power of A"
  near "$(pw B)" "$b" 1e-3 "${args[*]}: power of B"
}
split_is --cut 25% --objective throughput -- 2000 1000
split_is --cut 25% --objective jobs -- 1000 2000
split_is --cut 25% --normalize -- 1000 2000
split_is --cut 25% -- 2000 1000
split_is --cut 25% --objective work -- 2000 1000
split_is --budget 3kW -- 2000 1000
printf 'job,weight\nA,3\nB,1\n' >"$T/w.csv"
split_is --cut 25% --objective jobs --weights "$T/w.csv" -- 2000 1000
split_is --cut 25% --objective throughput --min-share 50% -- 1666.6667 1333.3333
# Every table says which objective it used.
"$PFI" allocate --curves "$T/two.csv" --cut 25% >"$T/t.txt" || fail "allocate table"
grep -q '^objective work: work kept' "$T/t.txt" || fail "allocate table: no objective line: $(cat "$T/t.txt")"
"$PFI" allocate --curves "$T/two.csv" --cut 25% --format csv | head -n 1 | grep -q ',objective$' ||
  fail "allocate CSV: no objective column"
"$PFI" allocate --curves "$T/two.csv" --cut 25% --plan "$T/p.csv" >/dev/null || fail "allocate --plan"
awk -F, 'NR > 1 && $NF != "work" { bad = 1 } END { exit bad }' "$T/p.csv" || fail "plan: objective column: $(cat "$T/p.csv")"
# The value kept under work: A at 2000 W keeps 32, B at 1000 W 8 x 100/400
# = 2 of 8: 34 of 40 GPU-equivalents, 85 %.
"$PFI" allocate --curves "$T/two.csv" --cut 25% --format json >"$T/o.json" || fail "allocate json"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["objective"] == "work" and d["objective_unit"] == "GPU-equivalents", d
assert abs(d["value"] - 34) < 1e-9 and abs(d["value_uncapped"] - 40) < 1e-9, d
assert abs(d["retained"] - 0.85) < 1e-12, d
' "$T/o.json" || fail "allocate JSON value: $(cat "$T/o.json")"

# pfi report takes the objective's options as allocate does, with the same
# meaning: --weights under --objective jobs (A 3, B 1) makes B (7.5e-4 per
# W against A's 1.2e-3) give first. A 10 % cut (400 W) takes B from 2000
# to 1600 W: cap 160 W, B keeps (100 + 0.3 x 600) / 400 = 0.70; a 40 % cut
# (1600 W) takes B to its floor and A to 1400 W (cap 140 W, keeps 0.76):
# weighted total (3 x 0.76 + 0.25) / 4 = 0.6325. Without weights A gives
# first. Each column is the plan pfi allocate writes with the same options.
repcol() { # DIR JOB COLUMN
  python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1] + "/cap_plan.csv")):
    if r["job"].startswith(sys.argv[2]):
        print(r[sys.argv[3]])' "$@"
}
"$PFI" report --quiet --no-figures --out "$T/rw" "$T/two.csv" --objective jobs --weights "$T/w.csv" \
  >/dev/null 2>"$T/rw.err" || fail "report --weights: $(cat "$T/rw.err")"
"$PFI" report --quiet --no-figures --out "$T/rn" "$T/two.csv" --objective jobs >/dev/null 2>&1 ||
  fail "report --objective jobs"
near "$(repcol "$T/rw" B cap_w_cut_10)" 160 0.05 "report --weights: B's cap at 10 %"
near "$(repcol "$T/rw" A cap_w_cut_10)" 200 0.05 "report --weights: A's cap at 10 %"
near "$(repcol "$T/rw" B retained_cut_10)" 0.70 0.0005 "report --weights: B keeps at 10 %"
near "$(repcol "$T/rw" A cap_w_cut_40)" 140 0.05 "report --weights: A's cap at 40 %"
near "$(repcol "$T/rw" TOTAL retained_cut_40)" 0.6325 0.00051 "report --weights: total kept at 40 % (3 decimals)"
near "$(repcol "$T/rn" A cap_w_cut_10)" 160 0.05 "report, no weights: A's cap at 10 %"
grep -q 'weighted per job' "$T/rw/report.html" || fail "report page does not say it is weighted"
# C's realized power falls at its top cap (1600 -> 1500 W); D is a line.
# The report's cap table reads caps off the same curve as the plan pfi
# allocate writes (the monotone fit by default; --curve raw both raw).
printf 'job,cap_w,power_w,tokens_per_s,gpus\nC,100,1000,500,8\nC,200,1600,800,8\nC,300,1500,780,8\nD,100,1000,300,8\nD,200,1500,380,8\nD,300,2000,400,8\n' >"$T/dip2.csv"
for fit in monotone raw; do
  "$PFI" report --quiet --no-figures --out "$T/rd-$fit" "$T/dip2.csv" --curve $fit >/dev/null 2>"$T/rd.err" ||
    fail "report --curve $fit: $(cat "$T/rd.err")"
  for k in 5 10 20 30; do
    "$PFI" allocate --curves "$T/dip2.csv" --cut $k% --curve $fit --plan "$T/pd.csv" >/dev/null 2>&1 ||
      fail "allocate --curve $fit --cut $k%"
    for j in C D; do
      near "$(repcol "$T/rd-$fit" $j cap_w_cut_$k)" "$(awk -F, -v j=$j '$1 == j { print $4 }' "$T/pd.csv")" 0.05 \
        "report --curve $fit: $j's cap at $k % against pfi allocate's plan"
    done
  done
done
expect_usage "--curve: 'smooth': expected monotone or raw" report --curve smooth "$T/two.csv"
printf 'job,weight\nA,3\n' >"$T/wmiss2.csv"
expect_usage "wmiss2.csv: no weight for job B" report --quiet --no-figures --out "$T/rx" --weights "$T/wmiss2.csv" "$T/two.csv"

# ---- bad input --------------------------------------------------------------
expect_usage "unknown objective 'tokens'" allocate --curves "$T/two.csv" --cut 25% --objective tokens
expect_usage "contradict" allocate --curves "$T/two.csv" --cut 25% --objective throughput --normalize
expect_usage "exclude each other" allocate --curves "$T/two.csv" --cut 25% --budget 3kW
expect_usage "--budget: power '3 GW'" allocate --curves "$T/two.csv" --budget "3 GW"
expect_usage "--min-share" allocate --curves "$T/two.csv" --cut 25% --min-share 100%
printf 'job,weight\nA,3\nB,-1\n' >"$T/wbad.csv"
expect_usage "wbad.csv:3:3: weight" allocate --curves "$T/two.csv" --cut 25% --weights "$T/wbad.csv"
printf 'job,weight\nA,3\n' >"$T/wmiss.csv"
expect_usage "wmiss.csv: no weight for job B" allocate --curves "$T/two.csv" --cut 25% --weights "$T/wmiss.csv"
printf 'job,weight\nA,0\nB,0\n' >"$T/wzero.csv"
expect_usage "every job's weight is 0" allocate --curves "$T/two.csv" --cut 25% --weights "$T/wzero.csv"
# GPU counts for some jobs only: the work objective cannot weigh them.
sed 's/^B,\(.*\),8$/B,\1,/' "$T/two.csv" >"$T/some.csv"
expect_usage "job B has no GPU count" allocate --curves "$T/some.csv" --cut 25%
"$PFI" allocate --curves "$T/some.csv" --cut 25% --objective jobs >/dev/null || fail "jobs objective needs no GPU count"
# A minimum share that leaves no room for the cut: infeasible, exit 2.
expect_usage "infeasible by .* \(with --min-share\)" allocate --curves "$T/two.csv" --cut 40% --min-share 90%
"$PFI" capacity --curves "$T/two.csv" --objective nope >/dev/null 2>&1
[ $? -eq 2 ] || fail "capacity --objective nope: exit status"

[ "$fails" -eq 0 ] && echo "all passed"
exit $((fails > 0))
