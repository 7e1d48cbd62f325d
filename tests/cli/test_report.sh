#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi report DIR` on a synthetic campaign whose every number is known in
# closed form (tests/cli/data/report/README.md), and its bad-input errors.
set -euo pipefail
: "${PFI:?}" "${PFI_SOURCE_DIR:?}"
data="$PFI_SOURCE_DIR/tests/cli/data/report"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Field of the row whose first column is KEY, by column name.
field() { # file key column
  awk -F, -v key="$2" -v col="$3" 'NR==1{for(i=1;i<=NF;i++) if($i==col) c=i; next}
    $1==key{print $c; exit}' "$1"
}
expect() { # file key column value
  local got; got=$(field "$1" "$2" "$3")
  [ "$got" = "$4" ] || fail "$(basename "$1") $2 $3: got '$got', expected '$4'"
}

"$PFI" report --help | grep -q "usage: pfi report" || fail "--help"

# Small draws and simulation keep the test fast; the checked numbers do not
# depend on them.
"$PFI" report --out "$tmp/r" --draws 200 --workloads 4 --jobs-per-workload 5 \
  --quiet "$data" > "$tmp/stdout"
[ "$(cat "$tmp/stdout")" = "$tmp/r/report.html" ] || fail "printed path"

# Ratio PFI is k exactly by construction; 3 decimals shown.
expect "$tmp/r/groups.csv" dense-a pfi_ratio 1.100
expect "$tmp/r/groups.csv" dense-c pfi_ratio 1.300
expect "$tmp/r/groups.csv" moeft-c pfi_ratio 2.200
expect "$tmp/r/groups.csv" moe-ft-qwen30ba3b-x8 pfi_ratio 2.100
expect "$tmp/r/groups.csv" moe-ft-qwen30ba3b-x8 pfi_ratio_published 2.000
expect "$tmp/r/groups.csv" moe-ft-qwen30ba3b-x8 diff_pfi_ratio 0.100
expect "$tmp/r/groups.csv" dense-a pfi_ratio_published ""
# The interval brackets the exact value (noise 0.04 %/0.05 % of each point).
# So do the intervals of the area and constant-elasticity definitions.
head -1 "$tmp/r/groups.csv" | grep -q '^group,gpu,class,gpus,caps,pfi_ratio,pfi_ratio_ci95_lo,pfi_ratio_ci95_hi,pfi_area,pfi_area_ci95_lo,pfi_area_ci95_hi,pfi_ce,pfi_ce_ci95_lo,pfi_ce_ci95_hi,' ||
  fail "groups.csv columns: $(head -1 "$tmp/r/groups.csv")"
# The three definitions are told apart on the page, each with its
# reference point (ratio 1, area and constant elasticity 0).
grep -q '<th[^>]*>pfi_ratio</th>' "$tmp/r/report.html" || fail "page: pfi_ratio column"
grep -q 'pfi_ratio: 1 = throughput falls in proportion to power, above 1 = more flexible. pfi_area and pfi_ce: 0 = proportional' \
  "$tmp/r/report.html" || fail "page: the definitions' reference points"
grep -q 'pfi_ratio (ratio definition; 1 = throughput falls in proportion to power), pfi_area and pfi_ce (area and constant-elasticity definitions; 0 = proportional)' \
  "$tmp/r/groups.json" "$tmp/r/report.html" || fail "groups table title: the references"
awk -F, 'NR>1{ if (!($7 <= $6 && $6 <= $8 && $10 <= $9 && $9 <= $11 &&
                    $13 <= $12 && $12 <= $14 && $7 < $8 && $10 < $11 && $13 < $14)) {
                 print "bad interval " $0; exit 1 } }' \
  "$tmp/r/groups.csv" || fail "an interval does not bracket its value"

# Class medians and means: 1.2, 1.5, 2.1 by hand.
expect "$tmp/r/categories.csv" dense median 1.200
expect "$tmp/r/categories.csv" moe-pt median 1.500
expect "$tmp/r/categories.csv" moe-ft mean 2.100
# Kruskal-Wallis on three fully separated groups of 3: rank sums 6, 15, 24,
# H = 12/(9*10) * (36+225+576)/3 - 3*10 = 7.2; p = exp(-7.2/2) = 0.02732
# (chi-square with 2 degrees of freedom).
expect "$tmp/r/kruskal.csv" Kruskal-Wallis H 7.200
expect "$tmp/r/kruskal.csv" Kruskal-Wallis p 0.02732
# Dunn: mean ranks 2, 5, 8; SE = sqrt(9*10/12 * (1/3 + 1/3)) = sqrt(5), so
# z(dense, moe-pt) = -3/sqrt(5) = -1.342, p = 2(1 - Phi(1.342)) = 0.17971;
# z(dense, moe-ft) = -6/sqrt(5) = -2.683, p = 0.00729, Holm x3 = 0.02187.
awk -F, '$1=="dense" && $2=="moe-pt" {print $3, $4}' "$tmp/r/dunn.csv" | grep -qx -- "-1.342 0.17971" || fail "dunn dense/moe-pt: $(cat "$tmp/r/dunn.csv")"
awk -F, '$1=="dense" && $2=="moe-ft" {print $3, $4, $5}' "$tmp/r/dunn.csv" | grep -qx -- "-2.683 0.00729 0.02187" || fail "dunn dense/moe-ft"
# The DRAM copy product rises with PFI: Spearman rho exactly 1.
expect "$tmp/r/screening.csv" dram_copy_product rho 1.000

