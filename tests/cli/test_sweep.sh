#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi sweep` end to end on the emulator (virtual time), in a private emu
# state directory: sweep + summarize agrees with `pfi emulate sweep`; the
# test trainer as a real job (JSONL and regex throughput); a crashing job;
# resume; and bad usage that must change no cap.
. "$(dirname "$0")/lib.sh"
TRAINER=${PFI_BUILD_DIR:-build}/pfi-test-trainer
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
G=moe-ft-qwen30ba3b-x8
EMU="--backend emu --params gpus=8"

# caps_are W: every emulated GPU's cap reads W watts (read from the device).
caps_are() {
  "$PFI" devices $EMU --format json >"$T/dev.json" 2>/dev/null || { fail "pfi devices"; return; }
  python3 - "$T/dev.json" "$1" "$2" <<'PY' || fail "$2: caps are not all $1 W: $(cat "$T/dev.json" | tr -d '\n ' | head -c 300)"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if len(d) == 8 and all(abs(g["cap_w"] - float(sys.argv[2])) < 1e-6 for g in d) else 1)
PY
}

# pfi_of CSV: the ratio PFI of the single job of a curves file.
pfi_of() {
  "$PFI" index "$1" --format json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[0]["pfi"] if len(d)==1 and d[0]["pfi"] is not None else "none")'
}

"$PFI" sweep --help >"$T/out" || fail "sweep --help exit status"
grep -q -- "--caps" "$T/out" || fail "sweep --help text"

# Pre-sweep caps are 650 W, so that a restore to the default would be caught.
"$PFI" cap $EMU --set 650 >/dev/null 2>&1 || fail "pfi cap --set 650"
caps_are 650 "before"

# ---- done when (1): sweep + summarize agrees with pfi emulate sweep ----
"$PFI" sweep --emulate $G --caps 200:700:100 --db "$T/x.db" 2>"$T/err" ||
  fail "emulated sweep: $(tail -3 "$T/err")"
grep -q "cap 6 of 6" "$T/err" || fail "no progress on stderr"
caps_are 650 "after the emulated sweep"
"$PFI" trace summarize "$T/x.db" --out "$T/s" 2>"$T/err" || fail "summarize: $(cat "$T/err")"
[ "$(wc -l <"$T/s/curves.csv")" -eq 7 ] || fail "curves rows: $(cat "$T/s/curves.csv")"
grep -q ",emulated$" "$T/s/curves.csv" || fail "curves not labelled emulated"
head -1 "$T/s/features.csv" | grep -q "^job,arch,task,gpus,dram_active,mem_copy_util,dram_copy_product,sm_active,tensor_active,tensor_sm_ratio,dram_sm_ratio,arithmetic_intensity,nvlink_tx_gbps,nvlink_rx_gbps,pcie_tx_gbps,pcie_rx_gbps,power_w,sm_clock_mhz,clock_fraction,gpu_util,fb_used_gib,gpu_temp_c" ||
  fail "features header: $(head -1 "$T/s/features.csv")"
grep -q "^$G,moe,ft,8," "$T/s/features.csv" || fail "features row: $(cat "$T/s/features.csv")"
# The mechanism is one more summary: the clocks of every run.
[ "$(head -1 "$T/s/mechanism.csv")" = "job,cap_w,sm_clock_mhz,mem_clock_mhz,power_w,source" ] ||
  fail "mechanism header: $(head -1 "$T/s/mechanism.csv")"
[ "$(grep -c "^$G,.*,emulated$" "$T/s/mechanism.csv")" -eq 6 ] ||
  fail "mechanism rows: $(cat "$T/s/mechanism.csv")"
# Under a cap the SM clock falls and the memory clock stays.
awk -F, 'NR > 1 { sm[$2] = $3; mem[$2] = $4 }
  END { exit !(sm[200] < sm[700] && mem[200] == mem[700]) }' "$T/s/mechanism.csv" ||
  fail "mechanism clocks: $(cat "$T/s/mechanism.csv")"
"$PFI" emulate sweep --job $G --caps 200:700:100 --format csv >"$T/ref.csv" 2>/dev/null ||
  fail "pfi emulate sweep"
a=$(pfi_of "$T/s/curves.csv")
b=$(pfi_of "$T/ref.csv")
# Same model, seed and phase code; the sweep samples from t = 5 s where
# emulate sweep starts at t = 0 (a warmup sample), so the agreement is to
# the noise of the top-10 % mean: 1 % of PFI.
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.01 * b) }' ||
  fail "PFI of sweep+summarize $a vs pfi emulate sweep $b"
# Same seed, same bytes.
"$PFI" sweep --emulate $G --caps 200:700:100 --db "$T/y.db" --quiet 2>/dev/null || fail "second sweep"
"$PFI" trace summarize "$T/y.db" --out "$T/s2" 2>/dev/null
cmp -s "$T/s/curves.csv" "$T/s2/curves.csv" || fail "same seed gave different curves"
cmp -s "$T/s/features.csv" "$T/s2/features.csv" || fail "same seed gave different features"

# ---- resume: a second run of the same sweep skips every cap ----
"$PFI" sweep --emulate $G --caps 200:700:100 --db "$T/x.db" 2>"$T/err" || fail "resume exit status"
[ "$(grep -c "already complete, skipped" "$T/err")" -eq 6 ] || fail "resume did not skip 6 caps: $(cat "$T/err")"

