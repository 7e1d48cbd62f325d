#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid --tokens: named API tokens with roles (docs/security.md "API
# tokens"). A read token (a dashboard's) reads but cannot submit an event
# or set a tier (403); an operate token can; without a token even reads
# are 401; only admin reads the audit trail. Every mutation by a known
# token is recorded with who, role, from where, what and its answer, on
# /v1/records?table=audit and in the records file (fleet_audit), the
# refused ones too; a request with no known token is not. `pfi ctl audit`
# prints them, filtered by --who, --limit and --since. A tokens file
# with a bad line, or one others may read, is refused at start, exit 2.
. "$(dirname "$0")/lib.sh"
setup_nats

rnd() { head -c 24 /dev/urandom | base64 | tr -d '/+='; }
VIEW=$(rnd) OPS=$(rnd) BOSS=$(rnd)
(umask 077; printf '# name role token\n\ngrafana read %s\nbridge  operate\t%s\noncall admin %s\n' \
  "$VIEW" "$OPS" "$BOSS" >"$T/tokens")
pfid_start a --tokens "$T/tokens"

# apit TOKEN METHOD PATH [BODY]: as api, with that token ("" none).
apit() {
  local tok=$1 m=$2 p=$3
  shift 3
  curl -s -m 5 -o "$T/body" -w '%{http_code}' -X "$m" \
    ${tok:+-H "Authorization: Bearer $tok"} ${1:+--data-binary "$1"} \
    "http://127.0.0.1:${API[a]}$p" >"$T/code" || echo 000 >"$T/code"
  cat "$T/body" 2>/dev/null
}
up() { apit "$VIEW" GET /v1/status | grep -q '"id":"a"'; }
until_true 30 up || fail "pfid a: no status with the read token"
expect() { # expect CODE TOKEN METHOD PATH [BODY]
  local want=$1
  shift
  apit "$@" >/dev/null
  [ "$(cat "$T/code")" = "$want" ] ||
    fail "$2 $3 with token ${1:0:4}...: HTTP $(cat "$T/code"), expected $want: $(cat "$T/body")"
}
t0=$(date +%s)
expect 401 "" GET /v1/status
expect 401 "not-a-token-of-pfid" GET /v1/nodes
expect 401 "" GET /metrics
expect 200 "$VIEW" GET /metrics
expect 200 "$VIEW" GET /v1/events
ev=$(event_json ev1 3600 7200 1000)
expect 401 "" POST /v1/events "$ev"
expect 403 "$VIEW" POST /v1/events "$ev"
grep -q "token 'grafana' has the role read; this needs operate" "$T/body" ||
  fail "403's reason: $(cat "$T/body")"
expect 201 "$OPS" POST /v1/events "$ev"
expect 403 "$VIEW" DELETE /v1/events/ev1
expect 403 "$VIEW" PUT /v1/tiers/job7 '{"tier":"flex10"}'
expect 200 "$OPS" PUT /v1/tiers/job7 '{"tier":"flex10"}'
expect 200 "$BOSS" DELETE /v1/events/ev1
# --token-file's token is one more, named token-file, role admin.
expect 200 "$(cat "$T/token")" DELETE /v1/tiers/job7
expect 403 "$OPS" GET '/v1/records?table=audit'
expect 403 "$VIEW" GET '/v1/records?table=audit'
expect 200 "$VIEW" GET '/v1/records?table=assignments'
# pfi ctl sends its token with reads too: with the read token, status;
# without one, 401 (exit 1).
(umask 077; echo "$VIEW" >"$T/view.token")
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/view.token" --format json status >"$T/ctl.out" 2>&1 ||
  fail "pfi ctl status with the read token: $(cat "$T/ctl.out")"
grep -q '"id":"a"' "$T/ctl.out" || fail "pfi ctl status: $(cat "$T/ctl.out")"
env -u PFI_TOKEN_FILE "$PFI" ctl --url "http://127.0.0.1:${API[a]}" status >"$T/ctl.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'HTTP 401' "$T/ctl.out" || fail "pfi ctl status without a token: exit $rc, $(cat "$T/ctl.out")"
t1=$(date +%s)

# The trail: the seven mutations by known tokens, in order, nothing of the
# two without one.
want='grafana read POST /v1/events 403
bridge operate POST /v1/events 201
grafana read DELETE /v1/events/ev1 403
grafana read PUT /v1/tiers/job7 403
bridge operate PUT /v1/tiers/job7 200
oncall admin DELETE /v1/events/ev1 200
token-file admin DELETE /v1/tiers/job7 200'
apit "$BOSS" GET '/v1/records?table=audit' >"$T/audit.json"
[ "$(cat "$T/code")" = 200 ] || fail "audit with the admin token: HTTP $(cat "$T/code")"
got=$(jq -r '.[] | "\(.who) \(.role) \(.method) \(.path) \(.status)"' "$T/audit.json")
[ "$got" = "$want" ] || fail "audit on the API:
$got
expected
$want"
# From where: this host's loopback address, a port and this user; when:
# between the first and the last request; what: the body as sent.
jq -e --argjson a "$t0" --argjson b "$((t1 + 1))" --arg uid "$(id -u)" \
  'all(.[]; (.peer | test("^127\\.0\\.0\\.1:[0-9]+ uid " + $uid + "$")) and .t >= $a and .t <= $b and .pfid == "a")' \
  "$T/audit.json" >/dev/null || fail "audit's peer or time: $(cat "$T/audit.json")"
