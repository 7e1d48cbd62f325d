# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by the tests/fleet scripts: a private nats-server with JetStream
# (free loopback port, temporary store, users with permissions), and
# helpers to start pfid and emulated agents and to read caps independently
# of them (pfi devices on the emulator's state). Every wait is bounded.

. "$(dirname "$0")/../cli/lib.sh"

# FLEET_TLS=1 (the fleet.*_tls tests, cmake/fleet.cmake): the same flows
# over TLS everywhere. A CA and certificates made at test time
# (tls_certs: $T/tls); nats-server requires TLS and client certificates
# (setup_nats, nats_config), pfid and the agents connect with --nats-ca,
# --nats-cert and --nats-key (NATS_TLS, in nats_auth and
# load_agent_start); pfid's API serves HTTPS and requires client
# certificates (pfid_start), and api(), api_url, CURL_TLS and CTL_TLS
# reach it with the CA and a client certificate.
NATS_SCHEME=nats API_SCHEME=http
NATS_TLS=() API_TLS=() CURL_TLS=() CTL_TLS=()
if [ "${FLEET_TLS:-0}" = 1 ]; then
  tls_certs "$T/tls"
  NATS_SCHEME=tls API_SCHEME=https
  NATS_TLS=(--nats-ca "$T/tls/ca.pem" --nats-cert "$T/tls/client.pem" --nats-key "$T/tls/client.key")
  API_TLS=(--tls-cert "$T/tls/server.pem" --tls-key "$T/tls/server.key" --tls-client-ca "$T/tls/ca.pem")
  CURL_TLS=(--cacert "$T/tls/ca.pem" --cert "$T/tls/client.pem" --key "$T/tls/client.key")
  CTL_TLS=(--cacert "$T/tls/ca.pem" --cert "$T/tls/client.pem" --key "$T/tls/client.key")
  # The probe (tests/fleet/probe.c) reads its TLS from these.
  export PFI_PROBE_NATS_CA="$T/tls/ca.pem" PFI_PROBE_NATS_CERT="$T/tls/client.pem"
  export PFI_PROBE_NATS_KEY="$T/tls/client.key"
fi
# api_url ID: pfid ID's API, http or https.
api_url() { echo "$API_SCHEME://127.0.0.1:${API[$1]}"; }
PFI_AGENT=${PFI_AGENT:?PFI_AGENT must name pfi-agent}
PFID=${PFID:?PFID must name pfid}
command -v nats-server >/dev/null || { echo "SKIP: no nats-server"; exit 77; }
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  # Bounded: what has not exited after 10 s is killed.
  local i
  for i in $(seq 50); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

secret() { # secret FILE: a random password, mode 0600
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$1")
}

# The pfid user's permissions as docs/fleet.md gives them: the bucket's
# keys and the JetStream API requests on its stream only (no subject
# pfi.assign.*: assignments reach the agents only through the bucket), its
# replies and the telemetry.
PFID_PERMS='publish: { allow: ["$KV.pfi.>", "$JS.API.INFO", "$JS.API.STREAM.INFO.KV_pfi", "$JS.API.STREAM.CREATE.KV_pfi", "$JS.API.STREAM.MSG.GET.KV_pfi", "$JS.API.DIRECT.GET.KV_pfi.>"] }, subscribe: { allow: ["pfi.telemetry.*", "_INBOX.>"] }'

# nats_users NODE...: the authorization block: users pfid (PFID_PERMS),
# agent-NODE (its own subjects only) and admin (everything: the tests' own
# tools, and what a credential with every right could do).
nats_users() {
  secret "$T/pw.pfid"
  secret "$T/pw.admin"
  echo "authorization { users = ["
  echo "  { user: pfid, password: \"$(cat "$T/pw.pfid")\", permissions: { $PFID_PERMS } }"
  echo "  { user: admin, password: \"$(cat "$T/pw.admin")\", permissions: { publish: \">\", subscribe: \">\" } }"
  local n
  for n in "$@"; do
    secret "$T/pw.$n"
    echo "  { user: agent-$n, password: \"$(cat "$T/pw.$n")\","
    echo "    permissions: { publish: { allow: [\"pfi.telemetry.$n\"] }, subscribe: { allow: [\"pfi.assign.$n\"] } } }"
  done
  echo "] }"
}

