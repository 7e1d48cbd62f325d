#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Events that overlap: the lowest target in force wins (docs/fleet.md, the
# rule of docs/grid.md across sources), whichever started last. A grid
# event ev1 at 1600 W for 300 s and, 5 s in, an operator's looser ev2 at
# 5000 W (pfi ctl submit) for 60 s: pfid's status, /metrics and the
# assignment records keep ev1 and its 1600 W, and no cap rises above ev1's
# allocation (no job runs: free GPUs at their lowest cap, 200 W). ev1
# cancelled, ev2 is the event in force with its 5000 W.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
agent_start n1 2
agent_start n2 2
pfid_start a
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }
U="http://127.0.0.1:${API[a]}"

t0=$(now)
ev() { # ev ID START END TARGET: the event message, offsets from t0
  awk -v id="$1" -v a="$2" -v b="$3" -v w="$4" -v t="$t0" \
    'BEGIN { printf "{\"v\":1,\"id\":\"%s\",\"start\":%.3f,\"end\":%.3f,\"target_w\":%g}", id, t + a, t + b, w }'
}
api a POST /v1/events "$(ev ev1 0 300 1600)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST ev1: HTTP $(cat "$T/code")"
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200"
until_true 20 caps_are n2 200,200 || fail "n2 caps $(caps n2), expected 200,200"
read -r s2 e2 < <(awk -v t="$t0" 'BEGIN { printf "%.3f %.3f\n", t + 5, t + 60 }')
"$PFI" ctl --url "$U" --token-file "$T/token" submit ev2 "$s2" "$e2" 5000 >/dev/null ||
  fail "pfi ctl submit ev2"

# status: "event target_w" of pfid's status.
status() {
  api a GET /v1/status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["event"], "%g" % d["target_w"])'
}
# ev2 in force (5 s after t0, and a few periods more).
started() { awk -v t0="$t0" -v t="$(now)" 'BEGIN { exit !(t >= t0 + 8) }'; }
until_true 30 started || fail "clock"
[ "$(status)" = "ev1 1600" ] || fail "status during ev1 and ev2: '$(status)', expected 'ev1 1600'"
tw=$(curl -s -m 5 "$U/metrics" | awk '$1 == "pfi_fleet_target_watts" { print $2 }')
[ "$tw" = 1600 ] || fail "pfi_fleet_target_watts $tw, expected 1600"
for n in n1 n2; do
  [ "$(caps $n)" = 200,200 ] || fail "$n caps $(caps $n) with ev2 in force, expected ev1's 200,200"
done
# The records: every assignment during the events carries ev1's target,
# none raised a cap above ev1's allocation.
bad=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE kind != 'restore' AND (target_w != 1600 OR event != 'ev1' OR caps_mw != '200000,200000')")
[ "$bad" = 0 ] || fail "records: $bad assignments off ev1's target or allocation: $(sql "$T/records.db" "SELECT kind, event, target_w, caps_mw FROM fleet_assignments")"
n=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE kind = 'raise'")
[ "$n" = 0 ] || fail "records: $n raises during ev1"

# ev1 cancelled: ev2 alone is in force.
"$PFI" ctl --url "$U" --token-file "$T/token" cancel ev1 >/dev/null || fail "pfi ctl cancel ev1"
ev2_on() { [ "$(status)" = "ev2 5000" ]; }
until_true 10 ev2_on || fail "status after ev1's cancel: '$(status)', expected 'ev2 5000'"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log >&2; exit 1; }
echo "fleet event overlap: ok"
