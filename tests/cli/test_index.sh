#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi index`: values on hand-made files, output formats, options, and every
# class of bad input (one-line error with file:line:column, exit status 2).
. "$(dirname "$0")/lib.sh"

# expect_err PATTERN ARGS...: exit status 2, exactly one line on stderr,
# matching the extended regex PATTERN, nothing on stdout.
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

# expect_usage PATTERN ARGS...: exit status 2, first stderr line matching
# PATTERN (usage errors add a "Try 'pfi index --help'." line).
expect_usage() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  head -1 "$T/err" | grep -Eq -- "$pat" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
  [ ! -s "$T/out" ] || fail "pfi $*: wrote to stdout on error"
}

# ---- values worked by hand ----
# Caps 300/500/700 W, P 600/800/1000 W, T 80/95/100:
# ratio = mean((1-0.8)/(1-0.95), (1-0.6)/(1-0.8)) = mean(4, 2) = 3;
# area = 0.24 + 0.175 + 0.195 - 0.5 = 0.11 (trapezoids from (0,0)).
cat >"$T/three.csv" <<'EOF'
job,cap_w,power_w,tokens_per_s,note
a,700,1000,100,uncapped
a,500,800,95,
a,300,600,80,
EOF
"$PFI" index "$T/three.csv" --format csv >"$T/out" || fail "index three.csv"
head -1 "$T/out" | grep -qx 'job,pfi,pfi_area,pfi_ce,points_used,excluded_caps,t_max,p_max,excluded_why,pfi_note,noise_source,noise_rel_sd_power,noise_rel_sd_tokens' ||
  fail "csv header: $(head -1 "$T/out")"
IFS=, read -r job pfi area ce used ex tmax pmax why < <(sed -n 2p "$T/out")
[ "$job" = a ] || fail "job name '$job'"
near "$pfi" 3 1e-9 "ratio PFI"
near "$area" 0.11 1e-9 "area PFI"
# CE: 1 - slope of log T on log P, computed here by awk.
ce_ref=$(awk 'BEGIN { u[1]=log(600); u[2]=log(800); u[3]=log(1000);
  v[1]=log(80); v[2]=log(95); v[3]=log(100);
  for (i=1;i<=3;i++) { mu+=u[i]/3; mv+=v[i]/3 }
  for (i=1;i<=3;i++) { sxy+=(u[i]-mu)*(v[i]-mv); sxx+=(u[i]-mu)^2 }
  printf "%.12f", 1 - sxy/sxx }')
near "$ce" "$ce_ref" 1e-8 "CE PFI"
[ "$used" = 2 ] && [ "$ex" = - ] && [ "$tmax" = 100 ] && [ "$pmax" = 1000 ] ||
  fail "points_used/excluded/t_max/p_max: $used $ex $tmax $pmax"

# Standard input, and the same bytes as from the file.
"$PFI" index - --format csv <"$T/three.csv" >"$T/out2" || fail "index from stdin"
cmp -s "$T/out" "$T/out2" || fail "stdin output differs from file output"

# --definition ratio: only the ratio column.
"$PFI" index "$T/three.csv" --definition ratio --format csv | head -1 |
  grep -qx 'job,pfi,points_used,excluded_caps,t_max,p_max,excluded_why,pfi_note,noise_source,noise_rel_sd_power,noise_rel_sd_tokens' || fail "--definition ratio columns"
"$PFI" index "$T/three.csv" --definition area --format json >"$T/out" || fail "json area"
grep -q '"pfi_area"' "$T/out" && ! grep -q '"pfi":' "$T/out" || fail "--definition area json keys"

