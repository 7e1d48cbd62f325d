#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Tiers through pfid's API (/v1/tiers) and the per-job series of pfid's
# /metrics. Two emulated agents, each with a job mapped as the Slurm prolog
# maps it (one file per GPU index, a tier file for slurm-5, a throughput
# line per job). GET lists the named tiers and each job's tier with its
# source; PUT and DELETE need the token (401, nothing changed); bad bodies
# are 400 naming the field, an oversized one 413; a tier set through the API
# wins over the node's and is what the controller's decisions record during
# an event; deleting it gives the node's back.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
for n in n1 n2; do mkdir -p "$T/map.$n" "$T/tput.$n" "$T/tiers.$n"; done
echo slurm-5 >"$T/map.n1/0"; echo slurm-5 >"$T/map.n1/1"
echo slurm-6 >"$T/map.n2/0"; echo slurm-6 >"$T/map.n2/1"
echo 0.1 >"$T/tiers.n1/slurm-5"
tput_writer "$T/tput.n1/slurm-5.jsonl" 2000
tput_writer "$T/tput.n2/slurm-6.jsonl" 1500
for n in n1 n2; do
  agent_start $n 2 --jobmap-dir "$T/map.$n" --tput-dir "$T/tput.$n" --tier-dir "$T/tiers.$n"
done
pfid_start a
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }

# tier JOB: "max_loss source" of the job in GET /v1/tiers ("absent" if not
# listed); also checks the named tiers.
tier() {
  api a GET /v1/tiers | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [(t["name"], t["max_loss"]) for t in d["tiers"]] == \
    [("flex0", 0), ("flex10", 0.1), ("flex25", 0.25), ("flex50", 0.5)], d["tiers"]
j = [x for x in d["jobs"] if x["job"] == sys.argv[1]]
print("absent" if not j else "%s %s" % (j[0]["max_loss"], j[0]["source"]))' "$1"
}
jobs_seen() { [ "$(tier slurm-5)" = "0.1 node" ] && [ "$(tier slurm-6)" = "None none" ]; }
until_true 20 jobs_seen || fail "tiers before: slurm-5 '$(tier slurm-5)', slurm-6 '$(tier slurm-6)'"

# Without the token, or with a wrong one: 401, nothing changed.
U="http://127.0.0.1:${API[a]}/v1/tiers/slurm-6"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X PUT --data-binary '{"tier":"flex25"}' "$U")
[ "$code" = 401 ] || fail "PUT without token: HTTP $code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X PUT -H 'Authorization: Bearer nope' \
  --data-binary '{"tier":"flex25"}' "$U")
[ "$code" = 401 ] || fail "PUT with a wrong token: HTTP $code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:${API[a]}/v1/tiers/slurm-5")
[ "$code" = 401 ] || fail "DELETE without token: HTTP $code"
[ "$(tier slurm-6)" = "None none" ] || fail "an unauthorized PUT changed slurm-6: $(tier slurm-6)"

# Bad bodies: 400, the message names what is wrong.
bad() { # bad BODY WORD
  local b
  b=$(api a PUT /v1/tiers/slurm-6 "$1")
  [ "$(cat "$T/code")" = 400 ] || fail "PUT $1: HTTP $(cat "$T/code"), expected 400"
  case "$b" in *"$2"*) ;; *) fail "PUT $1: '$b' does not name $2" ;; esac
}
bad '{"tier":"flex11"}' '\"tier\"'
bad '{"max_loss":1.5}' '\"max_loss\"'
bad '{"max_loss":"0.2"}' '\"max_loss\"'
bad '{"tier":"flex25","max_loss":0.2}' 'one of'
bad '{"owner":"x"}' '\"owner\"'
bad '{"tier":' 'column'
b=$(api a PUT /v1/tiers/no.such '{"tier":"flex25"}')
[ "$(cat "$T/code")" = 400 ] || fail "PUT for a bad job id: HTTP $(cat "$T/code")"
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/token")" \
  --data-binary @"$T/big" "$U")
