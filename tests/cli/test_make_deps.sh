#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Only the README's two commands (make demo, make check), the whole-event
# demo (make demo-grid, which needs nats-server from a fresh clone) and
# .ci/run install packages (make deps, apt-get): make test, test-asan, fuzz,
# build, bench and install do not. Read from what make would run (make -n:
# nothing is run), with the build directory of this test run.
. "$(dirname "$0")/lib.sh"
B=${PFI_BUILD_DIR:?}
command -v make >/dev/null || { echo "test_make_deps: make not found, skipped"; exit 77; }
# would_install TARGET: whether make TARGET runs the package installer.
would_install() {
  make -n -C "$PFI_SOURCE_DIR" BUILD="$B" "$1" >"$T/n.out" 2>"$T/n.err" ||
    { fail "make -n $1: $(tail -n 3 "$T/n.err")"; return 2; }
  grep -qE 'install-deps\.sh|apt-get' "$T/n.out"
}
for t in test test-asan fuzz build bench install; do
  would_install "$t"
  [ $? = 1 ] || fail "make $t installs packages: $(grep -E 'install-deps|apt-get' "$T/n.out" | head -n 2)"
done
for t in demo demo-grid check deps; do
  would_install "$t" || fail "make $t does not install the packages it needs"
done
grep -qE '^(make (deps|check)|bash scripts/install-deps\.sh)' "$PFI_SOURCE_DIR/.ci/run" ||
  fail ".ci/run does not install the packages (make deps or make check)"
# The README opens with the two commands that install.
sed -n 1,5p "$PFI_SOURCE_DIR/README.md" | grep -q '^    make demo ' || fail "README does not open with make demo"
sed -n 1,5p "$PFI_SOURCE_DIR/README.md" | grep -q '^    make check ' || fail "README does not open with make check"
[ "$fails" -eq 0 ] && echo "test_make_deps: all passed"
exit $((fails > 0))
