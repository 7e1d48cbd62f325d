#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Help and usage errors of every command: --help exits 0, prints no literal
# "%%" and lists every long option the command accepts (the accepted set is
# tests/cli/data/options.txt, read off the option arrays the commands had
# before their tables, and each option the help lists must parse); a
# mistyped option gets "did you mean" and exit status 2; messages start
# with "pfi CMD:".
. "$(dirname "$0")/lib.sh"

OPTS=tests/cli/data/options.txt

# Every command that 'pfi help' lists has a help page in the list.
"$PFI" --help >"$T/top" || fail "pfi --help: exit status $?"
awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' "$T/top" | grep -vx help >"$T/cmds"
[ -s "$T/cmds" ] || fail "pfi --help lists no command"
while read -r c; do
  grep -q "^$c[ |]" "$OPTS" || fail "$c: no line in $OPTS"
done <"$T/cmds"

# The options a help page lists: "  --name", "  -x, --name" at the start of
# a line of an options list.
listed() { sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}--\([a-z0-9][a-z0-9-]*\).*/\2/p' "$1" | sort -u; }

while IFS='|' read -r page probe accepted; do
  case "$page" in '#'* | '') continue ;; esac
  read -r -a pa <<<"$page"
  read -r -a pr <<<"$probe"
  "$PFI" "${pa[@]}" --help >"$T/h" 2>"$T/e"
  st=$?
  [ $st -eq 0 ] || fail "pfi $page --help: exit status $st ($(head -n 1 "$T/e"))"
  grep -q '^usage: pfi ' "$T/h" || fail "pfi $page --help: no usage line"
  grep -q '%%' "$T/h" && fail "pfi $page --help: a literal %% ($(grep -m1 '%%' "$T/h"))"
  listed "$T/h" >"$T/listed"
  for o in $accepted; do
    grep -qx -- "$o" "$T/listed" || fail "pfi $page --help: --$o accepted but not listed"
  done
  # Each listed option parses: with a value and an option that does not
  # exist after it, the command stops at the second (or at the value), never
  # saying the first is unknown, and changes nothing (exit status 2).
  while read -r o; do
    [ "$o" = help ] && continue
    "$PFI" "${pr[@]}" "--$o=1" --no-such-option-zz </dev/null >"$T/po" 2>"$T/pe"
    st=$?
    [ $st -eq 2 ] || fail "pfi $probe --$o=1 --no-such-option-zz: exit status $st"
    grep -q "unknown option '--$o'" "$T/pe" && fail "pfi $probe: listed --$o is not accepted"
    grep -q "^pfi ${page}: " "$T/pe" || grep -q "^pfi ${pr[0]}" "$T/pe" ||
      fail "pfi $probe --$o: message without the 'pfi ${pr[0]}' prefix: $(head -n 1 "$T/pe")"
  done <"$T/listed"
done <"$OPTS"

# A mistyped option: did you mean, exit status 2, the command's prefix.
expect_mistype() { # WANT ARGS...
  local want=$1
  shift
  "$PFI" "$@" >"$T/mo" 2>"$T/me"
  local st=$?
  [ $st -eq 2 ] || fail "pfi $*: exit status $st, expected 2"
  grep -q "did you mean '$want'?" "$T/me" || fail "pfi $*: no \"did you mean '$want'?\": $(head -n 1 "$T/me")"
  [ -s "$T/mo" ] && fail "pfi $*: output on stdout"
}
expect_mistype --format index --fromat csv data/jobs/curves.csv
expect_mistype --caps index --cpas 200 data/jobs/curves.csv
expect_mistype --workloads simulate --wrokloads 5
expect_mistype --out trace summarize --ot x y.db
expect_mistype --dry-run cap --dryrun --set 300
expect_mistype --strategies replay --stratgies equal
head -n 1 "$T/me" | grep -q "^pfi replay: unknown option '--stratgies'; did you mean '--strategies'?$" ||
  fail "mistype message: $(head -n 1 "$T/me")"