[ "$code" = 413 ] || fail "PUT of 70,000 bytes: HTTP $code, expected 413"
api a POST /v1/tiers/slurm-6 '{"tier":"flex25"}' >/dev/null
[ "$(cat "$T/code")" = 405 ] || fail "POST /v1/tiers/JOB: HTTP $(cat "$T/code"), expected 405"
[ "$(tier slurm-6)" = "None none" ] || fail "a refused PUT changed slurm-6: $(tier slurm-6)"

# Set: by name for slurm-6, by number over the node's for slurm-5.
api a PUT /v1/tiers/slurm-6 '{"tier":"flex25"}' >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "PUT flex25: HTTP $(cat "$T/code")"
api a PUT /v1/tiers/slurm-5 '{"max_loss":0.3}' >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "PUT 0.3: HTTP $(cat "$T/code")"
set_seen() { [ "$(tier slurm-5)" = "0.3 api" ] && [ "$(tier slurm-6)" = "0.25 api" ]; }
until_true 10 set_seen || fail "tiers set: slurm-5 '$(tier slurm-5)', slurm-6 '$(tier slurm-6)'"
# A tier for a job no node runs (yet) is listed too.
api a PUT /v1/tiers/slurm-7 '{"tier":"flex0"}' >/dev/null
until_true 10 eval '[ "$(tier slurm-7)" = "0.0 api" ]' || fail "slurm-7: '$(tier slurm-7)'"
# The same through pfi ctl: a named tier, a largest loss, a removal, and
# the lists (its answer is pfid's JSON, as GET gives it).
CTL=("$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/token" --format json)
"${CTL[@]}" tier slurm-8 flex10 >/dev/null || fail "pfi ctl tier slurm-8 flex10: exit $?"
"${CTL[@]}" tier slurm-9 0.4 >/dev/null || fail "pfi ctl tier slurm-9 0.4: exit $?"
until_true 10 eval '[ "$(tier slurm-8)" = "0.1 api" ] && [ "$(tier slurm-9)" = "0.4 api" ]' ||
  fail "pfi ctl tier: slurm-8 '$(tier slurm-8)', slurm-9 '$(tier slurm-9)'"
"${CTL[@]}" untier slurm-9 >/dev/null || fail "pfi ctl untier slurm-9: exit $?"
until_true 10 eval '[ "$(tier slurm-9)" = "absent" ]' || fail "pfi ctl untier: slurm-9 '$(tier slurm-9)'"
"${CTL[@]}" untier slurm-9 >/dev/null 2>"$T/err"
[ $? = 1 ] || fail "pfi ctl untier of a job without a tier: exit $?, expected 1 (HTTP 404)"
grep -q 'HTTP 404' "$T/err" || fail "pfi ctl untier again: '$(cat "$T/err")'"
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" tier slurm-8 flex25 2>"$T/err"
[ $? = 2 ] || fail "pfi ctl tier without a token file: exit $?, expected 2"
"${CTL[@]}" tier slurm-8 1.5 2>"$T/err"
[ $? = 2 ] || fail "pfi ctl tier slurm-8 1.5: exit $?, expected 2"
"${CTL[@]}" tiers | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert {x["job"]: x["max_loss"] for x in d["jobs"]}["slurm-8"] == 0.1, d' ||
  fail "pfi ctl tiers: $("${CTL[@]}" tiers)"
"${CTL[@]}" capacity | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert "duration_s" in d and "tiers" in d, sorted(d)' ||
  fail "pfi ctl capacity: $("${CTL[@]}" capacity)"

# pfid's /metrics: the control module knows both jobs outside an event
# (it learns their uncapped points); the believed PFI, when it has one,
# is a finite number (its value is checked in unit.test_fleet).
M="http://127.0.0.1:${API[a]}/metrics"
known() { curl -s -m 5 "$M" | grep -q '^pfi_job_learned_points{job="slurm-5"} ' &&
          curl -s -m 5 "$M" | grep -q '^pfi_job_learned_points{job="slurm-6"} '; }
