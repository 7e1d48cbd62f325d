#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Slurm Prolog for pfi (runs as root on each node of a job, before it
# starts). slurm.conf:
#   Prolog=/usr/local/share/pfi/slurm/pfi-prolog.sh
#   Epilog=/usr/local/share/pfi/slurm/pfi-epilog.sh
#   PrologFlags=Alloc
#   TaskProlog=/usr/local/share/pfi/slurm/pfi-task-prolog.sh  (PFI_JOB, PFI_TPUT_ADDR)
# On a job of several nodes it runs on each (Alloc), mapping that node's
# GPUs; the Epilog of each node removes what it wrote there.
# Writes the GPU -> job mapping pfi-agent reads (--jobmap-dir), in the
# format of dcgm-exporter's HPC job-mapping directory: one file per GPU
# index holding the job's name, "slurm-<jobid>". The job's tier (the
# largest throughput loss it tolerates during a grid event) goes to
# $PFI_TIER_DIR/<name>, from the first of:
#   - a job comment containing pfi-tier=flex0|flex10|flex25|flex50,
#   - a constraint (feature) pfi-flex0|pfi-flex10|pfi-flex25|pfi-flex50
#     (the site declares these features on its GPU nodes);
# none: no tier (pfid treats the job as having no tier). A comment with
# pfi-deadline=N gives the job a deadline: a mean of at least N tokens/s
# over an event, kept by pfid's controller (the file then reads
# "LOSS,,,N", LOSS 1 without a tier; docs/fleet.md "Tiers").
# Never fails the job: a prolog error would drain the node.
set -u
DIR=${PFI_JOBMAP_DIR:-/run/pfi/jobmap}
TIERS=${PFI_TIER_DIR:-/run/pfi/tiers}
id=${SLURM_JOB_ID:-}
[ -n "$id" ] || exit 0
name="slurm-$id"
gpus=${SLURM_JOB_GPUS:-${SLURM_STEP_GPUS:-${CUDA_VISIBLE_DEVICES:-}}}
mkdir -p "$DIR" "$TIERS" 2>/dev/null || exit 0
info=$(scontrol show job "$id" 2>/dev/null)
tier=$(printf '%s\n' "$info" | sed -n 's/.*Comment=.*pfi-tier=\(flex[0-9]*\).*/\1/p' | head -n 1)
[ -n "$tier" ] || tier=$(printf '%s\n' "$info" |
  sed -n 's/.*Features=.*pfi-\(flex[0-9]*\).*/\1/p' | head -n 1)
case $tier in
  flex0) loss=0 ;; flex10) loss=0.1 ;; flex25) loss=0.25 ;; flex50) loss=0.5 ;;
  *) loss= ;;
esac
dl=$(printf '%s\n' "$info" | sed -n 's/.*Comment=.*pfi-deadline=\([0-9][0-9.]*\).*/\1/p' | head -n 1)
# The tier file first, whole (written aside, then renamed), then the GPU
# map: the agent never reports the job without its tier.
if [ -n "$dl" ]; then
  printf '%s,,,%s\n' "${loss:-1}" "$dl" >"$TIERS/.$name.$$" && mv -f "$TIERS/.$name.$$" "$TIERS/$name"
elif [ -n "$loss" ]; then
  printf '%s\n' "$loss" >"$TIERS/.$name.$$" && mv -f "$TIERS/.$name.$$" "$TIERS/$name"
fi
# Each GPU's file belongs to the job's user: the agent takes that user's
# throughput posts for the job from processes in no Slurm job (without
# Slurm's cgroup plugins).
for g in ${gpus//,/ }; do
  case $g in *[!0-9]*|'') continue ;; esac
  printf '%s\n' "$name" >"$DIR/.$g.$$" &&
    { [ -z "${SLURM_JOB_UID:-}" ] || chown "$SLURM_JOB_UID" "$DIR/.$g.$$" 2>/dev/null || true; } &&
    mv -f "$DIR/.$g.$$" "$DIR/$g"
done
exit 0
