#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# NATS as docs/fleet.md "Security" gives it for production: a nats-server
# that requires TLS and verifies clients' certificates (mTLS), its users
# nkeys. A CA, certificates and nkeys are made here. pfid and an agent work
# over it (the server itself reports both connections as TLS and
# authenticated by their nkeys; an event cuts the caps, its cancel restores
# them). Refused, each at once with a message rather than retried for
# ever: a server certificate from another CA, a self-signed one, one for
# another name (accepted with --nats-server-name), a client without a
# certificate, a plain-text client, an nkey seed that is not the user's,
# a key or seed file others can read; plain text to a server off loopback
# without --nats-insecure (said at start-up with it).
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }

tls_ca ca
tls_ca other-ca
tls_cert server ca "DNS:localhost,IP:127.0.0.1"
tls_cert pfid ca "DNS:pfid"
tls_cert n1 ca "DNS:n1"
tls_cert rogue other-ca "DNS:localhost,IP:127.0.0.1"
tls_cert selfsigned self "DNS:localhost,IP:127.0.0.1"
tls_cert misnamed ca "DNS:nats.example"
nkey_user pfid
nkey_user n1
nkey_user stranger

# tls_server NAME CERT VERIFY: a nats-server config $T/NAME.conf on a free
# loopback port (NAME_PORT, monitoring NAME_MPORT) requiring TLS with
# certificate CERT, clients' certificates verified against ca when VERIFY
# is true; JetStream; the nkey users pfid (PFID_PERMS) and agent n1.
tls_server() {
  local name=$1 cert=$2 verify=$3 port mport
  port=$(free_port)
  mport=$(free_port)
  printf -v "${name}_PORT" %s "$port"
  printf -v "${name}_MPORT" %s "$mport"
  {
    echo "listen: 127.0.0.1:$port"
    echo "http: 127.0.0.1:$mport"
    echo "jetstream { store_dir: \"$T/js.$name\", max_memory_store: 64MB, max_file_store: 256MB }"
    echo "tls { cert_file: \"$T/$cert.pem\", key_file: \"$T/$cert.key\", ca_file: \"$T/ca.pem\", verify: $verify, timeout: 5 }"
    echo "authorization { users = ["
    echo "  { nkey: $(cat "$T/pfid.pub"), permissions: { $PFID_PERMS } }"
    echo "  { nkey: $(cat "$T/n1.pub"), permissions: { publish: { allow: [\"pfi.telemetry.n1\"] }, subscribe: { allow: [\"pfi.assign.n1\"] } } }"
    echo "] }"
  } >"$T/$name.conf"
  nats-server -c "$T/$name.conf" >>"$T/nats.$name.log" 2>&1 &
  PIDS+=("$!")
  ready() { grep -q "Server is ready" "$T/nats.$1.log" 2>/dev/null; }
  until_true 20 ready "$name" || { fail "nats-server $name did not start"; cat "$T/nats.$name.log" >&2; exit 1; }
}

tls_server main server true       # the production setting: mTLS, nkeys
tls_server selfsig selfsigned false
tls_server foreign rogue false
tls_server named misnamed false

# Every daemon: the CA, its own certificate and nkey.
nats_auth() {
  NATS_AUTH=(--nats-ca "$T/ca.pem" --nats-cert "$T/$1.pem" --nats-key "$T/$1.key"
    --nats-nkey "$T/$1.nk" --user "$(cat "$T/$1.pub")")
}
NATS_URL="tls://localhost:$main_PORT"
mkdir -p "$T/emu.n1"
agent_start n1 2
pfid_start a

live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 60 live || fail "pfid over TLS: no live node: $(cat "$T/body" 2>/dev/null)"
# Said at start-up.
grep -q "NATS $NATS_URL: TLS, server certificates from $T/ca.pem for localhost, client certificate, nkey user $(cat "$T/pfid.pub")" \
  "$T/pfid.a.log" || fail "pfid's start-up line: $(grep NATS "$T/pfid.a.log")"
grep -q "NATS $NATS_URL: TLS, server certificates from $T/ca.pem for localhost, client certificate, nkey user $(cat "$T/n1.pub")" \
  "$T/agent.n1.log" || fail "the agent's start-up line: $(grep NATS "$T/agent.n1.log")"
# The server's own view: two connections, each over TLS, each authorized
# as its nkey.
curl -s -m 5 "http://127.0.0.1:$main_MPORT/connz?auth=true" >"$T/connz"
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["connections"]
users = sorted(x.get("authorized_user", "") for x in c)
assert users == sorted(sys.argv[2:]), users
assert all(x.get("tls_version", "").startswith("1.") for x in c), [x.get("tls_version") for x in c]
' "$T/connz" "$(cat "$T/pfid.pub")" "$(cat "$T/n1.pub")" || fail "connz: $(cat "$T/connz")"

