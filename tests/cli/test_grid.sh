#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi grid against the mock OpenADR 3.1 VTN (tests/mock-vtn/mock_vtn.py) on
# loopback: OAuth2, programs, events of every acted-on payload type,
# overlap rules, randomizeStart, a token the VTN stops honouring, refused
# credentials, a malformed event, an infeasible limit, reports and a
# subscription; then schedule files and the meter chain. Expected values are
# worked by hand beside each check.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }
python3 tests/mock-vtn/mock_vtn.py --port-file "$T/port" --lifetime 120 \
  --ven ven1:ven-secret --bl bl1:bl-secret &
VTN_PID=$!
trap 'kill $VTN_PID 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || { echo "mock VTN did not start"; exit 1; }
BASE="http://127.0.0.1:$(cat "$T/port")/openadr3"
CURL=(curl -sS --max-time 5)

# The business logic (BL) side: a token, a program, events. The mock numbers
# every object from one counter: programs 1-2, events A=3 B=4 C=5 D=6 X=7
# R=8.
BL=$("${CURL[@]}" -d grant_type=client_credentials -d client_id=bl1 \
  -d client_secret=bl-secret "$BASE/auth/token" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
post() { "${CURL[@]}" -H "Authorization: Bearer $BL" -H 'Content-Type: application/json' -d "$2" "$BASE/$1"; }
PID=$(post programs '{"programName":"site-flex"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
post programs '{"programName":"other"}' >/dev/null

KW='"payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}]'
# A: 800 kW 2030-01-01 01:00-03:00, priority 1.
post events '{"programID":"'"$PID"'","eventName":"A","priority":1,'"$KW"',"intervalPeriod":{"start":"2030-01-01T01:00:00Z","duration":"PT2H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[800]}]}]}' >/dev/null
sleep 0.01
# B, created later, same priority: 900 kW 02:00-04:00 -> wins 02:00-03:00.
post events '{"programID":"'"$PID"'","eventName":"B","priority":1,'"$KW"',"intervalPeriod":{"start":"2030-01-01T02:00:00Z","duration":"PT2H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[900]}]}]}' >/dev/null
# C, created last but priority 5 (lower): 500 kW 03:30-03:45 -> B keeps it.
post events '{"programID":"'"$PID"'","eventName":"C","priority":5,'"$KW"',"intervalPeriod":{"start":"2030-01-01T03:30:00Z","duration":"PT15M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[500]}]}]}' >/dev/null
# D: SIMPLE level 2 (0.75 x 1 MW) 05:00-05:30, then DISPATCH_SETPOINT_RELATIVE
# -20 PERCENT (0.8 MW) for 30 min after it; and a PRICE payload ignored.
post events '{"programID":"'"$PID"'","eventName":"D","payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"DISPATCH_SETPOINT_RELATIVE","units":"PERCENT"}],"intervalPeriod":{"start":"2030-01-01T05:00:00Z","duration":"PT30M"},"intervals":[{"id":0,"payloads":[{"type":"SIMPLE","values":[2]},{"type":"PRICE","values":[0.3]}]},{"id":1,"payloads":[{"type":"DISPATCH_SETPOINT_RELATIVE","values":[-20]}]}]}' >/dev/null
# An event of another program is not ours.
OPID=$(("$PID" + 1))
post events '{"programID":"'"$OPID"'","eventName":"X","intervalPeriod":{"start":"2030-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[1]}]}]}' >/dev/null

printf 'ven-secret\n' >"$T/secret"
chmod 600 "$T/secret"
VEN=(--vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" --program site-flex --baseline 1000000 --now 2030-01-01T00:00:00Z)

"$PFI" grid timeline "${VEN[@]}" --format csv >"$T/tl.csv" 2>"$T/err" ||
  fail "timeline exit $? ($(cat "$T/err"))"
cat >"$T/want.csv" <<'EOF'
start,end,limit_w,level,source,event,type,infeasible_by_w
2030-01-01T01:00:00Z,2030-01-01T02:00:00Z,800000.000000,meter,openadr,3,IMPORT_CAPACITY_LIMIT,0.000000
2030-01-01T02:00:00Z,2030-01-01T04:00:00Z,900000.000000,meter,openadr,4,IMPORT_CAPACITY_LIMIT,0.000000
2030-01-01T05:00:00Z,2030-01-01T05:30:00Z,750000.000000,meter,openadr,6,SIMPLE,0.000000
2030-01-01T05:30:00Z,2030-01-01T06:00:00Z,800000.000000,meter,openadr,6,DISPATCH_SETPOINT_RELATIVE,0.000000
EOF
diff -u "$T/want.csv" "$T/tl.csv" >&2 || fail "VTN timeline differs from the hand-worked one"

# A schedule file merged in: 850 kW 01:30-02:30 at the meter is lower than
# A's 800? no: higher than 800 during 01:30-02:00 (800 stays) and lower than
# B's 900 during 02:00-02:30 (850 wins there).
printf 'start,end,limit,level\n2030-01-01T01:30:00Z,2030-01-01T02:30:00Z,850kW,meter\n' >"$T/sched.csv"
"$PFI" grid timeline "${VEN[@]}" --schedule "$T/sched.csv" --format csv 2>/dev/null |
  sed -n 3,4p >"$T/m.csv"
grep -q '^2030-01-01T02:00:00Z,2030-01-01T02:30:00Z,850000.000000,meter,schedule,' "$T/m.csv" ||
  fail "schedule's 850 kW should win 02:00-02:30: $(cat "$T/m.csv")"
grep -q '^2030-01-01T02:30:00Z,2030-01-01T04:00:00Z,900000.000000' "$T/m.csv" ||
  fail "B should resume at 02:30: $(cat "$T/m.csv")"

# An infeasible limit: with a floor of 850 kW, A's 800 kW is 50 kW short.
"$PFI" grid timeline "${VEN[@]}" --floor 850000 --format json 2>/dev/null >"$T/f.json"
python3 - "$T/f.json" <<'EOF' || fail "infeasible_by_w of A"
import json, sys
s = json.load(open(sys.argv[1]))
assert abs(s[0]["infeasible_by_w"] - 50000) < 1e-6, s[0]
assert s[1]["infeasible_by_w"] == 0, s[1]
EOF

# A token the VTN stops honouring (401 on the next request): the VEN gets a
# new token and succeeds; the log shows two token requests.
"${CURL[@]}" -d '{"status":401,"count":1}' "$BASE/../_mock/fail-next" >/dev/null
"$PFI" grid timeline "${VEN[@]}" --format csv >"$T/tl2.csv" 2>"$T/err" ||
  fail "retry after 401: exit $? ($(cat "$T/err"))"
diff -q "$T/want.csv" "$T/tl2.csv" >/dev/null || fail "timeline after a refused token differs"
n=$("${CURL[@]}" "$BASE/../_mock/log" | python3 -c 'import json,sys; print(sum(1 for r in json.load(sys.stdin) if r["path"].endswith("/auth/token")))')
# 1 (BL) + 1 (first timeline) + 1 (schedule) + 1 (floor) + 2 (retry) = 6
[ "$n" = 6 ] || fail "token requests: $n, expected 6"

# Refused credentials: exit 1, the message says so; nothing printed.
printf 'wrong\n' >"$T/bad"
chmod 600 "$T/bad"
"$PFI" grid timeline --vtn "$BASE" --client-id ven1 --client-secret-file "$T/bad" \
  --program site-flex --format csv >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "wrong secret: exit $rc, expected 1"
grep -q "refused the client credentials" "$T/err" || fail "wrong secret message: $(cat "$T/err")"
[ -s "$T/out" ] && fail "wrong secret printed a timeline"
# A secret file others can read is refused before any request.
chmod 644 "$T/bad"
"$PFI" grid timeline --vtn "$BASE" --client-id ven1 --client-secret-file "$T/bad" \
  --program site-flex 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "readable by others" "$T/err" || fail "world-readable secret accepted"
# An unknown program: exit 1 naming it.
"$PFI" grid timeline --vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" \
  --program nope 2>"$T/err" >/dev/null
[ $? = 1 ] && grep -q "no program 'nope'" "$T/err" || fail "unknown program: $(cat "$T/err")"

# randomizeStart PT10M: delayed within [0, 600] s, the same for the same
# seed, intervals still back to back.
post events '{"programID":"'"$PID"'","eventName":"R","intervalPeriod":{"start":"2030-01-02T00:00:00Z","duration":"PT1H","randomizeStart":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"SIMPLE","values":[1]}]},{"id":1,"payloads":[{"type":"SIMPLE","values":[3]}]}]}' >/dev/null
for s in 1 1 2; do
  "$PFI" grid timeline "${VEN[@]}" --seed $s --format json 2>/dev/null |
    python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin) if x["event"] == "8"]
t0 = 1893542400  # 2030-01-02T00:00:00Z
d = s[0]["start_s"] - t0
assert 0 <= d <= 600, d
assert s[0]["end_s"] == s[1]["start_s"] and s[0]["end_s"] - s[0]["start_s"] == 3600
assert abs(s[0]["limit_w"] - 900000) < 1e-6 and abs(s[1]["limit_w"] - 500000) < 1e-6
print(d)' >>"$T/shifts" || fail "randomizeStart with seed $s"
done
[ "$(sed -n 1p "$T/shifts")" = "$(sed -n 2p "$T/shifts")" ] || fail "same seed, different shifts: $(cat "$T/shifts")"

"${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/events?programID=$PID&limit=3" >"$T/ev.json"

# A malformed event from the VTN: exit 2 naming the request and the field;
# nothing printed.
"${CURL[@]}" -d '{"id":"bad","programID":"'"$PID"'","intervalPeriod":{"start":"2030-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":["lots"]}]}]}' \
  "$BASE/../_mock/raw-event" >/dev/null
"$PFI" grid timeline "${VEN[@]}" --format csv >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] || fail "malformed event: exit $rc, expected 2"
grep -q "GET /events?programID=$PID&skip=0&limit=50: events\[5\].intervals\[0\].payloads\[0\].values\[0\]: expected a number" "$T/err" ||
  fail "malformed event message: $(cat "$T/err")"
