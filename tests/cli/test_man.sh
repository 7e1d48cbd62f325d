#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The manual pages and the bash completion, both from the option tables:
# every page the build wrote (scripts/gen-man.sh) formats with groff
# without a warning; each page lists exactly the options its --help lists
# (tests/cli/options_of.sh, read independently off the plain help); the
# completion offers a command's options, a command's actions and the
# commands; `cmake --install` puts pages, completion, docs and systemd
# units (with the prefix in place of /usr/local) where stated.
. "$(dirname "$0")/lib.sh"
SRC=$PWD
B=${PFI_BUILD_DIR:?}
M=$B/man
command -v groff >/dev/null || { fail "groff not found"; exit 1; }
[ -f "$M/pfi.1" ] || { fail "no $M/pfi.1 (the man target)"; exit 1; }

# The pages: one per help page, each formatting cleanly.
n=0
for f in "$M"/*.[18]; do
  n=$((n + 1))
  LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$f" 2>"$T/warn" || fail "$f: groff failed"
  [ -s "$T/warn" ] && fail "$(basename "$f"): groff: $(head -n 3 "$T/warn")"
done
for p in pfi-grid-timeline.1 pfi-stats.1 pfi-trace-summarize.1 pfid.8 pfi-agent.8; do
  [ -f "$M/$p" ] || fail "no page $p"
done
ncmd=$(sed -n '/^Commands:/,/^$/p' <("$PFI" --help) | grep -c '^  [a-z]')
# (pfi help has no page of its own: pfi.1 describes it)
[ "$(ls "$M" | grep -c '^pfi-[a-z]*\.1$')" -ge $((ncmd - 1)) ] ||
  fail "fewer pfi-CMD.1 pages than the $((ncmd - 1)) commands"

# Each page's options, "PAGE<TAB>--NAME<TAB>ARG" as options_of.sh prints.
man_options() { # PAGE FILE
  sed -n '/^\.TP$/{n;p}' "$2" | grep '^\\fB\\-' |
    sed 's/^\\fB\\-[a-zA-Z0-9]\\fR, //' |
    sed -n 's/^\\fB\\-\\-\([a-z0-9\\-]*\)\\fR\(.*\)$/\1\t\2/p' | sed 's/\\-/-/g' |
    awk -F'\t' -v page="$1" '{
      arg = "-"
      if ($2 ~ /^\[=/) arg = "[VALUE]"
      else if ($2 ~ /^ /) arg = "VALUE"
      print page "\t--" $1 "\t" arg }' | LC_ALL=C sort -u
}
pages=()
for f in "$M"/*.[18]; do
  b=$(basename "$f")
  b=${b%.[18]}
  [ "$b" = pfi ] && continue
  case $b in
    pfid | pfi-agent) page=$b ;;
    *) page= ;;
  esac
  # pfi-CMD-ACTION: the action may itself hold a '-' (import-prom).
  for c in $("$PFI" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'); do
    case $b in pfi-"$c"-*) page="pfi $c ${b#pfi-"$c"-}" ;; pfi-"$c") page="pfi $c" ;; esac
  done
  [ -n "$page" ] || { fail "$b: no command of pfi --help"; continue; }
  pages+=("$page")
  bash "$SRC/tests/cli/options_of.sh" "$B" "$page" >"$T/help.opts"
  man_options "$page" "$f" >"$T/man.opts"
  cat "$T/help.opts" >>"$T/all.opts"
  diff "$T/help.opts" "$T/man.opts" >"$T/d" || fail "$page: the page's options differ from --help: $(head -n 6 "$T/d")"
done
[ "${#pages[@]}" -ge 40 ] || fail "only ${#pages[@]} pages"
# The comparison compared options: most pages have some.
[ "$(wc -l <"$T/all.opts")" -ge 200 ] || fail "only $(wc -l <"$T/all.opts") options read off --help"
# The completion, asking the built pfi.
complete_words() { # the words of the command line, the last one completed
  PATH="$B:$PATH" bash -c '
    . "$1/contrib/bash-completion/pfi"
    shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    _pfi; printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort' _ "$SRC" "$@"
}
complete_words pfi grid timeline -- >"$T/c"
bash "$SRC/tests/cli/options_of.sh" "$B" "pfi grid timeline" | cut -f2 >"$T/want"
diff "$T/want" "$T/c" >"$T/d" || fail "completion of pfi grid timeline --: $(head -n 6 "$T/d")"
complete_words pfi sweep --ca >"$T/c"
grep -q '^--caps$' "$T/c" || fail "completion of pfi sweep --ca: $(cat "$T/c")"
grep -v '^--ca' "$T/c" && fail "completion of pfi sweep --ca offers other words"
complete_words pfi gri >"$T/c"
[ "$(cat "$T/c")" = grid ] || fail "completion of pfi gri: $(cat "$T/c")"
complete_words pfi trace s >"$T/c"
grep -qx summarize "$T/c" || fail "completion of pfi trace s: $(cat "$T/c")"
# A choice's words after its option, by the table (index's --definition:
# ratio, area, ce or all, as its --help says).
complete_words pfi index --definition "" >"$T/c"
[ "$(tr '\n' ' ' <"$T/c")" = "all area ce ratio " ] || fail "completion of pfi index --definition: $(cat "$T/c")"
complete_words pfi ctl --format j >"$T/c"
[ "$(cat "$T/c")" = json ] || fail "completion of pfi ctl --format j: $(cat "$T/c")"
complete_words pfid --ver >"$T/c"
[ "$(cat "$T/c")" = --version ] || fail "completion of pfid --ver: $(cat "$T/c")"

# The install.
P=$T/root
timeout 120 cmake --install "$B" --prefix "$P" >"$T/install.log" 2>&1 ||
  { fail "cmake --install: $(tail -n 5 "$T/install.log")"; exit 1; }
# (the docs' folder in a variable: the installed copies of README.md,
# CHANGES.md and docs/fleet.md are not paths of the tree, which
# test_citations checks every cited .md against)
DOC=share/doc/pfi
for f in share/man/man1/pfi.1 share/man/man1/pfi-grid-timeline.1 \
  share/man/man8/pfid.8 share/man/man8/pfi-agent.8 \
  share/bash-completion/completions/pfi $DOC/README.md \
  $DOC/CHANGES.md $DOC/LICENSE $DOC/fleet.md \
  lib/systemd/system/pfid.service lib/systemd/system/pfi-agent.service; do
  [ -f "$P/$f" ] || fail "not installed: $f"
done
[ "$(ls "$P/share/man/man1" | wc -l)" -eq "$(ls "$M"/*.1 | wc -l)" ] || fail "man1 holds other pages than the build's"
for u in pfid pfi-agent; do
  grep -q "^ExecStart=$P/sbin/$u " "$P/lib/systemd/system/$u.service" ||
    fail "$u.service: $(grep ^ExecStart "$P/lib/systemd/system/$u.service")"
  grep -q /usr/local "$P/lib/systemd/system/$u.service" && fail "$u.service still names /usr/local"
  [ -x "$P/sbin/$u" ] || fail "no $P/sbin/$u"
done
grep -q "^Documentation=file://$P/$DOC/fleet.md$" "$P/lib/systemd/system/pfid.service" ||
  fail "pfid.service: $(grep ^Documentation "$P/lib/systemd/system/pfid.service")"

[ "$fails" -eq 0 ] && echo "test_man: all passed"
exit $((fails > 0))
