#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A real single-node Slurm (Debian slurm-wlm 22.05 and munge) on loopback:
# munged, slurmctld and slurmd run in the foreground from a generated
# slurm.conf in the test's directory, with pfi's prolog and epilog
# (contrib/slurm/) as Prolog/Epilog. sbatch runs a test training job on the
# node's 2 GPUs with the comment pfi-tier=flex25; it reports throughput by
# the protocol (JSON lines). The prolog maps the GPUs to slurm-N and writes
# its tier; the emulated agent on the same GPU indices reports the job; an
# event through pfid caps its GPUs (decided under its tier, read back);
# when the job ends the epilog removes its files and the job goes from
# pfid. GPUs are declared to Slurm as gres with File= two character
# devices the test makes (mknod, aliases of /dev/null): Slurm allocates
# them by index and sets SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES; the job
# opens no GPU. The agent's GPUs are the fake libnvidia-ml's, emulated,
# with the same indices. No cgroups (proctrack/linuxproc, task/none). Needs root (slurmd, mknod); skipped (77) without the packages
# (scripts/install-deps.sh installs them) or root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
for c in munged slurmctld slurmd sbatch squeue scontrol; do
  command -v $c >/dev/null || { echo "SKIP: no $c (Debian slurm-wlm, munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd needs root"; exit 77; }
S="$T/slurm"
mkdir -p "$S"/{spool,state,dev,map,tiers,tput,log}
chmod 755 "$T" "$S"
mknod "$S/dev/nvidia0" c 1 3 && mknod "$S/dev/nvidia1" c 1 3 || { echo "SKIP: mknod refused"; exit 77; }
slurm_munge_start

CP=$(free_port) DP=$(free_port)
slurm_hooks "$S/map" "$S/tiers"
slurm_conf "localhost(127.0.0.1)" <<EOS
NodeName=n1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=2 RealMemory=100 Gres=gpu:2 State=UNKNOWN
PartitionName=p Nodes=n1 Default=YES MaxTime=5 State=UP
EOS
echo "NodeName=n1 Name=gpu File=$S/dev/nvidia[0-1]" >"$S/gres.conf"
slurm_ctld_start
slurmd -D -N n1 -f "$SLURM_CONF" >"$S/log/slurmd.out" 2>&1 &
PIDS+=("$!")
until_true 30 slurm_idle n1 || { fail "node n1 not idle: $(sinfo 2>&1) $(tail -5 "$S/log/slurmctld.log")"; exit 1; }

setup_nats n1
# The node's GPUs: the fake libnvidia-ml of tests/fake-nvml on the
# emulator, running a 2-GPU training workload (a job library of one job
# written here) so that they draw power and caps matter; the agent on the
# nvml backend, jobs named by the prolog's files.
FAKE="${PFI_BUILD_DIR:?}/fake-nvml/libnvidia-ml.so.1"
slurm_jobs slurm-test-load
mkdir -p "$T/emu.n1"
PFI_LOCK_DIR= PFI_NVML_LIB="$FAKE" PFI_EMU_STATE="$T/emu.n1" PFI_FAKE_NVML_EMU="gpus=2,state=$T/emu.n1" \
  PFI_FAKE_NVML_JOBS="$T/jobs.csv" PFI_FAKE_NVML_JOB=slurm-test-load PFI_FAKE_NVML_AT=300 \
  "$PFI_AGENT" --node n1 --nats "$NATS_URL" --password-file "$T/pw.n1" --backend nvml \
  --record "$T/agent.n1.db" --period 0.5 \
  --jobmap-dir "$S/map" --tier-dir "$S/tiers" --tput-dir "$S/tput" >>"$T/agent.n1.log" 2>&1 &
PIDS+=("$!")
pfid_start a
until_true 30 eval 'api a GET /v1/status | grep -q "\"nodes\":1,\"stale_nodes\":0"' || { fail "agent not live"; exit 1; }
[ "$(caps n1)" = "700,700" ] || fail "caps before $(caps n1), expected the 700 W default"

# The training job: 1,000 tokens/s by the protocol until told to stop
# (bounded: 240 reports, and Slurm's 2-minute limit).
cat >"$S/train.sh" <<EOS
#!/bin/bash
for i in \$(seq 240); do
  [ -e "$S/stop" ] && break
  echo "{\"t\": \$(date +%s.%N), \"tokens_per_s\": 1000, \"step\": \$i}" >>"$S/tput/slurm-\$SLURM_JOB_ID.jsonl"
  sleep 0.5