# nats_config NODE...: one server, the users of nats_users, JetStream in
# $T/js.
nats_config() {
  {
    echo "listen: ${NATS_HOST:-127.0.0.1}:$NATS_PORT"
    echo "jetstream { store_dir: \"$T/js\", max_memory_store: 64MB, max_file_store: 256MB }"
    [ "$NATS_SCHEME" = tls ] &&
      echo "tls { cert_file: \"$T/tls/server.pem\", key_file: \"$T/tls/server.key\", ca_file: \"$T/tls/ca.pem\", verify: true, timeout: 5 }"
    nats_users "$@"
  } >"$T/nats.conf"
}

nats_start() {
  nats-server -c "$T/nats.conf" >>"$T/nats.log" 2>&1 &
  NATS_PID=$!
  PIDS+=("$NATS_PID")
  local i
  for i in $(seq 100); do
    grep -q "Server is ready" "$T/nats.log" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "nats-server did not start"; cat "$T/nats.log" >&2; exit 1
}

nats_stop() { kill "$NATS_PID"; wait "$NATS_PID" 2>/dev/null; }

# setup_nats_cluster NODE...: a cluster of NATS_SERVERS (default 3)
# servers s0, s1, ... on loopback as docs/fleet.md gives it for a site:
# routes between every two, JetStream on each (its own store, $T/js.I),
# the users of nats_users on each; NATS_URL lists every server's client
# URL (comma-separated, what pfid and the agents take). Server I: client
# port NPORT[I], monitoring port MPORT[I], PID NSRV_PID[I], log
# $T/nats.I.log. Returns once the JetStream cluster has a metadata leader.
declare -a NPORT MPORT CPORT NSRV_PID
setup_nats_cluster() {
  NATS_N=${NATS_SERVERS:-3}
  local i routes="" users ports
  users=$(nats_users "$@")
  # Three ports a server, found at once (distinct: all bound together).
  ports=($(python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' $((3 * NATS_N))))
  for ((i = 0; i < NATS_N; i++)); do
    NPORT[i]=${ports[3 * i]} MPORT[i]=${ports[3 * i + 1]} CPORT[i]=${ports[3 * i + 2]}
    routes+="${routes:+, }nats-route://127.0.0.1:${CPORT[i]}"
  done
  NATS_URL=""
  for ((i = 0; i < NATS_N; i++)); do
    NATS_URL+="${NATS_URL:+,}nats://127.0.0.1:${NPORT[i]}"
    {
      echo "server_name: s$i"
      echo "listen: 127.0.0.1:${NPORT[i]}"
      echo "http: 127.0.0.1:${MPORT[i]}"
      echo "jetstream { store_dir: \"$T/js.$i\", max_memory_store: 64MB, max_file_store: 256MB }"
      echo "cluster { name: pfi, listen: 127.0.0.1:${CPORT[i]}, routes: [ $routes ] }"
      echo "$users"
    } >"$T/nats.$i.conf"
  done
  for ((i = 0; i < NATS_N; i++)); do nats_srv_start "$i"; done
  meta() { jsz 0 | jq -e '.meta_cluster.leader // "" | length > 0' >/dev/null 2>&1; }
  until_true 30 meta || { fail "no JetStream metadata leader"; tail -n 20 "$T"/nats.*.log >&2; exit 1; }
}

# nats_srv_start I: starts (or restarts) cluster server I, waits until ready.
nats_srv_start() {
  local i=$1 k
  # The log's "ready" lines before this start: a restart adds one.
  k=$(grep -c "Server is ready" "$T/nats.$i.log" 2>/dev/null)
  nats-server -c "$T/nats.$i.conf" >>"$T/nats.$i.log" 2>&1 &
  NSRV_PID[i]=$!
  PIDS+=("$!")
  up() { [ "$(grep -c "Server is ready" "$T/nats.$1.log" 2>/dev/null)" -gt "$2" ]; }
  until_true 20 up "$i" "${k:-0}" || { fail "nats-server s$i did not start"; tail -n 20 "$T/nats.$i.log" >&2; exit 1; }
}

# nats_srv_kill I: SIGKILL of cluster server I (no goodbye to its peers or
# clients).
nats_srv_kill() { kill -9 "${NSRV_PID[$1]}"; wait "${NSRV_PID[$1]}" 2>/dev/null; }

# jsz I: server I's JetStream report with every stream (monitoring port).
jsz() { curl -s -m 5 "http://127.0.0.1:${MPORT[$1]}/jsz?accounts=true&streams=true"; }

# stream_info I: "LEADER LAST_SEQ" of the bucket's stream (KV_pfi) as
# server I reports it (its own replica's last sequence); nothing when it
# has none or does not answer.
stream_info() {
  jsz "$1" | jq -r '.account_details[]?.stream_detail[]? | select(.name == "KV_pfi") |
    "\(.cluster.leader // "-") \(.state.last_seq)"' 2>/dev/null
}

# stream_leader: the index of the server that leads the bucket's stream,
# as the first live server reports it; nothing while there is none.
stream_leader() {
  local i l
  for ((i = 0; i < NATS_N; i++)); do
    kill -0 "${NSRV_PID[i]}" 2>/dev/null || continue
    l=$(stream_info "$i" | awk '{print $1}')
    case $l in s[0-9]*) echo "${l#s}"; return 0 ;; esac
  done
  return 1
}

setup_nats() { # setup_nats NODE...
  NATS_PORT=$(free_port)
  NATS_URL="$NATS_SCHEME://127.0.0.1:$NATS_PORT"
  nats_config "$@"
  nats_start
}

# nats_auth WHO (pfid or a node's name): sets the array NATS_AUTH to the
# options that make WHO known to NATS, for agent_start and pfid_start: its
# password file (the users of nats_users). A test of other accounts or of
# TLS redefines it.
nats_auth() { NATS_AUTH=(--password-file "$T/pw.$1" "${NATS_TLS[@]}"); }

# agent_start NODE GPUS [options...]: an emulated agent in real time with
# its own emulator state $T/emu.NODE, record $T/agent.NODE.db. PID in
# AGENT_PID[NODE].
declare -A AGENT_PID
agent_start() {
  local n=$1 g=$2
  shift 2
  mkdir -p "$T/emu.$n"
  nats_auth "$n"
  PFI_LOCK_DIR= "$PFI_AGENT" --node "$n" --nats "$NATS_URL" "${NATS_AUTH[@]}" \
    --emulate --params "gpus=$g,state=$T/emu.$n" --record "$T/agent.$n.db" \
    --period "${AGENT_PERIOD:-0.5}" "$@" >>"$T/agent.$n.log" 2>&1 &
  AGENT_PID[$n]=$!
  PIDS+=("$!")
}

# pfid_start ID [options...]: PID in PFID_PID[ID], API port in API[ID].
declare -A PFID_PID API
pfid_start() {
  local id=$1
  shift
  [ -f "$T/token" ] || secret "$T/token"
  API[$id]=$(free_port)
  nats_auth pfid
  "$PFID" --id "$id" --nats "$NATS_URL" "${NATS_AUTH[@]}" \
    --records "$T/records.db" --api "127.0.0.1:${API[$id]}" --token-file "$T/token" "${API_TLS[@]}" \
    --period "${PFID_PERIOD:-0.5}" --lease "${LEASE:-3}" --leader-lease "${LEADER_LEASE:-1.5}" \
    --stale "${STALE:-2}" "$@" >>"$T/pfid.$id.log" 2>&1 &
  PFID_PID[$id]=$!
  PIDS+=("$!")
}

api() { # api ID METHOD PATH [BODY]: prints the body, HTTP code in $T/code
  local id=$1 m=$2 p=$3
  shift 3
  curl "${CURL_TLS[@]}" -s -m 5 -o "$T/body" -w '%{http_code}' -X "$m" \
    -H "Authorization: Bearer $(cat "$T/token")" ${1:+--data-binary "$1"} \
    "$(api_url "$id")$p" >"$T/code" || echo 000 >"$T/code"
  cat "$T/body" 2>/dev/null
}

# caps NODE: the GPUs' power limits in W as the emulator holds them, "a,b".
caps() {
  timeout 20 "$PFI" devices --backend emu --params "state=$T/emu.$1,gpus=${2:-2}" --format csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "cap_w") c = i; next }
             { printf "%s%g", (NR > 2 ? "," : ""), $c } END { print "" }'
}

