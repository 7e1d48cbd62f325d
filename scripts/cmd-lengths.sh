#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Prints the length in lines of each command entry function (a line that
# starts "int cmd_NAME(" in src/cli/cmd_*.c, up to the "}" in column 1 that
# closes it), longest first, then their count and median.
#   scripts/cmd-lengths.sh [SRCDIR]     (SRCDIR: src/cli by default)
set -eu
dir=${1:-$(dirname "$0")/../src/cli}
awk '
  /^int cmd_[a-z_0-9]*\(/ {
    name = $2; sub(/\(.*/, "", name); start = FNR; file = FILENAME; next
  }
  start && /^}/ {
    n = FNR - start + 1; sub(/.*\//, "", file)
    printf "%5d %s %s\n", n, name, file
    start = 0
  }
' "$dir"/cmd_*.c | sort -rn | awk '
  { print; len[NR] = $1 }
  END {
    if (NR == 0) { print "no cmd_* functions" > "/dev/stderr"; exit 1 }
    # Lines arrive longest first: the median is the middle one (or the
    # mean of the middle two).
    if (NR % 2) m = len[(NR + 1) / 2]
    else m = (len[NR / 2] + len[NR / 2 + 1]) / 2
    printf "%d functions, median %g lines\n", NR, m
  }'
