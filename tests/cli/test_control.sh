#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi control --emulate and pfi records: the same seed giving the same
# records byte for byte; the JSON summary's invariants; the Phoenix event's
# published side computed independently here (awk on the CSV); bad input
# exit 2 naming file, line or option. Small clusters and short events
# (CI time); the 10-seed validation is bench/bench_event.
. "$(dirname "$0")/lib.sh"

C="nodes=4,gpus_per_node=8"
for k in 1 2; do
  "$PFI" control --emulate "$C" --target 75% --hold 10m --tail 5m --seed 3 \
    --records "$T/r$k.db" --no-compare >"$T/out$k.txt" 2>&1 || fail "control run $k"
  "$PFI" records "$T/r$k.db" --format csv >"$T/r$k.csv" || fail "records $k"
done
cmp -s "$T/r1.csv" "$T/r2.csv" || fail "same seed, different records"
[ "$(wc -l <"$T/r1.csv")" -gt 10 ] || fail "too few records"
head -1 "$T/r1.csv" | grep -q '^run,seq,t_s,event,target_w,job,family,phase,cap_req_w' ||
  fail "records CSV header"
# Every record is completed or pending with empty after-values; reasons
# are from the documented list.
awk -F, 'NR > 1 && $18 !~ /^(cut|raise|rollback|floor|recovery|anomaly|infeasible|probe|contract|deadline)$/ {exit 1}' \
  "$T/r1.csv" || fail "unknown reason"
"$PFI" records "$T/r1.db" --format json >"$T/r.json" || fail "records json"
grep -q '"reason": "cut"' "$T/r.json" || fail "no cut in JSON"
job=$(awk -F, 'NR == 2 {print $6}' "$T/r1.csv")
"$PFI" records "$T/r1.db" --job "$job" --format csv | awk -F, -v j="$job" \
  'NR > 1 && $6 != j {exit 1}' || fail "--job filter"
grep -q "EMULATED" "$T/out1.txt" || fail "output not labelled emulated"
# The objective (docs/control.md "Objective"): work by default, said in
# the table; --objective throughput reaches the controller (the same seed
# gives other records), a name it does not know is exit 2.
grep -q "controller objective *work$" "$T/out1.txt" || fail "table: no objective work"
"$PFI" control --emulate "$C" --target 75% --hold 10m --tail 5m --seed 3 \
  --records "$T/rt.db" --no-compare --objective throughput >"$T/outt.txt" 2>&1 ||
  fail "control --objective throughput"
grep -q "controller objective *throughput$" "$T/outt.txt" || fail "table: no objective throughput"
"$PFI" records "$T/rt.db" --format csv >"$T/rt.csv" || fail "records throughput"
cmp -s "$T/r1.csv" "$T/rt.csv" && fail "--objective throughput: the same records as work"
# Under throughput the value is the raw tokens, the same numbers.
"$PFI" control --emulate "$C,tiered_share=0" --target 80% --hold 10m --tail 5m --format json \
  --objective throughput >"$T/sumt.json" || fail "json run, throughput"
python3 - "$T/sumt.json" <<'PY' || fail "throughput: value is not the raw tokens"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["objective"] == "throughput"
for k in ("controller", "equal"):
    x = d["runs"][0][k]
    for a in ("event", "after_10min", "oracle", "oracle_after_10min",
              "oracle_tiers", "oracle_tiers_after_10min"):
        assert x["value_" + a] == x["tokens_" + a], (k, a)
PY
"$PFI" control --emulate "$C" --target 75% --objective tokens 2>"$T/e"
[ $? -eq 2 ] && grep -q -- "--objective: 'tokens'" "$T/e" || fail "bad --objective: $(cat "$T/e")"

# JSON summary: shares in [0, 1], the oracle at or above both strategies
# (it has the true curves and perfect tracking). No tiers in this run: the
# tiers hold over the target (docs/control.md), and this seed's one Flex 25
# job cannot give 20 % within its tier, so the target would not be met and
# the comparison with the oracle, which meets it, would not hold.
"$PFI" control --emulate "$C,tiered_share=0" --target 80% --hold 10m --tail 5m --format json \
  --series "$T/s.csv" >"$T/sum.json" || fail "json run"
python3 - "$T/sum.json" <<'PY' || fail "summary invariants"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["emulated"] is True
assert d["objective"] == "work", d.get("objective")
r = d["runs"][0]
for k in ("controller", "equal"):
    x = r[k]
    assert 0 <= x["within_1pct"] <= 1, x
    assert x["tokens_oracle"] >= x["tokens_event"] * 0.999, x
    # The oracle of the objective (work) keeps at least as much work.
    assert x["value_oracle"] >= x["value_event"] * 0.999, x
    assert x["value_oracle_tiers"] <= x["value_oracle"] * 1.000001, x
    assert x["floor_violations"] == 0
# The gap closed is measured in the objective's value.
c, e = r["controller"], r["equal"]
g = (c["value_event"] - e["value_event"]) / (c["value_oracle"] - e["value_event"])
assert abs(r["gap_closed"] - g) <= 1e-9 * max(1, abs(g)), (r["gap_closed"], g)
PY
[ "$(head -1 "$T/s.csv")" = "t_s,target_w,realized_w,aim_w" ] || fail "series header"

