#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# libcurl is loaded on a process's first HTTP request (src/base/curl_dl.c),
# not at start: pfi does not name it among the libraries it needs, a
# command that makes no request never loads it (the dynamic loader's own
# account, LD_DEBUG=files), and one that makes a request loads it and gets
# libcurl's answer (a refused connection to a closed loopback port, here
# the discard port 9, nothing listening on it). pfi does not need the NATS
# client either (linked --as-needed; only pfid and pfi-agent speak NATS).
# libmicrohttpd likewise (src/base/mhd_dl.c): loaded by the first server a
# process starts (pfid's API, `pfi grid bridge --listen`), by no other.
. "$(dirname "$0")/lib.sh"
command -v readelf >/dev/null || { echo "test_lazy_curl: no readelf, skipped"; exit 0; }
readelf -d "$PFI" >"$T/dyn" || fail "readelf -d $PFI"
grep -q 'NEEDED.*libcurl' "$T/dyn" && fail "pfi names libcurl as needed: $(grep libcurl "$T/dyn")"
grep -q 'NEEDED.*libnats' "$T/dyn" && fail "pfi names libnats as needed: $(grep libnats "$T/dyn")"
grep -q 'NEEDED.*libmicrohttpd' "$T/dyn" && fail "pfi names libmicrohttpd as needed: $(grep libmicrohttpd "$T/dyn")"
grep -q 'NEEDED.*libc\.so' "$T/dyn" || fail "readelf shows no NEEDED libc: the check is broken"

printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\na,500,800,95\na,300,600,80\n' >"$T/c.csv"
LD_DEBUG=files "$PFI" index "$T/c.csv" --definition ratio --format csv >"$T/out" 2>"$T/ld" ||
  fail "pfi index: exit $?"
grep -q '^a,3,' "$T/out" || fail "pfi index: $(cat "$T/out") (PFI 3 expected: test_index.sh works it)"
grep -q 'file=libm\.so' "$T/ld" || fail "LD_DEBUG=files lists no libm: the check is broken"
grep -q 'file=libcurl' "$T/ld" && fail "pfi index loaded libcurl"
grep -q 'file=libmicrohttpd' "$T/ld" && fail "pfi index loaded libmicrohttpd"
LD_DEBUG=files "$PFI" --version >"$T/out" 2>"$T/ld" || fail "pfi --version: exit $?"
grep -q 'file=libm\.so' "$T/ld" || fail "pfi --version: LD_DEBUG=files lists no libm: the check is broken"
grep -Eq 'file=lib(curl|microhttpd)' "$T/ld" && fail "pfi --version loaded $(grep -Eo 'file=lib(curl|microhttpd)[^ ]*' "$T/ld")"

# The bridge's webhook loads libmicrohttpd when it starts listening; here on
# an address of the documentation range (192.0.2.1, RFC 5737), which no
# host has: libmicrohttpd's bind fails, the bridge says so and exits 1
# (nothing is sent: the pfid and VTN clients make no request before).
printf 'tok\n' >"$T/tok"
printf 'sec\n' >"$T/sec"
chmod 600 "$T/tok" "$T/sec"
LD_DEBUG=files "$PFI" grid bridge --pfid http://127.0.0.1:9 --pfid-token-file "$T/tok" \
  --vtn http://127.0.0.1:9/openadr3 --client-id v --client-secret-file "$T/sec" --program p \
  --listen 192.0.2.1:8471 >"$T/out" 2>"$T/ld"
rc=$?
[ "$rc" = 1 ] || fail "bridge --listen on 192.0.2.1: exit $rc, expected 1 ($(grep '^pfi' "$T/ld"))"
grep -q 'file=libmicrohttpd\.so\.12 .*dynamically loaded' "$T/ld" || fail "bridge --listen did not load libmicrohttpd"
grep -q '^pfi grid: cannot listen on 192.0.2.1:8471' "$T/ld" ||
  fail "bridge --listen's message: $(grep '^pfi' "$T/ld")"

LD_DEBUG=files "$PFI" ctl --url http://127.0.0.1:9 status >"$T/out" 2>"$T/ld"
rc=$?
[ "$rc" = 1 ] || fail "pfi ctl to a closed port: exit $rc, expected 1"
grep -q 'file=libcurl\.so\.4 .*dynamically loaded' "$T/ld" || fail "pfi ctl did not load libcurl"
grep -q "^pfi ctl: http://127.0.0.1:9/v1/status: Couldn't connect to server" "$T/ld" ||
  fail "pfi ctl's message: $(grep '^pfi ctl' "$T/ld")"
[ "$fails" -eq 0 ] && echo "test_lazy_curl: all passed"
exit $((fails > 0))
