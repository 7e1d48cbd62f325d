#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi replay`: a two-job, three-step replay worked by hand, the real
# Phoenix grid event (data/real) replayed on the 8 real A100 workloads, and
# bad input (one line naming file:line:column, exit status 2).
. "$(dirname "$0")/lib.sh"
expect_err() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "pfi $*: stderr is not one line: $(cat "$T/err")"
  grep -Eq -- "$pat" "$T/err" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
}
# field CSVFILE STRATEGY COLUMN: the value of COLUMN in STRATEGY's row.
field() {
  awk -F, -v s="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
    $1 == s { print $k; exit }' "$1"
}

"$PFI" replay --help >"$T/h" 2>&1 || fail "pfi replay --help: non-zero exit"
grep -q "^usage: pfi replay" "$T/h" || fail "pfi replay --help: no usage line"

# Two jobs, three steps, worked by hand (the same as tests/unit/test_replay.c):
# A (100 W, 100), (200 W, 150); B (100, 100), (150, 140), (200, 160).
# Uncapped 400 W and 310 tokens/s; floors 200 W. Baseline 1000 W, target
# 1000, 800, 400 W at 14:00, 14:01, 14:03: cuts 0, 0.2, 0.6; budgets 400,
# 320, 160 W; durations 60, 120, 120 s (the last holds the interval before).
# Step 1: oracle A 170 W + B 150 W = 135 + 140 = 275 tokens/s; equal 160 W
# each = 130 + 144 = 274. Step 2: 160 W is 40 W below the floors: both at
# their floors, 200 tokens/s, infeasible by 40 W.
# retained: oracle 75600/93000 = 0.812903, equal 75480/93000 = 0.811613;
# gap 100 * 120/93000 = 0.129032 pp. Event (cut >= 5 %): oracle
# 57000/74400 = 0.766129, equal 56880/74400 = 0.764516. Energy 86400 J =
# 0.024 kWh; mean power 86400/300 = 288 W.
cat >"$T/c.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s
A,100,100,100
A,200,200,150
B,100,100,100
B,150,150,140
B,200,200,160
CSV
cat >"$T/t.csv" <<'CSV'
time,total
14:00,1000
14:01,800
14:03,400
CSV
"$PFI" replay --curves "$T/c.csv" --target "$T/t.csv" --baseline 1000 --objective throughput \
  --format csv >"$T/s.csv" 2>"$T/err" || fail "hand replay: exit $? ($(cat "$T/err"))"
# Printed with 6 decimals: 1e-6 covers the rounding.
near "$(field "$T/s.csv" oracle retained)" 0.812903 1e-6 "oracle retained"
near "$(field "$T/s.csv" equal retained)" 0.811613 1e-6 "equal retained"
near "$(field "$T/s.csv" equal gap_to_oracle_pp)" 0.129032 1e-6 "equal gap"
near "$(field "$T/s.csv" oracle retained_event)" 0.766129 1e-6 "oracle in event"
near "$(field "$T/s.csv" equal retained_event)" 0.764516 1e-6 "equal in event"
near "$(field "$T/s.csv" oracle energy_kwh)" 0.024 1e-6 "energy"
near "$(field "$T/s.csv" oracle mean_power_w)" 288 1e-6 "mean power"
near "$(field "$T/s.csv" oracle infeasible_steps)" 1 0 "infeasible steps"
near "$(field "$T/s.csv" oracle infeasible_max_w)" 40 1e-6 "infeasible by"
near "$(field "$T/s.csv" oracle mean_cut)" 0.4 1e-6 "mean cut"
"$PFI" replay --curves "$T/c.csv" --target "$T/t.csv" --baseline 1000 --objective throughput \
  --format csv --show series >"$T/ser.csv" || fail "hand series: exit $?"
[ "$(wc -l <"$T/ser.csv")" -eq 7 ] || fail "hand series: $(wc -l <"$T/ser.csv") lines, expected 7"
grep -q '^oracle,"14:01",60.000,0.200000,320.000000,320.000000,275.000000,0.887097,1,0.000000$' "$T/ser.csv" ||
  fail "oracle step 14:01 (275/310 = 0.887097): $(grep '^oracle,"14:01"' "$T/ser.csv")"
