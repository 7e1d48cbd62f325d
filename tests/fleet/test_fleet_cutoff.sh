#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Part of the fleet cut off mid-event, on three emulated agents: n1 and n2
# in this network namespace, n3 in its own behind a veth pair made by the
# test. n3's link down: n3 holds its caps, pfid marks it stale, n1 and n2
# keep tracking (they apply newer assignments); the link back up, n3 is
# live and tracks again. Needs root and network namespaces: skipped
# (exit 77) without them.
. "$(dirname "$0")/lib.sh"

NETNS=""
if [ "$(id -u)" = 0 ] && ip netns add "pfi$$" 2>/dev/null; then
  NETNS="pfi$$"
  sub=$((($$ % 250) + 1))
  HOST_IP="10.231.$sub.1"
  NS_IP="10.231.$sub.2"
  if ip link add "pfa$$" type veth peer name "pfb$$" &&
    ip link set "pfb$$" netns "$NETNS" &&
    ip addr add "$HOST_IP/30" dev "pfa$$" && ip link set "pfa$$" up &&
    ip netns exec "$NETNS" ip addr add "$NS_IP/30" dev "pfb$$" &&
    ip netns exec "$NETNS" ip link set "pfb$$" up &&
    ip netns exec "$NETNS" ip link set lo up; then
    :
  else
    ip link del "pfa$$" 2>/dev/null
    ip netns del "$NETNS"
    NETNS=""
  fi
fi
[ -n "$NETNS" ] || { echo "SKIP: no network namespace here (not root or not permitted)"; exit 77; }
cleanup_ns() {
  cleanup
  ip link del "pfa$$" 2>/dev/null
  ip netns del "$NETNS" 2>/dev/null
}
trap cleanup_ns EXIT

# NATS on the veth address (private to this machine).
NATS_HOST=$HOST_IP
NATS_PORT=$(free_port)
NATS_URL="$NATS_SCHEME://$NATS_HOST:$NATS_PORT"
# Plain text off loopback, on a network private to this machine: asked
# for (docs/fleet.md "Security").
# (Over TLS, FLEET_TLS: the certificates instead.)
OFF_LO=(--nats-insecure)
# (The test's server certificate is for 127.0.0.1 and localhost, reached
# here at the veth address: the name it carries is given.)
[ "$NATS_SCHEME" = tls ] && OFF_LO=("${NATS_TLS[@]}" --nats-server-name localhost)
nats_auth() { NATS_AUTH=(--password-file "$T/pw.$1" "${OFF_LO[@]}"); }
nats_config n1 n2 n3
nats_start
mkdir -p "$T/emu.n1" "$T/emu.n2" "$T/emu.n3"
agent_start n1 2
agent_start n2 2
ip netns exec "$NETNS" "$PFI_AGENT" --node n3 --nats "$NATS_URL" --password-file "$T/pw.n3" "${OFF_LO[@]}" \
  --emulate --params "gpus=2,state=$T/emu.n3" --record "$T/agent.n3.db" --period 0.5 \
  >>"$T/agent.n3.log" 2>&1 &
AGENT_PID[n3]=$!
PIDS+=("$!")
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":3,"stale_nodes":0'; }
until_true 30 live || { fail "3 live nodes"; tail -n 5 "$T"/agent.*.log "$T"/pfid.a.log "$T"/nats.log >&2; exit 1; }
# No job runs: the control module holds free GPUs at their lowest cap
# (200 W) during the event.
api a POST /v1/events "$(event_json ev1 0 120 1800)" >/dev/null
for n in n1 n2 n3; do
  until_true 20 caps_are $n 200,200 || fail "$n caps $(caps $n), expected 200,200"
done
# tracking NODE K: the K-th start of NODE's agent (or a cut-off) was
# followed by tracking.
tracking() { awk -v k="$2" '/started:|tracking -> hold/ { n++ } n >= k && /-> tracking/ { ok = 1 } END { exit !ok }' "$T/agent.$1.log"; }

ip netns exec "$NETNS" ip link set "pfb$$" down
stale1() { api a GET /v1/nodes | grep -q '"node":"n3","stale":true'; }
until_true 20 stale1 || fail "pfid did not mark n3 stale"
held() { grep -q 'tracking -> hold' "$T/agent.n3.log"; }
until_true 20 held || fail "n3 did not hold"
[ "$(caps n3)" = 200,200 ] || fail "cut-off n3 caps $(caps n3), expected held 200,200"
# The rest keep tracking: their agents apply newer assignments.
s1=$(sql "$T/agent.n1.db" "SELECT value FROM meta WHERE key='fleet.seq'")
s2=$(sql "$T/agent.n2.db" "SELECT value FROM meta WHERE key='fleet.seq'")
newer() { [ "$(sql "$T/agent.$1.db" "SELECT value FROM meta WHERE key='fleet.seq'")" -gt "$2" ]; }
until_true 10 newer n1 "$s1" || fail "n1 stopped tracking while n3 was cut off"
until_true 10 newer n2 "$s2" || fail "n2 stopped tracking while n3 was cut off"
[ "$(caps n3)" = 200,200 ] || fail "cut-off n3 caps $(caps n3) changed"
ip netns exec "$NETNS" ip link set "pfb$$" up
until_true 30 live || fail "n3 not live again"
until_true 20 tracking n3 2 || fail "n3 not tracking again" # start, cut-off
[ "$fails" = 0 ] || { tail -n 15 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet cut-off: ok"
