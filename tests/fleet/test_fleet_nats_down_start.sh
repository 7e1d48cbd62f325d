#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An agent started while NATS is down: its hold and
# restore clock and its signals do not wait for the connection. Agent n1
# caps for an event (30 s), is killed (-9) and nats-server stopped; started
# again with NATS down it resumes its recorded caps in hold, answers SIGTERM
# within 2 s (caps left as recorded: the event is on), and started once more
# restores its recorded limits (700 W) at the event's end, not before, with
# NATS still down.
. "$(dirname "$0")/lib.sh"

setup_nats n1
agent_start n1 2
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || fail "n1 not live"
end=$(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 30 }')
api a POST /v1/events "$(event_json ev1 0 30 400)" >/dev/null
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200 in the event"
{ kill -9 "${AGENT_PID[n1]}"; wait "${AGENT_PID[n1]}"; } 2>/dev/null
{ kill -9 "${PFID_PID[a]}"; wait "${PFID_PID[a]}"; } 2>/dev/null
nats_stop
rec_end=$(sql "$T/agent.n1.db" "SELECT value FROM meta WHERE key='fleet.event_end'")
awk -v a="$rec_end" -v b="$end" 'BEGIN { exit !(a > b - 5 && a < b + 5) }' ||
  fail "recorded event end $rec_end, the event's is $end"

# Started with NATS down: in hold from its record, and SIGTERM ends it.
: >"$T/agent.n1.log"
agent_start n1 2
started() { grep -q 'started: hold' "$T/agent.n1.log" && grep -q 'connecting in the background' "$T/agent.n1.log"; }
until_true 20 started || fail "n1 did not start in hold with NATS down: $(cat "$T/agent.n1.log")"
[ "$(caps n1)" = 200,200 ] || fail "n1 caps $(caps n1) in hold, expected 200,200"
t0=$(now)
kill -TERM "${AGENT_PID[n1]}"
gone() { ! kill -0 "${AGENT_PID[n1]}" 2>/dev/null; }
for i in $(seq 20); do gone && break; sleep 0.1; done
t1=$(now)
if gone; then
  wait "${AGENT_PID[n1]}"; rc=$?
  [ "$rc" = 0 ] || fail "n1 exit status $rc after SIGTERM"
else
  fail "n1 still running 2 s after SIGTERM with NATS down"
  kill -9 "${AGENT_PID[n1]}" 2>/dev/null
fi
echo "SIGTERM to exit: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
[ "$(caps n1)" = 200,200 ] || fail "n1 caps $(caps n1) after SIGTERM during the event, expected the recorded 200,200"

# Started again, NATS still down: restores at the event's end by itself.
agent_start n1 2
until_true 20 eval '[ "$(grep -c "started: hold" "$T/agent.n1.log")" = 2 ]' || fail "n1 did not start in hold again"
restored() { caps_are n1 700,700; }
until_true 60 restored || fail "n1 caps $(caps n1), expected 700,700 after the event's end ($end)"
t=$(now)
awk -v t="$t" -v e="$end" 'BEGIN { exit !(t >= e) }' || fail "n1 restored at $t, before the event's end $end"
grep -q 'hold -> idle' "$T/agent.n1.log" || fail "n1 log has no hold -> idle"
[ "$fails" = 0 ] || { tail -n 20 "$T"/agent.*.log >&2; exit 1; }
echo "fleet agent started with NATS down: ok"