grep -q '^equal,"14:03",180.000,0.600000,160.000000,200.000000,200.000000,0.645161,0,40.000000$' "$T/ser.csv" ||
  fail "equal step 14:03 (infeasible by 40 W): $(grep '^equal,"14:03"' "$T/ser.csv")"
"$PFI" replay --curves "$T/c.csv" --target "$T/t.csv" --baseline 1000 --objective throughput \
  --format csv --show jobs >"$T/j.csv" || fail "hand jobs: exit $?"
# A in the event under the oracle: (120*135 + 120*100)/(240*150) = 0.783333.
grep -q '^oracle,A,.*,0.783333,' "$T/j.csv" || fail "oracle job A: $(grep '^oracle,A' "$T/j.csv")"
# A job name with a comma stays one CSV field. One job (100 W, 100),
# (200 W, 150); samples 10 and 8 W: auto baseline 9 W (their median), cuts
# 0 and 1/9, budget 200 * 8/9 = 177.78 W, throughput 100 + 0.5 * 77.78 =
# 138.89 = 0.925926 of 150 in the event.
printf 'job,cap_w,power_w,tokens_per_s\n"A,x",100,100,100\n"A,x",200,200,150\n' >"$T/cq.csv"
printf 't,power\n0,10\n60,8\n' >"$T/tq.csv"
"$PFI" replay --curves "$T/cq.csv" --target "$T/tq.csv" --format csv --show jobs >"$T/jq.csv" ||
  fail "quoted job: exit $?"
grep -q '^oracle,"A,x",[0-9.]*,0.925926,' "$T/jq.csv" || fail "quoted job: $(cat "$T/jq.csv")"
# The automatic baseline: all three samples lie in the first 15 minutes,
# median 800 W; the first step's cut is then 0 (clamped), the second 0.
"$PFI" replay --curves "$T/c.csv" --target "$T/t.csv" --format json >"$T/j.json" ||
  fail "auto baseline: exit $?"
grep -q '"baseline_w": 800' "$T/j.json" || fail "auto baseline is not 800 W"
grep -q '"baseline_rule": "median of the first 15 minutes"' "$T/j.json" || fail "baseline rule missing"
for k in target source baseline_w steps event_steps uncapped_w floor_w max_cut mean_cut \
  infeasible_steps infeasible_max_w strategies retained retained_event gap_to_oracle_pp \
  energy_kwh series time t_s cut budget_w power_w tokens_per_s normalized feasible short_w \
  job_power_w job_cap_w; do
  grep -q "\"$k\":" "$T/j.json" || fail "JSON key $k missing"
done

# The real Phoenix event (data/real/SRP_total_power.csv, 400 one-minute
# samples) on the 8 real A100 workloads, each once.
M="job=Workload,cap_w=GPU power cap,power_w=total GPU power,tokens_per_s=throughput"
"$PFI" replay --curves data/real/dvfs_sweep.csv --map "$M" \
  --target data/real/SRP_total_power.csv --strategies oracle,equal,pfi-aware,pfi-curve \
  --true-pfi --format csv --show series >"$T/real.csv" 2>"$T/err" ||
  fail "real replay: exit $? ($(cat "$T/err"))"
[ "$(wc -l <"$T/real.csv")" -eq 1601 ] || fail "real replay: $(wc -l <"$T/real.csv") lines, expected 4 x 400 + 1"
grep -Eqi 'nan|inf' "$T/real.csv" && fail "real replay: a non-finite number"
# Budget met at every feasible step: the jobs' power equals the budget
# within 1e-3 W (the CSV's 6 decimals) plus 1e-9 relative (the budget
# check's tolerance). Every step of this event is feasible (its deepest
# cut, 50.5 %, is above the floors' 27 % of the uncapped power).
awk -F, 'NR > 1 { if ($9 != 1) { bad++; next }
  d = $6 - $5; if (d < 0) d = -d; if (d > 1e-3 + 1e-9 * $5) bad++
  if ($8 <= 0 || $8 > 1 + 1e-12) bad++ }
  END { exit bad > 0 }' "$T/real.csv" || fail "real replay: budget not met or throughput out of (0, 1]"
# The caps a controller would set: 8 jobs x 400 steps, each within the
# sweep's caps (100..400 W); at the first step (cut 0) every job uncapped.
"$PFI" replay --curves data/real/dvfs_sweep.csv --map "$M" \
  --target data/real/SRP_total_power.csv --format csv --show caps >"$T/caps.csv" ||
  fail "real caps: exit $?"
