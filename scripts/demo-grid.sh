#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The whole grid event on one machine (`make demo-grid`): a mock OpenADR 3.1
# VTN, nats-server, pfid, four emulated nodes of 8 GPUs each running jobs
# from the emulator's library, and `pfi grid bridge` between the VTN and
# pfid. The VTN announces the Phoenix event's target (25 % below the
# fleet's pre-event draw, the cut Emerald AI's cluster was asked for on
# 2025-05-04 from 16:10 to 19:30) compressed 120 times (200 minutes in 100
# seconds); the bridge logs the fleet; `pfi grid event-report` writes the
# event's page and compliance record; at the end each node's caps are shown
# beside its pre-event ones, every cap back at its pre-event limit (the
# recovery, docs/control.md). Everything is emulated and says so.
#
# Usage: scripts/demo-grid.sh [BUILD_DIR] [OUT_DIR]   (about 7 minutes as
# stated: 403 s measured on a loaded 2-core machine, 4 minutes of it the
# emulated jobs' start-up)
#
# Time compression, from the environment (defaults: the demo as stated):
#   PFI_DEMO_SPEED=K       the emulated GPUs' clock runs K times real time
#                          (emu speed=K; default 1: the jobs' start-up, 150
#                          to 240 s, takes that long)
#   PFI_DEMO_COMPRESS=C    the 200-minute event passes C times faster
#                          (default 120: 100 s)
#   PFI_DEMO_BASELINE_S=S  uncapped running before the bridge starts
#                          (default 20)
#   PFI_DEMO_TAIL_S=S      logging after the event ends (default 25)
# tests/cli/test_demo_grid.sh runs it with SPEED=6, COMPRESS=600 (a 20 s
# event), BASELINE_S=5, TAIL_S=5: about 90 s.
set -euo pipefail
SPEED=${PFI_DEMO_SPEED:-1}
COMPRESS=${PFI_DEMO_COMPRESS:-120}
BASELINE_S=${PFI_DEMO_BASELINE_S:-20}
TAIL_S=${PFI_DEMO_TAIL_S:-25}
# The event's length in whole seconds, and the report period (30 s, or a
# third of a shorter event).
EVENT_S=$(awk -v c="$COMPRESS" 'BEGIN { if (!(c >= 1 && c <= 12000)) exit 1; printf "%d", 12000 / c + 0.5 }') ||
  { echo "demo-grid: PFI_DEMO_COMPRESS=$COMPRESS: expected 1 to 12000" >&2; exit 2; }
REPORT_S=$((EVENT_S / 3 < 30 ? (EVENT_S / 3 > 1 ? EVENT_S / 3 : 1) : 30))
for v in BASELINE_S TAIL_S; do
  case ${!v} in '' | *[!0-9]*) echo "demo-grid: PFI_DEMO_$v=${!v}: expected whole seconds" >&2; exit 2 ;; esac
done
B=$(cd "${1:-build}" && pwd)
OUT=${2:-out/demo-grid}
SRC=$(cd "$(dirname "$0")/.." && pwd)
for p in "$B/pfi" "$B/pfid" "$B/pfi-agent"; do
  [ -x "$p" ] || { echo "demo-grid: $p not built (make build first)" >&2; exit 1; }