[ -s "$T/out" ] && fail "malformed event printed a timeline"

# A report: the VTN stores it with the spec's shape.
"$PFI" grid report --vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" \
  --program site-flex --event 1 --start 2030-01-01T01:00:00Z --duration 15m \
  --usage 200000 --demand 800000 --baseline-w 1000000 --shed-available 150000 >/dev/null 2>"$T/err" ||
  fail "report: $(cat "$T/err")"
"${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/reports" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r) == 1, r
r = r[0]
assert r["eventID"] == "1" and r["clientName"] == "ven1", r
res = r["resources"][0]
assert res["resourceName"] == "AGGREGATED_REPORT"
assert res["intervalPeriod"] == {"start": "2030-01-01T01:00:00Z", "duration": "PT900S"}
vals = {p["type"]: p["values"][0] for p in res["intervals"][0]["payloads"]}
assert vals == {"USAGE": 200000, "DEMAND": 800000, "BASELINE": 1000000,
                "LOAD_SHED_DELTA_AVAILABLE": 150000}, vals
types = [d["payloadType"] for d in r["payloadDescriptors"]]
assert types == ["USAGE", "DEMAND", "BASELINE", "LOAD_SHED_DELTA_AVAILABLE"], types
' || fail "stored report"

# A subscription for webhook notifications: the VTN stores it for program
# site-flex with the callback URL and, as bearer token, the VEN's OAuth2
# access token: the one the mock issued to the VEN and saw on the POST.
"$PFI" grid subscribe --vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" \
  --program site-flex --callback http://127.0.0.1:9/hook >/dev/null 2>"$T/err" ||
  fail "subscribe: $(cat "$T/err")"
