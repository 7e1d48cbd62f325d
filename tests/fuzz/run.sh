#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs every libFuzzer target tests/fuzz/fuzz_*.c for SECONDS on its seed
# corpus (tests/fuzz/corpus/NAME) plus a work corpus kept in the build
# directory, prints each target's coverage (libFuzzer's cov: and ft: of its
# last status line) and fails when a target crashes, leaks or times out, when
# its coverage is below its floor in tests/fuzz/floors.txt, or when a target
# has no floor (or a floor names no target).
#
# usage: tests/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]
#   (make fuzz calls it with every target; name targets to run only those)
set -u
build=${1:?usage: run.sh BUILD_DIR [SECONDS [TARGET...]]}
seconds=${2:-10}
shift $(($# < 2 ? $# : 2))
only=" $* "
here=$(cd "$(dirname "$0")" && pwd)
floors=${PFI_FUZZ_FLOORS:-$here/floors.txt}

declare -A floor
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  line=${line%%#*}
  read -r name min extra <<<"$line" || true
  [ -z "${name:-}" ] && continue
  if [ -n "${extra:-}" ] || ! [[ "${min:-}" =~ ^[0-9]+$ ]]; then
    echo "$floors:$lineno: expected 'TARGET MIN_COV', got '$line'" >&2
    exit 2
  fi
  if [ -n "${floor[$name]:-}" ]; then
    echo "$floors:$lineno: second floor for $name" >&2
    exit 2
  fi
  floor[$name]=$min
done <"$floors"

targets=()
bad=0
for src in "$here"/fuzz_*.c; do
  name=$(basename "$src" .c)
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] && targets+=("$name")
  if [ -z "${floor[$name]:-}" ]; then
    echo "fuzz: $name has no coverage floor in $floors" >&2
    bad=1
  fi
done
for name in "${!floor[@]}"; do
  [ -f "$here/$name.c" ] && continue
  echo "fuzz: $floors has a floor for $name, which is not a target" >&2
  bad=1
done
for name in $only; do
  [ -f "$here/$name.c" ] && continue
  echo "fuzz: no target $name (tests/fuzz/$name.c)" >&2
  bad=1
done
[ "$bad" = 0 ] || exit 2

failed=()
printf '%-18s %7s %7s %7s %10s  %s\n' target cov ft floor execs result
for name in "${targets[@]}"; do
  corpus=$here/corpus/${name#fuzz_}
  work=$build/corpus-${name#fuzz_}
  log=$build/fuzz-${name#fuzz_}.log
  mkdir -p "$work"
  "$build/$name" -max_total_time="$seconds" -max_len=4096 -timeout=25 \
    -artifact_prefix="$build/$name-" -print_final_stats=1 \
    "$work" "$corpus" >"$log" 2>&1
  rc=$?
  last=$(grep -E '^#[0-9]+.* cov: [0-9]+' "$log" | tail -n 1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log")
  cov=${cov:-0} ft=${ft:-0} execs=${execs:--}
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc, see $log)"
  elif [ "$cov" -lt "${floor[$name]}" ]; then
    result="BELOW FLOOR"
  fi
  printf '%-18s %7s %7s %7s %10s  %s\n' "$name" "$cov" "$ft" \
    "${floor[$name]}" "$execs" "$result"
  if [ "$result" != ok ]; then
    failed+=("$name")
    [ "$rc" != 0 ] && grep -E 'ERROR|SUMMARY|artifact|Test unit written' "$log" | head -n 8 | sed 's/^/  /'
  fi
done

if [ "${#failed[@]}" != 0 ]; then
  echo "fuzz: failed: ${failed[*]} (floors: $floors; see tests/fuzz/README.md)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets ran ${seconds} s each, all at or above their floors"
