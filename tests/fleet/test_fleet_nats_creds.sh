#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An agent as the user of a NATS credentials file (--nats-creds), against a
# nats-server in operator mode (docs/fleet.md "Security"): an operator, an
# account and users are made here as nsc would make them (nkeys, JWTs
# signed with Ed25519 by their issuer). The agent's user connects (the
# server shows its connection, authorized as that user's public key); a
# user signed by an account the server does not know is refused at once
# ("Authorization Violation", exit 2), and so is a credentials file that
# others can read, or one that is not a credentials file.
. "$(dirname "$0")/lib.sh"

NATS_PORT=$(free_port)
MPORT=$(free_port)
# make_creds: $T/op.jwt, $T/acc.jwt (their public keys in $T/acc.pub),
# $T/n1.creds (a user of that account) and $T/rogue.creds (a user of an
# account made here but not given to the server).
python3 - "$T" <<'PY' || { fail "making the JWTs"; exit 1; }
import base64, json, os, sys, time
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
T = sys.argv[1]
def crc16(b):
    c = 0
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else c << 1
            c &= 0xFFFF
    return c
def enc(raw):
    c = crc16(raw)
    return base64.b32encode(raw + bytes([c & 0xFF, c >> 8])).decode().rstrip("=")
PREFIX = {"O": 14 << 3, "A": 0, "U": 20 << 3}
def keypair(kind):
    k = Ed25519PrivateKey.generate()
    seed = k.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption())
    pub = k.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    p = PREFIX[kind]
    return k, enc(bytes([p]) + pub), enc(bytes([18 << 3 | p >> 5, (p & 31) << 3]) + seed)
def b64(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")
def jwt(issuer_key, iss, sub, name, nats):
    claims = {"jti": b64(os.urandom(24)), "iat": int(time.time()), "iss": iss,
              "sub": sub, "name": name, "nats": dict(nats, version=2)}
    head = b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = b64(json.dumps(claims).encode())
    sig = issuer_key.sign((head + "." + body).encode())
    return head + "." + body + "." + b64(sig)
LIMITS = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
          "wildcards": True, "conn": -1, "leaf": -1}
ok, op_pub, _ = keypair("O")
open(T + "/op.jwt", "w").write(jwt(ok, op_pub, op_pub, "op", {"type": "operator"}))
def account(name):
    ak, a_pub, _ = keypair("A")
    return ak, a_pub, jwt(ok, op_pub, a_pub, name, {"type": "account", "limits": LIMITS})
def creds(path, ak, a_pub, name, node):
    uk, u_pub, u_seed = keypair("U")
    u = jwt(ak, a_pub, u_pub, name, {"type": "user", "subs": -1, "data": -1, "payload": -1,
            "pub": {"allow": ["pfi.telemetry." + node]}, "sub": {"allow": ["pfi.assign." + node]}})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, ("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
                  "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n"
                  % (u, u_seed)).encode())
    os.close(fd)
    open(path + ".pub", "w").write(u_pub + "\n")
ak, a_pub, a_jwt = account("pfi")
open(T + "/acc.pub", "w").write(a_pub + "\n")
open(T + "/acc.jwt", "w").write(a_jwt)
creds(T + "/n1.creds", ak, a_pub, "agent-n1", "n1")
rk, r_pub, _ = account("rogue")
creds(T + "/rogue.creds", rk, r_pub, "agent-n1", "n1")
PY
{
  echo "listen: 127.0.0.1:$NATS_PORT"
  echo "http: 127.0.0.1:$MPORT"
  echo "operator: \"$(cat "$T/op.jwt")\""
  echo "resolver: MEMORY"
  echo "resolver_preload: { $(cat "$T/acc.pub"): \"$(cat "$T/acc.jwt")\" }"
} >"$T/nats.conf"
nats_start
NATS_URL="nats://127.0.0.1:$NATS_PORT"

# The agent with its credentials file.
nats_auth() { NATS_AUTH=(--nats-creds "$T/$1.creds"); }
mkdir -p "$T/emu.n1"
agent_start n1 2
conn() {
  curl -s -m 5 "http://127.0.0.1:$MPORT/connz?auth=true" |
    jq -e --arg u "$(cat "$T/n1.creds.pub")" 'any(.connections[]?; .authorized_user == $u and .name == "n1")' >/dev/null
}
until_true 30 conn || fail "the agent with --nats-creds is not connected: $(curl -s -m 5 "http://127.0.0.1:$MPORT/connz?auth=true") $(cat "$T/agent.n1.log")"
grep -q "NATS $NATS_URL: plain text (loopback), credentials file" "$T/agent.n1.log" ||
  fail "the agent's start-up line: $(grep NATS "$T/agent.n1.log")"

# agent_once NAME CREDS: an agent that must exit at once; its status in rc.
agent_once() {
  mkdir -p "$T/emu.$1"
  timeout -k 5 30 "$PFI_AGENT" --node "$1" --emulate --params "gpus=1,state=$T/emu.$1" \
    --record "$T/agent.$1.db" --nats "$NATS_URL" --nats-creds "$2" >"$T/$1.out" 2>&1
  rc=$?
}
agent_once n2 "$T/rogue.creds"
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && grep -qi 'authorization violation' "$T/n2.out" ||
  fail "a user of an unknown account: exit $rc: $(cat "$T/n2.out")"
cp "$T/n1.creds" "$T/open.creds"
chmod 0644 "$T/open.creds"
agent_once n3 "$T/open.creds"
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'open.creds' "$T/n3.out" ||
  fail "a credentials file others can read: exit $rc: $(cat "$T/n3.out")"
(umask 077; echo "not a credentials file" >"$T/bad.creds")
agent_once n4 "$T/bad.creds"
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'not a NATS credentials file' "$T/n4.out" ||
  fail "not a credentials file: exit $rc: $(cat "$T/n4.out")"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet nats creds: ok"
