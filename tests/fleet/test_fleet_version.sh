#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid and pfi-agent answer --version with their name and the version
# pfi --version prints (one version for the whole toolkit), exit 0, and
# write nothing to stderr; the option is valid anywhere among the others.
# Needs no server.
. "$(dirname "$0")/../cli/lib.sh"
PFI_AGENT=${PFI_AGENT:?PFI_AGENT must name pfi-agent}
PFID=${PFID:?PFID must name pfid}

want=$("$PFI" --version) || fail "pfi --version: exit $?"
ver=${want#pfi }
[ -n "$ver" ] && [ "$ver" != "$want" ] || fail "pfi --version printed '$want'"
# The version CMake was given (project(... VERSION x.y.z)), read from the
# source, not from any program.
src_ver=$(sed -n 's/^project(pfi VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ "$ver" = "$src_ver" ] || fail "pfi --version says '$ver', CMakeLists.txt '$src_ver'"

check() { # check PROG NAME ARGS...
  local prog=$1 name=$2
  shift 2
  "$prog" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = 0 ] || fail "$name $*: exit $rc, expected 0"
  [ "$(cat "$T/out")" = "$name $ver" ] || fail "$name $*: printed '$(cat "$T/out")', expected '$name $ver'"
  [ -s "$T/err" ] && fail "$name $*: wrote to stderr: $(cat "$T/err")"
}
check "$PFID" pfid --version
check "$PFI_AGENT" pfi-agent --version
# Before anything is started: no NATS, no records file is touched.
check "$PFID" pfid --period 1 --records "$T/none/pfid.db" --version
[ -e "$T/none" ] && fail "pfid --version created its records directory"
check "$PFI_AGENT" pfi-agent --node n1 --version
exit $((fails > 0))
