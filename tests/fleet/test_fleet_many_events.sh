#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# More events in the bucket than pfid keeps (64; keys are never deleted and
# a bridge books one per interval): the ones not yet over are kept before
# the ones over. An event c1 at 1600 W for 300 s, then 200 one-second
# events booked after it: once those are over pfid still holds c1 (its
# status and the caps: free GPUs at their lowest cap, 200 W), and lists 64
# events. (pfid before this kept the first 64 keys of the listing, which
# comes sorted by name, last first: c1, named to sort before e000..e199,
# was left out.)
. "$(dirname "$0")/lib.sh"

setup_nats n1
agent_start n1 2
pfid_start a
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || { fail "a live node"; exit 1; }
api a POST /v1/events "$(event_json c1 0 300 1600)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST c1: HTTP $(cat "$T/code")"
for i in $(seq -w 0 199); do
  api a POST /v1/events "$(event_json e$i 0 1 99999)" >/dev/null
  [ "$(cat "$T/code")" = 201 ] || fail "POST e$i: HTTP $(cat "$T/code")"
done
sleep 2 # every e* event is over; c1 (booked first) goes on
holds() { api a GET /v1/status | grep -q '"event":"c1"'; }
until_true 20 holds || fail "pfid does not hold c1: $(api a GET /v1/status)"
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1) under c1, expected 200,200"
n=$(api a GET /v1/events | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d))' 2>/dev/null)
[ "$n" = 64 ] || fail "/v1/events lists $n events, expected 64"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet many events: ok"
