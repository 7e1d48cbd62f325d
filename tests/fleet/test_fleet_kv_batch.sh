#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid's pipelined compare-and-set (pfi_nats_kv_cas_batch) on a real
# nats-server: 300 keys created with many writes awaiting their answers at
# once, each read back at the revision the batch reported; the same
# creations again all lose; an update of every key on its revision after
# another write moved key 7 loses on key 7 alone (its value stays the other
# writer's), and once the loss is known no further write is sent; plain
# puts write every key. The key listing (one stream-information request)
# finds the 300 keys.
. "$(dirname "$0")/lib.sh"
PROBE=${PFI_PROBE:?}
setup_nats
out() { grep "^$1: " "$T/out.$2" | sed "s/^$1: //"; }

# Every write in flight at once (window above the count).
timeout 60 "$PROBE" "$NATS_URL" pfid "$T/pw.pfid" kvbatch a 300,1000 >"$T/out.a" 2>"$T/err.a" ||
  fail "kvbatch a: $(cat "$T/err.a")"
[ "$(out create a)" = "written 300 conflicts 0 not-sent 0 failed 0 first-conflict -1 last-written 299" ] ||
  fail "create: $(out create a)"
[ "$(out 'read back' a)" = "300 of 300 at the batch's revisions" ] || fail "read back: $(out 'read back' a)"
[ "$(out listed a)" = "300 keys" ] || fail "listed: $(out listed a)"
# All 300 were in flight before the first answer: every one loses.
[ "$(out 'create again' a)" = "written 0 conflicts 300 not-sent 0 failed 0 first-conflict 0 last-written -1" ] ||
  fail "create again: $(out 'create again' a)"
[ "$(out update a)" = "written 299 conflicts 1 not-sent 0 failed 0 first-conflict 7 last-written 299" ] ||
  fail "update: $(out update a)"
[ "$(out 'values agree with the outcomes' a)" = "300 of 300" ] ||
  fail "values: $(out 'values agree with the outcomes' a)"

# Four writes in flight: after key 7's loss at most the three already sent
# are written, the rest are not sent; keys 0..6 are written.
timeout 60 "$PROBE" "$NATS_URL" pfid "$T/pw.pfid" kvbatch b 300,4 >"$T/out.b" 2>"$T/err.b" ||
  fail "kvbatch b: $(cat "$T/err.b")"
[ "$(out create b)" = "written 300 conflicts 0 not-sent 0 failed 0 first-conflict -1 last-written 299" ] ||
  fail "create (window 4): $(out create b)"
[ "$(out 'read back' b)" = "300 of 300 at the batch's revisions" ] || fail "read back (window 4)"
read -r _ w _ c _ ns _ f _ fc _ lw <<<"$(out update b)"
[ "$c" = 1 ] && [ "$fc" = 7 ] && [ "$f" = 0 ] || fail "update (window 4): $(out update b)"
[ "$w" -ge 7 ] && [ "$w" -le 10 ] && [ "$lw" -le 10 ] || fail "update (window 4) wrote past the window: $(out update b)"
[ $((w + c + ns)) = 300 ] && [ "$ns" -ge 289 ] || fail "update (window 4): $(out update b)"
# The first creations' repeat stops at the first loss too.
read -r _ w _ c _ ns _ f _ <<<"$(out 'create again' b)"
[ "$w" = 0 ] && [ "$c" -ge 1 ] && [ "$c" -le 4 ] && [ $((c + ns)) = 300 ] ||
  fail "create again (window 4): $(out 'create again' b)"
[ "$(out 'values agree with the outcomes' b)" = "300 of 300" ] ||
  fail "values (window 4): $(out 'values agree with the outcomes' b)"
# Plain puts (no expected revision) write every key.
for x in a b; do
  [ "$(out put $x)" = "written 300 conflicts 0 not-sent 0 failed 0 first-conflict -1 last-written 299" ] ||
    fail "put ($x): $(out put $x)"
  [ "$(out 'put read back' $x)" = "300 of 300" ] || fail "put read back ($x): $(out 'put read back' $x)"
done
[ "$fails" = 0 ] || { cat "$T/out.a" "$T/out.b" >&2; exit 1; }
echo "ok"
