#!/usr/bin/env bash
# Installs the Debian packages pfi needs, skipping those already present,
# and says which it installs and what for. Needs root (or sudo).
#   (no option)  everything `make check` needs: the build, the report's
#                figures, and every test suite (sanitizers, fuzzing, the
#                browser, fleet, Slurm and Prometheus tests)
#   --demo       only what `make demo` needs: the build of pfi and the
#                report's figures
#   --bench      everything, and the peers `make bench` measures pfi against
set -euo pipefail
mode=all
case "${1:-}" in
"") ;;
--demo) mode=demo ;;
--bench) mode=bench ;;
*)
  echo "usage: $0 [--demo|--bench]" >&2
  exit 2
  ;;
esac

pkgs=()
declare -A why=()
# need PURPOSE PACKAGE...: the packages and what they are for.
need() {
  local purpose=$1 p
  shift
  for p in "$@"; do
    pkgs+=("$p")
    why[$p]=$purpose
  done
}
# libnats and libmicrohttpd are libpfi's fleet, part of every build.
need "to build pfi" build-essential cmake pkg-config libgsl-dev libjansson-dev \
  libsqlite3-dev libcurl4-openssl-dev libnats-dev libmicrohttpd-dev
# The build directory is configured with the tests, whose libraries CMake
# looks for, so that `make check` after `make demo` reuses it.
need "to configure the build (the tests' libraries)" libcmocka-dev libglpk-dev
need "the report's figures" gnuplot-nox
if [ "$mode" != demo ]; then
  need "fuzzing (make fuzz)" clang libclang-rt-14-dev
  need "the oracle's test against an independent solver" glpk-utils
  need "the report pages' browser tests" chromium
  need "the test scripts" sqlite3 python3
  need "the manual pages' test (groff)" groff-base
  need "the fleet tests" nats-server curl iproute2 jq
  need "the TLS tests' certificates" openssl
  need "the fleet tests' clock steps (libfaketime)" faketime
  need "the Slurm tests" slurm-wlm munge
  need "the Prometheus tests" prometheus
  need "the Debian package's test (dpkg-buildpackage, lintian)" debhelper dpkg-dev lintian
  need "the trainer package's and real-job sweep tests (a real PyTorch loop)" python3-torch
fi
if [ "$mode" = bench ]; then
  need "make bench's peers" python3-numpy python3-pandas python3-prometheus-client
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
what="make check"
[ "$mode" = demo ] && what="make demo"
[ "$mode" = bench ] && what="make bench"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: the ${#pkgs[@]} packages $what needs are present"
  exit 0
fi
echo "install-deps: installing ${#missing[@]} of the ${#pkgs[@]} packages $what needs (apt-get):"
for p in "${missing[@]}"; do
  printf '  %-28s %s\n' "$p" "${why[$p]}"
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