"${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/subscriptions" >"$T/subs.json"
"${CURL[@]}" "$BASE/../_mock/log" >"$T/log.json"
python3 - "$T/subs.json" "$T/log.json" "$PID" <<'EOF' || fail "stored subscription"
import json, sys
subs = json.load(open(sys.argv[1]))
log = json.load(open(sys.argv[2]))
assert len(subs) == 1, subs
s = subs[0]
assert s["programID"] == sys.argv[3] and s["clientName"] == "ven1", s
assert len(s["objectOperations"]) == 1, s
oo = s["objectOperations"][0]
assert oo["callbackUrl"] == "http://127.0.0.1:9/hook", oo
assert oo["objects"] == ["EVENT"] and oo["operations"] == ["CREATE", "UPDATE", "DELETE"], oo
post = [r for r in log if r["method"] == "POST" and r["path"].endswith("/subscriptions")]
assert len(post) == 1 and post[0]["status"] == 201, post
issued = [r["issued"] for r in log if r.get("issued")]
# The VEN's last token (the subscribe call's), sent on the POST and stored.
assert oo.get("bearerToken") == issued[-1] == post[0]["bearer"], (oo, issued[-1:], post)
assert oo["bearerToken"] != "ven-secret"
EOF
# With --bearer-token-file: a token made there (mode 0600, 64 hex digits)
# is the subscription's, and a second subscribe reuses it; a file others
# can read is refused, exit 2 naming it, and nothing subscribed.
for k in 1 2; do
  "$PFI" grid subscribe --vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" \
    --program site-flex --callback http://127.0.0.1:9/hook$k --bearer-token-file "$T/bt" \
    >/dev/null 2>"$T/err" || fail "subscribe --bearer-token-file ($k): $(cat "$T/err")"
done
[ "$(stat -c %a "$T/bt")" = 600 ] || fail "bearer token file mode $(stat -c %a "$T/bt")"
grep -Eqx '[0-9a-f]{64}' "$T/bt" || fail "bearer token file: '$(cat "$T/bt")'"
"${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/subscriptions" >"$T/subs.json"
python3 - "$T/subs.json" "$(cat "$T/bt")" <<'EOF' || fail "subscriptions with the token file's token"
import json, sys
subs = json.load(open(sys.argv[1]))
got = {s["objectOperations"][0]["callbackUrl"]: s["objectOperations"][0]["bearerToken"] for s in subs}
assert got.get("http://127.0.0.1:9/hook1") == sys.argv[2], got
assert got.get("http://127.0.0.1:9/hook2") == sys.argv[2], got
assert len(subs) == 3, subs
EOF
printf 'open-token-0123456789\n' >"$T/bt2"
chmod 644 "$T/bt2"
"$PFI" grid subscribe --vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" \
  --program site-flex --callback http://127.0.0.1:9/hook3 --bearer-token-file "$T/bt2" \
  >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "bt2" "$T/err" || fail "bearer token file readable by others: exit $?, $(cat "$T/err")"
"${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/subscriptions" |
  python3 -c 'import json,sys; sys.exit(0 if len(json.load(sys.stdin)) == 3 else 1)' ||
  fail "a subscription was made with a refused token file"

# Offline: an events file (read before the malformed event below) and bad
# schedule input.
"$PFI" grid timeline --events "$T/ev.json" --baseline 1000000 --now 2030-01-01T00:00:00Z --format csv >"$T/off.csv" ||
  fail "events file"
diff -u <(sed -n 1,3p "$T/want.csv") "$T/off.csv" >&2 || fail "events file timeline"
printf 'start,end,limit\n2030-01-01T00:00:00Z,2030-01-01T01:00:00Z,9 parsecs\n' >"$T/bad.csv"
"$PFI" grid timeline --schedule "$T/bad.csv" 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "bad.csv:2:45: limit: unknown unit .parsecs." "$T/err" || fail "bad schedule: $(cat "$T/err")"
"$PFI" grid timeline 2>/dev/null
[ $? = 2 ] || fail "timeline without a source should exit 2"

# The meter chain: 2 nodes, GPU 4000 and 2000 W, other 600 W and unmeasured
# (node_other_w 1000); PSU curve and PUE 1.25 as in test_grid.c:
# facility = 1.25 (4600/0.954 + 3000/0.93) = 10059.5 W.
printf 'node_other_w = 1000\npsu_rated_w = 10000\npsu_curve = 0.1:0.90,0.5:0.96,1.0:0.91\npue = 1.25\n' >"$T/m.conf"
out=$("$PFI" grid meter --config "$T/m.conf" --gpu-w 4000,2000 --other-w 600,nan --format json 2>&1) ||
  true