# ---- excluded caps, undefined values, quoting ----
cat >"$T/excl.csv" <<'EOF'
job,cap_w,power_w,tokens_per_s
"x,y",700,1000,100
"x,y",600,990,100
"x,y",300,600,80
flat,700,1000,100
flat,500,900,100
EOF
"$PFI" index "$T/excl.csv" --format csv --ci 50 >"$T/out" || fail "index excl.csv"
grep -q '^"x,y",2,' "$T/out" || fail "quoted job or ratio 2: $(cat "$T/out")"
grep -q '^"x,y",.*,1,600,100,1000,' "$T/out" || fail "excluded cap 600: $(cat "$T/out")"
grep -q '^flat,-,' "$T/out" || fail "undefined ratio printed as -: $(cat "$T/out")"
grep -qi 'nan' "$T/out" && fail "NaN in csv output"
"$PFI" index "$T/excl.csv" --format json --ci 50 >"$T/out" || fail "json excl.csv"
grep -qi 'nan' "$T/out" && fail "NaN in json output"
tr -d ' \n' <"$T/out" | grep -q '"job":"flat","pfi":null,.*"ci95":null' ||
  fail "flat job json: $(cat "$T/out")"
tr -d ' \n' <"$T/out" | grep -q '"excluded_caps":\[600.0\]' || fail "excluded_caps json"
"$PFI" index "$T/excl.csv" >"$T/out" || fail "table excl.csv"
grep -Eq '^flat +- ' "$T/out" || fail "table: undefined as -"

# ---- the real A100 sweep through --map: all 8 workloads ----
MAP='job=Workload,cap_w=GPU power cap,power_w=total GPU power,tokens_per_s=throughput'
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --format csv >"$T/out" ||
  fail "real sweep"
[ "$(tail -n +2 "$T/out" | wc -l)" -eq 8 ] || fail "real sweep: not 8 workloads"
tail -n +2 "$T/out" | cut -d, -f2 | grep -q '^-$' && fail "real sweep: undefined PFI"

# ---- intervals: same seed same bytes, default noise stated ----
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --ci 2000 --seed 5 >"$T/a" || fail "ci run 1"
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --ci 2000 --seed 5 >"$T/b" || fail "ci run 2"
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --ci 2000 --seed 6 >"$T/c" || fail "ci run 3"
cmp -s "$T/a" "$T/b" || fail "same seed gave different output"
cmp -s "$T/a" "$T/c" && fail "different seeds gave the same intervals"
grep -q 'Noise of points without power_sd_w/tokens_sd: 0.04 % of power, 0.05 % of throughput (paper default)' "$T/a" ||
  fail "default noise not stated: $(tail -2 "$T/a")"
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --ci 500 --format json >"$T/out"
tr -d ' \n' <"$T/out" | grep -q '"ci95":\[[0-9.]*,[0-9.]*\]' || fail "json ci95 pair"
tr -d ' \n' <"$T/out" | grep -q '"ci_default_rel_sd":{"power":0.0004,"tokens":0.0005}' ||
  fail "json default noise"
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --format json | tr -d ' \n' |
  grep -q '"ci95":null' || fail "ci95 null without --ci"
# Every interval contains its point estimate (noise of 0.05 % cannot move
# the ratio PFI of these curves by more than a few %).
"$PFI" index data/real/dvfs_sweep.csv --map "$MAP" --ci 2000 --format csv |
  awk -F, 'NR > 1 && !($5 <= $2 && $2 <= $6) { bad = 1 } END { exit bad }' ||
  fail "a point estimate lies outside its interval"

# Measured noise columns are used instead of the default: zero noise gives
# a degenerate interval at the estimate, and no default-noise statement.
cat >"$T/sd.csv" <<'EOF'
job,cap_w,power_w,tokens_per_s,power_sd_w,tokens_sd
a,700,1000,100,0,0
a,300,600,80,0,0
EOF
"$PFI" index "$T/sd.csv" --ci 100 --format csv >"$T/out" || fail "sd.csv"
IFS=, read -r _ pfi _ _ lo hi _ < <(sed -n 2p "$T/out")
[ "$lo" = 2 ] && [ "$hi" = 2 ] && [ "$pfi" = 2 ] || fail "zero-noise interval: $(cat "$T/out")"
grep -q ',-,-$' "$T/out" || fail "default noise reported for measured sd"

