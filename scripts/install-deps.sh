#!/usr/bin/env bash
# Installs the Debian packages pfi needs to build, test and draw figures,
# skipping those already present. Needs root (or sudo).
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libgsl-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev
      libcmocka-dev libglpk-dev glpk-utils gnuplot-nox chromium sqlite3
      python3
      nats-server libnats-dev libmicrohttpd-dev curl iproute2
      slurm-wlm munge prometheus faketime)
# --bench: also the peers `make bench` measures pfi against.
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(python3-numpy python3-pandas python3-prometheus-client)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
