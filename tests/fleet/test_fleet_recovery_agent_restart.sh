#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An event right after the jobs' start-up, and an agent killed (kill -9)
# and restarted in the recovery: every cap comes back to its pre-event
# limit within the recovery window (docs/control.md "Recovery"). The jobs
# start cold with pfid (their emulated 150 s start-up, GPUs loaded but
# idle, at 5 times the wall clock's pace: 30 s), and the event comes as
# soon as they train, so the periods before it are mostly idle. The
# trainers report no phase and their last rate stands through the start-up
# (lib.sh): those idle periods must not be learned as the jobs' uncapped
# draw, or the event is infeasible with nothing cut (docs/control.md "An
# event right after a cold start"). A recovery bounded by a measurement of
# the draw before the event (the median of the periods before it, as pfid
# had) holds the cluster near that idle draw: the cuts stay until its 1 h
# limit. The recovery bounded by the draw the running jobs would have at
# their pre-event caps (the controller's beliefs) gives every cap back.
# Two nodes, a 2-GPU training job on each (lib.sh load_agent_start), pfid
# with --recovery-window 60s and a slow ramp (--ramp-up 20 W/s per GPU) so
# that the recovery is under way when the agent dies. Checked on the GPUs'
# limits as the emulators hold them (pfi devices, independent of pfid and
# the agents).
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
FAKE_NVML_AT=0 FAKE_NVML_EMU=realtime=1,speed=5 load_agent_start n1 slurm-5
FAKE_NVML_AT=0 FAKE_NVML_EMU=realtime=1,speed=5 load_agent_start n2 slurm-6
LEASE=6
pfid_start a --recovery-window 60s --ramp-up 20 ${PFID_EXTRA:-}
leads() { api a GET /v1/status | grep -q '"leader":true'; }
until_true 20 leads || { fail "a never led"; exit 1; }
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; tail -n 5 "$T"/agent.*.log >&2; exit 1; }
M="http://127.0.0.1:${API[a]}/metrics"
power() { api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])'; }
# Idle first: the start-up's draw, then training (each GPU at its 700 W
# limit draws several times its idle power).
idle=$(power)
training() { awk -v p="$(power)" -v i="$idle" 'BEGIN { exit !(p > 2 * i && p > 1000) }'; }
until_true 60 training || { fail "the jobs never trained: $(power) W (idle $idle W)"; exit 1; }
known() { for j in 5 6; do curl -s -m 5 "$M" | grep -q "^pfi_job_learned_points{job=\"slurm-$j\"} " || return 1; done; }
until_true 30 known || fail "pfid does not know the jobs"
# The draw settles within a few periods of the start of training (the
# event's target is a share of it, above the jobs' floors).
settled() {
  local a b
  a=$(power); sleep 1; b=$(power)
  awk -v a="$a" -v b="$b" 'BEGIN { d = b - a; if (d < 0) d = -d; exit !(d < 0.02 * b) }'
}
until_true 30 settled || fail "the draw never settled: $(power) W"
draw=$(power)
target=$(awk -v p="$draw" 'BEGIN { printf "%.0f", 0.6 * p }')
echo "idle $idle W, training $draw W, target $target W"
api a POST /v1/events "$(event_json ev1 0 300 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
low() { [ "$(caps "$1" | awk -F, '{print ($1 < 500 && $2 < 500)}')" = 1 ]; }
until_true 40 low n1 || fail "n1 not cut: $(caps n1)"
until_true 40 low n2 || { fail "n2 not cut: $(caps n2)"; sql "$T/records.db" "SELECT * FROM fleet_decisions ORDER BY rowid DESC LIMIT 8" >&2; api a GET /v1/status >&2; }
sleep 3 # (not a check) the event holds a few periods
api a DELETE /v1/events/ev1 >/dev/null
recovering() { [ -n "$(sql "$T/records.db" "SELECT 1 FROM fleet_decisions WHERE reason='recovery' LIMIT 1")" ]; }
until_true 20 recovering || fail "no recovery"
{ kill -9 "${AGENT_PID[n1]}"; wait "${AGENT_PID[n1]}"; } 2>/dev/null
stale() { api a GET /v1/status | grep -q '"stale_nodes":1'; }
until_true 20 stale || fail "n1 never stale"
load_agent_start n1 slurm-5
# Bounded well past the 60 s window (a loaded machine), far under the 1 h
# a recovery held under the idle draw would take.
back() { caps_are n1 700,700 && caps_are n2 700,700; }
until_true 150 back || fail "caps not back: n1 $(caps n1), n2 $(caps n2); $(api a GET /v1/status)"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.n1.log >&2; exit 1; }
echo "event right after start-up, agent killed in the recovery, restarted: caps back: ok"
