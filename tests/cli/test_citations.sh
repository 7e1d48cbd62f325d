#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every Markdown file that code, tests and documentation cite is in the
# repository, so a reader can open it: a cited path (docs/sweep.md,
# data/paper/README.md) exists from the top of the tree, beside the citing
# file or under docs/; a bare name (NOTICE.md) is some file of the tree.
. "$(dirname "$0")/lib.sh"
S=${PFI_SOURCE_DIR:-.}
cd "$S" || exit 1
command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "test_citations: not a git checkout, skipped"; exit 0; }
git ls-files >"$T/files"
n=0
while IFS=: read -r file cited; do
  n=$((n + 1))
  cited=${cited#./}
  dir=$(dirname "$file")
  if [ -e "$cited" ] || [ -e "$dir/$cited" ] || [ -e "docs/$cited" ]; then
    continue
  fi
  case $cited in
  */*) ;;
  *) grep -q "\(^\|/\)$cited\$" "$T/files" && continue ;;
  esac
  fail "$file cites $cited, which is not in the repository"
done < <(git ls-files -- src include tests docs README.md |
  grep -v '^tests/cli/test_citations.sh$' |
  xargs grep -oE '[A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md\b' |
  sed 's/:\$\?[A-Z_]*\//:/' | sort -u)
[ "$n" -gt 20 ] || fail "only $n citations found: the scan is broken"
[ "$fails" -eq 0 ] && echo "test_citations: all passed ($n citations)"
exit $((fails > 0))
