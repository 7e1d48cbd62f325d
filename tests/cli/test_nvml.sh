#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi devices` and `pfi cap` through the nvml backend and the fake
# libnvidia-ml.so.1 built on the emulator (tests/fake-nvml/), and through
# the emu backend. Never loads a real NVML: PFI_NVML_LIB is always the fake
# or a path that does not exist.
set -u
: "${PFI:?}" "${PFI_BUILD_DIR:?}"
FAKE="$PFI_BUILD_DIR/fake-nvml/libnvidia-ml.so.1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PFI_EMU_STATE="$tmp/state"
export PFI_FAKE_NVML_EMU="profile=h200,gpus=4"
export PFI_NVML_LIB="$FAKE"
unset PFI_FAKE_NVML_FAIL PFI_FAKE_NVML_LOST_AFTER PFI_FAKE_NVML_NO_GPM \
  PFI_FAKE_NVML_MAX_MW PFI_FAKE_NVML_INIT PFI_FAKE_NVML_JOB PFI_FAKE_NVML_AT
fails=0

check() { # check NAME EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: expected '$2', got '$3'"
    fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}
contains() { # contains NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: '$3' not in:"
    cat "$2"
    fails=$((fails + 1))
  fi
}
# The column of a CSV header by name, then that column of row GPU.
csv_get() { # csv_get FILE GPU COLUMN
  awk -F, -v gpu="$2" -v col="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
    $1 == gpu { print $c }' "$1"
}
caps() { # current caps of GPUs 0-3 as "a b c d", read straight from emu
  "$PFI" devices --backend emu --params "$PFI_FAKE_NVML_EMU" --format csv \
    >"$tmp/caps.csv" 2>/dev/null
  echo "$(csv_get "$tmp/caps.csv" 0 cap_w) $(csv_get "$tmp/caps.csv" 1 cap_w)" \
    "$(csv_get "$tmp/caps.csv" 2 cap_w) $(csv_get "$tmp/caps.csv" 3 cap_w)"
}

"$PFI" devices --help >"$tmp/out" 2>&1
check "devices --help exit" 0 $?
contains "devices --help text" "$tmp/out" "usage: pfi devices"
"$PFI" cap --help >"$tmp/out" 2>&1
check "cap --help exit" 0 $?
contains "cap --help names privileges" "$tmp/out" "CAP_SYS_ADMIN"

# Listing through NVML: the H200 limits from its specification.
"$PFI" devices --backend nvml --format csv >"$tmp/d.csv" 2>"$tmp/err"
check "devices nvml exit" 0 $?
check "devices nvml rows" 5 "$(wc -l <"$tmp/d.csv")"
check "min_cap_w" 200.0 "$(csv_get "$tmp/d.csv" 3 min_cap_w)"
check "max_cap_w" 700.0 "$(csv_get "$tmp/d.csv" 3 max_cap_w)"
check "default_cap_w" 700.0 "$(csv_get "$tmp/d.csv" 0 default_cap_w)"
check "cap_w" 700.0 "$(csv_get "$tmp/d.csv" 0 cap_w)"
check "enforced_cap_w" 700.0 "$(csv_get "$tmp/d.csv" 0 enforced_cap_w)"
check "mem_clock_mhz" 3201 "$(csv_get "$tmp/d.csv" 0 mem_clock_mhz)"
check "backend column" nvml "$(csv_get "$tmp/d.csv" 0 backend)"
# The fake's GPUs are the emulator's, and are labelled so.
check "emulated column" true "$(csv_get "$tmp/d.csv" 0 emulated)"

"$PFI" devices --backend nvml --format json >"$tmp/d.json" 2>/dev/null
check "devices json exit" 0 $?
for key in index name uuid min_cap_w max_cap_w cap_w enforced_cap_w power_w; do
  check "json key $key" 4 "$(grep -c "\"$key\":" "$tmp/d.json")"
done

# Default backend: nvml when the library finds GPUs, said on stderr; never
# the emulator in its place. Without a working NVML, devices and cap (and a
# sweep of a command) fail with exit 1, say why and name --backend emu, and
# change nothing; --backend emu or PFI_BACKEND=emu is the emulator.
unset PFI_BACKEND
"$PFI" devices >/dev/null 2>"$tmp/err"
contains "default picks nvml" "$tmp/err" "using the nvml backend (4 GPUs)"
NOLIB=/nonexistent/libnvidia-ml.so.1
PFI_NVML_LIB=$NOLIB "$PFI" devices --format csv >"$tmp/e.csv" 2>"$tmp/err"
check "devices without nvml exit" 1 $?
contains "devices without nvml says why" "$tmp/err" "NVML not available: cannot load $NOLIB"
contains "devices without nvml names emu" "$tmp/err" "use --backend emu"
check "devices without nvml prints nothing" "" "$(cat "$tmp/e.csv")"
PFI_NVML_LIB=$NOLIB "$PFI" cap --gpus 0 --set 400 >"$tmp/out" 2>"$tmp/err"
check "cap --set without nvml exit" 1 $?
contains "cap --set without nvml says why" "$tmp/err" "NVML not available: cannot load $NOLIB"
check "cap --set without nvml prints nothing" "" "$(cat "$tmp/out")"
PFI_NVML_LIB=$NOLIB "$PFI" cap --reset >/dev/null 2>"$tmp/err"
check "cap --reset without nvml exit" 1 $?
# The driver present but not loaded (NVML_ERROR_DRIVER_NOT_LOADED).
PFI_FAKE_NVML_INIT=9 "$PFI" cap --set 400 >"$tmp/out" 2>"$tmp/err"
check "cap with the driver not loaded exit" 1 $?
contains "driver not loaded says why" "$tmp/err" "NVML not available:"
contains "driver not loaded names NVML's reason" "$tmp/err" "driver is not loaded"
check "caps untouched by the refused caps" "700.0 700.0 700.0 700.0" "$(caps)"
PFI_NVML_LIB=$NOLIB "$PFI" sweep --backend nvml --caps 300 --duration 1s --interval 0.5s \
  --db "$tmp/nv.db" --quiet -- true >/dev/null 2>"$tmp/err"
