#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A real two-node Slurm (Debian slurm-wlm and munge): slurmctld, munged,
# nats-server and pfid in this network namespace, two slurmd (n1, n2), each
# in a network namespace the test makes, on a veth pair to a bridge (own
# NodeName and address; munge's socket shared through the file system).
# Each node has its pfi-agent in its namespace (fake libnvidia-ml over the
# emulator, 2 GPUs each), pfi's Prolog/Epilog (contrib/slurm/, a map and
# an env per node) and TaskProlog (PFI_TPUT_ADDR, PFI_JOB). `sbatch -N2`
# runs a training job on both nodes, one task per node (srun), each posting
# its throughput to its node's agent at the address the TaskProlog gave it.
# Shown:
# - the Prolog maps the job's GPUs on both nodes, the tasks get PFI_JOB and
#   PFI_TPUT_ADDR, pfid sees one job on 4 GPUs across the two nodes;
# - during an event every GPU of the job gets the same cap at every
#   published assignment (read back on both nodes' emulators), and a
#   raise goes out only after both nodes applied the decrease before it
#   (their records' cap events against pfid's assignment records);
# - n2's link cut off mid-event: n2's agent holds, pfid marks n2 stale,
#   and n1 holds too (no cut, no raise, under a new lower target) while n2
#   is away; at the event's end the caps come back on both (n2 by its own
#   agent, n1 through the recovery);
# - when the job ends each node's Epilog removes that node's files (and
#   nothing of another job's).
# Needs root (namespaces, slurmd, mknod); skipped (77) where namespaces or
# the device nodes cannot be made, or without the packages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
for c in munged slurmctld slurmd sbatch squeue scontrol sinfo ip nsenter sqlite3; do
  command -v $c >/dev/null || { echo "SKIP: no $c (Debian slurm-wlm, munge, iproute2, sqlite3)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: network namespaces and slurmd need root"; exit 77; }

