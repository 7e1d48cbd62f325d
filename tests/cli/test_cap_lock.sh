#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi cap and a running sweep: the sweep holds a lock per GPU for its whole
# run, and pfi cap takes the same locks before changing anything. While an
# emulated sweep runs in real time, pfi cap on one of its GPUs is refused
# (exit 1, the message naming the GPU, the sweep and its store) and leaves
# the cap alone; --force changes it with a warning; pfi restore on the live
# sweep's store changes nothing; after the sweep, pfi cap works again. A
# lock held by hand with a crafted record checks how the holder is named.
# Every check reads the caps back from the device. Nothing waits a fixed
# time: the test polls (bounded) for the sweep to hold its cap.
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

# caps: both GPUs' caps as read from the device, "W0,W1".
caps() {
  "$PFI" devices $EMU --format csv 2>/dev/null | python3 -c '
import csv, sys
print(",".join("%g" % float(g["cap_w"]) for g in csv.DictReader(sys.stdin)))'
}
caps_are() {
  got=$(caps)
  [ "$got" = "$1" ] || fail "$2: caps are '$got', expected $1"
}

"$PFI" cap $EMU --set 650 >/dev/null 2>"$T/err" || fail "pfi cap --set 650: $(cat "$T/err")"
caps_are 650,650 "before the sweep"

# The sweep runs until this test stops it (SIGTERM, which restores its
# caps): a fixed short duration could end it before pfi cap runs on a
# slow machine, and the refusal would not be tested.
"$PFI" sweep $EMU --emulate $G --caps 400 --db "$T/s.db" --real-time --duration 60s \
  --interval 0.2s --cooldown 0s >/dev/null 2>"$T/sweep.err" &
sweep=$!
pids+=("$sweep")
for _ in $(seq 300); do
  [ "$(caps)" = "400,400" ] && break
  kill -0 "$sweep" 2>/dev/null || break
  sleep 0.1
done
caps_are 400,400 "sweep running: $(cat "$T/sweep.err")"

# Refused: exit status 1, the GPU, the sweep and its store named, and no
# cap changed on either GPU (all or none).
"$PFI" cap $EMU --gpus 0,1 --set 500 >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "pfi cap during a sweep: exit status $rc, expected 1"
grep -q "GPU 0 (.*) is held by a running pfi sweep (pid $sweep, store .*/s\.db)" "$T/err" ||
  fail "pfi cap during a sweep: message: $(cat "$T/err")"
grep -q "nothing was changed" "$T/err" || fail "refusal does not say nothing changed: $(cat "$T/err")"
[ -s "$T/out" ] && fail "refused pfi cap printed a result: $(cat "$T/out")"
caps_are 400,400 "after the refused pfi cap"
# A dry run says what the real command would do: refused as well.
"$PFI" cap $EMU --gpus 1 --set 500 --dry-run >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi cap --dry-run during a sweep: exit status"
grep -q "GPU 1 (" "$T/err" || fail "dry run: message: $(cat "$T/err")"
# --reset is a change like --set.
"$PFI" cap $EMU --gpus 1 --reset >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi cap --reset during a sweep: exit status"
caps_are 400,400 "after the refused --reset"

# pfi restore does not fight the live sweep for its store.
"$PFI" restore --db "$T/s.db" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi restore on the live sweep's store: exit status"
caps_are 400,400 "after pfi restore on the live sweep's store"

# --force: changed, with a warning.
"$PFI" cap $EMU --gpus 1 --set 500 --force --format csv >"$T/out" 2>"$T/err" ||
  fail "pfi cap --force: $(cat "$T/err")"
grep -q "warning: GPU 1 (.*) is held by a running pfi sweep" "$T/err" ||
  fail "pfi cap --force: no warning: $(cat "$T/err")"
grep -q "^1,.*,400.000,500.000," "$T/out" || fail "pfi cap --force output: $(cat "$T/out")"
caps_are 400,500 "after pfi cap --force"

kill -TERM "$sweep"
wait "$sweep"
rc=$?
[ $rc = 1 ] || fail "SIGTERM sweep: exit status $rc, expected 1"
# The sweep restores the caps it found at its start, undoing the forced
# change (as the warning and docs/sweep.md say).
caps_are 650,650 "after the sweep ended"
"$PFI" cap $EMU --gpus 1 --set 500 >/dev/null 2>"$T/err" || fail "pfi cap after the sweep: $(cat "$T/err")"
caps_are 650,500 "pfi cap after the sweep"
"$PFI" cap $EMU --reset >/dev/null 2>"$T/err" || fail "pfi cap --reset after the sweep: $(cat "$T/err")"

