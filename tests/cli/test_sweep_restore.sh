#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Caps are always restored: pfi sweep killed with SIGKILL at every stage
# (before any cap is set, after the caps are set, mid-run, in the middle of
# restoring), then `pfi restore` or the next pfi that opens the store puts
# every GPU back, verified by reading the device; the sweep then resumes.
# Also SIGTERM in real time, and a dcgm-exporter endpoint as telemetry.
. "$(dirname "$0")/lib.sh"
TRAINER=${PFI_BUILD_DIR:-build}/pfi-test-trainer
SERVER=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
G=moe-ft-qwen30ba3b-x8
# Two emulated GPUs (the other ranks of the 8-GPU job run "on other
# nodes"): every cap change is an fsync of the emulator's state, so fewer
# GPUs keep the test fast without changing what it checks.
EMU="--backend emu --params gpus=2"

# caps_are LIST WHAT: GPU i's cap reads the i-th of the 2 comma-separated
# watts of LIST (one value: all GPUs), read from the device.
caps_are() {
  "$PFI" devices $EMU --format json >"$T/dev.json" 2>/dev/null || { fail "pfi devices"; return; }
  python3 - "$T/dev.json" "$1" <<'PY' || fail "$2: caps are not $1: $(python3 -c 'import json,sys; print([g["cap_w"] for g in json.load(open(sys.argv[1]))])' "$T/dev.json")"
import json, sys
d = json.load(open(sys.argv[1]))
want = [float(x) for x in sys.argv[2].split(",")]
if len(want) == 1:
    want = want * 2
sys.exit(0 if len(d) == 2 and all(abs(g["cap_w"] - w) < 1e-6 for g, w in zip(d, want)) else 1)
PY
}

"$PFI" cap $EMU --set 650 >/dev/null 2>&1 || fail "pfi cap --set 650"
caps_are 650 "before"

# stage, what the device must show right after the kill, how to recover.
# Cap index 1 is 300 W; cap index 0 (200 W) completes before each kill.
while read -r stage after how; do
  db=$T/k-$stage.db
  # In a subshell whose stderr is discarded: bash reports the SIGKILL.
  rc=$( (PFI_SWEEP_KILL_AT=$stage "$PFI" sweep $EMU --emulate $G --caps 200,300,700 --db "$db" \
    --quiet >/dev/null 2>&1; echo $?) 2>/dev/null)
  [ $rc -eq 137 ] || fail "$stage: sweep exit status $rc, expected 137 (SIGKILL)"
  caps_are "$after" "$stage: right after the kill"
  case $how in
  restore)
    "$PFI" restore --db "$db" --format csv >"$T/out" 2>"$T/err" || fail "$stage: pfi restore: $(cat "$T/err")"
    # Every GPU still recorded is listed with its pre-sweep cap, restored.
    awk -F, 'NR > 1 && ($4 != 650.000 || $5 != 1) { bad = 1 } END { exit bad }' "$T/out" ||
      fail "$stage: restore output: $(cat "$T/out")"
    ;;
  next) # Reading the store changes no device: it only says what is left.
    "$PFI" trace export "$db" >/dev/null 2>"$T/err"
    grep -q "pfi restore --db" "$T/err" || fail "$stage: a reader did not report the ledger: $(cat "$T/err")"
    caps_are "$after" "$stage: after a reader"
    # The next sweep on these GPUs, through another store, puts them back
    # before it records its own originals.
    "$PFI" sweep $EMU --emulate $G --caps 700 --db "$T/next-$stage.db" --quiet 2>"$T/err" ||
      fail "$stage: next sweep: $(cat "$T/err")"
    "$PFI" restore --db "$db" >/dev/null 2>"$T/err" || fail "$stage: pfi restore: $(cat "$T/err")" ;;
  esac
  caps_are 650 "$stage: after recovery"
  "$PFI" restore --db "$db" >"$T/out" 2>&1 || fail "$stage: second restore"
  grep -q "nothing to restore" "$T/out" || fail "$stage: ledger not cleared: $(cat "$T/out")"
  # Resume: the 200 W run is kept, the interrupted one runs again.
  "$PFI" sweep $EMU --emulate $G --caps 200,300,700 --db "$db" 2>"$T/err" ||
    fail "$stage: resume: $(tail -2 "$T/err")"
  [ "$(grep -c "already complete, skipped" "$T/err")" -eq 1 ] || fail "$stage: resume skipped: $(grep -c "already complete, skipped" "$T/err")"
  caps_are 650 "$stage: after the resumed sweep"
  n=$(sqlite3 "$db" "select count(*) from runs where state='complete'")
  [ "$n" -eq 3 ] || fail "$stage: $n complete runs, expected 3"
  n=$(sqlite3 "$db" "select count(*) from runs where state='interrupted'")
  [ "$n" -eq 1 ] || fail "$stage: $n interrupted runs, expected 1"
done <<'EOF'
recorded:1 650 restore
set:1 300 restore
sample:1:50 300 next
restoring:1 650,300 restore
EOF

# A kill after a restore but before the next cap leaves nothing to do.
rc=$( (PFI_SWEEP_KILL_AT=restored:0 "$PFI" sweep $EMU --emulate $G --caps 200,700 --db "$T/r.db" \
  --quiet >/dev/null 2>&1; echo $?) 2>/dev/null)
