#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The three-server NATS cluster of test_fleet_nats_cluster_event.sh, in an
# event's recovery: two agents on the fake NVML with a 2-GPU training job
# each (lib.sh load_agent_start), pfid at --ramp-up 10 W/s. Once the
# recovery has begun, SIGKILL of the server that leads the bucket's
# stream, moved first (a step-down) to the server agent n1 is connected
# to. Checked on the GPUs' limits sampled from the emulator's state (pfi
# devices, independent of pfid) from the kill on, and on the agents'
# records:
#  - every agent and pfid connected to a live server again;
#  - no GPU whose cap still binds (under the job's uncapped draw, measured
#    before the event) rises faster than the ramp (10 W/s, plus 10 W for
#    the sampling's slack): the recovery goes on from where it was;
#  - the agents' sequence numbers (their records) never go back (no older
#    assignment applied again) and go on past the kill;
#  - the recovery ends: every GPU back at the limit it had before the event
#    (700 W), every node restored (pfid's newest assignment the one it
#    applied);
#  - the server started again catches up with the stream.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }

setup_nats_cluster n1 n2
load_agent_start n1 slurm-5
load_agent_start n2 slurm-6
LEASE=10
pfid_start a --ramp-up 10
leads() { api a GET /v1/status | grep -q '"leader":true'; }
until_true 30 leads || { fail "a never led"; tail -n 20 "$T/pfid.a.log" >&2; exit 1; }
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }
M="http://127.0.0.1:${API[a]}/metrics"
known() { for j in 5 6; do curl -s -m 5 "$M" | grep -q "^pfi_job_learned_points{job=\"slurm-$j\"} " || return 1; done; }
until_true 30 known || fail "pfid does not know the jobs"
sleep 3 # (not a check) a few uncapped periods learned
uncapped=$(api a GET /v1/nodes | jq '[.[].gpus[] | .power_w // empty] | max')
draw=$(api a GET /v1/status | jq '.power_w')
target=$(awk -v p="$draw" 'BEGIN { printf "%.0f", 0.6 * p }')
api a POST /v1/events "$(event_json ev1 0 300 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
cut() { [ "$(caps "$1" | awk -F, -v u="$uncapped" '{print ($1 < u - 60 && $2 < u - 60)}')" = 1 ]; }
until_true 30 cut n1 || fail "n1 not cut: $(caps n1), uncapped $uncapped W"
until_true 30 cut n2 || fail "n2 not cut: $(caps n2)"
# The stream's leader where agent n1 is, before the recovery begins (the
# step-downs take seconds).
aserv=$(conn_server agent-n1) || fail "agent n1 on no server"
stream_leader_to "$aserv" || fail "the stream's leader did not move to s$aserv"
on_it=""
for u in pfid agent-n1 agent-n2; do [ "$(conn_server $u)" = "$aserv" ] && on_it+=" $u"; done

api a DELETE /v1/events/ev1 >/dev/null
recovering() { [ -n "$(sql "$T/records.db" "SELECT 1 FROM fleet_decisions WHERE reason='recovery' LIMIT 1")" ]; }
until_true 20 recovering || fail "no recovery: $(sql "$T/records.db" "SELECT reason, count(*) FROM fleet_decisions GROUP BY reason")"
seqof() { sql "$T/agent.$1.db" "SELECT value FROM meta WHERE key='fleet.seq'"; }
(while [ ! -e "$T/stop" ]; do echo "$(now),$(caps n1),$(caps n2),$(seqof n1),$(seqof n2)"; sleep 0.2; done) >"$T/samples" &
SAMPLER=$!
PIDS+=("$SAMPLER")
sleep 0.5
s1=$(seqof n1) s2=$(seqof n2)
echo "killing s$aserv, which leads KV_pfi and serves:$on_it (recovery under way)"
nats_srv_kill "$aserv"
newleader() { local x; x=$(stream_leader) && [ "$x" != "$aserv" ]; }
until_true 40 newleader || fail "no new leader of the bucket's stream"
for u in pfid agent-n1 agent-n2; do
  again() { local x; x=$(conn_server "$1") && [ "$x" != "$aserv" ]; }
  until_true 30 again $u || fail "$u not connected to a live server"
done
past() { [ "$(seqof "$1")" -ge "$(($2 + 2))" ]; }
until_true 40 past n1 "$s1" || fail "n1 sequence $(seqof n1), was $s1 at the kill"
until_true 40 past n2 "$s2" || fail "n2 sequence $(seqof n2), was $s2 at the kill"

l=$(stream_leader)
tseq=$(stream_info "$l" | awk '{print $2}')
nats_srv_start "$aserv"
caught() { local x; x=$(stream_info "$aserv" | awk '{print $2}'); [ -n "$x" ] && [ "$x" -ge "$tseq" ]; }
until_true 40 caught || fail "s$aserv at $(stream_info "$aserv"), leader was at $tseq when it restarted"

# The recovery ends: the limits before the event, every node restored.
until_true 90 caps_are n1 700,700 || fail "n1 at $(caps n1) after the recovery, expected 700,700"
until_true 30 caps_are n2 700,700 || fail "n2 at $(caps n2) after the recovery, expected 700,700"
touch "$T/stop"
wait "$SAMPLER"
for n in n1 n2; do
  want=$(api a GET /v1/nodes | jq --arg n $n '.[] | select(.node == $n) | .seq')
  reached() { [ "$(seqof "$1")" -ge "$2" ]; }
  until_true 20 reached $n "$want" || fail "$n applied sequence $(seqof $n), pfid had published $want"
  idle() { grep -q "tracking -> idle" "$T/agent.$1.log"; }
  until_true 20 idle $n || fail "$n not restored (idle): $(tail -n 3 "$T/agent.$n.log")"
done
# The ramp is a rate: a GPU below the uncapped limit rises at most 10 W
# a second since its cap last changed, plus one period's step (a sample's
# time is when the sampler read it, so a change happened after the sample
# before it: the time since the last change is taken from there). Assignments published while an agent
# reconnects arrive together, so one rise may carry several periods' raises;
# it may not exceed what the time since the last change allows.
awk -F, -v u="$uncapped" '
  NF != 7 || $6 == "" || $7 == "" { next }
  { rows++
    for (i = 2; i <= 5; i++) {
      if (rows > 1 && $i != c[i]) {
        if (c[i] < u - 10 && $i > c[i] + 10 * ($1 - tc[i]) + 10) {
          printf "GPU %d rose %g -> %g W %.2f s after its last change\n", i - 2, c[i], $i, $1 - tc[i]; bad = 1 }
        tc[i] = tp
      }
      if (rows == 1) tc[i] = $1
      c[i] = $i
    }
    if (rows > 1 && ($6 < p6 || $7 < p7)) { print "sequence went back: " $0; bad = 1 }
    p6 = $6; p7 = $7; tp = $1 }
  END { if (rows < 10) { print "only " rows " samples"; bad = 1 } exit bad }' "$T/samples" ||
  fail "samples in the recovery"
! grep -q "assignment rejected" "$T"/agent.*.log || fail "an agent rejected an assignment: $(grep -h "assignment rejected" "$T"/agent.*.log | head -3)"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet on a NATS cluster, stream leader killed mid-recovery: ok"
