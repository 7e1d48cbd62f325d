#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# kill -9 of an agent in the recovery after an event, and its restart: the
# recovery still ends with every cap back at its pre-event limit (docs/
# control.md "Recovery"). Two nodes, a 2-GPU training job on each (lib.sh
# load_agent_start), pfid with --recovery-window 60s and a slow ramp
# (--ramp-up 20 W/s per GPU) so that the recovery is under way when the
# agent dies. Checked on the GPUs' limits as the emulators hold them (pfi
# devices, independent of pfid and the agents).
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
load_agent_start n1 slurm-5
load_agent_start n2 slurm-6
LEASE=6
pfid_start a --recovery-window 60s --ramp-up 20
leads() { api a GET /v1/status | grep -q '"leader":true'; }
until_true 20 leads || { fail "a never led"; exit 1; }
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }
M="http://127.0.0.1:${API[a]}/metrics"
known() { for j in 5 6; do curl -s -m 5 "$M" | grep -q "^pfi_job_learned_points{job=\"slurm-$j\"} " || return 1; done; }
until_true 30 known || fail "pfid does not know the jobs"
sleep 2 # (not a check) a few periods of the jobs at their limits
draw=$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])')
target=$(awk -v p="$draw" 'BEGIN { printf "%.0f", 0.6 * p }')
api a POST /v1/events "$(event_json ev1 0 300 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
low() { [ "$(caps "$1" | awk -F, '{print ($1 < 500 && $2 < 500)}')" = 1 ]; }
until_true 40 low n1 || fail "n1 not cut: $(caps n1)"
until_true 40 low n2 || fail "n2 not cut: $(caps n2)"
sleep 3 # (not a check) the event holds a few periods
api a DELETE /v1/events/ev1 >/dev/null
recovering() { [ -n "$(sql "$T/records.db" "SELECT 1 FROM fleet_decisions WHERE reason='recovery' LIMIT 1")" ]; }
until_true 20 recovering || fail "no recovery"
{ kill -9 "${AGENT_PID[n1]}"; wait "${AGENT_PID[n1]}"; } 2>/dev/null
stale() { api a GET /v1/status | grep -q '"stale_nodes":1'; }
until_true 20 stale || fail "n1 never stale"
load_agent_start n1 slurm-5
back() { caps_are n1 700,700 && caps_are n2 700,700; }
until_true 150 back || fail "caps not back: n1 $(caps n1), n2 $(caps n2); $(api a GET /v1/status)"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.n1.log >&2; exit 1; }
echo "agent killed in the recovery, restarted: caps back: ok"