# JSON mirrors CSV, keys as the columns.
grep -q '"group": "moe-ft-qwen30ba3b-x8"' "$tmp/r/groups.json" || fail "groups.json"
grep -q '"pfi_ratio": 2.1,' "$tmp/r/groups.json" || fail "groups.json pfi"
for t in groups categories kruskal dunn grid_sensitivity rank_correlations \
         screening leverage ablation headline; do
  [ -s "$tmp/r/$t.csv" ] && [ -s "$tmp/r/$t.json" ] || fail "missing table $t"
done
# The page: self-contained (no external reference), provenance stated.
html="$tmp/r/report.html"
grep -q 'id="provenance"' "$html" || fail "no provenance notice"
if grep -Eq '(src|href)="(https?:)?//' "$html"; then fail "external reference"; fi
[ "$(grep -c '<figure class="fig"' "$html")" -ge 6 ] || fail "figures missing"

# Same seed, same bytes.
"$PFI" report --out "$tmp/r2" --draws 200 --workloads 4 --jobs-per-workload 5 \
  --quiet "$data" > /dev/null
for f in "$tmp"/r/*.csv "$tmp"/r/*.json "$tmp"/r/report.html; do
  cmp -s "$f" "$tmp/r2/$(basename "$f")" || fail "not reproducible: $(basename "$f")"
done

# A user's own measured sweeps: the page says measured, not emulated.
mkdir "$tmp/meas"
sed 's/synthetic$/measured/' "$data/curves.csv" > "$tmp/meas/curves.csv"
"$PFI" report -q --no-figures --draws 50 --workloads 2 --jobs-per-workload 2 \
  "$tmp/meas" > /dev/null
grep -q "<strong>Measured data.</strong>" "$tmp/meas/report.html" || fail "measured notice"
if grep -q "EMULATED" "$tmp/meas/report.html"; then fail "measured data called emulated"; fi
grep -q "features.csv is not in the input" "$tmp/meas/report.html" || fail "missing features note"

# Without gnuplot: a clear run-time failure, or tables only on request.
set +e
PFI_GNUPLOT=/nonexistent/gnuplot "$PFI" report -q --out "$tmp/ng" --draws 50 \
  --workloads 2 --jobs-per-workload 2 "$data" > /dev/null 2> "$tmp/err"; st=$?
set -e
[ $st -eq 1 ] || fail "gnuplot missing: status $st"
grep -q "gnuplot" "$tmp/err" || fail "gnuplot missing: message $(cat "$tmp/err")"
PFI_GNUPLOT=/nonexistent/gnuplot "$PFI" report -q --no-figures --out "$tmp/nf" \
  --draws 50 --workloads 2 --jobs-per-workload 2 "$data" > /dev/null
grep -q "not drawn: figures were turned off" "$tmp/nf/report.html" || fail "--no-figures note"

# Bad input: exit status 2 with a located one-line message.
set +e
"$PFI" report --quiet "$tmp/nonexistent" 2> "$tmp/err"; st=$?
[ $st -eq 2 ] || fail "missing input: status $st"
mkdir "$tmp/bad"
printf 'job,cap_w,power_w,tokens_per_s\na,200,100,50\na,700,nan,80\n' > "$tmp/bad/curves.csv"
"$PFI" report --quiet --no-figures "$tmp/bad" 2> "$tmp/err"; st=$?
[ $st -eq 2 ] || fail "NaN power: status $st"
grep -q 'curves.csv:3:' "$tmp/err" || fail "NaN power: message $(cat "$tmp/err")"
printf 'not a database\n' > "$tmp/x.db"
"$PFI" report --quiet "$tmp/x.db" 2> "$tmp/err"; st=$?
[ $st -eq 2 ] || fail "not a store: status $st"
"$PFI" report --draws 0 "$data" 2> /dev/null; st=$?
[ $st -eq 2 ] || fail "--draws 0: status $st"
set -e
echo "test_report: ok"
