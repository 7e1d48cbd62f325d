#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A job whose throughput file stops being written (its start-up, a pause, a
# hang, its end) is not reported at its last rate. Agent n1 with
# --tput-max-age 3: job slurm-4 on both GPUs, its trainer appending a line
# with "t" and 1000 tokens/s every 0.2 s. Checked through pfid's /v1/jobs and
# the agent's /metrics: while it writes, 1000 tokens/s and no stale job;
# once it stops, no throughput (absent from /v1/jobs and the agent's series),
# one stale job, stale reads counted and the log saying so; when lines
# resume (now without "t": the file's time is their age), 1500 tokens/s
# again and no stale job; stopped again, none again. A post to the
# throughput endpoint is the job's throughput for 10 s after it arrives,
# then none (the file being stale too).
. "$(dirname "$0")/lib.sh"

setup_nats n1
mkdir -p "$T/map" "$T/tput"
echo slurm-4 >"$T/map/0"; echo slurm-4 >"$T/map/1"
F="$T/tput/slurm-4.jsonl"
# The trainer: writes while $T/writing holds a line to write ("t" is
# replaced by the time).
echo '{"t": T, "tokens_per_s": 1000}' >"$T/writing"
(while :; do
  if [ -s "$T/writing" ]; then sed "s/T/$(date +%s.%N)/" "$T/writing" >>"$F"; fi
  sleep 0.2
done) &
PIDS+=("$!")
M=$(free_port)
agent_start n1 2 --jobmap-dir "$T/map" --tput-dir "$T/tput" --tput-max-age 3 \
  --metrics "127.0.0.1:$M" --tput-listen "unix:$T/tput.sock"
pfid_start a

job_rate() { # job_rate JOB: its tokens_per_s in pfid's /v1/jobs ("none" when absent)
  api a GET /v1/jobs | python3 -c '
import json, sys
for j in json.load(sys.stdin):
    if j["job"] == sys.argv[1]:
        print("%g" % j["tokens_per_s"] if "tokens_per_s" in j else "none")' "$1"
}
metric() { # metric NAME: the agent's series NAME{node="n1"...} (first), "" when absent
  curl -s -m 5 "http://127.0.0.1:$M/metrics" |
    awk -v k="$1" 'index($1, k "{") == 1 { print $2; exit }'
}
agent_rate() { metric pfi_job_throughput_tokens_per_second; }
state() { # "pfid's rate, the agent's rate, stale jobs"
  echo "$(job_rate slurm-4) '$(agent_rate)' $(metric pfi_agent_tput_stale_jobs)"
}
is() { [ "$(state)" = "$1" ]; }

until_true 30 is "1000 '1000' 0" || fail "while writing: $(state), expected 1000 '1000' 0"
[ "$(metric pfi_agent_tput_stale_reads_total)" = 0 ] ||
  fail "stale reads while writing: $(metric pfi_agent_tput_stale_reads_total)"

# The trainer stops (its lines' "t" no longer moves): none after 3 s.
: >"$T/writing"
until_true 30 is "none '' 1" || fail "stopped: $(state), expected none '' 1"
reads=$(metric pfi_agent_tput_stale_reads_total)
[ "${reads:-0}" -ge 1 ] || fail "stale reads counted: '$reads'"
grep -q "1 job(s) with a throughput file whose newest line is older than 3 s" \
  "$T/agent.n1.log" || fail "no log line: $(tail -n 5 "$T/agent.n1.log")"

# It resumes, its lines without "t": their age is the file's.
echo '{"tokens_per_s": 1500}' >"$T/writing"
until_true 30 is "1500 '1500' 0" || fail "resumed: $(state), expected 1500 '1500' 0"
grep -q "no job's throughput file is stale now" "$T/agent.n1.log" ||
  fail "no log line for the resumed job"
: >"$T/writing"
until_true 30 is "none '' 1" || fail "stopped without t: $(state), expected none '' 1"

# A post: the job's throughput while fresh (10 s from its arrival), then
# none, the file being stale.
until_true 20 test -S "$T/tput.sock" || fail "no socket $T/tput.sock"
code=$(curl -s -m 5 --unix-socket "$T/tput.sock" -o /dev/null -w '%{http_code}' -X POST \
  --data-binary '{"tokens_per_s": 777}' "http://localhost/v1/jobs/slurm-4/throughput")
[ "$code" = 200 ] || fail "post: HTTP $code"
until_true 10 eval '[ "$(job_rate slurm-4)" = 777 ]' || fail "posted: $(state), expected 777"
until_true 30 is "none '' 1" || fail "post aged: $(state), expected none '' 1"
[ "$fails" = 0 ] || { tail -n 15 "$T"/pfid.*.log "$T"/agent.*.log >&2; exit 1; }
echo "fleet throughput age: ok"
