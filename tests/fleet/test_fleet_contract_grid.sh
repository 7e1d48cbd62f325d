#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The contract kept live through a grid event, and its record. A mock
# OpenADR 3.1 VTN (tests/mock-vtn) announces an import limit 10 s ahead,
# `pfi grid bridge` posts it to pfid with the event's createdDateTime as
# the time it became known and logs the event (series.csv, jobs.csv with
# pfid's `held`); three agents on the fake NVML under a training load run
# slurm-5 (flex50 with a 15 s longest event set through the API), slurm-6
# (flex25, whose row in pfid's --tiers needs ten minutes' notice) and
# slurm-7 (untiered). pfid releases slurm-5 15 s into the 40 s event and
# never cuts slurm-6; `pfi grid event-report` on the log then shows no
# violation, and the same log without the held column shows the two the
# controller avoided (slurm-5 held the whole event, slurm-6 cut on short
# notice). Everything on loopback, every wait bounded.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2 n3
load_agent_start n1 slurm-5
load_agent_start n2 slurm-6
load_agent_start n3 slurm-7
printf 'tier,max_loss,max_event_s,notice_s\nflex50-15,0.5,15,\nflex25,0.25,,600\nnone,1,,\n' >"$T/tiers.csv"
pfid_start a --tiers "$T/tiers.csv"
live3() { api a GET /v1/status | grep -q '"nodes":3,"stale_nodes":0'; }
until_true 30 live3 || { fail "three live nodes"; exit 1; }
api a PUT /v1/tiers/slurm-5 '{"max_loss":0.5,"max_event_s":15}' >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "PUT slurm-5: HTTP $(cat "$T/code")"
api a PUT /v1/tiers/slurm-6 '{"tier":"flex25"}' >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "PUT slurm-6: HTTP $(cat "$T/code")"
M="http://127.0.0.1:${API[a]}/metrics"
known() { for j in 5 6 7; do curl -s -m 5 "$M" | grep -q "^pfi_job_learned_points{job=\"slurm-$j\"} " || return 1; done; }
until_true 30 known || fail "pfid does not know the jobs"

python3 tests/mock-vtn/mock_vtn.py --port-file "$T/vtnport" --lifetime 240 &
PIDS+=("$!")
until_true 10 test -s "$T/vtnport" || { fail "mock VTN did not start"; exit 1; }
BASE="http://127.0.0.1:$(cat "$T/vtnport")/openadr3"
BL=$(curl -sS -m 5 -d grant_type=client_credentials -d client_id=bl1 -d client_secret=bl-secret \
  "$BASE/auth/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
blpost() { curl -sS -m 5 -H "Authorization: Bearer $BL" -H 'Content-Type: application/json' -d "$2" "$BASE/$1"; }
PID=$(blpost programs '{"programName":"site-flex"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# The limit: 60 % of what the six GPUs draw now, at the GPU level, from
# 10 s from now for 40 s.
draw=$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])')
kw=$(awk -v p="$draw" 'BEGIN { printf "%.3f", 0.6 * p / 1000 }')
start=$(date -u -d "@$(($(date +%s) + 10))" +%Y-%m-%dT%H:%M:%SZ)
blpost events '{"programID":"'"$PID"'","eventName":"grid","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],"intervalPeriod":{"start":"'"$start"'","duration":"PT40S"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":['"$kw"']}]}]}' >"$T/vtn_event.json"
printf 'ven-secret\n' >"$T/ven.secret"
chmod 600 "$T/ven.secret"
"$PFI" grid bridge --pfid "http://127.0.0.1:${API[a]}" --pfid-token-file "$T/token" \
  --vtn "$BASE" --client-id ven1 --client-secret-file "$T/ven.secret" --program site-flex \
  --level gpu --interval 1 --log "$T/log" >"$T/bridge.log" 2>&1 &
BRIDGE=$!
PIDS+=("$BRIDGE")

# pfid's event: known at the VTN's createdDateTime (not the bridge's post).
has_event() { api a GET /v1/events | python3 -c '
import json, sys
from datetime import datetime
e = [x for x in json.load(sys.stdin) if x["id"].startswith("oadr-") and not x["cancelled"]]
v = json.load(open(sys.argv[1]))
c = datetime.strptime(v["createdDateTime"].replace("Z", "+0000")[:19] + "+0000", "%Y-%m-%dT%H:%M:%S%z").timestamp()
sys.exit(0 if len(e) == 1 and abs(e[0]["known"] - c) <= 1 and 5 <= e[0]["notice_s"] <= 12 else 1)' "$T/vtn_event.json"; }
until_true 20 has_event || fail "pfid's event not known at the VTN's creation: $(api a GET /v1/events) $(cat "$T/vtn_event.json")"
# The event runs: slurm-5 cut, then released; then it ends.
is_cut() { [ "$(caps "$1" | awk -F, '{print ($1 < 650 && $2 < 650)}')" = 1 ]; }
until_true 30 is_cut n1 || fail "slurm-5 not cut: $(caps n1)"
until_true 30 caps_are n1 "700,700" || fail "slurm-5 not released: $(caps n1)"
in_event() { [ "$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["event"])')" != "" ]; }
until_true 60 eval '! in_event' || fail "the event did not end"
sleep 2 # (not a check) a few samples after the event
kill "$BRIDGE"
wait "$BRIDGE" 2>/dev/null
head -1 "$T/log/jobs.csv" | grep -q '^t_s,job,tokens_per_s,held$' || fail "jobs.csv header: $(head -1 "$T/log/jobs.csv")"

# The record: no violation, the longest event and the notice kept.
printf 'job,tier,tenant\nslurm-5,flex50-15,t1\nslurm-6,flex25,t1\nslurm-7,none,t2\n' >"$T/contract.csv"
"$PFI" grid event-report --log "$T/log" --contract "$T/contract.csv" --tiers "$T/tiers.csv" \
  --out "$T/out" >"$T/s.json" 2>"$T/err" || fail "event-report: $(cat "$T/err")"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["violations"] == 0 and s["event_s"] >= 30, s' \
  "$T/s.json" || fail "violations: $(cat "$T/out/compliance.csv") $(grep slurm-5 "$T/log/jobs.csv" | head -60)"
# Without the held column every job counts as held the whole event: the
# two terms the controller kept show as broken.
mkdir -p "$T/nh"
cp "$T/log/series.csv" "$T/nh/"
cut -d, -f1-3 "$T/log/jobs.csv" >"$T/nh/jobs.csv"
"$PFI" grid event-report --log "$T/nh" --contract "$T/contract.csv" --tiers "$T/tiers.csv" \
  --out "$T/nhout" >"$T/nh.json" 2>"$T/err" || fail "event-report without held: $(cat "$T/err")"
grep -q '^slurm-5,.*,1,"event of [0-9]* s, tier flex50-15 allows 15 s"$' "$T/nhout/compliance.csv" &&
  grep -q '^slurm-6,.*,1,"notice of 0 s, tier flex25 needs 600 s"$' "$T/nhout/compliance.csv" ||
  fail "without held: $(cat "$T/nhout/compliance.csv")"
[ "$fails" = 0 ] || exit 1
echo "contract through the grid: ok"
