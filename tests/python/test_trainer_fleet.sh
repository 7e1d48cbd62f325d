#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi_trainer in a fleet: a real PyTorch loop (tests/python/train_mlp.py)
# reports through the package to the throughput endpoint of a pfi-agent
# (Unix socket, PFI_TPUT_ADDR, PFI_JOB) whose two GPUs run an emulated
# training load on the fake NVML (tests/fleet/lib.sh load_agent_start),
# reads its cap from the agent's --cap-file (PFI_CAP_FILE), under pfid:
# - a first checkpoint (2 s, not announced) outside any event, the GPUs'
#   caps at their 200 W minimum through it (the emulated GPUs draw their
#   training power whatever the job does, and a checkpoint idles them),
#   teaches the controller the depth of the job's pauses
#   (tests/fleet/test_fleet_announce.sh works the rule out);
# - an event at 75 % of the job's uncapped draw: the caps come down, and
#   the job reads them (the reporter's log line and its cap callback): the
#   emulator's limits, the reason the controller recorded, the event's id;
# - a second checkpoint announced 3.2 s ahead through the package
#   (Reporter.announce, then the checkpoint block): the controller holds
#   the job, its GPUs at 200 W from the announced start and through the
#   pause (the decision, the emulator's limits), which the job reads too;
#   a second pause not announced is not held (test_fleet_announce.sh's
#   control run): the hold is the announcement's.
# No report is lost (the agent is there throughout).
. "$(dirname "$0")/../fleet/lib.sh"
PY=${PFI_PYTHON:-/usr/bin/python3}
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIP: $PY cannot import torch (Debian: python3-torch)"; exit 77; }
JOB=slurm-5
setup_nats n1
load_agent_start n1 "$JOB" --tput-listen "unix:$T/tput.sock" --cap-file "$T/cap.json"
pfid_start a
mkdir -p "$T/tr"
cap="timeout 20 $PFI cap --backend emu --params state=$T/emu.n1,gpus=2 --force"
PFI_TPUT_ADDR="unix:$T/tput.sock" PFI_JOB=$JOB PFI_CAP_FILE="$T/cap.json" \
  IDLE_CMD="$cap --set 200 >/dev/null" BUSY_CMD="$cap --reset >/dev/null" \
  timeout 200 "$PY" tests/python/train_mlp.py --seconds 180 --step-s 0.05 --interval 0.25 \
  --cap-poll 0.2 --req-dir "$T/tr" --own "$T/tr/own.json" >"$T/trainer.log" 2>&1 &
TRAINER=$!
PIDS+=("$TRAINER")
live() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live || { fail "no live node: $(api a GET /v1/status)"; exit 1; }
posting() { grep -q "pfi: job $JOB at 700 W per GPU (its default)" "$T/trainer.log"; }
until_true 60 posting || { fail "the job never read its cap: $(tail -5 "$T/trainer.log")"; exit 1; }
believed() { api a GET /v1/capacity | grep -q '"believed":1'; }
until_true 30 believed || { fail "uncapped point not learned: $(api a GET /v1/capacity)"; exit 1; }
uncapped=$(api a GET /v1/status | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["power_w"])')

