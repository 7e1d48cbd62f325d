#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The fleet at scale on one machine (EMULATED GPUs): a loopback nats-server,
# pfid, and bench_fleet running NODES agents of 8 emulated GPUs in PROCS
# processes (one NATS connection each with one user for all of them: the
# per-node permissions of a real fleet do not apply inside it). State on
# /dev/shm.
# Usage: bash scripts/fleet-bench.sh [NODES] [BUILD_DIR] [HOLD_S] [PROCS]
# (HOLD_S: seconds the event is held after every cap is applied, for more
# control periods in pfid's period-work figures; default 0. PROCS: default
# 2. FLEET_BENCH_CSV=FILE appends the run's figures to FILE, which
# `bench_fleet --plot FILE OUT.svg` draws. FLEET_BENCH_SERVERS=3 (or 5)
# runs the NATS side as a cluster of that many loopback servers, routes
# between them, the bucket replicated on three (R3), pfid and the workers
# given every server's URL, as docs/fleet.md "A NATS cluster" gives it.)
set -euo pipefail
N=${1:-1250}
B=${2:-build}
H=${3:-0}
P=${4:-2}
command -v nats-server >/dev/null || { echo "fleet-bench: needs nats-server" >&2; exit 2; }
base=/dev/shm
[ -w "$base" ] || base=${TMPDIR:-/tmp}
T=$(mktemp -d "$base/pfi-fleet-bench.XXXXXX")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pw() { (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$1"); }
AP=$(port)
S=${FLEET_BENCH_SERVERS:-1}
pw "$T/pw.pfid"; pw "$T/pw.bench"; pw "$T/token"
users="authorization { users = [
  { user: pfid, password: \"$(cat "$T/pw.pfid")\" }
  { user: bench, password: \"$(cat "$T/pw.bench")\", permissions: { publish: \"pfi.telemetry.>\", subscribe: \"pfi.assign.>\" } }
] }"
NP=() CP=() URL="" routes=""
for ((i = 0; i < S; i++)); do
  NP[i]=$(port) CP[i]=$(port)
  URL+="${URL:+,}nats://127.0.0.1:${NP[i]}"
  routes+="${routes:+, }nats-route://127.0.0.1:${CP[i]}"
done
for ((i = 0; i < S; i++)); do
  {
    echo "server_name: s$i"
    echo "listen: 127.0.0.1:${NP[i]}"
    echo "max_payload: 1MB"
    echo "jetstream { store_dir: \"$T/js.$i\", max_file_store: 1GB }"
    [ "$S" -gt 1 ] && echo "cluster { name: bench, listen: 127.0.0.1:${CP[i]}, routes: [ $routes ] }"
    echo "$users"
  } >"$T/nats.$i.conf"
  nats-server -c "$T/nats.$i.conf" >"$T/nats.$i.log" 2>&1 & PIDS+=($!)
done
for ((i = 0; i < S; i++)); do
  for k in $(seq 100); do grep -q "Server is ready" "$T/nats.$i.log" 2>/dev/null && break; sleep 0.1; done
done
# A cluster's JetStream takes requests once it has a metadata leader.
if [ "$S" -gt 1 ]; then
  for k in $(seq 300); do grep -q "metadata leader" "$T"/nats.*.log && break; sleep 0.1; done
fi
"$B/pfid" --id bench --nats "$URL" --password-file "$T/pw.pfid" --records "$T/records.db" \
  --api "127.0.0.1:$AP" --token-file "$T/token" --stale 30 --lease 30 >"$T/pfid.log" 2>&1 & PFID=$!
PIDS+=($PFID)
ulimit -n 65536 2>/dev/null || true
"$B/bench_fleet" --nats "$URL" --user bench --password-file "$T/pw.bench" \
  --api "http://127.0.0.1:$AP" --token-file "$T/token" --pfid-pid "$PFID" --dir "$T" --nodes "$N" --hold "$H" \
  --procs "$P" ${FLEET_BENCH_CSV:+--csv "$FLEET_BENCH_CSV"}
