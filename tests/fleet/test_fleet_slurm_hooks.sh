#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Slurm prolog and epilog (contrib/slurm/) with Slurm's environment and
# a stand-in scontrol that prints a job's record: the mapping files (one
# per GPU index, dcgm-exporter's format) and the tier file, from a comment
# or else a feature; the epilog removes only this job's files. (A real
# slurmctld/slurmd is not started here: see docs/fleet.md.)
. "$(dirname "$0")/../cli/lib.sh"
mkdir -p "$T/bin"
cat >"$T/bin/scontrol" <<'EOS'
#!/bin/sh
case "$3" in
  41) echo "JobId=41 JobName=train"; echo "   Comment=owner=x,pfi-tier=flex25 Features=(null)" ;;
  42) echo "JobId=42 JobName=train"; echo "   Comment=(null) Features=pfi-flex10&bigmem" ;;
  44) echo "JobId=44 JobName=train"; echo "   Comment=pfi-tier=flex50,pfi-deadline=1500 Features=(null)" ;;
  45) echo "JobId=45 JobName=train"; echo "   Comment=pfi-deadline=800.5 Features=(null)" ;;
  *) echo "JobId=$3"; echo "   Comment=(null) Features=(null)" ;;
esac
EOS
chmod +x "$T/bin/scontrol"
export PATH="$T/bin:$PATH" PFI_JOBMAP_DIR="$T/map" PFI_TIER_DIR="$T/tiers"
P=contrib/slurm/pfi-prolog.sh E=contrib/slurm/pfi-epilog.sh
SLURM_JOB_ID=41 SLURM_JOB_GPUS=0,2 bash "$P" || fail "prolog 41 failed"
SLURM_JOB_ID=42 SLURM_JOB_GPUS=1 bash "$P" || fail "prolog 42 failed"
SLURM_JOB_ID=43 CUDA_VISIBLE_DEVICES=3 bash "$P" || fail "prolog 43 failed"
for g in 0 2; do [ "$(cat "$T/map/$g")" = slurm-41 ] || fail "GPU $g maps to '$(cat "$T/map/$g")'"; done
[ "$(cat "$T/map/1")" = slurm-42 ] || fail "GPU 1 maps to '$(cat "$T/map/1")'"
[ "$(cat "$T/map/3")" = slurm-43 ] || fail "GPU 3 maps to '$(cat "$T/map/3")'"
[ "$(cat "$T/tiers/slurm-41")" = 0.25 ] || fail "tier of 41 from its comment"
[ "$(cat "$T/tiers/slurm-42")" = 0.1 ] || fail "tier of 42 from its feature"
[ ! -e "$T/tiers/slurm-43" ] || fail "43 has no tier, got a file"
# A deadline in the comment: "LOSS,,,N" (LOSS 1 without a tier).
SLURM_JOB_ID=44 SLURM_JOB_GPUS=4 bash "$P" || fail "prolog 44 failed"
SLURM_JOB_ID=45 SLURM_JOB_GPUS=5 bash "$P" || fail "prolog 45 failed"
[ "$(cat "$T/tiers/slurm-44")" = "0.5,,,1500" ] || fail "tier of 44: '$(cat "$T/tiers/slurm-44")'"
[ "$(cat "$T/tiers/slurm-45")" = "1,,,800.5" ] || fail "tier of 45: '$(cat "$T/tiers/slurm-45")'"
rm -f "$T/map/4" "$T/map/5" "$T/tiers/slurm-44" "$T/tiers/slurm-45"
SLURM_JOB_ID=41 bash "$E" || fail "epilog failed"
[ ! -e "$T/map/0" ] && [ ! -e "$T/map/2" ] && [ ! -e "$T/tiers/slurm-41" ] || fail "epilog left 41's files"
[ "$(cat "$T/map/1")" = slurm-42 ] || fail "epilog of 41 touched 42"
# No job id (run by hand): nothing happens, success.
bash "$P" && [ "$(ls "$T/map" | wc -l)" = 2 ] || fail "prolog without a job id"
[ "$fails" = 0 ] || exit 1
echo "slurm hooks: ok"
