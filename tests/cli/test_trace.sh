#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi trace` and `pfi restore` without a sweep: importing the real
# dcgm-exporter sample, exporting it, malformed scrapes, bad stores.
. "$(dirname "$0")/lib.sh"

"$PFI" trace --help >"$T/out" || fail "trace --help exit status"
grep -q "summarize" "$T/out" || fail "trace --help text"
"$PFI" restore --help >/dev/null || fail "restore --help exit status"

# The real scrape: two GPUs of one host, values read off the file.
"$PFI" trace import-prom data/dcgm/h100-idle-eks.prom --db "$T/p.db" --job idle \
  2>"$T/err" || fail "import-prom exit status: $(cat "$T/err")"
grep -q "2 GPU sample" "$T/err" || fail "import-prom summary: $(cat "$T/err")"
"$PFI" trace export "$T/p.db" >"$T/x.csv" 2>/dev/null || fail "export exit status"
[ "$(head -1 "$T/x.csv" | cut -d, -f1-8)" = "run_id,job,cap_w,source,gpu,t_s,power_w,energy_j" ] ||
  fail "export header: $(head -1 "$T/x.csv")"
[ "$(wc -l <"$T/x.csv")" -eq 3 ] || fail "export rows: $(cat "$T/x.csv")"
# GPU 0: power 67.351 W, utilization 0 (valid), temperature 26 C; GPU 1 has
# no utilization line: empty, not 0.
awk -F, 'NR==2 { if ($5 != 0 || $7 != 67.351 || $11 != 0 || $22 != 26) exit 1 }
         NR==3 { if ($5 != 1 || $7 != 67.746 || $11 != "" || $22 != 28) exit 1 }' "$T/x.csv" ||
  fail "export values: $(cat "$T/x.csv")"
grep -q ",measured," "$T/x.csv" || fail "imported data not labelled measured"
# A damaged samples row (its data cut to 12 bytes: GPU 0's entry names more
# values than are left): a located error, exit status 2, for every reader.
cp "$T/p.db" "$T/cut.db"
sqlite3 "$T/cut.db" "update samples set data = substr(data, 1, 12)" || fail "cutting a samples row"
rc=0
"$PFI" trace export "$T/cut.db" >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] || fail "export of a damaged row: exit status $rc, expected 2: $(cat "$T/err")"
grep -q "cut.db: samples of run 1 at t_s [0-9.e+]*: byte 8 of the 12-byte row: truncated values" "$T/err" ||
  fail "export of a damaged row: message: $(cat "$T/err")"
"$PFI" trace runs "$T/p.db" --format json >"$T/runs.json" || fail "trace runs exit status"
python3 - "$T/runs.json" <<'PY' || fail "trace runs: $(cat "$T/runs.json")"
import json, sys
r = json.load(open(sys.argv[1]))
ok = (len(r) == 1 and r[0]["job"] == "idle" and r[0]["state"] == "complete"
      and r[0]["source"] == "measured" and r[0]["samples"] == 2
      and r[0]["steps"] == 0 and r[0]["exit_status"] is None and r[0]["gpus"] == 2)
sys.exit(0 if ok else 1)
PY
"$PFI" trace runs "$T/p.db" --format xml >/dev/null 2>&1
[ $? -eq 2 ] || fail "trace runs --format xml: exit status"

# Two scrapes appended in one file (as `curl >> file` every 5 s leaves
# them), the second with a malformed line 17 (line 3 of the second scrape):
# two instants 5 s apart, the error located in the file.
{ cat data/dcgm/h100-idle-eks.prom
  head -2 data/dcgm/h100-idle-eks.prom
  echo 'DCGM_FI_DEV_GPU_TEMP{gpu="0" 27'
  tail -n +3 data/dcgm/h100-idle-eks.prom; } >"$T/two.prom"
"$PFI" trace import-prom "$T/two.prom" --db "$T/two.db" 2>"$T/err" || fail "two scrapes: exit status"
grep -q "imported 2 scrape(s), 4 GPU sample(s)" "$T/err" || fail "two scrapes: $(cat "$T/err")"
grep -Eq "two.prom:17:[0-9]+: " "$T/err" || fail "two scrapes: error line: $(cat "$T/err")"
"$PFI" trace export "$T/two.db" 2>/dev/null | awk -F, 'NR > 1 { print $5 ":" $6 }' | tr '\n' ' ' >"$T/out"
[ "$(cat "$T/out")" = "0:0 1:0 0:5 1:5 " ] || fail "two scrapes: instants $(cat "$T/out")"

