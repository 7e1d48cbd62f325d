#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Slurm Epilog for pfi: removes the job's GPU -> job mapping files and its
# tier (see pfi-prolog.sh). Never fails.
set -u
DIR=${PFI_JOBMAP_DIR:-/run/pfi/jobmap}
TIERS=${PFI_TIER_DIR:-/run/pfi/tiers}
id=${SLURM_JOB_ID:-}
[ -n "$id" ] || exit 0
name="slurm-$id"
for f in "$DIR"/*; do
  [ -f "$f" ] && [ "$(head -n 1 "$f" 2>/dev/null)" = "$name" ] && rm -f "$f"
done
rm -f "$TIERS/$name"
exit 0
