#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi_nats_subscribe_many (the scale benchmark's workers: many agents'
# subjects on one connection): 500 subjects on one subscription get each
# its own message once, and nothing of a subject not among them.
. "$(dirname "$0")/lib.sh"
PROBE=${PFI_PROBE:?}
setup_nats
timeout 60 "$PROBE" "$NATS_URL" admin "$T/pw.admin" submany s 500 >"$T/out" 2>"$T/err" ||
  fail "submany: $(cat "$T/err")"
[ "$(cat "$T/out")" = "submany: 500 messages, 500 subjects once each, 0 other" ] || fail "$(cat "$T/out")"
[ "$fails" = 0 ] || exit 1
echo "ok"
