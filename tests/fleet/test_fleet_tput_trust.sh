#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# What a local user can do through the agent's throughput socket.
# Agent n1: job slurm-8 on GPU 0, slurm-9 on GPU 1 (mapping files
# as the Slurm prolog writes them, root's), slurm-9's throughput file written
# on at 1e16 tokens/s, above what pfid takes (1e15). Checked: the node's
# telemetry is taken by pfid throughout (never stale, no bad telemetry
# counted), slurm-9's throughput unknown and slurm-8's as posted; a post of
# 1e16 is 400 and changes nothing; uid nobody, in no job, is refused for
# slurm-8 (403); once slurm-9's mapping file is nobody's (the prolog gives
# it to the job's user) nobody may post for slurm-9.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to post as uid nobody)"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }

setup_nats n1
mkdir -p "$T/map" "$T/tput"
echo slurm-8 >"$T/map/0"; echo slurm-9 >"$T/map/1"
tput_writer "$T/tput/slurm-9.jsonl" 1e16
agent_start n1 2 --jobmap-dir "$T/map" --tput-dir "$T/tput" --tput-listen "unix:$T/tput.sock"
pfid_start a
chmod 711 "$T" # nobody reaches the socket (mode 0666) through it
until_true 20 test -S "$T/tput.sock" || { fail "no socket $T/tput.sock"; exit 1; }

post() { # post USER JOB BODY: the HTTP code; the body in $T/pbody
  local u=$1
  shift
  if [ "$u" = root ]; then
    curl -s -m 5 --unix-socket "$T/tput.sock" -o "$T/pbody" -w '%{http_code}' -X POST \
      --data-binary "$2" "http://localhost/v1/jobs/$1/throughput"
  else
    setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups \
      curl -s -m 5 --unix-socket "$T/tput.sock" -o /dev/null -w '%{http_code}' -X POST \
      --data-binary "$2" "http://localhost/v1/jobs/$1/throughput"
  fi
}
job_rate() { # job_rate JOB: its tokens_per_s in pfid's /v1/jobs ("none" when absent)
  api a GET /v1/jobs | python3 -c '
import json, sys
for j in json.load(sys.stdin):
    if j["job"] == sys.argv[1]:
        print("%g" % j["tokens_per_s"] if "tokens_per_s" in j else "none")' "$1"
}
healthy() { # the node live and not stale, no telemetry refused
  api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0' &&
    [ "$(api a GET /metrics | awk '$1 == "pfi_pfid_bad_telemetry_total" { print $2 }')" = 0 ]
}
until_true 30 healthy || fail "n1 not live with slurm-9's file at 1e16: $(api a GET /v1/status)"
until_true 10 eval '[ "$(job_rate slurm-9)" = none ]' || fail "slurm-9's throughput '$(job_rate slurm-9)', expected none (1e16 left out)"

code=$(post root slurm-8 '{"tokens_per_s": 1234.5}')
[ "$code" = 200 ] || fail "root posting for slurm-8: HTTP $code $(cat "$T/pbody")"
until_true 10 eval '[ "$(job_rate slurm-8)" = 1234.5 ]' || fail "slurm-8's throughput '$(job_rate slurm-8)', expected 1234.5"
code=$(post root slurm-8 '{"tokens_per_s": 1e16}')
[ "$code" = 400 ] || fail "a post of 1e16 tokens/s: HTTP $code, expected 400"
grep -q 'tokens_per_s' "$T/pbody" || fail "the 400 names no field: $(cat "$T/pbody")"
# The rate posted before stays (a post is fresh for 10 s; two of pfid's
# periods for the refused post to have shown).
sleep 1
[ "$(job_rate slurm-8)" = 1234.5 ] || fail "slurm-8's throughput $(job_rate slurm-8) after the refused post"
code=$(post nobody slurm-8 '{"tokens_per_s": 5}')
[ "$code" = 403 ] || fail "nobody posting for slurm-8: HTTP $code, expected 403"
chown nobody "$T/map/1"
code=$(post nobody slurm-9 '{"tokens_per_s": 77}')
[ "$code" = 200 ] || fail "nobody posting for slurm-9 (its mapping file nobody's): HTTP $code"
code=$(post nobody slurm-9 '{"tokens_per_s": 1e16}')
[ "$code" = 400 ] || fail "nobody posting 1e16 for slurm-9: HTTP $code, expected 400"
until_true 10 eval '[ "$(job_rate slurm-9)" = 77 ]' || fail "slurm-9's throughput '$(job_rate slurm-9)', expected 77: $(api a GET /v1/jobs)"
# Over the next 4 s (2 of pfid's --stale): the node never stale.
stop=$(($(date +%s) + 4))
while [ "$(date +%s)" -lt "$stop" ]; do
  healthy || { fail "n1 stale or its telemetry refused: $(api a GET /v1/status)"; break; }
  sleep 0.5
done
[ "$fails" = 0 ] || { tail -n 15 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet throughput trust: ok"