[ "$(wc -l <"$T/caps.csv")" -eq $((2 * 8 * 400 + 1)) ] || fail "real caps: $(wc -l <"$T/caps.csv") lines"
awk -F, 'NR > 1 && ($6 < 100 - 1e-6 || $6 > 400 + 1e-6) { bad++ } END { exit bad > 0 }' "$T/caps.csv" ||
  fail "real caps: a cap outside 100..400 W"
[ "$(grep -c '^oracle,"2025-05-04 14:40:00-07:00",0.000,[a-z0-9_]*,[0-9.]*,400.000000,' "$T/caps.csv")" -eq 8 ] ||
  fail "real caps: not every job at 400 W at the first step"
"$PFI" replay --curves data/real/dvfs_sweep.csv --map "$M" \
  --target data/real/SRP_total_power.csv --strategies all --true-pfi --format csv \
  >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "dram-copy needs --features" "$T/err" || fail "all strategies without features: $(cat "$T/err")"
"$PFI" replay --curves data/real/dvfs_sweep.csv --map "$M" \
  --target data/real/SRP_total_power.csv --format csv >"$T/rs.csv" || fail "real summary: exit $?"
# The oracle is the optimum at every step: no strategy retains more.
awk -F, 'NR > 1 && $4 < -1e-6 { bad++ } END { exit bad > 0 }' "$T/rs.csv" || fail "a negative gap to the oracle"
# The CAISO re-enactment uses HH:MM timestamps.
"$PFI" replay --curves data/real/dvfs_sweep.csv --map "$M" \
  --target data/real/CAISOexp_totalpower_cleaned.csv --format json >"$T/ca.json" ||
  fail "CAISO replay: exit $?"
grep -q '"steps": 445' "$T/ca.json" || fail "CAISO replay: not 445 steps"
# Same input, same bytes.
"$PFI" replay --curves data/real/dvfs_sweep.csv --map "$M" \
  --target data/real/CAISOexp_totalpower_cleaned.csv --format json | cmp -s - "$T/ca.json" ||
  fail "CAISO replay: output differs between two runs"

# Bad input.
printf 'time,total\n14:00,1000\n14:61,800\n' >"$T/b1.csv"
expect_err "b1.csv:3:4: .*minutes" replay --curves "$T/c.csv" --target "$T/b1.csv"
printf 'timestamp,total\n2025-05-04 14:40:00-07:00,1\n2025-13-04 14:41:00-07:00,1\n' >"$T/b2.csv"
expect_err "b2.csv:3:6: .*month" replay --curves "$T/c.csv" --target "$T/b2.csv"
printf 'time,total\n14:00,1000\n14:01,-5\n' >"$T/b3.csv"
expect_err "b3.csv:3:7: negative power" replay --curves "$T/c.csv" --target "$T/b3.csv"
printf 'when,total\n14:00,1000\n14:01,5\n' >"$T/b4.csv"
expect_err "b4.csv:1: no time column" replay --curves "$T/c.csv" --target "$T/b4.csv"
expect_err "b4.csv:1: no power column 'watts'" replay --curves "$T/c.csv" --target "$T/b4.csv" \
  --time-col when --power-col watts
printf 'time,total\n14:02,1000\n14:01,5\n' >"$T/b5.csv"
expect_err "b5.csv:3:1: .*strictly increasing" replay --curves "$T/c.csv" --target "$T/b5.csv"
printf 'time,total\n14:00,1000\n14:01,\n' >"$T/b6.csv"
expect_err "b6.csv:3:" replay --curves "$T/c.csv" --target "$T/b6.csv"
expect_err "not-there.csv" replay --curves "$T/c.csv" --target "$T/not-there.csv"
"$PFI" replay --curves "$T/c.csv" >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing --target: not exit 2"
"$PFI" replay --curves "$T/c.csv" --target "$T/t.csv" --baseline -3 >/dev/null 2>&1
[ $? -eq 2 ] || fail "negative baseline: not exit 2"
"$PFI" replay --curves "$T/c.csv" --target "$T/t.csv" --strategies nope >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown strategy: not exit 2"

[ "$fails" -eq 0 ] || exit 1
echo "test_replay: all passed"