[ "$(jq -r '.[1].body' "$T/audit.json")" = "$ev" ] || fail "audit's body: $(jq -r '.[1].body' "$T/audit.json")"
[ "$(jq -r '.[0].error' "$T/audit.json")" = "token 'grafana' has the role read; this needs operate" ] ||
  fail "audit's error: $(jq -r '.[0].error' "$T/audit.json")"
got=$(sql "$T/records.db" "SELECT who || ' ' || role || ' ' || method || ' ' || path || ' ' || status FROM fleet_audit ORDER BY id")
[ "$got" = "$want" ] || fail "audit in the records file:
$got"

# pfi ctl audit, with the admin token: the same rows, each with who, role,
# from where, what and when (the time of pfid's "t", UTC, as jq writes
# it), the body as sent; filtered by token name, the newest N, and time.
(umask 077; echo "$BOSS" >"$T/boss.token")
U="http://127.0.0.1:${API[a]}"
ctl_audit() { "$PFI" ctl --url "$U" --token-file "$T/boss.token" audit "$@"; }
col() { # col FILE N: the Nth column of a CSV file's rows (parsed as CSV)
  python3 -c 'import csv, sys
for r in list(csv.reader(open(sys.argv[1])))[1:]: print(r[int(sys.argv[2]) - 1])' "$1" "$2"
}
wmrs() { # wmrs FILE: "who role method path status" of each row
  python3 -c 'import csv, sys
for r in list(csv.reader(open(sys.argv[1])))[1:]: print(*(r[i] for i in (3, 4, 6, 7, 8)))' "$1"
}
ctl_audit --format csv >"$T/audit.csv" 2>"$T/ctl.err" || fail "pfi ctl audit: exit $?, $(cat "$T/ctl.err")"
[ "$(head -n 1 "$T/audit.csv")" = "id,time,pfid,who,role,peer,method,path,status,error,body" ] ||
  fail "pfi ctl audit's header: $(head -n 1 "$T/audit.csv")"
[ "$(wmrs "$T/audit.csv")" = "$want" ] || fail "pfi ctl audit:
$(wmrs "$T/audit.csv")
expected
$want"
[ "$(col "$T/audit.csv" 1)" = "$(jq -r '.[].id' "$T/audit.json")" ] || fail "pfi ctl audit's ids: $(col "$T/audit.csv" 1)"
[ "$(col "$T/audit.csv" 2)" = "$(jq -r '.[] | .t | floor | todate' "$T/audit.json")" ] ||
  fail "pfi ctl audit's times: $(col "$T/audit.csv" 2), pfid's: $(jq -r '.[].t' "$T/audit.json")"
[ "$(col "$T/audit.csv" 6 | grep -cE "^127\.0\.0\.1:[0-9]+ uid $(id -u)$")" = 7 ] ||
  fail "pfi ctl audit's peers: $(col "$T/audit.csv" 6)"
[ "$(col "$T/audit.csv" 11 | sed -n 2p)" = "$ev" ] || fail "pfi ctl audit's body: $(col "$T/audit.csv" 11 | sed -n 2p)"
[ "$(col "$T/audit.csv" 10 | sed -n 1p)" = "token 'grafana' has the role read; this needs operate" ] ||
  fail "pfi ctl audit's error: $(col "$T/audit.csv" 10 | sed -n 1p)"
ctl_audit --who bridge --format csv >"$T/a.csv" || fail "pfi ctl audit --who bridge: exit $?"
[ "$(wmrs "$T/a.csv")" = "$(grep '^bridge ' <<<"$want")" ] || fail "--who bridge: $(wmrs "$T/a.csv")"
ctl_audit --limit 2 --format csv >"$T/a.csv" || fail "pfi ctl audit --limit 2: exit $?"
[ "$(wmrs "$T/a.csv")" = "$(tail -n 2 <<<"$want")" ] || fail "--limit 2: $(wmrs "$T/a.csv")"
ctl_audit --who grafana --limit 1 --format csv >"$T/a.csv" || fail "pfi ctl audit --who grafana --limit 1: exit $?"
[ "$(wmrs "$T/a.csv")" = "grafana read PUT /v1/tiers/job7 403" ] || fail "--who grafana --limit 1: $(wmrs "$T/a.csv")"
# The terminal table: a row of oncall's cancel.
COLUMNS=300 ctl_audit --who oncall >"$T/a.txt" || fail "pfi ctl audit --who oncall: exit $?"
grep -qE "^ *[0-9]+ +20[0-9-]+T[0-9:]+Z +a +oncall +admin +127\.0\.0\.1:[0-9]+ uid [0-9]+ +DELETE +/v1/events/ev1 +200( |$)" "$T/a.txt" ||
  fail "pfi ctl audit's table: $(cat "$T/a.txt")"
