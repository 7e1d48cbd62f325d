#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The agent's throughput endpoint (--tput-listen): a trainer POSTs one line
# of the throughput protocol to /v1/jobs/JOB/throughput, on a Unix socket
# (n1) or loopback TCP (n2). The rate (tokens_per_s, or cumulative tokens
# between two posts) is the job's throughput in the agent's telemetry and
# /metrics; a malformed report is 400 located at body:LINE:COLUMN, two
# lines 400, a job not on the node 404, another method 405, a body over
# 64 KiB 413, and nothing changes.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2
for n in n1 n2; do mkdir -p "$T/map.$n"; done
echo slurm-8 >"$T/map.n1/0"; echo slurm-8 >"$T/map.n1/1"
echo slurm-9 >"$T/map.n2/1"
M1=$(free_port) M2=$(free_port) P2=$(free_port)
agent_start n1 2 --jobmap-dir "$T/map.n1" --metrics "127.0.0.1:$M1" --tput-listen "unix:$T/tput.sock"
agent_start n2 2 --jobmap-dir "$T/map.n2" --metrics "127.0.0.1:$M2" --tput-listen "127.0.0.1:$P2"
until_true 20 test -S "$T/tput.sock" || { fail "no socket $T/tput.sock"; exit 1; }
[ "$(stat -c %a "$T/tput.sock")" = 666 ] || fail "socket mode $(stat -c %a "$T/tput.sock")"

post1() { # post1 JOB BODY: over the Unix socket; the body printed, code in $T/code
  curl -s -m 5 --unix-socket "$T/tput.sock" -o "$T/body" -w '%{http_code}' -X POST \
    --data-binary "$2" "http://localhost/v1/jobs/$1/throughput" >"$T/code" || echo 000 >"$T/code"
  cat "$T/body"
}
rate() { # rate METRICS_PORT NODE JOB: the job's series on the agent's /metrics
  curl -s -m 5 "http://127.0.0.1:$1/metrics" |
    awk -v k="pfi_job_throughput_tokens_per_second{node=\"$2\",job=\"$3\"}" '$1 == k { print $2 }'
}
b=$(post1 slurm-8 '{"t": 1, "tokens_per_s": 1234.5}')
[ "$(cat "$T/code")" = 200 ] || fail "POST tokens_per_s: HTTP $(cat "$T/code") $b"
[ "$b" = '{"job":"slurm-8","tokens_per_s":1234.5}' ] || fail "reply '$b'"
until_true 10 eval '[ "$(rate $M1 n1 slurm-8)" = 1234.5 ]' || fail "n1 /metrics rate '$(rate $M1 n1 slurm-8)', expected 1234.5"

# Cumulative tokens: the first gives no rate, the second 8,000 tokens over
# 4 s = 2,000 tokens/s.
b=$(post1 slurm-8 '{"t": 10, "tokens": 1000}')
[ "$b" = '{"job":"slurm-8","tokens_per_s":null}' ] || fail "first cumulative: '$b'"
b=$(post1 slurm-8 '{"t": 14, "tokens": 9000}')
[ "$b" = '{"job":"slurm-8","tokens_per_s":2000}' ] || fail "second cumulative: '$b'"
until_true 10 eval '[ "$(rate $M1 n1 slurm-8)" = 2000 ]' || fail "n1 rate '$(rate $M1 n1 slurm-8)', expected 2000"

# Refusals; the rate stays.
b=$(post1 slurm-8 '{"t": 15, "tokens_per_s": "fast"}')
[ "$(cat "$T/code")" = 400 ] || fail "a string rate: HTTP $(cat "$T/code")"
case "$b" in *'body:1:'*) ;; *) fail "not located: '$b'" ;; esac
b=$(post1 slurm-8 "$(printf '{"tokens_per_s": 1}\n{"tokens_per_s": 2}')")
[ "$(cat "$T/code")" = 400 ] || fail "two lines: HTTP $(cat "$T/code")"
case "$b" in *'body:2'*) ;; *) fail "two lines not located: '$b'" ;; esac
b=$(post1 slurm-8 '')
[ "$(cat "$T/code")" = 400 ] || fail "empty body: HTTP $(cat "$T/code") '$b'"
b=$(post1 slurm-9 '{"tokens_per_s": 1}')
[ "$(cat "$T/code")" = 404 ] || fail "a job of another node: HTTP $(cat "$T/code")"
b=$(post1 'a.b' '{"tokens_per_s": 1}')
[ "$(cat "$T/code")" = 404 ] || fail "a bad job id: HTTP $(cat "$T/code")"
code=$(curl -s -m 5 --unix-socket "$T/tput.sock" -o /dev/null -w '%{http_code}' \
  "http://localhost/v1/jobs/slurm-8/throughput")
[ "$code" = 405 ] || fail "GET: HTTP $code, expected 405"
code=$(curl -s -m 5 --unix-socket "$T/tput.sock" -o /dev/null -w '%{http_code}' -X POST \
  --data-binary x "http://localhost/metrics")
[ "$code" = 404 ] || fail "another path: HTTP $code, expected 404"
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big"
code=$(curl -s -m 5 --unix-socket "$T/tput.sock" -o /dev/null -w '%{http_code}' -X POST \
  --data-binary @"$T/big" "http://localhost/v1/jobs/slurm-8/throughput")
[ "$code" = 413 ] || fail "70,000 bytes: HTTP $code, expected 413"
[ "$(rate $M1 n1 slurm-8)" = 2000 ] || fail "a refused post changed the rate: $(rate $M1 n1 slurm-8)"

# Loopback TCP on n2.
b=$(curl -s -m 5 -X POST --data-binary '{"elapsed_s": 3, "tokens_per_s": 321}' \
  "http://127.0.0.1:$P2/v1/jobs/slurm-9/throughput")
[ "$b" = '{"job":"slurm-9","tokens_per_s":321}' ] || fail "TCP post: '$b'"
until_true 10 eval '[ "$(rate $M2 n2 slurm-9)" = 321 ]' || fail "n2 rate '$(rate $M2 n2 slurm-9)', expected 321"

# A stopped agent removes its socket.
kill "${AGENT_PID[n1]}"; wait "${AGENT_PID[n1]}" 2>/dev/null
[ ! -e "$T/tput.sock" ] || fail "socket left after exit"
# A path that is not a socket is never replaced: the agent stops, saying so.
echo keep >"$T/notsock"
PFI_LOCK_DIR= timeout 20 "$PFI_AGENT" --node n1 --nats "$NATS_URL" --password-file "$T/pw.n1" \
  --emulate --params "gpus=2,state=$T/emu.n1" --record "$T/agent.n1.db" \
  --tput-listen "unix:$T/notsock" >"$T/notsock.log" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "agent on a regular file's path: exit $rc, expected 1"
grep -q "unix:$T/notsock exists and is not a socket" "$T/notsock.log" || fail "message: $(cat "$T/notsock.log")"
[ "$(cat "$T/notsock")" = keep ] || fail "the file was touched"
[ "$fails" = 0 ] || exit 1
echo "throughput endpoint: ok"
