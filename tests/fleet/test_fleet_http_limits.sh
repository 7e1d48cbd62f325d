#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The HTTP bounds as options (docs/security.md "Bounded endpoints"), each
# lowered from its default and seen to take effect:
# - pfid --max-conn-per-client 2: of 3 idle connections another local
#   user (nobody, through setpriv) opens, the 3rd is shut down as it is
#   accepted and 2 stay, while root's requests (another client) are
#   answered; with the default (16) all 3 stay.
# - pfid --request-deadline 3s: those 2 are shut down after 3 s, not the
#   default 10 s (the client holds them 8 s).
# - pfi-agent --max-conn-per-client 1 on --tput-listen: of 2 idle
#   connections 1 stays; --tput-burst 3 --tput-rate 0.01: 3 reports of a
#   job pass, the 4th is 429 naming the rate and burst (no token comes
#   back in the test's time: 0.01 a second), while the default burst (40)
#   takes 4.
# Out-of-range values are refused at start, exit 2, naming the option.
# Needs root (to be two users).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null ||
  { echo "SKIP: needs root and setpriv (two local users)"; exit 77; }
PY=/usr/bin/python3
CLIENT="$(cd "$(dirname "$0")" && pwd)/slow_client.py"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
nobody "$PY" -c "import sys" || { echo "SKIP: nobody cannot run $PY"; exit 77; }

# Refused values, before anything starts.
bad() { # bad PROGRAM OPTION VALUE EXPECTED
  "$1" "$2" "$3" --help >"$T/o" 2>&1
  local rc=$?
  [ "$rc" = 2 ] && grep -qF -- "$4" "$T/o" || fail "$1 $2 $3: exit $rc, $(cat "$T/o")"
}
bad "$PFID" --max-conn-per-client 0 "--max-conn-per-client: '0'"
bad "$PFID" --request-deadline 0.5s "--request-deadline: '0.5s'"
bad "$PFI_AGENT" --max-conn-per-client 257 "--max-conn-per-client: '257'"
bad "$PFI_AGENT" --tput-burst 0.5 "--tput-burst: '0.5'"
bad "$PFI_AGENT" --tput-rate 0 "--tput-rate: '0'"

setup_nats n1
pfid_start a --max-conn-per-client 2 --request-deadline 3s
pfid_start b
up() { api "$1" GET /v1/status | grep -q "\"id\":\"$1\""; }
until_true 30 up a || fail "pfid a: no status"
until_true 30 up b || fail "pfid b: no status"

# served ID N: N requests as root, each answered 200 (a bound of 5 s each).
served() {
  local i
  for i in $(seq "$2"); do
    api "$1" GET /v1/status >/dev/null
    [ "$(cat "$T/code")" = 200 ] || { echo "GET $i: HTTP $(cat "$T/code")"; return 1; }
  done
}

# 3 idle connections held 2.5 s: 2 kept, 1 shut down (within the 2.5 s,
# before any deadline); root is served meanwhile.
nobody "$PY" "$CLIENT" 127.0.0.1 "${API[a]}" idle 3 2.5 >"$T/a3.json" &
P=$!
sleep 1
served a 5 >"$T/served" || fail "pfid a, 3 idle connections of nobody: $(cat "$T/served")"
api a POST /v1/events "$(event_json ev1 3600 7200 1000)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST beside nobody's connections: HTTP $(cat "$T/code")"
wait "$P"
jq -e '.n == 3 and .open == 2 and (.closed_s | length == 1)' "$T/a3.json" >/dev/null ||
  fail "--max-conn-per-client 2: $(cat "$T/a3.json"), expected 3 opened, 1 shut, 2 open"
# The default, 16: all 3 stay.
nobody "$PY" "$CLIENT" 127.0.0.1 "${API[b]}" idle 3 2.5 >"$T/b3.json"
jq -e '.n == 3 and .open == 3' "$T/b3.json" >/dev/null ||
  fail "the default per-client limit: $(cat "$T/b3.json"), expected 3 open"

