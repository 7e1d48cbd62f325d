#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An emulated fleet on one machine (EMULATED GPUs, not measurements):
# nats-server with JetStream on a free loopback port, pfid, and 4 agents of
# 8 emulated H200 each running a job-library job; an event asks for 75 %
# of the fleet's power for 40 s; after it the recovery brings every cap back
# to its pre-event limit (along the recovery's ramp), and pfid's API shows
# each node's caps beside the pre-event ones, and the records.
# Usage: bash scripts/fleet-demo.sh [BUILD_DIR]
set -euo pipefail
B=${1:-build}
PFI=$B/pfi AGENT=$B/pfi-agent PFID=$B/pfid
command -v nats-server >/dev/null || { echo "fleet-demo: needs nats-server" >&2; exit 2; }
T=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$T"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pw() { (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$1"); }
NP=$(port) AP=$(port)
pw "$T/pw.pfid"; pw "$T/token"
# Jobs without torch.compile: their emulated startup (loading, no
# training) lasts 150 s, after which they train at full power.
jobs=(dense-ft-llama70b-x8-nocompile dense-pt-qwen32b-x8-nocompile moe-ft-qwen30ba3b-x8 dense-pt-llama70b-x8-nocompile)
{
  echo "listen: 127.0.0.1:$NP"
  echo "jetstream { store_dir: \"$T/js\" }"
  echo "authorization { users = ["
  echo "  { user: pfid, password: \"$(cat "$T/pw.pfid")\", permissions: { publish: \">\", subscribe: \">\" } }"
  for i in 1 2 3 4; do
    pw "$T/pw.n$i"
    echo "  { user: agent-n$i, password: \"$(cat "$T/pw.n$i")\", permissions: { publish: { allow: [\"pfi.telemetry.n$i\"] }, subscribe: { allow: [\"pfi.assign.n$i\"] } } }"
  done
  echo "] }"
} >"$T/nats.conf"
nats-server -c "$T/nats.conf" >"$T/nats.log" 2>&1 & PIDS+=($!)
for i in $(seq 50); do grep -q "Server is ready" "$T/nats.log" 2>/dev/null && break; sleep 0.1; done
for i in 1 2 3 4; do
  mkdir -p "$T/emu.n$i"
  "$AGENT" --node "n$i" --nats "nats://127.0.0.1:$NP" --password-file "$T/pw.n$i" --emulate \
    --params "gpus=8,state=$T/emu.n$i" --emu-job "${jobs[$((i - 1))]}" \
    --record "$T/agent.n$i.db" >"$T/agent.n$i.log" 2>&1 & PIDS+=($!)
done
"$PFID" --id demo --nats "nats://127.0.0.1:$NP" --password-file "$T/pw.pfid" --records "$T/records.db" \
  --api "127.0.0.1:$AP" --token-file "$T/token" >"$T/pfid.log" 2>&1 & PIDS+=($!)
ctl() { "$PFI" ctl --url "http://127.0.0.1:$AP" --token-file "$T/token" --format json "$@"; }
for i in $(seq 100); do ctl status 2>/dev/null | grep -q '"nodes":4,"stale_nodes":0' && break; sleep 0.2; done
echo "fleet: 4 agents of 8 emulated GPUs; the jobs start up (150 s emulated startup) ..."
pw_now() { ctl status 2>/dev/null | python3 -c 'import json,sys
try: print(round(json.load(sys.stdin)["power_w"], 1))
except Exception: print(0)'; }
for i in $(seq 120); do
  python3 -c "import sys; sys.exit(0 if $(pw_now) > 32 * 300 else 1)" && break
  sleep 2
done
sleep 15 # uncapped periods: the controller learns each job's uncapped power
power=$(pw_now)
target=$(python3 -c "print(round($power * 0.75))")
# Each node's caps before the event (W, as its agent reports them).
node_caps() { ctl nodes | python3 -c 'import json,sys
for n in sorted(json.load(sys.stdin), key=lambda n: n["node"]):
    print(n["node"], ",".join("%g" % g["cap_w"] for g in n["gpus"]))'; }
node_caps >"$T/caps.pre"
echo "fleet: 32 emulated GPUs drawing $power W; event: $target W (75 %) for 40 s"
ctl submit ev1 +0 +40 "$target" >/dev/null
for t in 5 10 20 30 40; do
  sleep $((t - ${last:-0})); last=$t
  ctl status | python3 -c 'import json,sys; s=json.load(sys.stdin); print("  t=%2ss  power %8.1f W  target %8.1f W" % ('"$t"', s["power_w"], s["target_w"]))'
done
# The recovery: caps back up along the cluster's ramp (docs/control.md
# "Recovery"), every one within the recovery window (15 min; here seconds).
t0=$(date +%s.%N)
for i in $(seq 240); do
  st=$(ctl status | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state", "?"))')
  node_caps >"$T/caps.now"
  [ "$st" = idle ] && cmp -s "$T/caps.pre" "$T/caps.now" && break
  sleep 0.5
done
echo "after the event ($(python3 -c "print(round($(date +%s.%N) - $t0))") s): each node's caps now, and before the event"
join "$T/caps.now" "$T/caps.pre" | while read -r n now pre; do
  printf '  %s  now %-32s before %-32s %s\n' "$n" "$now" "$pre" \
    "$([ "$now" = "$pre" ] && echo back || echo 'NOT BACK')"
done
if ! cmp -s "$T/caps.pre" "$T/caps.now"; then
  echo "fleet-demo: caps not back at their pre-event limits" >&2
  exit 1
fi
echo "every cap back at its pre-event limit"
echo "records (assignments that changed caps):"
ctl records | python3 -c 'import json,sys
for r in json.load(sys.stdin)[-8:]: print("  %s seq %s %s %s" % (r["node"], r["seq"], r["kind"], r["caps_mw"][:60]))'
sqlite3 "$T/records.db" "SELECT job, reason, round(cap_req_w), round(shortfall_w) FROM fleet_decisions" | head -5
echo "decisions of the control module: $(sqlite3 "$T/records.db" 'SELECT count(*) FROM fleet_decisions' 2>/dev/null || echo '?')"
