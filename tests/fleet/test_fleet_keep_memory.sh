#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A job that appears during an event rebuilds pfid's control module (its
# GPUs are fixed when it is built): the job already there keeps what it
# learned (control.h pfi_ctl_job_save / pfi_ctl_job_restore). slurm-5 on
# n1's two GPUs learns its uncapped point before the event and at least
# one (power, throughput) point under the event's cut; then n2 joins with
# slurm-6 on its two. The /metrics scrape
# that first shows slurm-6 (the new module) shows slurm-5 with no fewer
# learned points than before (0 while its memory was dropped), and
# fleet_log says the job kept its memory.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
# Each node's GPUs run a 2-GPU training workload (lib.sh load_agent_start).
load_agent_start n1 slurm-5
pfid_start a
live() { api a GET /v1/status | grep -q "\"nodes\":$1,\"stale_nodes\":0"; }
until_true 30 live 1 || { fail "a live node"; exit 1; }

M="http://127.0.0.1:${API[a]}/metrics"
# pts JOB: the job's learned points in a scrape saved in $T/m ("" absent).
pts() { awk -v k="pfi_job_learned_points{job=\"$1\"}" '$1 == k { print $2 }' "$T/m"; }
scrape() { curl -s -m 5 "$M" >"$T/m"; }
pmax_known() { scrape; grep -q '^pfi_job_power_flexibility_index{job="slurm-5"} ' "$T/m"; }
until_true 30 pmax_known || fail "slurm-5's uncapped point not learned: $(grep pfi_job_ "$T/m")"

# The event: 70 % of what the two GPUs draw now.
draw=$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])')
target=$(awk -v p="$draw" 'BEGIN { printf "%.0f", 0.7 * p }')
api a POST /v1/events "$(event_json ev1 0 300 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
learned() { scrape; [ "$(pts slurm-5)" ] && [ "$(pts slurm-5)" -ge 1 ]; }
until_true 90 learned || fail "slurm-5 learned no point in the event: $(grep pfi_job_ "$T/m")"
before=$(pts slurm-5)

# n2 joins with slurm-6: the module is rebuilt.
load_agent_start n2 slurm-6
seen6() { scrape; [ -n "$(pts slurm-6)" ]; }
until_true 30 seen6 || fail "slurm-6 never in /metrics"
after=$(pts slurm-5)
[ -n "$after" ] && [ "$after" -ge "$before" ] ||
  fail "slurm-5's learned points: $before before slurm-6 came, '$after' in the new module"
kept() { [ -n "$(sql "$T/records.db" "SELECT detail FROM fleet_log WHERE detail LIKE '1 of 1 jobs kept their memory'")" ]; }
until_true 10 kept || fail "no 'kept their memory' in fleet_log: $(sql "$T/records.db" "SELECT what, detail FROM fleet_log")"
api a DELETE /v1/events/ev1 >/dev/null
[ "$fails" = 0 ] || exit 1
echo "keep memory: ok"
