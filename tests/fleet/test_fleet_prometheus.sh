#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Prometheus (Debian's) scrapes two agents' /metrics and pfid's, and the
# test reads them back through Prometheus's HTTP API: the limits the
# agents report are the emulator's (700 W, then the 200 W of an event on
# idle GPUs), the agents' mode is tracking, pfid is the leader.
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || { echo "SKIP: no prometheus"; exit 77; }
setup_nats n1 n2
mkdir -p "$T/emu.n1" "$T/emu.n2"
M1=$(free_port) M2=$(free_port) PP=$(free_port)
agent_start n1 2 --metrics "127.0.0.1:$M1"
agent_start n2 2 --metrics "127.0.0.1:$M2"
pfid_start a
cat >"$T/prometheus.yml" <<EOC
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: pfi-agent
    static_configs: [ { targets: ["127.0.0.1:$M1", "127.0.0.1:$M2"] } ]
  - job_name: pfid
    static_configs: [ { targets: ["127.0.0.1:${API[a]}"] } ]
EOC
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$PP" >"$T/prometheus.log" 2>&1 &
PIDS+=("$!")
# query EXPR: the values of an instant query, sorted, comma-separated.
query() {
  curl -s -m 5 --get "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys
try: r = json.load(sys.stdin)["data"]["result"]
except Exception: r = []
print(",".join(sorted("%g" % float(x["value"][1]) for x in r)))'
}
is() { [ "$(query "$1")" = "$2" ]; }
until_true 60 is 'pfi_gpu_power_limit_watts' 700,700,700,700 ||
  fail "limits through Prometheus: $(query pfi_gpu_power_limit_watts), expected 700 x 4"
until_true 30 is 'pfi_pfid_leader{pfid="a"}' 1 || fail "pfid leader through Prometheus: $(query pfi_pfid_leader)"
api a POST /v1/events "$(event_json ev1 0 120 1000)" >/dev/null
until_true 60 is 'pfi_gpu_power_limit_requested_watts' 200,200,200,200 ||
  fail "requested limits: $(query pfi_gpu_power_limit_requested_watts), expected 200 x 4"
until_true 30 is 'pfi_gpu_power_limit_enforced_watts' 200,200,200,200 ||
  fail "enforced limits: $(query pfi_gpu_power_limit_enforced_watts)"
until_true 30 is 'sum(pfi_agent_mode{mode="tracking"})' 2 || fail "agents tracking: $(query 'pfi_agent_mode{mode="tracking"}')"
until_true 30 is 'pfi_fleet_target_watts' 1000 || fail "target through Prometheus: $(query pfi_fleet_target_watts)"
# Units: one series per GPU, labelled by node and gpu.
[ "$(query 'count by (node) (pfi_gpu_power_watts)')" = 2,2 ] || fail "power series per node"
[ "$fails" = 0 ] || { tail -n 20 "$T/prometheus.log" >&2; exit 1; }
echo "fleet prometheus: ok"
