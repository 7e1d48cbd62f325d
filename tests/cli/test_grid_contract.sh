#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi grid event-report on an event log whose jobs.csv carries the held
# column (pfid's word, logged by the bridge): the tier's longest event and
# notice judged on how long each job was held under its caps, as the
# controller keeps the contract live (docs/control.md "Contract",
# docs/grid.md). Values by hand; bad cells located.
. "$(dirname "$0")/lib.sh"

# Two samples before the event, four in it, one a minute (dt = 60 s, event
# 240 s), throughput at the baseline (no loss). flex25: longest event
# 120 s, notice 600 s; the event gave none (--notice default 0). Held
# time counts samples (a job held in k samples: k x 60 s); the longest
# event is broken when it exceeds it by more than a sample.
#   a: held 1,1,0,0 (released at 120 s): held 120 s, on no notice -> the
#      notice is violated (it was cut), the longest event is not;
#   b: held 0,0,0,0 (its notice exempted it): compliant;
#   c: held 1,1,1,1: 240 s > 120 s and cut on no notice: both.
mkdir -p "$T/ev"
printf 't_s,target_w,power_w\n0,0,1000\n60,0,1000\n120,750,740\n180,750,740\n240,750,740\n300,750,740\n' >"$T/ev/series.csv"
{
  echo "t_s,job,tokens_per_s,held"
  for t in 0 60; do echo "$t,a,100,0"; echo "$t,b,100,0"; echo "$t,c,100,0"; done
  echo "120,a,100,1"; echo "120,b,100,0"; echo "120,c,100,1"
  echo "180,a,100,1"; echo "180,b,100,0"; echo "180,c,100,1"
  echo "240,a,100,0"; echo "240,b,100,0"; echo "240,c,100,1"
  echo "300,a,100,0"; echo "300,b,100,0"; echo "300,c,100,1"
} >"$T/ev/jobs.csv"
printf 'job,tier,tenant\na,flex25,t1\nb,flex25,t1\nc,flex25,t2\n' >"$T/ev/contract.csv"
printf 'tier,max_loss,max_event_s,notice_s\nflex25,0.25,120,600\n' >"$T/ev/tiers.csv"
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --out "$T/ev/out" >"$T/ev/s.json" 2>"$T/err" || fail "event-report: $(cat "$T/err")"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["violations"] == 2 and s["event_s"] == 240, s' \
  "$T/ev/s.json" || fail "summary: $(cat "$T/ev/s.json")"
C="$T/ev/out/compliance.csv"
grep -q '^a,t1,flex25,100,100,0.000000,0.250000,1,"notice of 0 s, tier flex25 needs 600 s"$' "$C" ||
  fail "a: $(grep '^a,' "$C")"
grep -q '^b,t1,flex25,100,100,0.000000,0.250000,0,$' "$C" || fail "b: $(grep '^b,' "$C")"
grep -q '^c,t2,flex25,100,100,0.000000,0.250000,1,"held under its caps 240 s, tier flex25 allows 120 s; notice of 0 s, tier flex25 needs 600 s"$' "$C" ||
  fail "c: $(grep '^c,' "$C")"
# With the notice the tier needs, a is compliant too: the contract kept.
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --notice 10m --out "$T/ev/o2" >"$T/ev/s2.json" 2>"$T/err" || fail "event-report --notice: $(cat "$T/err")"
grep -q '^a,t1,flex25,100,100,0.000000,0.250000,0,$' "$T/ev/o2/compliance.csv" ||
  fail "a with notice: $(grep '^a,' "$T/ev/o2/compliance.csv")"
# Without the column every job is held the whole event (240 s > 120 s).
cut -d, -f1-3 "$T/ev/jobs.csv" >"$T/j3" && mv "$T/j3" "$T/ev/jobs.csv.nh"
mkdir -p "$T/nh" && cp "$T/ev/series.csv" "$T/nh/" && cp "$T/ev/jobs.csv.nh" "$T/nh/jobs.csv"
"$PFI" grid event-report --log "$T/nh" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --notice 10m --out "$T/nh/out" >/dev/null 2>"$T/err" || fail "event-report without held: $(cat "$T/err")"
[ "$(grep -c 'event of 240 s, tier flex25 allows 120 s' "$T/nh/out/compliance.csv")" = 3 ] ||
  fail "without held: $(cat "$T/nh/out/compliance.csv")"
# A held cell that is not 0, 1 or empty: exit 2, file:line.
sed -i '8s/,1$/,yes/' "$T/ev/jobs.csv"
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --out "$T/ev/o3" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "bad held cell not exit 2"
grep -q 'jobs.csv:8:.*held' "$T/err" || fail "bad held cell not located: $(cat "$T/err")"
exit $((fails > 0))