# An event cuts the caps (no job on these GPUs: held at their lowest cap,
# 200 W on the emulated H200), its cancel restores the 700 W default.
[ "$(caps n1)" = 700,700 ] || fail "n1 caps before the event: $(caps n1)"
api a POST /v1/events "$(event_json ev1 0 120 800)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code"): $(cat "$T/body")"
until_true 30 caps_are n1 200,200 || fail "n1 caps $(caps n1) during the event, expected 200,200"
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/token" cancel ev1 >/dev/null ||
  fail "pfi ctl cancel"
until_true 60 caps_are n1 700,700 || fail "n1 caps $(caps n1) after the event, expected 700,700"

# refused WHAT PATTERN PFID-OPTIONS...: pfid exits (within the bound, not
# killed by it) non-zero, saying PATTERN; its status in rc.
refused() {
  local what=$1 pat=$2
  shift 2
  timeout -k 5 30 "$PFID" --id x --api none --records "$T/x.db" "$@" >"$T/x.out" 2>&1
  rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qi -- "$pat" "$T/x.out" ||
    fail "$what: exit $rc, expected a refusal saying '$pat': $(cat "$T/x.out")"
}
nats_auth pfid
PFID_AUTH=("${NATS_AUTH[@]}")
with_ca() { # with_ca CA: PFID_AUTH with another --nats-ca
  NATS_AUTH=(--nats-ca "$T/$1.pem" --nats-cert "$T/pfid.pem" --nats-key "$T/pfid.key"
    --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")")
}
with_ca other-ca
refused "the server's certificate from another CA" "SSL handshake error: 20:unable to get local issuer certificate" \
  --nats "$NATS_URL" "${NATS_AUTH[@]}"
with_ca ca
refused "a server certificate from another CA than --nats-ca" "SSL handshake error: 20:unable to get local issuer certificate" \
  --nats "tls://localhost:$foreign_PORT" "${NATS_AUTH[@]}"
refused "a self-signed server certificate" "SSL handshake error: 18:self-signed certificate" \
  --nats "tls://localhost:$selfsig_PORT" "${NATS_AUTH[@]}"
refused "a self-signed server certificate, the system's CAs" "SSL handshake error: 18:self-signed certificate" \
  --nats "tls://localhost:$selfsig_PORT" --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")"
# The certificate's name: for nats.example, not localhost.
refused "a server certificate for another name" "SSL handshake error: 62:hostname mismatch:expected=localhost" \
  --nats "tls://localhost:$named_PORT" "${NATS_AUTH[@]}"
# With that name expected, TLS goes through: what refuses is then the
# account (the stranger's seed), not the certificate.
refused "--nats-server-name, a wrong seed" "authorization violation" \
  --nats "tls://localhost:$named_PORT" --nats-server-name nats.example --nats-ca "$T/ca.pem" \
  --nats-nkey "$T/stranger.nk" --user "$(cat "$T/pfid.pub")"
grep '^pfid: NATS' "$T/x.out" | grep -qi 'SSL' && fail "--nats-server-name: still a certificate error: $(cat "$T/x.out")"
# mTLS: no client certificate.
refused "no client certificate" "closed the connection after TLS: it may require a client certificate" \
  --nats "$NATS_URL" --nats-ca "$T/ca.pem" --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")"
# A client certificate from another CA.
refused "a client certificate from another CA" "closed the connection after TLS: it may refuse this client certificate" \
  --nats "$NATS_URL" --nats-ca "$T/ca.pem" --nats-cert "$T/rogue.pem" --nats-key "$T/rogue.key" \
  --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")"
# Plain text to the TLS server.
refused "plain text to a server that requires TLS" "SSL handshake error" \
  --nats "nats://localhost:$main_PORT" --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")"
# Accounts: the stranger's seed for pfid's public key, the stranger's own.
refused "a seed that is not the user's" "authorization violation" \
  --nats "$NATS_URL" "${PFID_AUTH[@]:0:6}" --nats-nkey "$T/stranger.nk" --user "$(cat "$T/pfid.pub")"
refused "an nkey the server does not know" "authorization violation" \
  --nats "$NATS_URL" "${PFID_AUTH[@]:0:6}" --nats-nkey "$T/stranger.nk" --user "$(cat "$T/stranger.pub")"
# Secret files others can read: refused before connecting, exit 2.
cp "$T/pfid.nk" "$T/open.nk"
chmod 0644 "$T/open.nk"
refused "a seed file others can read" "open.nk" \
  --nats "$NATS_URL" "${PFID_AUTH[@]:0:6}" --nats-nkey "$T/open.nk" --user "$(cat "$T/pfid.pub")"
