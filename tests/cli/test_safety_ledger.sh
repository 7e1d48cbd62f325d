#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The ledger and the GPU locks under attack (issue 10, items 1-4 and the
# restore items of 13), each check reading the caps back from the device:
#  1. a lock that an environment variable cannot split: a sweep with
#     PFI_LOCK_DIR set and one without, on the same emulated GPUs;
#  2. a sweep that finds a dead sweep's change (another store) puts it back
#     before it records its own originals; a change kept on purpose
#     (pfi cap --db) is refused, naming its store;
#  3. the ledger is in the main database file as soon as a cap changed: a
#     copy without the -wal restores; a lost store is restored from the
#     machine's record;
#  4. reading a store changes no device and creates no file; a restore
#     checks the row (UUID, range, the machine's record);
# 13. pfi restore of an empty file, the table of a restore whose record
#     could not be cleared, a store that cannot be created.
. "$(dirname "$0")/lib.sh"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT PFI_LOCK_DIR
G=moe-ft-qwen30ba3b-x8
EMU="--backend emu --params gpus=2"
E="$EMU --emulate $G --quiet"

caps() {
  "$PFI" devices $EMU --format csv 2>/dev/null | python3 -c '
import csv, sys
print(",".join("%g" % float(g["cap_w"]) for g in csv.DictReader(sys.stdin)))'
}
caps_are() {
  got=$(caps)
  [ "$got" = "$1" ] || fail "$2: caps are '$got', expected $1"
}
# killed STAGE DB CAPS: a sweep SIGKILLed at STAGE; exit status 137.
killed() {
  rc=$( (PFI_SWEEP_KILL_AT=$1 "$PFI" sweep $E --caps "$3" --db "$2" >/dev/null 2>&1; echo $?) 2>/dev/null)
  [ "$rc" = 137 ] || fail "sweep killed at $1 ($2): exit status $rc, expected 137"
}

"$PFI" cap $EMU --set 650 >/dev/null 2>"$T/err" || fail "pfi cap --set 650: $(cat "$T/err")"
caps_are 650,650 "start"

# ---- 1. PFI_LOCK_DIR cannot split the lock -------------------------------
mkdir -p "$T/lA"
PFI_LOCK_DIR=$T/lA "$PFI" sweep $E --caps 200 --db "$T/a.db" --real-time --duration 60s \
  --interval 0.2s >/dev/null 2>"$T/a.err" &
A=$!
pids+=("$A")
for _ in $(seq 300); do
  [ "$(caps)" = "200,200" ] && break
  kill -0 "$A" 2>/dev/null || break
  sleep 0.1
done
caps_are 200,200 "1: first sweep running: $(cat "$T/a.err")"
"$PFI" sweep $E --caps 500 --db "$T/b.db" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "1: second sweep (no PFI_LOCK_DIR): exit status $rc, expected 1"
grep -q "being swept by another pfi" "$T/err" || fail "1: second sweep: message: $(cat "$T/err")"
caps_are 200,200 "1: after the refused second sweep"
PFI_LOCK_DIR=$T/lB "$PFI" cap $EMU --set 300 >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "1: pfi cap with another PFI_LOCK_DIR was not refused"
kill -TERM "$A"
wait "$A"
caps_are 650,650 "1: after the first sweep ended"
"$PFI" restore --db "$T/b.db" >"$T/out" 2>&1
grep -q "nothing to restore" "$T/out" || fail "1: b.db: $(cat "$T/out")"