# Phoenix: Emerald's delivered cut over 16:10-19:30 on 2025-05-04 against
# the median of the file's first 15 minutes, computed here with awk.
"$PFI" control --emulate "nodes=2,gpus_per_node=8" --phoenix --tail 2m \
  --no-compare --format json >"$T/ph.json" || fail "phoenix run"
awk -F, 'NR > 1 && NR <= 16 {print $2}' data/real/SRP_total_power.csv | sort -g |
  awk '{v[NR] = $1} END {print v[8]}' >"$T/base"
base=$(cat "$T/base")
read -r cut above < <(awk -F, -v b="$base" 'NR > 1 && $1 >= "2025-05-04 16:10" &&
  $1 < "2025-05-04 19:30" {n++; s += 1 - $2 / b; if ($2 > 0.75 * b) a++}
  END {printf "%.9f %d\n", s / n, a}' data/real/SRP_total_power.csv)
got_cut=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["emerald"]["mean_cut"])' "$T/ph.json")
got_above=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["emerald"]["minutes_above_target"])' "$T/ph.json")
near "$got_cut" "$cut" 1e-6 "Emerald mean cut"
near "$got_above" "$above" 0 "Emerald minutes above target"

# Bad input: exit 2 with the file and line, or the option.
printf 'nodes = 2\nwhat = 3\n' >"$T/bad.cluster"
"$PFI" control --emulate "$T/bad.cluster" --target 75% 2>"$T/e"
[ $? -eq 2 ] || fail "bad cluster key not exit 2"
grep -q "bad.cluster:2" "$T/e" || fail "bad cluster file not located: $(cat "$T/e")"
"$PFI" control --emulate "$C" --target 7 2>"$T/e"
[ $? -eq 2 ] || fail "bad target not exit 2"
"$PFI" control --emulate "$C" 2>/dev/null
[ $? -eq 2 ] || fail "missing --target not exit 2"
"$PFI" control --emulate "$C" --target 75% --probe-horizon -1 2>"$T/e"
[ $? -eq 2 ] && grep -q -- "--probe-horizon" "$T/e" || fail "bad --probe-horizon"
"$PFI" control --emulate "$C" --target 75% --draw-learn 2 2>"$T/e"
[ $? -eq 2 ] && grep -q -- "--draw-learn" "$T/e" || fail "bad --draw-learn"
# Probes on (off by default) and the former draw ratio: both run.
"$PFI" control --emulate "$C" --target 75% --hold 5m --tail 2m --no-compare \
  --probe-horizon 600 --draw-learn 0 --format json >"$T/pd.json" ||
  fail "--probe-horizon 600 --draw-learn 0"
"$PFI" records "$T/bad.cluster" 2>"$T/e"
[ $? -eq 2 ] || fail "not a records database: exit 2"
"$PFI" records data/real/SRP_total_power.csv 2>/dev/null
[ $? -eq 2 ] || fail "CSV as records database: exit 2"
# A cluster whose jobs all start cold at t = 0, a checkpoint wave before
# the event: every cap back within the recovery window (15 min by default:
# recovery_s in 0..900), said in the table as a number of seconds; a tail
# too short for it prints '-', never nan. --recovery-ramp and
# --recovery-window out of range: exit 2 naming the option.
CW='nodes=8,cold_start=1,ckpt_wave_s=500,ckpt_s=45'
"$PFI" control --emulate "$CW" --target 75% --start 540 --hold 5m --tail 15m \
  --no-compare --format json >"$T/cw.json" || fail "cold_start run"
python3 - "$T/cw.json" <<'PY' || fail "cold start: caps not back in the window: $(head -c 600 "$T/cw.json")"
import json, sys
rs = json.load(open(sys.argv[1]))["runs"][0]["controller"]["recovery_s"]
assert rs is not None and 0 <= rs <= 900, rs
PY
"$PFI" control --emulate "$CW" --target 75% --start 540 --hold 5m --tail 15m \
  --no-compare >"$T/cw.txt" || fail "cold_start run (table)"
grep -Eq 'caps back after [0-9]+ s' "$T/cw.txt" || fail "caps back: $(grep 'caps back' "$T/cw.txt")"
"$PFI" control --emulate "$CW" --target 75% --start 540 --hold 5m --tail 1s \
  --no-compare >"$T/cw1.txt" || fail "cold_start run, 1 s tail"
grep -q 'caps back after - ' "$T/cw1.txt" || fail "1 s tail: $(grep 'caps back' "$T/cw1.txt")"
grep -qi 'caps back after nan' "$T/cw1.txt" && fail "nan printed"
"$PFI" control --emulate "$C" --target 75% --recovery-ramp 0 2>"$T/e"
[ $? -eq 2 ] && grep -q -- "--recovery-ramp" "$T/e" || fail "bad --recovery-ramp"
"$PFI" control --emulate "$C" --target 75% --recovery-window 1s 2>"$T/e"
[ $? -eq 2 ] && grep -q -- "--recovery-window" "$T/e" || fail "bad --recovery-window"
"$PFI" control --emulate 'nodes=2,cold_start=2' --target 75% 2>"$T/e"
[ $? -eq 2 ] && grep -q "cold_start" "$T/e" || fail "bad cold_start"
exit $((fails > 0))
