#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every help page lists the options it listed before the options were bound
# to variables (tests/cli/data/options.expected, read off the programs'
# --help before the change): the same long names, each taking a value or
# not as before. Pages are every pfi command, each action with a help page
# of its own, pfid and pfi-agent.
. "$(dirname "$0")/lib.sh"

EXP=tests/cli/data/options.expected
B=${PFI_BUILD_DIR:-$(dirname "$PFI")}
grep -v '^#' "$EXP" >"$T/want"
cut -f1 "$T/want" | sort -u >"$T/pages"
[ "$(wc -l <"$T/pages")" -ge 40 ] || fail "$EXP: only $(wc -l <"$T/pages") pages"
mapfile -t pages <"$T/pages"
bash tests/cli/options_of.sh "$B" "${pages[@]}" >"$T/got"
if ! diff "$T/want" "$T/got" >"$T/diff"; then
  fail "help pages differ from $EXP (< before, > now):"
  cat "$T/diff" >&2
fi
# Each page's program answers --help with exit status 0.
while read -r page; do
  read -r -a w <<<"$page"
  "$B/${w[0]}" "${w[@]:1}" --help >/dev/null 2>"$T/e" </dev/null ||
    fail "$page --help: exit status $? ($(head -n 1 "$T/e"))"
done <"$T/pages"
# Every command pfi --help lists has a page (or pages of its actions).
"$PFI" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' | grep -vx help >"$T/cmds"
while read -r c; do
  grep -q "^pfi $c\( \|$\)" "$T/pages" || fail "pfi $c: no page in $EXP"
done <"$T/cmds"

if [ "$fails" -ne 0 ]; then
  echo "test_options: $fails check(s) failed" >&2
  exit 1
fi
echo "test_options: all checks passed"