[ "$(grep -c oncall "$T/a.txt")" = 1 ] || fail "pfi ctl audit --who oncall: $(cat "$T/a.txt")"
[ "$(ctl_audit --limit 3 --format json | jq length)" = 3 ] || fail "pfi ctl audit --format json --limit 3"
# --since: a mutation after a time a second past the seventh's; a
# date-time, @UNIX_TIME or a duration before now.
sleep 1.1
mid=$(date -u +%Y-%m-%dT%H:%M:%SZ) mids=$(date +%s.%N)
expect 201 "$OPS" POST /v1/events "$(event_json ev2 3600 7200 1000)"
for w in "$mid" "@$mids"; do
  ctl_audit --since "$w" --format csv >"$T/a.csv" || fail "pfi ctl audit --since $w: exit $?"
  [ "$(wmrs "$T/a.csv")" = "bridge operate POST /v1/events 201" ] || fail "--since $w: $(wmrs "$T/a.csv")"
done
ctl_audit --since 1h --who bridge --format csv >"$T/a.csv" || fail "pfi ctl audit --since 1h: exit $?"
[ "$(wmrs "$T/a.csv" | wc -l)" = 3 ] || fail "--since 1h --who bridge: $(wmrs "$T/a.csv")"
ctl_audit --since 2025-01-01 --format csv >"$T/a.csv" || fail "pfi ctl audit --since 2025-01-01: exit $?"
[ "$(wmrs "$T/a.csv" | wc -l)" = 8 ] || fail "--since 2025-01-01: $(wmrs "$T/a.csv")"
# Refused: a token without the admin role (403, exit 1), none (exit 2),
# bad filters (exit 2 naming the option; pfid's 400 naming the parameter).
"$PFI" ctl --url "$U" --token-file "$T/view.token" audit >"$T/ctl.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'HTTP 403' "$T/ctl.out" || fail "pfi ctl audit with the read token: exit $rc, $(cat "$T/ctl.out")"
env -u PFI_TOKEN_FILE "$PFI" ctl --url "$U" audit >"$T/ctl.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'needs --token-file' "$T/ctl.out" || fail "pfi ctl audit without a token: exit $rc, $(cat "$T/ctl.out")"
for a in "--since soon" "--since 2025-13-01" "--since @x" "--who a/b" "--limit 0" "--limit 10001"; do
  read -r -a av <<<"$a"
  ctl_audit "${av[@]}" >"$T/ctl.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -F -- "${av[0]}: " "$T/ctl.out" | grep -qF -- "'${av[1]}'" ||
    fail "pfi ctl audit $a: exit $rc, $(cat "$T/ctl.out")"
done
for q in since=-1 after=x who=a%2Fb limit=0 limit=10001; do
  apit "$BOSS" GET "/v1/records?table=audit&$q" >/dev/null
  [ "$(cat "$T/code")" = 400 ] && grep -q "\"${q%%=*}: expected" "$T/body" ||
    fail "audit with $q: HTTP $(cat "$T/code") $(cat "$T/body")"
done

# Tokens files pfid refuses, exit 2, naming the file, line and field.
bad() { # bad EXPECTED_GREP: pfid on $T/bad-tokens
  "$PFID" --id z --nats "$NATS_URL" --password-file "$T/pw.pfid" --api none \
    --records "$T/z.db" --tokens "$T/bad-tokens" >"$T/z.out" 2>&1
  local rc=$?
  [ "$rc" = 2 ] && grep -qF -- "$1" "$T/z.out" || fail "bad tokens file: exit $rc, $(cat "$T/z.out"), expected '$1'"
}
(umask 077; printf 'grafana read %s\nops superuser %s\n' "$VIEW" "$OPS" >"$T/bad-tokens")
bad "$T/bad-tokens:2:5: field ROLE: expected read, operate or admin"
(umask 077; printf 'grafana read %s\nother admin %s\n' "$VIEW" "$VIEW" >"$T/bad-tokens")
bad "$T/bad-tokens:2:13: field TOKEN: the same token as 'grafana'"
(umask 077; printf 'grafana read short\n' >"$T/bad-tokens")
bad "$T/bad-tokens:1:14: field TOKEN: expected 16..255 printable bytes"
(umask 077; printf 'grafana read %s extra\n' "$VIEW" >"$T/bad-tokens")
bad "$T/bad-tokens:1: expected NAME ROLE TOKEN (three fields)"
chmod 0640 "$T/tokens"
cp -p "$T/tokens" "$T/bad-tokens"
bad "$T/bad-tokens: readable or writable by others (mode 640)"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet api roles: ok"
