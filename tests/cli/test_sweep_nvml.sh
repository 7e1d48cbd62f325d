#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi sweep --backend nvml` against the fake libnvidia-ml.so.1 built on
# the emulator (never a real NVML): caps set and read back through NVML,
# restored at the end and, after a SIGKILL, by `pfi restore` reopening the
# recorded backend. Real time, so the runs are a second long.
. "$(dirname "$0")/lib.sh"
B=${PFI_BUILD_DIR:-build}
TRAINER=$B/pfi-test-trainer
export PFI_EMU_STATE=$T/emu
export PFI_NVML_LIB=$B/fake-nvml/libnvidia-ml.so.1
export PFI_FAKE_NVML_EMU="profile=h200,gpus=4"
unset PFI_FAKE_NVML_FAIL PFI_FAKE_NVML_LOST_AFTER PFI_FAKE_NVML_NO_GPM \
  PFI_FAKE_NVML_MAX_MW PFI_FAKE_NVML_INIT PFI_FAKE_NVML_JOB PFI_FAKE_NVML_AT \
  PFI_SWEEP_KILL_AT PFI_EMU_REALTIME
G=moe-ft-qwen30ba3b-x8

caps_are() {
  "$PFI" devices --backend nvml --format csv 2>/dev/null >"$T/dev.csv" || { fail "pfi devices"; return; }
  awk -F, -v w="$1" 'NR > 1 { n++; if ($7 != w) bad = 1 } END { exit bad || n != 4 }' "$T/dev.csv" ||
    fail "$2: caps are not all $1 W: $(cut -d, -f1,7 "$T/dev.csv" | tr '\n' ' ')"
}

"$PFI" cap --backend nvml --set 650 >/dev/null 2>&1 || fail "pfi cap --set 650 through nvml"
caps_are 650.0 "before"
SW=(sweep --backend nvml --duration 1s --interval 0.25s --cooldown 0 --quiet
  --throughput "jsonl:$T/t.jsonl" --job nvjob)
"$PFI" "${SW[@]}" --caps 300,700 --db "$T/n.db" -- "$TRAINER" --group $G --hang 2>"$T/err" ||
  fail "nvml sweep: $(cat "$T/err")"
caps_are 650.0 "after the nvml sweep"
[ "$(sqlite3 "$T/n.db" "select count(*) from cap_events where action='readback' and mw=300000")" -eq 4 ] ||
  fail "no NVML read-back of 300 W on 4 GPUs"
[ "$(sqlite3 "$T/n.db" "select group_concat(state||':'||source) from runs")" = "complete:emulated,complete:emulated" ] ||
  fail "nvml runs: $(sqlite3 "$T/n.db" "select state, source from runs")"

# Setting the third GPU's limit is refused (NVML_ERROR_NO_PERMISSION, as
# for a user without root): the sweep stops with that error, exit 1, and
# the two GPUs already capped are restored.
PFI_FAKE_NVML_FAIL='nvmlDeviceSetPowerManagementLimit@2=4' "$PFI" "${SW[@]}" --caps 300 \
  --db "$T/p.db" -- "$TRAINER" --group $G --hang >/dev/null 2>"$T/err"
[ $? -eq 1 ] || fail "refused set: exit status"
grep -qi "permission" "$T/err" || fail "refused set message: $(cat "$T/err")"
caps_are 650.0 "after a refused set"
"$PFI" restore --db "$T/p.db" >"$T/out" 2>&1
grep -q "nothing to restore" "$T/out" || fail "refused set left caps: $(cat "$T/out")"

# Killed with the caps set; pfi restore reopens nvml from the ledger.
rc=$( (PFI_SWEEP_KILL_AT=set:0 "$PFI" "${SW[@]}" --caps 400 --db "$T/k.db" -- "$TRAINER" --group $G --hang \
  >/dev/null 2>&1; echo $?) 2>/dev/null)
[ "$rc" -eq 137 ] || fail "kill: exit status $rc"
caps_are 400.0 "right after the kill"
"$PFI" restore --db "$T/k.db" >/dev/null 2>"$T/err" || fail "pfi restore: $(cat "$T/err")"
caps_are 650.0 "after pfi restore"

[ "$fails" -eq 0 ] && echo "test_sweep_nvml: all passed"
exit $((fails > 0))
