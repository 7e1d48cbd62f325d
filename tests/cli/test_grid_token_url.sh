#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The VEN sends its client secret only to a token URL on the VTN's own
# origin, or to one given by --token-url (docs/security.md, docs/grid.md):
# a mock VTN whose /auth/server names a token URL on another server (a
# second mock on another port) is refused, and that server never sees a
# request, let alone the secret; a token URL on the VTN's origin is
# followed; --token-url is trusted; an http --token-url beside an https
# VTN is refused (a downgrade); a plain http VTN off loopback is warned
# about, one on loopback is not.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }
python3 tests/mock-vtn/mock_vtn.py --port-file "$T/port" --lifetime 60 &
P1=$!
python3 tests/mock-vtn/mock_vtn.py --port-file "$T/port2" --lifetime 60 &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -s "$T/port" ] && [ -s "$T/port2" ] && break; sleep 0.1; done
[ -s "$T/port" ] && [ -s "$T/port2" ] || { echo "mock VTN did not start"; exit 1; }
ROOT="http://127.0.0.1:$(cat "$T/port")"
BASE="$ROOT/openadr3"
OTHER="http://127.0.0.1:$(cat "$T/port2")"
CURL=(curl -sS --max-time 5)
BL=$("${CURL[@]}" -d grant_type=client_credentials -d client_id=bl1 \
  -d client_secret=bl-secret "$BASE/auth/token" | jq -r .access_token)
"${CURL[@]}" -H "Authorization: Bearer $BL" -H 'Content-Type: application/json' \
  -d '{"programName":"site-flex"}' "$BASE/programs" >/dev/null
printf 'ven-secret\n' >"$T/secret"
chmod 600 "$T/secret"
VEN=(--client-id ven1 --client-secret-file "$T/secret" --program site-flex --baseline 1000000 --format csv)
token_url() { "${CURL[@]}" -d "{\"url\":$1}" "$ROOT/_mock/token-url" >/dev/null; }

# Another origin (same host, another port): refused, nothing sent there.
token_url "\"$OTHER/openadr3/auth/token\""
"$PFI" grid timeline --vtn "$BASE" "${VEN[@]}" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -qF "names the token URL $OTHER/openadr3/auth/token, not on the VTN's origin" "$T/err" ||
  fail "foreign token URL: exit $rc, $(cat "$T/err")"
[ "$("${CURL[@]}" "$OTHER/_mock/log" | jq '[.[] | select(.path | startswith("/_mock/") | not)] | length')" = 0 ] ||
  fail "the other server got requests: $("${CURL[@]}" "$OTHER/_mock/log")"
# The VTN itself got only the BL's token request, not the VEN's.
[ "$("${CURL[@]}" "$ROOT/_mock/log" | jq '[.[] | select(.path | endswith("/auth/token"))] | length')" = 1 ] ||
  fail "the VEN posted to a token URL: $("${CURL[@]}" "$ROOT/_mock/log")"
# The same with https -> http on the same host and port (a downgrade).
token_url "\"https://127.0.0.1:$(cat "$T/port")/openadr3/auth/token\""
"$PFI" grid timeline --vtn "$BASE" "${VEN[@]}" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -qF "not on the VTN's origin" "$T/err" ||
  fail "https token URL for an http VTN: exit $rc, $(cat "$T/err")"
# The token URL named absolutely on the VTN's own origin: followed, and
# no warning for a loopback VTN.
token_url "\"$BASE/auth/token\""
"$PFI" grid timeline --vtn "$BASE" "${VEN[@]}" >"$T/out" 2>"$T/err" ||
  fail "same-origin token URL: exit $?, $(cat "$T/err")"
[ -s "$T/err" ] && fail "loopback VTN: stderr $(cat "$T/err")"
# --token-url: trusted even on another origin (the secret goes there: the
# other mock issues a token, which this VTN does not know: 401, and the
# VEN takes a new one once: two token requests).
token_url "\"$OTHER/steal\""
n0=$("${CURL[@]}" "$OTHER/_mock/log" | jq length)
"$PFI" grid timeline --vtn "$BASE" "${VEN[@]}" --token-url "$OTHER/openadr3/auth/token" \
  >"$T/out" 2>"$T/err"
[ "$("${CURL[@]}" "$OTHER/_mock/log" | jq "[.[$n0:][] | select(.path == \"/openadr3/auth/token\" and .status == 200)] | length")" = 2 ] ||
  fail "--token-url not used: $("${CURL[@]}" "$OTHER/_mock/log")"
"${CURL[@]}" "$OTHER/_mock/log" | jq -e 'all(.[]; .path != "/steal")' >/dev/null ||
  fail "the VTN's token URL used despite --token-url"
# An http --token-url beside an https VTN: refused before any request.
"$PFI" grid timeline --vtn "https://127.0.0.1:1/openadr3" "${VEN[@]}" \
  --token-url "http://127.0.0.1:1/token" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -qF "token URL 'http://127.0.0.1:1/token': expected an http(s) URL with a host and no user information, https when the VTN's is" "$T/err" ||
  fail "http --token-url for an https VTN: exit $rc, $(cat "$T/err")"
# A plain http VTN off loopback (0.0.0.0: this host, refused at once):
# warned about.
"$PFI" grid timeline --vtn "http://0.0.0.0:1/openadr3" "${VEN[@]}" >"$T/out" 2>"$T/err"
grep -qF "pfi grid: warning: --vtn http://0.0.0.0:1/openadr3 is plain http" "$T/err" ||
  fail "http VTN: no warning: $(cat "$T/err")"

[ "$fails" = 0 ] || exit 1
echo "grid token url: ok"