# ---- 2. a dead sweep's change is put back before new originals -----------
killed set:1 "$T/A.db" 200,300
caps_are 300,300 "2: after the kill"
"$PFI" sweep $E --caps 200,700 --db "$T/B.db" 2>"$T/err" || fail "2: second sweep: $(cat "$T/err")"
caps_are 650,650 "2: after the second sweep"
n=$(sqlite3 "$T/B.db" "select count(*) from cap_events where action='record' and mw<>650000")
[ "$n" = 0 ] || fail "2: the second sweep recorded $n original(s) other than 650 W"
# A.db's row was cleared with the restore it needed.
"$PFI" restore --db "$T/A.db" >"$T/out" 2>&1 || fail "2: restore A.db: $(cat "$T/out")"
grep -q "nothing to restore" "$T/out" || fail "2: A.db still has rows: $(cat "$T/out")"
caps_are 650,650 "2: after pfi restore of A.db"
# A change kept on purpose: refused, naming its store, until restored.
"$PFI" cap $EMU --set 400 --db "$T/P.db" >/dev/null 2>"$T/err" || fail "2: pfi cap --db: $(cat "$T/err")"
caps_are 400,400 "2: pfi cap --db"
"$PFI" sweep $E --caps 200 --db "$T/B2.db" 2>"$T/err"
[ $? = 1 ] || fail "2: sweep over a kept change: not refused"
grep -q "pfi restore --db $T/P.db" "$T/err" || fail "2: kept change: message: $(cat "$T/err")"
caps_are 400,400 "2: after the refused sweep"
# A second change in the same store keeps the first original.
"$PFI" cap $EMU --set 450 --db "$T/P.db" >/dev/null 2>"$T/err" || fail "2: second pfi cap --db: $(cat "$T/err")"
caps_are 450,450 "2: second pfi cap --db"
"$PFI" restore --db "$T/P.db" --format csv >"$T/out" 2>"$T/err" || fail "2: restore P.db: $(cat "$T/err")"
[ "$(grep -c ',650.000,1,1$' "$T/out")" = 2 ] || fail "2: restore P.db: $(cat "$T/out")"
caps_are 650,650 "2: after pfi restore of P.db"

# ---- 3. the ledger survives the loss of the -wal, or of the store ---------
killed set:1 "$T/W.db" 200,300
caps_are 300,300 "3: after the kill"
cp "$T/W.db" "$T/W-copy.db"
[ -e "$T/W-copy.db-wal" ] && fail "3: the copy has a -wal"
n=$(sqlite3 "$T/W-copy.db" "select count(*) from cap_ledger")
[ "$n" = 2 ] || fail "3: a copy of the main file has $n ledger rows, expected 2"
"$PFI" restore --db "$T/W-copy.db" --format csv >"$T/out" 2>"$T/err" || fail "3: restore the copy: $(cat "$T/err")"
caps_are 650,650 "3: after pfi restore of the copy"
# The original's rows are stale now: cleared, nothing written.
"$PFI" restore --db "$T/W.db" >/dev/null 2>"$T/err" || fail "3: restore the original after its copy: $(cat "$T/err")"
caps_are 650,650 "3: after pfi restore of the original"
# The store lost altogether: the next sweep finds the machine's record.
killed set:0 "$T/L.db" 300
caps_are 300,300 "3: after the second kill"
rm -f "$T/L.db" "$T/L.db-wal" "$T/L.db-shm"
"$PFI" sweep $E --caps 700 --db "$T/L2.db" 2>"$T/err" || fail "3: sweep after a lost store: $(cat "$T/err")"
caps_are 650,650 "3: after a sweep over a lost store's change"

# ---- 4. reading never acts; a restore checks every field -----------------
killed set:1 "$T/c.db" 200,300
caps_are 300,300 "4: after the kill"
sqlite3 "$T/c.db" "update cap_ledger set uuid='', cap_mw=200000"
"$PFI" trace runs "$T/c.db" >/dev/null 2>"$T/err" || fail "4: trace runs: $(cat "$T/err")"
caps_are 300,300 "4: after pfi trace runs"
"$PFI" restore --db "$T/c.db" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "4: restore of an empty UUID: exit status"
grep -q "names no GPU UUID" "$T/err" || fail "4: empty UUID: message: $(cat "$T/err")"
caps_are 300,300 "4: after the refused restore (empty UUID)"
# The right UUIDs, a cap other than the one recorded before the change.
"$PFI" devices $EMU --format csv | awk -F, 'NR > 1 { print $1, $3 }' | while read -r i u; do
  sqlite3 "$T/c.db" "update cap_ledger set uuid='$u' where gpu=$i"
