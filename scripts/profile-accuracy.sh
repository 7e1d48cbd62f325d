#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The accuracy of pfi profile against the full 6-cap, 30-minute sweep, on
# the emulator (EVERYTHING IS EMULATED): the job library and 24 new
# emulated jobs, profiled for at most 1, 2, 5, 10 and 20 minutes each
# (bench/bench_profile.c says how), into docs/figures/profile-accuracy.csv
# and .txt (the summary); again with each cap held for its whole share of
# the budget (--hold-all) into profile-accuracy-holdall.{csv,txt}; both
# drawn as docs/figures/profile-accuracy.svg.
#   scripts/profile-accuracy.sh [BUILD_DIR]     (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
b=${1:-$here/build}
out=$here/docs/figures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$b/bench_profile" --jobs all --budgets 1,2,5,10,20 --seeds 10 --dir "$work" \
  --csv "$out/profile-accuracy.csv" | tee "$out/profile-accuracy.txt"
"$b/bench_profile" --jobs all --budgets 1,2,5,10,20 --seeds 10 --dir "$work" --hold-all \
  --csv "$out/profile-accuracy-holdall.csv" | tee "$out/profile-accuracy-holdall.txt"
"$b/bench_profile" --plot "$out/profile-accuracy.csv" "$out/profile-accuracy-holdall.csv" \
  "$out/profile-accuracy.svg"
