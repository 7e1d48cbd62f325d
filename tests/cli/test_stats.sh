#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi stats`: each test on a file with a known answer (published or worked
# by hand, see tests/unit/test_stats.c for the derivations), JSON keys, and
# bad input (one-line error with file:line:column, exit status 2).
. "$(dirname "$0")/lib.sh"

# json_num KEY FILE: the first number after "KEY": in a JSON file.
json_num() {
  tr -d ' \n' <"$2" | grep -o "\"$1\":[-0-9.eE+]*" | head -1 | cut -d: -f2
}

expect_err() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "pfi $*: stderr is not one line: $(cat "$T/err")"
  grep -Eq -- "$pat" "$T/err" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
  [ ! -s "$T/out" ] || fail "pfi $*: wrote to stdout on error"
}

# ---- spearman: Wikipedia's worked example, rho = -29/165, p = 0.627188 ----
cat >"$T/iq.csv" <<'EOF'
IQ,hours_tv
106,7
100,27
86,2
101,50
99,28
103,29
97,20
113,12
112,6
110,17
EOF
"$PFI" stats spearman "$T/iq.csv" --x IQ --y hours_tv --format json >"$T/out" || fail spearman
near "$(json_num rho "$T/out")" -0.175757575758 1e-9 "spearman rho"
near "$(json_num p "$T/out")" 0.627188 1e-6 "spearman p"
[ "$(json_num n "$T/out")" = 10 ] || fail "spearman n"
"$PFI" stats spearman - --x IQ --y hours_tv <"$T/iq.csv" | grep -Eq '^rho +-0.175758$' ||
  fail "spearman table from stdin"

# ---- pearson: x = 1..5, y = 2,4,5,4,5: r = sqrt(0.6); p from t(3) ----
printf 'x,y,g\n1,2,a\n2,4,a\n3,5,b\n4,4,b\n5,5,b\n' >"$T/xy.csv"
"$PFI" stats pearson "$T/xy.csv" --x x --y y --format json >"$T/out" || fail pearson
near "$(json_num r "$T/out")" 0.774596669241 1e-9 "pearson r"
p_ref=$(awk 'BEGIN { t = sqrt(4.5); u = t/sqrt(3); printf "%.15g", 1 - 2/atan2(0,-1) * (u/(1+t*t/3) + atan2(u,1)) }')
near "$(json_num p "$T/out")" "$p_ref" 1e-9 "pearson p"

# ---- ols: slope 0.6, intercept 2.2, r2 0.6, leverage 0.6 0.3 0.2 0.3 0.6 ----
"$PFI" stats ols "$T/xy.csv" --y y --x x --format json >"$T/out" || fail ols
tr -d ' \n' <"$T/out" >"$T/flat"
grep -q '^{"coef":{"intercept":2.2[0-9]*,"x":0.6[0-9]*},"se":{"intercept":' "$T/flat" ||
  grep -q '^{"coef":{"intercept":2.1999[0-9]*,"x":0.5999[0-9]*},"se":{"intercept":' "$T/flat" ||
  fail "ols coef object: $(cat "$T/flat")"
near "$(grep -o '"x":[-0-9.e]*' "$T/flat" | head -1 | cut -d: -f2)" 0.6 1e-9 "ols slope"
near "$(json_num r2 "$T/out")" 0.6 1e-9 "ols r2"
near "$(json_num adj_r2 "$T/out")" 0.466666666667 1e-9 "ols adj_r2"
near "$(json_num rmse "$T/out")" 0.692820323028 1e-9 "ols rmse"
lev=$(grep -o '"leverage":\[[^]]*\]' "$T/flat" | sed 's/.*\[//; s/\]//')
i=0
for want in 0.6 0.3 0.2 0.3 0.6; do
  i=$((i + 1))
  near "$(echo "$lev" | cut -d, -f$i)" $want 1e-9 "leverage $i"
