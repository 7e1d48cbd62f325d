#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# kill -9 of the leading pfid during an event's recovery: the standby that
# takes the lead goes on with the recovery (docs/fleet.md "Takeover"), under
# the baseline the old leader kept in the bucket (key "ctl") and toward the
# limits the agents restore (telemetry restore_mw), ramp-limited, rather
# than restoring every node at once (a synchronized spike). Two emulated
# agents, a 2-GPU training job on each (lib.sh load_agent_start), pfid a
# and b at --ramp-up 5 W/s.
# Checked on the GPUs' limits sampled from the emulator's state (pfi
# devices, independent of pfid) from the kill on: no GPU whose cap still
# binds (under the job's uncapped per-GPU draw, measured before the event)
# rises faster than 5 W/s (plus 10 W for the sampling's slack), and 8 s
# after b leads a GPU is still on its way; b's log says the recovery goes on.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
load_agent_start n1 slurm-5
load_agent_start n2 slurm-6
# The agents' lease outlasts the takeover (leader lease 1.5 s + a period).
LEASE=6
pfid_start a --ramp-up 5
leads() { api "$1" GET /v1/status | grep -q '"leader":true'; }
until_true 20 leads a || { fail "a never led"; exit 1; }
pfid_start b --ramp-up 5
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }
M="http://127.0.0.1:${API[a]}/metrics"
known() { for j in 5 6; do curl -s -m 5 "$M" | grep -q "^pfi_job_learned_points{job=\"slurm-$j\"} " || return 1; done; }
until_true 30 known || fail "pfid does not know the jobs"
sleep 3 # (not a check) a few uncapped periods learned
# The jobs' uncapped draw per GPU, the highest of the four.
uncapped=$(api a GET /v1/nodes | python3 -c '
import json, sys
print(max(g["power_w"] for n in json.load(sys.stdin) for g in n["gpus"] if "power_w" in g))')
draw=$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])')
target=$(awk -v p="$draw" 'BEGIN { printf "%.0f", 0.6 * p }')
api a POST /v1/events "$(event_json ev1 0 300 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
# Cut: every GPU at least 60 W under its uncapped draw.
cut() { [ "$(caps "$1" | awk -F, -v u="$uncapped" '{print ($1 < u - 60 && $2 < u - 60)}')" = 1 ]; }
until_true 30 cut n1 || fail "n1 not cut: $(caps n1), uncapped $uncapped W"
until_true 30 cut n2 || fail "n2 not cut: $(caps n2)"
ctl_kept() { [ -n "$(sql "$T/records.db" "SELECT 1 FROM fleet_decisions WHERE event='ev1' LIMIT 1")" ]; }
until_true 10 ctl_kept || fail "no decisions recorded"
sleep 2 # (not a check) the old leader writes its baseline ("ctl") at once

# The event ends; a's recovery begins; a dies in it.
api a DELETE /v1/events/ev1 >/dev/null
recovering() { [ -n "$(sql "$T/records.db" "SELECT 1 FROM fleet_decisions WHERE leader='a' AND reason='recovery' LIMIT 1")" ]; }
until_true 20 recovering || fail "a never recovered: $(sql "$T/records.db" "SELECT reason, count(*) FROM fleet_decisions GROUP BY reason")"
(while [ ! -e "$T/stop" ]; do echo "$(now),$(caps n1),$(caps n2)"; sleep 0.2; done) >"$T/samples" &
SAMPLER=$!
PIDS+=("$SAMPLER")
sleep 0.3
{ kill -9 "${PFID_PID[a]}"; wait "${PFID_PID[a]}"; } 2>/dev/null
until_true 20 leads b || fail "b never took over"
sleep 8
# (not a check) enough samples, however slowly a loaded machine takes them
enough() { [ "$(wc -l <"$T/samples")" -ge 22 ]; }
until_true 30 enough || true
touch "$T/stop"
wait "$SAMPLER"

grep -q "recovery from ev1 goes on in the new module" "$T/pfid.b.log" ||
  fail "b did not go on with the recovery: $(tail -n 8 "$T/pfid.b.log")"
python3 - "$T/samples" "$uncapped" <<'PY' || fail "caps: $(tr '\n' ' ' <"$T/samples" | tail -c 3000)"
import sys
rows = [list(map(float, l.strip().split(","))) for l in open(sys.argv[1]) if l.count(",") == 4]
u = float(sys.argv[2])
assert len(rows) >= 20, ("too few samples", len(rows))
for (t0, *a), (t1, *b) in zip(rows, rows[1:]):
    for g, (x, y) in enumerate(zip(a, b)):
        if x < u - 10:
            assert y <= x + 5 * (t1 - t0) + 10, ("GPU %d rose %g -> %g W in %.2f s" % (g, x, y, t1 - t0))
last = rows[-1][1:]
assert min(last) < u - 10, ("every GPU back already", last, u)
PY
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log >&2; exit 1; }
echo "takeover in recovery: ok"
