#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An agent that loses the controller holds its caps to the end of the
# continuous stretch of booked events, not to the end of the event in force
# alone. Two events back to back as the grid bridge posts OpenADR intervals
# (ev1 [0, 20) s, ev2 [18, 45) s: they overlap by 2 s) plus a cancelled one
# that would have continued the stretch: the assignment's event_end is ev2's
# end (the agent's record says so); nats-server stopped during ev1, the
# agent still holds after ev1's end (the grid event goes on) and restores
# the limits recorded before the event (700 W) only at ev2's end.
. "$(dirname "$0")/lib.sh"

setup_nats n1
agent_start n1 2
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || { fail "node live"; exit 1; }

t0=$(now)
ev() { # ev ID START END TARGET: the event message, offsets from t0
  awk -v id="$1" -v a="$2" -v b="$3" -v w="$4" -v t="$t0" \
    'BEGIN { printf "{\"v\":1,\"id\":\"%s\",\"start\":%.3f,\"end\":%.3f,\"target_w\":%g}", id, t + a, t + b, w }'
}
end1=$(awk -v t="$t0" 'BEGIN { printf "%.3f", t + 20 }')
end2=$(awk -v t="$t0" 'BEGIN { printf "%.3f", t + 45 }')
for e in "ev1 0 20 600" "ev2 18 45 600" "ev3 45 200 600"; do
  api a POST /v1/events "$(ev $e)" >/dev/null
  [ "$(cat "$T/code")" = 201 ] || fail "POST $e: HTTP $(cat "$T/code")"
done
api a DELETE /v1/events/ev3 >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "DELETE ev3: HTTP $(cat "$T/code")"
# No job runs: free GPUs are held at their lowest cap (200 W) in an event.
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200"
# The agent's record: the event in force and the end it holds to, ev2's
# (ev3 was cancelled: it does not extend the stretch).
rec_end() { sql "$T/agent.n1.db" "SELECT printf('%.3f', value) FROM meta WHERE key='fleet.event_end'"; }
has_end() { [ "$(rec_end)" = "$end2" ]; }
until_true 10 has_end || fail "agent's event_end $(rec_end), expected ev2's end $end2 (ev1 ends $end1)"
ev_now=$(sql "$T/agent.n1.db" "SELECT value FROM meta WHERE key='fleet.event'")
[ "$ev_now" = ev1 ] || fail "agent's event '$ev_now', expected ev1"

nats_stop
holds() { grep -q 'tracking -> hold' "$T/agent.n1.log"; }
until_true 20 holds || fail "n1 did not hold with NATS down"
# Past ev1's end (by 5 s, ev2 goes on): still held.
past() { awk -v e="$end1" -v t="$(now)" 'BEGIN { exit !(t >= e + 5) }'; }
until_true 60 past || fail "clock"
[ "$(caps n1)" = 200,200 ] || fail "n1 caps $(caps n1) after ev1's end with ev2 booked, expected held 200,200"
grep -q 'hold -> ' "$T/agent.n1.log" && fail "n1 left hold before ev2's end: $(grep 'hold -> ' "$T/agent.n1.log")"
# ev2's end: restored, by the agent alone, not before it.
until_true 60 caps_are n1 700,700 || fail "n1 caps $(caps n1) after ev2's end, expected restored 700,700"
awk -v e="$end2" -v t="$(now)" 'BEGIN { exit !(t >= e) }' || fail "n1 restored before ev2's end $end2"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet event span: ok"
