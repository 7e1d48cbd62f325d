#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid's API and the agent's endpoints over HTTPS (docs/security.md "TLS"),
# with a CA and certificates made here (openssl), on loopback only:
# - pfid with --tls-cert/--tls-key: `pfi ctl --cacert` reads its status,
#   submits an event and the emulated agent's caps are cut (200 W, the
#   lowest cap, as test_fleet_event); the start-up line says HTTPS.
# - pfi ctl refuses a server it cannot verify: no --cacert (the system's
#   CAs do not know the test CA), another CA, a self-signed certificate;
#   plain http to the HTTPS port fails; --insecure is what skips the check.
# - with --tls-client-ca (mutual TLS) a client without a certificate, or
#   with one another CA signed, gets 403 and changes nothing; with the CA's
#   client certificate `pfi grid bridge` posts its schedule's event.
# - plain HTTP on an address that is not loopback is refused at start
#   (exit 2, before listening), pfid and agent alike; a key file others
#   may read is refused (the secret reader's rule); a key that is not the
#   certificate's is refused at start.
# - the agent's --metrics over HTTPS answers a client that trusts the CA;
#   its --cap-listen on loopback stays plain HTTP (the trainers' protocol).
. "$(dirname "$0")/lib.sh"
tls_certs "$T/tls"
C=$T/tls
setup_nats n1 n2
agent_start n1 2
pfid_start a --tls-cert "$C/server.pem" --tls-key "$C/server.key"
URL_A="https://127.0.0.1:${API[a]}"
ctl() { timeout 30 "$PFI" ctl --token-file "$T/token" "$@"; }