# --noise sets the default relative noise: 0,0 gives a degenerate interval
# at the estimate (3 for three.csv) and the statement says so.
"$PFI" index "$T/three.csv" --ci 20 --noise 0,0 >"$T/out" || fail "--noise 0,0"
grep -Eq '^a +3.0000  \[3.0000, 3.0000\]' "$T/out" || fail "--noise 0,0 interval: $(cat "$T/out")"
grep -q 'Noise of points without power_sd_w/tokens_sd: 0 % of power, 0 % of throughput (given)' "$T/out" ||
  fail "--noise statement: $(cat "$T/out")"
expect_usage "--noise" index "$T/three.csv" --ci 20 --noise 5
"$PFI" help index | grep -q '^usage: pfi index' || fail "pfi help index"

# ---- --caps ----
cat >"$T/grid.csv" <<'EOF'
job,cap_w,power_w,tokens_per_s
a,200,3000,600
a,400,4200,800
a,500,4800,900
a,700,5600,1000
b,200,2000,300
b,500,4000,700
b,700,5000,1000
EOF
# On 200,500,700: a = mean((1-4800/5600)/(1-0.9), (1-3000/5600)/(1-0.6)).
"$PFI" index "$T/grid.csv" --caps 200,500,700 --definition ratio --format csv >"$T/out" ||
  fail "--caps"
ref=$(awk 'BEGIN { printf "%.12f", ((1-4800/5600)/0.1 + (1-3000/5600)/0.4)/2 }')
near "$(sed -n 2p "$T/out" | cut -d, -f2)" "$ref" 1e-9 "--caps ratio PFI"
expect_err "grid.csv:6:1: job 'b' has no point at cap 400 W" index "$T/grid.csv" --caps 200:400:200
expect_usage "--caps: 'abc': not a number" index "$T/grid.csv" --caps 200,abc

# ---- bad input: each class gives file:line:column and exit 2 ----
printf 'job,cap_w,tokens_per_s\na,700,100\na,500,90\n' >"$T/nocol.csv"
expect_err "nocol.csv:1:1: missing column 'power_w'" index "$T/nocol.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\na,500,abc,90\n' >"$T/nonnum.csv"
expect_err "nonnum.csv:3:7: field 'power_w': not a number" index "$T/nonnum.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\na,500,800,NaN\n' >"$T/nan.csv"
expect_err "nan.csv:3:11: field 'tokens_per_s': NaN" index "$T/nan.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,inf,100\na,500,800,90\n' >"$T/inf.csv"
expect_err "inf.csv:2:7: field 'power_w': infinite" index "$T/inf.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\na,500,0,90\n' >"$T/zero.csv"
expect_err "zero.csv:3:7: field 'power_w': must be positive" index "$T/zero.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\na,500,800,-5\n' >"$T/neg.csv"
expect_err "neg.csv:3:11: field 'tokens_per_s': must be positive" index "$T/neg.csv"
printf 'job,cap_w,power_w,tokens_per_s,tokens_sd\na,700,1000,100,1\na,700,800,90,1\n' >"$T/dup.csv"
expect_err "dup.csv:3:3: field 'cap_w': duplicate cap 700 W" index "$T/dup.csv"
# Without sd or runs columns a repeated cap is a replicate run: the point
# is the mean (700 W: P 1000, T 100; 300 W: P 600, T 80, as three.csv, PFI
# (1 - 0.6)/(1 - 0.8) = 2), and the noise is the replicates' scatter
# (throughput +-2 % and +-1 %, power +-1 % and 0: 2 degrees of freedom per
# point, 4 in all; sd sqrt((2*0.02^2 + 2*0.01^2)/4) = 1.58 % of throughput).
printf 'job,cap_w,power_w,tokens_per_s\na,700,1010,102\na,700,990,98\na,700,1000,100\na,300,606,80.8\na,300,594,79.2\na,300,600,80\n' >"$T/rep.csv"
"$PFI" index "$T/rep.csv" --format csv >"$T/out" || fail "replicate rows: $(cat "$T/out")"
IFS=, read -r _ pfi _ _ used _ tmax pmax _ note src np nt < <(sed -n 2p "$T/out")
near "$pfi" 2 1e-9 "replicate rows: ratio PFI"
[ "$tmax" = 100 ] && [ "$pmax" = 1000 ] && [ "$src" = "replicate runs" ] ||
  fail "replicate rows: $(cat "$T/out")"
