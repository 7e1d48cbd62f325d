#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# What commands say besides their results: pfi report's progress lines
# name the command once ("pfi report: reading ...", they read "pfi report:
# report: reading ..."), and pfi restore --help describes both of its uses,
# the undo of pfi cap --plan --db and the killed sweep (it named only the
# sweep).
. "$(dirname "$0")/lib.sh"

M="job=dataset+network+batch_size+optimizer,cap_w=power_limit,power_w=average_power,tokens_per_s=1/time_per_epoch"
Z=data/real/zeus-nsdi23/summary_power_v100.csv
"$PFI" report --draws 100 --no-figures --map "$M" --out "$T/z" "$Z" >/dev/null 2>"$T/err" ||
  fail "report: exit $?: $(head -3 "$T/err")"
[ -s "$T/err" ] || fail "report printed no progress"
grep -v '^pfi report: ' "$T/err" && fail "progress lines not prefixed 'pfi report: ' (above)"
grep 'report: report:' "$T/err" && fail "progress lines prefixed twice (above)"
grep -qx "pfi report: reading $Z" "$T/err" || fail "report: no 'reading' line: $(head -3 "$T/err")"
grep -qx "pfi report: writing $T/z/report.html" "$T/err" || fail "report: no 'writing' line: $(tail -2 "$T/err")"

"$PFI" restore --help >"$T/help" || fail "restore --help: exit $?"
tr '\n' ' ' <"$T/help" | tr -s ' ' >"$T/flat"
grep -q "the undo of pfi cap --plan FILE --db STORE" "$T/flat" || fail "restore --help does not describe undoing pfi cap --plan"
grep -q "after a sweep that did not finish" "$T/flat" || fail "restore --help lost the killed sweep"
exit $((fails > 0))