# until_true SECONDS CMD...: runs CMD every 0.2 s until it succeeds; 1 when
# it never did within SECONDS (a bound against hangs, not a timing check).
until_true() {
  local end=$(($(date +%s) + $1))
  shift
  while ! "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.2
  done
}

caps_are() { [ "$(caps "$1" "${3:-2}")" = "$2" ]; }

now() { date +%s.%N; }

# event ID START_OFFSET_S END_OFFSET_S TARGET_W: an event message.
event_json() {
  awk -v id="$1" -v a="$2" -v b="$3" -v w="$4" -v t="$(now)" \
    'BEGIN { printf "{\"v\":1,\"id\":\"%s\",\"start\":%.3f,\"end\":%.3f,\"target_w\":%g}", id, t + a, t + b, w }'
}

sql() { timeout 20 sqlite3 -cmd '.timeout 5000' "$@"; }

# tput_writer FILE RATE: a training job's reports, one line with the time
# ("t") and RATE tokens/s appended to FILE every 0.5 s in the background
# (pfi-agent takes a line older than --tput-max-age for no throughput). One
# writer a file; PID in TPUT_WRITER[FILE].
declare -A TPUT_WRITER
tput_writer() {
  [ -n "${TPUT_WRITER[$1]:-}" ] && kill -0 "${TPUT_WRITER[$1]}" 2>/dev/null && return 0
  (while :; do
    echo "{\"t\": $(date +%s.%N), \"tokens_per_s\": $2}" >>"$1"
    sleep 0.5
  done) &
  TPUT_WRITER[$1]=$!
  PIDS+=("$!")
}

