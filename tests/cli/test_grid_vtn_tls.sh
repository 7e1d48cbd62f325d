#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The VEN verifies an https VTN (docs/security.md "TLS"): the mock VTN
# serves HTTPS with a certificate the test CA signed (openssl, made here).
# With --cacert of that CA the timeline holds the VTN's event (800 kW from
# 01:00 to 03:00, the limit as posted); without --cacert (the system's CAs
# do not know the test CA), with another CA, or against a self-signed VTN
# it is refused (exit 1) before the client secret is sent: the mock VTN
# sees no token request. --cacert with an http VTN is a usage error.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }
tls_certs "$T/tls"
C=$T/tls
python3 tests/mock-vtn/mock_vtn.py --port-file "$T/port" --lifetime 60 \
  --tls-cert "$C/server.pem" --tls-key "$C/server.key" &
P1=$!
python3 tests/mock-vtn/mock_vtn.py --port-file "$T/port2" --lifetime 60 \
  --tls-cert "$C/self.pem" --tls-key "$C/self.key" &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -s "$T/port" ] && [ -s "$T/port2" ] && break; sleep 0.1; done
[ -s "$T/port" ] && [ -s "$T/port2" ] || { echo "mock VTN did not start"; exit 1; }
BASE="https://127.0.0.1:$(cat "$T/port")/openadr3"
SELF="https://127.0.0.1:$(cat "$T/port2")/openadr3"
CURL=(curl -sS --max-time 5 --cacert "$C/ca.pem")
BL=$("${CURL[@]}" -d grant_type=client_credentials -d client_id=bl1 \
  -d client_secret=bl-secret "$BASE/auth/token" | jq -r .access_token)
post() { "${CURL[@]}" -H "Authorization: Bearer $BL" -H 'Content-Type: application/json' -d "$2" "$BASE/$1"; }
PID=$(post programs '{"programName":"site-flex"}' | jq -r .id)
[ -n "$PID" ] && [ "$PID" != null ] || { echo "mock VTN over HTTPS: no program"; exit 1; }
post events '{"programID":"'"$PID"'","eventName":"A","priority":1,"payloadDescriptors":[{"objectType":"EVENT_PAYLOAD_DESCRIPTOR","payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],"intervalPeriod":{"start":"2030-01-01T01:00:00Z","duration":"PT2H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[800]}]}]}' >/dev/null
printf 'ven-secret\n' >"$T/secret"
chmod 600 "$T/secret"
VEN=(--client-id ven1 --client-secret-file "$T/secret" --program site-flex --baseline 1000000
  --now 2030-01-01T00:00:00Z --format csv)
token_requests() { "${CURL[@]}" "$1/../_mock/log" | jq '[.[] | select(.path | endswith("/auth/token"))] | length'; }

"$PFI" grid timeline --vtn "$BASE" --cacert "$C/ca.pem" "${VEN[@]}" >"$T/out" 2>"$T/err" ||
  fail "timeline over HTTPS with --cacert: exit $?, $(cat "$T/err")"
grep -qx '2030-01-01T01:00:00Z,2030-01-01T03:00:00Z,800000.000000,meter,openadr,[0-9]*,IMPORT_CAPACITY_LIMIT,0.000000' "$T/out" ||
  fail "timeline over HTTPS: $(cat "$T/out")"
n0=$(token_requests "$BASE")

refused() { # refused WHAT VTN [options...]
  local what=$1 vtn=$2 rc
  shift 2
  "$PFI" grid timeline --vtn "$vtn" "$@" "${VEN[@]}" >"$T/out" 2>"$T/err"
  rc=$?
  [ "$rc" = 1 ] && grep -qi "certificate\|SSL" "$T/err" || fail "$what: exit $rc, $(cat "$T/err")"
  [ -s "$T/out" ] && fail "$what: printed a timeline"
}
refused "no --cacert" "$BASE"
refused "another CA" "$BASE" --cacert "$C/other-ca.pem"
[ "$(token_requests "$BASE")" = "$n0" ] || fail "a refused VTN got a token request"
refused "a self-signed VTN" "$SELF" --cacert "$C/ca.pem"
n_self=$(curl -sS --max-time 5 --cacert "$C/self.pem" "$SELF/../_mock/log" | jq '[.[] | select(.path | endswith("/auth/token"))] | length')
[ "$n_self" = 0 ] || fail "the self-signed VTN got $n_self token request(s)"

"$PFI" grid timeline --vtn "http://127.0.0.1:1/openadr3" --cacert "$C/ca.pem" "${VEN[@]}" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q "goes with an https VTN URL" "$T/err" || fail "--cacert with an http VTN: exit $rc, $(cat "$T/err")"
"$PFI" grid timeline --vtn "$BASE" --cacert "$T/none.pem" "${VEN[@]}" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" != 0 ] && grep -q "none.pem" "$T/err" || fail "a missing --cacert: exit $rc, $(cat "$T/err")"

[ "$fails" = 0 ] || exit 1
echo "grid vtn tls: ok"