near "$nt" 0.0158 0.0003 "replicate rows: throughput noise"
"$PFI" index "$T/rep.csv" | head -1 | grep -q '(replicate runs, 4 degrees of freedom)' ||
  fail "replicate noise not stated: $("$PFI" index "$T/rep.csv" | head -1)"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\nb,700,1000,100\nb,500,800,90\n' >"$T/one.csv"
expect_err "one.csv:2:1: job 'a': has 1 point, needs at least 2" index "$T/one.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000,100\na,500,"80\n' >"$T/quote.csv"
expect_err "quote.csv:3:7: unterminated quoted field" index "$T/quote.csv"
printf 'job,cap_w,power_w,tokens_per_s\n' >"$T/empty.csv"
expect_err "empty.csv:2:1: no data rows" index "$T/empty.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,700,1000\na,500,800,90\n' >"$T/short.csv"
expect_err "short.csv:2:.*: field 'tokens_per_s': missing" index "$T/short.csv"
expect_err "dvfs_sweep.csv:1:1: missing column 'Throughput' \\(mapped to tokens_per_s\\)" \
  index data/real/dvfs_sweep.csv --map 'job=Workload,cap_w=GPU power cap,power_w=total GPU power,tokens_per_s=Throughput'
expect_err "--map: unknown column name 'watts'" index "$T/three.csv" --map watts=power_w
expect_err "--map: expected NAME=COLUMN" index "$T/three.csv" --map power_w
expect_err "nope.csv: cannot open" index "$T/nope.csv"
# A NUL byte would cut "1<NUL>9" short to 1; it is refused where it is.
printf 'job,cap_w,power_w,tokens_per_s\na,100,1\0009,1\na,200,2,3\n' >"$T/nul.csv"
expect_err "nul.csv:2:8: NUL byte" index "$T/nul.csv"
# A used column named twice: which one is meant is unknown.
printf 'job,cap_w,power_w,tokens_per_s,power_w\na,100,1,1,5\na,200,2,3,6\n' >"$T/dupcol.csv"
expect_err "dupcol.csv:1:32: column 'power_w' appears twice" index "$T/dupcol.csv"
# An unused duplicate is an extra column like any other.
printf 'job,cap_w,power_w,tokens_per_s,x,x\na,100,1,1,5,5\na,200,2,3,6,6\n' >"$T/dupx.csv"
"$PFI" index "$T/dupx.csv" --format csv --definition ratio >"$T/out" || fail "unused duplicate column"
grep -q '^a,0.75,1,' "$T/out" || fail "unused duplicate column: $(cat "$T/out")"
# An unquoted comma in a job name shifts the columns: refused, not misread.
printf 'cap_w,power_w,tokens_per_s,job\n100,1,1,llama,8b\n200,2,3,llama,8b\n' >"$T/long.csv"
expect_err "long.csv:2:15: record has 5 fields, header has 4" index "$T/long.csv"
# 100 caps that did not bind, one of them 99876.25 W: all listed, in full
# (a fixed buffer cut the list at 163, and %g prints 99876.25 as 99876.2).
{
  echo job,cap_w,power_w,tokens_per_s
  for c in $(seq 100 198); do echo "m,$c,$c,6"; done
  echo m,99876.25,1000,6
  echo m,99999.5,2001,6
} >"$T/many.csv"
"$PFI" index "$T/many.csv" --format csv >"$T/out" || fail "many excluded caps"
ex=$(tail -1 "$T/out" | cut -d, -f6)
[ "$(echo "$ex" | tr ';' '\n' | wc -l)" -eq 100 ] || fail "excluded caps not all listed: $ex"
echo "$ex" | grep -q '^100;101;.*;198;99876.25$' || fail "excluded caps list: $ex"
"$PFI" index "$T/many.csv" | tail -1 | grep -q ';198:no-loss;99876.25:no-loss$' || fail "table excluded caps: $("$PFI" index "$T/many.csv" | tail -1)"
# A sign after a space is not a non-negative seed (strtoul read " -1" as
# 2^64 - 1).
"$PFI" index "$T/many.csv" --ci 10 --seed " -1" >/dev/null 2>&1
[ $? -eq 2 ] || fail "--seed ' -1' accepted"
expect_err "$T: read error: Is a directory" index "$T"
# A job name that is not UTF-8 (a Latin-1 file) kept its JSON object but
# lost its "job" key (jansson refuses such strings): each such byte is now
# U+FFFD, as in "\xff\xfeab" -> "\ufffd\ufffdab".
printf 'job,cap_w,power_w,tokens_per_s\n\xff\xfeab,100,1,1\n\xff\xfeab,200,2,3\n' >"$T/latin1.csv"
"$PFI" index "$T/latin1.csv" --format json >"$T/out" || fail "non-UTF-8 job"
LC_ALL=C grep -q "\"job\": \"$(printf '\357\277\275\357\277\275')ab\"" "$T/out" ||
  fail "non-UTF-8 job name in JSON: $(cat "$T/out")"