done
for key in coef se r2 adj_r2 rmse n leverage; do
  grep -q "\"$key\":" "$T/flat" || fail "ols json key $key"
done

# ---- kruskal: {1,1,1} {2,2,2} {2,2}: H = 7 exactly, p = exp(-3.5) ----
printf 'grp,val\nx,1\nx,1\nx,1\ny,2\ny,2\ny,2\nz,2\nz,2\n' >"$T/kw.csv"
"$PFI" stats kruskal "$T/kw.csv" --group grp --value val --format json >"$T/out" || fail kruskal
near "$(json_num H "$T/out")" 7 1e-9 "kruskal H"
near "$(json_num p "$T/out")" "$(awk 'BEGIN { printf "%.15g", exp(-3.5) }')" 1e-12 "kruskal p"
[ "$(json_num df "$T/out")" = 2 ] || fail "kruskal df"
tr -d ' \n' <"$T/out" >"$T/flat"
grep -q '"groups":\[{"name":"x","n":3,"median":1.0,"mean":1.0},{"name":"y","n":3,' "$T/flat" ||
  fail "kruskal groups: $(cat "$T/flat")"
# Dunn x vs y: z = -4/sqrt(30/7 * 2/3); Holm multiplies the smallest p by 3.
z_ref=$(awk 'BEGIN { printf "%.12f", -4/sqrt(30/7*2/3) }')
near "$(grep -o '"a":"x","b":"y","z":[-0-9.e]*' "$T/flat" | sed 's/.*"z"://')" "$z_ref" 1e-9 "dunn z"
grep -q '"a":"y","b":"z","z":0.0,"p":1.0,"p_holm":1.0' "$T/flat" || fail "dunn y-z"
"$PFI" stats kruskal "$T/kw.csv" --group grp --value val | grep -Eq '^H +7$' || fail "kruskal table"

# ---- fdr: Benjamini & Hochberg (1995): q <= 0.05 for the 4 smallest ----
printf 'test,p\n' >"$T/p.csv"
n=0
for p in 0.0001 0.0004 0.0019 0.0095 0.0201 0.0278 0.0298 0.0344 0.0459 0.3240 \
  0.4262 0.5719 0.6528 0.7590 1.0000; do
  n=$((n + 1))
  echo "t$n,$p" >>"$T/p.csv"
done
"$PFI" stats fdr "$T/p.csv" --p p --format json >"$T/out" || fail fdr
q=$(tr -d ' \n' <"$T/out" | sed 's/.*"q":\[//; s/\].*//')
[ "$(echo "$q" | tr , '\n' | wc -l)" -eq 15 ] || fail "fdr: 15 q-values"
echo "$q" | tr , '\n' | awk 'NR <= 4 && $1 > 0.05 { bad = 1 } NR > 4 && $1 <= 0.05 { bad = 1 } END { exit bad }' ||
  fail "fdr rejections: $q"
# q of the 4th: min over j >= 4 of 15 p_j / j = 15*0.0095/4 = 0.035625.
near "$(echo "$q" | cut -d, -f4)" 0.035625 1e-12 "fdr q4"

