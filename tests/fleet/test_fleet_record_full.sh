#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An agent whose record is on a full file system: agent
# n1's record on a tmpfs of 1 MiB that the test fills.
# An event still cuts it (200 W, read from the emulator's state), its
# /metrics and log say it cannot record (telemetry's record_ok false); space
# back, the record is written (the limits before the event, 700 W, in its
# ledger; the sequence number applied). Filled again, the event cancelled:
# the limits come back from memory (700 W), and once space is back the
# record says restored (no ledger row left). Needs root and tmpfs (77).
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

setup_nats n1
M=$(free_port)
agent_start n1 2 --record "$T/small/agent.db" --metrics "127.0.0.1:$M"
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || fail "n1 not live"
cannot() { # cannot VALUE: the agent's pfi_agent_cannot_record
  [ "$(curl -s -m 5 "http://127.0.0.1:$M/metrics" | awk '$1 ~ /^pfi_agent_cannot_record/ { print $2 }')" = "$1" ]
}
until_true 10 cannot 0 || fail "cannot_record not 0 at the start"
fill() { dd if=/dev/zero of="$T/small/fill.$1" bs=4k 2>/dev/null; [ "$(df --output=avail "$T/small" | tail -1)" -lt 8 ]; }
fill 1 || fail "the tmpfs is not full: $(df "$T/small" | tail -1)"

api a POST /v1/events "$(event_json ev1 0 120 400)" >/dev/null
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1) with its record full, expected the cut to 200,200"
until_true 10 cannot 1 || fail "the agent's /metrics does not say it cannot record"
grep -q 'cannot write the record' "$T/agent.n1.log" || fail "no log of the record that cannot be written"

rm -f "$T/small/fill.1"
until_true 20 cannot 0 || fail "cannot_record still 1 with space back"
ledger=$(sql "$T/small/agent.db" "SELECT group_concat(cap_mw) FROM (SELECT cap_mw FROM cap_ledger ORDER BY gpu)")
[ "$ledger" = 700000,700000 ] || fail "n1 ledger '$ledger' once written, expected 700000,700000"
seq=$(sql "$T/small/agent.db" "SELECT value FROM meta WHERE key='fleet.seq'")
[ "${seq:-0}" -gt 0 ] 2>/dev/null || fail "fleet.seq '$seq' in the record"
grep -q 'is written again' "$T/agent.n1.log" || fail "no log of the record written again"

fill 2 || fail "the tmpfs is not full the second time"
api a DELETE /v1/events/ev1 >/dev/null
until_true 30 caps_are n1 700,700 || fail "n1 caps $(caps n1) after the cancel with its record full, expected 700,700"
rm -f "$T/small/fill.2"
until_true 20 cannot 0 || fail "cannot_record still 1 after the restore with space back"
n=$(sql "$T/small/agent.db" "SELECT count(*) FROM cap_ledger")
[ "$n" = 0 ] || fail "$n ledger rows left after the restore was recorded"
[ "$(caps n1)" = 700,700 ] || fail "n1 caps $(caps n1) at the end"
[ "$fails" = 0 ] || { tail -n 20 "$T"/agent.*.log >&2; exit 1; }
echo "fleet record on a full disk: ok"
