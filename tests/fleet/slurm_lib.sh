# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by the Slurm tests (test_fleet_slurm.sh, test_fleet_slurm_multinode.sh)
# after lib.sh: a real Slurm (Debian slurm-wlm and munge) whose files are
# all in S (the test's directory), run in the foreground from a generated
# slurm.conf with pfi's Prolog and Epilog (contrib/slurm/). Every wait is
# bounded.

# slurm_munge_start: munged on a new key, its socket S/munge.sock.
slurm_munge_start() {
  dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$S/munge.key"
  munged -F -f --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" \
    --seed-file="$S/munge.seed" --log-file="$S/log/munged.log" >"$S/log/munged.out" 2>&1 &
  PIDS+=("$!")
  until_true 10 test -S "$S/munge.sock" || { fail "munged did not start: $(cat "$S/log/munged.out")"; exit 1; }
}

# slurm_hooks MAP_DIR TIER_DIR: S/prolog.sh and S/epilog.sh, which run
# pfi's with these directories (they may name \$SLURMD_NODENAME, read when
# the hook runs).
slurm_hooks() {
  local h
  for h in prolog epilog; do
    cat >"$S/$h.sh" <<EOS
#!/bin/bash
export PFI_JOBMAP_DIR="$1" PFI_TIER_DIR="$2" SLURM_CONF="$S/slurm.conf"
exec bash "$PWD/contrib/slurm/pfi-$h.sh"
EOS
    chmod 755 "$S/$h.sh"
  done
}

# slurm_conf HOST: S/slurm.conf for slurmctld on HOST (SlurmctldHost's
# form), ports CP (slurmctld) and DP (slurmd), no cgroups
# (proctrack/linuxproc, task/none), GPUs as gres, the hooks of
# slurm_hooks; the lines on standard input (nodes, partition) appended.
slurm_conf() {
  {
    cat <<EOS
ClusterName=pfitest
SlurmctldHost=$1
SlurmctldPort=$CP
SlurmdPort=$DP
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge.sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
Prolog=$S/prolog.sh
Epilog=$S/epilog.sh
PrologFlags=Alloc
EOS
    cat
  } >"$S/slurm.conf"
}

# slurm_ctld_start: slurmctld on S/slurm.conf (exported as SLURM_CONF).
slurm_ctld_start() {
  export SLURM_CONF="$S/slurm.conf"
  slurmctld -D -f "$SLURM_CONF" >"$S/log/slurmctld.out" 2>&1 &
  PIDS+=("$!")
}

# slurm_idle NODE: true when Slurm says NODE is idle.
slurm_idle() { [ "$(timeout 20 sinfo -h -n "$1" -o %T 2>/dev/null)" = idle ]; }

# slurm_jobs ID: T/jobs.csv, a job library of one 2-GPU training job ID,
# for the fake libnvidia-ml on the emulator (its GPUs draw power, so that
# caps matter).
slurm_jobs() {
  cat >"$T/jobs.csv" <<EOS
id,source,profile,arch,task,model,variant,gpus,grid,caps,params_b,active_b,seq_len,tokens_per_step,fb_gib,mem_share,comm_share,sm_power_w,mem_sm_weight,pfi_published,pfi_coarse_published
$1,emulated,h200,dense,pt,test-8b,v1,2,fine,200;300;400;500;600;700,8,8,4096,1048576,60,0.3,0.1,400,0.3,,
EOS
}