[ "$rc" -eq 137 ] || fail "restored:0: exit status $rc, expected 137"
caps_are 650 "killed after a restore"
"$PFI" restore --db "$T/r.db" >"$T/out" 2>&1
grep -q "nothing to restore" "$T/out" || fail "after-restore kill: $(cat "$T/out")"

# A cap that fails to set on the 2nd GPU (the fault backend wrapping emu):
# the sweep stops with the device's error and the GPU already capped is
# restored.
"$PFI" sweep --backend fault --params "fail_set_after=1,inner_params=gpus=2" --caps 300 \
  --db "$T/f.db" --throughput "jsonl:$T/f.jsonl" -- "$TRAINER" --group $G >/dev/null 2>"$T/err"
[ $? -eq 1 ] || fail "failed set: exit status"
caps_are 650 "after a failed set"
"$PFI" restore --db "$T/f.db" >"$T/out" 2>&1
grep -q "nothing to restore" "$T/out" || fail "failed set left caps to restore: $(cat "$T/out")"
[ "$(sqlite3 "$T/f.db" "select state||':'||source from runs")" = "failed:emulated" ] ||
  fail "failed-set run: $(sqlite3 "$T/f.db" "select state, source from runs")"

# SIGTERM in real time, with a job that would run forever: the job is
# stopped, caps restored, run interrupted, exit status 1.
"$PFI" sweep $EMU --emulate $G --caps 400 --db "$T/t.db" --real-time --duration 60s \
  --interval 0.2s --job term --throughput "jsonl:$T/t.jsonl" -- "$TRAINER" --out "$T/t.jsonl" --hang \
  >/dev/null 2>"$T/err" &
pid=$!
for _ in $(seq 100); do grep -q "job started" "$T/err" && break; sleep 0.1; done
grep -q "job started" "$T/err" || fail "real-time sweep did not start: $(cat "$T/err")"
caps_are 400 "real-time sweep running"
# The store is readable while the sweep writes, and a reader does not
# "recover" the caps of a live sweep.
for _ in $(seq 50); do
  "$PFI" trace export "$T/t.db" >"$T/live.csv" 2>"$T/live.err" || fail "export during the sweep: $(cat "$T/live.err")"
  [ "$(wc -l <"$T/live.csv")" -gt 8 ] && break
  sleep 0.1
done
[ "$(wc -l <"$T/live.csv")" -gt 8 ] || fail "no samples readable during the sweep"
grep -q "restored the caps\|pfi restore" "$T/live.err" && fail "a reader acted on a live sweep's ledger: $(cat "$T/live.err")"
caps_are 400 "real-time sweep still running after a reader"
"$PFI" restore --db "$T/t.db" >/dev/null 2>"$T/live.err"
[ $? -eq 1 ] || fail "pfi restore on a live sweep: exit status"
grep -q "another pfi" "$T/live.err" || fail "live-sweep message: $(cat "$T/live.err")"
caps_are 400 "real-time sweep still running after pfi restore"
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 1 ] || fail "SIGTERM: exit status $rc, expected 1"
caps_are 650 "after SIGTERM"
[ "$(sqlite3 "$T/t.db" "select state from runs")" = "interrupted" ] || fail "SIGTERM run state"
pgrep -f "$T/t.jsonl" >/dev/null && fail "the job outlived the sweep"

# dcgm-exporter as the telemetry source: the real sample served over HTTP
# on 127.0.0.1 (GPUs 0 and 1 of the scrape, 6 intervals of 5 s).
mkdir -p "$T/www"
cp data/dcgm/h100-idle-eks.prom "$T/www/metrics"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$T/www" >/dev/null 2>&1 &
SERVER=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/metrics" >/dev/null 2>&1 && break
  sleep 0.1
done
timeout 60 "$PFI" sweep $EMU --emulate $G --caps 700 --duration 30s --interval 5s --db "$T/d.db" \
  --telemetry "dcgm-exporter:http://127.0.0.1:$port/metrics" --quiet 2>"$T/err" ||
  fail "dcgm-exporter sweep: $(cat "$T/err")"
"$PFI" trace export "$T/d.db" >"$T/d.csv" 2>/dev/null
[ "$(grep -c ",67.351," "$T/d.csv")" -eq 6 ] || fail "scraped GPU 0 power: $(head -3 "$T/d.csv")"
[ "$(grep -c ",67.746," "$T/d.csv")" -eq 6 ] || fail "scraped GPU 1 power"
kill "$SERVER" 2>/dev/null
wait "$SERVER" 2>/dev/null
SERVER=
# An endpoint that does not answer loses those intervals, not the run.
timeout 60 "$PFI" sweep $EMU --emulate $G --caps 700 --duration 10s --interval 5s --db "$T/e.db" \
  --telemetry "dcgm-exporter:http://127.0.0.1:$port/metrics" --quiet 2>"$T/err" ||
  fail "sweep with a dead endpoint: $(cat "$T/err")"
grep -q "2 telemetry scrape(s) failed" "$T/err" || fail "dead endpoint warning: $(cat "$T/err")"
caps_are 650 "after the dead endpoint"

[ "$fails" -eq 0 ] && echo "test_sweep_restore: all passed"
exit $((fails > 0))