# A lock held by another process with a record: the holder named from it.
# Records written by a pfi are checked above; this one is written by the
# test, so the expected message is known exactly.
uuid=$("$PFI" devices $EMU --format csv 2>/dev/null | python3 -c '
import csv, sys
print(list(csv.DictReader(sys.stdin))[1]["uuid"])')
# Emulated GPUs' locks live in the emulator's state directory.
lock=$PFI_EMU_STATE/pfi-sweep-$uuid.lock
[ -e "$lock" ] || fail "no lock file $lock (the sweep and pfi cap disagree on the directory?)"
# A sweep killed (SIGKILL) after setting its cap leaves the caps in its
# store's ledger for the next pfi to restore; while the GPU's lock is held
# by a live sweep (through another store), that restore waits.
orig=$(caps)
PFI_SWEEP_KILL_AT=set:0 "$PFI" sweep $EMU --emulate $G --caps 300 --db "$T/c.db" --quiet >/dev/null 2>&1
[ "$(caps)" = "300,300" ] || fail "killed sweep: caps are $(caps), expected 300,300"
[ "$(sqlite3 "$T/c.db" "select count(*) from cap_ledger" 2>/dev/null)" = 2 ] ||
  fail "killed sweep: ledger rows: $(sqlite3 "$T/c.db" "select * from cap_ledger" 2>&1)"
# The lock file also holds the machine's record of the killed sweep's
# change (the limit before it); the crafted record keeps that line.
orig_mw=$(grep "^orig_mw=" "$lock")
[ "$orig_mw" = "orig_mw=$(sqlite3 "$T/c.db" "select cap_mw from cap_ledger where gpu=1")" ] ||
  fail "killed sweep: lock record: $(cat "$lock")"
printf 'pid=4242\ncmd=sweep\nstore=/data/a.db\n%s\n' "$orig_mw" >"$lock"
# The holder is one process (a forked child would keep the lock after
# it is killed); it says when it holds the lock.
python3 -c '
import fcntl, sys, time
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(60)' "$lock" "$T/held" &
holder=$!
pids+=("$holder")
for _ in $(seq 300); do
  [ -e "$T/held" ] && break
  sleep 0.1
done
[ -e "$T/held" ] || fail "the test's lock holder did not start"
before=$(caps)
"$PFI" cap $EMU --set 300 >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi cap on a held GPU: exit status"
grep -q "GPU 1 ($uuid) is held by a running pfi sweep (pid 4242, store /data/a.db)" "$T/err" ||
  fail "held GPU: message: $(cat "$T/err")"
[ "$(caps)" = "$before" ] || fail "pfi cap on a held GPU changed GPU 0 (all or none)"
"$PFI" restore --db "$T/c.db" >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi restore under a held GPU: exit status"
grep -q "GPU 1 ($uuid) is held by pfi sweep (pid 4242, store /data/a.db): its cap recorded in .*/c\.db" "$T/err" ||
  fail "pfi restore under a held GPU: message: $(cat "$T/err")"
# The GPU that is not held is restored; the held one keeps its cap and row.
[ "$(caps)" = "${orig%,*},300" ] || fail "pfi restore under a held GPU: caps $(caps)"
[ "$(sqlite3 "$T/c.db" "select gpu from cap_ledger" 2>/dev/null)" = 1 ] ||
  fail "pfi restore under a held GPU: ledger rows $(sqlite3 "$T/c.db" "select gpu from cap_ledger")"
before=$(caps)
# A record without a command: "another pfi".
printf '%s\n' "$orig_mw" >"$lock"
"$PFI" cap $EMU --gpus 1 --set 300 >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi cap on a GPU held without a record: exit status"
grep -q "GPU 1 ($uuid) is held by another pfi" "$T/err" || fail "no record: message: $(cat "$T/err")"
# A sweep is refused as well, before changing anything.
"$PFI" sweep $EMU --emulate $G --caps 300 --db "$T/s2.db" --quiet 2>"$T/err"
[ $? = 1 ] || fail "sweep on a held GPU: exit status"
grep -q "GPU 1 ($uuid) is being swept by another pfi" "$T/err" || fail "sweep on a held GPU: message: $(cat "$T/err")"
[ "$(caps)" = "$before" ] || fail "a refused sweep changed a cap"
kill -KILL "$holder"
wait "$holder" 2>/dev/null
"$PFI" restore --db "$T/c.db" >/dev/null 2>"$T/err" || fail "pfi restore after the holder died: $(cat "$T/err")"
[ "$(caps)" = "$orig" ] || fail "pfi restore after the holder died: caps are $(caps), expected $orig"
"$PFI" cap $EMU --gpus 1 --set 300 >/dev/null 2>"$T/err" || fail "pfi cap after the holder died: $(cat "$T/err")"
# pfi cap's own record names it while it holds the lock; after it, the
# lock is free (the next command succeeds).
grep -q "^cmd=cap$" "$lock" || fail "pfi cap did not record itself: $(cat "$lock")"
"$PFI" cap $EMU --reset >/dev/null 2>"$T/err" || fail "pfi cap --reset at the end: $(cat "$T/err")"

[ $fails = 0 ] && echo "test_cap_lock: ok"
exit $((fails > 0))