# "nan" is not a power: refused.
echo "$out" | grep -q "expected one power" || fail "--other-w nan accepted: $out"
j=$("$PFI" grid meter --config "$T/m.conf" --gpu-w 4000,2000 --format json)
m=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["meter_w"])')
# other unmeasured on both nodes: DC 5000 and 3000; loads 0.5, 0.3; eff
# 0.96 and 0.93: 1.25 (5208.3333 + 3225.8065) = 10542.6747 W.
near "$m" 10542.67473 1e-3 "meter power"
printf 'pue = 0.5\n' >"$T/bad.conf"
"$PFI" grid meter --config "$T/bad.conf" 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "bad.conf:1:7" "$T/err" || fail "bad meter config: $(cat "$T/err")"

# Flexible capacity under tiers (the case worked in test_grid.c's
# test_flexcap): a (slope 0.1/W, flex10: floor 600 W) and b (0.02/W, flex25,
# longest event 1 h). 30 min: 100, 200, 500, 600, 600 W; 2 h (b not cut):
# 20, 40, 100, 100, 100 W.
printf 'tier,max_loss,max_event_s\nflex10,10%%,\nflex25,0.25,3600\n' >"$T/tiers.csv"
printf 'job,tier\na,flex10\nb,flex25\n' >"$T/contract.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,200,200,50\na,700,700,100\nb,200,200,90\nb,700,700,100\n' >"$T/cv.csv"
"$PFI" grid capacity --curves "$T/cv.csv" --tiers "$T/tiers.csv" --contract "$T/contract.csv" \
  --duration 30m --duration 2h --format csv >"$T/cap.csv" || fail "capacity"
for want in "1800,2,1,100" "1800,2,5,500" "1800,2,10,600" "7200,1,1,20" "7200,1,20,100"; do
  IFS=, read -r d e l w <<<"$want"
  got=$(awk -F, -v d="$d" -v l="$l" '$1 == d && $3 == l { print $2 "," $4 }' "$T/cap.csv")
  [ "${got%%,*}" = "$e" ] || fail "capacity $d s: eligible ${got%%,*}, expected $e"
  near "${got#*,}" "$w" 1e-3 "capacity at $l % for $d s"
done
printf 'tier,max_loss\nflex,150%%\n' >"$T/badt.csv"
"$PFI" grid capacity --curves "$T/cv.csv" --tiers "$T/badt.csv" --tier flex 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "badt.csv:2:6: max_loss" "$T/err" || fail "bad tiers: $(cat "$T/err")"
"$PFI" grid capacity --curves "$T/cv.csv" --tiers "$T/tiers.csv" --tier gold 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "tier 'gold' is not in" "$T/err" || fail "unknown tier: $(cat "$T/err")"

# PFI over node power: one 8-GPU job (one node), points 2400 W -> 80 and
# 5600 W -> 100 tokens/s; node_other_w 800: node power 3200 and 6400 W.
# Ratio PFI (power saved over throughput lost, Eq. 1) at the GPU:
# (1 - 2400/5600) / (1 - 0.8) = 2.857143; at the node: (1 - 3200/6400) /
# 0.2 = 2.5. At the meter with PUE 1.5 and efficiency 1
# the ratio is the node's (a constant factor cancels).
printf 'job,gpus,cap_w,power_w,tokens_per_s\nx,8,300,2400,80\nx,8,700,5600,100\n' >"$T/x.csv"
printf 'node_other_w = 800\npue = 1.5\n' >"$T/n.conf"
"$PFI" grid curves --curves "$T/x.csv" --config "$T/n.conf" --level node >"$T/xn.csv" || fail "grid curves"
near "$(awk -F, 'NR == 2 { print $3 }' "$T/xn.csv")" 3200 1e-9 "node power of the capped point"
p=$("$PFI" index "$T/xn.csv" --definition ratio --format csv | awk -F, 'NR == 2 { print $2 }')
near "$p" 2.5 1e-9 "PFI over node power"
p=$("$PFI" index "$T/x.csv" --definition ratio --format csv | awk -F, 'NR == 2 { print $2 }')
near "$p" 2.857142857 1e-9 "PFI over GPU power"
"$PFI" grid curves --curves "$T/x.csv" --config "$T/n.conf" --level meter >"$T/xm.csv"
near "$(awk -F, 'NR == 3 { print $3 }' "$T/xm.csv")" 9600 1e-9 "meter power of the uncapped point"

