#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid's API stays served while a local user floods or trickles at it
# (docs/security.md "Bounded endpoints"; include/pfi/http.h): another
# local user (nobody, through setpriv) opens 600 idle connections, of which
# the server keeps PFI_HTTP_PER_CLIENT (16) and shuts the rest down as
# they come; then 16 connections trickling a header byte a second, each
# shut down once past PFI_HTTP_DEADLINE_S (10 s) though never idle. Both
# from 127.0.0.1, as root's own requests, which keep being answered
# meanwhile (status 200, an event submitted 201). Needs root (to be two
# users).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null ||
  { echo "SKIP: needs root and setpriv (two local users)"; exit 77; }
setup_nats
pfid_start a
up() { api a GET /v1/status | grep -q '"id":"a"'; }
until_true 30 up || fail "pfid a: no status"
CLIENT="$(cd "$(dirname "$0")" && pwd)/slow_client.py"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
# python3 as a system path: a per-user one (pyenv under /root) is not
# nobody's to run.
PY=/usr/bin/python3
nobody "$PY" -c "import sys" || { echo "SKIP: nobody cannot run $PY"; exit 77; }

# served N: N requests as root, each answered 200 (a bound of 5 s each).
served() {
  local i
  for i in $(seq "$1"); do
    api a GET /v1/status >/dev/null
    [ "$(cat "$T/code")" = 200 ] || { echo "GET $i: HTTP $(cat "$T/code")"; return 1; }
  done
}

# The flood: 600 idle connections held for 8 s.
nobody "$PY" "$CLIENT" 127.0.0.1 "${API[a]}" idle 600 8 >"$T/flood.json" &
FLOOD=$!
sleep 3
served 20 >"$T/served" || fail "during the flood: $(cat "$T/served")"
api a POST /v1/events "$(event_json ev1 3600 7200 1000)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST during the flood: HTTP $(cat "$T/code")"
wait "$FLOOD"
# 600 opened; 584 shut down by the server as it accepted them (before any
# deadline: under 10 s, however slowly a loaded machine accepts), 16 kept
# (idle for the client's 8 s, under the 10 s deadline).
jq -e '.n == 600 and .open == 16 and (.closed_s | length == 584) and
  all(.closed_s[]; . < 10)' "$T/flood.json" >/dev/null ||
  fail "flood: $(cat "$T/flood.json"), expected 600 opened, 584 shut within 10 s, 16 open"

# The trickle: 16 connections, a byte a second each, for up to 25 s.
nobody "$PY" "$CLIENT" 127.0.0.1 "${API[a]}" trickle 16 25 >"$T/trickle.json" &
SLOW=$!
sleep 3
served 10 >"$T/served" || fail "during the trickle: $(cat "$T/served")"
wait "$SLOW"
# Every one shut down after its 10 s deadline (the reaper looks every
# 0.2 s) and well before the 25 s the client would have gone on; none
# lasted less (idle 1 s at most, under the 10 s idle timeout).
jq -e '.n == 16 and .open == 0 and (.closed_s | length == 16) and
  all(.closed_s[]; . >= 10 and . < 20)' "$T/trickle.json" >/dev/null ||
  fail "trickle: $(cat "$T/trickle.json"), expected 16 closed after 10..20 s"
served 5 >"$T/served" || fail "after the trickle: $(cat "$T/served")"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet slow clients: ok"
