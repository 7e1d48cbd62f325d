#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# POST /v1/events refuses an event longer than --event-max (default 48 h),
# one starting more than --event-ahead after now (default 7 days) and a
# field it does not know, 400 naming the field, and nothing is stored;
# events inside the bounds are taken (201). pfi ctl submit exits 2 on them.
. "$(dirname "$0")/lib.sh"
setup_nats
pfid_start a
up() { api a GET /v1/status | grep -q '"leader"'; }
until_true 30 up || fail "pfid: no status"

post() { # post BODY EXPECTED_CODE [NEEDLE]
  api a POST /v1/events "$1" >"$T/resp"
  [ "$(cat "$T/code")" = "$2" ] || fail "$1: HTTP $(cat "$T/code"), expected $2: $(cat "$T/resp")"
  [ -z "${3:-}" ] || grep -qF -- "$3" "$T/resp" || fail "$1: '$(cat "$T/resp")' lacks '$3'"
}
t=$(date +%s)
# The year 5138 (end 1e11), accepted before.
post "{\"v\":1,\"id\":\"far\",\"start\":$((t + 60)),\"end\":100000000000,\"target_w\":1000}" 400 \
  'field \"end\": the event lasts'
post "{\"v\":1,\"id\":\"long\",\"start\":$((t + 60)),\"end\":$((t + 60 + 48 * 3600 + 1)),\"target_w\":1000}" 400 \
  'more than 172800 s (pfid --event-max)'
post "{\"v\":1,\"id\":\"ahead\",\"start\":$((t + 8 * 86400)),\"end\":$((t + 8 * 86400 + 60)),\"target_w\":1000}" 400 \
  'field \"start\"'
post "{\"v\":1,\"id\":\"typo\",\"start\":$((t + 60)),\"end\":$((t + 120)),\"target_w\":1000,\"taget_w\":5}" 400 \
  'field \"taget_w\": unknown'
[ "$(api a GET /v1/events)" = "[]" ] || fail "a refused event was stored: $(cat "$T/body")"
# Inside the bounds: exactly 48 h long, starting 6 days ahead; and every
# field the bridge sends.
post "{\"v\":1,\"id\":\"ok1\",\"start\":$((t + 6 * 86400)),\"end\":$((t + 6 * 86400 + 48 * 3600)),\"target_w\":1000}" 201
post "{\"v\":1,\"id\":\"ok2\",\"start\":$((t + 60)),\"end\":$((t + 120)),\"target_w\":1000,\"known\":$t,\"level\":\"gpu\",\"cancelled\":false}" 201
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/token" \
  submit far2 $((t + 60)) 100000000000 1000 >"$T/ctl.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'event-max' "$T/ctl.out" || fail "pfi ctl submit of 3,000 years: exit $rc, $(cat "$T/ctl.out")"

# Configured bounds.
pfid_start b --event-max 1h --event-ahead 10m
upb() { api b GET /v1/status | grep -q '"leader"'; }
until_true 30 upb || fail "pfid b: no status"
api b POST /v1/events "{\"v\":1,\"id\":\"b1\",\"start\":$((t + 60)),\"end\":$((t + 60 + 3601)),\"target_w\":1000}" >"$T/resp"
[ "$(cat "$T/code")" = 400 ] && grep -qF 'field \"end\": the event lasts 3601 s, more than 3600 s (pfid --event-max)' "$T/resp" ||
  fail "--event-max 1h: HTTP $(cat "$T/code") $(cat "$T/resp")"
api b POST /v1/events "{\"v\":1,\"id\":\"b2\",\"start\":$((t + 900)),\"end\":$((t + 960)),\"target_w\":1000}" >"$T/resp"
[ "$(cat "$T/code")" = 400 ] && grep -qF 'field \"start\":' "$T/resp" && grep -qF 'more than 600 s ahead (pfid --event-ahead)' "$T/resp" ||
  fail "--event-ahead 10m: HTTP $(cat "$T/code") $(cat "$T/resp")"
# Inside b's bounds: taken.
api b POST /v1/events "{\"v\":1,\"id\":\"b3\",\"start\":$((t + 300)),\"end\":$((t + 300 + 3600)),\"target_w\":1000}" >"$T/resp"
[ "$(cat "$T/code")" = 201 ] || fail "b3 inside --event-max 1h and --event-ahead 10m: HTTP $(cat "$T/code") $(cat "$T/resp")"
"$PFID" --event-max 10s --api none >"$T/o" 2>&1
[ $? = 2 ] && grep -q -- "--event-max: '10s': expected 1m <= DURATION <= 8784h" "$T/o" || fail "--event-max 10s: $(cat "$T/o")"

[ "$fails" = 0 ] || { tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet event bounds: ok"
