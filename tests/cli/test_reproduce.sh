#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi reproduce`: the emulated campaign end to end (short runs, few draws,
# a small simulation, so that it takes seconds), its promises (every table
# as CSV and JSON, everything labelled emulated, same seed same bytes,
# `pfi report` on its trace store gives the same tables), and bad input.
set -euo pipefail
: "${PFI:?}" "${PFI_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
small=(--duration 5m --interval 30s --draws 200 --workloads 6 --jobs-per-workload 10)

"$PFI" reproduce --help | grep -q "usage: pfi reproduce" || fail "--help"

"$PFI" reproduce --out "$tmp/a" "${small[@]}" > "$tmp/stdout" 2> "$tmp/stderr"
[ "$(cat "$tmp/stdout")" = "$tmp/a/report.html" ] || fail "printed path: $(cat "$tmp/stdout")"
grep -q "campaign: 35 groups, 190 runs" "$tmp/stderr" || fail "no campaign progress on stderr"
grep -q "report: writing" "$tmp/stderr" || fail "no report progress on stderr"

tables="headline groups categories kruskal dunn grid_sensitivity rank_correlations
        h100_h200 screening leverage ablation heldout validation allocation"
for t in $tables; do
  [ -s "$tmp/a/$t.csv" ] && [ -s "$tmp/a/$t.json" ] || fail "missing table $t"
done
for f in curves.csv features.csv mechanism.csv report.html campaign.db; do
  [ -s "$tmp/a/$f" ] || fail "missing $f"
done
# Every group of the library is in the results (25 + 4 held out + 6 H100).
[ "$(tail -n +2 "$tmp/a/groups.csv" | wc -l)" -eq 35 ] || fail "groups.csv rows"
# The held-out and H100 groups: each with its ratio PFI beside the model's
# prediction (a column the table did not have left the cells empty).
[ "$(awk -F, 'NR > 1 && $3 != "" && $4 != ""' "$tmp/a/heldout.csv" | wc -l)" -eq 10 ] ||
  fail "heldout.csv: $(head -3 "$tmp/a/heldout.csv")"
# Every summarized row is labelled emulated; so is the page.
awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="source") c=i; next}
  $c != "emulated" {exit 1}' "$tmp/a/curves.csv" || fail "curves.csv not all emulated"
awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="source") c=i; next}
  $c != "emulated" {exit 1}' "$tmp/a/features.csv" || fail "features.csv not all emulated"
grep -q "EMULATED DATA, NOT MEASUREMENTS" "$tmp/a/report.html" || fail "no notice"
# So is every row of every result table (a `source` column), CSV and JSON.
for t in $tables; do
  awk -F, 'NR==1{ if ($NF != "source") exit 1; next } $NF != "emulated" {exit 1}' \
    "$tmp/a/$t.csv" || fail "$t.csv: rows not labelled emulated"
  grep -q '"source": "emulated"' "$tmp/a/$t.json" || fail "$t.json not labelled"
done
# The memory clock does not move with the cap (the mechanism), SM clock does.
awk -F, 'NR>1 && $1=="moe-ft-qwen30ba3b-x8" {sm[$2]=$3; mem[$2]=$4}
  END { if (!(sm[200] < sm[700])) exit 1; if (mem[200] != mem[700]) exit 1 }' \
  "$tmp/a/mechanism.csv" || fail "mechanism.csv clocks"

