#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The store's samples journal (DB-samples, docs/sweep.md) through the
# commands: a sweep killed with SIGKILL in the middle of a run leaves
# intervals in the journal; pfi trace reads them without changing or
# making a file; the next writer merges them, once; a last frame cut short
# is dropped; a damaged frame with frames after it is an error naming the
# file and the byte (exit 2).
. "$(dirname "$0")/lib.sh"
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
G=moe-ft-qwen30ba3b-x8
EMU="--backend emu --params gpus=2"
D=$T/s
mkdir "$D"

# listing: every file of $D with its size and modification time, but the
# -shm (SQLite's shared memory, where any reader of a WAL store marks what
# it reads).
listing() {
  for f in "$D"/*; do
    case "$f" in *-shm) continue ;; esac
    stat -c '%n %s %y' "$f"
  done
}

# rows FILE: data lines of a pfi trace export.
rows() { tail -n +2 "$1" | wc -l; }

# A sweep at wall-clock pace, an interval every 0.1 s, killed at its 8th
# sample: the intervals committed since the journal was last merged are in
# DB-samples only.
PFI_SWEEP_KILL_AT=sample:0:8 "$PFI" sweep $EMU --emulate $G --caps 300 --cooldown 0 \
  --db "$D/k.db" --real-time --interval 0.1s --duration 5s --quiet >/dev/null 2>&1
[ -e "$D/k.db-samples" ] || fail "no journal beside the store of a killed sweep"
before=$(listing)
"$PFI" trace export "$D/k.db" --out "$T/ro.csv" 2>"$T/err" || fail "export: $(cat "$T/err")"
"$PFI" trace runs "$D/k.db" --format csv >"$T/runs.csv" 2>"$T/err" || fail "runs: $(cat "$T/err")"
[ "$(listing)" = "$before" ] || fail "pfi trace changed the store's files:
$before
--
$(listing)"
n=$(rows "$T/ro.csv")
[ "$n" -ge 14 ] || fail "export read $n GPU samples of a sweep killed at its 8th interval"
[ $((n % 2)) = 0 ] || fail "export read $n GPU samples: not whole intervals of 2 GPUs"
samples=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0]["samples"])' "$T/runs.csv")
[ "$samples" = "$n" ] || fail "pfi trace runs counts $samples samples, export has $n"

# The frames' offsets, from their length fields (bytes 8..11 of each
# 32-byte header).
frames() {
  python3 - "$1" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
o = 0
while o + 32 <= len(b):
    assert b[o:o + 4] == b"PFIJ"
    print(o)
    o += 32 + struct.unpack_from("<I", b, o + 8)[0]
EOF
}
offs=($(frames "$D/k.db-samples"))
cp "$D/k.db-samples" "$T/journal.keep"
if [ "${#offs[@]}" -ge 3 ]; then
  # A damaged frame in the middle: an error at its byte, nothing read.
  bad=${offs[1]}
  python3 -c 'import sys
p, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[at] ^= 0x40; open(p, "wb").write(b)' \
    "$D/k.db-samples" $((bad + 40))
  "$PFI" trace export "$D/k.db" --out "$T/bad.csv" 2>"$T/err"
  rc=$?
  [ "$rc" = 2 ] || fail "export of a damaged journal: exit $rc, expected 2: $(cat "$T/err")"
  grep -q "k.db-samples.*byte $bad: frame checksum" "$T/err" ||
    fail "damaged journal: message: $(cat "$T/err")"
  "$PFI" trace runs "$D/k.db" >/dev/null 2>"$T/err"
  rc=$?
  [ "$rc" = 2 ] || fail "runs on a damaged journal: exit $rc, expected 2"
  cp "$T/journal.keep" "$D/k.db-samples"
  # The last frame cut short (a write a kill interrupted): dropped, one
  # interval (2 GPU samples) fewer.
  last=${offs[${#offs[@]} - 1]}
  truncate -s $((last + 45)) "$D/k.db-samples"
  "$PFI" trace export "$D/k.db" --out "$T/torn.csv" 2>"$T/err" || fail "export, torn frame: $(cat "$T/err")"
  [ "$(rows "$T/torn.csv")" = $((n - 2)) ] ||
    fail "torn last frame: $(rows "$T/torn.csv") GPU samples, expected $((n - 2))"
  cp "$T/journal.keep" "$D/k.db-samples"
else
  echo "note: the journal held ${#offs[@]} frame(s) (a busy machine merged it); damaged and torn frames are checked in unit.test_store_journal"
fi

# The next writer (pfi restore, which puts the caps back) merges the
# journal: the same rows in the database, once each.
"$PFI" restore --db "$D/k.db" >/dev/null 2>"$T/err" || fail "restore: $(cat "$T/err")"
[ -s "$D/k.db-samples" ] && fail "journal not merged by the next writer"
got=$(sqlite3 "$D/k.db" "select sum(gpus) from samples")
[ "$got" = "$n" ] || fail "after the merge: $got GPU samples in the database, expected $n"
"$PFI" trace export "$D/k.db" --out "$T/rw.csv" 2>"$T/err" || fail "export after merge: $(cat "$T/err")"
cmp -s "$T/ro.csv" "$T/rw.csv" || fail "export before and after the merge differ"
dup=$(sqlite3 "$D/k.db" "select count(*) from (select t_s from steps group by run_id, t_s having count(*) > 1)")
[ "$dup" = 0 ] || fail "$dup steps merged twice"
exit $((fails > 0))
