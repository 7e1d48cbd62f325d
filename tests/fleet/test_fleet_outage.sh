#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Failures mid-event, on two emulated agents (a part of the fleet cut off
# is test_fleet_cutoff.sh, which needs network namespaces):
#  1. kill -9 of agent n1, then a restart: the same caps throughout, the
#     record intact (sequence number, ledger), tracking again after;
#  2. nats-server stopped: every agent holds, pfid marks all stale; the
#     event ends while NATS is down and each agent restores the limits it
#     recorded before the event (650 W on n1, set by the operator); NATS
#     back, pfid sees every node live again and a new event caps them.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
mkdir -p "$T/emu.n1" "$T/emu.n2"
timeout 20 "$PFI" cap --backend emu --params "state=$T/emu.n1,gpus=2" --set 650 >/dev/null || fail "pfi cap"
agent_start n1 2
agent_start n2 2
nodes=2
pfid_start a
live() { api a GET /v1/status | grep -q "\"nodes\":$nodes,\"stale_nodes\":0"; }
until_true 30 live || fail "$nodes live nodes"
gpus=$((2 * nodes))
# No job runs: the control module holds free GPUs at their lowest cap
# (200 W) during the event, which ends in 40 s.
api a POST /v1/events "$(event_json ev1 0 40 $((300 * gpus)))" >/dev/null
for n in n1 n2; do
  until_true 20 caps_are $n 200,200 || fail "$n caps $(caps $n), expected 200,200"
done

# 1. kill -9 of an agent and a restart.
seq_before=$(sql "$T/agent.n1.db" "SELECT value FROM meta WHERE key='fleet.seq'")
{ kill -9 "${AGENT_PID[n1]}"; wait "${AGENT_PID[n1]}"; } 2>/dev/null
[ "$(caps n1)" = 200,200 ] || fail "n1 caps $(caps n1) after kill -9"
ledger=$(sql "$T/agent.n1.db" "SELECT group_concat(cap_mw) FROM (SELECT cap_mw FROM cap_ledger ORDER BY gpu)")
[ "$ledger" = 650000,650000 ] || fail "n1 ledger '$ledger', expected the recorded 650000,650000"
agent_start n1 2
resumed() { grep -q 'started: hold, sequence' "$T/agent.n1.log"; }
until_true 10 resumed || fail "n1 did not resume in hold from its record"
[ "$(caps n1)" = 200,200 ] || fail "n1 caps $(caps n1) after the restart"
seq_start=$(sed -n 's/.*started: hold, sequence \([0-9]*\).*/\1/p' "$T/agent.n1.log" | tail -1)
[ "$seq_start" -ge "$seq_before" ] 2>/dev/null || fail "n1 resumed at sequence $seq_start, had $seq_before"
# tracking NODE K: the K-th start of NODE's agent (or, K = 0, its latest
# cut-off) was followed by tracking.
tracking() { awk -v k="$2" '/started:|tracking -> hold/ { n++ } n >= k && /-> tracking/ { ok = 1 } END { exit !ok }' "$T/agent.$1.log"; }
until_true 10 tracking n1 2 || fail "n1 not tracking again after its restart"

# 2. nats-server stopped; the event ends while it is down.
end=$(sql "$T/records.db" "SELECT 1") # the records are readable throughout
nats_stop
for n in n1 n2; do
  holds() { grep -q 'tracking -> hold' "$T/agent.$1.log"; }
  until_true 20 holds $n || fail "$n did not hold with NATS down"
done
allstale() { api a GET /v1/status | grep -q "\"stale_nodes\":$nodes"; }
until_true 20 allstale || fail "pfid did not mark every node stale"
# Held: each node's limits are the assignment its record says it applied
# last.
for n in n1 n2; do
  rec=$(sql "$T/agent.$n.db" "SELECT value FROM meta WHERE key='fleet.caps'" |
    awk -F, '{ for (i = 1; i <= NF; i++) printf "%s%.1f", (i > 1 ? "," : ""), $i / 1000 }')
  got=$(caps $n | awk -F, '{ for (i = 1; i <= NF; i++) printf "%s%.1f", (i > 1 ? "," : ""), $i }')
  [ "$got" = "$rec" ] || fail "$n caps $got while NATS down, its record says $rec"
done
# The event (40 s from its start) ends: restored, by the agents alone.
until_true 45 caps_are n1 650,650 || fail "n1 restored to $(caps n1), expected 650,650 at the event's end"
until_true 10 caps_are n2 700,700 || fail "n2 restored to $(caps n2), expected 700,700"
nats_start
until_true 30 live || fail "pfid did not see the nodes again"
api a POST /v1/events "$(event_json ev2 0 60 $((350 * gpus)))" >/dev/null
until_true 20 caps_are n2 200,200 || fail "n2 caps $(caps n2) after NATS came back, expected 200,200"
n=$(sql "$T/records.db" "SELECT count(*) FROM fleet_log WHERE what='stale'")
[ "$n" -ge "$nodes" ] || fail "stale marks recorded: $n"
[ "$fails" = 0 ] || { tail -n 15 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet outage: ok"