# A quoted job name holding a line break split its table row in two; the
# table shows it as '?' (CSV keeps it, quoted).
printf 'job,cap_w,power_w,tokens_per_s\n"a\nb",100,1,1\n"a\nb",200,2,3\n' >"$T/nl.csv"
# (The table at full width is the legend of the definitions, the header
# and one row.)
[ "$("$PFI" index "$T/nl.csv" --wide | wc -l)" -eq 3 ] || fail "table row split: $("$PFI" index "$T/nl.csv" --wide)"
"$PFI" index "$T/nl.csv" | tail -1 | grep -q '^a?b ' || fail "table name with a line break"
"$PFI" index "$T/nl.csv" --format csv | tail -2 | head -1 | grep -q '^"a$' || fail "CSV name with a line break"
# Positive finite values whose ratio overflows: an error, never inf or nan
# (nor "-", which means "undefined").
printf 'job,cap_w,power_w,tokens_per_s\na,100,1e308,1\na,200,1e-300,2\n' >"$T/ovf.csv"
expect_err "ovf.csv:2:1: job 'a': the area PFI is not a finite number" index "$T/ovf.csv"
printf 'job,cap_w,power_w,tokens_per_s\na,100,1,1e308\na,200,2,1e-308\n' >"$T/ovf2.csv"
expect_err "ovf2.csv:2:1: job 'a': the area PFI is not a finite number" index "$T/ovf2.csv"

# ---- usage ----
"$PFI" index --help >"$T/out" && grep -q '^usage: pfi index' "$T/out" || fail "--help"
"$PFI" index "$T/three.csv" --format xml >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --format exit status"
"$PFI" index "$T/three.csv" --definition median >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --definition exit status"
"$PFI" index >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing FILE exit status"
"$PFI" index "$T/three.csv" --ci -3 >/dev/null 2>&1
[ $? -eq 2 ] || fail "negative --ci exit status"

# The three definitions are told apart, each with its reference point
# (ratio: 1 is proportional; area and constant elasticity: 0).
"$PFI" index tests/data/predict/curves.csv > "$T/defs"
head -1 "$T/defs" | grep -q "^pfi_ratio: 1 = throughput falls in proportion to power; above 1 = more flexible. pfi_area, pfi_ce: 0 = proportional; above 0 = more flexible. Noise of points without power_sd_w/tokens_sd: 0.04 % of power, 0.05 % of throughput (paper default).$" ||
  fail "table legend of the definitions: $(head -1 "$T/defs")"
sed -n 2p "$T/defs" | grep -q '^job  *pfi_ratio  *pfi_area  *pfi_ce ' ||
  fail "table header: $(sed -n 2p "$T/defs")"
"$PFI" index tests/data/predict/curves.csv --definition area | head -1 |
  grep -q '^pfi_area: 0 = proportional' || fail "legend of one definition"
"$PFI" index --help | grep -q "reference points differ: ratio 1, area and ce 0" ||
  fail "help: reference points"
if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed" >&2
  exit 1
fi
echo "test_index: all checks passed"
