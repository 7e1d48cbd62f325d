#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# --throughput regex: the job's stdout is drained continuously (a job that
# logs megabytes is not throttled by the sampling interval), over-long
# lines are lost with a warning and the run is marked in the store and in
# `trace summarize`, back-references are refused, and a matcher stuck in a
# line does not keep the caps lowered. Every case checks the caps.
. "$(dirname "$0")/lib.sh"
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
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

RT=(sweep $EMU --caps 300 --real-time --duration 2s --interval 0.5s --cooldown 0 --quiet)

# ---- a job that logs 2 MB before its report ----
# Drained once per interval, the 64 KiB pipe would let through about 64 KiB
# per interval: the 2 MB would take 32 intervals, more than the run's 4, and
# the report after them would never be read. Drained continuously, the job
# is through them at once: it reports 321 tokens/s and leaves its marker.
cat >"$T/chatty.sh" <<'SH'
head -c 2000000 /dev/zero | tr '\0' x | fold -w 99
echo "step 1 tok/s=321"
touch "$1"
exec sleep 30
SH
timeout 60 "$PFI" "${RT[@]}" --db "$T/c.db" --throughput 'regex:tok/s=([0-9]+)' \
  -- sh "$T/chatty.sh" "$T/done" >"$T/chatty.out" 2>"$T/err" || fail "chatty job: $(head -3 "$T/err")"
[ -e "$T/done" ] || fail "the chatty job was throttled: it never got past its 2 MB of output"
# All of it passed on to pfi's stdout and kept beside the store: 2 000 000
# x's folded in lines of 99 (20 203 lines, 20 202 newlines between them;
# fold adds none after the last, 2 bytes), then the report's 17 bytes.
want=$((2000000 + 20202 + 17))
[ "$(wc -c <"$T/chatty.out")" -eq "$want" ] || fail "chatty job's output passed on: $(wc -c <"$T/chatty.out") bytes, expected $want"
cmp -s "$T/chatty.out" "$T/c.db-logs/run-1.stdout" || fail "chatty job's kept output differs from what was passed on"
[ "$(sqlite3 "$T/c.db" "select count(*) || ' ' || max(tokens_per_s) from steps")" = "1 321.0" ] ||
  fail "chatty job steps: $(sqlite3 "$T/c.db" "select * from steps")"
caps_are 650 "after the chatty job"

# ---- an over-long line: lost, warned, marked ----
# Lines: a report of 5, a 100 000-byte line (over the 64 KiB line bound,
# with a report in it), a report of 7. Two reports stored, one line lost.
cat >"$T/long.sh" <<'SH'
echo "tok/s=5"
printf 'tok/s=6 '; head -c 100000 /dev/zero | tr '\0' y; echo
echo "tok/s=7"
exec sleep 30
SH
timeout 60 "$PFI" "${RT[@]}" --db "$T/l.db" --throughput 'regex:tok/s=([0-9]+)' \
  -- sh "$T/long.sh" >/dev/null 2>"$T/err" || fail "long-line job: $(head -3 "$T/err")"
grep -q "warning: 1 throughput line(s) lost .* in 1 run(s), marked in the store; the first: <stdout>:2:1: line longer than 65536 bytes" "$T/err" ||
  fail "over-long line warning: $(head -3 "$T/err")"
[ "$(sqlite3 "$T/l.db" "select group_concat(tokens_per_s, ' ') from (select tokens_per_s from steps order by t_s)")" = "5.0 7.0" ] ||
  fail "long-line job steps: $(sqlite3 "$T/l.db" "select tokens_per_s from steps")"
sqlite3 "$T/l.db" "select value from meta where key = 'run.1.tput_lost'" | grep -q "^1: <stdout>:2:1: line longer" ||
  fail "run not marked lost: $(sqlite3 "$T/l.db" "select * from meta where key like 'run.%'")"
"$PFI" trace summarize "$T/l.db" --out "$T/ls" >/dev/null 2>"$T/err"
grep -q "1 run(s) lost throughput reports (the first: run 1" "$T/err" ||
  fail "summarize does not say the run lost reports: $(cat "$T/err")"
caps_are 650 "after the long-line job"

# ---- regexes that backtrack without bound ----
"$PFI" "${RT[@]}" --db "$T/b.db" --throughput 'regex:(a+)\1 tok/s=([0-9]+)' -- true >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 2 ] || fail "a back-reference regex: exit status $rc, expected 2"
grep -q "back-references" "$T/err" || fail "back-reference message: $(cat "$T/err")"
[ -e "$T/b.db" ] && fail "a refused regex created its store"
# No back-reference, but glibc's time on such a line grows with the square
# of its length (nested '+' over x's without the y: 1.4 s for 30 000 x's,
# 5.5 s for 60 000 on an idle 2-core machine). Ten lines of 60 000 x's (each
# under the 64 KiB line bound) keep the matcher busy for about a minute on
# such a machine, far past the run's end on any machine: the matcher is
# given up 3 s after the run, the sweep says so (exit 1) and the caps are
# restored meanwhile.
cat >"$T/slow.sh" <<'SH'
for i in 1 2 3 4 5 6 7 8 9 10; do head -c 60000 /dev/zero | tr '\0' x; echo; done
exec sleep 30
SH
timeout 60 "$PFI" "${RT[@]}" --db "$T/s.db" --throughput 'regex:(x+x+)+(y)' \
  -- sh "$T/slow.sh" >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 1 ] || fail "stuck matcher: exit status $rc, expected 1 ($(head -2 "$T/err"))"
grep -q "did not finish matching" "$T/err" || fail "stuck matcher message: $(head -2 "$T/err")"
caps_are 650 "after a stuck matcher"

exit $((fails > 0))
