#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi emulate`: the issue's done-when check (`pfi emulate sweep --job G |
# pfi index -` gives the published PFI within 0.02 for every group of the
# published tables), trace columns and phases, repeatability to the byte,
# the "emulated" label, and bad input.
. "$(dirname "$0")/lib.sh"

# expect_status N PATTERN ARGS...: exit status N, stderr matching PATTERN.
expect_status() {
  local want=$1 pat=$2
  shift 2
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "pfi $*: exit status $rc, expected $want"
  grep -Eq -- "$pat" "$T/err" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
}

"$PFI" emulate --help >"$T/h" 2>&1 || fail "emulate --help failed"
grep -q "emulated" "$T/h" || fail "help does not say emulated"
"$PFI" emulate sweep --help >/dev/null 2>&1 || fail "emulate sweep --help failed"

# The done-when check. The expected values are the published tables
# (data/paper), read here with awk; 0.02 is the issue's tolerance.
check_group() { # ID PUBLISHED [CAPS]
  local id=$1 pub=$2 caps=${3:-}
  if [ -n "$caps" ]; then
    "$PFI" emulate sweep --job "$id" --caps "$caps" >"$T/c.csv" || { fail "sweep $id"; return; }
  else
    "$PFI" emulate sweep --job "$id" >"$T/c.csv" || { fail "sweep $id"; return; }
  fi
  local got
  got=$("$PFI" index --definition ratio --format csv - <"$T/c.csv" |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "pfi") c = i } NR == 2 { print $c }')
  [ -n "$got" ] || { fail "$id: no PFI from pfi index"; return; }
  near "$got" "$pub" 0.02 "$id${caps:+ on $caps}"
}
while IFS=, read -r g _ _ _ _ _ _ _ pfi _; do
  check_group "$g" "$pfi"
done < <(tail -n +2 data/paper/h200_headline_groups.csv)
while IFS=, read -r g _ _ _ _ _ _ _ pfi; do
  check_group "$g" "$pfi"
done < <(tail -n +2 data/paper/h200_heldout_groups.csv)
while IFS=, read -r g _ _ _ _ _ _ _ pfi _; do
  check_group "$g@h100" "$pfi"
done < <(tail -n +2 data/paper/h100_h200_matched_groups.csv)
while IFS=, read -r g _ coarse; do
  check_group "$g" "$coarse" 200,500,600,700
done < <(tail -n +2 data/paper/h200_grid_sensitivity.csv)

# Every curves row is labelled emulated.
"$PFI" emulate sweep --job dense-pt-mistral24b-x8 >"$T/s1.csv"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "source") c = i; if (!c) exit 1; next }
         $c != "emulated" { exit 1 }' "$T/s1.csv" || fail "sweep rows not labelled emulated"

# Same seed, same bytes; another seed, other bytes.
"$PFI" emulate sweep --job dense-pt-mistral24b-x8 >"$T/s2.csv"
cmp -s "$T/s1.csv" "$T/s2.csv" || fail "sweep not byte-identical for the same seed"
"$PFI" emulate sweep --job dense-pt-mistral24b-x8 --seed 2 >"$T/s3.csv"
cmp -s "$T/s1.csv" "$T/s3.csv" && fail "sweep identical for different seeds"
"$PFI" emulate trace --job moe-ft-qwen30ba3b-x8 --cap 300 --gpu 0 >"$T/t1.csv"
"$PFI" emulate trace --job moe-ft-qwen30ba3b-x8 --cap 300 --gpu 0 >"$T/t2.csv"
cmp -s "$T/t1.csv" "$T/t2.csv" || fail "trace not byte-identical for the same seed"

