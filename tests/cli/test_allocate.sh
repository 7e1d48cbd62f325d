#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi fit`, `pfi predict`, `pfi allocate`, `pfi simulate`: values worked by
# hand, JSON keys, reproducibility, and bad input (one line naming the file,
# exit status 2).
. "$(dirname "$0")/lib.sh"
expect_err() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "pfi $*: stderr is not one line: $(cat "$T/err")"
  grep -Eq -- "$pat" "$T/err" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
}
# expect_usage PATTERN ARGS...: exit status 2, the usage error on the first
# line of stderr (a "Try 'pfi CMD --help'." line follows).
expect_usage() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  head -n 1 "$T/err" | grep -Eq -- "$pat" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
}
# json_num KEY FILE: the first number after "KEY": in FILE.
json_num() { sed -n "s/.*\"$1\": \(-\{0,1\}[0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }

for c in fit predict allocate simulate; do
  "$PFI" "$c" --help >"$T/h" 2>&1 || fail "pfi $c --help: non-zero exit"
  grep -q "^usage: pfi $c" "$T/h" || fail "pfi $c --help: no usage line"
done

# Two jobs worked by hand.
cat >"$T/c.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s
a,200,1500,800
a,400,2900,950
a,700,4200,1000
b,200,1550,500
b,400,3000,800
b,700,4400,1000
CSV
cat >"$T/f.csv" <<'CSV'
job,arch,task,gpus,dram_copy_product
a,moe,ft,8,0.4
b,dense,pt,8,0.1
CSV
# The paper's objective (raw throughput) unless said otherwise: the sums
# below are of tokens/s.
# Oracle, 30 % of 8600 W: budget 6020 W, 2970 W above the floors (3050 W).
# Segments by slope: b 1550->3000 (300/1450), b 3000->4400 (200/1400),
# a 1500->2900 (150/1400), a 2900->4200 (50/1300). Filling: b to 4400
# (2850 W), the last 120 W to a: a = 1620 W, 800 + 120*150/1400 tokens/s.
"$PFI" allocate --curves "$T/c.csv" --cut 30% --objective throughput --format json >"$T/o.json" || fail "oracle run"
near "$(json_num budget_w "$T/o.json")" 6020 1e-6 "oracle budget"
near "$(json_num total_power_w "$T/o.json")" 6020 1e-6 "oracle total power"
near "$(json_num total_tokens_per_s "$T/o.json")" "$(awk 'BEGIN{printf "%.10f", 800+120*150/1400+1000}')" 1e-6 "oracle tokens"
near "$(json_num power_w "$T/o.json")" 1620 1e-6 "oracle power of a"
# The cap realizing 1620 W on a: between caps 200 (1500 W) and 400 (2900 W).
near "$(json_num cap_w "$T/o.json")" "$(awk 'BEGIN{printf "%.10f", 200+200*120/1400}')" 1e-6 "oracle cap of a"
# Top-level keys, exactly and in order.
keys=$(sed -n 's/^  "\([a-z_]*\)":.*/\1/p' "$T/o.json" | tr '\n' ' ')
[ "$keys" = "strategy cut budget_w total_power_w total_tokens_per_s objective objective_text objective_unit min_share value value_uncapped retained jobs source " ] || fail "allocate JSON keys: $keys"
# Equal: no floor binds, so each job keeps 70 % of its uncapped power.
"$PFI" allocate --curves "$T/c.csv" --cut 0.3 --strategy equal --format csv >"$T/e.csv" || fail "equal run"
near "$(awk -F, '$1=="a"{print $2}' "$T/e.csv")" 2940 1e-6 "equal a"
near "$(awk -F, '$1=="b"{print $2}' "$T/e.csv")" 3080 1e-6 "equal b"
# The whole table, terminal and CSV, for the equal split: a 2940 W, between
# caps 400 (2900 W) and 700 (4200 W): cap 400 + 300*40/1300, 950 + 50*40/1300
# tokens/s; b 3080 W: cap 400 + 300*80/1400, 800 + 200*80/1400 tokens/s.
# A name holding a comma or a quote is one quoted CSV field.
sed 's/^a,/"a,""x""",/' "$T/c.csv" >"$T/cq.csv"
"$PFI" allocate --curves "$T/cq.csv" --cut 0.3 --strategy equal --objective throughput --format csv >"$T/eq.csv" || fail "equal csv run"
printf '%s\n' 'job,power_w,cap_w,tokens_per_s,retained,objective' \
  '"a,""x""",2940.000000,409.230769,951.538462,0.951538,throughput' \
  'b,3080.000000,417.142857,811.428571,0.811429,throughput' \
  'TOTAL,6020.000000,,1762.967033,0.881484,throughput' | cmp -s - "$T/eq.csv" ||
  fail "allocate equal CSV: $(cat "$T/eq.csv")"
"$PFI" allocate --curves "$T/c.csv" --cut 0.3 --strategy equal --objective throughput >"$T/eq.txt" || fail "equal table run"
{
  echo 'strategy equal, cut 30 % of 8600.0 W uncapped, budget 6020.0 W'
  # Terminal digits: power 3 significant, throughput 4 (pfi/restab.h).
  printf '%-5s  %9s  %7s  %8s  %8s\n' job 'power [W]' 'cap [W]' tokens/s retained
  printf '%-5s  %9s  %7s  %8s  %8s\n' a 2940 409 951.5 95.15% b 3080 417 811.4 81.14% \
    total 6020 '' 1763 88.15%
  echo
  echo "objective throughput: sum of raw throughput (the paper's; depends on each job's unit); total retained: of the uncapped tokens/s"
} | cmp -s - "$T/eq.txt" || fail "allocate equal table: $(cat "$T/eq.txt")"
# moe-ft-weighted: a (MoE FT) has weight 2*4200, b 4400: cut 2580 W split
# 8400:4400 -> a gives 1693.125 W.
"$PFI" allocate --curves "$T/c.csv" --features "$T/f.csv" --cut 0.3 --strategy moe-ft-weighted --format csv >"$T/m.csv" || fail "moe-ft run"
near "$(awk -F, '$1=="a"{print $2}' "$T/m.csv")" "$(awk 'BEGIN{printf "%.10f", 4200-2580*8400/12800}')" 1e-6 "moe-ft a"
# Every strategy meets the budget.
for s in oracle equal moe-ft-weighted pfi-aware dram-copy pfi-curve; do
  extra=""
  [ "$s" = pfi-aware ] || [ "$s" = pfi-curve ] && extra="--true-pfi"
  "$PFI" allocate --curves "$T/c.csv" --features "$T/f.csv" --cut 25% --strategy $s $extra --format csv >"$T/s.csv" ||
    fail "strategy $s"
  near "$(awk -F, '$1=="TOTAL"{print $2}' "$T/s.csv")" 6450 1e-6 "$s budget"
done
# Infeasible: floors 3050 W, a 70 % cut leaves 2580 W.
expect_err "infeasible by 470.000 W" allocate --curves "$T/c.csv" --cut 70%
expect_err "needs --features" allocate --curves "$T/c.csv" --cut 10% --strategy dram-copy
head -n 2 "$T/f.csv" >"$T/f1.csv"
expect_err "f1.csv: 1 of 2 jobs .*\(b\)" allocate --curves "$T/c.csv" --features "$T/f1.csv" --cut 10% --strategy dram-copy
expect_usage "above 1" allocate --curves "$T/c.csv" --cut 30
printf 'job,cap_w,power_w,tokens_per_s\na,200,abc,1\na,700,2,2\n' >"$T/bad.csv"
expect_err "bad.csv:2:" allocate --curves "$T/bad.csv" --cut 10%
# A curve of 101 points (caps in 5 W steps): job a on the line from
# (1000 W, 100) to (2000 W, 1100) tokens/s, slope 1; job b slope 0.5. A
# 25 % cut of 4000 W leaves 1000 W above the 2000 W of floors: all to a,
# 1100 + 100 tokens/s in total.
{ echo "job,cap_w,power_w,tokens_per_s"
  awk 'BEGIN { for (i = 0; i <= 100; i++) printf "a,%d,%d,%d\n", 200 + 5 * i, 1000 + 10 * i, 100 + 10 * i }'
  printf 'b,200,1000,100\nb,700,2000,600\n'; } >"$T/fine.csv"
"$PFI" allocate --curves "$T/fine.csv" --cut 25% --objective throughput --format csv >"$T/fine.out" || fail "101-point curve"
near "$(awk -F, '$1=="TOTAL"{print $4}' "$T/fine.out")" 1200 1e-6 "101-point curve: oracle tokens"
near "$(awk -F, '$1=="a"{print $2}' "$T/fine.out")" 2000 1e-6 "101-point curve: power of a"
# Its PFI comes from all 101 points (the reference is the highest cap):
# pfi index gives 0.55 for a and 0.6 for b, so pfi-aware weights are
# 2000 * 0.55 / 1100 = 1 and 2000 * 0.6 / 600 = 2, and a gives a third of
# the 1000 W cut.
"$PFI" index "$T/fine.csv" --format csv >"$T/fine.idx" || fail "index of the 101-point curve"
near "$(awk -F, '$1=="a"{print $2}' "$T/fine.idx")" 0.55 1e-9 "101-point curve: PFI of a"
"$PFI" allocate --curves "$T/fine.csv" --cut 25% --true-pfi --strategy pfi-aware --objective throughput --format csv >"$T/fine2.out" ||
  fail "101-point curve, pfi-aware"
near "$(awk -F, '$1=="a"{print $2}' "$T/fine2.out")" "$(awk 'BEGIN{printf "%.10f", 2000-1000/3}')" 1e-6 "101-point curve: pfi-aware power of a"
# Totals beyond DBL_MAX (1e308 + 1.7e308 tokens/s; 9e307 + 9e307 W): bad
# input, never inf in the totals.
printf 'job,cap_w,power_w,tokens_per_s\na,200,1000,1e308\na,400,2000,1.5e308\nb,200,1000,1e308\nb,700,2000,1.7e308\n' >"$T/big.csv"
expect_err "big.csv: the jobs' total throughput exceeds" allocate --curves "$T/big.csv" --cut 10% --format json
printf 'job,cap_w,power_w,tokens_per_s\na,200,1e307,800\na,400,9e307,950\nb,200,1e307,500\nb,700,9e307,1000\n' >"$T/bigw.csv"
expect_err "bigw.csv: the jobs' total uncapped power exceeds" allocate --curves "$T/bigw.csv" --cut 10%
# Powers near DBL_MAX whose totals are in range: the interpolations take
# the fraction of the segment first, so nothing overflows. Job a runs
# 1e307 W at 200 W to 8e307 W at 400 W; b 100 W to 300 W. A 25 % cut of
# 8e307 + 300 W leaves 6e307 + 225 W: the oracle and pfi-curve take it all
# from a, whose cap is 200 + 200 (6e307 - 1e307) / 7e307 = 342.857143 W
# and throughput 800 + 150 * 5/7 = 907.142857 (the 75 W left over is below
# the printed precision of a's power).
printf 'job,cap_w,power_w,tokens_per_s\na,200,1e307,800\na,400,8e307,950\nb,200,100,500\nb,700,300,1000\n' >"$T/near.csv"
for s in oracle pfi-curve; do
  "$PFI" allocate --curves "$T/near.csv" --cut 25% --true-pfi --strategy $s --format csv >"$T/near.out" 2>"$T/near.err" ||
    fail "allocate $s near DBL_MAX: $(cat "$T/near.err")"
  grep -qiwE 'inf|nan' "$T/near.out" && fail "allocate $s near DBL_MAX: inf/nan in $(cat "$T/near.out")"
  near "$(awk -F, '$1=="a"{print $3}' "$T/near.out")" 342.857143 1e-6 "allocate $s near DBL_MAX: cap of a"
  near "$(awk -F, '$1=="a"{print $4}' "$T/near.out")" 907.142857 1e-6 "allocate $s near DBL_MAX: throughput of a"
done
# replay --show caps on one such job: a target of 9e307 W, then 5e307 W.
# The baseline is the median of two 9e307 W samples (their sum overflows);
# at 5e307 W the cap is 200 + 200 * 4/8 = 300 W, at 9e307 W it is 400 W.
printf 'job,cap_w,power_w,tokens_per_s\na,200,1e307,800\na,400,9e307,950\n' >"$T/one.csv"
printf 'time,power_w\n0,9e307\n600,9e307\n1200,5e307\n1800,5e307\n' >"$T/tgt.csv"
"$PFI" replay --curves "$T/one.csv" --target "$T/tgt.csv" --show caps >"$T/rc.out" 2>"$T/rc.err" ||
  fail "replay --show caps near DBL_MAX: $(cat "$T/rc.err")"
grep -qiwE 'inf|nan' "$T/rc.out" && fail "replay --show caps near DBL_MAX: $(cat "$T/rc.out")"
grep -q 'baseline 9e+307 W' "$T/rc.out" || fail "replay near DBL_MAX: baseline not 9e+307 W: $(head -n 1 "$T/rc.out")"
[ "$(awk '$1=="1200"{print $2}' "$T/rc.out" | sort -u)" = "300.0" ] || fail "replay near DBL_MAX: cap at 1200 is not 300.0 W"
[ "$(awk '$1=="0"{print $2}' "$T/rc.out" | sort -u)" = "400.0" ] || fail "replay near DBL_MAX: cap at 0 is not 400.0 W"

# fit / predict on the synthetic fixture.
F=tests/data/predict
"$PFI" fit $F/features.csv --curves $F/curves.csv --output "$T/model.json" --format json >"$T/fit.json" || fail "fit"
grep -q '"loo": {' "$T/fit.json" || fail "fit: no LOO"
grep -q '"clusters"' "$T/fit.json" || fail "fit: no LOCO clusters"
grep -q '"dense-pt": 3' "$T/fit.json" || fail "fit: LOCO is not over the four arch x task clusters"
"$PFI" fit $F/features.csv --curves $F/curves.csv --cluster pooled --format json >"$T/fitp.json" || fail "fit pooled"
grep -q '"dense": 6' "$T/fitp.json" || fail "fit --cluster pooled: no pooled dense cluster"
# Emulated data are labelled: a source column saying so.
sed 's/synthetic test fixture/emulated/' $F/features.csv >"$T/emu.csv"
"$PFI" allocate --curves $F/curves.csv --features "$T/emu.csv" --cut 10% | head -n 1 | grep -q "(emulated data)" ||
  fail "allocate: emulated data not labelled"
"$PFI" allocate --curves $F/curves.csv --features $F/features.csv --cut 10% | head -n 1 | grep -q "emulated" &&
  fail "allocate: synthetic data labelled emulated"
"$PFI" fit "$T/emu.csv" --curves $F/curves.csv | head -n 1 | grep -q "(emulated)" || fail "fit: emulated data not labelled"
"$PFI" predict "$T/model.json" $F/features.csv --format csv >"$T/pred.csv" || fail "predict"
b0=$(json_num intercept "$T/model.json")
b1=$(json_num estimate "$T/model.json")
x=$(awk -F, 'NR==2{print $7}' $F/features.csv)
near "$(awk -F, 'NR==2{print $2}' "$T/pred.csv")" "$(awk -v a="$b0" -v b="$b1" -v x="$x" 'BEGIN{printf "%.10f", a+b*x}')" 1e-5 "predict = b0 + b1 x"
# Validation on the training jobs themselves is the in-sample fit: the same
# R^2 as fit's r2_in (both 1 - SSE/SST around these jobs' mean); the
# table prints 3 decimals, hence the tolerance.
"$PFI" predict "$T/model.json" $F/features.csv --curves $F/curves.csv >"$T/val.txt" || fail "predict --curves"
r2v=$(sed -n 's/^validation on 12 jobs with curves: R^2 \([-0-9.]*\),.*/\1/p' "$T/val.txt")
near "${r2v:-nan}" "$(json_num r2_in "$T/fit.json")" 0.0006 "validation R^2 on the training jobs"
"$PFI" fit $F/features.csv --curves $F/curves.csv --ablation >"$T/abl.txt" || fail "ablation"
[ "$(grep -cE '^(i|ii|iii|iv|v|vi|vii) ' "$T/abl.txt")" -eq 7 ] || fail "ablation: not seven rows"
cut -d, -f1-4 $F/features.csv >"$T/few.csv"
"$PFI" fit "$T/few.csv" --curves $F/curves.csv --ablation >"$T/abl2.txt" || fail "ablation with few columns"
grep -q "absent from the features file: dram_copy_product" "$T/abl2.txt" || fail "ablation: absent set not reported"
expect_err "features absent" fit "$T/few.csv" --curves $F/curves.csv
# Standard errors keep their digits for a predictor in large units: x = 0,
# 1000, 2000, 3000 W, PFI 1, 3, 2, 5: slope 0.0011, SE sqrt(0.27)/1000 =
# 0.000519615 (worked by hand in test_model.c with x / 1000), which three
# decimals would print as 0.001.
printf 'job,watts,pfi\na,0,1\nb,1000,3\nc,2000,2\nd,3000,5\n' >"$T/w.csv"
"$PFI" fit "$T/w.csv" --pfi-column pfi --features watts --eval loo --format csv >"$T/w.out" || fail "fit in watts"
near "$(awk -F, '$1=="watts"{print $2}' "$T/w.out")" 0.0011 1e-12 "slope in watts"
near "$(awk -F, '$1=="watts"{print $3}' "$T/w.out")" "$(awk 'BEGIN{printf "%.12f", sqrt(0.27)/1000}')" 1e-11 "SE in watts"
# A predictor whose name holds a quote is one quoted CSV field (RFC 4180).
sed '1s/watts/w"q/' "$T/w.csv" >"$T/wq.csv"
"$PFI" fit "$T/wq.csv" --pfi-column pfi --features 'w"q' --eval loo --format csv >"$T/wq.out" || fail "fit, quoted name"
grep -q '^"w""q",0.0011,0.000519615242,,,$' "$T/wq.out" || fail "fit CSV, quoted name: $(cat "$T/wq.out")"
expect_usage "exactly one of" fit $F/features.csv
# A cluster column asked for by name must exist (a typo is not a LOCO row
# of n/a); so must arch and task for the pooled clusters.
expect_err "features.csv:1:1: --cluster: no column 'nosuch'" fit $F/features.csv --curves $F/curves.csv --cluster nosuch
cut -d, -f1,4,7 $F/features.csv >"$T/noat.csv"
expect_err "noat.csv:1:1: --cluster pooled needs arch and task" fit "$T/noat.csv" --pfi-column gpus --features dram_copy_product --cluster pooled
printf '{"kind": "pfi-linear-model", "features": ["x"], "intercept": 1}\n' >"$T/bad.json"
expect_err "bad.json: model:" predict "$T/bad.json" $F/features.csv
# A model whose terms overflow: 1.5e308 + 1e308 * 0.4 is above DBL_MAX for
# job a (line 2 of f.csv), so its estimate is inf: an error, never inf in
# the output or a silent weight of 0.
printf '{"kind": "pfi-linear-model", "target": "pfi", "features": ["dram_copy_product"], "intercept": 1.5e308, "intercept_se": null, "coefficients": [{"feature": "dram_copy_product", "estimate": 1e308, "se": null}], "n": 10, "r2_in": 0.5}\n' >"$T/ovf.json"
expect_err "f.csv:2: job a: .*not finite" predict "$T/ovf.json" "$T/f.csv"
expect_err "f.csv:2: job a: .*not finite" allocate --curves "$T/c.csv" --features "$T/f.csv" --model "$T/ovf.json" --cut 10% --strategy pfi-aware
# A job name holding a comma or a quote is one quoted CSV field: 1 + 2 *
# 0.25 = 1.5.
printf '{"kind": "pfi-linear-model", "target": "pfi", "features": ["dram_copy_product"], "intercept": 1, "intercept_se": null, "coefficients": [{"feature": "dram_copy_product", "estimate": 2, "se": null}], "n": 10, "r2_in": 0.5}\n' >"$T/lin.json"
printf 'job,dram_copy_product\n"a,""b""",0.25\n' >"$T/fq.csv"
"$PFI" predict "$T/lin.json" "$T/fq.csv" --format csv >"$T/pq.out" || fail "predict, quoted name"
printf 'job,pfi\n"a,""b""",1.500000\n' | cmp -s - "$T/pq.out" || fail "predict CSV, quoted name: $(cat "$T/pq.out")"
# A finite estimate of 1e308 prints as 1e+308 (not 309 digits), and a
# validation whose R^2 is beyond the floating-point range (SSE/SST about
# 1e616) is an error naming the job and its line, printed before any table.
printf '{"kind": "pfi-linear-model", "target": "pfi", "features": ["dram_copy_product"], "intercept": 1e308, "intercept_se": null, "coefficients": [{"feature": "dram_copy_product", "estimate": 0, "se": null}], "n": 10, "r2_in": 0.5}\n' >"$T/e308.json"
"$PFI" predict "$T/e308.json" $F/features.csv >"$T/p308.out" || fail "predict 1e308"
[ "$(awk 'NR==2{print $2}' "$T/p308.out")" = "1e+308" ] || fail "predict 1e308 printed as $(awk 'NR==2{print $2}' "$T/p308.out")"
"$PFI" predict "$T/e308.json" $F/features.csv --format csv >"$T/p308.csv" || fail "predict 1e308 csv"
[ "$(awk -F, 'NR==2{print $2}' "$T/p308.csv")" = "1e+308" ] || fail "predict 1e308 csv: $(sed -n 2p "$T/p308.csv")"
expect_err "features.csv:2: job dense-pt-j00-x8: its PFI estimate 1e\+308 is too far" predict "$T/e308.json" $F/features.csv --curves $F/curves.csv
[ -s "$T/out" ] && fail "predict: a table printed before the validation error"

# simulate: same seed, same bytes; another seed differs; JSON keys.
S="simulate --curves $F/curves.csv --features $F/features.csv --workloads 40 --size 20"
"$PFI" $S --seed 7 --format json >"$T/s1.json" || fail "simulate"
"$PFI" $S --seed 7 --format json >"$T/s2.json" || fail "simulate again"
cmp -s "$T/s1.json" "$T/s2.json" || fail "simulate is not reproducible from its seed"
"$PFI" $S --seed 8 --format json >"$T/s3.json" || fail "simulate seed 8"
cmp -s "$T/s1.json" "$T/s3.json" && fail "different seeds gave the same output"
keys=$(sed -n 's/^  "\([a-z_]*\)":.*/\1/p' "$T/s1.json" | tr '\n' ' ')
[ "$keys" = "cuts workloads size mix seed strategies source unit normalized objective objective_text skipped pfi_undefined infeasible_pct " ] || fail "simulate JSON keys: $keys"
"$PFI" $S --mix production --holdout --format csv >"$T/p.csv" || fail "production mix, holdout"
# The oracle's own gap is zero at every cut.
awk -F, '$1=="oracle" && $3 != 0 {exit 1}' "$T/p.csv" || fail "oracle gap not zero"
# No strategy beats the oracle (gap >= 0).
awk -F, 'NR>1 && $3 < 0 {exit 1}' "$T/p.csv" || fail "a strategy beat the oracle"
# Out-of-sample jobs: the model is fitted on the first 6 jobs, workloads
# drawn from the other 6.
head -n 31 $F/curves.csv >"$T/lib.csv"
{ head -n 1 $F/curves.csv; tail -n 30 $F/curves.csv; } >"$T/test.csv"
"$PFI" simulate --curves "$T/lib.csv" --features $F/features.csv --test-curves "$T/test.csv" \
  --test-features $F/features.csv --workloads 20 --size 10 >"$T/oos.txt" || fail "test jobs"
grep -q "library 6 jobs (test jobs)" "$T/oos.txt" || fail "test jobs: not drawn from the test set"
expect_usage "go together" $S --test-curves "$T/test.csv"
if command -v gnuplot >/dev/null; then
  "$PFI" $S --plot "$T/g.svg" >/dev/null || fail "plot"
  grep -q "<svg" "$T/g.svg" || fail "plot: no SVG written"
fi
# The chart is drawn by the figure module (src/report/figure.c), as the
# report's figures are: gnuplot gets the module's script file (SVG terminal
# without enhanced text, the gap as lines with their intervals) as its
# argument. A stand-in gnuplot keeps the script and draws nothing.
printf '#!/bin/sh\ncp "$1" "%s/gp.script"\necho "<svg></svg>"\n' "$T" >"$T/gp"
chmod +x "$T/gp"
PFI_GNUPLOT="$T/gp" "$PFI" $S --plot "$T/g3.svg" >/dev/null || fail "plot through the figure module"
grep -q "^set terminal svg size 800,500 noenhanced" "$T/gp.script" || fail "plot: not the figure module's script"
grep -q "yerrorlines" "$T/gp.script" || fail "plot: the gap without its interval"
grep -q "title 'pfi-aware'" "$T/gp.script" || fail "plot: no pfi-aware line"
[ "$(cat "$T/g3.svg")" = "<svg></svg>" ] || fail "plot: not gnuplot's drawing"
if command -v gnuplot >/dev/null; then
  "$PFI" $S --plot "$T/g.png" >/dev/null || fail "png plot"
  [ "$(head -c 4 "$T/g.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "png plot: not a PNG"
fi
PFI_GNUPLOT=/nonexistent/gnuplot "$PFI" $S --plot "$T/g2.svg" >/dev/null 2>"$T/err"
[ $? -eq 1 ] || fail "missing gnuplot: exit status not 1"
grep -q "gnuplot not found" "$T/err" || fail "missing gnuplot: message '$(cat "$T/err")'"
[ -e "$T/g2.svg" ] && fail "missing gnuplot: an empty plot file left behind"
# An unwritable plot: named on stderr; gnuplot's messages never reach the
# JSON on stdout.
"$PFI" $S --format json --plot "$T/no/such/dir/g.svg" >"$T/pj.out" 2>"$T/pj.err"
[ $? -ne 0 ] || fail "unwritable plot: exit status 0"
grep -q "cannot write .*g.svg" "$T/pj.err" || fail "unwritable plot: message '$(cat "$T/pj.err")'"
grep -q "gnuplot>" "$T/pj.out" && fail "gnuplot messages in the JSON output"
[ "$(tail -n 1 "$T/pj.out")" = "}" ] || fail "unwritable plot: JSON output does not end with }"
# A cut no workload can take is not an error: its values are undefined
# and 100 % of the workloads infeasible.
"$PFI" $S --cuts 10,90 --format json >"$T/inf.json" || fail "simulate --cuts 10,90: exit $?"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["infeasible_pct"] == [0, 100], j["infeasible_pct"]; assert j["strategies"]["equal"]["gap_tokens_per_s_per_job"][1] is None' "$T/inf.json" ||
  fail "simulate --cuts 10,90: $(head -c 300 "$T/inf.json")"
# A library of one job is too small for the telemetry model, but strategies
# that need no PFI still compare: copies of one concave job, so splitting
# equally is optimal and equal's gap is zero (no share to close).
head -n 4 "$T/c.csv" >"$T/one.csv"
"$PFI" simulate --curves "$T/one.csv" --features "$T/f.csv" --workloads 5 --size 3 --strategies equal \
  --cuts 0,20 --format csv >"$T/one.out" || fail "one-job library, equal only"
near "$(awk -F, '$1=="equal" && $2==20 {print $3}' "$T/one.out")" 0 1e-9 "one-job library: equal gap"
[ "$(awk -F, '$1=="equal" && $2==20 {print $6}' "$T/one.out")" = "" ] || fail "one-job library: share defined"
expect_err "too few to fit" simulate --curves "$T/one.csv" --features "$T/f.csv" --workloads 5 --size 3 --strategies pfi-aware
# The production mix needs whole GPU counts: 1e300 (beyond int) and -8 are
# bad input at their cell (line 2, column 18 of the fixture's gpus).
for g in 1e300 -8 2.5; do
  awk -F, -v g="$g" 'BEGIN { OFS = "," } NR == 2 { $4 = g } { print }' $F/features.csv >"$T/g.csv"
  expect_err "g.csv:2:[0-9]+: gpus must be a whole number" simulate --curves $F/curves.csv --features "$T/g.csv" --workloads 4 --size 4 --mix production
done
expect_usage "unknown strategy" $S --strategies equal,best

# A features file without a row for every job: the message names the
# command once (the library's text says what needs the features, not
# "pfi simulate" a second time after the prefix).
E=tests/data/emulated25
head -n -1 $E/features.csv >"$T/fewer.csv"
"$PFI" simulate --curves $E/curves.csv --features "$T/fewer.csv" --workloads 5 >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "simulate with a features row missing: exit status"
grep -q "have no row here" "$T/err" || fail "simulate, missing features row: $(cat "$T/err")"
[ "$(grep -o 'pfi simulate' "$T/err" | wc -l)" -eq 1 ] ||
  fail "simulate names itself twice: $(cat "$T/err")"

[ "$fails" -eq 0 ] && echo "all passed"
exit $((fails > 0))