done
command -v nats-server >/dev/null || { echo "demo-grid: nats-server missing (make deps)" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
secret() { (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$1"); }
wait_for() { # wait_for SECONDS CMD...
  local end=$(($(date +%s) + $1)); shift
  until "$@"; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.3; done
}

# One job a node; the agent names a node's emulated job emu-NODE.
NODES=(n1 n2 n3 n4)
JOBS=(moe-ft-qwen30ba3b-x8 dense-pt-llama70b-x8-compile dense-ft-mistral24b-x8 moe-pt-gptoss20b-x8-ep8-compile)
TIERS=(flex50 flex10 flex25 flex25)
TENANTS=(research prod prod research)

echo "demo-grid: starting nats-server, pfid and ${#NODES[@]} emulated nodes (8 GPUs each)"
NATS_PORT=$(port)
secret "$T/pw.pfid"
{
  echo "listen: 127.0.0.1:$NATS_PORT"
  echo "jetstream { store_dir: \"$T/js\", max_memory_store: 64MB, max_file_store: 256MB }"
  echo "authorization { users = ["
  echo "  { user: pfid, password: \"$(cat "$T/pw.pfid")\", permissions: { publish: \">\", subscribe: \">\" } }"
  for n in "${NODES[@]}"; do
    secret "$T/pw.$n"
    echo "  { user: agent-$n, password: \"$(cat "$T/pw.$n")\","
    echo "    permissions: { publish: { allow: [\"pfi.telemetry.$n\"] }, subscribe: { allow: [\"pfi.assign.$n\"] } } }"
  done
  echo "] }"
} >"$T/nats.conf"
nats-server -c "$T/nats.conf" >"$T/nats.log" 2>&1 &
PIDS+=("$!")
wait_for 10 grep -q "Server is ready" "$T/nats.log" || { echo "nats-server did not start" >&2; exit 1; }
NATS="nats://127.0.0.1:$NATS_PORT"
mkdir -p "$T/tiers"
for i in "${!NODES[@]}"; do
  n=${NODES[$i]}
  mkdir -p "$T/emu.$n"
  case ${TIERS[$i]} in flex10) echo 0.10 ;; flex25) echo 0.25 ;; flex50) echo 0.50 ;; esac >"$T/tiers/emu-$n"
  "$B/pfi-agent" --node "$n" --nats "$NATS" --password-file "$T/pw.$n" --emulate \
    --params "gpus=8,state=$T/emu.$n,speed=$SPEED" --emu-job "${JOBS[$i]}" --tier-dir "$T/tiers" \
    --record "$T/agent.$n.db" --period 0.5 >"$T/agent.$n.log" 2>&1 &
  PIDS+=("$!")
done
secret "$T/token"
API=$(port)
"$B/pfid" --id demo --nats "$NATS" --password-file "$T/pw.pfid" --records "$OUT/records.db" \
  --api "127.0.0.1:$API" --token-file "$T/token" --period 1 >"$T/pfid.log" 2>&1 &
PIDS+=("$!")
live() { curl -s -m 2 "http://127.0.0.1:$API/v1/status" | grep -q "\"nodes\":${#NODES[@]},\"stale_nodes\":0"; }
wait_for 60 live || { echo "demo-grid: the fleet did not come up; see $T" >&2; tail "$T/pfid.log" >&2; exit 1; }

echo "demo-grid: waiting for the emulated jobs to finish their start-up (up to 5 minutes at speed 1)"
ready() {
  curl -s -m 2 "http://127.0.0.1:$API/v1/jobs" | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin) if x.get("tokens_per_s", 0) > 0]