# Same seed, same bytes (every output but the store, which records
# wall-clock times of cap changes).
"$PFI" reproduce --out "$tmp/b" "${small[@]}" -q > /dev/null
for f in "$tmp"/a/*; do
  b=$(basename "$f")
  [ "$b" = campaign.db ] && continue
  cmp -s "$f" "$tmp/b/$b" || fail "not reproducible: $b"
done
# Another seed, another campaign.
"$PFI" reproduce --out "$tmp/c" "${small[@]}" --seed 7 -q > /dev/null
cmp -s "$tmp/a/curves.csv" "$tmp/c/curves.csv" && fail "seed has no effect"

# `pfi report` on the campaign's store: the same tables.
"$PFI" report --out "$tmp/r" --draws 200 --workloads 6 --jobs-per-workload 10 \
  -q "$tmp/a/campaign.db" > /dev/null
for t in $tables; do
  cmp -s "$tmp/a/$t.csv" "$tmp/r/$t.csv" || fail "pfi report on the store differs: $t.csv"
done

# The first screen states the run length as given: whole minutes in
# minutes, anything else in seconds (never rounded to "0-minute" or "4-minute").
grep -q "5-minute runs sampled every 30 s" "$tmp/a/report.html" || fail "what ran: 5 minutes"
head -2 "$PFI_SOURCE_DIR/data/jobs/jobs.csv" > "$tmp/one.csv"
"$PFI" reproduce --out "$tmp/one" --jobs "$tmp/one.csv" --duration 270s --interval 30s \
  --draws 50 --workloads 2 --jobs-per-workload 2 -q > /dev/null
grep -q "270-second runs sampled every 30 s" "$tmp/one/report.html" || fail "what ran: 270 s"

# Bad input: a job library with a bad number, exit 2 and file:line:column.
head -3 "$PFI_SOURCE_DIR/data/jobs/jobs.csv" | sed '3s/,8,fine,/,eight,fine,/' > "$tmp/jobs.csv"
set +e
"$PFI" reproduce --out "$tmp/d" --jobs "$tmp/jobs.csv" -q 2> "$tmp/err"; st=$?
[ $st -eq 2 ] || fail "bad job library: status $st ($(cat "$tmp/err"))"
grep -q "jobs.csv:3:" "$tmp/err" || fail "bad job library: message $(cat "$tmp/err")"
"$PFI" reproduce --seed -1 2> /dev/null; st=$?
[ $st -eq 2 ] || fail "--seed -1: status $st"
"$PFI" reproduce --duration 0 2> /dev/null; st=$?
[ $st -eq 2 ] || fail "--duration 0: status $st"
# Runs too short for the emulated warm-up: exit 2, naming --duration.
"$PFI" reproduce --out "$tmp/short" --jobs "$tmp/one.csv" --duration 90s --no-figures \
  --draws 20 --workloads 2 --jobs-per-workload 2 -q > /dev/null 2> "$tmp/err"; st=$?
[ $st -eq 2 ] || fail "--duration 90s: status $st"
grep -q -- "--duration 90s is shorter than the emulated jobs' warm-up" "$tmp/err" ||
  fail "--duration 90s: message $(cat "$tmp/err")"
"$PFI" reproduce stray 2> /dev/null; st=$?
[ $st -eq 2 ] || fail "stray argument: status $st"
touch "$tmp/file"
"$PFI" reproduce --out "$tmp/file" 2> "$tmp/err"; st=$?
[ $st -eq 2 ] || fail "--out a file: status $st"
grep -q "not a directory" "$tmp/err" || fail "--out a file: $(cat "$tmp/err")"
# A NaN or a text cell in the model's feature of a held-out H200 group or of
# an H100 group is a located error (exit 2), as in a headline group: the
# group is not dropped from the held-out R^2 without a word.
for bad in "dense-ft-mistral24b-x8 nan" "dense-ft-mistral24b-x8@h100 lots"; do
  set -- $bad
  mkdir -p "$tmp/bf"
  cp "$tmp/a/curves.csv" "$tmp/a/mechanism.csv" "$tmp/bf/"
  awk -F, -v OFS=, -v g="$1" -v v="$2" 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "dram_copy_product") c = i }
    NR > 1 && $1 == g { $c = v; printf "%d:%d\n", NR, length($1) + 1 > "/dev/stderr" } { print }' \
    "$tmp/a/features.csv" > "$tmp/bf/features.csv" 2> "$tmp/where"
  "$PFI" report -q --no-figures --draws 50 --out "$tmp/bf/out" "$tmp/bf" > /dev/null 2> "$tmp/err"; st=$?
  [ $st -eq 2 ] || fail "feature '$2' in $1: status $st"
  grep -q "features.csv:$(cut -d: -f1 "$tmp/where"):[0-9]*: field 'dram_copy_product'" "$tmp/err" ||
    fail "feature '$2' in $1: message $(cat "$tmp/err")"
  rm -rf "$tmp/bf"
done
set -e
echo "test_reproduce: ok"
