#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A three-server NATS cluster as a site runs it (lib.sh setup_nats_cluster:
# routes between them, JetStream on each, the bucket replicated on all
# three, R3), pfid and two emulated agents given all three URLs. Mid-event,
# SIGKILL of the server that leads the bucket's stream, moved first (a
# step-down) to the server pfid is connected to, so that pfid loses both.
# Checked, independently of pfid where it can be (the emulator's caps, the
# agents' records, the servers' monitoring ports):
#  - pfid and every agent are connected to a live server again, agent n2
#    killed and started again while the server is down too;
#  - no cap moves off the event's 200 W (no job: free GPUs at their lowest)
#    from the cut to the event's end, and no agent refuses an assignment;
#  - each agent's applied sequence number (its record) never goes back and
#    goes on past its value at the kill; pfid's newest assignment to each
#    node is the one the node applied (none lost);
#  - none applied twice: an agent applies only a sequence number above its
#    own (a replay through another server is ignored), and its own never
#    goes back (the samples);
#  - the server started again catches up: its replica of the stream reaches
#    the leader's last sequence at its restart;
#  - at the event's end the agents restore 650 W (n1, set by the operator)
#    and 700 W (n2).
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }

# A list without a URL: a usage error naming the option.
out=$("$PFID" --id x --nats " , " --records "$T/x.db" --api none 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -q -- "--nats: no server URL" <<<"$out" || fail "--nats ' , ': exit $rc, '$out'"
setup_nats_cluster n1 n2
mkdir -p "$T/emu.n1" "$T/emu.n2"
timeout 20 "$PFI" cap --backend emu --params "state=$T/emu.n1,gpus=2" --set 650 >/dev/null || fail "pfi cap"
agent_start n1 2
agent_start n2 2
# The agents' lease outlasts a stream leader's election (a few seconds on
# a loaded machine): they keep tracking through it rather than holding.
LEASE=10
pfid_start a
leads() { api a GET /v1/status | grep -q '"leader":true'; }
until_true 30 leads || { fail "a never led"; tail -n 20 "$T/pfid.a.log" >&2; exit 1; }
live() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live || { fail "2 live nodes"; exit 1; }
info=$(stream_info 0)
[ -n "$info" ] || fail "no bucket stream on s0"
# R3: the stream has a leader and two replicas, as the leader reports it.
l=$(stream_leader)
reps=$(jsz "$l" | jq '[.account_details[]?.stream_detail[]? | select(.name == "KV_pfi") | .cluster.replicas[]?] | length')
[ "$reps" = 2 ] || fail "bucket stream replicas besides its leader: '$reps', expected 2 (R3)"

api a POST /v1/events "$(event_json ev1 0 300 1200)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
for n in n1 n2; do
  until_true 30 caps_are $n 200,200 || fail "$n caps $(caps $n), expected 200,200"
done

pserv=$(conn_server pfid) || fail "pfid on no server"
stream_leader_to "$pserv" || fail "the stream's leader did not move to s$pserv"
on_it=""
for u in pfid agent-n1 agent-n2; do [ "$(conn_server $u)" = "$pserv" ] && on_it+=" $u"; done
echo "killing s$pserv, which leads KV_pfi and serves:$on_it"
seqof() { sql "$T/agent.$1.db" "SELECT value FROM meta WHERE key='fleet.seq'"; }
s1=$(seqof n1) s2=$(seqof n2)
(while [ ! -e "$T/stop" ]; do echo "$(caps n1),$(caps n2),$(seqof n1),$(seqof n2)"; sleep 0.2; done) >"$T/samples" &
SAMPLER=$!
PIDS+=("$SAMPLER")
sleep 1
nats_srv_kill "$pserv"
# Agent n2 started again while that server is down, given the list with
# it first: it connects to another (the client tries them all).
{ kill -9 "${AGENT_PID[n2]}"; wait "${AGENT_PID[n2]}"; } 2>/dev/null
all=$NATS_URL
NATS_URL="nats://127.0.0.1:${NPORT[pserv]}"
for ((i = 0; i < NATS_N; i++)); do [ "$i" = "$pserv" ] || NATS_URL+=",nats://127.0.0.1:${NPORT[i]}"; done
agent_start n2 2
NATS_URL=$all
newleader() { local x; x=$(stream_leader) && [ "$x" != "$pserv" ]; }
until_true 40 newleader || fail "no new leader of the bucket's stream"
for u in pfid agent-n1 agent-n2; do
  again() { local x; x=$(conn_server "$1") && [ "$x" != "$pserv" ]; }
  until_true 30 again $u || fail "$u not connected to a live server"
done
# The sequence numbers go on: pfid renews the assignments every period.
past() { [ "$(seqof "$1")" -ge "$(($2 + 3))" ]; }
until_true 40 past n1 "$s1" || fail "n1 sequence $(seqof n1), was $s1 at the kill"
until_true 40 past n2 "$s2" || fail "n2 sequence $(seqof n2), was $s2 at the kill"
until_true 20 leads || fail "a does not lead after the kill"

# The killed server comes back and catches up.
l=$(stream_leader)
target=$(stream_info "$l" | awk '{print $2}')
nats_srv_start "$pserv"
caught() { local x; x=$(stream_info "$pserv" | awk '{print $2}'); [ -n "$x" ] && [ "$x" -ge "$target" ]; }
until_true 40 caught || fail "s$pserv at $(stream_info "$pserv"), leader was at $target when it restarted"

# None lost: the node applies pfid's newest assignment to it (its
# sequence number read from pfid now; the agent's record reaches it).
for n in n1 n2; do
  want=$(api a GET /v1/nodes | jq --arg n $n '.[] | select(.node == $n) | .seq')
  reached() { [ "$(seqof "$1")" -ge "$2" ]; }
  until_true 20 reached $n "$want" || fail "$n applied sequence $(seqof $n), pfid had published $want"
done
touch "$T/stop"
wait "$SAMPLER"
api a DELETE /v1/events/ev1 >/dev/null
until_true 30 caps_are n1 650,650 || fail "n1 restored to $(caps n1), expected 650,650"
until_true 30 caps_are n2 700,700 || fail "n2 restored to $(caps n2), expected 700,700"

# The samples: caps at 200 W throughout, sequence numbers never back.
awk -F, '
  NF != 6 || $5 == "" || $6 == "" { next }
  { rows++
    for (i = 1; i <= 4; i++) if ($i != 200) { print "cap " $i " W in sample " rows ": " $0; bad = 1 }
    if (rows > 1 && ($5 < p5 || $6 < p6)) { print "sequence went back: " $0; bad = 1 }
    p5 = $5; p6 = $6 }
  END { if (rows < 5) { print "only " rows " samples"; bad = 1 } exit bad }' "$T/samples" ||
  fail "samples during the event"
! grep -q "assignment rejected" "$T"/agent.*.log || fail "an agent rejected an assignment: $(grep -h "assignment rejected" "$T"/agent.*.log | head -3)"
echo "replays ignored by the agents: $(cat "$T"/agent.*.log | grep -c "assignment ignored")"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet on a NATS cluster, stream leader killed mid-event: ok"
