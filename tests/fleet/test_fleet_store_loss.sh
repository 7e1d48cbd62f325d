#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The JetStream store lost mid-event (docs/fleet.md "The bucket lost"):
# kill -9 of nats-server, its store deleted, the server started again
# empty. The running pfid makes the bucket again and says so (/v1/status
# bucket_recreated, /metrics, a log row), writes the event back (it goes
# on: the caps stay at 200 W, sampled throughout), answers POST /v1/events
# with 201, and the agents apply its assignments (their sequence numbers
# continue from theirs). Then pfid itself is killed and the store lost
# again: the restarted pfid (sequence 0 in memory, nothing in the bucket)
# adopts each node's reported sequence number, says so, and its
# assignments for a new event are applied.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
agent_start n1 2
agent_start n2 2
pfid_start a
leads() { api a GET /v1/status | grep -q '"leader":true'; }
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 leads || { fail "a never led"; exit 1; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }
api a POST /v1/events "$(event_json ev1 0 300 1600)" >/dev/null
# Idle GPUs: held at their lowest cap, 200 W, during the event.
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200"
until_true 20 caps_are n2 200,200 || fail "n2 caps $(caps n2), expected 200,200"
seqof() { sql "$T/agent.$1.db" "SELECT value FROM meta WHERE key='fleet.seq'"; }
(while [ ! -e "$T/stop" ]; do echo "$(caps n1),$(caps n2)"; sleep 0.2; done) >"$T/samples" &
SAMPLER=$!
PIDS+=("$SAMPLER")

lose_store() {
  kill -9 "$NATS_PID"
  wait "$NATS_PID" 2>/dev/null
  rm -rf "$T/js"
  : >"$T/nats.log"
  nats_start
}
sleep 1
lose_store
s1=$(seqof n1)
recreated() { api a GET /v1/status | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["bucket_recreated"] >= 1 and s["leader"] and s["event"] == "ev1", s'; }
until_true 30 recreated || fail "the bucket not made again: $(api a GET /v1/status) $(tail -5 "$T/pfid.a.log")"
[ "$(sql "$T/records.db" "SELECT count(*) FROM fleet_log WHERE what='bucket' AND detail LIKE '%made it again, 1 events%'")" = 1 ] ||
  fail "no log row for the bucket made again: $(sql "$T/records.db" "SELECT what, detail FROM fleet_log WHERE what='bucket'")"
curl -s -m 5 "http://127.0.0.1:${API[a]}/metrics" | grep -q '^pfi_pfid_bucket_recreated_total 1$' ||
  fail "/metrics: pfi_pfid_bucket_recreated_total"
api a POST /v1/events "$(event_json ev2 200 250 5000)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST /v1/events after the loss: HTTP $(cat "$T/code") $(cat "$T/body")"
api a GET /v1/events | grep -q '"ev1"' || fail "ev1 not in the events after the loss: $(cat "$T/body")"
later() { [ "$(seqof "$1")" -gt "$(($2 + 3))" ]; }
until_true 30 later n1 "$s1" || fail "n1 applies no assignment after the loss: $(seqof n1) from $s1 $(tail -3 "$T/agent.n1.log")"

# pfid killed, the store lost again, pfid started again: nothing in the
# bucket, no event (the agents hold theirs); the nodes' sequence numbers
# adopted from their telemetry.
kill -9 "${PFID_PID[a]}"
wait "${PFID_PID[a]}" 2>/dev/null
lose_store
s2=$(seqof n1)
pfid_start a
until_true 30 leads || fail "a restarted never led"
adopted() { api a GET /v1/status | python3 -c '
import json, sys
assert json.load(sys.stdin)["seq_adopted"] >= 2'; }
until_true 30 adopted || fail "the nodes' sequence numbers not adopted: $(api a GET /v1/status)"
[ "$(sql "$T/records.db" "SELECT count(*) FROM fleet_log WHERE what='seq' AND detail LIKE 'node n1 applied sequence%'")" -ge 1 ] ||
  fail "no log row for n1's sequence adopted"
api a POST /v1/events "$(event_json ev3 0 300 1600)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST ev3: HTTP $(cat "$T/code")"
until_true 30 later n1 "$s2" || fail "n1 ignores the restarted pfid: $(seqof n1) from $s2 $(tail -3 "$T/agent.n1.log")"
until_true 30 later n2 "$s2" || fail "n2 ignores the restarted pfid: $(seqof n2) $(tail -3 "$T/agent.n2.log")"
grep -q "ignored (old or replayed)" "$T/agent.n1.log" && fail "n1 ignored assignments: $(grep -c ignored "$T/agent.n1.log")"
touch "$T/stop"
wait "$SAMPLER"
bad=$(awk -F, '{ for (i = 1; i <= NF; i++) if ($i != "" && $i != 200) { print; exit } }' "$T/samples")
[ -z "$bad" ] || fail "a cap moved while the store was lost: $bad"
[ "$(wc -l <"$T/samples")" -ge 10 ] || fail "too few samples"
api a DELETE /v1/events/ev3 >/dev/null
until_true 30 caps_are n1 700,700 || fail "n1 caps $(caps n1) after the cancel"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet store loss: ok"