check "sweep --backend nvml without nvml exit" 1 $?
contains "sweep without nvml says why" "$tmp/err" "NVML not available: cannot load $NOLIB"
[ -e "$tmp/nv.db" ] && check "sweep without nvml leaves no store" absent present
PFI_NVML_LIB=$NOLIB "$PFI" devices --backend nvml >/dev/null 2>"$tmp/err"
check "nvml named and missing exit" 1 $?
contains "nvml missing message" "$tmp/err" "$NOLIB"
# The emulator when asked for, by option or by environment.
PFI_NVML_LIB=$NOLIB "$PFI" devices --backend emu --format csv >"$tmp/e.csv" 2>"$tmp/err"
check "devices --backend emu exit" 0 $?
check "devices --backend emu is emulated" true "$(csv_get "$tmp/e.csv" 0 emulated)"
PFI_NVML_LIB=$NOLIB PFI_BACKEND=emu "$PFI" devices --format csv >"$tmp/e.csv" 2>"$tmp/err"
check "PFI_BACKEND=emu devices exit" 0 $?
check "PFI_BACKEND=emu backend column" emu "$(csv_get "$tmp/e.csv" 0 backend)"
PFI_NVML_LIB=$NOLIB PFI_BACKEND=emu "$PFI" cap --gpus 0 --set 400 >"$tmp/out" 2>"$tmp/err"
check "PFI_BACKEND=emu cap exit" 0 $?
contains "PFI_BACKEND=emu cap is emulated" "$tmp/out" "[emulated]"
PFI_BACKEND=emu "$PFI" cap --reset >/dev/null 2>&1
PFI_NVML_LIB=$NOLIB PFI_BACKEND=emu "$PFI" sweep --caps 300 --duration 1s \
  --interval 0.5s --cooldown 0 --db "$tmp/emu.db" --quiet -- true >/dev/null 2>"$tmp/err"
check "PFI_BACKEND=emu sweep of a command exit" 0 $?
PFI_BACKEND=bogus "$PFI" devices >/dev/null 2>"$tmp/err"
check "PFI_BACKEND unknown exit" 2 $?
contains "PFI_BACKEND unknown message" "$tmp/err" "unknown backend 'bogus'"

# Caps through NVML persist in the emulator's state.
"$PFI" cap --backend nvml --gpus 0,1 --set 500 >"$tmp/out" 2>"$tmp/err"
check "cap set exit" 0 $?
contains "cap prints old -> new" "$tmp/out" "GPU 0: 700.0 W -> 500.0 W [emulated]"
contains "cap prints GPU 1" "$tmp/out" "GPU 1: 700.0 W -> 500.0 W"
check "caps after set" "500.0 500.0 700.0 700.0" "$(caps)"
"$PFI" cap --backend nvml --gpus 1-3 --set 412.5 --format json >"$tmp/out"
check "cap json exit" 0 $?
contains "cap json old" "$tmp/out" '"old_cap_w": 500.0'
contains "cap json new" "$tmp/out" '"new_cap_w": 412.5'
check "caps after range" "500.0 412.5 412.5 412.5" "$(caps)"
"$PFI" cap --backend nvml --reset >"$tmp/out" 2>"$tmp/err"
check "cap reset exit" 0 $?
check "caps after reset" "700.0 700.0 700.0 700.0" "$(caps)"

# Dry run changes nothing.
"$PFI" cap --backend nvml --set 300 --dry-run >"$tmp/out" 2>&1
check "dry run exit" 0 $?
contains "dry run says so" "$tmp/out" "(dry run)"
check "caps after dry run" "700.0 700.0 700.0 700.0" "$(caps)"

# Out of range: checked before anything changes, exit 2.
"$PFI" cap --backend nvml --set 150 >"$tmp/out" 2>"$tmp/err"
check "below range exit" 2 $?
contains "below range message" "$tmp/err" "outside GPU 0's power-limit range 200.000..700.000 W"
check "caps after refused" "700.0 700.0 700.0 700.0" "$(caps)"
# The driver's own range check (constraints claim 800 W, GPU takes 700 W).
PFI_FAKE_NVML_MAX_MW=800000 "$PFI" cap --backend nvml --gpus 0,1 --set 750 \
  >"$tmp/out" 2>"$tmp/err"
