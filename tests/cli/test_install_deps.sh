#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# make demo installs and builds only what the demo runs, and says what it
# installs: scripts/install-deps.sh --demo asks apt-get for the packages
# that building pfi and the report's figures need (not Slurm, munge,
# Prometheus, clang or chromium, which only tests use), printing each
# with what it is for; with no option it asks for all of them (make
# check). make demo builds the pfi target alone (not the tests,
# benchmarks and fuzz replayers). Run against stand-ins for dpkg-query
# (every package missing) and apt-get (records its arguments): nothing is
# installed.
. "$(dirname "$0")/lib.sh"
B=${PFI_BUILD_DIR:?}
command -v make >/dev/null || { echo "SKIP: make not found"; exit 77; }

mkdir "$T/bin"
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/sh
exit 1
SH
cat >"$T/bin/apt-get" <<SH
#!/bin/sh
echo "\$*" >>"$T/apt.log"
SH
# Root or not: sudo, if it is asked for, is the same stand-in.
cp "$T/bin/apt-get" "$T/bin/sudo"
sed -i 's/^echo /echo sudo /' "$T/bin/sudo"
chmod +x "$T/bin/"*

# install PACKAGES-WANTED ARGS...: the packages apt-get was asked to install
# equal PACKAGES-WANTED (sorted), and each is named with a purpose.
install() {
  local want=$1
  shift
  rm -f "$T/apt.log"
  PATH="$T/bin:$PATH" bash scripts/install-deps.sh "$@" >"$T/out" 2>"$T/err" ||
    fail "install-deps $*: exit $?: $(cat "$T/err")"
  local got
  got=$(sed 's/^sudo apt-get //' "$T/apt.log" | grep '^install ' | tr ' ' '\n' | grep -v '^-\|^install$' | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "install-deps $*: apt-get install $got, expected $want"
  local p
  for p in $want; do
    grep -qE "^  $p +[a-z]" "$T/out" || fail "install-deps $*: $p is not named with its purpose: $(cat "$T/out")"
  done
}
demo="build-essential cmake gnuplot-nox libcmocka-dev libcurl4-openssl-dev libglpk-dev libgsl-dev \
libjansson-dev libmicrohttpd-dev libnats-dev libsqlite3-dev pkg-config "
install "$demo" --demo
head -1 "$T/out" | grep -q "^install-deps: installing 12 of the 12 packages make demo needs (apt-get):$" ||
  fail "install-deps --demo: $(head -1 "$T/out")"
all=$(printf '%s\n' $demo chromium clang curl debhelper dpkg-dev faketime glpk-utils groff-base iproute2 jq \
  libclang-rt-14-dev lintian munge nats-server openssl \
  prometheus python3 python3-cryptography python3-torch slurm-wlm sqlite3 | sort | tr '\n' ' ')
install "$all"
# Not root: the same packages, through sudo.
printf '#!/bin/sh\necho 1000\n' >"$T/bin/id"
chmod +x "$T/bin/id"
install "$demo" --demo
grep -q '^sudo apt-get install ' "$T/apt.log" || fail "install-deps as a user: no sudo: $(cat "$T/apt.log")"
rm "$T/bin/id"
PATH="$T/bin:$PATH" bash scripts/install-deps.sh --nonsense >/dev/null 2>&1
[ $? = 2 ] || fail "install-deps --nonsense: not a usage error"

# What make demo runs (make -n: nothing is run): the demo's packages, the
# pfi target alone, the demo script.
make -n -C "$PFI_SOURCE_DIR" BUILD="$B" demo >"$T/n.out" 2>"$T/n.err" || fail "make -n demo: $(tail -3 "$T/n.err")"
grep -q 'install-deps.sh --demo$' "$T/n.out" || fail "make demo does not install the demo's packages: $(cat "$T/n.out")"
grep -q "^cmake --build $B .*--target pfi$" "$T/n.out" || fail "make demo does not build the pfi target: $(cat "$T/n.out")"
grep -E "^cmake --build " "$T/n.out" | grep -qv -- "--target pfi$" &&
  fail "make demo builds more than pfi: $(grep -E '^cmake --build ' "$T/n.out")"
grep -q "scripts/demo.sh $B" "$T/n.out" || fail "make demo does not run the demo"
# scripts/demo.sh runs pfi and nothing else the build makes.
grep -oE '\$build/[A-Za-z0-9_-]+|"\$pfi"' scripts/demo.sh | sort -u | grep -qv '^"\$pfi"$\|^\$build/pfi$' &&
  fail "scripts/demo.sh runs another program of the build"
exit $((fails > 0))