# The deadline: 2 idle connections held up to 8 s, each shut down after
# its 3 s (the reaper looks every 0.2 s), well before the 8 s and before
# the 10 s idle timeout.
nobody "$PY" "$CLIENT" 127.0.0.1 "${API[a]}" idle 2 8 >"$T/a2.json"
jq -e '.n == 2 and .open == 0 and (.closed_s | length == 2) and
  all(.closed_s[]; . >= 3 and . < 8)' "$T/a2.json" >/dev/null ||
  fail "--request-deadline 3s: $(cat "$T/a2.json"), expected 2 shut after 3..8 s"
served a 3 >"$T/served" || fail "pfid a after: $(cat "$T/served")"

# The agent's throughput endpoint on loopback TCP (the poster is not
# checked there): job slurm-5 on GPU 0.
mkdir -p "$T/map"
echo slurm-5 >"$T/map/0"
P1=$(free_port) P2=$(free_port)
agent_start n1 2 --jobmap-dir "$T/map" --tput-listen "127.0.0.1:$P1" \
  --max-conn-per-client 1 --tput-burst 3 --tput-rate 0.01
post() { # post PORT BODY: HTTP code in $T/code, body printed
  curl -s -m 5 -o "$T/tbody" -w '%{http_code}' -X POST --data-binary "$2" \
    "http://127.0.0.1:$1/v1/jobs/slurm-5/throughput" >"$T/code" || echo 000 >"$T/code"
  cat "$T/tbody"
}
ready() { post "$P1" '{"tokens_per_s": 1}' >/dev/null; [ "$(cat "$T/code")" = 200 ]; }
until_true 30 ready || fail "pfi-agent --tput-listen: HTTP $(cat "$T/code") $(cat "$T/tbody")"
# (that was the 1st of the burst of 3)
for i in 2 3; do
  post "$P1" "{\"tokens_per_s\": $i}" >/dev/null
  [ "$(cat "$T/code")" = 200 ] || fail "report $i of a burst of 3: HTTP $(cat "$T/code") $(cat "$T/tbody")"
done
b=$(post "$P1" '{"tokens_per_s": 4}')
[ "$(cat "$T/code")" = 429 ] || fail "report 4 beyond --tput-burst 3: HTTP $(cat "$T/code") $b"
case "$b" in *'more than 0.01 reports a second (a burst of 3)'*) ;; *) fail "429's reason: $b" ;; esac
nobody "$PY" "$CLIENT" 127.0.0.1 "$P1" idle 2 2 >"$T/t2.json"
jq -e '.n == 2 and .open == 1 and (.closed_s | length == 1)' "$T/t2.json" >/dev/null ||
  fail "pfi-agent --max-conn-per-client 1: $(cat "$T/t2.json"), expected 1 shut, 1 open"
# The same agent with the defaults (a burst of 40, 16 connections).
kill "${AGENT_PID[n1]}"
wait "${AGENT_PID[n1]}" 2>/dev/null
agent_start n1 2 --jobmap-dir "$T/map" --tput-listen "127.0.0.1:$P2"
ready2() { post "$P2" '{"tokens_per_s": 1}' >/dev/null; [ "$(cat "$T/code")" = 200 ]; }
until_true 30 ready2 || fail "pfi-agent defaults: HTTP $(cat "$T/code") $(cat "$T/tbody")"
for i in 2 3 4; do
  post "$P2" "{\"tokens_per_s\": $i}" >/dev/null
  [ "$(cat "$T/code")" = 200 ] || fail "report $i with the default burst (40): HTTP $(cat "$T/code") $(cat "$T/tbody")"
done
nobody "$PY" "$CLIENT" 127.0.0.1 "$P2" idle 2 2 >"$T/t2d.json"
jq -e '.n == 2 and .open == 2' "$T/t2d.json" >/dev/null ||
  fail "pfi-agent's default per-client limit: $(cat "$T/t2d.json"), expected 2 open"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet http limits: ok"