# The network: a bridge in this namespace (BR_IP), each node's namespace
# on a veth pair to it. Names carry the test's PID (parallel runs).
sub=$((($$ % 200) + 20))
BR=pfb$$ BR_IP="10.232.$sub.1"
declare -A NS IPN VETH
NODES="n1 n2"
cleanup_ns() {
  local n p
  # Whatever still runs in the test's namespaces (slurmstepd, the job's
  # tasks) is the test's: ended before the namespaces go.
  for n in $NODES; do
    [ -n "${NS[$n]:-}" ] || continue
    for p in $(ip netns pids "${NS[$n]}" 2>/dev/null); do kill "$p" 2>/dev/null; done
  done
  cleanup
  for n in $NODES; do
    [ -n "${NS[$n]:-}" ] || continue
    for p in $(ip netns pids "${NS[$n]}" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip link del "${VETH[$n]}" 2>/dev/null
    ip netns del "${NS[$n]}" 2>/dev/null
  done
  ip link del "$BR" 2>/dev/null
}
trap cleanup_ns EXIT
# Stopped by a signal (ctest's timeout, ^C): exit, so that the namespaces
# and processes go too.
trap 'exit 1' INT TERM HUP
netns_ok=0
if ip link add "$BR" type bridge 2>/dev/null && ip addr add "$BR_IP/24" dev "$BR" &&
  ip link set "$BR" up; then
  netns_ok=1
  i=10
  for n in $NODES; do
    i=$((i + 1))
    NS[$n]="pfi$$$n" IPN[$n]="10.232.$sub.$i" VETH[$n]="pv$$$n"
    if ! { ip netns add "${NS[$n]}" &&
      ip link add "${VETH[$n]}" type veth peer name "pw$$$n" &&
      ip link set "pw$$$n" netns "${NS[$n]}" &&
      ip link set "${VETH[$n]}" master "$BR" && ip link set "${VETH[$n]}" up &&
      ip netns exec "${NS[$n]}" ip addr add "${IPN[$n]}/24" dev "pw$$$n" &&
      ip netns exec "${NS[$n]}" ip link set "pw$$$n" up &&
      ip netns exec "${NS[$n]}" ip link set lo up; } 2>/dev/null; then
      netns_ok=0
      break
    fi
  done
fi
[ "$netns_ok" = 1 ] || { echo "SKIP: cannot make network namespaces and veth pairs here"; exit 77; }

S="$T/slurm"
mkdir -p "$S"/{spool,state,log,dev/n1,dev/n2,map.n1,map.n2,tiers.n1,tiers.n2}
chmod 755 "$T" "$S"
for n in $NODES; do
  mknod "$S/dev/$n/nvidia0" c 1 3 && mknod "$S/dev/$n/nvidia1" c 1 3 || { echo "SKIP: mknod refused"; exit 77; }
done
slurm_munge_start

# The hooks: pfi's scripts, each node's files in its own directories
# (SLURMD_NODENAME: the nodes share this file system); the agent's
# throughput socket likewise per node.
slurm_hooks "$S/map.\$SLURMD_NODENAME" "$S/tiers.\$SLURMD_NODENAME"
cat >"$S/taskprolog.sh" <<EOS
#!/bin/bash
export PFI_AGENT_TPUT_ADDR="unix:$S/tput.\$SLURMD_NODENAME.sock"
exec bash "$PWD/contrib/slurm/pfi-task-prolog.sh"
EOS
chmod 755 "$S"/*.sh
CP=$(free_port) DP=$(free_port)
slurm_conf "$(hostname -s)($BR_IP)" <<EOS
TaskProlog=$S/taskprolog.sh
NodeName=n1 NodeAddr=${IPN[n1]} CPUs=2 RealMemory=100 Gres=gpu:2 State=UNKNOWN
NodeName=n2 NodeAddr=${IPN[n2]} CPUs=2 RealMemory=100 Gres=gpu:2 State=UNKNOWN
PartitionName=p Nodes=n1,n2 Default=YES MaxTime=5 State=UP
EOS
{
  echo "NodeName=n1 Name=gpu File=$S/dev/n1/nvidia[0-1]"
  echo "NodeName=n2 Name=gpu File=$S/dev/n2/nvidia[0-1]"
} >"$S/gres.conf"
slurm_ctld_start
# Each namespace reaches slurmctld on the bridge.
reach() { ip netns exec "${NS[$1]}" python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1).close()' "$BR_IP" "$CP" 2>/dev/null; }
for n in $NODES; do
  until_true 20 reach $n || { fail "$n does not reach slurmctld at $BR_IP:$CP: $(tail -3 "$S/log/slurmctld.log")"; exit 1; }
done
for n in $NODES; do
  nsenter --net="/run/netns/${NS[$n]}" slurmd -D -N "$n" -f "$SLURM_CONF" >"$S/log/slurmd.$n.out" 2>&1 &
  PIDS+=("$!")
done
for n in $NODES; do
  until_true 40 slurm_idle $n || { fail "node $n not idle: $(sinfo 2>&1) $(tail -5 "$S/log/slurmctld.log") $(tail -5 "$S/log/slurmd.$n.log")"; exit 1; }
done

# NATS on the bridge's address; an agent per node in its namespace, on
# the nvml backend over the fake libnvidia-ml of tests/fake-nvml on the
# emulator (2 GPUs running a training workload, so that caps matter), its
# jobs from the Prolog's map, its throughput endpoint a Unix socket.
NATS_HOST=$BR_IP
NATS_PORT=$(free_port)
NATS_URL="nats://$BR_IP:$NATS_PORT"
# Plain text off loopback, on a bridge private to this machine: asked for
# (docs/fleet.md "Security").
nats_auth() { NATS_AUTH=(--password-file "$T/pw.$1" --nats-insecure); }
nats_config $NODES
nats_start
FAKE="${PFI_BUILD_DIR:?}/fake-nvml/libnvidia-ml.so.1"
slurm_jobs mn-load
for n in $NODES; do
  mkdir -p "$T/emu.$n"
  nsenter --net="/run/netns/${NS[$n]}" env PFI_LOCK_DIR= PFI_NVML_LIB="$FAKE" PFI_EMU_STATE="$T/emu.$n" \
    PFI_FAKE_NVML_EMU="gpus=2,state=$T/emu.$n" PFI_FAKE_NVML_JOBS="$T/jobs.csv" \
    PFI_FAKE_NVML_JOB=mn-load PFI_FAKE_NVML_AT=300 \
    "$PFI_AGENT" --node "$n" --nats "$NATS_URL" --password-file "$T/pw.$n" --nats-insecure --backend nvml \
    --record "$T/agent.$n.db" --period 0.5 --jobmap-dir "$S/map.$n" --tier-dir "$S/tiers.$n" \
    --tput-listen "unix:$S/tput.$n.sock" >>"$T/agent.$n.log" 2>&1 &
  AGENT_PID[$n]=$!
  PIDS+=("$!")
done
# The agents' lease at 3 s, the recovery within 20 s (bounded test time).
pfid_start a --recovery-window 20s
live() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 40 live || { fail "agents not live: $(api a GET /v1/status) $(tail -3 "$T"/agent.*.log)"; exit 1; }
for n in $NODES; do
  [ "$(caps $n)" = "700,700" ] || fail "$n caps before $(caps $n), expected the 700 W default"
done

# The training job: one task per node; each posts the job's throughput
# (2,000 tokens/s, the whole job's, as the protocol asks) to its node's
# agent at PFI_TPUT_ADDR for PFI_JOB, as root (the job's user), until
# told to stop (bounded: 400 reports, and Slurm's time limit).
cat >"$S/task.sh" <<EOS
#!/bin/bash
echo "task \$SLURM_PROCID on \$SLURMD_NODENAME: PFI_JOB=\$PFI_JOB PFI_TPUT_ADDR=\$PFI_TPUT_ADDR gpus=\$CUDA_VISIBLE_DEVICES"
for i in \$(seq 400); do
  [ -e "$S/stop" ] && break
  curl -s -m 2 -o /dev/null --unix-socket "\${PFI_TPUT_ADDR#unix:}" \
    --data-binary "{\"t\": \$(date +%s.%N), \"tokens_per_s\": 2000, \"step\": \$i}" \
    "http://localhost/v1/jobs/\$PFI_JOB/throughput"
  sleep 0.5
done
EOS
cat >"$S/train.sh" <<EOS
#!/bin/bash
srun --ntasks-per-node=1 -l bash "$S/task.sh"
EOS
chmod 755 "$S/task.sh" "$S/train.sh"
# Another job's tier file on n2 (not this job's): no Epilog removes it.
echo 0.5 >"$S/tiers.n2/slurm-999"
JOB=$(timeout 20 sbatch --parsable -N2 --ntasks-per-node=1 --gres=gpu:2 --time=4 \
  -o "$S/job.out" "$S/train.sh") || { fail "sbatch: $JOB"; exit 1; }
J="slurm-$JOB"
job_on() { api a GET /v1/jobs | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin) if x["job"] == sys.argv[1] and x["node"] == sys.argv[2]]
sys.exit(0 if j and abs(j[0].get("tokens_per_s", -1) - 2000) < 1e-9 else 1)' "$J" "$1"; }
for n in $NODES; do
  until_true 60 job_on $n || { fail "pfid does not see $J on $n at 2000 tokens/s: $(api a GET /v1/jobs) $(squeue 2>&1) $(cat "$S/job.out")"; exit 1; }
  [ "$(cat "$S/map.$n/0" 2>/dev/null) $(cat "$S/map.$n/1" 2>/dev/null)" = "$J $J" ] ||
    fail "$n's map: $(head "$S/map.$n"/* 2>&1)"
done
for r in 0 1; do
  n=n$((r + 1))
  grep -q "^$r: task $r on $n: PFI_JOB=$J PFI_TPUT_ADDR=unix:$S/tput.$n.sock gpus=0,1$" "$S/job.out" ||
    fail "task $r's environment: $(cat "$S/job.out")"
done
# The events: B at 80 % of the uncapped draw until END, and A at 55 %
# within it (the lowest target wins: the job is cut to it). A cancelled,
# B's target is in force: the job is raised.
p0=$(api a GET /v1/status | python3 -c 'import json, sys; print(json.load(sys.stdin)["power_w"])')
tb=$(awk -v p="$p0" 'BEGIN { printf "%.0f", 0.8 * p }')
ta=$(awk -v p="$p0" 'BEGIN { printf "%.0f", 0.55 * p }')
tc=$(awk -v p="$p0" 'BEGIN { printf "%.0f", 0.4 * p }')
# ev ID TARGET_W: an event from now until END.
ev() { awk -v id="$1" -v w="$2" -v t="$(now)" -v e="$END" \
  'BEGIN { printf "{\"v\":1,\"id\":\"%s\",\"start\":%.3f,\"end\":%.3f,\"target_w\":%g}", id, t, e, w }'; }
END=$(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 60 }')
api a POST /v1/events "$(ev evb "$tb")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event B: HTTP $(cat "$T/code")"
api a POST /v1/events "$(ev eva "$ta")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event A: HTTP $(cat "$T/code")"
# The caps as the emulators hold them: "n1a,n1b n2a,n2b".
both() { echo "$(caps n1) $(caps n2)"; }
equal_under() { # all four equal and at or below $1 W
  both | awk -v w="$1" '{ split($1 "," $2, c, ","); for (i = 2; i <= 4; i++) if (c[i] != c[1]) exit 1; exit !(c[1] <= w) }'
}
# Realized power near A's target: the job's 4 GPUs at one cap.
near_a() { api a GET /v1/status | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["target_w"] == float(sys.argv[1]) and s["power_w"] <= 1.05 * float(sys.argv[1]) else 1)' "$ta"; }
until_true 40 eval 'near_a && equal_under 699' || fail "not cut to A's target: $(both), $(api a GET /v1/status)"
cut=$(both)
api a DELETE /v1/events/eva >/dev/null
raised() { [ "$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE kind='raise'")" -ge 2 ]; }
until_true 30 raised || fail "no raise after A's end: $(sql "$T/records.db" "SELECT node, seq, kind, caps_mw FROM fleet_assignments")"
until_true 20 eval 'equal_under 700 && [ "$(both)" != "$cut" ]' || fail "caps after A's end: $(both) (cut: $cut)"

# n2 cut off: its agent holds, pfid marks it stale; n1 holds too, whatever
# the target (event C, lower still, until the same end): no cap of the
# job moves on either node while n2 is away.
# Settled first: no assignment for 2 s (a period's caps in flight as the
# link goes down would reach n1 and not n2 before pfid can know n2 is away).
quiet() { sql "$T/records.db" "SELECT max(t_s) < $(now) - 2 FROM fleet_assignments" | grep -qx 1; }
until_true 30 eval 'quiet && equal_under 700' || fail "the caps did not settle: $(both)"
ip link set "${VETH[n2]}" down
stale2() { api a GET /v1/nodes | grep -q '"node":"n2","stale":true'; }
until_true 20 stale2 || fail "pfid did not mark n2 stale"
until_true 20 grep -q 'tracking -> hold' "$T/agent.n2.log" || fail "n2 did not hold: $(tail -3 "$T/agent.n2.log")"
held=$(both)
t_cut=$(now)
api a POST /v1/events "$(ev evc "$tc")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event C: HTTP $(cat "$T/code")"
in_c() { api a GET /v1/status | grep -q '"event":"evc"'; }
until_true 10 in_c || fail "pfid not in event C: $(api a GET /v1/status)"
# Watched for 4 s, to 2 s before the events' end at the latest.
for i in $(seq 8); do
  sleep 0.5
  awk -v e="$END" -v t="$(now)" 'BEGIN { exit !(t < e - 2) }' || break
  [ "$(both)" = "$held" ] || { fail "caps moved while n2 was cut off: $(both), held $held"; break; }
done
[ "$i" -ge 3 ] || fail "n2 cut off too late to watch the hold (the events end at $END)"
moved=$(sql "$T/records.db" "SELECT count(*) FROM fleet_assignments WHERE t_s > $t_cut AND node='n1' AND kind IN ('cut','raise')")
[ "$moved" = 0 ] || fail "n1 got $moved assignments while n2 was cut off"

# The events' end: n2's agent restores on its own (it holds until then),
# n1 comes back through the recovery; then n2's link is back.
wait_end=$(awk -v e="$END" -v t="$(date +%s)" 'BEGIN { printf "%d", e - t + 60 }')
until_true "$wait_end" caps_are n2 "700,700" || fail "n2 caps after the event: $(caps n2)"
until_true 40 caps_are n1 "700,700" || fail "n1 caps after the event: $(caps n1)"
ip link set "${VETH[n2]}" up
until_true 30 live || fail "n2 not live again: $(api a GET /v1/status)"

# Every published assignment of the event: the job's 4 GPUs at one cap
# (n1's and n2's rows of a period, written together, hold the same caps).
sql "$T/records.db" "SELECT printf('%.6f', t_s), node, seq, kind, caps_mw FROM fleet_assignments ORDER BY t_s, node" >"$T/assign.txt"
python3 - "$T/assign.txt" <<'EOS' || fail "unequal caps within the job: $(cat "$T/assign.txt")"
import sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
# A period's rows (one per node whose caps change) are written one after
# the other in one batch, microseconds apart; periods are at least some
# ms apart (one started at once by an event). Each cut or raise of one
# node: the other node's row closest in time is of the same kind, with
# the same caps, within 50 ms. (In the recovery the cut-off n2, stale,
# gets none: its agent restores on its own.)
bad = 0
for t, node, seq, kind, caps in rows:
    if len(set(caps.split(","))) > 1 and kind != "restore":
        print("unequal on %s: %s" % (node, (t, kind, caps))); bad += 1
    if kind not in ("cut", "raise"):
        continue
    other = [r for r in rows if r[1] != node]
    if not other:
        print("one node only: %s" % ((t, node, kind, caps),)); bad += 1
        continue
    o = min(other, key=lambda r: abs(float(r[0]) - float(t)))
    if abs(float(o[0]) - float(t)) > 0.05 or o[3] != kind or o[4] != caps:
        print("%s %s %s at %s; %s's closest: %s" % (node, kind, caps, t, o[1], o)); bad += 1
sys.exit(1 if bad or not rows else 0)
EOS
# A raise went out only after both nodes had applied the decrease before
# it: each node's record holds the cut's caps set (cap events, Unix time)
# before pfid's raise row.
python3 - "$T/records.db" "$T/agent.n1.db" "$T/agent.n2.db" <<'EOS' || fail "a raise before both nodes applied the cut"
import sqlite3, sys
rec = sqlite3.connect(sys.argv[1])
rows = rec.execute("SELECT t_s, node, kind, caps_mw FROM fleet_assignments ORDER BY t_s").fetchall()
agents = {"n1": sqlite3.connect(sys.argv[2]), "n2": sqlite3.connect(sys.argv[3])}
# The agents' cap events are on the device's clock (CLOCK_MONOTONIC, the
# nvml backend's), pfid's rows in Unix time: the same machine's offset.
import time
off = time.time() - time.monotonic()
raises = [r for r in rows if r[2] == "raise"]
if not raises:
    print("no raise"); sys.exit(1)
bad = 0
for t, node, kind, caps in raises:
    for n, db in agents.items():
        cuts = [r for r in rows if r[1] == n and r[2] == "cut" and r[0] < t]
        if not cuts:
            continue
        ct, _, _, ccaps = cuts[-1]
        mws = [int(x) for x in ccaps.split(",")]
        for g, mw in enumerate(mws):
            got = db.execute("SELECT min(t_s) FROM cap_events WHERE gpu=? AND mw=? AND action='set' AND t_s >= ?",
                             (g, mw, ct - off - 1)).fetchone()[0]
            got = got + off if got is not None else None
            if got is None or got > t:
                print("raise to %s at %.3f: %s gpu %d set to %d at %s (cut at %.3f)" % (node, t, n, g, mw, got, ct))
                bad += 1
sys.exit(1 if bad else 0)
EOS

# pfid decided for one job of 4 GPUs: every cap it published in a cut or
# raise is a cap decided for the job (one decision, both nodes' GPUs).
python3 - "$T/records.db" "$J" <<'EOS' || fail "the published caps are not the job's decisions"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
jobs = [r[0] for r in db.execute("SELECT DISTINCT job FROM fleet_decisions WHERE job != ''")]
dec = {round(r[0] * 1000) for r in db.execute(
    "SELECT cap_req_w FROM fleet_decisions WHERE job = ? AND event IN ('eva', 'evb')", (sys.argv[2],))}
pub = {int(c) for (cs,) in db.execute("SELECT caps_mw FROM fleet_assignments WHERE kind IN ('cut', 'raise')")
       for c in cs.split(",")}
if jobs != [sys.argv[2]] or not pub or not pub <= dec:
    print("jobs %s; published %s; decided %s" % (jobs, sorted(pub), sorted(dec)))
    sys.exit(1)
EOS

# The job ends: both nodes' Epilogs remove their nodes' files; pfid no
# longer lists the job.
touch "$S/stop"
until_true 60 eval '[ -z "$(timeout 20 squeue -h 2>/dev/null)" ]' || fail "job still queued: $(squeue 2>&1)"
gone() { [ "$(find "$S/map.n1" "$S/map.n2" "$S/tiers.n1" "$S/tiers.n2" -type f)" = "$S/tiers.n2/slurm-999" ] && ! api a GET /v1/jobs | grep -q "$J"; }
until_true 30 gone || fail "after the job: $(find "$S"/map.n* "$S"/tiers.n* -type f), jobs $(api a GET /v1/jobs)"
[ "$fails" = 0 ] || {
  tail -n 8 "$S/log/slurmctld.log" "$S"/log/slurmd.n*.log "$T/pfid.a.log" "$T"/agent.n*.log >&2
  exit 1
}
echo "slurm multi-node: ok"