# ---- bad input ----
expect_err "xy.csv:1:1: missing column 'z'" stats pearson "$T/xy.csv" --x x --y z
printf 'x,y\n1,2\n2,abc\n3,4\n' >"$T/nonnum.csv"
expect_err "nonnum.csv:3:3: field 'y': not a number" stats spearman "$T/nonnum.csv" --x x --y y
printf 'x,y\n1,2\n2,nan\n3,4\n' >"$T/nan.csv"
expect_err "nan.csv:3:3: field 'y': NaN" stats pearson "$T/nan.csv" --x x --y y
printf 'x,y\n1,2\n-inf,3\n3,4\n' >"$T/inf.csv"
expect_err "inf.csv:3:1: field 'x': infinite" stats ols "$T/inf.csv" --y y --x x
printf 'x,y\n1,2\n2,\n3,4\n' >"$T/empty.csv"
expect_err "empty.csv:3:3: field 'y': empty value" stats spearman "$T/empty.csv" --x x --y y
printf 'x,y\n1,2\n2\n3,4\n' >"$T/short.csv"
expect_err "short.csv:3:.*: field 'y': missing" stats spearman "$T/short.csv" --x x --y y
printf 'x,y\n1,2\n2,3\n' >"$T/two.csv"
expect_err "two.csv: pearson: needs at least 3 pairs" stats pearson "$T/two.csv" --x x --y y
printf 'x,y\n1,2\n1,3\n1,4\n' >"$T/const.csv"
expect_err "const.csv: spearman: x is constant" stats spearman "$T/const.csv" --x x --y y
expect_err "const.csv: ols: predictor 1 is constant" stats ols "$T/const.csv" --y y --x x
printf 'p\n0.5\n1.2\n' >"$T/badp.csv"
expect_err "badp.csv:3:1: field 'p': p-value 1.2 outside" stats fdr "$T/badp.csv" --p p
printf 'g,v\na,1\n,2\nb,3\n' >"$T/nogrp.csv"
expect_err "nogrp.csv:3:1: field 'g': empty group name" stats kruskal "$T/nogrp.csv" --group g --value v
printf 'g,v\na,1\na,2\n' >"$T/onegrp.csv"
expect_err "onegrp.csv: kruskal: needs at least 2 groups" stats kruskal "$T/onegrp.csv" --group g --value v
printf 'x,y\n1,2\n2,"3\n' >"$T/quote.csv"
expect_err "quote.csv:3:3: unterminated quoted field" stats pearson "$T/quote.csv" --x x --y y
expect_err "nope.csv: cannot open" stats pearson "$T/nope.csv" --x x --y y
printf 'x,y,x\n1,1,9\n2,2,8\n3,4,7\n' >"$T/dupcol.csv"
expect_err "dupcol.csv:1:1: column 'x' appears twice in the header \\(columns 1 and 3\\)" \
  stats pearson "$T/dupcol.csv" --x x --y y
printf 'x,y\n1,1\n2,2\n3,4\0005\n' >"$T/nul.csv"
expect_err "nul.csv:4:4: NUL byte" stats pearson "$T/nul.csv" --x x --y y
# y near the double's limit: the fit overflows; an error, not inf or nan.
printf 'x,y\n1,1e308\n2,-1e308\n3,1e308\n4,3\n' >"$T/ovf.csv"
expect_err "ovf.csv: ols: the intercept coefficient or its standard error is not a finite" \
  stats ols "$T/ovf.csv" --x x --y y

# One group per row (an identifier column) asked for n^2/2 Dunn pairs and
# ran for minutes on 20000 rows: at most 256 groups, located at the row of
# the 257th.
awk 'BEGIN { print "g,v"; for (i = 1; i <= 20000; i++) print "id" i "," i }' >"$T/ids.csv"
expect_err "ids.csv:258:1: field 'g': more than 256 distinct groups" \
  stats kruskal "$T/ids.csv" --group g --value v
awk 'BEGIN { print "g,v"; for (i = 1; i <= 512; i++) print "g" (i % 256) "," i }' >"$T/g256.csv"
"$PFI" stats kruskal "$T/g256.csv" --group g --value v --format json >"$T/out" ||
  fail "kruskal with 256 groups"
[ "$(grep -c '"p_holm"' "$T/out")" -eq 32640 ] || fail "kruskal 256 groups: not 32640 Dunn pairs"

# Group and column names that are not UTF-8: the group and the coefficient
# used to vanish from the JSON; each bad byte is now U+FFFD.
R=$(printf '\357\277\275')
printf 'g,v\n\xffa,1\n\xffa,2\nb,3\nb,4\n' >"$T/latin1.csv"
"$PFI" stats kruskal "$T/latin1.csv" --group g --value v --format json >"$T/out" ||
  fail "kruskal non-UTF-8 group"