# Capacity at the node and meter level (pfi grid capacity --level): the same
# 8-GPU job x (one node), tier flex10 (10 %). At the GPU, 2400 W -> 80 and
# 5600 W -> 100 tokens/s: the loss L sheds 3200 x L / 0.2 W down to the
# floor at 90 tokens/s, 160, 320, 800, 1600, 1600 W. At the meter (n.conf:
# 800 W other, PUE 1.5, efficiency 1) the points are 1.5 x (g + 800) =
# 4800 and 9600 W: 240, 480, 1200, 2400, 2400 W. A job y of 16 GPUs (two
# nodes, 1600 W other) at 4800 -> 80 and 11200 -> 100 at the node level:
# 6400 and 12800 W, 6400 x L / 0.2: 320, 640, 1600, 3200, 3200 W. With a
# supplies' curve (psu.conf: rated 5000 W, 0.5:0.90 to 1.0:0.95, PUE 1.2):
# x's points are 3200 W DC at load 0.64, efficiency 0.90 + 0.05 x 0.14 /
# 0.5 = 0.914, 1.2 x 3200 / 0.914 = 4201.31291 W; and 6400 W DC beyond the
# curve's end (0.95), 1.2 x 6400 / 0.95 = 8084.21053 W: 5 % sheds a
# quarter of the span, 970.72440 W, 10 % half, 1941.44881 W.
printf 'tier,max_loss\nflex10,10%%\n' >"$T/t10.csv"
printf 'job,gpus,cap_w,power_w,tokens_per_s\ny,16,300,4800,80\ny,16,700,11200,100\n' >"$T/y.csv"
printf 'node_other_w = 800\npsu_rated_w = 5000\npsu_curve = 0.5:0.90, 1.0:0.95\npue = 1.2\n' >"$T/psu.conf"
cap_at() { # FILE LOSS_PCT ARGS...: the 15 min quote at LOSS_PCT
  local f=$1 l=$2
  shift 2
  "$PFI" grid capacity --curves "$f" --tiers "$T/t10.csv" --tier flex10 --duration 15m --format csv "$@" |
    awk -F, -v l="$l" 'NR > 1 && $3 == l { print $4 }'
}
for lw in 1:160 2:320 5:800 10:1600 20:1600; do
  near "$(cap_at "$T/x.csv" "${lw%%:*}")" "${lw#*:}" 1e-6 "GPU-level capacity at ${lw%%:*} %"
done
for lw in 1:240 2:480 5:1200 10:2400 20:2400; do
  near "$(cap_at "$T/x.csv" "${lw%%:*}" --config "$T/n.conf" --level meter)" "${lw#*:}" 1e-6 "meter-level capacity at ${lw%%:*} %"
done
for lw in 1:320 5:1600 10:3200; do
  near "$(cap_at "$T/y.csv" "${lw%%:*}" --config "$T/n.conf" --level node)" "${lw#*:}" 1e-6 "node-level capacity of 2 nodes at ${lw%%:*} %"
done
near "$(cap_at "$T/x.csv" 5 --config "$T/psu.conf" --level meter)" 970.72440 1e-3 "meter-level capacity through the supplies' curve, 5 %"
near "$(cap_at "$T/x.csv" 10 --config "$T/psu.conf" --level meter)" 1941.44881 1e-3 "meter-level capacity through the supplies' curve, 10 %"
"$PFI" grid capacity --curves "$T/x.csv" --tiers "$T/t10.csv" --tier flex10 --config "$T/n.conf" --level meter --format json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert all(e["level"] == "meter" for e in d), d' || fail "capacity JSON does not name the level"
"$PFI" grid capacity --curves "$T/x.csv" --tiers "$T/t10.csv" --tier flex10 --level meter 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "needs --config" "$T/err" || fail "capacity --level without --config: $(cat "$T/err")"
# A supplies' curve whose efficiency rises faster than the load: meter
# power falls from x's first point (3200 W DC, load 0.32, 0.4) to its second
# (6400 W DC, load 0.64, 0.98): 3200 / 0.4 = 8000 > 6400 / 0.98 = 6530.6.
printf 'node_other_w = 800\npsu_rated_w = 10000\npsu_curve = 0.32:0.4, 0.64:0.98\n' >"$T/steep.conf"
"$PFI" grid capacity --curves "$T/x.csv" --tiers "$T/t10.csv" --tier flex10 --config "$T/steep.conf" --level meter 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "job x: point 2 (GPU power 5600 W) is 6530.6.* W at the meter, not above the point below it" "$T/err" ||
  fail "a falling meter curve: $(cat "$T/err")"

# pfi grid meter --bmc: the BMC's DCMI reading through a fake ipmi-dcmi
# (freeipmi's documented output), shown beside the chain; a tool that
# fails is exit 1, an unknown one exit 2.
mkdir -p "$T/bmcbin"
printf '#!/bin/sh\n[ "$*" = --get-system-power-statistics ] || exit 3\necho "Current Power                        : 2345 Watts"\necho "Power Measurement                    : Active"\n' >"$T/bmcbin/ipmi-dcmi"
chmod +x "$T/bmcbin/ipmi-dcmi"
j=$(PATH="$T/bmcbin:$PATH" "$PFI" grid meter --powercap "$T/none" --bmc ipmi-dcmi --format json) || fail "grid meter --bmc"
echo "$j" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["bmc_node_w"] == 2345 and d["bmc_tool"] == "ipmi-dcmi", d' ||
  fail "grid meter --bmc: $j"
PATH="$T/bmcbin:$PATH" "$PFI" grid meter --powercap "$T/none" --bmc ipmi-dcmi | grep -q "BMC (DCMI through ipmi-dcmi): the whole node 2345.0 W" ||
  fail "grid meter --bmc table"
printf '#!/bin/sh\necho "ipmi_cmd_dcmi_get_power_reading: bad completion code" >&2\nexit 1\n' >"$T/bmcbin/ipmitool"
chmod +x "$T/bmcbin/ipmitool"
PATH="$T/bmcbin:$PATH" "$PFI" grid meter --bmc ipmitool >/dev/null 2>"$T/err"
[ $? = 1 ] && grep -q "ipmitool dcmi power reading: exit status 1 ('ipmi_cmd_dcmi_get_power_reading: bad completion code')" "$T/err" ||
  fail "grid meter --bmc with a failing tool: $(cat "$T/err")"
