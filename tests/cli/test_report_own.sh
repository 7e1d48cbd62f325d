#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi report` on a user's own data: the real A100 sweep of data/real
# converted into the canonical curves header (jobs the library does not
# know, throughput far below a thousand per second), a trace store of one
# emulated group from `pfi sweep --emulate`, and job names that carry HTML.
set -euo pipefail
: "${PFI:?}" "${PFI_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A private emulator state: sweeps of other tests running at the same time
# hold the default one.
export PFI_EMU_STATE="$tmp/emu.state"
fail() { echo "FAIL: $*" >&2; exit 1; }
# --paper: this test is about the paper-reproduction page on data without
# the paper's groups (the operator's page is test_report_operator.sh).
fast=(-q --paper --draws 50 --workloads 2 --jobs-per-workload 2)

# The real A100 sweep: Workload, GPU power cap, throughput, total GPU power.
mkdir "$tmp/real"
awk -F, 'NR==1{print "job,cap_w,power_w,tokens_per_s"; next}
  {print $1 "," $2 "," $4 "," $3}' \
  "$PFI_SOURCE_DIR/data/real/dvfs_sweep.csv" > "$tmp/real/curves.csv"
"$PFI" report "${fast[@]}" "$tmp/real" > /dev/null
html="$tmp/real/report.html"
# No source column: neither emulated nor measured is claimed.
grep -q "<strong>Provenance not stated.</strong>" "$html" || fail "provenance"
if grep -q "EMULATED DATA" "$html"; then fail "real data called emulated"; fi
# The jobs are of no known class: they get their own normalized panel
# instead of four empty class panels.
grep -q "other groups (no known class)" "$html" || fail "no panel for unclassified groups"
if grep -q "MoE pretraining (H200)</text>" "$html"; then fail "empty class panel drawn"; fi
# Throughput below 1000 per second is not shown in thousands (max of the
# data is 0.39, which would read 0.0004 k tokens/s).
grep -q ">tokens/s</text>" "$html" || fail "raw curves not in tokens/s"
if grep -q ">k tokens/s</text>" "$html"; then fail "raw curves scaled to thousands"; fi
# The lowest normalized point of the data (computed here) is not cut off by
# the axes: the axis starts at or below it.
lo=$(awk -F, 'NR>1{ if ($4 > t[$1]) t[$1] = $4; if ($3 > p[$1]) p[$1] = $3;
    tp[NR] = $1 "," $3 "," $4 }
  END { m = 1; for (k in tp) { split(tp[k], a, ",");
      x = a[2] / p[a[1]]; y = a[3] / t[a[1]]; if (x < m) m = x; if (y < m) m = y }
    printf "%.1f", int(m * 10) / 10 }' "$tmp/real/curves.csv")
[ "$lo" = "0.1" ] || fail "lowest normalized point: expected below 0.2, got floor $lo"
awk '/<svg/{b=""; on=1} on{b=b $0 "\n"} /<\/svg>/{on=0; if (b ~ /other groups/) print b}' \
  "$html" > "$tmp/norm.svg"