# An idle node has no training phase: nothing to summarize (bad input, 2).
"$PFI" trace summarize "$T/p.db" --out "$T/s" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "summarize of an idle trace: exit status"
grep -q "training" "$T/err" || fail "summarize message: $(cat "$T/err")"
# Emulated runs of 90 s end inside the jobs' startup (150 s; 240 s for a
# torch.compile variant): the message names the duration that works,
# 240 s + a minute of training = 300 s.
"$PFI" sweep --backend emu --emulate moe-ft-qwen30ba3b-x8 --caps 300,700 --duration 90s \
  --cooldown 0 --db "$T/short.db" --quiet || fail "short emulated sweep"
"$PFI" trace summarize "$T/short.db" --out "$T/ss" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "summarize of 90 s runs: exit status"
grep -q "the emulated runs last 90s, .* --duration 300s or more" "$T/err" ||
  fail "summarize of 90 s runs does not name the duration: $(cat "$T/err")"
# The input is checked before --out: a missing store is named first.
"$PFI" trace summarize "$T/nosuch.db" >/dev/null 2>"$T/err"
[ $? -ne 0 ] && grep -q "nosuch.db" "$T/err" || fail "summarize without --out on a missing store: $(cat "$T/err")"

# Malformed lines: reported with file:line:column, skipped; --strict fails.
printf 'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 30\nDCGM_FI_DEV_GPU_TEMP{gpu="1" 31\nDCGM_FI_DEV_POWER_USAGE{gpu="0"} x\n' >"$T/bad.prom"
"$PFI" trace import-prom "$T/bad.prom" --db "$T/b.db" 2>"$T/err" || fail "tolerant import exit status"
grep -Eq "bad.prom:2:[0-9]+: " "$T/err" || fail "line 2 not reported: $(cat "$T/err")"
grep -Eq "bad.prom:3:34: value is not a number" "$T/err" || fail "line 3 not reported: $(cat "$T/err")"
"$PFI" trace import-prom "$T/bad.prom" --db "$T/c.db" --strict 2>"$T/err"
[ $? -eq 2 ] || fail "--strict exit status"
[ ! -e "$T/c.db" ] || fail "--strict stored something"
"$PFI" trace import-prom "$T/none.prom" --db "$T/c.db" 2>"$T/err"
[ $? -eq 2 ] || fail "missing scrape: exit status"

# Bad stores: missing, not SQLite, a foreign SQLite file.
for db in "$T/missing.db" data/dcgm/README.md; do
  "$PFI" trace export "$db" >/dev/null 2>"$T/err"
  [ $? -eq 2 ] || fail "export $db: exit status"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "export $db: $(cat "$T/err")"
  "$PFI" restore --db "$db" >/dev/null 2>&1
  [ $? -eq 2 ] || fail "restore $db: exit status"
done
"$PFI" trace summarize "$T/p.db" 2>/dev/null
[ $? -eq 2 ] || fail "summarize without --out"
# A missing store is said before the missing --out, and nothing is created.
"$PFI" trace summarize "$T/absent.db" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "summarize of a missing store without --out: exit status"
grep -q "absent.db" "$T/err" || fail "summarize of a missing store names it: $(cat "$T/err")"
grep -q -- "--out" "$T/err" && fail "summarize of a missing store complains about --out first: $(cat "$T/err")"
[ -e "$T/absent.db" ] && fail "summarize of a missing store created it"
"$PFI" trace frobnicate 2>/dev/null
[ $? -eq 2 ] || fail "unknown subcommand"

# Nothing pending: restore says so.
"$PFI" restore --db "$T/p.db" >"$T/out" 2>&1 || fail "restore exit status"
grep -q "nothing to restore" "$T/out" || fail "restore output: $(cat "$T/out")"
"$PFI" restore --db "$T/p.db" --format json >"$T/out" || fail "restore json"
[ "$(tr -d ' \n' <"$T/out")" = "[]" ] || fail "restore json output: $(cat "$T/out")"

[ "$fails" -eq 0 ] && echo "test_trace: all passed"
exit $((fails > 0))
