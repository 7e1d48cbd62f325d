#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# One job set, one definition of the leave-one-cluster-out clusters: on the
# same curves and features, `pfi report`, `pfi fit --ablation` and
# `pfi simulate --holdout=cluster` give the same numbers and say which
# clusters they used (archtask by default, pooled by name). And a comparison
# with the paper's published numbers is printed only on the paper's
# population (its 25 H200 headline groups), saying which population ran.
. "$(dirname "$0")/lib.sh"

F=tests/data/predict
mkdir -p "$T/in"
cp "$F/curves.csv" "$F/features.csv" "$T/in/"

for cl in archtask pooled; do
  "$PFI" report -q --paper --no-figures --draws 50 --workloads 20 \
    --jobs-per-workload 10 --cluster "$cl" --out "$T/r-$cl" "$T/in" \
    > /dev/null || fail "report --cluster $cl"
  "$PFI" fit "$F/features.csv" --curves "$F/curves.csv" --ablation \
    --format csv --cluster "$cl" > "$T/fit-$cl.csv" || fail "fit --cluster $cl"
  "$PFI" simulate --curves "$F/curves.csv" --features "$F/features.csv" \
    --holdout=cluster --cluster "$cl" --workloads 20 --size 10 --objective throughput \
    --strategies oracle,equal,pfi-aware,pfi-curve --format csv \
    > "$T/sim-$cl.csv" || fail "simulate --cluster $cl"
  # Ablation: LOCO R^2, RMSE, rho of every set, report against fit (both
  # printed with three decimals: equal text).
  awk -F, 'NR > 1 { print $1, $8, $9, $10 }' "$T/r-$cl/ablation.csv" \
    > "$T/a-report"
  awk -F, 'NR > 1 && $2 != "published" { print $1, $8, $9, $10 }' \
    "$T/fit-$cl.csv" > "$T/a-fit"
  [ -s "$T/a-fit" ] || fail "fit --cluster $cl printed no rows"
  cmp -s "$T/a-report" "$T/a-fit" ||
    fail "report and fit LOCO ($cl) differ: $(diff "$T/a-report" "$T/a-fit" | head -4)"
  # Allocation: the LOCO rows' gap of pfi-aware and pfi-curve per cut, the
  # report (one decimal) against simulate (six decimals, rounded here); the
  # paper's report sums raw throughput: simulate with --objective throughput.
  grep -q "leave-one-cluster-out ($cl)" "$T/r-$cl/allocation.csv" ||
    fail "allocation.csv does not name the clusters ($cl)"
  grep -q "clusters $cl:" "$T/r-$cl/allocation.csv" "$T/r-$cl/report.html" ||
    fail "the allocation table's title does not describe the clusters ($cl)"
  awk -F, -v l="leave-one-cluster-out ($cl)" \
    '$1 == "random" && $2 == l { print $4, $3, $5 }' \
    "$T/r-$cl/allocation.csv" | sort > "$T/s-report"
  awk -F, '$1 == "pfi-aware" || $1 == "pfi-curve" {
      printf "%s %s %.1f\n", $1, $2, $3 }' "$T/sim-$cl.csv" | sort \
    > "$T/s-sim"
  [ "$(wc -l < "$T/s-sim")" -eq 18 ] || fail "simulate rows ($cl)"
  cmp -s "$T/s-report" "$T/s-sim" ||
    fail "report and simulate LOCO gaps ($cl) differ: $(diff "$T/s-report" "$T/s-sim" | head -4)"
done
# The two definitions give different LOCO numbers on this set (dense
# pretraining and fine-tuning are told apart or pooled).
cmp -s "$T/fit-archtask.csv" "$T/fit-pooled.csv" &&
  fail "archtask and pooled LOCO give the same table"

# Which clusters: the fit table says it (archtask by default).
"$PFI" fit "$F/features.csv" --curves "$F/curves.csv" --ablation \
  > "$T/fit.txt" || fail "fit"
grep -q "LOCO clusters: archtask: 4 architecture x task clusters" "$T/fit.txt" ||
  fail "fit --ablation does not name its clusters"
grep -q "LOCO clusters (archtask): dense-pt (3) dense-ft (3) moe-pt (3) moe-ft (3)" \
  "$T/fit.txt" || fail "fit --ablation does not list the 4 clusters"
"$PFI" simulate --curves "$F/curves.csv" --features "$F/features.csv" \
  --holdout=cluster --workloads 4 --size 4 --strategies oracle,pfi-aware \
  > "$T/sim.txt" || fail "simulate"
grep -q "held out by cluster (archtask: 4 architecture x task clusters)" \
  "$T/sim.txt" || fail "simulate does not name its clusters"
"$PFI" simulate --cluster pooled --workloads 4 --curves "$F/curves.csv" \
  --features "$F/features.csv" 2> "$T/err"
[ $? -eq 2 ] && grep -q -- "--cluster goes with --holdout=cluster" "$T/err" ||
  fail "--cluster without --holdout=cluster"
"$PFI" report -q --paper --cluster dense "$T/in" 2> "$T/err"
[ $? -eq 2 ] && grep -q "archtask or pooled" "$T/err" || fail "report --cluster dense"

