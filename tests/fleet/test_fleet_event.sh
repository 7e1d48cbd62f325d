#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An event through the API caps two emulated agents over NATS: the bearer
# token guards every mutation (401, nothing changed), caps reach the
# allocation, replayed, malformed and oversized assignments are ignored, an
# agent's credentials cannot publish an assignment, a limit changed behind
# the agent's back is re-applied and recorded, the records through the API
# and pfi ctl are the assignments made, /metrics shows requested and
# enforced limits, and cancelling the event restores the limits recorded
# before it (650 W set by the operator on n1, not the 700 W default).
. "$(dirname "$0")/lib.sh"
PROBE=${PFI_PROBE:?}
# The probe, bounded: a hang is a failure with a message, not a silent
# test timeout.
probe() { timeout 20 "$PROBE" "$@"; }

setup_nats n1 n2
mkdir -p "$T/emu.n1" "$T/emu.n2"
timeout 20 "$PFI" cap --backend emu --params "state=$T/emu.n1,gpus=2" --set 650 >/dev/null ||
  fail "pfi cap --set 650"
MPORT=$(free_port)
agent_start n1 2 --metrics "127.0.0.1:$MPORT"
agent_start n2 2
pfid_start a

live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || fail "two live nodes"

# Mutations without the token, or with a wrong one: 401 and no event.
ev=$(event_json ev1 0 120 1600)
code=$(curl "${CURL_TLS[@]}" -s -m 5 -o /dev/null -w '%{http_code}' -X POST --data-binary "$ev" \
  "$(api_url a)/v1/events")
[ "$code" = 401 ] || fail "POST without token: HTTP $code, expected 401"
code=$(curl "${CURL_TLS[@]}" -s -m 5 -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer nope' \
  --data-binary "$ev" "$(api_url a)/v1/events")
[ "$code" = 401 ] || fail "POST with a wrong token: HTTP $code, expected 401"
[ "$(api a GET /v1/events)" = "[]" ] || fail "an unauthorized POST created an event"
api a POST /v1/events '{"v":1,"id":"bad","start":5,"end":4,"target_w":1}' >/dev/null
[ "$(cat "$T/code")" = 400 ] || fail "a malformed event: HTTP $(cat "$T/code"), expected 400"

# The event. No job runs on these GPUs: the control module holds free GPUs
# at their lowest cap during an event (docs/control.md), 200 W on the
# emulated H200.
t_post=$(now)
api a POST /v1/events "$ev" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
want=200
until_true 20 caps_are n1 "$want,$want" || fail "n1 caps $(caps n1), expected $want,$want"
until_true 20 caps_are n2 "$want,$want" || fail "n2 caps $(caps n2), expected $want,$want"
n=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE event='ev1' AND kind='cut' AND caps_mw='${want}000,${want}000'")
[ "$n" = 2 ] || fail "records: $n cut rows at $want W, expected 2 (one per node)"
# The records through the API and pfi ctl: the rows so far are the two cuts
# this event made (ev1 as submitted, leader a, 200 W on each GPU, issued
# between the POST and now), the same through both.
t_post=$t_post t_now=$(now) python3 -c '
import json, os, sys
r = json.loads(sys.argv[1])
assert len(r) == 2, r
assert sorted(x["node"] for x in r) == ["n1", "n2"], r
for x in r:
    assert (x["event"], x["kind"], x["leader"], x["caps_mw"]) == ("ev1", "cut", "a", "200000,200000"), x
    assert float(os.environ["t_post"]) - 1 <= x["t"] <= float(os.environ["t_now"]), x
    assert x["seq"] >= 1 and x["id"] >= 1, x
' "$(api a GET /v1/records)" || fail "GET /v1/records: $(cat "$T/body")"
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --format json records >"$T/ctl.rec" || fail "pfi ctl records"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1])) == json.loads(sys.argv[2])' \
  "$T/ctl.rec" "$(api a GET /v1/records)" || fail "pfi ctl records differs from /v1/records: $(cat "$T/ctl.rec")"
