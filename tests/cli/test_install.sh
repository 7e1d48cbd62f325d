#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Install anywhere: `cmake --install BUILD --prefix X` into a temporary
# prefix gives a pfi.pc naming X, and a pfi that reads the data installed
# beside it (X/bin/../share/pfi), not the source tree's nor the configured
# prefix's, still after the whole prefix is moved; PFI_DATA overrides it. A
# small C program built with `pkg-config --cflags --libs pfi` against the
# install links the installed libpfi, which finds the same data.
. "$(dirname "$0")/lib.sh"
SRC=$PWD
B=${PFI_BUILD_DIR:?}
command -v pkg-config >/dev/null || { fail "pkg-config not found"; exit 1; }
CC=${PFI_TEST_CC:-cc}
P=$T/prefix
timeout 120 cmake --install "$B" --prefix "$P" >"$T/install.log" 2>&1 ||
  { fail "cmake --install: $(tail -n 5 "$T/install.log")"; exit 1; }
pc=$(find "$P" -name pfi.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || { fail "no pfi.pc under $P"; exit 1; }
grep -qx "prefix=$P" "$pc" || fail "pfi.pc: $(grep '^prefix=' "$pc"), expected prefix=$P"
data=$P/share/pfi
[ -f "$data/jobs/jobs.csv" ] || { fail "no $data/jobs/jobs.csv"; exit 1; }

# The installed copy of the job library, told apart from the source tree's
# by one renamed job: what the installed pfi lists says which it read.
id=dense-ft-llama70b-x16
sed -i "s/^$id,/$id-installed,/" "$data/jobs/jobs.csv"
unset PFI_DATA
(cd / && timeout 60 "$P/bin/pfi" emulate jobs) >"$T/jobs" 2>"$T/err" ||
  fail "installed pfi emulate jobs: $(cat "$T/err")"
grep -q "^$id-installed " "$T/jobs" || fail "installed pfi did not read $data: $(head -n 3 "$T/jobs")"

# Moved elsewhere, the install still finds its own data.
mv "$P" "$T/moved"
(cd / && timeout 60 "$T/moved/bin/pfi" emulate jobs) >"$T/jobs" 2>"$T/err" ||
  fail "moved pfi emulate jobs: $(cat "$T/err")"
grep -q "^$id-installed " "$T/jobs" || fail "moved pfi did not read its own data"
mv "$T/moved" "$P"

# PFI_DATA wins: the source tree's data (the job under its own name).
(cd / && PFI_DATA="$SRC/data" timeout 60 "$P/bin/pfi" emulate jobs) >"$T/jobs" 2>"$T/err" ||
  fail "PFI_DATA pfi emulate jobs: $(cat "$T/err")"
grep -q "^$id " "$T/jobs" || fail "PFI_DATA=data/ not used: $(head -n 3 "$T/jobs")"

# A program against the install, through pkg-config only.
cat >"$T/prog.c" <<'EOF'
#include <pfi/data.h>
#include <pfi/emu.h>
#include <stdio.h>
int main(void) {
  struct pfi_emu_jobs lib;
  struct pfi_error err;
  if (pfi_emu_jobs_load(&lib, NULL, &err) < 0) {
    fprintf(stderr, "prog: %s\n", err.msg);
    return 1;
  }
  const struct pfi_emu_job *j = pfi_emu_job_find(&lib, "dense-ft-llama70b-x16-installed");
  printf("%s %zu %s\n", pfi_data_dir(), lib.n, j ? "installed" : "other");
  pfi_emu_jobs_release(&lib);
  return 0;
}
EOF
export PKG_CONFIG_PATH=$(dirname "$pc")
# shellcheck disable=SC2086 # word splitting of the flags is intended
timeout 120 "$CC" ${PFI_TEST_CFLAGS:-} $(pkg-config --cflags pfi) -o "$T/prog" "$T/prog.c" \
  $(pkg-config --libs pfi) >"$T/cc.log" 2>&1 || fail "building against pkg-config pfi: $(cat "$T/cc.log")"
if [ -x "$T/prog" ]; then
  libdir=$(pkg-config --variable=libdir pfi)
  (cd / && LD_LIBRARY_PATH=$libdir timeout 60 "$T/prog") >"$T/prog.out" 2>"$T/err" ||
    fail "program against the install: $(cat "$T/err")"
  LD_LIBRARY_PATH=$libdir ldd "$T/prog" | grep -q "$libdir/libpfi.so" || fail "program did not link the installed libpfi.so"
  njobs=$(($(wc -l <"$SRC/data/jobs/jobs.csv") - 1))
  read -r dir n which <"$T/prog.out"
  [ "$dir" = "$(realpath "$data")" ] || fail "program's data directory: '$dir', expected $data"
  [ "$n" = "$njobs" ] || fail "program loaded $n jobs, expected $njobs"
  [ "$which" = installed ] || fail "program did not read the installed job library"
fi

[ "$fails" -eq 0 ] && echo "test_install: all passed"
exit $((fails > 0))