sed -n 2p "$T/me" | grep -qx "Try 'pfi replay --help'." || fail "mistype: no hint to --help"
# Nothing close: no suggestion.
"$PFI" index --zzzzzz x 2>"$T/e"
[ $? -eq 2 ] || fail "unknown option: exit status not 2"
grep -q "did you mean" "$T/e" && fail "suggestion for an option close to nothing: $(cat "$T/e")"
# pfi grid: an option of another action is a usage error that names it and
# the actions that take it (it was ignored when the actions shared a table).
expect_foreign() { # WANT ARGS...
  local want=$1
  shift
  "$PFI" "$@" >"$T/fo" 2>"$T/fe"
  local st=$?
  [ $st -eq 2 ] || fail "pfi $*: exit status $st, expected 2"
  head -n 1 "$T/fe" | grep -qxF -- "$want" || fail "pfi $*: $(head -n 1 "$T/fe")"
  [ -s "$T/fo" ] && fail "pfi $*: output on stdout"
}
expect_foreign "pfi grid timeline: option '--pfid' is not one of timeline's (bridge takes it)" \
  grid timeline --schedule /dev/null --pfid http://127.0.0.1:1
expect_foreign "pfi grid capacity: option '--interval' is not one of capacity's (bridge, meter take it)" \
  grid capacity --format=json --interval 1s
expect_foreign "pfi grid meter: option '--once' is not one of meter's (bridge takes it)" \
  grid meter --once
# An option's value is not taken for an option: --event's value here.
"$PFI" grid report --event --pfid 2>"$T/fe"
[ $? -eq 2 ] || fail "pfi grid report --event --pfid: exit status not 2"
grep -q "not one of" "$T/fe" && fail "pfi grid report --event --pfid: the value taken for an option"
# An unknown action: did you mean.
"$PFI" grid timelin 2>"$T/fe"
[ $? -eq 2 ] || fail "pfi grid timelin: exit status not 2"
grep -q "did you mean 'timeline'?" "$T/fe" || fail "pfi grid timelin: $(head -n 1 "$T/fe")"
# An ambiguous prefix names the candidates.
"$PFI" index --c 1 x 2>"$T/e"
[ $? -eq 2 ] || fail "ambiguous option: exit status not 2"
grep -q "ambiguous (--caps, --ci)" "$T/e" || fail "ambiguous option: $(cat "$T/e")"
# A value where none is taken, none where one is needed.
"$PFI" index --help=3 2>"$T/e"
grep -q "^pfi index: option '--help' takes no value" "$T/e" || fail "--help=3: $(cat "$T/e")"
"$PFI" index x --caps 2>"$T/e"
grep -q "^pfi index: option '--caps' needs a value" "$T/e" || fail "--caps without value: $(cat "$T/e")"

# Errors after parsing name the command too.
expect_prefix() { # PREFIX ARGS...
  local want=$1
  shift
  "$PFI" "$@" >/dev/null 2>"$T/pe"
  [ $? -ne 0 ] || fail "pfi $*: exit status 0"
  head -n 1 "$T/pe" | grep -q "^$want: " || fail "pfi $*: message '$(head -n 1 "$T/pe")' does not start with '$want:'"
}
expect_prefix "pfi index" index "$T/no-such.csv"
expect_prefix "pfi trace runs" trace runs "$T/no-such.db"
expect_prefix "pfi stats" stats spearman "$T/no-such.csv" --x a --y b
expect_prefix "pfi predict" predict "$T/no-such.json" "$T/no-such.csv"
expect_prefix "pfi emulate" emulate sweep --job nope
expect_prefix "pfi fit" fit --curves "$T/no-such.csv" --features "$T/no-such.csv"

if [ "$fails" -ne 0 ]; then
  echo "test_help: $fails check(s) failed" >&2
  exit 1
fi
echo "test_help: all checks passed"