last_id=$(python3 -c 'import json, sys; print(max(x["id"] for x in json.load(open(sys.argv[1]))))' "$T/ctl.rec")
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --format json records "$last_id" >"$T/ctl.rec2" || fail "pfi ctl records $last_id"
[ "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$T/ctl.rec2")" = 0 ] ||
  fail "pfi ctl records $last_id: rows after the last: $(cat "$T/ctl.rec2")"
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --format json records -1 2>/dev/null
[ $? = 2 ] || fail "pfi ctl records -1: not a usage error"

metric() { curl -s -m 5 "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 ~ "^"m"([{]|$)" { print $2; exit }'; }
ign0=$(metric pfi_agent_assignments_ignored_total)
rej0=$(metric pfi_agent_assignments_rejected_total)
# A replay of n1's first assignment raised to 700 W, written to the bucket
# with the controller's credentials: its sequence number is not new,
# ignored. The controller's credentials cannot publish on the assignment
# subject directly (docs/fleet.md "Trust").
seq1=$(sql "$T/records.db" "SELECT min(seq) FROM fleet_assignments WHERE node='n1'")
printf '{"v":1,"node":"n1","seq":%s,"leader":"a","issued":1,"lease_s":60,"event":"ev1","event_end":9999999999,"caps_mw":[700000,700000]}' \
  "$seq1" >"$T/replay.json"
probe "$NATS_URL" pfid "$T/pw.pfid" publish pfi.assign.n1 "$T/replay.json" 2>/dev/null
[ $? = 3 ] || fail "pfid's credentials publishing on pfi.assign.n1 directly were not refused"
probe "$NATS_URL" pfid "$T/pw.pfid" kvput assign.n1 "$T/replay.json" >/dev/null ||
  fail "probe kvput with pfid credentials"
echo 'not json {' >"$T/garbage"
probe "$NATS_URL" pfid "$T/pw.pfid" kvput assign.n1 "$T/garbage" >/dev/null
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big"
probe "$NATS_URL" pfid "$T/pw.pfid" kvput assign.n1 "$T/big" >/dev/null
ignored() { [ "$(metric pfi_agent_assignments_ignored_total)" -gt "$ign0" ]; }
rejected2() { [ "$(metric pfi_agent_assignments_rejected_total)" -ge $((rej0 + 2)) ]; }
until_true 10 ignored || fail "the replayed assignment was not counted as ignored"
until_true 10 rejected2 || fail "malformed and oversized assignments not counted as rejected"
[ "$(caps n1)" = "$want,$want" ] || fail "after the replay n1 caps $(caps n1)"

# An agent's credentials cannot publish an assignment, nor write the bucket.
printf '{"v":1,"node":"n2","seq":999999,"leader":"a","issued":1,"lease_s":60,"caps_mw":[700000,700000]}' >"$T/forged.json"
probe "$NATS_URL" agent-n1 "$T/pw.n1" publish pfi.assign.n2 "$T/forged.json" 2>"$T/probe.err"
[ $? = 3 ] || fail "agent-n1 publishing an assignment was not refused: $(cat "$T/probe.err")"
probe "$NATS_URL" agent-n1 "$T/pw.n1" publish pfi.assign.n1 "$T/forged.json" 2>/dev/null
[ $? = 3 ] || fail "agent-n1 publishing its own assignment was not refused"
probe "$NATS_URL" agent-n1 "$T/pw.n1" kvput assign.n2 "$T/forged.json" 2>"$T/probe.err"
[ $? = 3 ] || fail "agent-n1 writing the bucket was not refused by NATS: $(cat "$T/probe.err")"
# Nor read another node's assignments: its subject, the bucket's, a
# wildcard; its own subject it may.
for s in pfi.assign.n2 '$KV.pfi.assign.n2' 'pfi.assign.*'; do
  probe "$NATS_URL" agent-n1 "$T/pw.n1" subscribe "$s" - 2>"$T/probe.err"
  [ $? = 3 ] || fail "agent-n1 subscribing to $s was not refused: $(cat "$T/probe.err")"
done
probe "$NATS_URL" agent-n1 "$T/pw.n1" subscribe pfi.assign.n1 - >/dev/null 2>"$T/probe.err" ||
  fail "agent-n1 subscribing to its own assignments: $(cat "$T/probe.err")"
[ "$(caps n2)" = "$want,$want" ] || fail "after the forgery n2 caps $(caps n2)"

# Another tool changes a limit behind the agent's back: re-applied, recorded.
# The agent may put the limit back between pfi cap's set and its read-back:
# pfi cap then says so and exits 1 ("reads back"), which is the race this
# checks, not a failure of it.
timeout 20 "$PFI" cap --backend emu --params "state=$T/emu.n1,gpus=2" --gpus 1 --set 550 --force \
  >/dev/null 2>"$T/capf.err" || grep -q "reads back" "$T/capf.err" ||
  fail "pfi cap --force: $(cat "$T/capf.err")"
until_true 10 caps_are n1 "$want,$want" || fail "drifted limit not re-applied: $(caps n1)"
n=$(sql "$T/agent.n1.db" "SELECT count(*) FROM cap_events WHERE action='reapply' AND gpu=1 AND mw=${want}000" 2>&1)
[ "$n" -ge 1 ] 2>/dev/null || fail "re-application not recorded: $n"
reapplied() { [ "$(metric pfi_agent_reapplied_total)" -ge 1 ]; }
until_true 10 reapplied || fail "pfi_agent_reapplied_total not counted"

# /metrics: requested and enforced limits in watts.
curl -s -m 5 "http://127.0.0.1:$MPORT/metrics" >"$T/metrics"
grep -q "^pfi_gpu_power_limit_requested_watts{node=\"n1\",gpu=\"0\",uuid=\"GPU-[0-9a-f-]*\"} $want\$" "$T/metrics" ||
  fail "requested limit not in /metrics"
grep -q "^pfi_gpu_power_limit_enforced_watts{node=\"n1\",gpu=\"1\",.*} $want\$" "$T/metrics" ||
  fail "enforced limit not in /metrics"
grep -q '^# TYPE pfi_agent_reapplied_total counter$' "$T/metrics" || fail "counter TYPE"
grep -q '^pfi_agent_mode{node="n1",mode="tracking"} 1$' "$T/metrics" || fail "mode tracking"

# Cancel (token needed): every node gets its recorded limits back.
code=$(curl "${CURL_TLS[@]}" -s -m 5 -o /dev/null -w '%{http_code}' -X DELETE "$(api_url a)/v1/events/ev1")
[ "$code" = 401 ] || fail "DELETE without token: HTTP $code"
[ "$(caps n1)" = "$want,$want" ] || fail "an unauthorized DELETE changed caps"
# pfi ctl: a wrong token is refused (exit 1, HTTP 401, nothing changed);
# the right one cancels.
secret "$T/wrong"
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --token-file "$T/wrong" cancel ev1 2>"$T/ctl.err"
[ $? = 1 ] && grep -q 'HTTP 401' "$T/ctl.err" || fail "pfi ctl with a wrong token: $(cat "$T/ctl.err")"
[ "$(caps n1)" = "$want,$want" ] || fail "a refused cancel changed caps"
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --format json status | grep -q '"leader":true,"nodes":2' ||
  fail "pfi ctl status"
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --token-file "$T/token" cancel ev1 >/dev/null ||
  fail "pfi ctl cancel"
until_true 20 caps_are n1 650,650 || fail "n1 restored to $(caps n1), expected the recorded 650,650"
until_true 20 caps_are n2 700,700 || fail "n2 restored to $(caps n2), expected 700,700"
n=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE kind='restore'")
[ "$n" = 2 ] || fail "records: $n restore rows, expected 2"
# pfi ctl records after the cuts' rows: the two restores, no event, no caps.
"$PFI" ctl "${CTL_TLS[@]}" --url "$(api_url a)" --format json records "$last_id" >"$T/ctl.rec3" || fail "pfi ctl records $last_id"
python3 -c '
import json, sys
r = [x for x in json.load(open(sys.argv[1])) if x["kind"] == "restore"]
assert sorted(x["node"] for x in r) == ["n1", "n2"], r
assert all(x["event"] == "" and x["caps_mw"] == "" and x["leader"] == "a" for x in r), r
' "$T/ctl.rec3" || fail "pfi ctl records after the cancel: $(cat "$T/ctl.rec3")"
[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet event: ok"