until_true 20 known || fail "pfid /metrics has no series for the jobs: $(curl -s -m 5 "$M" | grep pfi_job_)"
curl -s -m 5 "$M" >"$T/m"
grep -q '^# TYPE pfi_job_power_flexibility_index gauge$' "$T/m" || fail "no PFI metric type"
awk '/^pfi_job_power_flexibility_index/ { if ($2 != $2 + 0 || $2 == "NaN" || $2 ~ /[Ii]nf/) exit 1 }' "$T/m" ||
  fail "a PFI that is not a finite number: $(grep ^pfi_job_power "$T/m")"

# Each period's work: in /v1/status (n, p50 <= p99 <= max) and as a
# histogram whose +Inf bucket is its count.
api a GET /v1/status | python3 -c '
import json, sys
w = json.load(sys.stdin)["period_work_s"]
assert w["n"] > 0 and 0 <= w["p50"] <= w["p99"] <= w["max"], w' ||
  fail "period_work_s in /v1/status: $(api a GET /v1/status)"
curl -s -m 5 "$M" | awk '
  $1 == "pfi_pfid_period_duration_seconds_bucket{le=\"+Inf\"}" { inf = $2 }
  $1 == "pfi_pfid_period_duration_seconds_count" { n = $2 }
  END { exit !(n > 0 && inf == n) }' || fail "no period histogram on /metrics"

# The event, 100 W: below what the floors allow, so every job is decided
# (held at its floor, the shortfall recorded) under the tier set through
# the API.
api a POST /v1/events "$(event_json ev1 0 120 100)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
dec() { sql "$T/records.db" "SELECT DISTINCT max_loss FROM fleet_decisions WHERE job = '$1' AND event = 'ev1'"; }
until_true 30 eval '[ -n "$(dec slurm-5)" ] && [ -n "$(dec slurm-6)" ]' || fail "no decisions for the jobs: $(sql "$T/records.db" "SELECT job, reason, max_loss, event FROM fleet_decisions LIMIT 20; SELECT what, detail FROM fleet_log") $(tail -5 "$T/pfid.a.log")"
[ "$(dec slurm-5)" = 0.3 ] || fail "slurm-5 decided under tier '$(dec slurm-5)', expected 0.3"
[ "$(dec slurm-6)" = 0.25 ] || fail "slurm-6 decided under tier '$(dec slurm-6)', expected 0.25"

# Delete: the node's tier is back; a second delete is 404.
api a DELETE /v1/tiers/slurm-5 >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "DELETE: HTTP $(cat "$T/code")"
until_true 10 eval '[ "$(tier slurm-5)" = "0.1 node" ]' || fail "after DELETE slurm-5 '$(tier slurm-5)'"
api a DELETE /v1/tiers/slurm-5 >/dev/null
[ "$(cat "$T/code")" = 404 ] || fail "second DELETE: HTTP $(cat "$T/code"), expected 404"
api a DELETE /v1/events/ev1 >/dev/null

# A node's tier file written after its job was mapped (the Slurm prolog
# writes the GPU map first): the module is rebuilt with it, and the next
# event's decisions are under it (they stayed under "no tier" before).
api a DELETE /v1/tiers/slurm-6 >/dev/null
until_true 10 eval '[ "$(tier slurm-6)" = "None none" ]' || fail "after DELETE slurm-6 '$(tier slurm-6)'"
sleep 2 # periods with slurm-6 and no tier at all
echo 0.5 >"$T/tiers.n2/slurm-6"
until_true 10 eval '[ "$(tier slurm-6)" = "0.5 node" ]' || fail "slurm-6's tier file: '$(tier slurm-6)'"
api a POST /v1/events "$(event_json ev2 0 120 100)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST ev2: HTTP $(cat "$T/code")"
dec2() { sql "$T/records.db" "SELECT DISTINCT max_loss FROM fleet_decisions WHERE job = '$1' AND event = 'ev2'"; }
until_true 30 eval '[ -n "$(dec2 slurm-6)" ]' || fail "no decisions for slurm-6 in ev2"
[ "$(dec2 slurm-6)" = 0.5 ] || fail "slurm-6 decided under tier '$(dec2 slurm-6)' in ev2, expected 0.5 (its node's tier file)"
api a DELETE /v1/events/ev2 >/dev/null
[ "$fails" = 0 ] || exit 1
echo "tiers: ok"