# The population: this fixture is not the paper's, so no published value
# is shown beside ours, and the output says why.
"$PFI" fit "$F/features.csv" --curves "$F/curves.csv" --ablation \
  --format csv > "$T/fit.csv"
grep -q '^i,published' "$T/fit.csv" && fail "published rows on another population"
grep -q "12 jobs, 12 of them not among the paper's 25 H200 headline groups" \
  "$T/fit.txt" || fail "fit does not say which population"
grep -q "published values are not shown" "$T/fit.txt" ||
  fail "fit does not say why the published values are absent"
"$PFI" simulate --curves "$F/curves.csv" --features "$F/features.csv" \
  --workloads 4 --size 4 --mix production > "$T/simp.txt" || fail "simulate production"
grep -q "Published value not shown: the paper's figure is over its 25 H200 headline groups" \
  "$T/simp.txt" || fail "simulate shows or misses the published note"
grep -q "about 1,500" "$T/simp.txt" && fail "simulate compares another population with the paper"
# The paper's population: the 25 headline ids (curves copied from the
# fixture, renamed: the population is decided by the ids alone).
awk -F, 'NR > 1 { print $1 }' data/paper/h200_headline_groups.csv > "$T/ids"
awk -F, 'NR == FNR { id[n++] = $1; next }
  FNR == 1 { print; next }
  { if (!($1 in m)) { if (k >= n) next; m[$1] = id[k++] } $1 = m[$1]; print }' \
  OFS=, "$T/ids" "$F/curves.csv" > "$T/c12.csv"
awk -F, 'NR == FNR { id[n++] = $1; next }
  FNR == 1 { print; next } { $1 = id[FNR - 2]; print }' \
  OFS=, "$T/ids" "$F/features.csv" > "$T/f12.csv"
"$PFI" fit "$T/f12.csv" --curves "$T/c12.csv" --ablation > "$T/fit12.txt" ||
  fail "fit on 12 headline ids"
grep -q "12 jobs, 12 of the paper's 25 H200 headline groups" "$T/fit12.txt" ||
  fail "fit on part of the paper's groups: population"
grep -q "published values are not shown" "$T/fit12.txt" ||
  fail "12 of 25 headline groups are not the paper's population"
# All 25 ids (fixture job k mod 12 renamed to headline id k): now the
# published values are shown, labelled, and the population is named.
awk -F, 'NR == FNR { id[n++] = $1; next }
  FNR == 1 { print; next }
  { if (!($1 in j)) j[$1] = m++; rows[j[$1]] = rows[j[$1]] $0 "\n" }
  END { for (k = 0; k < n; k++) { r = rows[k % m]; nl = split(r, L, "\n")
        for (q = 1; q < nl; q++) { split(L[q], c, ","); sub(/^[^,]*/, id[k], L[q]); print L[q] } } }' \
  "$T/ids" "$F/curves.csv" > "$T/c25.csv"
awk -F, 'NR == FNR { id[n++] = $1; next }
  FNR == 1 { print; next } { rows[m++] = $0 }
  END { for (k = 0; k < n; k++) { r = rows[k % m]; sub(/^[^,]*/, id[k], r); print r } }' \
  "$T/ids" "$F/features.csv" > "$T/f25.csv"
"$PFI" fit "$T/f25.csv" --curves "$T/c25.csv" --ablation > "$T/fit25.txt" ||
  fail "fit on the 25 headline ids"
grep -q "n = 25 jobs (this data): the paper's 25 H200 headline groups" \
  "$T/fit25.txt" || fail "fit on the paper's population: population"
grep -q "^     published " "$T/fit25.txt" ||
  fail "fit on the paper's population shows no published row"
"$PFI" simulate --curves "$T/c25.csv" --features "$T/f25.csv" --workloads 4 \
  --size 4 --mix production > "$T/sim25.txt" || fail "simulate on 25 ids"
grep -q "Published (paper, Figure 8, the same 25 groups): about 1,500" \
  "$T/sim25.txt" || fail "simulate on the paper's population: published value"

# The report too: the ablation's published columns only on the paper's
# population (the 25 emulated headline groups), absent on this fixture.
awk -F, 'NR > 1 && $11 != "" { exit 1 }' "$T/r-archtask/ablation.csv" ||
  fail "report: published ablation values on another population"
grep -q "are not shown: these groups are not that population" \
  "$T/r-archtask/report.html" || fail "report: why the published values are absent"
mkdir -p "$T/e25"
cp tests/data/emulated25/curves.csv tests/data/emulated25/features.csv "$T/e25/"
"$PFI" report -q --no-figures --draws 20 --workloads 2 --jobs-per-workload 2 \
  --out "$T/re25" "$T/e25" > /dev/null || fail "report on the emulated headline groups"
[ "$(awk -F, 'NR > 1 && $11 != ""' "$T/re25/ablation.csv" | wc -l)" -eq 7 ] ||
  fail "report: published ablation values missing on the paper's population"
grep -q "production mix, 30 % cut: share of the equal-to-oracle gap closed by PFI-aware (%)\",[-0-9.]*,63.0," \
  "$T/re25/headline.csv" || fail "report: the published 63 % on the paper's population"

exit $((fails > 0))