live() { ctl --url "$URL_A" --cacert "$C/ca.pem" --format json status 2>/dev/null |
  grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || fail "pfi ctl status over HTTPS: $(ctl --url "$URL_A" --cacert "$C/ca.pem" status 2>&1) $(tail -n 5 "$T/pfid.a.log")"
grep -q "API on port ${API[a]}, HTTPS$" "$T/pfid.a.log" || fail "start-up line: $(grep 'API on' "$T/pfid.a.log")"
until_true 20 caps_are n1 700,700 || fail "n1 caps before the event: $(caps n1)"

# Refused servers: exit 1, the reason libcurl gives, and no request made.
refused() { # refused WHAT URL [ctl options...]
  local what=$1 url=$2 rc
  shift 2
  ctl --url "$url" "$@" status >"$T/ctl.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] && grep -qi "certificate\|SSL\|TLS" "$T/ctl.out" ||
    fail "$what: exit $rc, $(cat "$T/ctl.out")"
}
refused "no --cacert (system CAs)" "$URL_A"
refused "another CA" "$URL_A" --cacert "$C/other-ca.pem"
ctl --url "http://127.0.0.1:${API[a]}" status >"$T/ctl.out" 2>&1
[ $? = 1 ] || fail "plain http to the HTTPS port answered: $(cat "$T/ctl.out")"
ctl --url "$URL_A" --insecure --format json status >"$T/ctl.out" 2>&1 ||
  fail "--insecure: $(cat "$T/ctl.out")"

# The event through pfi ctl over HTTPS: the caps are cut, then restored.
t0=$(date +%s)
ctl --url "$URL_A" --cacert "$C/ca.pem" submit ev1 "$t0" $((t0 + 120)) 600 >"$T/ctl.out" 2>&1 ||
  fail "pfi ctl submit over HTTPS: $(cat "$T/ctl.out")"
until_true 30 caps_are n1 200,200 || fail "n1 caps $(caps n1) during ev1, expected 200,200"
ctl --url "$URL_A" --cacert "$C/ca.pem" cancel ev1 >"$T/ctl.out" 2>&1 ||
  fail "pfi ctl cancel over HTTPS: $(cat "$T/ctl.out")"
until_true 60 caps_are n1 700,700 || fail "n1 caps $(caps n1) after ev1, expected 700,700"

# A self-signed server certificate.
s_port=$(free_port)
"$PFID" --id s2 --nats "$NATS_URL" --password-file "$T/pw.pfid" --records "$T/s2.db" \
  --api "127.0.0.1:$s_port" --tls-cert "$C/self.pem" --tls-key "$C/self.key" >>"$T/pfid.s2.log" 2>&1 &
PIDS+=("$!")
s2_up() { grep -q "API on port $s_port, HTTPS" "$T/pfid.s2.log"; }
until_true 30 s2_up || fail "pfid with a self-signed certificate: $(cat "$T/pfid.s2.log")"
refused "a self-signed certificate" "https://127.0.0.1:$s_port" --cacert "$C/ca.pem"
refused "a self-signed certificate, system CAs" "https://127.0.0.1:$s_port"

# Mutual TLS: pfid m asks for a certificate the test CA signed.
pfid_start m --tls-cert "$C/server.pem" --tls-key "$C/server.key" --tls-client-ca "$C/ca.pem"
URL_M="https://127.0.0.1:${API[m]}"
m_up() { grep -q "API on port ${API[m]}, HTTPS, client certificates required" "$T/pfid.m.log"; }
until_true 30 m_up || fail "pfid with --tls-client-ca: $(cat "$T/pfid.m.log")"
no_cert() { # no_cert WHAT [ctl options...]: 403 to a submit, no event made
  local what=$1 rc
  shift
  ctl --url "$URL_M" --cacert "$C/ca.pem" "$@" submit evx $((t0 + 3600)) $((t0 + 7200)) 600 >"$T/ctl.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] && grep -q "HTTP 403.*client certificate" "$T/ctl.out" ||
    fail "$what: exit $rc, $(cat "$T/ctl.out")"
}
no_cert "no client certificate"
no_cert "a client certificate of another CA" --cert "$C/other-client.pem" --key "$C/other-client.key"
curl -s -m 5 -o /dev/null -w '%{http_code}' --cacert "$C/ca.pem" "$URL_M/v1/status" >"$T/code"
[ "$(cat "$T/code")" = 403 ] || fail "GET without a client certificate: HTTP $(cat "$T/code"), expected 403"
ctl --url "$URL_M" --cacert "$C/ca.pem" --cert "$C/client.pem" --key "$C/client.key" \
  --format json events >"$T/ctl.out" 2>&1 || fail "with the client certificate: $(cat "$T/ctl.out")"
jq -e 'length >= 1 and all(.[]; .id != "evx")' "$T/ctl.out" >/dev/null ||
  fail "events after the refused submits: $(cat "$T/ctl.out")"

# The grid bridge over mutual TLS: its schedule's event reaches pfid m.
printf 'start,end,limit,level\n%d,%d,900,gpu\n' $((t0 + 3600)) $((t0 + 7200)) >"$T/sched.csv"
timeout 60 "$PFI" grid bridge --pfid "$URL_M" --pfid-token-file "$T/token" --pfid-cacert "$C/ca.pem" \
  --pfid-cert "$C/client.pem" --pfid-key "$C/client.key" --schedule "$T/sched.csv" --once \
  >"$T/bridge.log" 2>&1 || fail "bridge over mutual TLS: $(cat "$T/bridge.log")"
ctl --url "$URL_M" --cacert "$C/ca.pem" --cert "$C/client.pem" --key "$C/client.key" \
  --format json events >"$T/ctl.out" 2>&1
jq -e 'map(select(.id | startswith("oadr-"))) | length == 1 and .[0].target_w == 900' "$T/ctl.out" >/dev/null ||
  fail "the bridge's event on pfid m: $(cat "$T/ctl.out") $(cat "$T/bridge.log")"
timeout 60 "$PFI" grid bridge --pfid "$URL_M" --pfid-token-file "$T/token" --pfid-cacert "$C/ca.pem" \
  --schedule "$T/sched.csv" --once >"$T/bridge.log" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "HTTP 403.*client certificate" "$T/bridge.log" ||
  fail "bridge without a client certificate: exit $rc, $(cat "$T/bridge.log")"

# Refused at start: exit 2, the reason named.
start_refused() { # start_refused WHAT PATTERN PROGRAM ARGS...
  local what=$1 pat=$2 rc
  shift 2
  timeout 30 "$@" >"$T/start.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q -- "$pat" "$T/start.out" || fail "$what: exit $rc, $(cat "$T/start.out")"
}
start_refused "pfid plain HTTP on 0.0.0.0" "plain HTTP on 0.0.0.0:$s_port, which is not a loopback address" \
  "$PFID" --id p --nats "$NATS_URL" --password-file "$T/pw.pfid" --records "$T/p.db" --api "0.0.0.0:$s_port"
start_refused "pfid plain HTTP on every address" "plain HTTP on :$s_port" \
  "$PFID" --id p --nats "$NATS_URL" --password-file "$T/pw.pfid" --records "$T/p.db" --api ":$s_port"
mkdir -p "$T/emu.n9"
start_refused "agent plain HTTP metrics on 0.0.0.0" "plain HTTP on 0.0.0.0:$s_port" \
  env PFI_LOCK_DIR= "$PFI_AGENT" --node n9 --nats "$NATS_URL" --emulate --params "gpus=1,state=$T/emu.n9" \
  --record "$T/agent.n9.db" --metrics "0.0.0.0:$s_port"
cp "$C/server.key" "$T/open.key"
chmod 0644 "$T/open.key"
start_refused "a key others may read" "$T/open.key: readable or writable by others" \
  "$PFID" --id p --nats "$NATS_URL" --password-file "$T/pw.pfid" --records "$T/p.db" \
  --api "127.0.0.1:$s_port" --tls-cert "$C/server.pem" --tls-key "$T/open.key"
start_refused "a key without a certificate" "go together" \
  "$PFID" --id p --nats "$NATS_URL" --password-file "$T/pw.pfid" --records "$T/p.db" \
  --api "127.0.0.1:$(free_port)" --tls-key "$C/server.key"
p_port=$(free_port)
timeout 30 "$PFID" --id p --nats "$NATS_URL" --password-file "$T/pw.pfid" --records "$T/p.db" \
  --api "127.0.0.1:$p_port" --tls-cert "$C/server.pem" --tls-key "$C/client.key" >"$T/start.out" 2>&1
rc=$?
[ "$rc" != 0 ] && grep -q "cannot listen on 127.0.0.1:$p_port (or the TLS certificate and key are refused" "$T/start.out" ||
  fail "a key that is not the certificate's: exit $rc, $(cat "$T/start.out")"

# The agent's /metrics over HTTPS; its cap endpoint on loopback stays
# plain HTTP for the node's trainers.
MP=$(free_port) CP=$(free_port)
agent_start n2 1 --metrics "127.0.0.1:$MP" --cap-listen "127.0.0.1:$CP" \
  --tls-cert "$C/server.pem" --tls-key "$C/server.key"
metrics() { curl -s -m 5 --cacert "$C/ca.pem" "https://127.0.0.1:$MP/metrics" | grep -q '^pfi_agent_'; }
until_true 30 metrics || fail "agent /metrics over HTTPS: $(tail -n 5 "$T/agent.n2.log")"
cap_plain() { curl -s -m 5 "http://127.0.0.1:$CP/v1/cap" | jq -e '.gpus | length == 1' >/dev/null; }
until_true 30 cap_plain || fail "agent /v1/cap on loopback, plain HTTP: $(curl -s -m 5 "http://127.0.0.1:$CP/v1/cap")"
grep -q "cap status on 127.0.0.1:$CP (port $CP, GET /v1/cap), plain HTTP (loopback or Unix socket)" "$T/agent.n2.log" ||
  fail "agent cap start-up line: $(cat "$T/agent.n2.log")"
grep -q "metrics on 127.0.0.1:$MP (port $MP), HTTPS" "$T/agent.n2.log" || fail "agent start-up line: $(cat "$T/agent.n2.log")"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$MP/metrics")
[ "$code" = 000 ] || fail "agent /metrics to a client without the CA: HTTP $code"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet tls: ok"
