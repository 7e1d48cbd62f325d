#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The job sees its cap: pfi-agent writes the node's caps, the reason and
# the time to --cap-file (JSON, replaced by rename) and serves the same at
# GET /v1/cap on --cap-listen. One emulated node of 2 GPUs runs job jobA
# (Slurm-style mapping files, a Flex 25 tier, throughput from a JSONL file).
# During an event the file names the event, the controller's last reason
# for jobA as pfid recorded it (fleet_decisions), and caps equal to the
# limits read from the emulator with pfi devices; after the cancel it says
# "restore" with the limits recorded before (the 700 W default).
. "$(dirname "$0")/lib.sh"

setup_nats n1
mkdir -p "$T/emu.n1" "$T/map" "$T/tiers" "$T/tput"
echo jobA >"$T/map/0"
echo jobA >"$T/map/1"
echo 0.25 >"$T/tiers/jobA"
# The job's throughput reports (constant: the cap does not slow this one).
(while :; do echo '{"tokens_per_s": 1000}' >>"$T/tput/jobA.jsonl"; sleep 0.2; done) &
PIDS+=("$!")
CPORT=$(free_port)
agent_start n1 2 --jobmap-dir "$T/map" --tier-dir "$T/tiers" --tput-dir "$T/tput" \
  --cap-file "$T/cap.json" --cap-listen "127.0.0.1:$CPORT"
# The live capacity's inputs: a tier file (Flex 25: events up to 1800 s)
# and jobA's PFI estimate from a model fitted on the emulated campaign
# (jobA's features are those of one of its jobs). A bad tier file is a
# located error, exit 2.
printf 'tier,max_loss,max_event_s\nflex25,0.25,1800\nflex50,0.5,x\n' >"$T/badtiers.csv"
"$PFID" --id bad --nats "$NATS_URL" --records "$T/bad.db" --api none \
  --tiers "$T/badtiers.csv" >"$T/bad.out" 2>&1
[ $? = 2 ] || fail "a bad tier file: exit $? ($(cat "$T/bad.out"))"
grep -q "badtiers.csv:3:" "$T/bad.out" || fail "bad tier file not located: $(cat "$T/bad.out")"
printf 'tier,max_loss,max_event_s\nflex25,0.25,1800\n' >"$T/tiers.csv"
D=$PFI_SOURCE_DIR/tests/data/emulated25
"$PFI" fit "$D/features.csv" --curves "$D/curves.csv" --features dram_active,sm_active \
  --output "$T/model.json" --format json >/dev/null || fail "pfi fit"
{ head -1 "$D/features.csv"; sed -n 2p "$D/features.csv" | sed 's/^[^,]*,/jobA,/'; } >"$T/feat.csv"
# Features without a column of the model, or a model that cannot be read:
# bad input, exit 2, named.
printf 'job,dram_active\njobA,0.3\n' >"$T/feat1.csv"
"$PFID" --id bad --nats "$NATS_URL" --records "$T/bad.db" --api none \
  --model "$T/model.json" --features "$T/feat1.csv" >"$T/bad.out" 2>&1
[ $? = 2 ] || fail "features without a model column: exit $? ($(cat "$T/bad.out"))"
grep -q "feat1.csv has no column 'sm_active'" "$T/bad.out" || fail "missing feature column: $(cat "$T/bad.out")"
"$PFID" --id bad --nats "$NATS_URL" --records "$T/bad.db" --api none \
  --model "$T/none.json" --features "$T/feat.csv" >"$T/bad.out" 2>&1
[ $? = 2 ] || fail "a model that cannot be read: exit $? ($(cat "$T/bad.out"))"
pfid_start a --tiers "$T/tiers.csv" --model "$T/model.json" --features "$T/feat.csv"
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || fail "node live"

# Before any event: no cap of ours, mode idle, the job and its tier named.
capf() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T/cap.json" "$1"; }
has_file() { [ -s "$T/cap.json" ]; }
until_true 10 has_file || fail "no cap file"
[ "$(capf 'd["mode"]')" = idle ] || fail "mode before the event: $(capf 'd["mode"]')"
[ "$(capf 'd["event"]')" = "" ] || fail "an event before the event"
[ "$(capf 'd["jobs"][0]["job"], d["jobs"][0]["gpus"], d["jobs"][0]["max_loss"]')" = "('jobA', [0, 1], 0.25)" ] ||
  fail "jobs before the event: $(capf 'd["jobs"]')"
[ "$(capf '",".join("%g" % g["cap_w"] for g in d["gpus"])')" = 700,700 ] ||
  fail "caps before the event: $(capf 'd["gpus"]')"