"$PFI" grid meter --bmc racadm >/dev/null 2>&1
[ $? = 2 ] || fail "grid meter --bmc racadm: exit status"

# An event report from a log: 2 samples before the event at 1000 W (the
# baseline), 4 at a 750 W target, realized 740, 760, 745, 750 W, one sample a
# minute. Meter = 1.3 x GPU power (one node, no other power, PUE 1.3):
# energy shed = (4 x 1300 - 1.3 x 2995) x 60 / 3600 = 21.775 Wh. 760 W is
# over 750 x 1.01: 60 s above target, worst +10 W. Job a 100 -> 95 (5 %,
# flex10: fine); b 300 -> 210 (30 %, flex25: a violation); tenant t1 holds
# both: 1 - 305/400 = 23.75 %.
mkdir -p "$T/ev"
printf 't_s,target_w,power_w\n0,0,1000\n60,0,1000\n120,750,740\n180,750,760\n240,750,745\n300,750,750\n' >"$T/ev/series.csv"
{
  echo "t_s,job,tokens_per_s"
  for t in 0 60; do echo "$t,a,100"; echo "$t,b,300"; done
  for t in 120 180 240 300; do echo "$t,a,95"; echo "$t,b,210"; done
} >"$T/ev/jobs.csv"
printf 'job,tier,tenant\na,flex10,t1\nb,flex25,t1\n' >"$T/ev/contract.csv"
printf 'tier,max_loss\nflex10,0.10\nflex25,0.25\n' >"$T/ev/tiers.csv"
printf 'pue = 1.3\n' >"$T/ev/m.conf"
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --config "$T/ev/m.conf" --out "$T/ev/out" >"$T/ev/s.json" 2>"$T/err" || fail "event-report: $(cat "$T/err")"
python3 - "$T/ev/s.json" <<'EOF2' || fail "event-report summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert abs(s["energy_shed_wh"] - 21.775) < 1e-9, s
assert abs(s["requested_cut_w"] - 250) < 1e-9 and abs(s["realized_cut_w"] - 251.25) < 1e-9, s
assert s["above_target_s"] == 60 and abs(s["worst_over_w"] - 10) < 1e-9, s
assert s["violations"] == 1 and s["event_s"] == 240, s
assert abs(s["tenants"][0]["loss"] - 0.2375) < 1e-12, s
EOF2
grep -q '^b,t1,flex25,300,210,0.300000,0.250000,1,"lost 30.0 % of throughput, tier flex25 allows 25.0 %"$' "$T/ev/out/compliance.csv" ||
  fail "compliance.csv: $(cat "$T/ev/out/compliance.csv")"
