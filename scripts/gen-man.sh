#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes the manual pages from the programs' own option tables:
#   scripts/gen-man.sh BUILD_DIR OUT_DIR
# pfi.1, pfi-CMD.1 for each command of `pfi --help`, pfi-CMD-ACTION.1 for
# each action a command's help lists, pfid.8 and pfi-agent.8; each is
# `PFI_HELP_FORMAT=man PROGRAM ... --help` (src/base/opt.h).
set -eu
B=$1
O=$2
mkdir -p "$O"
export PFI_HELP_FORMAT=man
# In a sanitizer build the programs' leaks are the tests' to find, not a
# reason for the pages not to be written.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
page() { # FILE PROGRAM ARGS...
  local f=$1
  shift
  "$@" --help >"$O/$f.tmp" </dev/null
  mv "$O/$f.tmp" "$O/$f"
}
page pfi.1 "$B/pfi"
page pfid.8 "$B/pfid"
page pfi-agent.8 "$B/pfi-agent"
# NAME's line of a command's page is the one `pfi --help` gives it.
PFI_HELP_FORMAT= "$B/pfi" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\)  *\(.*\)/\1\t\2/p' |
  while IFS=$'\t' read -r c what; do
  [ "$c" = help ] && continue
  PFI_MAN_WHATIS=$what page "pfi-$c.1" "$B/pfi" "$c"
  # Its actions: those its help lists under "Actions:" and those its usage
  # lines name ("pfi stats spearman FILE ..."), each with a help of its own.
  h=$(PFI_HELP_FORMAT= "$B/pfi" "$c" --help 2>/dev/null </dev/null || true)
  for a in $({
    sed -n '/^Actions:/,/^$/s/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p' <<<"$h"
    sed -n "s/^\(usage:\)\{0,1\} *pfi $c \([a-z][a-z-]*\).*/\2/p" <<<"$h"
  } | awk '!seen[$0]++'); do
    PFI_HELP_FORMAT= "$B/pfi" "$c" "$a" --help >/dev/null 2>&1 </dev/null || continue
    page "pfi-$c-$a.1" "$B/pfi" "$c" "$a"
  done
done
