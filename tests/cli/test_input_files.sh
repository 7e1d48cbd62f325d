#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# An input file that is missing, a directory, under a path that is not a
# directory, or unreadable is bad input, like a malformed file: exit
# status 2 (README: 2 is bad usage or input) and a message naming the
# file, in every command that reads one, before any work. pfi index and
# pfi stats did so; grid, control, capacity, gate, allocate, cap and
# replay exited 1.
. "$(dirname "$0")/lib.sh"
export PFI_BACKEND=emu

# The commands, each with BAD where its input file goes (the other
# arguments valid or never reached).
cmds=(
  "grid capacity --curves BAD --tiers BAD --tier flex"
  "grid meter --config BAD --gpu-w 500"
  "grid timeline --events BAD"
  "control --emulate BAD --target 75%"
  "capacity --curves BAD"
  "gate BAD BAD"
  "allocate --curves BAD --cut 10%"
  "cap --plan BAD --db $T/st.db --backend emu"
  "replay --curves BAD --target BAD"
)
mkdir "$T/dir"
echo x >"$T/plain"
bad=("$T/missing.csv" "$T/dir" "$T/plain/below.csv")
# root reads a file of mode 000: unreadable only for anyone else.
if [ "$(id -u)" != 0 ]; then
  echo x >"$T/locked.csv"
  chmod 000 "$T/locked.csv"
  bad+=("$T/locked.csv")
fi
for c in "${cmds[@]}"; do
  for b in "${bad[@]}"; do
    # shellcheck disable=SC2086 # the command's words split on purpose
    set -- ${c//BAD/$b}
    "$PFI" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" = 2 ] || fail "pfi ${c//BAD/$b}: exit $rc, expected 2 ($(head -2 "$T/err"))"
    grep -qF -- "$b" "$T/err" || fail "pfi ${c//BAD/$b}: the message does not name $b: $(head -2 "$T/err")"
    [ -s "$T/out" ] && fail "pfi ${c//BAD/$b}: wrote to stdout"
  done
done
# The message names the reason too.
"$PFI" allocate --curves "$T/dir" --cut 10% 2>"$T/err"
[ "$(cat "$T/err")" = "pfi allocate: --curves: $T/dir: is a directory, not a file" ] ||
  fail "allocate --curves DIR: '$(cat "$T/err")'"
"$PFI" gate "$T/missing.csv" "$T/plain" 2>"$T/err"
[ "$(cat "$T/err")" = "pfi gate: REFERENCE: $T/missing.csv: No such file or directory" ] ||
  fail "gate MISSING: '$(cat "$T/err")'"
# Nothing was created where a store was named.
[ -e "$T/st.db" ] && fail "pfi cap with a missing plan created its store"
exit $((fails > 0))
