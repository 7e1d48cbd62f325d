#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The VTN's webhook notifications into pfid: `pfi grid bridge --listen`
# subscribes to the program's events at the mock OpenADR 3.1 VTN
# (tests/mock-vtn) with a bearer token of its own and polls at once on each
# notification, so with --interval 3600 (no poll due during the test) an
# event created, updated and deleted at the VTN reaches pfid through the
# notification alone. Requests without the token, with another one, a
# malformed body and one over 1 MiB are refused and change nothing; a
# subscription the VTN changed or lost is put back or made again; SIGTERM
# deletes it. Everything on loopback, every wait bounded.
. "$(dirname "$0")/lib.sh"

setup_nats
pfid_start a
until_true 30 sh -c "curl -s -m 2 -o /dev/null http://127.0.0.1:${API[a]}/v1/status" ||
  { fail "pfid did not answer"; exit 1; }

python3 tests/mock-vtn/mock_vtn.py --port-file "$T/vtnport" --lifetime 200 &
PIDS+=("$!")
until_true 10 test -s "$T/vtnport" || { fail "mock VTN did not start"; exit 1; }
BASE="http://127.0.0.1:$(cat "$T/vtnport")/openadr3"
tok() { curl -sS -m 5 -d grant_type=client_credentials -d client_id="$1" -d client_secret="$2" \
  "$BASE/auth/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'; }
BL=$(tok bl1 bl-secret)
VENTOK=$(tok ven1 ven-secret)
vtn() { # vtn TOKEN METHOD PATH [BODY]
  curl -sS -m 5 -X "$2" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    ${4:+--data-binary "$4"} "$BASE/$3"
}
PID=$(vtn "$BL" POST programs '{"programName":"site-flex"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
printf 'ven-secret\n' >"$T/ven.secret"
chmod 600 "$T/ven.secret"
# The VTN fails the bridge's first two API requests (its subscription's
# GET /programs, then its first poll's): the bridge says so and, holding no
# subscription, tries again within 30 s rather than at --interval.
curl -sS -m 5 -d '{"status": 503, "count": 2}' "$BASE/../_mock/fail-next" >/dev/null
"$PFI" grid bridge --pfid "http://127.0.0.1:${API[a]}" --pfid-token-file "$T/token" \
  --vtn "$BASE" --client-id ven1 --client-secret-file "$T/ven.secret" --program site-flex \
  --level gpu --interval 3600 --listen 127.0.0.1:0 >"$T/bridge.log" 2>"$T/bridge.err" &
BRIDGE=$!
PIDS+=("$BRIDGE")
until_true 60 grep -q '^bridge: subscription .* made at the VTN' "$T/bridge.log" ||
  { fail "no subscription: $(cat "$T/bridge.log" "$T/bridge.err")"; exit 1; }
grep -q '^pfi grid bridge: subscription: VEN: GET /programs?skip=0&limit=50: HTTP 503 (trying again at the next poll, within 30 s)' "$T/bridge.err" ||
  fail "the failed subscription is not told: $(cat "$T/bridge.err")"
HPORT=$(sed -n 's/^bridge: listening for the VTN.s notifications on 127.0.0.1 port \([0-9]*\) .*/\1/p' "$T/bridge.log")
[ -n "$HPORT" ] || { fail "no listening port: $(cat "$T/bridge.log")"; exit 1; }
HOOK="http://127.0.0.1:$HPORT/notify"

# The subscription at the VTN: EVENT CREATE/UPDATE/DELETE of the program to
# the listener, with a bearer token of 64 hex digits that is no token the
# VTN issued (the OAuth2 tokens expire; this one is the bridge's own).
vtn "$VENTOK" GET subscriptions >"$T/subs.json"
curl -sS -m 5 "$BASE/../_mock/log" >"$T/log.json"
python3 - "$T/subs.json" "$T/log.json" "$PID" "$HOOK" <<'PY' || fail "the subscription: $(cat "$T/subs.json")"
import json, re, sys
subs = json.load(open(sys.argv[1]))
log = json.load(open(sys.argv[2]))
assert len(subs) == 1, subs
s = subs[0]
assert s["programID"] == sys.argv[3], s
oo = s["objectOperations"]
assert len(oo) == 1 and oo[0]["objects"] == ["EVENT"], oo
assert oo[0]["operations"] == ["CREATE", "UPDATE", "DELETE"], oo
assert oo[0]["callbackUrl"] == sys.argv[4], oo
assert re.fullmatch("[0-9a-f]{64}", oo[0]["bearerToken"]), oo
assert oo[0]["bearerToken"] not in [r.get("issued") for r in log], oo
PY
SUB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$T/subs.json")
BEARER=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["objectOperations"][0]["bearerToken"])' "$T/subs.json")

# oadr_target W: pfid has exactly one oadr- event in force, at W.
oadr_target() { api a GET /v1/events | python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["id"].startswith("oadr-") and not x["cancelled"]]
sys.exit(0 if len(e) == 1 and abs(e[0]["target_w"] - float(sys.argv[1])) < 1e-6 else 1)' "$1"; }
no_oadr() { api a GET /v1/events | python3 -c '
import json, sys
sys.exit(0 if all(x["cancelled"] for x in json.load(sys.stdin) if x["id"].startswith("oadr-")) else 1)'; }
no_oadr || fail "pfid has an oadr- event before any: $(api a GET /v1/events)"

# CREATE: an import limit of 0.8 kW on the GPUs from now for 10 minutes
# (a stated start; "0001-01-01", "now", is the event's modificationDateTime).
# The bridge's only poll so far was at its start, the next is an hour away:
# the notification brings it.
START=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EV=$(vtn "$BL" POST events '{"programID":"'"$PID"'","eventName":"grid","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],"intervalPeriod":{"start":"'"$START"'","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[0.8]}]}]}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
until_true 20 oadr_target 800 || fail "CREATE: pfid has no oadr- event at 800 W: $(api a GET /v1/events) $(cat "$T/bridge.log" "$T/bridge.err")"

# UPDATE: 0.6 kW.
vtn "$BL" PUT "events/$EV" '{"programID":"'"$PID"'","eventName":"grid","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],"intervalPeriod":{"start":"'"$START"'","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[0.6]}]}]}' >/dev/null
until_true 20 oadr_target 600 || fail "UPDATE: pfid's oadr- event is not at 600 W: $(api a GET /v1/events) $(cat "$T/bridge.log" "$T/bridge.err")"

# Refused: no token (401, WWW-Authenticate: Bearer), another token (403),
# a malformed body with the right token (400, a problem object naming the
# field), a body over 1 MiB (413). None reaches pfid; the malformed ones,
# which carry the bridge's token, wake it to poll (the VTN's answer, not
# the body, is what it acts on).
NOTE='{"objectType":"EVENT","operation":"CREATE","object":{"id":"forged","programID":"'"$PID"'","intervalPeriod":{"start":"0001-01-01","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[0.1]}]}]}}'
hook() { # hook FILE AUTH-HEADER-OR-EMPTY: POSTs FILE, prints the status
  curl -sS -m 10 -o "$T/hook.body" -D "$T/hook.head" -w '%{http_code}' -H 'Content-Type: application/json' \
    ${2:+-H "$2"} --data-binary @"$1" "$HOOK"
}
printf '%s' "$NOTE" >"$T/note.json"
[ "$(hook "$T/note.json" "")" = 401 ] || fail "no token: $(cat "$T/hook.head" "$T/hook.body")"
grep -qi '^WWW-Authenticate: Bearer' "$T/hook.head" || fail "401 without WWW-Authenticate: $(cat "$T/hook.head")"
# Another token: the bridge's with its last digit changed (to 1 where it
# is 0: "${BEARER%?}0" was the bridge's own token one time in 16).
OTHER=${BEARER%?}$([ "${BEARER: -1}" = 0 ] && echo 1 || echo 0)
[ "$OTHER" != "$BEARER" ] || fail "the other token is the bridge's"
[ "$(hook "$T/note.json" "Authorization: Bearer $OTHER")" = 403 ] || fail "another token: $(cat "$T/hook.head" "$T/hook.body")"
[ "$(hook "$T/note.json" "Authorization: Bearer $VENTOK")" = 403 ] || fail "the VEN's OAuth2 token: $(cat "$T/hook.body")"
[ "$(hook "$T/note.json" "Authorization: Basic $BEARER")" = 401 ] || fail "Basic: $(cat "$T/hook.body")"
printf '%s' '{"objectType":"EVENT","operation":"UPDATE","object":{"id":"'"$EV"'","programID":"'"$PID"'","intervalPeriod":{"start":"2030-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":["lots"]}]}]}}' >"$T/bad.json"
[ "$(hook "$T/bad.json" "Authorization: Bearer $BEARER")" = 400 ] || fail "malformed: $(cat "$T/hook.head" "$T/hook.body")"
grep -qi '^Content-Type: application/problem+json' "$T/hook.head" || fail "400's type: $(cat "$T/hook.head")"
python3 - "$T/hook.body" <<'PY' || fail "400's problem: $(cat "$T/hook.body")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["status"] == 400 and p["title"] == "Bad Request", p
assert p["detail"].startswith("notification: event.intervals[0].payloads[0].values[0]: expected a number"), p
PY
printf '{"objectType":"EVENT",\n "operation": nope}' >"$T/syntax.json"
[ "$(hook "$T/syntax.json" "Authorization: Bearer $BEARER")" = 400 ] || fail "bad JSON: $(cat "$T/hook.body")"
grep -q '"detail":"notification:2:' "$T/hook.body" || fail "bad JSON's line: $(cat "$T/hook.body")"
printf '%s' '{"objectType":"EVENT","operation":"CREATE","object":{"programID":"1"}}' >"$T/noid.json"
[ "$(hook "$T/noid.json" "Authorization: Bearer $BEARER")" = 400 ] || fail "no id: $(cat "$T/hook.body")"
grep -q 'object.id: expected a string' "$T/hook.body" || fail "no id's detail: $(cat "$T/hook.body")"
python3 -c 'import sys; sys.stdout.write("{\"objectType\":\"EVENT\",\"operation\":\"READ\",\"object\":{\"id\":\"x\"},\"pad\":\"" + "x" * (1 << 20) + "\"}")' >"$T/big.json"
[ "$(hook "$T/big.json" "Authorization: Bearer $BEARER")" = 413 ] || fail "over 1 MiB: $(head -c 300 "$T/hook.body")"
kill -0 "$BRIDGE" 2>/dev/null || fail "the bridge died on the refused requests: $(cat "$T/bridge.err")"
oadr_target 600 || fail "refused requests changed pfid's events: $(api a GET /v1/events)"

# An authenticated notification of an event the VTN does not have wakes the
# bridge, whose poll, the source of truth, finds nothing to post; the
# subscription is checked at each poll: changed at the VTN (another
# callback), it is put back.
vtn "$VENTOK" PUT "subscriptions/$SUB" '{"clientName":"ven1","programID":"'"$PID"'","objectOperations":[{"objects":["EVENT"],"operations":["CREATE"],"callbackUrl":"http://127.0.0.1:9/elsewhere","bearerToken":"x"}]}' >/dev/null
[ "$(hook "$T/note.json" "Authorization: Bearer $BEARER")" = 200 ] || fail "the right token: $(cat "$T/hook.body")"
until_true 20 grep -q "^bridge: subscription $SUB put back at the VTN" "$T/bridge.log" ||
  fail "changed subscription not put back: $(cat "$T/bridge.log" "$T/bridge.err")"
oadr_target 600 || fail "a notification of an event the VTN lacks changed pfid's events: $(api a GET /v1/events)"
vtn "$VENTOK" GET "subscriptions/$SUB" | python3 -c '
import json, sys
oo = json.load(sys.stdin)["objectOperations"][0]
assert oo["callbackUrl"] == sys.argv[1] and oo["bearerToken"] == sys.argv[2], oo' "$HOOK" "$BEARER" ||
  fail "subscription after the put-back"
# Lost at the VTN: made again (a new id), and notifications flow on it.
vtn "$VENTOK" DELETE "subscriptions/$SUB" >/dev/null
[ "$(hook "$T/note.json" "Authorization: Bearer $BEARER")" = 200 ] || fail "the right token: $(cat "$T/hook.body")"
until_true 20 sh -c "grep '^bridge: subscription .* made at the VTN' '$T/bridge.log' | grep -vq ' $SUB '" ||
  fail "lost subscription not made again: $(cat "$T/bridge.log" "$T/bridge.err")"
SUB2=$(sed -n 's/^bridge: subscription \(.*\) made at the VTN/\1/p' "$T/bridge.log" | tail -1)

# DELETE of the event in force ends it at once.
vtn "$BL" DELETE "events/$EV" >/dev/null
until_true 20 no_oadr || fail "DELETE: pfid's oadr- event is not cancelled: $(api a GET /v1/events) $(cat "$T/bridge.log" "$T/bridge.err")"

# The notifications the bridge took: the VTN's three for EV, the test's
# three malformed ones with the token (a reason to poll, nothing more) and
# its two well-formed ones, in order; none of those refused for their token.
grep '^bridge: notification' "$T/bridge.log" >"$T/notes"
cat >"$T/want" <<WANT
bridge: notification CREATE EVENT $EV: polling the VTN now
bridge: notification UPDATE EVENT $EV: polling the VTN now
bridge: notification with our token, not decoded: polling the VTN now
bridge: notification with our token, not decoded: polling the VTN now
bridge: notification with our token, not decoded: polling the VTN now
bridge: notification CREATE EVENT forged: polling the VTN now
bridge: notification CREATE EVENT forged: polling the VTN now
bridge: notification DELETE EVENT $EV: polling the VTN now
WANT
diff -u "$T/want" "$T/notes" >&2 || fail "the notifications taken"
grep -q 'webhook: 4 request(s) refused for their token, 3 malformed' "$T/bridge.err" ||
  fail "the refused requests are not told: $(cat "$T/bridge.err")"

# SIGTERM: the subscription is deleted at the VTN.
kill -TERM "$BRIDGE"
until_true 20 sh -c "! kill -0 $BRIDGE 2>/dev/null" || fail "the bridge did not stop on SIGTERM"
wait "$BRIDGE"
rc=$?
[ "$rc" = 0 ] || fail "bridge exit $rc after SIGTERM: $(cat "$T/bridge.err")"
grep -q "^bridge: subscription $SUB2 deleted at the VTN" "$T/bridge.log" || fail "no deletion said: $(cat "$T/bridge.log")"
[ "$(vtn "$VENTOK" GET subscriptions)" = "[]" ] || fail "subscriptions left at the VTN: $(vtn "$VENTOK" GET subscriptions)"
exit $((fails > 0))
