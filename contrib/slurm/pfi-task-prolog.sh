#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Slurm TaskProlog for pfi (runs on each node of a job, as the job's user,
# before each task; what it prints as "export NAME=VALUE" goes into the
# task's environment). slurm.conf:
#   TaskProlog=/usr/local/share/pfi/slurm/pfi-task-prolog.sh
# Gives every task of a job, on every node it spans:
#   PFI_JOB        the job's name at the node's agent, "slurm-<jobid>" (the
#                  name the Prolog's GPU map gives it, the same on all nodes);
#   PFI_TPUT_ADDR  the node's agent's throughput endpoint (its --tput-listen),
#                  PFI_AGENT_TPUT_ADDR when set in slurmd's environment,
#                  else unix:/run/pfi/tput.sock;
# so that a trainer (pfi_trainer.Reporter, or a POST of the throughput
# protocol) needs no site-specific path. Both are set for every task, over
# what the environment holds: srun passes the batch step's environment on
# to the tasks on the other nodes, where the batch node's address would be
# wrong. Never fails the task.
set -u
id=${SLURM_JOB_ID:-}
[ -n "$id" ] || exit 0
echo "export PFI_JOB=slurm-$id"
addr=${PFI_AGENT_TPUT_ADDR:-unix:/run/pfi/tput.sock}
case $addr in *[[:space:]]*) exit 0 ;; esac # one word: Slurm reads NAME=VALUE
echo "export PFI_TPUT_ADDR=$addr"
exit 0