done
echo "gpus=\$CUDA_VISIBLE_DEVICES"
EOS
chmod 755 "$S/train.sh"
# Job A (GPU 0) with the tier flex25 in its comment, job B (GPU 1) none.
JOB=$(timeout 20 sbatch --parsable --gres=gpu:1 --time=2 --comment "owner=x,pfi-tier=flex25" \
  -o "$S/job.out" "$S/train.sh") || { fail "sbatch: $JOB"; exit 1; }
JOBB=$(timeout 20 sbatch --parsable --gres=gpu:1 --time=2 -o "$S/jobb.out" "$S/train.sh") ||
  { fail "sbatch: $JOBB"; exit 1; }
J="slurm-$JOB" JB="slurm-$JOBB"
job_seen() { api a GET /v1/jobs | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin) if x["job"] == sys.argv[1] and x["node"] == "n1"]
sys.exit(0 if j and abs(j[0].get("tokens_per_s", -1) - 1000) < 1e-9 else 1)' "$1"; }
until_true 60 job_seen "$J" || { fail "pfid does not see $J at 1000 tokens/s: $(api a GET /v1/jobs) $(squeue 2>&1)"; exit 1; }
until_true 60 job_seen "$JB" || { fail "pfid does not see $JB: $(api a GET /v1/jobs) $(squeue 2>&1)"; exit 1; }
[ "$(cat "$S/map/0") $(cat "$S/map/1")" = "$J $JB" ] || fail "map: $(cat "$S/map/0") $(cat "$S/map/1")"
[ "$(cat "$S/tiers/$J")" = 0.25 ] || fail "tier file of $J: '$(cat "$S/tiers/$J")'"
[ ! -e "$S/tiers/$JB" ] || fail "$JB has a tier file"
tier_of() { api a GET /v1/tiers | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin)["jobs"] if x["job"] == sys.argv[1]]
print("%s %s" % (j[0]["max_loss"], j[0]["source"]) if j else "absent")' "$1"; }
[ "$(tier_of "$J")" = "0.25 node" ] || fail "pfid's tier of $J: $(tier_of "$J")"
[ "$(tier_of "$JB")" = "None none" ] || fail "pfid's tier of $JB: $(tier_of "$JB")"

# An event at 100 W, below what the floors allow: job B's GPU (no tier)
# goes to its lowest cap, read back; job A is decided under its tier.
api a POST /v1/events "$(event_json ev1 0 120 100)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
capped() { caps n1 | awk -F, '{ exit !($2 == 200) }'; }
until_true 30 capped || fail "caps during the event: $(caps n1)"
dec() { sql "$T/records.db" "SELECT DISTINCT max_loss FROM fleet_decisions WHERE job = '$1' AND event = 'ev1'"; }
until_true 20 eval '[ -n "$(dec "$J")" ] && [ -n "$(dec "$JB")" ]' || fail "no decisions for $J and $JB"
[ "$(dec "$J")" = 0.25 ] || fail "$J decided under '$(dec "$J")', expected 0.25"
[ "$(dec "$JB")" = 1.0 ] || fail "$JB decided under '$(dec "$JB")', expected 1 (none)"
readback() { api a GET /v1/nodes | python3 -c '
import json, sys
g = json.load(sys.stdin)[0]["gpus"]
print(",".join("%g" % round(x["cap_w"], 1) for x in g))'; }  # as pfi devices prints them
until_true 10 eval '[ "$(readback)" = "$(caps n1)" ]' ||
  fail "the agent reads back $(readback), the GPUs hold $(caps n1)"
api a DELETE /v1/events/ev1 >/dev/null

# The jobs end: the epilog removes their files, pfid no longer lists them;
# the limits are back at 700 W (the staggered recovery takes up to 120 s,
# docs/control.md).
touch "$S/stop"
until_true 60 eval '[ -z "$(timeout 20 squeue -h 2>/dev/null)" ]' || fail "jobs still queued: $(squeue 2>&1)"
gone() { [ ! -e "$S/map/0" ] && [ ! -e "$S/map/1" ] && [ ! -e "$S/tiers/$J" ] &&
         ! api a GET /v1/jobs | grep -q "slurm-"; }
until_true 30 gone || fail "after the jobs: map $(ls "$S/map"), jobs $(api a GET /v1/jobs)"
grep -q "^gpus=0$" "$S/job.out" || fail "job A's GPUs: $(cat "$S/job.out")"
until_true 150 caps_are n1 "700,700" || fail "caps after the event: $(caps n1)"
[ "$fails" = 0 ] || { tail -20 "$S/log/slurmd.n1.log" >&2; exit 1; }
echo "slurm: ok"