# load_agent_start NODE JOB [agent options...]: an agent on the nvml
# backend over the fake libnvidia-ml of tests/fake-nvml on the emulator,
# its two GPUs running a 2-GPU training workload (test-load, a job library
# of one job written here), so that they draw power and caps matter; the
# job named by the Slurm prolog's files ($T/map.NODE), its throughput by
# its lines ($T/tput.NODE: 2,000 tokens/s whatever its caps, written on by
# tput_writer). PID in
# AGENT_PID[NODE].
load_agent_start() {
  local n=$1 job=$2
  shift 2
  [ -f "$T/jobs.csv" ] || cat >"$T/jobs.csv" <<EOS
id,source,profile,arch,task,model,variant,gpus,grid,caps,params_b,active_b,seq_len,tokens_per_step,fb_gib,mem_share,comm_share,sm_power_w,mem_sm_weight,pfi_published,pfi_coarse_published
test-load,emulated,h200,dense,pt,test-8b,v1,2,fine,200;300;400;500;600;700,8,8,4096,1048576,60,0.3,0.1,400,0.3,,
EOS
  mkdir -p "$T/map.$n" "$T/tput.$n" "$T/emu.$n"
  echo "$job" >"$T/map.$n/0"; echo "$job" >"$T/map.$n/1"
  tput_writer "$T/tput.$n/$job.jsonl" 2000
  PFI_LOCK_DIR= PFI_NVML_LIB="${PFI_BUILD_DIR:?}/fake-nvml/libnvidia-ml.so.1" PFI_EMU_STATE="$T/emu.$n" \
    PFI_FAKE_NVML_EMU="gpus=2,state=$T/emu.$n${FAKE_NVML_EMU:+,$FAKE_NVML_EMU}" PFI_FAKE_NVML_JOBS="$T/jobs.csv" \
    PFI_FAKE_NVML_JOB=test-load PFI_FAKE_NVML_AT="${FAKE_NVML_AT:-300}" \
    "$PFI_AGENT" --node "$n" --nats "$NATS_URL" --password-file "$T/pw.$n" "${NATS_TLS[@]}" --backend nvml \
    --record "$T/agent.$n.db" --period 0.5 --jobmap-dir "$T/map.$n" --tput-dir "$T/tput.$n" \
    "$@" >>"$T/agent.$n.log" 2>&1 &
  AGENT_PID[$n]=$!
  PIDS+=("$!")
}

# nats_req I SUBJECT [BODY]: a request as admin to cluster server I in
# NATS's own text protocol (the tests need no NATS tool); prints the
# answer's payload, nothing when none came within 5 s.
nats_req() {
  local fd line n body=${3:-} ans
  exec {fd}<>"/dev/tcp/127.0.0.1/${NPORT[$1]}" || return 1
  read -r -t 5 line <&"$fd" # INFO
  printf 'CONNECT {"user":"admin","pass":"%s","verbose":false,"pedantic":false}\r\nSUB _INBOX.req 1\r\nPUB %s _INBOX.req %d\r\n%s\r\nPING\r\n' \
    "$(cat "$T/pw.admin")" "$2" "${#body}" "$body" >&"$fd"
  while read -r -t 5 line <&"$fd"; do
    line=${line%$'\r'}
    case $line in
    PING) printf 'PONG\r\n' >&"$fd" ;;
    MSG*) n=${line##* }; read -r -t 5 -N "$n" ans <&"$fd"; echo "$ans"; break ;;
    -ERR*) echo "$line" >&2; break ;;
    esac
  done
  exec {fd}>&-
}

