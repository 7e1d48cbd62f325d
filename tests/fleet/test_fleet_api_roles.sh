#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid --tokens: named API tokens with roles (docs/security.md "API
# tokens"). A read token (a dashboard's) reads but cannot submit an event
# or set a tier (403); an operate token can; without a token even reads
# are 401; only admin reads the audit trail. Every mutation by a known
# token is recorded with who, role, from where, what and its answer, on
# /v1/records?table=audit and in the records file (fleet_audit), the
# refused ones too; a request with no known token is not. A tokens file
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