grep -q "> $lo</text>" "$tmp/norm.svg" || fail "normalized axis does not reach $lo"
# The A100 jobs are not called H200: the gpu column is empty (not stated).
awk -F, 'NR>1 && $2 != "" {exit 1}' "$tmp/real/groups.csv" || fail "user's groups called H200"
grep -q '"gpu": null' "$tmp/real/groups.json" || fail "gpu not null in groups.json"
# Every figure on the page has data: PFI by class has no classed group
# here, so it is replaced by a note instead of an empty frame.
grep -q "PFI by class: no H200 group of a known class" "$html" || fail "class figure note"
[ "$(grep -c '<figure class="fig"' "$html")" -eq 2 ] || fail "expected 2 figures (raw, normalized)"
# Sections that need missing inputs say so, in the reader's terms.
grep -q "mechanism.csv (per-run clocks) is not in the input" "$html" || fail "mechanism note"
grep -q "features.csv is not in the input" "$html" || fail "features note"
grep -q "need H200 headline groups of all three classes" "$html" || fail "Kruskal note"
if grep -qi -E '\b-?nan\b|\binf\b' "$tmp"/real/*.csv "$tmp"/real/*.json; then
  fail "NaN or inf in a table"
fi

# A trace store of one emulated group: summarized, labelled emulated.
"$PFI" sweep --emulate moe-ft-qwen30ba3b-x8 --caps 200:700:100 --duration 5m \
  --interval 30s --cooldown 0s --db "$tmp/s.db" > /dev/null 2>&1
"$PFI" report "${fast[@]}" "$tmp/s.db" > "$tmp/stdout"
[ "$(cat "$tmp/stdout")" = "$tmp/s-report/report.html" ] || fail "store: printed path"
grep -q "EMULATED DATA, NOT MEASUREMENTS" "$tmp/s-report/report.html" || fail "store: notice"
grep -q "the input has 0 dense, 0 MoE pretraining and 1 MoE fine-tuning" \
  "$tmp/s-report/report.html" || fail "store: Kruskal note"
[ -s "$tmp/s-report/mechanism.csv" ] || fail "store: mechanism.csv"
# An emulated group is on the emulator's H200.
[ "$(awk -F, 'NR==2{print $2}' "$tmp/s-report/groups.csv")" = H200 ] || fail "store: gpu H200"

# An output directory several levels deep that does not exist yet is
# created, for a directory and for a store; a file in the way is an error.
"$PFI" report "${fast[@]}" --out "$tmp/new/a/b" "$tmp/real" > /dev/null
[ -s "$tmp/new/a/b/report.html" ] || fail "nested --out for a directory"
"$PFI" report "${fast[@]}" --out "$tmp/new/c/d" "$tmp/s.db" > /dev/null
[ -s "$tmp/new/c/d/report.html" ] || fail "nested --out for a store"
set +e
"$PFI" report "${fast[@]}" --out "$tmp/real/curves.csv/x" "$tmp/real" 2> "$tmp/err"; st=$?
set -e
[ $st -ne 0 ] || fail "--out under a file accepted"
grep -q "curves.csv" "$tmp/err" || fail "--out under a file: message $(cat "$tmp/err")"

# A bad clock in mechanism.csv is bad input, located, not a run left out.
mkdir "$tmp/m"
cp "$tmp/s-report/curves.csv" "$tmp/m/"
awk -F, -v OFS=, 'NR==1{for(i=1;i<=NF;i++) if($i=="sm_clock_mhz") c=i}
  NR==3{$c="fast"} {print}' "$tmp/s-report/mechanism.csv" > "$tmp/m/mechanism.csv"
set +e
"$PFI" report "${fast[@]}" --no-figures "$tmp/m" 2> "$tmp/err"; st=$?
set -e
[ $st -eq 2 ] || fail "bad mechanism.csv: status $st"
grep -q "mechanism.csv:3:" "$tmp/err" || fail "bad mechanism.csv: message $(cat "$tmp/err")"

# Job names are text, never markup: escaped in tables and figure titles.
mkdir "$tmp/x"
printf '%s\n' 'job,cap_w,power_w,tokens_per_s' \
  '<script>alert(1)</script>,200,1000,50' '<script>alert(1)</script>,400,1800,80' \
  '<script>alert(1)</script>,700,2500,100' '"a&b""<i>",200,900,40' '"a&b""<i>",700,2400,90' \
  > "$tmp/x/curves.csv"
"$PFI" report "${fast[@]}" "$tmp/x" > /dev/null
if grep -q '<script>alert' "$tmp/x/report.html"; then fail "job name not escaped"; fi
if grep -q '<i>' "$tmp/x/report.html"; then fail "job name markup not escaped"; fi
grep -q '<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>' "$tmp/x/report.html" \
  || fail "escaped job name not in the table"
grep -q '<td>a&amp;b&quot;&lt;i&gt;</td>' "$tmp/x/report.html" || fail "a&b name"
echo "test_report_own: ok"