done
"$PFI" restore --db "$T/c.db" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "4: restore of a changed cap: exit status"
grep -q "this machine recorded 650.000 W before the change" "$T/err" || fail "4: changed cap: message: $(cat "$T/err")"
caps_are 300,300 "4: after the refused restore (changed cap)"
# Out of every GPU's range: refused.
sqlite3 "$T/c.db" "update cap_ledger set cap_mw=5000000"
"$PFI" restore --db "$T/c.db" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "4: restore out of range: exit status"
caps_are 300,300 "4: after the refused restore (out of range)"
sqlite3 "$T/c.db" "update cap_ledger set cap_mw=650000"
"$PFI" restore --db "$T/c.db" >/dev/null 2>"$T/err" || fail "4: restore of the true row: $(cat "$T/err")"
caps_are 650,650 "4: after the restore of the true row"
# state=DIR in a store: no reader and no restore creates it.
killed set:0 "$T/s.db" 300
sqlite3 "$T/s.db" "update cap_ledger set params='gpus=2,state=$T/made/by/store'"
"$PFI" trace runs "$T/s.db" >/dev/null 2>&1
"$PFI" trace summarize "$T/s.db" --out "$T/sum" >/dev/null 2>&1
"$PFI" restore --db "$T/s.db" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "4: restore into a missing state directory: exit status"
grep -q "does not exist" "$T/err" || fail "4: missing state directory: message: $(cat "$T/err")"
[ -e "$T/made" ] && fail "4: a store's state=DIR was created"
sqlite3 "$T/s.db" "update cap_ledger set params='gpus=2,state=$T/emu'"
"$PFI" restore --db "$T/s.db" >/dev/null 2>"$T/err" || fail "4: restore of the true state: $(cat "$T/err")"
caps_are 650,650 "4: after the restore into the true state"

# ---- 13. restore of an empty file; a store that cannot be created --------
: >"$T/empty.db"
"$PFI" restore --db "$T/empty.db" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 2 ] || fail "13: restore of an empty file: exit status $rc, expected 2"
grep -q "not a pfi trace store" "$T/err" || fail "13: empty file: message: $(cat "$T/err")"
[ -s "$T/empty.db" ] && fail "13: pfi restore turned an empty file into a store"
"$PFI" trace runs "$T/empty.db" >/dev/null 2>&1
[ -s "$T/empty.db" ] && fail "13: pfi trace runs turned an empty file into a store"
# A store that cannot be created for lack of room (a file size limit):
# a run-time failure, exit 1, not bad input.
rc=$( (ulimit -f 1; "$PFI" sweep $E --caps 300 --db "$T/nospace.db" >/dev/null 2>"$T/err"; echo $?) 2>/dev/null)
[ "$rc" = 1 ] || fail "13: store that cannot be created: exit status $rc, expected 1: $(cat "$T/err")"
caps_are 650,650 "13: after a store that could not be created"

# A job that ignores SIGTERM outlives a SIGKILLed sweep (the death signal
# it gets is SIGTERM): pfi restore ends it (SIGKILL to its process group,
# found by the pid and start time in the GPUs' lock records) and says so.
TRAINER=${PFI_BUILD_DIR:-build}/pfi-test-trainer
"$PFI" sweep $EMU --emulate $G --caps 400 --db "$T/j.db" --real-time --duration 60s \
  --interval 0.2s --quiet --throughput "jsonl:$T/ig.jsonl" -- \
  "$TRAINER" --out "$T/ig.jsonl" --hang --ignore-term >/dev/null 2>"$T/j.err" &
S=$!
pids+=("$S")
job=
for _ in $(seq 300); do
  job=$(pgrep -f -- "^[^ ]*pfi-test-trainer --out $T/ig.jsonl" | head -1)
  [ -n "$job" ] && [ "$(caps)" = "400,400" ] && break
  sleep 0.1
done
[ -n "$job" ] || fail "13: the job did not start: $(cat "$T/j.err")"
[ -n "$job" ] && pids+=("$job")
# The job is named in the lock records once it runs.
uuid0=$("$PFI" devices $EMU --format csv | awk -F, 'NR == 2 { print $3 }')
for _ in $(seq 100); do
  grep -q "^job=$job:" "$PFI_EMU_STATE/pfi-sweep-$uuid0.lock" 2>/dev/null && break
  sleep 0.1
done
kill -KILL "$S"
wait "$S" 2>/dev/null
sleep_max=50
for _ in $(seq $sleep_max); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
kill -0 "$job" 2>/dev/null || fail "13: the job did not outlive pfi (the test needs it to)"
"$PFI" restore --db "$T/j.db" >/dev/null 2>"$T/err" || fail "13: restore after the kill: $(cat "$T/err")"
grep -q "ended the job (pid $job" "$T/err" || fail "13: restore did not say it ended the job: $(cat "$T/err")"
for _ in $(seq 100); do
  [ -z "$(pgrep -f -- "^[^ ]*pfi-test-trainer --out $T/ig.jsonl")" ] && break
  sleep 0.1
done
[ -z "$(pgrep -f -- "^[^ ]*pfi-test-trainer --out $T/ig.jsonl")" ] || fail "13: the job survived pfi restore"
caps_are 650,650 "13: after the restore of the sweep whose job survived"

[ "$fails" -eq 0 ] && echo "test_safety_ledger: all passed"
exit $((fails > 0))
