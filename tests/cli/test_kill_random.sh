#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Randomized kill-and-restore (tests/cli/kill_random.py): at least 200
# random signals (KILL, TERM, INT, HUP, STOP/CONT) at random moments of
# concurrent sweeps, recorded cap changes and restores on one emulated
# machine, with copies of the stores; after every round each GPU is back at
# its original limit. PFI_KILL_SEED=N reruns a seed; PFI_KILL_KILLS=N runs
# longer.
. "$(dirname "$0")/lib.sh"
timeout 900 python3 tests/cli/kill_random.py "$T" || fail "kill_random (the seed is printed above)"
[ "$fails" -eq 0 ] && echo "test_kill_random: all passed"
exit $((fails > 0))
