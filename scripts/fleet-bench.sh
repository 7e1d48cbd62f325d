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
# `bench_fleet --plot FILE OUT.svg` draws.)
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
NP=$(port) AP=$(port)
pw "$T/pw.pfid"; pw "$T/pw.bench"; pw "$T/token"
cat >"$T/nats.conf" <<EOC
listen: 127.0.0.1:$NP
max_payload: 1MB
jetstream { store_dir: "$T/js", max_file_store: 1GB }
authorization { users = [
  { user: pfid, password: "$(cat "$T/pw.pfid")" }
  { user: bench, password: "$(cat "$T/pw.bench")", permissions: { publish: "pfi.telemetry.>", subscribe: "pfi.assign.>" } }
] }
EOC
nats-server -c "$T/nats.conf" >"$T/nats.log" 2>&1 & PIDS+=($!)
for i in $(seq 50); do grep -q "Server is ready" "$T/nats.log" 2>/dev/null && break; sleep 0.1; done
"$B/pfid" --id bench --nats "nats://127.0.0.1:$NP" --password-file "$T/pw.pfid" --records "$T/records.db" \
  --api "127.0.0.1:$AP" --token-file "$T/token" --stale 30 --lease 30 >"$T/pfid.log" 2>&1 & PFID=$!
PIDS+=($PFID)
ulimit -n 65536 2>/dev/null || true
"$B/bench_fleet" --nats "nats://127.0.0.1:$NP" --user bench --password-file "$T/pw.bench" \
  --api "http://127.0.0.1:$AP" --token-file "$T/token" --pfid-pid "$PFID" --dir "$T" --nodes "$N" --hold "$H" \
  --procs "$P" ${FLEET_BENCH_CSV:+--csv "$FLEET_BENCH_CSV"}
