#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Ways a sweep can end that the stage-by-stage kill tests do not cover:
# its stderr (progress) going to a pipe whose reader has gone, as when
# `pfi sweep ... 2>&1 | tee log` loses tee to a dropped SSH session; a
# store that fills its disk; a node with an out-of-band power limit below
# the operator's cap; a transient and a persistent failure to restore; a
# store on read-only storage; a second sweep on GPUs a sweep holds; a
# crafted store; a state directory with planted links. Every case checks
# the caps on the device.
. "$(dirname "$0")/lib.sh"
TRAINER=${PFI_BUILD_DIR:-build}/pfi-test-trainer
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
G=moe-ft-qwen30ba3b-x8
EMU="--backend emu --params gpus=2"

# caps_are W WHAT: both GPUs' caps read W watts from the device.
caps_are() {
  got=$("$PFI" devices $EMU --format csv 2>/dev/null | python3 -c '
import csv, sys
r = list(csv.DictReader(sys.stdin))
print(",".join("%g" % float(g["cap_w"]) for g in r))')
  [ "$got" = "$1,$1" ] || fail "$2: caps are '$got', expected $1 on both GPUs"
}

"$PFI" cap $EMU --set 650 >/dev/null 2>&1 || fail "pfi cap --set 650"
caps_are 650 "before"

# Progress to a pipe nobody reads: the first write would raise SIGPIPE,
# whose default action kills pfi with the GPUs capped. The sweep must run
# to its end (losing only its progress lines) and restore the caps.
rc=$(python3 - "$PFI" "$T/p.db" $G <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)  # the reader is gone before pfi writes anything
p = subprocess.run([sys.argv[1], "sweep", "--backend", "emu", "--params", "gpus=2",
                    "--emulate", sys.argv[3], "--caps", "300,400", "--duration", "5m",
                    "--cooldown", "0", "--db", sys.argv[2]],
                   stdout=subprocess.DEVNULL, stderr=w)
print(p.returncode)
PY
)
[ "$rc" = 0 ] || fail "sweep with a broken stderr pipe: exit status $rc, expected 0"
caps_are 650 "after a sweep whose stderr pipe broke"
n=$(sqlite3 "$T/p.db" "select count(*) from runs where state='complete'" 2>/dev/null)
[ "$n" = 2 ] || fail "broken stderr pipe: $n complete runs, expected 2"
n=$(sqlite3 "$T/p.db" "select count(*) from cap_ledger" 2>/dev/null)
[ "$n" = 0 ] || fail "broken stderr pipe: $n caps left in the ledger"

# The store on a full disk (here: a file size limit of 400 KiB, less than
# the two runs need, which also raises SIGXFSZ): the sweep fails with exit
# status 1 and the device is back at its caps whatever write failed; pfi
# restore, with room again, clears what is left in the ledger; no run is
# complete without its samples.
rc=$( (ulimit -f 400; "$PFI" sweep $EMU --emulate $G --caps 300,400 --cooldown 0 --db "$T/f.db" \
  --quiet >/dev/null 2>"$T/err"; echo $?) 2>/dev/null)
