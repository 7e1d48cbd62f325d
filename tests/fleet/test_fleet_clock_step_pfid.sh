#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid's wall clock stepped an hour ahead during an event (docs/fleet.md
# "Clocks"; Debian's libfaketime, pfid alone under it, its monotonic clock
# left alone): the event does not end early, the caps do not move (sampled
# from the emulator's state), the records are not stamped an hour ahead,
# the step is logged and shown in /v1/status; the clock set back, pfid
# says the two agree again and the event goes on; its cancel restores.
. "$(dirname "$0")/lib.sh"
FT=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
[ -n "$FT" ] || { echo "SKIP: no libfaketime (Debian faketime)"; exit 77; }

setup_nats n1
agent_start n1 2
echo "+0" >"$T/ft"
# (A sanitizer build's runtime wants to come first: told that the
# preloaded library is expected.)
LD_PRELOAD=$FT FAKETIME_TIMESTAMP_FILE="$T/ft" FAKETIME_NO_CACHE=1 \
  FAKETIME_DONT_FAKE_MONOTONIC=1 \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || { fail "n1 not live"; exit 1; }
# An event of 90 s: idle GPUs held at their lowest cap, 200 W.
api a POST /v1/events "$(event_json ev1 0 90 800)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
until_true 20 caps_are n1 200,200 || { fail "n1 caps $(caps n1), expected 200,200"; exit 1; }
(while [ ! -e "$T/stop" ]; do caps n1; sleep 0.2; done) >"$T/samples" &
SAMPLER=$!
PIDS+=("$SAMPLER")
sleep 1
echo "+3600" >"$T/ft"
stepped() { api a GET /v1/status | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["clock_steps"] == 1 and 3590 < s["clock_step_s"] < 3610 and s["event"] == "ev1", s'; }
until_true 20 stepped || fail "the step not seen: $(api a GET /v1/status)"
sleep 6 # (not a check) periods after the step
[ "$(sql "$T/records.db" "SELECT count(*) FROM fleet_log WHERE what='clock' AND detail LIKE 'the wall clock stepped +36%'")" = 1 ] ||
  fail "no log row for the step: $(sql "$T/records.db" "SELECT detail FROM fleet_log WHERE what='clock'")"
# Records and the status are stamped with pfid's clock, not an hour ahead.
t=$(sql "$T/records.db" "SELECT max(t_s) FROM fleet_log")
awk -v t="$t" -v n="$(now)" 'BEGIN { exit !(t < n + 5) }' || fail "a log row stamped $t, now $(now)"
api a GET /v1/status | grep -q '"event":"ev1"' || fail "the event ended at the step: $(cat "$T/body")"
echo "+0" >"$T/ft"
agree() { [ "$(sql "$T/records.db" "SELECT count(*) FROM fleet_log WHERE what='clock' AND detail LIKE '%agrees%'")" = 1 ]; }
until_true 20 agree || fail "no log row for the clock set back"
sleep 2
touch "$T/stop"
wait "$SAMPLER"
bad=$(grep -v '^200,200$' "$T/samples" | head -n 1)
[ -z "$bad" ] || fail "a cap moved at the step: $bad"
[ "$(wc -l <"$T/samples")" -ge 10 ] || fail "too few samples"
api a DELETE /v1/events/ev1 >/dev/null
until_true 20 caps_are n1 700,700 || fail "n1 caps $(caps n1) after the cancel"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet clock step: ok"
