#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A step of the agent's wall clock, under libfaketime
# (Debian's faketime; its monotonic clock left real, as NTP leaves it): agent
# n1 caps for an event of 40 s, its controller (pfid) is killed and it holds;
# its wall clock then steps +1 h, past the event's end: the caps stay as
# held (sampled from the emulator's state, independently of the agent), the
# step is logged, and the recorded limits (700 W) come back at the event's
# end by the real clock, not before.
. "$(dirname "$0")/lib.sh"
FT=
for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 /usr/lib/*/faketime/libfaketimeMT.so.1; do
  [ -e "$f" ] && { FT=$f; break; }
done
[ -n "$FT" ] || { echo "SKIP: no libfaketime (Debian faketime; scripts/install-deps.sh installs it)"; exit 77; }

setup_nats n1
echo "+0" >"$T/faketime"
# Under the sanitizers libfaketime comes before ASan's runtime in the link
# order, which ASan refuses unless told (as test_fleet_clock_step_pfid.sh).
LD_PRELOAD="$FT" FAKETIME_TIMESTAMP_FILE="$T/faketime" FAKETIME_NO_CACHE=1 \
  FAKETIME_DONT_FAKE_MONOTONIC=1 \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" agent_start n1 2
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || fail "n1 not live"
end=$(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 40 }')
api a POST /v1/events "$(event_json ev1 0 40 400)" >/dev/null
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200 in the event"
{ kill -9 "${PFID_PID[a]}"; wait "${PFID_PID[a]}"; } 2>/dev/null
holds() { grep -q 'tracking -> hold' "$T/agent.n1.log"; }
until_true 20 holds || fail "n1 did not hold without its controller"

# The step: +1 h, 40 s or less before the event's end.
echo "+3600" >"$T/faketime"
stepped() { grep -q 'the wall clock stepped +3600' "$T/agent.n1.log"; }
until_true 10 stepped || fail "no clock step logged: $(tail -n 3 "$T/agent.n1.log")"
# Caps unchanged for 5 s after the step (the event has more left: checked).
left=$(awk -v t="$(now)" -v e="$end" 'BEGIN { printf "%.0f", e - t }')
[ "$left" -gt 6 ] || fail "the test ran late: only $left s of the event left after the step"
stop=$(($(date +%s) + 5))
while [ "$(date +%s)" -lt "$stop" ]; do
  c=$(caps n1)
  [ "$c" = 200,200 ] || { fail "n1 caps $c after the clock step, $left s before the event's end: expected the held 200,200"; break; }
  sleep 0.2
done
grep -q 'hold -> idle' "$T/agent.n1.log" && fail "n1 left its hold after the clock step: $(grep 'hold -> idle' "$T/agent.n1.log")"

# The event's end by the real clock: restored.
until_true 60 caps_are n1 700,700 || fail "n1 caps $(caps n1), expected 700,700 after the event's end ($end)"
t=$(now)
awk -v t="$t" -v e="$end" 'BEGIN { exit !(t >= e) }' || fail "n1 restored at $t, before the event's end $end"
[ "$fails" = 0 ] || { tail -n 20 "$T"/agent.*.log >&2; exit 1; }
echo "fleet clock step: ok"