# ---- the test trainer as a real job, JSONL throughput ----
"$PFI" sweep $EMU --emulate $G --caps 200,500,700 --db "$T/t.db" --job trainer \
  --throughput "jsonl:$T/tput.jsonl" -- "$TRAINER" 2>"$T/err" || fail "trainer sweep: $(tail -3 "$T/err")"
caps_are 650 "after the trainer sweep"
"$PFI" trace summarize "$T/t.db" --out "$T/ts" 2>/dev/null || fail "summarize trainer"
[ "$(grep -c "^trainer," "$T/ts/curves.csv")" -eq 3 ] || fail "trainer curves: $(cat "$T/ts/curves.csv")"
"$PFI" emulate sweep --job $G --caps 200,500,700 --format csv >"$T/ref3.csv" 2>/dev/null
a=$(pfi_of "$T/ts/curves.csv")
b=$(pfi_of "$T/ref3.csv")
# The trainer reports the run's rate without sample noise; 3 % of PFI.
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.03 * b) }' ||
  fail "PFI of the trainer sweep $a vs pfi emulate sweep $b"

# ---- regex throughput on stdout ----
# Lines on stdout carry no time: they are stamped when read, so in virtual
# time they cannot be placed in the phases; the test checks the values. The
# trainer logs its run's rate; the JSONL runs above derived it from
# cumulative tokens (tokens rounded to 1, elapsed to 1 us: under 1e-5
# relative per step) and summarized it as a top-10 % mean: 1e-4.
"$PFI" sweep $EMU --emulate $G --caps 500,700 --db "$T/r.db" --job rx \
  --throughput 'regex:tokens_per_s=([0-9.]+)' -- "$TRAINER" --stdout --every 50 2>"$T/err" ||
  fail "regex sweep: $(tail -3 "$T/err")"
for cap in 500 700; do
  n=$(sqlite3 "$T/r.db" "select count(distinct s.tokens_per_s) from steps s join runs r on r.id=s.run_id where r.cap_w=$cap")
  [ "$n" -eq 1 ] || fail "regex at $cap W: $n distinct rates"
  a=$(sqlite3 "$T/r.db" "select max(s.tokens_per_s) from steps s join runs r on r.id=s.run_id where r.cap_w=$cap")
  b=$(awk -F, -v c=$cap '$1 == "trainer" && $2 == c { print $4 }' "$T/ts/curves.csv")
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-4 * a) }' ||
    fail "regex rate $a vs JSONL rate $b at $cap W"
done

# ---- a job that crashes: caps restored, run failed, exit 1 ----
"$PFI" sweep $EMU --emulate $G --caps 300,700 --db "$T/c.db" --job crash \
  --throughput "jsonl:$T/c.jsonl" -- "$TRAINER" --crash-at 600 >/dev/null 2>"$T/err"
[ $? -eq 1 ] || fail "crashing job: exit status"
grep -q "status 3" "$T/err" || fail "crash message: $(cat "$T/err")"
caps_are 650 "after a crashing job"
"$PFI" trace runs "$T/c.db" --format csv >"$T/runs.csv" || fail "trace runs"
# id,job,cap_w,gpus,state,source,exit_status,...: the 300 W run failed with
# the trainer's status 3 and the sweep stopped there.
[ "$(cut -d, -f2-7 "$T/runs.csv" | tail -n +2)" = "crash,300,8,failed,emulated,3" ] ||
  fail "crashed run: $(cat "$T/runs.csv")"
# A job that ignores SIGTERM is killed after the grace period.
"$PFI" sweep $EMU --emulate $G --caps 700 --db "$T/h.db" --job hang --grace 0.2s \
  --throughput "jsonl:$T/h.jsonl" -- "$TRAINER" --ignore-term >/dev/null 2>"$T/err" ||
  fail "hanging job: $(tail -2 "$T/err")"
[ "$(sqlite3 "$T/h.db" "select state||':'||exit_status from runs")" = "complete:137" ] ||
  fail "hanging job run: $(sqlite3 "$T/h.db" "select state, exit_status from runs")"

# ---- bad usage changes nothing ----
"$PFI" sweep --emulate $G --caps 100,700 --db "$T/b.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "cap below the minimum: exit status"
grep -q "outside" "$T/err" || fail "range message: $(cat "$T/err")"
caps_are 650 "after a refused cap"
"$PFI" sweep --emulate no-such-group --caps 700 --db "$T/b2.db" >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown group: exit status"
[ ! -e "$T/b2.db" ] || fail "a refused request created the store"
"$PFI" sweep --emulate $G --caps 700,500,700 --db "$T/b.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "duplicate cap: exit status"
grep -q -- "--caps: 700 W appears twice" "$T/err" || fail "duplicate cap message: $(cat "$T/err")"
"$PFI" sweep --emulate $G --db "$T/b.db" >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing --caps: exit status"
"$PFI" sweep --caps 700 --db "$T/b.db" -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "command without --backend: exit status"
"$PFI" sweep $EMU --caps 700 --db "$T/b.db" --throughput bogus -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --throughput: exit status"
"$PFI" sweep $EMU --caps 700 --db "$T/b.db" -- /nonexistent/job >/dev/null 2>"$T/err"
[ $? -eq 1 ] || fail "missing command: exit status"
grep -q "cannot run" "$T/err" || fail "missing command message: $(cat "$T/err")"
caps_are 650 "after a command that cannot run"
"$PFI" sweep --emulate $G --caps 700 --db data/dcgm/README.md >/dev/null 2>&1
[ $? -eq 2 ] || fail "a text file as store: exit status"

[ "$fails" -eq 0 ] && echo "test_sweep: all passed"
exit $((fails > 0))
