#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid and pfi-agent parse their options with the pfi commands' option
# tables (src/base/opt.h): --help lists every option the daemon accepts, a
# mistyped option is a usage error with "did you mean", a value out of
# range or a stray argument is exit status 2 naming it, and so is a
# records file pfid cannot use. Needs no server.
. "$(dirname "$0")/../cli/lib.sh"
PFI_AGENT=${PFI_AGENT:?PFI_AGENT must name pfi-agent}
PFID=${PFID:?PFID must name pfid}

check_help() { # check_help PROG OPTION...: each option is in --help
  local prog=$1 o
  shift
  "$prog" --help >"$T/help" 2>"$T/err" || fail "$(basename "$prog") --help: exit $?"
  [ -s "$T/err" ] && fail "$(basename "$prog") --help wrote to stderr: $(cat "$T/err")"
  # Every program of its own also takes --version (src/base/opt.h).
  for o in "$@" version; do
    grep -q -- "^  --$o\b" "$T/help" || fail "$(basename "$prog") --help lacks --$o"
  done
  [ "$(grep -c '^  --' "$T/help")" = $(($# + 1)) ] ||
    fail "$(basename "$prog") --help lists $(grep -c '^  --' "$T/help") options, expected $(($# + 1))"
}
# The NATS rows both daemons share (src/cli/nats_opt.h).
NATS_ROWS="nats user password-file nats-creds nats-nkey nats-ca nats-cert nats-key
  nats-server-name nats-insecure"
check_help "$PFID" id $NATS_ROWS records api token-file tokens period lease \
  leader-lease stale ramp-up margin recovery-margin recovery-ramp recovery-window objective tiers model \
  features meter-config event-max event-ahead request-deadline max-conn-per-client \
  tls-cert tls-key tls-client-ca insecure help
check_help "$PFI_AGENT" node $NATS_ROWS backend params emulate emu-job record \
  jobmap-dir tput-dir tput-max-age tier-dir period metrics cap-file cap-listen tput-listen \
  powercap bmc bmc-period tput-rate tput-burst request-deadline max-conn-per-client \
  tls-cert tls-key tls-client-ca insecure restore-on-exit help

usage_err() { # usage_err EXPECTED_STDERR PROG ARGS...: exit 2 and that message
  local want=$1 prog=$2
  shift 2
  "$prog" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = 2 ] || fail "$(basename "$prog") $*: exit $rc, expected 2"
  [ "$(cat "$T/err")" = "$want" ] || fail "$(basename "$prog") $*: stderr '$(cat "$T/err")', expected '$want'"
  [ -s "$T/out" ] && fail "$(basename "$prog") $*: wrote to stdout"
}
usage_err "pfid: unknown option '--perod'; did you mean '--period'?
Try 'pfid --help'." "$PFID" --perod 2
usage_err "pfid: option '--lease' needs a value
Try 'pfid --help'." "$PFID" --lease
usage_err "pfid: --period: '99': expected 0.1 <= S <= 60
Try 'pfid --help'." "$PFID" --period 99
usage_err "pfid: --ramp-up: '0': expected 1 <= W/S <= 10000
Try 'pfid --help'." "$PFID" --ramp-up 0
usage_err "pfid: --margin: '0.5': expected 0 < M < 0.5
Try 'pfid --help'." "$PFID" --margin 0.5
usage_err "pfid: --objective: 'tokens': expected work, throughput or jobs
Try 'pfid --help'." "$PFID" --objective tokens
usage_err "pfid: --recovery-ramp: '0': expected 0.001 <= W/S <= 1e+09
Try 'pfid --help'." "$PFID" --recovery-ramp 0
usage_err "pfid: --recovery-window: '5s': expected 10s <= DURATION <= 24h
Try 'pfid --help'." "$PFID" --recovery-window 5s
usage_err "pfid: --recovery-window: 'soon': expected a duration like 250ms, 5s, 30m or 1h (0s..any)
Try 'pfid --help'." "$PFID" --recovery-window soon
# The margin's range is the controller's (include/pfi/control.h), less 0,
# which stands for the default; the help states it from the same row.
usage_err "pfid: --margin: '0': expected 0 < M < 0.5
Try 'pfid --help'." "$PFID" --margin 0
"$PFID" --help | grep -q -- "0 < M < 0.5" || fail "pfid --help: no range of --margin"
usage_err "pfid: unexpected argument 'extra'
Try 'pfid --help'." "$PFID" --period 1 extra
# A records file whose fleet_decisions lacks a column pfid cannot add to
# the rows there (t_s, NOT NULL) is bad input, named before pfid connects.
sqlite3 "$T/old.db" "CREATE TABLE fleet_decisions(epoch INTEGER NOT NULL,
  seq INTEGER NOT NULL, PRIMARY KEY(epoch, seq))"
usage_err "pfid $(hostname -s): NATS nats://127.0.0.1:4222: plain text (loopback)
pfid: $T/old.db: table fleet_decisions has no column t_s, and a key or NOT NULL \
column cannot be added to its rows" "$PFID" --records "$T/old.db" --api none
usage_err "pfi-agent: unknown option '--tier-dri'; did you mean '--tier-dir'?
Try 'pfi-agent --help'." "$PFI_AGENT" --tier-dri /tmp
usage_err "pfi-agent: option '--emulate' takes no value
Try 'pfi-agent --help'." "$PFI_AGENT" --emulate=1
usage_err "pfi-agent: --period: '0': expected 0.1 <= S <= 60
Try 'pfi-agent --help'." "$PFI_AGENT" --period 0
usage_err "pfi-agent: --bmc-period: '0.5': expected 1 <= S <= 3600
Try 'pfi-agent --help'." "$PFI_AGENT" --bmc-period 0.5
usage_err "pfi-agent: --tput-max-age: '0': expected 1 <= S <= 86400
Try 'pfi-agent --help'." "$PFI_AGENT" --tput-max-age 0
usage_err "pfi-agent: node name 'a.b': expected 1..63 letters, digits, _ or - (--node)" \
  "$PFI_AGENT" --node a.b
[ "$fails" = 0 ] || exit 1
echo "ok"
