#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi profile restores the caps as pfi sweep does (test_sweep_restore.sh):
# killed with SIGKILL at every stage (originals recorded, caps of a hold
# set, mid-hold, in the middle of restoring, after restoring), then
# `pfi restore` or the next pfi on the GPUs puts every GPU back, verified
# by reading the device; SIGTERM in real time restores them too; the holds
# are runs of the store marked as a profile.
. "$(dirname "$0")/lib.sh"
trap 'rm -rf "$T"' EXIT
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
G=moe-ft-qwen30ba3b-x8
EMU="--backend emu --params gpus=2"
PROF="--emulate $G --caps 700,400,200 --quiet"

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

# A whole profile: three holds, each a complete run marked as a profile,
# the caps back at 650 W, the curve and its PFI printed.
"$PFI" profile $EMU $PROF --db "$T/ok.db" --curve "$T/ok.csv" >"$T/out" 2>"$T/err" ||
  fail "profile: $(cat "$T/err")"
caps_are 650 "after a whole profile"
[ "$(sqlite3 "$T/ok.db" "select count(*) from runs where state='complete'")" -eq 3 ] ||
  fail "complete holds: $(sqlite3 "$T/ok.db" "select state from runs")"
[ "$(sqlite3 "$T/ok.db" "select count(*) from meta where key like 'run.%.kind' and value='profile'")" -eq 3 ] ||
  fail "holds not marked as a profile"
[ "$(sqlite3 "$T/ok.db" "select group_concat(cap_w) from (select cap_w from runs order by id)")" = "700.0,400.0,200.0" ] ||
  fail "hold order: $(sqlite3 "$T/ok.db" "select cap_w from runs order by id")"
grep -q "^pfi_ratio  ci95" "$T/out" || fail "no PFI table: $(cat "$T/out")"
# The PFI printed is pfi index's of the curve written.
"$PFI" index "$T/ok.csv" --format csv >"$T/idx.csv" 2>"$T/err" || fail "pfi index of the curve: $(cat "$T/err")"
want=$(awk -F, 'NR == 2 { printf "%.4f", $2 }' "$T/idx.csv")
got=$(awk '/^pfi_ratio/ { getline; print $1 }' "$T/out")
[ "$want" = "$got" ] || fail "profile PFI $got, pfi index of its curve $want"
"$PFI" restore --db "$T/ok.db" >"$T/out" 2>&1
grep -q "nothing to restore" "$T/out" || fail "a whole profile left the ledger: $(cat "$T/out")"

# stage, what the device must show right after the kill, how to recover.
while read -r stage after how; do
  db=$T/k-$stage.db
  rc=$( (PFI_SWEEP_KILL_AT=$stage "$PFI" profile $EMU $PROF --db "$db" >/dev/null 2>&1; echo $?) 2>/dev/null)
  [ "$rc" -eq 137 ] || fail "$stage: profile exit status $rc, expected 137 (SIGKILL)"
  caps_are "$after" "$stage: right after the kill"
  case $how in
  restore)
    "$PFI" restore --db "$db" --format csv >"$T/out" 2>"$T/err" || fail "$stage: pfi restore: $(cat "$T/err")"
    awk -F, 'NR > 1 && ($4 != 650.000 || $5 != 1) { bad = 1 } END { exit bad }' "$T/out" ||
      fail "$stage: restore output: $(cat "$T/out")"
    ;;
  next) # The next profile on these GPUs, through another store, puts them
    # back before it records its own originals.
    "$PFI" profile $EMU $PROF --db "$T/next-$stage.db" >/dev/null 2>"$T/err" ||
      fail "$stage: next profile: $(cat "$T/err")"
    "$PFI" restore --db "$db" >/dev/null 2>"$T/err" || fail "$stage: pfi restore: $(cat "$T/err")" ;;
  same) # The next profile into the same store restores first.
    "$PFI" profile $EMU $PROF --db "$db" >/dev/null 2>"$T/err" ||
      fail "$stage: profile into the same store: $(cat "$T/err")" ;;
  esac
  caps_are 650 "$stage: after recovery"
  "$PFI" restore --db "$db" >"$T/out" 2>&1 || fail "$stage: second restore"
  grep -q "nothing to restore" "$T/out" || fail "$stage: ledger not cleared: $(cat "$T/out")"
