#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The grid into the fleet: a mock OpenADR 3.1 VTN (tests/mock-vtn) announces
# an event, `pfi grid bridge` posts it to pfid, pfid caps two emulated agents
# to meet it; the VTN withdraws it, the bridge cancels it, the agents restore
# the limits they had before. Everything on loopback, every wait bounded.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2 n3
# n3 runs job jobA (no tier, a constant 1000 tokens/s) so that pfid has a
# live capacity for the bridge to report: its GPUs draw the emulator's idle
# 70 W, under their lowest caps, so it has nothing to shed (0 W).
mkdir -p "$T/map" "$T/tput"
echo jobA >"$T/map/0"
echo jobA >"$T/map/1"
(while :; do echo '{"tokens_per_s": 1000}' >>"$T/tput/jobA.jsonl"; sleep 0.2; done) &
PIDS+=("$!")
agent_start n1 2
agent_start n2 2
agent_start n3 2 --jobmap-dir "$T/map" --tput-dir "$T/tput"
pfid_start a
live3() { api a GET /v1/status | grep -q '"nodes":3,"stale_nodes":0'; }
until_true 30 live3 || { fail "three live nodes"; exit 1; }
before1=$(caps n1)
before2=$(caps n2)

python3 tests/mock-vtn/mock_vtn.py --port-file "$T/vtnport" --lifetime 120 &
PIDS+=("$!")
until_true 10 test -s "$T/vtnport" || { fail "mock VTN did not start"; exit 1; }
BASE="http://127.0.0.1:$(cat "$T/vtnport")/openadr3"
BL=$(curl -sS -m 5 -d grant_type=client_credentials -d client_id=bl1 -d client_secret=bl-secret \
  "$BASE/auth/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
blpost() { curl -sS -m 5 -H "Authorization: Bearer $BL" -H 'Content-Type: application/json' -d "$2" "$BASE/$1"; }
PID=$(blpost programs '{"programName":"site-flex"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# An import limit of 0.8 kW on the GPUs, starting now ("do it now"), for
# 10 minutes: n1's and n2's 4 free GPUs are held by the controller at their
# lowest cap (200 W on the emulated H200, docs/control.md), 800 W in all;
# n3's job draws the idle 140 W, under the target, and is not checked.
EV=$(blpost events '{"programID":"'"$PID"'","eventName":"grid","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],"intervalPeriod":{"start":"0001-01-01","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[0.8]}]}]}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
printf 'ven-secret\n' >"$T/ven.secret"
chmod 600 "$T/ven.secret"
"$PFI" grid bridge --pfid "http://127.0.0.1:${API[a]}" --pfid-token-file "$T/token" \
  --vtn "$BASE" --client-id ven1 --client-secret-file "$T/ven.secret" --program site-flex \
  --level gpu --interval 1 --report 2s --shed-loss 10% --log "$T/log" >"$T/bridge.log" 2>&1 &
BRIDGE=$!
PIDS+=("$BRIDGE")

has_event() { api a GET /v1/events | python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["id"].startswith("oadr-") and not x["cancelled"]]
sys.exit(0 if len(e) == 1 and abs(e[0]["target_w"] - 800) < 1e-6 else 1)'; }
until_true 20 has_event || fail "pfid has no oadr- event at 800 W: $(api a GET /v1/events) $(cat "$T/bridge.log")"
until_true 30 caps_are n1 "200,200" || fail "n1 caps $(caps n1), expected 200,200"
until_true 30 caps_are n2 "200,200" || fail "n2 caps $(caps n2), expected 200,200"

# Reports during the event: USAGE, DEMAND and LOAD_SHED_DELTA_AVAILABLE,
# the last equal to pfid's live capacity at <= 10 % loss (GET
# /v1/capacity: 0 W here, see above).
reported() { curl -sS -m 5 -H "Authorization: Bearer $BL" "$BASE/reports" >"$T/reports.json" &&
  python3 - "$T/reports.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
vals = {p["type"]: p["values"][0] for x in r for res in x["resources"]
        for iv in res["intervals"] for p in iv["payloads"]}
sys.exit(0 if {"USAGE", "DEMAND", "LOAD_SHED_DELTA_AVAILABLE"} <= set(vals) else 1)
PY
}
until_true 20 reported || fail "no report with LOAD_SHED_DELTA_AVAILABLE: $(cat "$T/reports.json") $(cat "$T/bridge.log")"
api a GET /v1/capacity >"$T/capa.json"
python3 - "$T/reports.json" "$T/capa.json" <<'PY' || fail "LOAD_SHED_DELTA_AVAILABLE against /v1/capacity: $(cat "$T/reports.json") $(cat "$T/capa.json")"
import json, sys
r = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
shed = [p["values"][0] for x in r for res in x["resources"] for iv in res["intervals"]
        for p in iv["payloads"] if p["type"] == "LOAD_SHED_DELTA_AVAILABLE"]
q = [x["shed_w"] for x in c["quotes"] if x["max_loss"] == 0.1]
assert q == [0.0] and shed and all(v == 0 for v in shed), (shed, q)
PY

# The VTN withdraws the event: the bridge cancels it, the limits come back.
curl -sS -m 5 -X DELETE -H "Authorization: Bearer $BL" "$BASE/events/$EV" >/dev/null
cancelled() { api a GET /v1/events | python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["id"].startswith("oadr-")]
sys.exit(0 if e and all(x["cancelled"] for x in e) else 1)'; }
until_true 20 cancelled || fail "the withdrawn event was not cancelled: $(api a GET /v1/events)"
until_true 30 caps_are n1 "$before1" || fail "n1 caps $(caps n1) after the event, expected $before1"
until_true 30 caps_are n2 "$before2" || fail "n2 caps $(caps n2) after the event, expected $before2"

# The log has the event: samples with the 800 W target.
kill "$BRIDGE"
wait "$BRIDGE" 2>/dev/null
awk -F, 'NR > 1 && $2 == 800 { n++ } END { exit !(n > 0) }' "$T/log/series.csv" ||
  fail "series.csv has no sample at the 800 W target"
# Every logged sample carries pfid's capacity at <= 10 % loss (--shed-loss)
# as GET /v1/capacity answered it: 0 W (jobA has nothing to shed, its
# interval too) and the same longest event (an empty cell for any length).
python3 - "$T/log/series.csv" "$T/capa.json" <<'PY' || fail "series.csv capacity against /v1/capacity: $(head -3 "$T/log/series.csv")"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
c = json.load(open(sys.argv[2]))
q = [x for x in c["quotes"] if x["max_loss"] == 0.1][0]
d = c.get("duration_s")
assert rows, rows
for r in rows:
    assert float(r["shed_loss"]) == 0.1, r
    assert float(r["shed_w"]) == q["shed_w"] == 0, (r, q)
    assert float(r["shed_lo_w"]) == q.get("shed_lo_w", q["shed_w"]), (r, q)
    assert float(r["shed_hi_w"]) == q.get("shed_hi_w", q["shed_w"]), (r, q)
    assert (r["shed_duration_s"] == "") if d is None else float(r["shed_duration_s"]) == d, (r, d)
PY
exit $((fails > 0))
