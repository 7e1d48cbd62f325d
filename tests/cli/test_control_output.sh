#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi control's printed summary and its progress: a time that never came
# (a target the cluster never meets) is "-", never "nan s"; a mean that is
# not a number (no "after 10 min" in a 5-minute event) is "-"; one seed
# says it has no interval, two give one; progress goes to standard error
# only when that is a terminal (the runs take tens of seconds on a large
# cluster), and never into a file or pipe. An empty --emulate file is bad
# input (exit 2), not the default cluster.
. "$(dirname "$0")/lib.sh"

C="nodes=2,gpus_per_node=8"
# 300 kW is far above what 16 GPUs draw: realized power never comes within
# 1 % of it.
"$PFI" control --emulate "$C" --target 300kW --hold 5m --tail 2m --seed 3 --no-compare \
  >"$T/out" 2>"$T/err" || fail "control 300kW: exit $?"
grep -q '^  time to target  *-$' "$T/out" || fail "time to target: $(grep 'time to' "$T/out")"
"$PFI" control --emulate "$C" --target 300kW --hold 5m --tail 2m --seed 3 --no-compare \
  --format json >"$T/j" || fail "control 300kW json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["controller"]; sys.exit(0 if r["time_to_target_s"] is None else 1)' "$T/j" ||
  fail "JSON time_to_target_s is not null"

# One seed of a 15-minute event: the means, no interval, and it says so.
"$PFI" control --emulate "$C" --target 75% --hold 15m --tail 2m --seed 3 >"$T/one" 2>"$T/err" ||
  fail "control 1 seed: exit $?"
grep -q '^  gap closed (controller.*after 10 min (1 seed, no interval' "$T/one" ||
  fail "1 seed: $(grep 'gap closed (' "$T/one")"
grep -q 't interval' "$T/one" && fail "1 seed names a t interval: $(grep 't interval' "$T/one")"
grep -q ' +- ' "$T/one" && fail "1 seed prints an interval: $(grep ' +- ' "$T/one")"
# Two seeds of a 5-minute event: an interval on the whole event; nothing
# after 10 minutes.
"$PFI" control --emulate "$C" --target 75% --hold 5m --tail 2m --seed 3 --seeds 2 >"$T/two" 2>"$T/err" ||
  fail "control 2 seeds: exit $?"
grep -q '^  gap closed (controller.*: [-0-9.]* +- [0-9.]* whole event; - after 10 min (2 seeds, 95 % t interval)$' "$T/two" ||
  fail "2 seeds: $(grep 'gap closed (' "$T/two")"
for f in out one two; do
  grep -Eqi '(^|[^a-z])(nan|inf)([^a-z]|$)' "$T/$f" && fail "$f: $(grep -Ei '(^|[^a-z])(nan|inf)([^a-z]|$)' "$T/$f")"
done
# Standard error a file: no progress.
[ -s "$T/err" ] && fail "progress into a file: $(head -c 200 "$T/err")"
# Standard error a terminal (script's pseudo-terminal; standard output to a
# file): the seeds and their runs, then a last line.
if command -v script >/dev/null; then
  script -qec "'$PFI' control --emulate '$C' --target 75% --hold 5m --tail 2m --seed 3 --seeds 2 >'$T/tty.out'" \
    /dev/null | tr '\r' '\n' >"$T/tty" || fail "control on a terminal: exit $?"
  for want in "pfi control: seed 1 of 2: controller" "pfi control: seed 1 of 2: equal-weight cuts" \
    "pfi control: seed 2 of 2: controller" "pfi control: 2 seeds run"; do
    grep -q "^$want" "$T/tty" || fail "terminal progress lacks '$want': $(cat "$T/tty")"
  done
  cmp -s "$T/tty.out" "$T/two" || fail "standard output differs on a terminal"
fi

# An empty cluster file, or one of comments only: exit 2 naming it.
: >"$T/empty.cluster"
printf '# nothing\n\n' >"$T/comments.cluster"
for f in empty comments; do
  "$PFI" control --emulate "$T/$f.cluster" --target 75% >"$T/out" 2>"$T/err"
  rc=$?
  [ "$rc" = 2 ] || fail "$f cluster file: exit $rc, expected 2"
  grep -q "$T/$f.cluster:[0-9]*:.*no 'key = value' line" "$T/err" || fail "$f cluster file: $(cat "$T/err")"
  [ -s "$T/out" ] && fail "$f cluster file: ran: $(head -2 "$T/out")"
done
exit $((fails > 0))
