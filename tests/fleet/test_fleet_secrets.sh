#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid reads its secrets as the shipped deployment files give them
# (docs/security.md "Secrets"): from systemd credentials (cred:NAME in
# $CREDENTIALS_DIRECTORY, set here by hand as LoadCredential= would: a
# directory of mode 0500 holding 0400 files), and from a Kubernetes Secret
# volume (token -> ..data/token, ..data -> ..2026_...). The API then takes
# the token (pfi ctl reads it the same way); a token reached through a
# world-writable directory is refused at start-up, exit 2, naming it.
. "$(dirname "$0")/lib.sh"
setup_nats

# systemd credentials.
mkdir "$T/creds"
cp "$T/pw.pfid" "$T/creds/nats-password"
secret "$T/creds/api-token"
chmod 0400 "$T/creds/nats-password" "$T/creds/api-token"
chmod 0500 "$T/creds"
cp "$T/creds/api-token" "$T/token" # the tests' api helper sends $T/token
export CREDENTIALS_DIRECTORY="$T/creds"
pfid_start a --password-file cred:nats-password --token-file cred:api-token
# Leading, so that the event submitted next is in its list once taken.
up_a() { api a GET /v1/status | grep -q '"leader":true'; }
until_true 30 up_a || fail "pfid with credentials: not leading"
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file cred:api-token \
  submit ev1 "$(date -d '+1 hour' +%s)" "$(date -d '+2 hours' +%s)" 1000 >"$T/ctl.out" 2>&1 ||
  fail "pfi ctl submit with cred:api-token: $(cat "$T/ctl.out")"
has_ev1() { api a GET /v1/events | grep -q '"id":"ev1"'; }
until_true 10 has_ev1 || fail "ev1 not in /v1/events: $(cat "$T/body")"
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file cred:nats-password \
  cancel ev1 >"$T/ctl.out" 2>&1
[ $? = 1 ] && grep -q 'HTTP 401' "$T/ctl.out" || fail "another credential as token: $(cat "$T/ctl.out")"
unset CREDENTIALS_DIRECTORY
"$PFID" --id x --nats "$NATS_URL" --password-file cred:nats-password --api none \
  --records "$T/x.db" >"$T/x.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'CREDENTIALS_DIRECTORY is not set' "$T/x.out" ||
  fail "cred: without \$CREDENTIALS_DIRECTORY: exit $rc, $(cat "$T/x.out")"

# A Kubernetes Secret volume, as the kubelet writes one.
v="$T/vol"
mkdir -p "$v/..2026_12_07_15_00_00.123456789"
chmod 1777 "$v"
chmod 0755 "$v/..2026_12_07_15_00_00.123456789"
cp "$T/creds/api-token" "$v/..2026_12_07_15_00_00.123456789/token"
cp "$T/pw.pfid" "$v/..2026_12_07_15_00_00.123456789/password"
chmod 0600 "$v/..2026_12_07_15_00_00.123456789/"*
ln -s ..2026_12_07_15_00_00.123456789 "$v/..data"
ln -s ..data/token "$v/token"
ln -s ..data/password "$v/password"
pfid_start b --password-file "$v/password" --token-file "$v/token"
up_b() { api b GET /v1/status | grep -q '"leader"'; }
until_true 30 up_b || fail "pfid with a Secret volume: no status"
api b POST /v1/events "$(event_json ev2 3600 7200 1000)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST with the volume's token: HTTP $(cat "$T/code")"

# The same token reached through a world-writable directory: refused.
mkdir "$T/ww"
chmod 0777 "$T/ww"
cp -p "$T/creds/api-token" "$T/ww/token"
chmod 0600 "$T/ww/token"
ln -s ww/token "$T/bad-token"
"$PFID" --id y --nats "$NATS_URL" --password-file "$T/pw.pfid" --api none \
  --records "$T/y.db" --token-file "$T/bad-token" >"$T/y.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "$T/ww: writable by others (mode 777)" "$T/y.out" ||
  fail "token through a world-writable directory: exit $rc, $(cat "$T/y.out")"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet secrets: ok"
