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

# tls_certs DIR: a test CA (ca.pem) and what it signed: a server
# certificate for 127.0.0.1 and localhost (server.pem, server.key) and a
# client certificate (client.pem, client.key); another CA (other-ca.pem)
# and a client certificate it signed (other-client.pem, .key); a
# self-signed server certificate for 127.0.0.1 (self.pem, self.key). EC
# P-256 keys, mode 0600, valid two days (openssl).
tls_certs() {
  local d=$1 n
  command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
  mkdir -p "$d"
  (
    cd "$d" || exit 1
    umask 077
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
    for n in ca other-ca; do
      key "$n.key"
      openssl req -x509 -new -key "$n.key" -out "$n.pem" -days 2 -subj "/CN=pfi test $n" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
    done
    # sign NAME CA CN EXT: NAME.pem from NAME.key, signed by CA.
    sign() {
      key "$1.key"
      openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
      printf '%s\n' "$4" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
        -out "$1.pem" -days 2 -extfile "$1.ext" 2>/dev/null
    }
    sign server ca 127.0.0.1 "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
    sign client ca pfi-client "extendedKeyUsage=clientAuth"
    sign other-client other-ca pfi-client "extendedKeyUsage=clientAuth"
    key self.key
    openssl req -x509 -new -key self.key -out self.pem -days 2 -subj /CN=127.0.0.1 \
      -addext subjectAltName=IP:127.0.0.1 2>/dev/null
    chmod 0644 ./*.pem
  ) || { fail "tls_certs: openssl failed"; exit 1; }
  for n in ca server client other-client self; do
    [ -s "$d/$n.pem" ] || { fail "tls_certs: no $n.pem"; exit 1; }
  done
}
