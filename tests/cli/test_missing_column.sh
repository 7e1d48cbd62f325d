#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A missing column is reported at the file's line 1 with the columns its
# header has, and, for a curves file (read by every command with --map),
# how --map reads another column instead; a wrong mapping says to check
# --map. Headers too wide for one message end with the count left out.
. "$(dirname "$0")/lib.sh"

# err_is WANT CMD...: CMD exits 2 and its whole stderr is WANT, whose
# "pfi: " becomes the command's prefix "pfi CMD: ".
err_is() {
  local want=${1/#pfi: /pfi $2: }
  shift
  "$PFI" "$@" >/dev/null 2>"$T/err"
  local rc=$?
  [ "$rc" = 2 ] || fail "pfi $*: exit status $rc, expected 2"
  [ "$(cat "$T/err")" = "$want" ] || fail "pfi $*: '$(cat "$T/err")', expected '$want'"
}

printf 'job,power,tput\na,700,100\na,500,90\n' >"$T/c.csv"
err_is "pfi: $T/c.csv:1:1: missing column 'cap_w'; the header has job, power, tput; --map cap_w=COLUMN reads another column as cap_w" \
  index "$T/c.csv"
printf 'job,cap_w,power\na,700,100\na,500,90\n' >"$T/c2.csv"
err_is "pfi: $T/c2.csv:1:1: missing column 'power_w'; the header has job, cap_w, power; --map power_w=COLUMN reads another column as power_w" \
  index "$T/c2.csv"
# Mapped, and the mapped name absent.
err_is "pfi: $T/c2.csv:1:1: missing column 'watts' (mapped to power_w); the header has job, cap_w, power; check --map" \
  index "$T/c2.csv" --map power_w=watts
err_is "pfi: $T/c2.csv:1:1: missing column 'q' (mapped to tokens_per_s as 1/q); the header has job, cap_w, power; check --map" \
  index "$T/c2.csv" --map power_w=power,tokens_per_s=1/q
err_is "pfi: $T/c2.csv:1:1: missing column 'x' (mapped to job as job+x); the header has job, cap_w, power; check --map" \
  index "$T/c2.csv" --map job=job+x,power_w=power
# The same reader behind another command with --map.
err_is "pfi: $T/c.csv:1:1: missing column 'cap_w'; the header has job, power, tput; --map cap_w=COLUMN reads another column as cap_w" \
  allocate --curves "$T/c.csv" --cut 0.2

# Features files: the columns found.
printf 'job,pfi,sm\na,1.1,0.5\nb,1.2,0.6\nc,1.0,0.4\nd,1.3,0.7\n' >"$T/f.csv"
err_is "pfi: $T/f.csv:1:1: features absent from the file: mem; the header has job, pfi, sm" \
  fit "$T/f.csv" --pfi-column pfi --features sm,mem
err_is "pfi: $T/f.csv:1:1: no column 'pfx'; the header has job, pfi, sm" \
  fit "$T/f.csv" --pfi-column pfx --features sm
err_is "pfi: $T/f.csv:1:1: --cluster: no column 'grp'; the header has job, pfi, sm" \
  fit "$T/f.csv" --pfi-column pfi --features sm --cluster grp --eval loco

# A wide header: as many names as fit, then how many were left out, and
# the whole message within one error's 512 bytes.
hdr=job
for i in $(seq 1 60); do hdr="$hdr,column_number_$i"; done
printf '%s\na\n' "$hdr" >"$T/wide.csv"
"$PFI" index "$T/wide.csv" >/dev/null 2>"$T/err"
grep -q "missing column 'cap_w'; the header has job, column_number_1, column_number_2, " "$T/err" ||
  fail "wide header: $(cat "$T/err")"
shown=$(grep -o 'column_number_[0-9]*' "$T/err" | wc -l)
more=$(sed -n 's/.*, \.\.\. (\([0-9]*\) more).*/\1/p' "$T/err")
[ -n "$more" ] || fail "wide header: no count of the columns left out: $(cat "$T/err")"
[ "$((shown + 1 + ${more:-0}))" = 61 ] || fail "wide header: $shown shown + job + $more more != 61 columns"
grep -q -- "--map cap_w=COLUMN" "$T/err" || fail "wide header: the --map hint was cut"
[ "$(wc -c <"$T/err")" -le 540 ] || fail "wide header: message of $(wc -c <"$T/err") bytes"
[ "$fails" -eq 0 ] && echo "test_missing_column: all passed"
exit $((fails > 0))