check "driver range exit" 2 $?
contains "driver range message" "$tmp/err" "outside the GPU's power-limit range"

# All or none: GPU 2 refuses (no permission); GPUs 0 and 1 are restored.
PFI_FAKE_NVML_FAIL='nvmlDeviceSetPowerManagementLimit@2=4' \
  "$PFI" cap --backend nvml --set 450 >"$tmp/out" 2>"$tmp/err"
check "partial failure exit" 1 $?
contains "permission message" "$tmp/err" "setting a power limit needs root or CAP_SYS_ADMIN"
contains "restored GPU 0" "$tmp/err" "GPU 0 restored to 700.000 W"
contains "restored GPU 1" "$tmp/err" "GPU 1 restored to 700.000 W"
check "caps after partial failure" "700.0 700.0 700.0 700.0" "$(caps)"

# GPU lost while setting: exit 1 and a message naming the GPU.
PFI_FAKE_NVML_FAIL='nvmlDeviceSetPowerManagementLimit@1=15' \
  "$PFI" cap --backend nvml --gpus 0,1 --set 600 >"$tmp/out" 2>"$tmp/err"
check "gpu lost exit" 1 $?
contains "gpu lost message" "$tmp/err" "on GPU 1 failed"
check "caps after gpu lost" "700.0 700.0 700.0 700.0" "$(caps)"
PFI_FAKE_NVML_LOST_AFTER=9 "$PFI" devices --backend nvml >"$tmp/out" 2>"$tmp/err"
check "devices gpu lost exit" 1 $?
contains "devices gpu lost message" "$tmp/err" "GPU is lost"

# The fault backend: the third set fails (GPU lost); GPUs 1 and 0 restored.
"$PFI" cap --backend fault \
  --params "fail_set_after=2,code=gpulost,inner_params=$PFI_FAKE_NVML_EMU" \
  --set 550 >"$tmp/out" 2>"$tmp/err"
check "fault cap exit" 1 $?
contains "fault cap message" "$tmp/err" "injected transient failure on set_cap call 3 (GPU 2)"
contains "fault restored GPU 1" "$tmp/err" "GPU 1 restored to 700.000 W"
contains "fault restored GPU 0" "$tmp/err" "GPU 0 restored to 700.000 W"
check "caps after fault" "700.0 700.0 700.0 700.0" "$(caps)"
# A restoration that fails too is reported, never silent.
"$PFI" cap --backend fault \
  --params "fail_set_after=1,mode=persistent,inner_params=$PFI_FAKE_NVML_EMU" \
  --set 550 >"$tmp/out" 2>"$tmp/err"
check "failed restore exit" 1 $?
contains "failed restore message" "$tmp/err" "GPU 0 could NOT be restored to 700.000 W"
contains "failed restore count" "$tmp/err" "1 GPU left at a changed limit"
check "caps after failed restore" "550.0 700.0 700.0 700.0" "$(caps)"
"$PFI" cap --backend emu --params "$PFI_FAKE_NVML_EMU" --reset >/dev/null 2>&1

# Bad usage.
"$PFI" cap --backend nvml --gpus 0,0 --set 500 >/dev/null 2>"$tmp/err"
check "duplicate gpu exit" 2 $?
contains "duplicate gpu message" "$tmp/err" "GPU 0 listed twice"
"$PFI" cap --backend nvml --gpus 9 --set 500 >/dev/null 2>"$tmp/err"
check "missing gpu exit" 2 $?
contains "missing gpu message" "$tmp/err" "GPU 9 does not exist"
"$PFI" cap --backend nvml --gpus x --set 500 >/dev/null 2>"$tmp/err"
check "bad gpu list exit" 2 $?
"$PFI" cap --backend nvml --set nan >/dev/null 2>"$tmp/err"
check "nan watts exit" 2 $?
"$PFI" cap --backend nvml >/dev/null 2>"$tmp/err"
check "no action exit" 2 $?
"$PFI" cap --backend nvml --set 500 --reset >/dev/null 2>"$tmp/err"
check "two actions exit" 2 $?
"$PFI" devices --backend foo >/dev/null 2>"$tmp/err"
check "unknown backend exit" 2 $?
contains "unknown backend lists backends" "$tmp/err" "nvml"
"$PFI" devices --format xml >/dev/null 2>"$tmp/err"
check "bad format exit" 2 $?

# The emu backend directly: the same caps, labelled emulated.
"$PFI" cap --backend emu --params "$PFI_FAKE_NVML_EMU" --gpus 3 --set 250 \
  >"$tmp/out" 2>&1
check "emu cap exit" 0 $?
contains "emu cap labelled" "$tmp/out" "[emulated]"
"$PFI" devices --backend nvml --format csv >"$tmp/d.csv" 2>/dev/null
check "nvml sees emu cap" 250.0 "$(csv_get "$tmp/d.csv" 3 cap_w)"

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all checks passed"
