#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid leaves uncut a node whose agent cannot record (telemetry record_ok
# false: it could not write the limits it would restore; docs/fleet.md
# "Trust"). n1's record is on a tmpfs of 1 MiB that the test fills before
# any event, until n1's /metrics and pfid's /v1/nodes say it cannot
# record (an event far above the draw gives it an assignment to record);
# n2 records as usual. An event whose target is under every
# floor (400 W for four GPUs of 200-700 W): n2 goes to its floor (200 W
# each, the event acting), n1 keeps its 700 W limits on every check while
# the event holds, and pfid sends n1 no assignment under them (the agent
# itself would apply a cut: with the originals in memory it takes caps at
# or below them, test_fleet_record_full). Limits read from the emulators'
# state, independent of pfid and the agents. Needs root and tmpfs (77).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a small tmpfs"; exit 77; }
mkdir -p "$T/small"
mount -t tmpfs -o size=1m tmpfs "$T/small" 2>/dev/null ||
  { echo "SKIP: cannot mount a tmpfs (mount not permitted here)"; exit 77; }
trap 'cleanup_full' EXIT
cleanup_full() { # the agent stopped (bounded) before the tmpfs goes, then the rest
  local p=${AGENT_PID[n1]:-} i
  if [ -n "$p" ]; then
    kill "$p" 2>/dev/null
    for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null
  fi
  umount "$T/small" 2>/dev/null
  cleanup
}

setup_nats n1 n2
M=$(free_port)
agent_start n1 2 --record "$T/small/agent.db" --metrics "127.0.0.1:$M"
agent_start n2 2
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live || { fail "n1, n2 not live"; exit 1; }
cannot() { # cannot VALUE: the agent's pfi_agent_cannot_record
  [ "$(curl -s -m 5 "http://127.0.0.1:$M/metrics" | awk '$1 ~ /^pfi_agent_cannot_record/ { print $2 }')" = "$1" ]
}
until_true 10 cannot 0 || fail "cannot_record not 0 at the start"
fill() { dd if=/dev/zero of="$T/small/fill.$1" bs=4k 2>/dev/null; [ "$(df --output=avail "$T/small" | tail -1)" -lt 8 ]; }
fill 1 || fail "the tmpfs is not full: $(df "$T/small" | tail -1)"
# The agent writes its record when it takes an assignment: a first event
# gives it one (100 kW; GPUs without a job are held at their lowest caps in
# any event, so n1 is cut to 200 W before it can say it cannot record, and
# restored at the event's end: the limit it holds changes while it cannot
# record, which must not leave it held at the cut).
api a POST /v1/events "$(event_json ev0 0 120 100000)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST ev0: HTTP $(cat "$T/code")"
until_true 30 cannot 1 || { fail "n1's agent never said it cannot record"; exit 1; }
api a DELETE /v1/events/ev0 >/dev/null
until_true 30 caps_are n1 700,700 || fail "n1 caps $(caps n1) after the first event, expected its limits back"
# What SQLite freed meanwhile (its journal) taken too: the record stays
# unwritable for the rest of the test.
fill 2 || fail "the tmpfs is not full the second time"
refused() { # pfid's view of n1: record_ok false, its limits (700 W) back
  api a GET /v1/nodes | python3 -c '
import json, sys
d = json.load(sys.stdin)
nodes = d["nodes"] if isinstance(d, dict) else d
sys.exit(0 if any(n.get("node") == "n1" and n.get("record_ok") is False and
                  all(g["cap_w"] == 700 for g in n["gpus"]) for n in nodes) else 1)'
}
until_true 20 refused || { fail "pfid does not see n1's record_ok false: $(api a GET /v1/nodes)"; exit 1; }

api a POST /v1/events "$(event_json ev1 0 120 400)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
until_true 30 caps_are n2 200,200 || fail "n2 caps $(caps n2), expected its floor 200,200 (the event not acting)"
for i in 1 2 3 4 5 6; do # a few periods of the event in force
  caps_are n1 700,700 || { fail "check $i: n1 caps $(caps n1) while it cannot record, expected 700,700"; [ $i = 1 ] && { api a GET /v1/nodes >&2; sql "$T/records.db" "SELECT * FROM fleet_assignments" >&2; grep controller "$T/pfid.a.log" >&2; }; }
  sleep 0.5
done
cannot 1 || fail "n1's agent could record again during the test (the check proves nothing)"
grep -q 'is written again' "$T/agent.n1.log" && fail "n1's record was written again during the test"
low=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE node='n1' AND event='ev1' AND caps_mw NOT LIKE '%700000%700000%'")
[ "${low:-x}" = 0 ] || fail "pfid sent n1 $low assignment(s) under its limits: $(sql "$T/records.db" "SELECT caps_mw FROM fleet_assignments WHERE node='n1' AND event='ev1'")"
api a DELETE /v1/events/ev1 >/dev/null
rm -f "$T/small/fill.1" "$T/small/fill.2"
until_true 30 caps_are n2 700,700 || fail "n2 caps $(caps n2) after the event, expected 700,700"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.n1.log >&2; exit 1; }
echo "a node that cannot record is left uncut: ok"