# The generic path agrees: `pfi sweep --emulate` (device backend, trace
# store) then `pfi trace summarize` give the same steady-state power and
# throughput as `pfi emulate sweep`, to the printed precision (4 decimals).
if "$PFI" sweep --help >/dev/null 2>&1 && "$PFI" trace --help >/dev/null 2>&1; then
  PFI_EMU_STATE="$T/emu" "$PFI" sweep --emulate dense-pt-mistral24b-x8 --caps 200,450,700 \
    --db "$T/s.db" >/dev/null 2>&1 || fail "pfi sweep --emulate"
  "$PFI" trace summarize "$T/s.db" --out "$T/sum" >/dev/null 2>&1 || fail "pfi trace summarize"
  "$PFI" emulate sweep --job dense-pt-mistral24b-x8 --caps 200,450,700 >"$T/e.csv"
  awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    FILENAME == ARGV[1] { p[$h["cap_w"]] = $h["power_w"]; t[$h["cap_w"]] = $h["tokens_per_s"]; next }
    { c = $h["cap_w"]; n++
      if (!(c in p)) { print "cap " c " missing"; bad = 1; next }
      dp = p[c] - $h["power_w"]; dt = t[c] - $h["tokens_per_s"]
      if (dp < 0) dp = -dp; if (dt < 0) dt = -dt
      if (dp > 1e-3 || dt > 1e-3) { print "cap " c ": " p[c] " " $h["power_w"] " " t[c] " " $h["tokens_per_s"]; bad = 1 } }
    END { exit bad || n != 3 }' "$T/sum/curves.csv" "$T/e.csv" ||
    fail "pfi sweep + pfi trace summarize disagree with pfi emulate sweep"
fi

# Trace: the required columns, 361 samples of a 30-minute run at 5 s, the
# four phases in order, no power reading above the cap, source emulated.
for col in t_s gpu power_w sm_clock_mhz mem_clock_mhz gpu_util sm_active \
  tensor_active dram_active mem_copy_util fb_used_mib tokens_per_s source; do
  head -1 "$T/t1.csv" | tr ',' '\n' | grep -qx "$col" || fail "trace lacks column $col"
done
[ "$(tail -n +2 "$T/t1.csv" | wc -l)" -eq 361 ] || fail "trace has $(tail -n +2 "$T/t1.csv" | wc -l) rows, expected 361"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
  { if ($h["power_w"] > 300) bad = "power over cap";
    if ($h["source"] != "emulated") bad = "source";
    p = $h["phase"]; if (p != last) seq = seq " " p; last = p }
  END { if (bad != "") { print bad; exit 1 }
        if (seq != " warmup startup training pause training pause") { print seq; exit 1 } }' \
  "$T/t1.csv" || fail "trace phases/power/source wrong"
# All GPUs of an 8-GPU job: 8 rows per sample.
"$PFI" emulate trace --job dense-pt-mistral24b-x8 --cap 500 --interval 60 >"$T/t8.csv"
[ "$(tail -n +2 "$T/t8.csv" | wc -l)" -eq $((31 * 8)) ] || fail "8-GPU trace row count"

# jobs: 35 entries in every format, labelled.
[ "$("$PFI" emulate jobs --format csv | tail -n +2 | wc -l)" -eq 35 ] || fail "jobs csv count"
"$PFI" emulate jobs | head -1 | grep -q emulated || fail "jobs table not labelled"
"$PFI" emulate jobs --format json | grep -c '"source": "emulated"' | grep -qx 35 || fail "jobs json"

# Bad input: usage errors and a bad library, exit status 2, one clear line.
expect_status 2 "--job GROUP is required" emulate sweep
expect_status 2 "no job 'nope'" emulate sweep --job nope
expect_status 2 "outside the GPU's limits" emulate sweep --job dense-pt-mistral24b-x8 --caps 100,700
expect_status 2 "outside the GPU's limits" emulate trace --job dense-pt-mistral24b-x8 --cap 900
expect_status 2 "700 W appears twice" emulate sweep --job dense-pt-mistral24b-x8 --caps 300,700,700
expect_status 2 "unknown action" emulate frobnicate
expect_status 2 "unknown option '--bogus'" emulate sweep --bogus
printf 'id,source\nx,emulated\n' >"$T/bad1.csv"
expect_status 2 "bad1.csv:1.*missing column" emulate jobs --jobs "$T/bad1.csv"
head -2 data/jobs/jobs.csv | sed '2s/,emulated,h200,/,measured,h200,/' >"$T/bad2.csv"
expect_status 2 "bad2.csv:2:[0-9]+: field 'source'" emulate jobs --jobs "$T/bad2.csv"
head -2 data/jobs/jobs.csv | awk -F, 'BEGIN { OFS = "," } NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mem_share") c = i } NR == 2 { $c = "1.5" } { print }' >"$T/bad3.csv"
expect_status 2 "bad3.csv:2:[0-9]+: field 'mem_share'" emulate jobs --jobs "$T/bad3.csv"

if [ "$fails" -ne 0 ]; then
  echo "$fails failure(s)" >&2
  exit 1
fi
echo "ok"