# Live flexible capacity (GET /v1/capacity, /metrics): the fleet's one job
# draws the emulator's idle 70 W per GPU, under its GPUs' lowest caps (2 x
# 200 W): its draw (the sum of /v1/nodes' GPU powers) is all it holds and
# nothing can be shed (the quotes against worked values are in
# unit.test_grid's test_flex_live).
api a GET /v1/nodes >"$T/nodes.json"
api a GET /v1/capacity >"$T/capa.json"
[ "$(cat "$T/code")" = 200 ] || fail "GET /v1/capacity: HTTP $(cat "$T/code")"
python3 - "$T/nodes.json" "$T/capa.json" <<'PY' || fail "capacity: $(cat "$T/capa.json")"
import json, sys
nodes = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
draw = sum(g["power_w"] for n in nodes for g in n["gpus"] if g.get("job") == "jobA")
assert c["jobs"] == 1 and c["skipped"] == 0 and c["eligible"] == 0, c
assert abs(c["uncapped_w"] - draw) < 1e-6 and abs(c["floor_w"] - draw) < 1e-6, (c, draw)
assert [q["max_loss"] for q in c["quotes"]] == [0.01, 0.02, 0.05, 0.1, 0.2], c
assert all(q["shed_w"] == 0 == q["shed_lo_w"] == q["shed_hi_w"] for q in c["quotes"]), c
assert c["tiers"] == [{"max_loss": 0.25, "jobs": 1, "uncapped_w": c["uncapped_w"],
                       "floor_w": c["floor_w"], "shed_w": 0.0, "max_event_s": 1800.0}], c
# No job can be cut: no event length bounds the (zero) quotes.
assert c["duration_s"] is None and c["durations"] == [], c
assert c["estimated"] == 1 and c["believed"] in (0, 1), c
PY
api a GET /metrics >"$T/pm"
grep -q '^pfi_fleet_flex_capacity_watts{max_loss="0.1",bound="central"} 0$' "$T/pm" ||
  fail "flexible capacity not in /metrics"
grep -q '^pfi_fleet_flex_tier_shed_watts{max_loss="0.25"} 0$' "$T/pm" ||
  fail "tier capacity not in /metrics"

# The event: 100 W for 2 GPUs drawing 140 W at any cap (the emulator's
# idle draw): the controller cuts jobA to its floor and records why.
api a POST /v1/events "$(event_json ev1 0 300 100)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
capped() { [ "$(capf 'd["event"]')" = ev1 ] && [ "$(capf 'd["mode"]')" = tracking ]; }
until_true 30 capped || fail "cap file during the event: $(cat "$T/cap.json")"
# Settled: the file's caps are the emulator's limits, its reason is pfid's
# last recorded decision for jobA (compared when both agree for a read,
# the controller may decide again between two reads).
agree() {
  local want got
  want=$(sql "$T/records.db" "SELECT reason FROM fleet_decisions WHERE job='jobA' ORDER BY t_s DESC, seq DESC LIMIT 1")
  got=$(capf 'd["reason"]')
  [ -n "$want" ] && [ "$got" = "$want" ] &&
    [ "$(capf '",".join("%g" % g["cap_w"] for g in d["gpus"])')" = "$(caps n1)" ]
}
until_true 30 agree || fail "cap file $(cat "$T/cap.json") against the record's reason and caps $(caps n1)"
case $(capf 'd["reason"]') in
cut | raise | floor | infeasible | rollback | anomaly) ;;
*) fail "reason during the event: $(capf 'd["reason"]')" ;;
esac
capf 'd["since"] <= d["t"] and d["since"] > 0 and d["event_end"] > d["t"]' | grep -q True ||
  fail "since/event_end: $(cat "$T/cap.json")"
# The endpoint serves the same state.
curl -s -m 5 "http://127.0.0.1:$CPORT/v1/cap" >"$T/http.json" || fail "GET /v1/cap"
python3 - "$T/http.json" <<'PY' || fail "GET /v1/cap: $(cat "$T/http.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["node"] == "n1" and d["event"] == "ev1" and d["mode"] == "tracking", d
assert d["reason"] in ("cut", "raise", "floor", "infeasible", "rollback", "anomaly"), d
assert [g["gpu"] for g in d["gpus"]] == [0, 1] and d["jobs"][0]["job"] == "jobA", d
PY
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$CPORT/metrics")
[ "$code" = 404 ] || fail "the cap endpoint serves /metrics: HTTP $code"
ls "$T" | grep -q 'cap.json.tmp' && fail "a temporary cap file left beside it"

# Cancelled: restored to the recorded 700 W, and the file says so.
api a DELETE /v1/events/ev1 >/dev/null
restored() {
  [ "$(capf 'd["reason"]')" = restore ] && [ "$(capf 'd["mode"]')" = idle ] &&
    [ "$(capf '",".join("%g" % g["cap_w"] for g in d["gpus"])')" = 700,700 ]
}
until_true 30 restored || fail "after the cancel: $(cat "$T/cap.json")"
caps_are n1 700,700 || fail "n1 restored to $(caps n1)"
[ "$(capf 'd["event"]')" = "" ] || fail "event after the cancel"
# The agent stops: its last word is in the file (idle, restore).
kill "${AGENT_PID[n1]}"
wait "${AGENT_PID[n1]}" 2>/dev/null
[ "$(capf 'd["mode"], d["reason"]')" = "('idle', 'restore')" ] || fail "cap file after the agent stopped: $(cat "$T/cap.json")"
[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet capinfo: ok"
