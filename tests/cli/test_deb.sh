#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian package (debian/): built by dpkg-buildpackage from a copy of
# the source tree (the files git tracks, as a source package would hold
# them), unpacked into a scratch root with dpkg -x (nothing is installed on
# this machine), and run from there: the unpacked pfi says the project's
# version and runs a small `pfi reproduce` (the data it reads is the
# package's, beside the program, not the source tree's), and the package
# holds the daemons, libpfi and its header, and depends on the libraries
# pfi links. Skips only where dpkg-buildpackage or debhelper is missing
# (scripts/install-deps.sh installs them).
. "$(dirname "$0")/lib.sh"
for c in dpkg-buildpackage dh dpkg-deb git; do
  command -v "$c" >/dev/null || { echo "SKIP: $c not found (scripts/install-deps.sh installs it)"; exit 77; }
done

# The source tree as git knows it (tracked files, and new ones git does not
# ignore), without this checkout's build folders; outside a git checkout,
# the tree less its build folders.
S=$T/src/pfi
mkdir -p "$S"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
    xargs -0 cp --parents -t "$S" || { fail "copying the source tree"; exit 1; }
else
  tar -cf - --exclude='./build*' --exclude='./obj-*' --exclude='./debian/.debhelper' \
    --exclude='./debian/pfi' . | tar -xf - -C "$S" || { fail "copying the source tree"; exit 1; }
fi
[ -x "$S/debian/rules" ] || { fail "no debian/rules in the copy"; exit 1; }

# -b: binary only; -us -uc: unsigned; no tests (nocheck: the suite runs here).
(cd "$S" && DEB_BUILD_OPTIONS="parallel=2 nocheck" timeout 420 \
  dpkg-buildpackage -b -us -uc) >"$T/build.log" 2>&1 ||
  { fail "dpkg-buildpackage: $(tail -n 20 "$T/build.log")"; exit 1; }
version=$(sed -n 's/^project(pfi VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { fail "no version in CMakeLists.txt"; exit 1; }
debs=("$T"/src/pfi_"$version"_*.deb)
[ -f "${debs[0]}" ] || { fail "no pfi_${version}_*.deb: $(ls "$T/src")"; exit 1; }
deb=${debs[0]}

# What the package says of itself: its version is the changelog's (which
# must be the project's), and it depends on the libraries pfi links
# (${shlibs:Depends}, filled by dpkg-shlibdeps, and the two it opens by
# soname at run time, libcurl and libmicrohttpd).
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] ||
  fail "package version $(dpkg-deb -f "$deb" Version), CMakeLists.txt says $version"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libgsl libjansson libsqlite3 libcurl libnats libmicrohttpd; do
  grep -q "$lib" <<<"$depends" || fail "Depends has no $lib: $depends"
done

# lintian, where installed: its tags are printed, and an error fails.
if command -v lintian >/dev/null; then
  timeout 180 lintian --tag-display-limit 0 "$deb" >"$T/lintian" 2>&1
  cat "$T/lintian"
  ! grep -q '^E: ' "$T/lintian" || fail "lintian errors: $(grep '^E: ' "$T/lintian")"
fi

R=$T/root
dpkg -x "$deb" "$R" || { fail "dpkg -x $deb"; exit 1; }
# The build's copy of the source (whose data/ a build tree would read) is
# gone: what the unpacked pfi reads is the package's.
rm -rf "$S"
for f in usr/bin/pfi usr/sbin/pfid usr/sbin/pfi-agent; do
  [ -x "$R/$f" ] || fail "package has no $f: $(dpkg-deb -c "$deb" | awk '{print $6}' | grep bin/)"
done
[ -f "$R/usr/include/pfi/version.h" ] || fail "package has no usr/include/pfi/version.h"
[ -n "$(find "$R/usr/lib" -name 'libpfi.so.*' -type f)" ] || fail "package has no libpfi.so.*"
[ -f "$R/usr/share/pfi/jobs/jobs.csv" ] || fail "package has no usr/share/pfi/jobs/jobs.csv"

# Run from the scratch root (its libpfi, were pfi linked to it), with no
# source tree in sight: the data pfi reads is usr/share/pfi beside it.
libdir=$(dirname "$(find "$R/usr/lib" -name 'libpfi.so.*' -type f | head -n 1)")
unset PFI_DATA
run() { (cd / && LD_LIBRARY_PATH="$libdir" timeout 120 "$@"); }
out=$(run "$R/usr/bin/pfi" --version 2>&1) || fail "pfi --version: exit $?: $out"
grep -q "$version" <<<"$out" || fail "pfi --version says '$out', expected $version"
for d in pfid pfi-agent; do
  out=$(run "$R/usr/sbin/$d" --version 2>&1) || fail "$d --version: exit $?: $out"
done

# A small campaign (test_reproduce.sh's sizes): its report and tables, and
# every group of the installed job library (35) in them.
run "$R/usr/bin/pfi" reproduce --out "$T/r" --duration 5m --interval 30s --draws 200 \
  --workloads 6 --jobs-per-workload 10 >"$T/stdout" 2>"$T/stderr" ||
  { fail "installed pfi reproduce: $(tail -n 5 "$T/stderr")"; exit 1; }
[ "$(cat "$T/stdout")" = "$T/r/report.html" ] || fail "reproduce printed $(cat "$T/stdout")"
grep -q "campaign: 35 groups, 190 runs" "$T/stderr" || fail "reproduce: $(head -n 3 "$T/stderr")"
for f in report.html headline.csv groups.csv; do
  [ -s "$T/r/$f" ] || fail "reproduce wrote no $f"
done
[ "$(tail -n +2 "$T/r/groups.csv" | wc -l)" -eq 35 ] || fail "groups.csv: $(wc -l <"$T/r/groups.csv") lines"

exit $((fails > 0))
