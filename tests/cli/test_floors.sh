#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The floors of src/ (README.md, "File map"), bottom to top. A file may
# include the headers of its own floor and of the floors below it, never
# one above; a header named *_int.h or internal.h is its folder's own and
# no other folder includes it. A public header, include/pfi/NAME.h, is on
# the floor of the folder that holds NAME.c, or of the folder it is named
# after (control.h, fleet.h, report.h), or the one OWNER names; a header
# of src/DIR/ is DIR's. Only the programs (src/cli) have a main. The
# checker is run first on two small trees that break each rule (it must
# refuse them), then on the source tree (it must accept it).
. "$(dirname "$0")/lib.sh"

FLOORS="base lib device sweep control grid report campaign fleet cli"
OWNER="dbtable:sweep emu:device openadr:grid version:base"
# Excused while they move to src/base: the option parser (src/cli/opt.c,
# opt.h, suggest.c) and the result printers (src/lib/restab.c, the
# report's src/report/table.c). None of them breaks a rule today; the
# excuse is for the steps of that move. Remove it once they are there.
EXCUSED="opt.c opt.h suggest.c restab.c table.c"

# check ROOT: prints each broken rule, one a line.
check() {
  local root=$1 f
  (
    cd "$root" || exit
    # The owners: "NAME FOLDER" for each src/FOLDER/NAME.c, then OWNER's.
    for f in src/*/*.c; do
      [ -e "$f" ] && f=${f#src/} && f=${f%.c} && echo "own ${f#*/} ${f%%/*}"
    done
    for f in $OWNER; do echo "set ${f%%:*} ${f#*:}"; done
    for f in src/*/; do f=${f%/} && echo "dir ${f#src/}"; done
    find src include/pfi -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sed 's/^/file /'
    find src -type f -name '*.c' -exec grep -lE '^(static )?int[[:space:]]+main[[:space:]]*\(' {} + |
      sed 's/^/main /'
    find src include/pfi -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) -exec \
      grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' {} + | sed 's/^/inc /'
  ) | awk -v floors="$FLOORS" -v excused="$EXCUSED" '
    function base(p) { sub(/.*\//, "", p); return p }
    function folder(p, a) { split(p, a, "/"); return a[2] }
    # The floor a file of the tree is on ("" when none).
    function from_of(rel, n) {
      if (rel ~ /^include\/pfi\//) { n = base(rel); sub(/\.h$/, "", n); return own[n] }
      return folder(rel)
    }
    BEGIN {
      nf = split(floors, fl, " ")
      for (i = 1; i <= nf; i++) { floor[fl[i]] = i; own[fl[i]] = fl[i] }
      ne = split(excused, ex, " ")
      for (i = 1; i <= ne; i++) exc[ex[i]] = 1
    }
    $1 == "own" {
      if (($2 in floor)) next
      if (($2 in own) && own[$2] != $3)
        print $2 ".c is in both src/" own[$2] " and src/" $3 ": which floor pfi/" $2 ".h is on is not clear"
      own[$2] = $3; next
    }
    $1 == "set" { own[$2] = $3; next }
    $1 == "dir" {
      if (!($2 in floor)) print "src/" $2 ": not a floor (add it to FLOORS here and to README.md'"'"'s file map)"
      next
    }
    $1 == "file" {
      if ($2 ~ /^include\/pfi\// && from_of($2) == "")
        print $2 ": on no floor (name the folder it belongs to in OWNER here)"
      next
    }
    $1 == "main" {
      if (folder($2) != "cli" && !(base($2) in exc)) print $2 ": a main outside the programs'"'"' floor (src/cli)"
      next
    }
    $1 == "inc" {
      line = substr($0, 5)
      rel = line; sub(/:.*/, "", rel)
      ln = line; sub(/^[^:]*:/, "", ln); sub(/:.*/, "", ln)
      inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      from = from_of(rel)
      if (from == "" || !(from in floor) || (base(rel) in exc)) next
      where = rel ":" ln ": \"" inc "\": "
      if (inc ~ /^pfi\/[^\/]*\.h$/) {
        n = base(inc); sub(/\.h$/, "", n)
        if (!(n in own)) { print where "a public header on no floor"; next }
        to = own[n]
      } else if (inc ~ /^\.\.\/[^\/]+\/[^\/]+$/) {
        to = folder(inc)
        t = base(inc)
        if (t ~ /_int\.h$/ || t == "internal.h") {
          print where "src/" to "'"'"'s private header, included from src/" from
          next
        }
      } else if (inc ~ /\//) {
        print where "neither pfi/NAME.h, ../FOLDER/NAME nor a file of its own folder"
        next
      } else if (rel ~ /^include\//) {
        print where "a public header includes a file of src/"
        next
      } else
        to = from
      if (!(to in floor)) print where "src/" to " is not a floor"
      else if (floor[to] > floor[from]) print where "src/" from " includes src/" to ", a floor above it"
    }'
}

# A tree that breaks every rule once: it must be refused, rule by rule.
B=$T/bad
mkdir -p "$B/src/base" "$B/src/lib" "$B/src/grid" "$B/src/fleet" "$B/src/extra" "$B/include/pfi"
printf '#include "pfi/a.h"\n' >"$B/src/base/b.c"               # base -> lib
printf 'int a(void);\n' >"$B/src/lib/a.c"
printf '#include "pfi/error.h"\nint a(void);\n' >"$B/include/pfi/a.h"
printf 'int e;\n' >"$B/src/base/error.c"
printf '#include "../lib/curve_int.h"\n' >"$B/src/grid/g.c"    # private, crossing
printf 'int x;\n' >"$B/src/lib/curve_int.h"
printf '#include "../fleet/http.h"\n' >"$B/src/grid/w.c"       # grid -> fleet
printf 'int main(void) { return 0; }\n' >"$B/src/fleet/main_d.c" # main in fleet
printf '#include "pfi/fleet.h"\n' >"$B/include/pfi/meter.h"    # header -> higher
printf 'int m;\n' >"$B/src/grid/meter.c"
printf 'int x;\n' >"$B/src/extra/x.c"                          # not a floor
check "$B" >"$T/bad.out"
for want in 'src/base/b.c:1: "pfi/a.h": src/base includes src/lib, a floor above it' \
  "src/grid/g.c:1: \"../lib/curve_int.h\": src/lib's private header, included from src/grid" \
  'src/grid/w.c:1: "../fleet/http.h": src/grid includes src/fleet, a floor above it' \
  'src/fleet/main_d.c: a main outside the programs' \
  'include/pfi/meter.h:1: "pfi/fleet.h": src/grid includes src/fleet, a floor above it' \
  'src/extra: not a floor'; do
  grep -qF "$want" "$T/bad.out" || fail "the checker did not refuse: $want (it said: $(cat "$T/bad.out"))"
done
[ "$(wc -l <"$T/bad.out")" -eq 6 ] || fail "the checker said more than the six broken rules: $(cat "$T/bad.out")"

# The same tree with each rule kept passes.
G=$T/good
mkdir -p "$G/src/base" "$G/src/lib" "$G/src/cli" "$G/include/pfi"
printf '#include "pfi/error.h"\n#include "huge.h"\n' >"$G/src/base/error.c"
printf 'int h;\n' >"$G/src/base/huge.h"
printf '#include "pfi/error.h"\n#include "../base/huge.h"\n#include "curve_int.h"\n' >"$G/src/lib/a.c"
printf 'int x;\n' >"$G/src/lib/curve_int.h"
printf '#include "pfi/a.h"\n#include "../lib/a_x.h"\nint main(void) { return 0; }\n' >"$G/src/cli/main.c"
printf 'int y;\n' >"$G/src/lib/a_x.h"
printf '#include "pfi/error.h"\n' >"$G/include/pfi/a.h"
printf 'int e;\n' >"$G/include/pfi/error.h"
check "$G" >"$T/good.out"
[ -s "$T/good.out" ] && fail "the checker refused a tree that keeps the rules: $(cat "$T/good.out")"

check "$PWD" >"$T/src.out"
[ -s "$T/src.out" ] && fail "src/ breaks the floors' order ($FLOORS):
$(cat "$T/src.out")"
[ -d src/base ] && [ -d src/cli ] || fail "no src/base or src/cli: run from the source tree"
exit $((fails > 0))
