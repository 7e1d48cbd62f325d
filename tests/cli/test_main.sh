#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The pfi command itself: `pfi help help` prints help's help; a mistyped
# command is refused (exit 2) with the nearest commands by edit distance
# (one typo of a command's name: a letter dropped, added, changed, or two
# neighbours swapped), and nothing is suggested for a name near none.
. "$(dirname "$0")/lib.sh"

# status_is WHAT EXPECTED CMD...: runs CMD, output in $T/out and $T/err.
status_is() {
  local what=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "$what: exit status $rc, expected $want: $(cat "$T/err")"
}

status_is "pfi help help" 0 "$PFI" help help
grep -q '^usage: pfi help \[COMMAND\]' "$T/out" || fail "pfi help help: $(head -n 2 "$T/out")"
status_is "pfi help --help" 0 "$PFI" help --help
grep -q '^usage: pfi help \[COMMAND\]' "$T/out" || fail "pfi help --help: $(head -n 2 "$T/out")"
status_is "pfi help" 0 "$PFI" help
grep -q '^usage: pfi ' "$T/out" || fail "pfi help: $(head -n 2 "$T/out")"
status_is "pfi help sweep" 0 "$PFI" help sweep
grep -q '^usage: pfi sweep' "$T/out" || fail "pfi help sweep: $(head -n 2 "$T/out")"

# typo NAME SUGGESTION: pfi NAME and pfi help NAME are refused with the
# message naming SUGGESTION (empty: no suggestion, "See 'pfi help'").
typo() {
  local name=$1 want
  if [ -n "$2" ]; then
    want="pfi: '$name' is not a pfi command. Did you mean $2?"
  else
    want="pfi: '$name' is not a pfi command. See 'pfi help'."
  fi
  for pre in "" help; do
    # shellcheck disable=SC2086 # an empty $pre is no argument
    status_is "pfi $pre $name" 2 "$PFI" $pre "$name"
    [ "$(cat "$T/err")" = "$want" ] || fail "pfi $pre $name: '$(cat "$T/err")', expected '$want'"
    [ -s "$T/out" ] && fail "pfi $pre $name printed on stdout: $(cat "$T/out")"
  done
}
typo simulat "'simulate'"   # a letter dropped
typo simulatte "'simulate'" # a letter added
typo allocste "'allocate'"  # a letter changed
typo tarce "'trace'"        # two neighbours swapped
typo cpa "'cap'"            # short names take one edit
typo swep "'sweep'"
typo fti "'fit'"
typo verison "'version'"
typo hepl "'help'"
typo xyzzy ""               # near nothing
typo capacityyyy ""         # three edits: too far
typo ca "'cap'"
typo smulate "'emulate' or 'simulate'" # equally near two, in pfi help's order
typo cal "'cap' or 'ctl'"
[ "$fails" -eq 0 ] && echo "test_main: all passed"
exit $((fails > 0))
