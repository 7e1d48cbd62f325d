#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Prints the options each help page lists, one line per option:
#   PAGE<TAB>--NAME<TAB>ARG
# ARG is "-" for none, "VALUE" for a required value and "[VALUE]" for an
# optional one. PAGE is "pfi CMD [ACTION]", "pfid" or "pfi-agent"; the pages
# are the arguments (each one word list, e.g. "pfi grid timeline"), and the
# lines are sorted. test_options.sh compares this with
# tests/cli/data/options.expected; run it to make that file anew:
#   bash tests/cli/options_of.sh BUILD_DIR $(cut -f1 tests/cli/data/options.expected | sort -u)
# (or with the page list of options.expected's comment).
set -u
B=$1
shift
for page in "$@"; do
  read -r -a w <<<"$page"
  prog=$B/${w[0]}
  "$prog" "${w[@]:1}" --help </dev/null 2>/dev/null |
    sed -n 's/^  \(-[a-zA-Z0-9], \)\{0,1\}--\([a-z0-9][a-z0-9-]*\)\(.*\)$/\2\t\3/p' |
    awk -F'\t' -v page="$page" '{
      rest = $2; arg = "-"
      if (rest ~ /^\[=/) arg = "[VALUE]"
      else if (rest ~ /^ [^ ]/) arg = "VALUE"
      print page "\t--" $1 "\t" arg
    }'
done | LC_ALL=C sort -u