grep -q "<svg" "$T/ev/out/event.html" || fail "event.html has no figure"
# --phoenix: Emerald's measured delivery of the Phoenix event's 25 % cut
# beside ours on the same terms. Ours by hand: baseline 1000 W, event
# 740, 760, 745, 750 W: mean cut 1 - 748.75 / 1000 = 0.25125; above 750 W:
# one sample of four. Emerald's by awk on the published file (baseline the
# median of the first 15 minutes, 16:10-19:30 on 2025-05-04), as in
# tests/cli/test_control.sh.
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --phoenix --emulated --out "$T/ev/o3" >"$T/ev/s3.json" 2>"$T/err" || fail "event-report --phoenix: $(cat "$T/err")"
base=$(awk -F, 'NR > 1 && NR <= 16 {print $2}' data/real/SRP_total_power.csv | sort -g | awk '{v[NR] = $1} END {print v[8]}')
read -r emcut emabove emn < <(awk -F, -v b="$base" 'NR > 1 && $1 >= "2025-05-04 16:10" &&
  $1 < "2025-05-04 19:30" {n++; s += 1 - $2 / b; if ($2 > 0.75 * b) a++}
  END {printf "%.9f %d %d\n", s / n, a, n}' data/real/SRP_total_power.csv)
python3 - "$T/ev/s3.json" "$emcut" "$emabove" "$emn" "$base" <<'EOF2' || fail "event-report --phoenix summary: $(cat "$T/ev/s3.json")"
import json, sys
s = json.load(open(sys.argv[1]))["same_target"]
cut, above, n, base = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
assert s["asked_cut"] == 0.25, s
e, p = s["emerald"], s["pfi"]
assert e["measured"] is True and "SRP_total_power.csv" in e["source"], s
assert abs(e["mean_cut"] - cut) < 1e-6 and e["minutes_above_target"] == above and e["minutes"] == n, s
assert abs(e["baseline_w"] - base) < 1e-6, s
assert p["kind"] == "emulated" and p["samples"] == 4, s
assert abs(p["mean_cut"] - 0.25125) < 1e-12 and abs(p["share_above_target"] - 0.25) < 1e-12, s
EOF2
grep -q "Delivered cut on the same target" "$T/ev/o3/event.html" && grep -q "measured" "$T/ev/o3/event.html" &&
  grep -q "Emerald AI, Phoenix (measured)" "$T/ev/o3/event.html" && grep -q "pfi (emulated)" "$T/ev/o3/event.html" ||
  fail "event.html: no measured-beside-emulated section"
grep -q "Delivered cut" "$T/ev/out/event.html" && fail "the reference section without --phoenix"
printf 'job,tier\na,flex10\n' >"$T/ev/c2.csv"
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/c2.csv" --tiers "$T/ev/tiers.csv" --out "$T/ev/o2" 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "job b is in the log but not in the contract" "$T/err" || fail "job missing from the contract: $(cat "$T/err")"

# Capacity over time: the bridge's capacity columns (pfid's quote at <= 10 %
# loss on each sync). No quote at t=0 nor at the event's first sample
# (t=120): the quote at the start is t=60's, 240 W in [220, 260] for events
# up to 14400 s (4 h); during the event 10 W in [5, 15] for any length.
mkdir -p "$T/ev4"
cp "$T/ev/jobs.csv" "$T/ev4/"
{
  echo "t_s,target_w,power_w,shed_loss,shed_w,shed_lo_w,shed_hi_w,shed_duration_s"
  echo "0,0,1000,0.1,,,,"
  echo "60,0,1000,0.1,240,220,260,14400"
  echo "120,750,740,0.1,,,,"
  for r in 180,750,760 240,750,745 300,750,750; do echo "$r,0.1,10,5,15,"; done
} >"$T/ev4/series.csv"
"$PFI" grid event-report --log "$T/ev4" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --out "$T/ev4/out" >"$T/ev4/s.json" 2>"$T/err" || fail "event-report with capacity: $(cat "$T/err")"
python3 - "$T/ev4/s.json" <<'EOF2' || fail "capacity_at_start: $(cat "$T/ev4/s.json")"
import json, sys
c = json.load(open(sys.argv[1]))["capacity_at_start"]
assert c == {"max_loss": 0.1, "shed_w": 240, "shed_lo_w": 220, "shed_hi_w": 260,
             "duration_s": 14400}, c
EOF2
grep -q "Flexible capacity over time" "$T/ev4/out/event.html" &&
  grep -q "240.0 W (95 % interval 220.0 to 260.0 W, for an event up to 4 h) when the event began; the fleet&#39;s realized cut was 251.[23] W" "$T/ev4/out/event.html" &&
  grep -q "shed at &lt;= 10 % loss" "$T/ev4/out/event.html" || fail "event.html: no capacity section"
grep -q "Flexible capacity over time" "$T/ev/out/event.html" && fail "a capacity section without capacity columns"
sed -i 's/^180,750,760,0.1,10,5,15,$/180,750,760,0.1,20,5,15,/' "$T/ev4/series.csv"
"$PFI" grid event-report --log "$T/ev4" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --out "$T/ev4/out" 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "series.csv:5:1: shed_w: outside \[shed_lo_w, shed_hi_w\]" "$T/err" ||
  fail "a quote outside its interval: $(cat "$T/err")"
sed -i 's/^180,750,760,0.1,20,5,15,$/180,750,760,0.2,10,5,15,/' "$T/ev4/series.csv"
"$PFI" grid event-report --log "$T/ev4" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --out "$T/ev4/out" 2>"$T/err" >/dev/null
[ $? = 2 ] && grep -q "series.csv:5:1: shed_loss: differs from the first row's" "$T/err" ||
  fail "two losses in one log: $(cat "$T/err")"

# Token expiry for real: a VTN whose tokens live 2 s. The VEN renews a
# token 30 s before it expires, so with such tokens it takes a new one
# before every API request and the VTN never refuses one: 2 API requests
# (GET /programs, GET /events), each with the token issued just before it,
# 2 token requests, no 401.
python3 tests/mock-vtn/mock_vtn.py --port-file "$T/port2" --lifetime 60 --token-ttl 2 &
VTN2_PID=$!
trap 'kill $VTN_PID $VTN2_PID 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -s "$T/port2" ] && break; sleep 0.1; done
BASE2="http://127.0.0.1:$(cat "$T/port2")/openadr3"
# The program is made with a token of 2 s too: on a loaded machine the POST
# can come after it expired (401; a python3 start to read the token took
# 2.7 s at a load average of 15), so the token is read by sed and, if the
# POST is refused, a fresh one taken, at most 10 times (not a check).
for _ in $(seq 10); do
  BL2=$("${CURL[@]}" -d grant_type=client_credentials -d client_id=bl1 \
    -d client_secret=bl-secret "$BASE2/auth/token" |
    sed -n 's/.*"access_token": *"\([^"]*\)".*/\1/p')
  code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BL2" \
    -H 'Content-Type: application/json' -d '{"programName":"site-flex"}' "$BASE2/programs")
  [ "$code" = 201 ] && break
done
[ "$code" = 201 ] || fail "program on the 2 s VTN: HTTP $code"
"${CURL[@]}" "$BASE2/../_mock/log" >"$T/log0.json"
"$PFI" grid timeline --vtn "$BASE2" --client-id ven1 --client-secret-file "$T/secret" \
  --program site-flex --baseline 1000000 --format csv >/dev/null 2>"$T/err" ||
  fail "timeline with 2 s tokens: $(cat "$T/err")"
"${CURL[@]}" "$BASE2/../_mock/log" >"$T/log2.json"
python3 - "$T/log0.json" "$T/log2.json" <<'EOF' || fail "token renewal before expiry"
import json, sys
n0 = len(json.load(open(sys.argv[1])))
# The VEN's requests: after the first read of the log, before the second.
log = json.load(open(sys.argv[2]))[n0:-1]
tok = [r for r in log if r["path"].endswith("/auth/token")]
api = [r for r in log if "/auth/" not in r["path"]]
assert len(tok) == 2 and len(api) == 2, log
assert all(r["status"] == 200 for r in tok + api), log
last = None
for r in log:
    if r.get("issued"):
        last = r["issued"]
    elif "/auth/" not in r["path"]:
        assert r["bearer"] == last, (r, last)
EOF

# The bridge's webhook options: bad usage is exit 2 naming the option, before
# anything is started (tests/fleet/test_fleet_grid_webhook.sh runs it).
printf 'tok\n' >"$T/ptok"
chmod 600 "$T/ptok"
BR=(grid bridge --pfid http://127.0.0.1:9 --pfid-token-file "$T/ptok")
bad_bridge() { # bad_bridge MESSAGE ARGS...: exit 2 with MESSAGE on stderr
  local m=$1
  shift
  "$PFI" "${BR[@]}" "$@" >/dev/null 2>"$T/err"
  local rc=$?
  [ "$rc" = 2 ] && grep -qF -- "$m" "$T/err" || fail "bridge $*: exit $rc, $(cat "$T/err") (expected '$m')"
}
bad_bridge "--listen needs --vtn" --listen 8471
bad_bridge "--listen and --once" "${VEN[@]:0:8}" --listen 8471 --once
bad_bridge "--listen: expected HOST:PORT or PORT, got 'localhost'" "${VEN[@]:0:8}" --listen localhost
bad_bridge "--listen ':8471' is on every address: give --callback URL" "${VEN[@]:0:8}" --listen :8471
bad_bridge "--listen '0.0.0.0:8471' is on every address" "${VEN[@]:0:8}" --listen 0.0.0.0:8471
bad_bridge "--callback: 'ftp://x/' is not an http(s) URL" "${VEN[@]:0:8}" --listen 8471 --callback ftp://x/
bad_bridge "--callback goes with --listen" "${VEN[@]:0:8}" --callback http://127.0.0.1:8471/notify
bad_bridge "expected an IP address" "${VEN[@]:0:8}" --listen example.org:8471
bad_bridge "bad port" "${VEN[@]:0:8}" --listen 127.0.0.1:70000
bad_bridge "at most a day for --interval" --interval 2d
"$PFI" grid meter --interval 601 >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q "meter: --interval: at most 600 s, got 601 s" "$T/err" || fail "meter --interval 601: exit $rc, $(cat "$T/err")"

# The bridge's reports are at the VTN's level (--level meter here), not
# pfid's GPU power. A fake pfid: two nodes drawing 3000 and 1000 W of GPU
# power (4000 W), no node power measured; its live capacity 1000 W of GPU
# power at <= 10 % loss. Meter config: node_other_w 500, efficiency 1,
# PUE 2. By hand: DEMAND = 2 x (4000 + 2 x 500) = 10000 W; the shed at the
# meter 10000 - 2 x (3000 + 1000) = 2000 W (GPU power would say 4000 and
# 1000 W).
cat >"$T/fakepfid.py" <<'PY'
import http.server, json, sys
ANS = {"/v1/nodes": [{"node": "n1", "stale": False, "gpus": [{"power_w": 3000}]},
                     {"node": "n2", "stale": False, "gpus": [{"power_w": 1000}]}],
       "/v1/status": {"power_w": 4000, "target_w": 4000},
       "/v1/events": [], "/v1/jobs": [],
       "/v1/capacity": {"quotes": [{"max_loss": 0.1, "shed_w": 1000}], "duration_s": None}}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def do_GET(self): self.answer(200, ANS.get(self.path, {}))
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0))); self.answer(201, {})
    def do_DELETE(self): self.answer(200, {})
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_port))
s.timeout = 1
import time
end = time.time() + 60
while time.time() < end: s.handle_request()
PY
python3 "$T/fakepfid.py" "$T/pfidport" &
FAKE_PID=$!
for _ in $(seq 100); do [ -s "$T/pfidport" ] && break; sleep 0.1; done
MPID=$(post programs '{"programName":"meter-report"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
MEV=$(post events '{"programID":"'"$MPID"'","eventName":"M",'"$KW"',"intervalPeriod":{"start":"0001-01-01","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[20]}]}]}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
printf 'node_other_w = 500\npue = 2\n' >"$T/m2.conf"
"$PFI" grid bridge --pfid "http://127.0.0.1:$(cat "$T/pfidport")" --pfid-token-file "$T/ptok" \
  --vtn "$BASE" --client-id ven1 --client-secret-file "$T/secret" --program meter-report \
  --config "$T/m2.conf" --level meter --interval 1 --report 1s >"$T/mbridge.log" 2>&1 &
MBR=$!
mreport() { "${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/reports" | python3 -c '
import json, sys
r = [x for x in json.load(sys.stdin) if x["eventID"] == sys.argv[1]]
sys.exit(0 if r else 1)' "$MEV"; }
for _ in $(seq 100); do mreport && break; sleep 0.2; done
kill $MBR 2>/dev/null
wait $MBR 2>/dev/null
kill $FAKE_PID 2>/dev/null
"${CURL[@]}" -H "Authorization: Bearer $BL" "$BASE/reports" | python3 -c '
import json, sys
r = [x for x in json.load(sys.stdin) if x["eventID"] == sys.argv[1]]
assert r, "no report"
vals = {p["type"]: p["values"][0] for p in r[0]["resources"][0]["intervals"][0]["payloads"]}
assert abs(vals["DEMAND"] - 10000) < 1e-6, vals
assert abs(vals["LOAD_SHED_DELTA_AVAILABLE"] - 2000) < 1e-6, vals
assert r[0]["reportName"] == "pfi-meter-power", r[0]
' "$MEV" || fail "bridge report at the meter level: $(cat "$T/mbridge.log")"

exit $((fails > 0))
