#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi_trainer when the agent goes away: a real PyTorch loop
# (tests/python/train_mlp.py, 0.05 s steps) posts through the package to an
# emulated pfi-agent's throughput endpoint on a Unix socket (PFI_TPUT_ADDR,
# PFI_JOB), 5 reports a second, each socket operation bounded at 2 s. Its
# reports reach the agent (its /metrics shows the job's rate); then the
# agent hangs (SIGSTOP: connections wait in the socket's backlog, posts time
# out) and is killed (SIGKILL: the socket refuses). Training goes on to its
# end: no step waits on the agent (the longest step under 1 s, where one
# post's timeout is 2 s; the steps' rate while the agent is away at least
# half the rate before, where a step waiting on the posts would make under
# one step a second), the reports of the outage are counted lost
# (every report queued is either sent or lost), and the job logs that the
# agent does not answer.
. "$(dirname "$0")/../fleet/lib.sh"
PY=${PFI_PYTHON:-/usr/bin/python3}
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIP: $PY cannot import torch (Debian: python3-torch)"; exit 77; }
setup_nats n1
mkdir -p "$T/map" "$T/job"
echo slurm-5 >"$T/map/0"
MPORT=$(free_port)
agent_start n1 1 --jobmap-dir "$T/map" --tput-listen "unix:$T/tput.sock" --metrics "127.0.0.1:$MPORT"
until_true 30 test -S "$T/tput.sock" || { fail "no throughput socket: $(tail -3 "$T/agent.n1.log")"; exit 1; }

PFI_TPUT_ADDR="unix:$T/tput.sock" PFI_JOB=slurm-5 \
  timeout 120 "$PY" tests/python/train_mlp.py --seconds 16 --step-s 0.05 --interval 0.2 \
  --timeout 2 --own "$T/job/own.json" >"$T/trainer.log" 2>&1 &
TRAINER=$!
PIDS+=("$TRAINER")
rate() {
  curl -s -m 2 "http://127.0.0.1:$MPORT/metrics" |
    awk '/^pfi_job_throughput_tokens_per_second\{.*job="slurm-5"/ { print $2 }'
}
reached() { awk -v r="$(rate)" 'BEGIN { exit !(r + 0 > 0) }'; }
until_true 60 reached || { fail "the job's reports never reached the agent: $(tail -3 "$T/trainer.log")"; exit 1; }
sleep 1
t_stop=$(now)
kill -STOP "${AGENT_PID[n1]}"
sleep 3
t_kill=$(now)
kill -9 "${AGENT_PID[n1]}"
wait "$TRAINER"
rc=$?
[ "$rc" = 0 ] || fail "the trainer exited $rc: $(tail -5 "$T/trainer.log")"
[ -s "$T/job/own.json" ] || { fail "no measurements: $(tail -5 "$T/trainer.log")"; exit 1; }
grep -q "does not answer" "$T/trainer.log" || fail "no log line about the agent: $(tail -5 "$T/trainer.log")"
"$PY" - "$T/job/own.json" "$t_stop" "$t_kill" <<'PY' || fail "$(cat "$T/why")"
import json, sys
own = json.load(open(sys.argv[1]))
t_stop, t_kill = float(sys.argv[2]), float(sys.argv[3])
why = open(sys.argv[1].replace("job/own.json", "why"), "w")
st, s = own["steps"], own["stats"]
def no(msg):
    why.write("%s\n  reporter %s" % (msg, s))
    sys.exit(1)
longest = max(e - b for b, e in st)
if longest >= 1.0:
    no("a step took %.3f s (a post's timeout is 2 s)" % longest)
def rate(a, b):
    n = [1 for x, y in st if a <= x and y <= b]
    return len(n) / (b - a)
before = rate(st[0][0], t_stop)
away = rate(t_stop, st[-1][1])
if st[-1][1] - t_stop < 5:
    no("the run ended %.1f s after the agent stopped" % (st[-1][1] - t_stop))
if away < 0.5 * before:
    no("steps/s %.1f while the agent was away, %.1f before" % (away, before))
lost = sum(s["lost"].values())
if not (s["sent"] > 0 and lost > 0 and s["sent"] + lost == s["queued"]):
    no("sent %d + lost %d should be the %d queued, both > 0" % (s["sent"], lost, s["queued"]))
print("longest step %.3f s; steps/s %.1f before, %.1f with the agent away; %s"
      % (longest, before, away, s))
PY
[ "$fails" -eq 0 ] && echo "test_trainer_agent_away: all passed"
exit $((fails > 0))
