#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An event submitted through the API starts pfid's next control period at
# once: with a 60 s period the caps of an emulated agent reach the event's
# allocation (its free GPUs at their lowest cap, 200 W) well before the
# period after pfid's first, which has seen no node yet. The bound below
# is only against a hang; the period is three times longer.
. "$(dirname "$0")/lib.sh"
setup_nats n1
agent_start n1 2
PFID_PERIOD=60 LEASE=120 LEADER_LEASE=30 STALE=30 pfid_start a
known1() { api a GET /v1/status | grep -q '"nodes":1,'; }
until_true 15 known1 || fail "pfid does not know the node"
[ "$(caps n1)" = "700,700" ] || fail "n1 caps $(caps n1) before the event, expected 700,700"
n=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments")
[ "$n" = 0 ] || fail "$n assignments before the event, expected none"
api a POST /v1/events "$(event_json ev1 0 600 100)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
until_true 20 caps_are n1 "200,200" || fail "n1 caps $(caps n1), expected 200,200 (the event's period did not start)"
n=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE node='n1' AND event='ev1' AND kind='cut' AND caps_mw='200000,200000'")
[ "$n" = 1 ] || fail "records: $n cut rows for n1 at 200 W, expected 1"
[ "$fails" = 0 ] || { cat "$T/pfid.a.log" >&2; exit 1; }
echo "ok"