[ "$rc" = 1 ] || fail "full store: exit status $rc, expected 1: $(cat "$T/err")"
grep -q "disk\|full\|I/O" "$T/err" || fail "full store: message: $(cat "$T/err")"
caps_are 650 "after a sweep whose store filled up"
"$PFI" restore --db "$T/f.db" >/dev/null 2>"$T/err" || fail "restore after a full store: $(cat "$T/err")"
n=$(sqlite3 "$T/f.db" "select count(*) from cap_ledger")
[ "$n" = 0 ] || fail "full store: $n caps left in the ledger after pfi restore"
n=$(sqlite3 "$T/f.db" "select count(*) from runs r where state='complete' and
  (select coalesce(sum(gpus), 0) from samples s where s.run_id=r.id) < 2*360")
[ "$n" = 0 ] || fail "full store: $n complete run(s) without their samples"
caps_are 650 "after pfi restore of a full store"

# A node whose BMC holds an out-of-band limit (600 W) below the operator's
# cap (650 W): before the sweep the enforced limit is already 600 W, so a
# restore is checked against the cap it sets, not the enforced limit, or
# it fails forever and every later sweep on the store refuses to start.
X="--backend emu --params gpus=2,ext_cap_w=600"
"$PFI" sweep $X --emulate $G --caps 300 --cooldown 0 --db "$T/x.db" --quiet 2>"$T/err" ||
  fail "sweep under an out-of-band limit: $(cat "$T/err")"
caps_are 650 "after a sweep under an out-of-band limit"
n=$(sqlite3 "$T/x.db" "select count(*) from cap_ledger")
[ "$n" = 0 ] || fail "out-of-band limit: $n caps left in the ledger"
enf=$("$PFI" devices $X --format csv | awk -F, 'NR > 1 { printf "%s ", $8 }')
[ "$enf" = "600.0 600.0 " ] || fail "out-of-band limit: enforced '$enf', expected 600 W"
# A cap above it cannot be enforced: the sweep stops, caps restored.
"$PFI" sweep $X --emulate $G --caps 700 --cooldown 0 --db "$T/x.db" --quiet 2>"$T/err"
[ $? = 1 ] || fail "cap above an out-of-band limit: exit status"
grep -q "enforced limit reads 600000 mW" "$T/err" || fail "cap above an out-of-band limit: $(cat "$T/err")"
caps_are 650 "after a cap above an out-of-band limit"
n=$(sqlite3 "$T/x.db" "select count(*) from cap_ledger")
[ "$n" = 0 ] || fail "cap above an out-of-band limit: $n caps left in the ledger"

# A restore whose set fails once (a transient driver error, injected by
# the fault backend on set_cap call 3, GPU 0's restore) is tried again.
"$PFI" cap $EMU --set 650 >/dev/null 2>&1
F="--backend fault --params fail_set_after=2,inner_params=gpus=2"
"$PFI" sweep $F --caps 300 --db "$T/t1.db" --quiet --throughput "jsonl:$T/t1.jsonl" \
  -- "$TRAINER" --group $G 2>"$T/err" ||
  fail "transient restore failure: $(cat "$T/err")"
caps_are 650 "after a transient restore failure"
# A restore that keeps failing: exit status 1, and the message says how
# to put the caps back; pfi restore then does.
F="--backend fault --params fail_set_after=2,mode=persistent,inner_params=gpus=2"
"$PFI" sweep $F --caps 300 --db "$T/t2.db" --quiet --throughput "jsonl:$T/t2.jsonl" \
  -- "$TRAINER" --group $G 2>"$T/err"
[ $? = 1 ] || fail "persistent restore failure: exit status"
grep -q "pfi restore --db $T/t2.db" "$T/err" || fail "persistent restore failure: message: $(cat "$T/err")"
"$PFI" restore --db "$T/t2.db" >/dev/null 2>"$T/err" || fail "restore after a persistent failure: $(cat "$T/err")"
caps_are 650 "after pfi restore of a persistent restore failure"

# Two sweeps on the same GPUs through different stores would each record
# the other's cap as the one to restore: the second is refused before it
# changes anything, and the first ends as usual.
"$PFI" cap $EMU --set 650 >/dev/null 2>&1
"$PFI" sweep $EMU --emulate $G --caps 400 --db "$T/l1.db" --real-time --duration 60s \
  --interval 0.2s --job one --throughput "jsonl:$T/l1.jsonl" -- "$TRAINER" --out "$T/l1.jsonl" --hang \
  >/dev/null 2>"$T/l1.err" &
pid=$!
for _ in $(seq 100); do grep -q "job started" "$T/l1.err" && break; sleep 0.1; done
grep -q "job started" "$T/l1.err" || fail "first sweep did not start: $(cat "$T/l1.err")"
"$PFI" sweep $EMU --emulate $G --caps 300 --db "$T/l2.db" --quiet 2>"$T/err"
[ $? = 1 ] || fail "second sweep on the same GPUs: exit status"
grep -q "being swept by another pfi" "$T/err" || fail "second sweep: message: $(cat "$T/err")"
caps_are 400 "the first sweep's cap while a second was refused"
kill -TERM $pid
wait $pid
caps_are 650 "after the first sweep ended"
# Another emulator state directory is another device: no conflict.
PFI_EMU_STATE=$T/emu-other "$PFI" sweep $EMU --emulate $G --caps 300 --db "$T/l3.db" --quiet 2>"$T/err" ||
  fail "sweep on another emulated device: $(cat "$T/err")"

# A store is data: a crafted cap ledger naming a library to load must not
# make the pfi that opens the store (often root) run that library's code.
# The library here writes a marker file when loaded.
if command -v cc >/dev/null; then
  printf '#include <stdio.h>\n__attribute__((constructor)) static void f(void) { FILE *f = fopen("%s/pwned", "w"); if (f) fclose(f); }\n' "$T" >"$T/evil.c"
  cc -shared -fPIC -o "$T/evil.so" "$T/evil.c" || fail "cannot build the test library"
  rc=$( (PFI_SWEEP_KILL_AT=set:0 "$PFI" sweep $EMU --emulate $G --caps 300 --db "$T/e.db" \
    --quiet >/dev/null 2>&1; echo $?) 2>/dev/null)
  [ "$rc" = 137 ] || fail "crafted ledger: sweep exit status $rc"
  sqlite3 "$T/e.db" "update cap_ledger set backend='nvml', params='lib=$T/evil.so'"
  # Reading the store never opens the backends it names.
  "$PFI" trace runs "$T/e.db" >/dev/null 2>"$T/err"
  grep -q "pfi restore --db" "$T/err" || fail "crafted ledger, pfi trace: $(cat "$T/err")"
  "$PFI" restore --db "$T/e.db" >/dev/null 2>"$T/err"
  [ $? = 1 ] || fail "crafted ledger: pfi restore exit status"
  grep -q "PFI_NVML_LIB=$T/evil.so" "$T/err" || fail "crafted ledger, pfi restore: $(cat "$T/err")"
  [ -e "$T/pwned" ] && fail "a library named in a store was loaded"
  # Named by the operator too, it is used (here it is no NVML: an error).
  PFI_NVML_LIB=$T/evil.so "$PFI" restore --db "$T/e.db" >/dev/null 2>&1
  [ -e "$T/pwned" ] || fail "a library the operator names was not loaded"
  "$PFI" cap $EMU --set 650 >/dev/null 2>&1
fi

# The emulator's state directory (by default in /tmp) must be the user's
# own: a link planted in it is never written through, and a directory
# writable by all, or another user's, is refused.
mkdir "$T/st"
echo "precious" >"$T/victim"
ln -s "$T/victim" "$T/st/lock"
PFI_EMU_STATE=$T/st "$PFI" cap $EMU --set 500 >/dev/null 2>"$T/err" && fail "a state directory with a planted link was used"
[ "$(cat "$T/victim")" = precious ] || fail "the emulator wrote through a planted link"
mkdir "$T/st2"
chmod 777 "$T/st2"
PFI_EMU_STATE=$T/st2 "$PFI" devices $EMU >/dev/null 2>"$T/err" && fail "a state directory writable by all was used"
grep -q "writable by all" "$T/err" || fail "world-writable state directory: $(cat "$T/err")"
if [ "$(id -u)" = 0 ]; then
  mkdir "$T/st3"
  chown nobody "$T/st3"
  PFI_EMU_STATE=$T/st3 "$PFI" devices $EMU >/dev/null 2>"$T/err" && fail "another user's state directory was used"
fi

# Runs whose metadata is NULL (a store another tool wrote): empty fields
# in features.csv, never printf's "(null)".
"$PFI" sweep $EMU --emulate $G --caps 300,700 --cooldown 0 --db "$T/n.db" --quiet 2>"$T/err" ||
  fail "sweep for the NULL-metadata case: $(cat "$T/err")"
sqlite3 "$T/n.db" "update runs set arch=NULL, task=NULL"
"$PFI" trace summarize "$T/n.db" --out "$T/ns" >/dev/null 2>"$T/err" || fail "summarize with NULL metadata: $(cat "$T/err")"
grep -q "null" "$T/ns/features.csv" && fail "NULL metadata printed: $(cat "$T/ns/features.csv")"
[ "$(awk -F, 'NR == 2 { print $1 "|" $2 "|" $3 }' "$T/ns/features.csv")" = "$G||" ] ||
  fail "NULL metadata row: $(sed -n 2p "$T/ns/features.csv")"

# A store on a disk remounted read-only (after errors) while its sweep
# was killed: pfi restore still puts the GPUs back from the ledger it can
# read, fails (exit 1) saying the record could not be cleared, and clears
# it once the store is writable again. Run as an unprivileged user, for
# whom the permission bits hold.
AS=
[ "$(id -u)" = 0 ] && AS="runuser -u nobody --"
chmod 755 "$T"
# Skipped where root cannot run pfi as nobody (no runuser, or a build
# tree nobody can reach).
if [ -z "$AS" ] || { command -v runuser >/dev/null && $AS "$PFI" --version >/dev/null 2>&1; }; then
  R=$T/ro
  mkdir -p "$R/emu" "$R/s"
  chmod 755 "$T"
  [ -n "$AS" ] && chown -R nobody "$R"
  RE="env PFI_EMU_STATE=$R/emu $PFI"
  $AS $RE cap $EMU --set 650 >/dev/null 2>&1 || fail "read-only store: pfi cap"
  rc=$( ($AS env PFI_SWEEP_KILL_AT=set:0 $RE sweep $EMU --emulate $G --caps 300 --db "$R/s/r.db" \
    --quiet >/dev/null 2>&1; echo $?) 2>/dev/null)
  [ "$rc" = 137 ] || fail "read-only store: sweep exit status $rc, expected 137"
  chmod 555 "$R/s"
  chmod 444 "$R/s/r.db"
  $AS $RE restore --db "$R/s/r.db" >/dev/null 2>"$T/err"
  [ $? = 1 ] || fail "read-only store: pfi restore exit status"
  grep -q "is restored to 650000 mW" "$T/err" || fail "read-only store: message: $(cat "$T/err")"
  got=$($AS $RE devices $EMU --format csv | awk -F, 'NR > 1 { printf "%s ", $7 }')
  [ "$got" = "650.0 650.0 " ] || fail "read-only store: caps after pfi restore '$got'"
  chmod 755 "$R/s"
  chmod 644 "$R/s/r.db"
  $AS $RE restore --db "$R/s/r.db" >/dev/null 2>"$T/err" || fail "read-only store, writable again: $(cat "$T/err")"
  n=$(sqlite3 "$R/s/r.db" "select count(*) from cap_ledger")
  [ "$n" = 0 ] || fail "read-only store: $n caps left in the ledger"
  # A store closed cleanly, then archived read-only, is still readable.
  chmod 555 "$R/s"
  chmod 444 "$R/s/r.db"
  $AS $RE trace runs "$R/s/r.db" --format csv >"$T/out" 2>"$T/err" || fail "read-only store: trace runs: $(cat "$T/err")"
  grep -q ",interrupted," "$T/out" || fail "read-only store: trace runs: $(cat "$T/out")"
  chmod 755 "$R/s"
fi

[ "$fails" -eq 0 ] && echo "test_sweep_safety: all passed"
exit $((fails > 0))