sys.exit(0 if len({x["job"] for x in j}) >= '"${#NODES[@]}"' else 1)'
}
wait_for 300 ready || { echo "demo-grid: the jobs did not start; see $T" >&2; exit 1; }
echo "demo-grid: starting the mock VTN and the bridge; $BASELINE_S s of uncapped running for the baseline"
python3 "$SRC/tests/mock-vtn/mock_vtn.py" --port-file "$T/vtnport" --lifetime 600 &
PIDS+=("$!")
wait_for 10 test -s "$T/vtnport"
BASE="http://127.0.0.1:$(cat "$T/vtnport")/openadr3"
rm -rf "$OUT/log"
printf 'ven-secret\n' >"$T/ven.secret"
chmod 600 "$T/ven.secret"
sleep "$BASELINE_S"
BASELINE=$(curl -s -m 2 "http://127.0.0.1:$API/v1/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])')
# Each node's caps (W, as its agent reports them), before the event.
node_caps() { curl -s -m 5 "http://127.0.0.1:$API/v1/nodes" | python3 -c 'import json,sys
for n in sorted(json.load(sys.stdin), key=lambda n: n["node"]):
    print(n["node"], ",".join("%g" % g["cap_w"] for g in n["gpus"]))'; }
node_caps >"$T/caps.pre"
echo "demo-grid: fleet GPU power before the event: $BASELINE W (emulated)"
"$B/pfi" grid bridge --pfid "http://127.0.0.1:$API" --pfid-token-file "$T/token" \
  --vtn "$BASE" --client-id ven1 --client-secret-file "$T/ven.secret" --program site-flex \
  --level gpu --baseline "$BASELINE" --interval 1 --report "${REPORT_S}s" --log "$OUT/log" >"$T/bridge.log" 2>&1 &
BRIDGE=$!
PIDS+=("$BRIDGE")
sleep 5

BL=$(curl -sS -m 5 -d grant_type=client_credentials -d client_id=bl1 -d client_secret=bl-secret \
  "$BASE/auth/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
blpost() { curl -sS -m 5 -H "Authorization: Bearer $BL" -H 'Content-Type: application/json' -d "$2" "$BASE/$1"; }
PID=$(blpost programs '{"programName":"site-flex"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
START=$(date -u -d @$(($(date +%s) + 5)) +%Y-%m-%dT%H:%M:%SZ)
blpost events '{"programID":"'"$PID"'","eventName":"phoenix-2025-05-04-x'"$COMPRESS"'","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"DISPATCH_SETPOINT_RELATIVE","units":"PERCENT"}],"intervalPeriod":{"start":"'"$START"'","duration":"PT'"$EVENT_S"'S"},"intervals":[{"id":0,"payloads":[{"type":"DISPATCH_SETPOINT_RELATIVE","values":[-25]}]}]}' >/dev/null
echo "demo-grid: the VTN announced a 25 % cut from $START for $EVENT_S s (200 minutes at ${COMPRESS}x)"
sleep $((5 + EVENT_S + TAIL_S))
kill "$BRIDGE"
wait "$BRIDGE" 2>/dev/null || true
# The recovery ends with every cap at its pre-event limit (bounded wait).
state() { curl -s -m 5 "http://127.0.0.1:$API/v1/status" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state", "?"))'; }
back() { node_caps >"$T/caps.now"; [ "$(state)" = idle ] && cmp -s "$T/caps.pre" "$T/caps.now"; }
wait_for 120 back || true
echo "demo-grid: each node's caps now, and before the event"
join "$T/caps.now" "$T/caps.pre" | while read -r n now pre; do
  printf '  %s  now %-32s before %-32s %s\n' "$n" "$now" "$pre" \
    "$([ "$now" = "$pre" ] && echo back || echo 'NOT BACK')"
done
cmp -s "$T/caps.pre" "$T/caps.now" || { echo "demo-grid: caps not back at their pre-event limits" >&2; exit 1; }
echo "demo-grid: every cap back at its pre-event limit"

cat >"$OUT/contract.csv" <<EOF
job,tier,tenant
$(for i in "${!NODES[@]}"; do echo "emu-${NODES[$i]},${TIERS[$i]},${TENANTS[$i]}"; done)
EOF
printf 'tier,max_loss,max_event_s\nflex10,0.10,14400\nflex25,0.25,14400\nflex50,0.50,14400\n' >"$OUT/tiers.csv"
printf '# emulated site figures, not a measurement\nnode_other_w = 1200\npsu_rated_w = 9000\npsu_curve = 0.1:0.90,0.2:0.94,0.5:0.96,1.0:0.91\npue = 1.3\n' >"$OUT/meter.conf"
"$B/pfi" grid event-report --log "$OUT/log" --contract "$OUT/contract.csv" --tiers "$OUT/tiers.csv" \
  --config "$OUT/meter.conf" --nodes ${#NODES[@]} --phoenix --emulated --out "$OUT" | tee "$OUT/summary.json"
echo "demo-grid: wrote $OUT/event.html (emulated fleet)"
