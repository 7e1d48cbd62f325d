#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# GPU -> job without mapping files: the agent on the nvml backend (the fake
# libnvidia-ml of tests/fake-nvml, whose compute processes per GPU come from
# a file) reads each process's cgroup and names the GPU's job slurm-N for a
# cgroup path component job_N, as Slurm's cgroup plugins make them. The
# processes are real: sleeps moved into cgroups job_4242 and job_5151 that
# the test makes (root and a writable cgroup hierarchy needed; skipped, 77,
# otherwise). pfid's /v1/nodes shows the jobs; they follow the process
# list; on the agent's Unix socket a process of job 4242 may post
# throughput for its own job only (403 for job 5151's).
. "$(dirname "$0")/lib.sh"
FAKE="${PFI_BUILD_DIR:?}/fake-nvml/libnvidia-ml.so.1"
[ -e "$FAKE" ] || { echo "SKIP: no fake NVML at $FAKE"; exit 77; }
CG=
for h in /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [ "$(id -u)" = 0 ] && mkdir "$h/pfi-test-$$" 2>/dev/null; then CG="$h/pfi-test-$$"; break; fi
done
[ -n "$CG" ] || { echo "SKIP: cannot make a cgroup (root and a writable cgroup hierarchy needed)"; exit 77; }
mkdir "$CG/job_4242" "$CG/job_5151" || { fail "mkdir in $CG"; exit 1; }
trap 'cleanup; rmdir "$CG/job_4242" "$CG/job_5151" "$CG" 2>/dev/null' EXIT
sleep 600 & A=$!; PIDS+=("$A")
sleep 600 & B=$!; PIDS+=("$B")
sleep 600 & C=$!; PIDS+=("$C")
echo "$A" >"$CG/job_4242/cgroup.procs" && echo "$B" >"$CG/job_5151/cgroup.procs" ||
  { fail "cannot move processes into $CG"; exit 1; }
grep -q "/job_4242\$" "/proc/$A/cgroup" || fail "process $A not in job_4242: $(cat /proc/$A/cgroup)"

setup_nats n1
printf '0 %s\n0 %s\n' "$C" "$A" >"$T/procs"  # GPU 0: a process in no job, then job 4242's
mkdir -p "$T/emu"
PFI_LOCK_DIR= PFI_NVML_LIB="$FAKE" PFI_EMU_STATE="$T/emu" PFI_FAKE_NVML_EMU="gpus=2,state=$T/emu" \
  PFI_FAKE_NVML_PROCS="$T/procs" "$PFI_AGENT" --node n1 --nats "$NATS_URL" \
  --password-file "$T/pw.n1" --backend nvml --record "$T/agent.n1.db" --period 0.5 \
  --tput-listen "unix:$T/tput.sock" >>"$T/agent.n1.log" 2>&1 &
PIDS+=("$!")
pfid_start a
jobs_are() { # jobs_are "JOB0,JOB1" (empty for none)
  [ "$(api a GET /v1/nodes | python3 -c '
import json, sys
n = json.load(sys.stdin)
print(",".join(g.get("job", "") for g in n[0]["gpus"]) if n else "")')" = "$1" ]
}
until_true 30 jobs_are "slurm-4242," || fail "GPUs' jobs '$(api a GET /v1/nodes)', expected slurm-4242 on GPU 0"

# The process list changes: job 5151 on GPU 1, then GPU 0 is free.
printf '0 %s\n0 %s\n1 %s\n' "$C" "$A" "$B" >"$T/procs"
until_true 20 jobs_are "slurm-4242,slurm-5151" || fail "after 5151 started: $(api a GET /v1/nodes)"
printf '1 %s\n' "$B" >"$T/procs"
until_true 20 jobs_are ",slurm-5151" || fail "after 4242 left GPU 0: $(api a GET /v1/nodes)"
printf '0 %s\n1 %s\n' "$A" "$B" >"$T/procs"
until_true 20 jobs_are "slurm-4242,slurm-5151" || fail "both: $(api a GET /v1/nodes)"

# Posting from inside job 4242's cgroup: its own job yes, job 5151's no.
as4242() { # as4242 JOB: curl from a shell moved into job_4242; prints the HTTP code
  sh -c 'echo $$ >"$1/job_4242/cgroup.procs" && exec curl -s -m 5 --unix-socket "$2" -o "$3" \
    -w "%{http_code}" -X POST --data-binary "{\"tokens_per_s\": 10}" \
    "http://localhost/v1/jobs/$4/throughput"' sh "$CG" "$T/tput.sock" "$T/pbody" "$1"
}
code=$(as4242 slurm-4242)
[ "$code" = 200 ] || fail "job 4242 posting for itself: HTTP $code $(cat "$T/pbody")"
code=$(as4242 slurm-5151)
[ "$code" = 403 ] || fail "job 4242 posting for 5151: HTTP $code, expected 403"
grep -q "belongs to job slurm-4242" "$T/pbody" || fail "403 says: $(cat "$T/pbody")"
[ "$fails" = 0 ] || exit 1
echo "cgroup jobs: ok"
