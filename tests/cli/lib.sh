# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by the tests/cli scripts (". "$(dirname "$0")/lib.sh"" before
# anything else): the environment every script starts from and the helpers
# they all use. Not a test itself (only test_*.sh files are).

set -u
PFI=${PFI:?PFI must name the pfi binary}
# Paths in the tests (data/, tests/cli/data/) are relative to the source tree.
cd "${PFI_SOURCE_DIR:-.}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
# The device backend is chosen by each test, never by the caller's environment.
unset PFI_BACKEND

# fail MESSAGE: counts a failed check; the script exits non-zero at its end.
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# near A B TOL WHAT: |A - B| <= TOL (awk does the arithmetic), else a failure
# naming WHAT.
near() {
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }' ||
    fail "$4: got $1, expected $2 (tolerance $3)"
}