[ "$rc" = 2 ] || fail "a seed file others can read: exit $rc, expected 2"
cp "$T/pfid.key" "$T/open.key"
chmod 0640 "$T/open.key"
refused "a key file others can read" "open.key" \
  --nats "$NATS_URL" --nats-ca "$T/ca.pem" --nats-cert "$T/pfid.pem" --nats-key "$T/open.key" \
  --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")"
[ "$rc" = 2 ] || fail "a key file others can read: exit $rc, expected 2"
refused "--nats-nkey without --user" "user" \
  --nats "$NATS_URL" --nats-ca "$T/ca.pem" --nats-nkey "$T/pfid.nk"
# The agent too: no client certificate, refused at once (its connection is
# otherwise made in the background).
timeout -k 5 60 "$PFI_AGENT" --node n2 --emulate --params "gpus=1,state=$T/emu.n2" --record "$T/agent.n2.db" \
  --nats "$NATS_URL" --nats-ca "$T/ca.pem" --nats-nkey "$T/n1.nk" --user "$(cat "$T/n1.pub")" \
  >"$T/n2.out" 2>&1
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "agent without a client certificate: exit $rc: $(cat "$T/n2.out")"

# Plain text off loopback: refused before any connection (192.0.2.1 is a
# documentation address), exit 2; with --nats-insecure said at start-up.
timeout -k 5 20 "$PFID" --id x --api none --records "$T/x.db" --nats nats://192.0.2.1:4222 >"$T/x.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'not on loopback.*--nats-insecure' "$T/x.out" ||
  fail "plain text off loopback: exit $rc: $(cat "$T/x.out")"
timeout -k 5 20 "$PFI_AGENT" --node n3 --emulate --params "gpus=1,state=$T/emu.n3" --record "$T/agent.n3.db" \
  --nats nats://192.0.2.1:4222 >"$T/n3.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'not on loopback' "$T/n3.out" || fail "agent, plain text off loopback: exit $rc: $(cat "$T/n3.out")"
mkdir -p "$T/emu.n4"
"$PFI_AGENT" --node n4 --emulate --params "gpus=1,state=$T/emu.n4" --record "$T/agent.n4.db" \
  --nats nats://192.0.2.1:4222 --nats-insecure >"$T/n4.out" 2>&1 &
n4=$!
PIDS+=("$n4")
said() { grep -q 'NATS nats://192.0.2.1:4222: PLAIN TEXT to 192.0.2.1 (--nats-insecure)' "$T/n4.out"; }
until_true 30 said || fail "--nats-insecure not said at start-up: $(cat "$T/n4.out")"
kill "$n4"
# --nats-insecure with TLS options: a contradiction.
timeout -k 5 20 "$PFID" --id x --api none --records "$T/x.db" --nats-insecure --nats-ca "$T/ca.pem" >"$T/x.out" 2>&1
[ $? = 2 ] || fail "--nats-insecure with --nats-ca: $(cat "$T/x.out")"

# Usage errors, before any connection (exit 2): a certificate without its
# key, two ways of naming the user, an nkey without its public key, a CA
# file that is not PEM certificates (named).
usage2() { # usage2 PATTERN PFID-OPTIONS...
  local pat=$1
  shift
  timeout -k 5 20 "$PFID" --id x --api none --records "$T/x.db" "$@" >"$T/x.out" 2>&1
  local rc=$?
  [ "$rc" = 2 ] && grep -q -- "$pat" "$T/x.out" || fail "pfid $*: exit $rc, expected 2 and '$pat': $(cat "$T/x.out")"
}
usage2 "pfid: --nats-cert and --nats-key go together" --nats-cert "$T/pfid.pem"
usage2 "pfid: --password-file and --nats-nkey exclude each other" \
  --password-file "$T/pfid.nk" --nats-nkey "$T/pfid.nk" --user "$(cat "$T/pfid.pub")"
usage2 "pfid: --nats-nkey needs --user" --nats-nkey "$T/pfid.nk"
usage2 "pfid: --nats-nkey: --user must be the nkey's public key" --nats-nkey "$T/pfid.nk" --user pfid
usage2 "NATS: $T/openssl.log: SSL Error" --nats "$NATS_URL" --nats-ca "$T/openssl.log"
usage2 "not an nkey user seed" --nats "$NATS_URL" --nats-ca "$T/ca.pem" --nats-nkey "$T/ca.key" \
  --user "$(cat "$T/pfid.pub")"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet nats tls: ok"
