#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi ctl`'s output formats against a stand-in for pfid's API that answers
# fixed JSON: a table by default (an object's fields as "field value" lines,
# each nested object and list of objects a section of its own, units from
# the field names' suffixes, power at 3 significant digits, "-" for null),
# --format json the answer byte for byte, --format csv a list's rows with
# their field names, or an object's fields as field,value rows (a.b for
# nested ones). The expected text is written out by hand.
. "$(dirname "$0")/lib.sh"

cat >"$T/api.py" <<'PY'
import http.server, json, sys
ANS = {
    "/v1/status": {"leader": True, "nodes": 2, "stale": [], "state": "event",
                   "event": {"id": "ev1", "target_w": 5000.0, "level": "gpu"},
                   "power": {"total_w": 19572.2499511953, "cap_w": 22400}},
    "/v1/jobs": [{"job": "llama, \"x\"", "gpus": 8, "cap_w": 700.0,
                  "power_w": 312.46, "tier": None},
                 {"job": "b", "gpus": 4, "cap_w": 650, "power_w": 299.1,
                  "tier": "flex25"}],
    "/v1/records?since=0": [],
    "/v1/records?table=audit&limit=1000": [
        {"id": 41, "t": 1796670131.25, "pfid": "a", "who": "bridge",
         "role": "operate", "peer": "10.0.4.7:51288", "method": "POST",
         "path": "/v1/events", "body": "{\"v\":1,\"id\":\"ev7\"}",
         "status": 201},
        {"id": 42, "t": 1796672403.999, "pfid": "a", "who": "grafana",
         "role": "read", "peer": "127.0.0.1:40312 uid 1000",
         "method": "DELETE", "path": "/v1/events/ev7", "body": "",
         "status": 403, "error": "token 'grafana' has the role read"}],
    "/v1/records?table=audit&limit=2&who=bridge": [{"id": 41, "t": "x"}],
}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = json.dumps(ANS[self.path], separators=(",", ":")).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$T/api.py" >"$T/port" &
api=$!
trap 'kill $api 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
U="http://127.0.0.1:$(cat "$T/port")"

# Default: tables. 19572.2499511953 W at 3 significant digits is 19572,
# 312.46 W is 312, 700.0 is 700; a null tier is "-".
"$PFI" ctl --url "$U" status >"$T/st" || fail "ctl status"
cmp -s "$T/st" - <<'TXT' || fail "ctl status table: $(cat "$T/st")"
leader  true
nodes   2
stale   []
state   event

event
id          ev1
target [W]  5000
level       gpu

power
total [W]  19572
cap [W]    22400
TXT
"$PFI" ctl --url "$U" jobs >"$T/jobs" || fail "ctl jobs"
cmp -s "$T/jobs" - <<'TXT' || fail "ctl jobs table: $(cat "$T/jobs")"
job         gpus  cap [W]  power [W]  tier
llama, "x"     8      700        312  -
b              4      650        299  flex25
TXT
# Narrower than the table: panels that repeat the first column.
COLUMNS=30 "$PFI" ctl --url "$U" jobs >"$T/jobs30" || fail "ctl jobs at 30"
cmp -s "$T/jobs30" - <<'TXT' || fail "ctl jobs at 30 columns: $(cat "$T/jobs30")"
job         gpus  cap [W]
llama, "x"     8      700
b              4      650

job         power [W]  tier
llama, "x"        312  -
b                 299  flex25
TXT
# --wide: the full table whatever $COLUMNS says.
COLUMNS=30 "$PFI" ctl --url "$U" --wide jobs | cmp -s - "$T/jobs" || fail "ctl --wide"
"$PFI" ctl --url "$U" records >"$T/rec" || fail "ctl records"
[ "$(cat "$T/rec")" = "(none)" ] || fail "ctl records, none: $(cat "$T/rec")"

# JSON: pfid's answer as it is.
"$PFI" ctl --url "$U" --format json status >"$T/stj" || fail "ctl --format json"
printf '%s\n' '{"leader":true,"nodes":2,"stale":[],"state":"event","event":{"id":"ev1","target_w":5000.0,"level":"gpu"},"power":{"total_w":19572.2499511953,"cap_w":22400}}' |
  cmp -s - "$T/stj" || fail "ctl json: $(cat "$T/stj")"

# CSV: the API's field names, numbers as JSON gave them, the comma and
# quotes of a name quoted.
"$PFI" ctl --url "$U" --format csv jobs >"$T/jc" || fail "ctl csv jobs"
cmp -s "$T/jc" - <<'TXT' || fail "ctl csv jobs: $(cat "$T/jc")"
job,gpus,cap_w,power_w,tier
"llama, ""x""",8,700,312.46,-
b,4,650,299.1,flex25
TXT
"$PFI" ctl --url "$U" --format csv status >"$T/sc" || fail "ctl csv status"
cmp -s "$T/sc" - <<'TXT' || fail "ctl csv status: $(cat "$T/sc")"
field,value
leader,true
nodes,2
state,event
event.id,ev1
event.target_w,5000
event.level,gpu
power.total_w,19572.2499511953
power.cap_w,22400
TXT

# pfi ctl audit (its own table): the time of "t" in UTC, whole seconds
# (1796670131.25 and 1796672403.999 by GNU date: 19:02:11 and 19:40:03),
# no error "-", an empty body blank (the row still ends with the two
# spaces before that column); CSV quotes the body's quotes and
# commas; a row pfid answered with a field of the wrong type is exit 1
# naming it.
(umask 077; echo 0123456789abcdef0123 >"$T/tok")
"$PFI" ctl --url "$U" --token-file "$T/tok" --wide audit >"$T/au" || fail "ctl audit"
cmp -s "$T/au" - <<'TXT' || fail "ctl audit table: $(cat "$T/au")"
id  time                  pfid  who      role     peer                      method  path            status  error                              body
41  2026-12-07T19:02:11Z  a     bridge   operate  10.0.4.7:51288            POST    /v1/events         201  -                                  {"v":1,"id":"ev7"}
42  2026-12-07T19:40:03Z  a     grafana  read     127.0.0.1:40312 uid 1000  DELETE  /v1/events/ev7     403  token 'grafana' has the role read  
TXT
"$PFI" ctl --url "$U" --token-file "$T/tok" audit --format csv >"$T/auc" || fail "ctl audit csv"
cmp -s "$T/auc" - <<'TXT' || fail "ctl audit csv: $(cat "$T/auc")"
id,time,pfid,who,role,peer,method,path,status,error,body
41,2026-12-07T19:02:11Z,a,bridge,operate,10.0.4.7:51288,POST,/v1/events,201,-,"{""v"":1,""id"":""ev7""}"
42,2026-12-07T19:40:03Z,a,grafana,read,127.0.0.1:40312 uid 1000,DELETE,/v1/events/ev7,403,token 'grafana' has the role read,
TXT
"$PFI" ctl --url "$U" --token-file "$T/tok" audit --limit 2 --who bridge >"$T/aub" 2>"$T/e"
[ $? -eq 1 ] && grep -qF 'row 1: field "t": missing or of the wrong type' "$T/e" || fail "ctl audit, a bad row: $(cat "$T/e")"

# A format ctl does not have: usage, exit status 2, nothing asked.
"$PFI" ctl --url "$U" --format xml status >/dev/null 2>"$T/e"
[ $? -eq 2 ] && grep -q "\-\-format: 'xml': expected table, csv or json" "$T/e" || fail "--format xml: $(cat "$T/e")"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "test_ctl_format: all checks passed"