done <<'EOF'
recorded 650 restore
set:1 400 restore
sample:1:5 400 next
sample:2:3 200 same
restoring 650,200 restore
restored 650 restore
EOF
n=$(sqlite3 "$T/k-sample:2:3.db" "select count(*) from runs where state='interrupted'")
[ "$n" -eq 1 ] || fail "the killed hold is not marked interrupted: $n"

# SIGTERM in real time: caps restored, the hold interrupted, exit 1.
"$PFI" profile $EMU --emulate $G --caps 700,300 --params gpus=2,realtime=1 --db "$T/t.db" \
  --min-hold 60s --max-hold 10m --interval 0.2s >/dev/null 2>"$T/err" &
pid=$!
for _ in $(seq 100); do grep -q "cap 1 of 2 (700 W): caps set" "$T/err" && break; sleep 0.1; done
grep -q "caps set" "$T/err" || fail "real-time profile did not start: $(cat "$T/err")"
caps_are 700 "real-time profile running"
"$PFI" restore --db "$T/t.db" >/dev/null 2>"$T/live.err"
[ $? -eq 1 ] || fail "pfi restore on a live profile: exit status"
grep -q "another pfi" "$T/live.err" || fail "live-profile message: $(cat "$T/live.err")"
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 1 ] || fail "SIGTERM: exit status $rc, expected 1"
caps_are 650 "after SIGTERM"
[ "$(sqlite3 "$T/t.db" "select state from runs")" = "interrupted" ] || fail "SIGTERM hold state"

# A running process's JSON lines (--throughput): a job whose throughput
# is 1000 tokens/s x min(cap, 500 W) / 500 W, reading GPU 0's cap from the
# emulator's state file every 10 ms. The profile's throughput at each cap
# is that closed form (the first instant of each hold, which straddles the
# change, is not counted), its reports are in the store, the caps are back.
cat >"$T/job.py" <<'PY'
import json, os, sys, time
state, out = sys.argv[1], sys.argv[2]
fp = open(out, "a", buffering=1)
while True:
    cap = 700.0
    try:
        for line in open(os.path.join(state, "caps-h200.txt")):
            w = line.split()
            if len(w) == 2 and w[0] == "0":
                cap = int(w[1]) / 1000.0
    except OSError:
        pass
    fp.write(json.dumps({"tokens_per_s": 1000.0 * min(cap, 500.0) / 500.0}) + "\n")
    time.sleep(0.01)
PY
python3 "$T/job.py" "$PFI_EMU_STATE" "$T/j.jsonl" &
job=$!
"$PFI" profile --backend emu --params gpus=2,realtime=1,speed=4 --throughput "jsonl:$T/j.jsonl" \
  --caps 700,400,300 --min-hold 5s --db "$T/j.db" --curve "$T/j.csv" --job running --quiet >"$T/out" 2>"$T/err" ||
  fail "jsonl profile: $(cat "$T/err")"
kill $job
wait $job 2>/dev/null
caps_are 650 "after a running process's profile"
awk -F, 'NR > 1 { w = $2 < 500 ? $2 : 500; want = 1000 * w / 500; d = $4 / want - 1; if (d < 0) d = -d
  if (!(d <= 0.005)) { printf "%s W: %s tokens/s, expected %s\n", $2, $4, want; bad = 1 }; n++ }
  END { exit bad || n != 3 }' "$T/j.csv" >"$T/cmp" || fail "jsonl throughput: $(cat "$T/cmp") $(cat "$T/j.csv")"
n=$(sqlite3 "$T/j.db" "select count(distinct run_id) from steps where tokens_per_s > 0")
[ "$n" -eq 3 ] || fail "the job's reports are in $n holds' steps, expected 3"

# Bad usage: exit 2, nothing changed.
"$PFI" profile $EMU --emulate nope --db "$T/u.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "unknown group: exit status"
"$PFI" profile $EMU --emulate $G --caps 700 --db "$T/u.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "one cap: exit status"
"$PFI" profile $EMU --emulate $G --caps 700,100 --db "$T/u.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "cap below the range: exit status"
grep -q "outside GPU 0's range" "$T/err" || fail "range message: $(cat "$T/err")"
# A store of another seed is refused before anything changes.
"$PFI" profile $EMU $PROF --db "$T/ok.db" --seed 2 >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "another seed: exit status"
grep -q "holds data of seed 1" "$T/err" || fail "seed message: $(cat "$T/err")"
caps_are 650 "after bad usage"

[ "$fails" -eq 0 ] && echo "test_profile_restore: all passed"
exit $((fails > 0))