# conn_server USER: the index of the cluster server USER (pfid, agent-n1)
# is connected to, as the servers' monitoring ports say (/connz).
conn_server() {
  local i
  for ((i = 0; i < NATS_N; i++)); do
    kill -0 "${NSRV_PID[i]}" 2>/dev/null || continue
    curl -s -m 5 "http://127.0.0.1:${MPORT[i]}/connz?auth=true" |
      jq -e --arg u "$1" 'any(.connections[]?; .authorized_user == $u)' >/dev/null &&
      { echo "$i"; return 0; }
  done
  return 1
}

# stream_leader_to I: asks the bucket's stream's leader to step down
# until server I leads it (each step-down elects one of the others); 1
# when it did not within 15 tries.
stream_leader_to() {
  local k l
  for k in $(seq 15); do
    until_true 20 stream_leader >/dev/null || return 1
    l=$(stream_leader)
    [ "$l" = "$1" ] && return 0
    nats_req "$l" '$JS.API.STREAM.LEADER.STEPDOWN.KV_pfi' >/dev/null
    moved() { local x; x=$(stream_leader) && [ "$x" != "$1" ]; }
    until_true 20 moved "$l" || return 1
  done
  return 1
}

# ---- TLS and NATS accounts (docs/fleet.md "Security") ----------------------

# tls_ca NAME: a CA made now, $T/NAME.pem and its key $T/NAME.key.
tls_ca() {
  (umask 077
   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
     -subj "/CN=$1" -keyout "$T/$1.key" -out "$T/$1.pem" \
     -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign) \
    >>"$T/openssl.log" 2>&1 || { fail "openssl: CA $1"; cat "$T/openssl.log" >&2; exit 1; }
}

# tls_cert NAME CA SAN: a certificate for NAME signed by CA (tls_ca), for
# servers and clients both, subjectAltName SAN ("DNS:localhost,IP:127.0.0.1");
# CA "self" signs it with its own key. $T/NAME.pem, key $T/NAME.key (0600).
tls_cert() {
  local n=$1 ca=$2 san=$3
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' \
    "$san" >"$T/$n.ext"
  (umask 077
   if [ "$ca" = self ]; then
     openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
       -subj "/CN=$n" -keyout "$T/$n.key" -out "$T/$n.pem" -addext "subjectAltName=$san"
   else
     openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" \
       -keyout "$T/$n.key" -out "$T/$n.csr" &&
       openssl x509 -req -in "$T/$n.csr" -CA "$T/$ca.pem" -CAkey "$T/$ca.key" \
         -CAcreateserial -days 2 -extfile "$T/$n.ext" -out "$T/$n.pem"
   fi) >>"$T/openssl.log" 2>&1 || { fail "openssl: certificate $n"; cat "$T/openssl.log" >&2; exit 1; }
}

# nkey_user NAME: an nkey user made now, encoded as NATS's nkeys are (the
# seed: prefix bytes of a user seed, the 32-byte Ed25519 seed, CRC-16/XMODEM
# little-endian, base32 without padding; the public key: prefix 'U' (20 <<
# 3), the 32-byte public key, its CRC): the seed in $T/NAME.nk (0600), the
# public key in $T/NAME.pub. The server checks both (a seed that does not
# decode cannot sign, a public key with a bad CRC is refused by its config).
nkey_user() {
  python3 - "$T/$1" <<'PY' || { fail "nkey_user $1"; exit 1; }
import base64, os, sys
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
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
k = Ed25519PrivateKey.generate()
seed = k.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption())
pub = k.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
SEED, USER = 18 << 3, 20 << 3
s, p = enc(bytes([SEED | USER >> 5, (USER & 31) << 3]) + seed), enc(bytes([USER]) + pub)
assert len(s) == 58 and s.startswith("SU") and len(p) == 56 and p.startswith("U")
fd = os.open(sys.argv[1] + ".nk", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, (s + "\n").encode())
os.close(fd)
open(sys.argv[1] + ".pub", "w").write(p + "\n")
PY
}
