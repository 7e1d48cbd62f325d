#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi grid bridge --listen` against the mock VTN's --reference mode, which
# behaves as the OpenADR Alliance's 3.1.0 reference VTN: a callback check
# (GET <callbackUrl>/echo?echo=test_echo) before each subscription is kept,
# 500 "Echo issue" with the subscription kept when it fails, notification
# bodies that are a JSON string of snake_case keys, 403 for an unknown or
# expired token, tokens without expires_in. With --interval 300 (no poll
# due during the test) a new event reaches pfid within 2 s of its creation
# through the notification; the echo check passes; a 403 is followed by
# one token renewal; the VTN holds one subscription of the bridge's however
# many passes the bridge makes, and none after a refused create.
. "$(dirname "$0")/lib.sh"

setup_nats
pfid_start a
until_true 30 sh -c "curl -s -m 2 -o /dev/null http://127.0.0.1:${API[a]}/v1/status" ||
  { fail "pfid did not answer"; exit 1; }

python3 tests/mock-vtn/mock_vtn.py --reference --port-file "$T/vtnport" --lifetime 200 &
PIDS+=("$!")
until_true 10 test -s "$T/vtnport" || { fail "mock VTN did not start"; exit 1; }
BASE="http://127.0.0.1:$(cat "$T/vtnport")/openadr3"
tok() { curl -sS -m 5 -d grant_type=client_credentials -d client_id="$1" -d client_secret="$2" \
  "$BASE/auth/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'; }
BL=$(tok bl1 bl-secret)
vtn() { # vtn TOKEN METHOD PATH [BODY]
  curl -sS -m 5 -X "$2" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    ${4:+--data-binary "$4"} "$BASE/$3"
}
vtnlog() { curl -sS -m 5 "$BASE/../_mock/log"; }
# The mode itself: a token without expires_in, an unknown token 403.
curl -sS -m 5 -d grant_type=client_credentials -d client_id=ven1 -d client_secret=ven-secret \
  "$BASE/auth/token" | python3 -c 'import json,sys; t = json.load(sys.stdin); assert "expires_in" not in t, t' ||
  fail "the reference mode's token has an expires_in"
[ "$(curl -sS -m 5 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "$BASE/programs")" = 403 ] ||
  fail "an unknown token is not 403"
PID=$(vtn "$BL" POST programs '{"programName":"site-flex"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
printf 'ven-secret\n' >"$T/ven.secret"
chmod 600 "$T/ven.secret"

# The first callback check fails (as when the callback does not echo): the
# VTN answers 500 "Echo issue" and keeps the subscription; the bridge
# deletes it and makes its subscription again within 30 s.
curl -sS -m 5 -d '{"count": 1}' "$BASE/../_mock/fail-echo" >/dev/null
"$PFI" grid bridge --pfid "http://127.0.0.1:${API[a]}" --pfid-token-file "$T/token" \
  --vtn "$BASE" --client-id ven1 --client-secret-file "$T/ven.secret" --program site-flex \
  --level gpu --interval 300 --listen 127.0.0.1:0 >"$T/bridge.log" 2>"$T/bridge.err" &
BRIDGE=$!
PIDS+=("$BRIDGE")
until_true 90 grep -q '^bridge: subscription .* made at the VTN' "$T/bridge.log" ||
  { fail "no subscription: $(cat "$T/bridge.log" "$T/bridge.err")"; exit 1; }
grep -q '^pfi grid bridge: subscription: VEN: POST /subscriptions: HTTP 500' "$T/bridge.err" ||
  fail "the refused create is not told: $(cat "$T/bridge.err")"
HPORT=$(sed -n 's/^bridge: listening for the VTN.s notifications on 127.0.0.1 port \([0-9]*\) .*/\1/p' "$T/bridge.log")
HOOK="http://127.0.0.1:$HPORT/notify"
SUB=$(sed -n 's/^bridge: subscription \(.*\) made at the VTN/\1/p' "$T/bridge.log" | head -1)

# The log: two POST /subscriptions, the first 500 and the second 201; the
# subscription the first left (its id) deleted before the second; two echo
# checks made (one failed at the VTN's side, one answered), and the VTN
# holds exactly the second.
VENTOK=$(tok ven1 ven-secret)
vtn "$VENTOK" GET subscriptions >"$T/subs.json"
vtnlog >"$T/log.json"
python3 - "$T/subs.json" "$T/log.json" "$SUB" "$HOOK" "$PID" <<'PY' || fail "the subscriptions: $(cat "$T/subs.json")"
import json, sys
subs = json.load(open(sys.argv[1]))
log = json.load(open(sys.argv[2]))
sub, hook, pid = sys.argv[3:6]
assert [s["id"] for s in subs] == [sub], subs
oo = subs[0]["objectOperations"][0]
assert oo["callbackUrl"] == hook and subs[0]["programID"] == pid, subs
posts = [r for r in log if r["method"] == "POST" and r["path"].endswith("/subscriptions")]
assert [r["status"] for r in posts] == [500, 201], posts
dels = [r for r in log if r["method"] == "DELETE" and "/subscriptions/" in r["path"]]
assert len(dels) == 1 and dels[0]["status"] == 200, dels
assert dels[0]["path"].rsplit("/", 1)[1] != sub, (dels, sub)
assert log.index(posts[0]) < log.index(dels[0]) < log.index(posts[1]), log
PY
# The echo check, as the VTN makes it, answered by the listener.
[ "$(curl -sS -m 5 "$HOOK/echo?echo=test_echo")" = test_echo ] || fail "the listener does not echo"

# reach W: creates an import limit (lower each time: the lowest of the
# events in force is the one pfid gets) of W kW on the GPUs from now for 10
# minutes ($T/ev.json, the VTN's answer) and prints the seconds from just
# before its POST to pfid listing it (curl and bash alone in that loop,
# polled every 0.05 s for up to 30 s; 999 when it does not come).
reach() {
  local t0 t1 body want
  want="\"target_w\":$(python3 -c "print(float($1 * 1000))"),"
  body='{"programID":"'"$PID"'","eventName":"grid","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],"intervalPeriod":{"start":"'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":['"$1"']}]}]}'
  t0=$(date +%s%N)
  vtn "$BL" POST events "$body" >"$T/ev.json"
  for _ in $(seq 600); do
    if [[ "$(curl -s -m 2 -H "Authorization: Bearer $(<"$T/token")" "http://127.0.0.1:${API[a]}/v1/events")" == *"$want"* ]]; then
      t1=$(date +%s%N)
      awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", ns / 1e9 }'
      return
    fi
    sleep 0.05
  done
  echo 999
}
# The bridge's last poll was at its start (the subscription's retry), the
# next is 300 s away: only the notification can bring the event in time.
DT=$(reach 0.8)
echo "event 1 reached pfid in $DT s" >&2
python3 -c "import sys; sys.exit(0 if $DT <= 2 else 1)" ||
  fail "the new event reached pfid in $DT s (over 2 s): $(cat "$T/bridge.log" "$T/bridge.err"; vtnlog | python3 -c '
import json, sys
for r in json.load(sys.stdin)[-15:]: print("%.3f %s %s %s" % (r["t"], r["method"], r["path"], r["status"]))')"
EV=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/ev.json")
grep -q "^bridge: notification CREATE EVENT $EV: polling the VTN now" "$T/bridge.log" ||
  fail "the string-wrapped, snake_case notification was not decoded: $(cat "$T/bridge.log" "$T/bridge.err")"
grep -q 'malformed' "$T/bridge.err" && fail "a notification refused: $(cat "$T/bridge.err")"
# The body the VTN sent is a JSON string holding snake_case keys (the
# mock's shape, checked here so that the test cannot pass on camelCase).
python3 - <<'PY' || fail "the reference mode's notification shape"
import sys
sys.path.insert(0, "tests/mock-vtn")
import mock_vtn
n = mock_vtn.snake({"objectType": "EVENT", "object": {"programID": "1", "intervalPeriod": {"randomizeStart": "PT0S"}}})
assert n == {"object_type": "EVENT", "object": {"program_id": "1", "interval_period": {"randomize_start": "PT0S"}}}, n
PY

# Every token expires at the VTN: the next request is 403 and the bridge
# renews its token once, and goes on.
vtnlog >"$T/log0.json"
curl -sS -m 5 -X POST "$BASE/../_mock/expire-tokens" >/dev/null
BL=$(tok bl1 bl-secret)
DT=$(reach 0.625)
echo "event 2 (after the tokens expired) reached pfid in $DT s" >&2
[ "$DT" != 999 ] || fail "no event after the 403: $(cat "$T/bridge.log" "$T/bridge.err")"
vtnlog >"$T/log1.json"
python3 - "$T/log0.json" "$T/log1.json" <<'PY' || fail "the 403 and the renewal: $(cat "$T/log1.json")"
import json, sys
n0 = len(json.load(open(sys.argv[1])))
log = json.load(open(sys.argv[2]))[n0:]
# One 403 (the bridge's first request with its expired token), then one
# token request, then that request again with the new token, answered.
refused = [i for i, r in enumerate(log) if r["status"] == 403]
assert len(refused) == 1, log
i = refused[0]
tokens = [r for r in log[i + 1:] if r["method"] == "POST" and r["path"].endswith("/auth/token")]
assert len(tokens) == 1, log
j = log.index(tokens[0])
retry = log[j + 1]
assert retry["path"] == log[i]["path"] and retry["status"] == 200, (log[i], retry)
assert retry["bearer"] == tokens[0]["issued"], retry
PY

# Repeated passes (each notification is one): the VTN still holds exactly
# the bridge's one subscription.
for w in 0.5 0.25 0.125; do
  [ "$(reach "$w")" != 999 ] || fail "event at $w kW did not reach pfid"
done
VENTOK=$(tok ven1 ven-secret)
vtn "$VENTOK" GET subscriptions | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert [x["id"] for x in s] == [sys.argv[1]], s' "$SUB" || fail "subscriptions after repeated passes: $(vtn "$VENTOK" GET subscriptions)"
[ "$(grep -c '^bridge: subscription .* made at the VTN' "$T/bridge.log")" = 1 ] ||
  fail "the subscription was made more than once: $(cat "$T/bridge.log")"

# SIGTERM: the subscription is deleted at the VTN.
kill -TERM "$BRIDGE"
until_true 20 sh -c "! kill -0 $BRIDGE 2>/dev/null" || fail "the bridge did not stop on SIGTERM"
wait "$BRIDGE"
rc=$?
[ "$rc" = 0 ] || fail "bridge exit $rc after SIGTERM: $(cat "$T/bridge.err")"
[ "$(vtn "$VENTOK" GET subscriptions)" = "[]" ] || fail "subscriptions left at the VTN: $(vtn "$VENTOK" GET subscriptions)"
exit $((fails > 0))