[ "$(LC_ALL=C grep -c "\"name\": \"${R}a\"" "$T/out")" -eq 1 ] ||
  fail "kruskal non-UTF-8 group missing: $(cat "$T/out")"
LC_ALL=C grep -q "\"a\": \"${R}a\"" "$T/out" || fail "dunn non-UTF-8 group missing"
printf 'y,\xffx\n1,2\n2,3\n3,5\n4,4\n' >"$T/latin1x.csv"
"$PFI" stats ols "$T/latin1x.csv" --y y --x "$(printf '\377x')" --format json >"$T/out" ||
  fail "ols non-UTF-8 column"
[ "$(LC_ALL=C grep -c "\"${R}x\": " "$T/out")" -eq 2 ] ||
  fail "ols non-UTF-8 coefficient missing: $(cat "$T/out")"

# Group names with a line break or a tab keep the table's rows and columns.
printf 'g,v\n"x\ny",1\n"x\ny",2\n"p\tq",3\n"p\tq",4\n' >"$T/ctl.csv"
"$PFI" stats kruskal "$T/ctl.csv" --group g --value v >"$T/out" || fail "kruskal control characters"
grep -q '^x?y  *2  ' "$T/out" || fail "kruskal table group x?y: $(cat "$T/out")"
grep -q '^x?y    p?q  *-1.5492 ' "$T/out" || fail "kruskal table pair: $(cat "$T/out")"

# ---- values near the double's limits give the numbers small ones give ----
# r is invariant under scaling x; x = (1, -1, 1, 0), y = (1, 2, 4, 3) by
# hand: Sxy = 0.5, Sxx = 2.75, Syy = 5, r = 0.5 / sqrt(13.75) = 0.1348399725.
# Scaled by 1e308 the sums of squares overflowed and r read 0.
printf 'x,y\n1e308,1\n-1e308,2\n1e308,4\n0,3\n' >"$T/big.csv"
"$PFI" stats pearson "$T/big.csv" --x x --y y --format json >"$T/out" || fail "pearson big"
near "$(json_num r "$T/out")" 0.134839972493 1e-11 "pearson r of values near 1e308"
# x = (1, 2, 3, 0) e-300, y as above: Sxy = 2, Sxx = Syy = 5, r = 0.4 (the
# squares underflowed to 0 and r read 1).
printf 'x,y\n1e-300,1\n2e-300,2\n3e-300,4\n0,3\n' >"$T/tiny.csv"
"$PFI" stats pearson "$T/tiny.csv" --x x --y y --format json >"$T/out" || fail "pearson tiny"
near "$(json_num r "$T/out")" 0.4 1e-12 "pearson r of values near 1e-300"
# Group a = (1e308, 1e308): mean and median 1e308, not inf.
printf 'g,v\na,1e308\na,1e308\nb,1\nb,2\n' >"$T/kbig.csv"
"$PFI" stats kruskal "$T/kbig.csv" --group g --value v --format json >"$T/out" || fail "kruskal big"
tr -d ' \n' <"$T/out" | grep -q '"name":"a","n":2,"median":1e308,"mean":1e308' ||
  fail "kruskal mean/median near 1e308: $(tr -d ' \n' <"$T/out")"

# ---- usage ----
"$PFI" stats --help | grep -q '^usage: pfi stats spearman' || fail "--help"
for args in "median $T/xy.csv" "pearson" "pearson $T/xy.csv --x x" \
  "kruskal $T/kw.csv --group grp --value val --x x" "fdr $T/p.csv --p p --format csv"; do
  # shellcheck disable=SC2086
  "$PFI" stats $args >/dev/null 2>&1
  [ $? -eq 2 ] || fail "pfi stats $args: exit status not 2"
done

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed" >&2
  exit 1
fi
echo "test_stats: all checks passed"
