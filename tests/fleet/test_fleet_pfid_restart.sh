#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A restarted controller resumes from its records and the bucket without a
# cap change a user could see: kill -9 of the only pfid mid-event, then the
# same pfid (same id, same records file) started again. Every GPU's limit,
# sampled from the emulator's state throughout, stays at the event's
# assignment (200 W) from before the kill until after the restarted pfid
# leads again and has run several periods; the records continue (sequence
# numbers strictly increasing per node across the restart, the agents at
# the newest); cancelling through the restarted pfid gives every GPU its
# limit back (700 W).
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
agent_start n1 2
agent_start n2 2
pfid_start a
leads() { api "$1" GET /v1/status | grep -q '"leader":true'; }
until_true 20 leads a || fail "a never led"
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || fail "two live nodes"
api a POST /v1/events "$(event_json ev1 0 300 1600)" >/dev/null
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200"
until_true 20 caps_are n2 200,200 || fail "n2 caps $(caps n2), expected 200,200"
before=$(sql "$T/records.db" "SELECT COUNT(*) FROM fleet_assignments")

(while [ ! -e "$T/stop" ]; do echo "$(caps n1),$(caps n2)"; sleep 0.1; done) >"$T/samples" &
SAMPLER=$!
PIDS+=("$SAMPLER")
sleep 0.5
{ kill -9 "${PFID_PID[a]}"; wait "${PFID_PID[a]}"; } 2>/dev/null
sleep 1
pfid_start a
until_true 20 leads a || fail "the restarted pfid never led"
until_true 10 live2 || fail "the restarted pfid does not see two live nodes"
api a GET /v1/status | grep -q '"event":"ev1"' ||
  fail "the restarted pfid does not hold event ev1: $(api a GET /v1/status)"
sleep 3 # six 0.5 s periods under the restarted leader
touch "$T/stop"
wait "$SAMPLER"
bad=$(awk -F, '{ for (i = 1; i <= NF; i++) if ($i != "200") { print; exit } }' "$T/samples")
[ -z "$bad" ] || fail "a cap changed across the restart: $bad"
[ "$(wc -l <"$T/samples")" -ge 10 ] || fail "too few samples ($(wc -l <"$T/samples"))"
leaders=$(sql "$T/records.db" "SELECT COUNT(*) FROM fleet_log WHERE pfid='a' AND what='leader'")
[ "$leaders" -ge 2 ] || fail "fleet_log has $leaders leader rows for a, expected one per start"
for n in n1 n2; do
  sql "$T/records.db" "SELECT seq FROM fleet_assignments WHERE node='$n' ORDER BY id" >"$T/rec.$n"
  awk '{ if (NR > 1 && $1 <= s) bad = 1; s = $1 } END { exit bad || NR < 1 }' "$T/rec.$n" ||
    fail "$n records not strictly increasing: $(tr '\n' ' ' <"$T/rec.$n")"
  last=$(tail -n 1 "$T/rec.$n")
  applied=$(sql "$T/agent.$n.db" "SELECT value FROM meta WHERE key='fleet.seq'")
  [ "$applied" -ge "$last" ] 2>/dev/null || fail "$n applied seq $applied, the last recorded $last"
done
after=$(sql "$T/records.db" "SELECT COUNT(*) FROM fleet_assignments")
[ "$after" -ge "$before" ] || fail "records lost: $before rows before the kill, $after after"
api a DELETE /v1/events/ev1 >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "DELETE on the restarted pfid: HTTP $(cat "$T/code")"
until_true 30 caps_are n1 700,700 || fail "n1 caps $(caps n1) after the cancel, expected 700,700"
until_true 30 caps_are n2 700,700 || fail "n2 caps $(caps n2) after the cancel, expected 700,700"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet pfid restart: ok"