# The first checkpoint, outside any event, its GPUs at 200 W.
echo "2 0 1" >"$T/tr/req.1"
until_true 30 test -e "$T/tr/done.1" || { fail "first checkpoint not over: $(tail -3 "$T/trainer.log")"; exit 1; }
restored() { api a GET /v1/nodes | "$PY" -c '
import json, sys
g = [u for n in json.load(sys.stdin) for u in n["gpus"]]
sys.exit(not (len(g) == 2 and all(u["enforced_w"] == 700 for u in g)))'; }
until_true 20 restored || { fail "caps not back at 700 W: $(api a GET /v1/nodes)"; exit 1; }

target=$(awk -v p="$uncapped" 'BEGIN { printf "%.0f", 0.75 * p }')
api a POST /v1/events "$(event_json ev1 0 300 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || { fail "POST event: HTTP $(cat "$T/code")"; exit 1; }
is_cut() { [ "$(caps n1 | awk -F, -v u="$uncapped" '{ print ($1 < u / 2 - 30 && $2 < u / 2 - 30) }')" = 1 ]; }
until_true 20 is_cut || { fail "not cut: $(caps n1), uncapped $uncapped W"; exit 1; }
# The job reads its cap: a line of its log, capped for event ev1 at the
# emulator's limits (their mean, to the watt the line prints, 2 W for a
# trim between the two reads) with the reason pfid recorded last.
reads_cap() {
  local line want reason
  line=$(grep "pfi: job $JOB capped at" "$T/trainer.log" | tail -n 1)
  want=$(caps n1 | awk -F, '{ printf "%.0f", ($1 + $2) / 2 }')
  reason=$(sql "$T/records.db" "SELECT reason FROM fleet_decisions WHERE job='$JOB' ORDER BY t_s DESC, seq DESC LIMIT 1")
  case $line in *"grid event ev1"*) ;; *) return 1 ;; esac
  case $line in *"reason $reason,"*) ;; *) return 1 ;; esac
  awk -v l="$line" -v w="$want" 'BEGIN { match(l, /capped at [0-9]+ W/); c = substr(l, RSTART + 10, RLENGTH - 12);
    d = c - w; exit !(d <= 2 && -d <= 2) }'
}
until_true 40 reads_cap ||
  fail "the job's view of its cap: $(grep "pfi: job" "$T/trainer.log" | tail -n 2), emulator $(caps n1)"

# The second checkpoint, announced 3.2 s ahead, the GPUs left to the
# controller; the emulator's limits sampled from now to its end.
(while [ ! -e "$T/tr/stop" ]; do echo "$(now),$(caps n1)"; sleep 0.2; done) >"$T/samples" &
PIDS+=("$!")
sleep 2
echo "2 3.2 0" >"$T/tr/req.2"
until_true 30 test -e "$T/tr/done.2" || { fail "second checkpoint not over: $(tail -3 "$T/trainer.log")"; exit 1; }
touch "$T/tr/stop"
wait "$TRAINER" || fail "the trainer exited $?: $(tail -5 "$T/trainer.log")"
sql -csv "$T/records.db" "SELECT t_s, reason, cap_req_w FROM fleet_decisions
  WHERE job='$JOB' AND event='ev1' ORDER BY seq" >"$T/decisions"
"$PY" - "$T" <<'PY' || fail "$(cat "$T/why")"
import csv, json, sys
d = sys.argv[1]
own = json.load(open(d + "/tr/own.json"))
start = float(open(d + "/tr/pause.2").read())
p_start, p_end = map(float, open(d + "/tr/done.2").read().split())
dec = [(float(t), r, float(c)) for t, r, c in csv.reader(open(d + "/decisions"))]
smp = [tuple(map(float, l.strip().split(","))) for l in open(d + "/samples") if l.count(",") == 2]
def no(msg):
    open(d + "/why", "w").write("%s\n  announced start %.3f, pause %.3f..%.3f; decisions from 3 s "
        "before: %s; emulator: %s; job's caps: %s; reporter %s" % (
        msg, start, p_start, p_end, [x for x in dec if x[0] > start - 3],
        [x for x in smp if start - 2 < x[0] < p_end + 1], own["caps"][-6:], own["stats"]))
    sys.exit(1)
if abs(p_start - start) > 0.5:
    no("the checkpoint began %.3f s after its announced start" % (p_start - start))
held = [t for t, r, c in dec if start - 0.6 < t < p_end and c <= 200.5]
if not held:
    no("no decision to 200 W from the period before the announced start to the pause's end")
if not [x for x in smp if start - 0.6 < x[0] < p_end and max(x[1:]) <= 200.5]:
    no("the emulator's caps not at 200 W during the pause")
seen = [c for c in own["caps"] if start - 0.6 < c["t"] < p_end + 1.0 and c["cap_w"] <= 200.5]
if not seen or seen[0]["event"] != "ev1" or seen[0]["job"] != "slurm-5":
    no("the job did not read its 200 W cap during the held pause")
s = own["stats"]
if s["dropped"] or any(s["lost"].values()) or s["sent"] != s["queued"]:
    no("reports lost with the agent there")
print("held at 200 W from %.2f s after the announced start (decision), the job read it %.2f s "
      "after; %d reports sent" % (held[0] - start, seen[0]["t"] - start, s["sent"]))
PY
[ "$fails" -eq 0 ] && echo "test_trainer_fleet: all passed"
exit $((fails > 0))
