#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Targets at the meter kept by pfid itself (docs/fleet.md "Levels"): two
# agents on the fake libnvidia-ml under a training load (caps matter), n1
# with a BMC (a fake ipmitool printing the watts of a file this script
# writes), n2 with no node power (the configured node_other_w). pfid
# --meter-config converts a meter-level event to a GPU target each period;
# the test converts the same limit itself (python, from the nodes' power
# pfid serves at GET /v1/nodes: PUE, the supplies' curve read at each
# node's load, other power measured or configured) and pfid's
# gpu_target_w must match within 0.5 % + 1 W. When n1's reading rises by
# 300 W the GPU target follows. A GPU event numerically below the meter
# limit but above the GPU target it becomes does not win (like with like).
# A pfid without --meter-config refuses a node or meter event (400 naming
# the field; pfi ctl exits 2); a bad meter file is exit 2 with file:line;
# an event record without "level" (as an older pfid wrote it) is a GPU
# target. pfi grid bridge passes a meter limit through to a pfid that
# keeps it, converts it for one that does not. A node gone stale still
# counts, at its last GPU power and reading. Every wait is bounded.
. "$(dirname "$0")/lib.sh"
PROBE=${PFI_PROBE:?}

cat >"$T/meter.conf" <<EOS
# the site's meter chain
node_other_w = 400
psu_rated_w = 3000
psu_curve = 0.1:0.85,0.5:0.94,1.0:0.92
pue = 1.3
facility_other_w = 200
EOS
printf 'node_other_w = 400\npue = 0.5\n' >"$T/bad.conf"
"$PFID" --meter-config "$T/bad.conf" --records "$T/x.db" --api none >"$T/bad.out" 2>&1
[ $? = 2 ] && grep -q "bad.conf:2:" "$T/bad.out" || fail "a bad --meter-config: $(cat "$T/bad.out")"
printf 'psu_rated_w = 3000\npsu_curve = 0.1:0.30,0.2:0.95\n' >"$T/unsafe.conf"
"$PFID" --meter-config "$T/unsafe.conf" --records "$T/x.db" --api none >"$T/bad.out" 2>&1
[ $? = 2 ] && grep -q "unsafe.conf:2:1: psu_curve: from load 0.1 to 0.2" "$T/bad.out" ||
  fail "an unsafe supplies' curve: $(cat "$T/bad.out")"

setup_nats n1 n2
echo 1900 >"$T/bmc.w"
printf '#!/bin/sh\necho "    Instantaneous power reading:                   $(cat %s) Watts"\n' "$T/bmc.w" >"$T/ipmitool"
chmod 755 "$T/ipmitool"
load_agent_start n1 slurm-5 --bmc "ipmitool:$T/ipmitool" --bmc-period 1
N1_PID=${AGENT_PID[n1]}
load_agent_start n2 slurm-6 --powercap none
pfid_start a --meter-config "$T/meter.conf"
pfid_start b
ready() { api a GET /v1/nodes | python3 -c '
import json, sys
n = {x["node"]: x for x in json.load(sys.stdin)}
sys.exit(0 if len(n) == 2 and all(not x["stale"] for x in n.values()) and
         n["n1"].get("node_power", {}).get("fresh") and
         all(x["gpu_power_w"] > 300 for x in n.values()) else 1)'; }
until_true 40 ready || { fail "two live nodes under load, n1 with a BMC reading: $(api a GET /v1/nodes)"; exit 1; }
lead() { api a GET /v1/status | grep -q '"leader":true'; }
until_true 20 lead || fail "pfid a does not lead"
api a GET /v1/status | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["levels"] == ["gpu", "node", "meter"], s
assert s["meter_power_w"] > s["node_power_w"] > s["power_w"] > 0, s' ||
  fail "levels and the fleet's power at each level: $(cat "$T/body")"
api b GET /v1/status | grep -q '"levels":\["gpu"\]' || fail "pfid b's levels: $(cat "$T/body")"

# The chain, independently: python reads GET /v1/nodes and converts.
cat >"$T/chain.py" <<'PY'
import json, sys
OTHER, RATED, PUE, FAC = 400.0, 3000.0, 1.3, 200.0
CURVE = [(0.1, 0.85), (0.5, 0.94), (1.0, 0.92)]
def eff(load):
    if load <= CURVE[0][0]: return CURVE[0][1]
    if load >= CURVE[-1][0]: return CURVE[-1][1]
    for (x0, y0), (x1, y1) in zip(CURVE, CURVE[1:]):
        if x0 <= load <= x1: return y0 + (y1 - y0) * (load - x0) / (x1 - x0)
def state(path):
    g, o = [], []
    for x in json.load(open(path)):
        g.append(x["gpu_power_w"])
        p = x.get("node_power")
        # measured where fresh; a reading not fresh no lower than OTHER
        w = p.get("other_w") if p else None
        o.append(OTHER if w is None else w if p["fresh"] else max(w, OTHER))
    return g, o
def meter(g, o, total):
    now = sum(g)
    return PUE * sum((total * gi / now + oi) / eff((total * gi / now + oi) / RATED)
                     for gi, oi in zip(g, o)) + FAC
def gpu_target(g, o, limit):
    if meter(g, o, 0) > limit: return 0.0
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if meter(g, o, mid) <= limit else (lo, mid)
    return lo
if __name__ == "__main__":
    cmd = sys.argv[1]
    g, o = state(sys.argv[2])
    if cmd == "meter":   # the meter power at a GPU total
        print("%.6f" % meter(g, o, float(sys.argv[3])))
    elif cmd == "target":
        print("%.6f" % gpu_target(g, o, float(sys.argv[3])))
    elif cmd == "other":
        print("%.6f" % sum(o))
PY
api a GET /v1/nodes >"$T/n0.json"
draw=$(python3 -c 'import json,sys; print(sum(x["gpu_power_w"] for x in json.load(open(sys.argv[1]))))' "$T/n0.json")
# A meter limit at the meter power of 80 % of today's GPU draw.
L=$(python3 "$T/chain.py" meter "$T/n0.json" "$(awk -v d="$draw" 'BEGIN { print 0.8 * d }')")
L=$(awk -v l="$L" 'BEGIN { printf "%.0f", l }')

# Refused without --meter-config, and a bad level: 400 naming "level".
api b POST /v1/events "$(event_json evm 0 300 "$L" | sed 's/}$/,"level":"meter"}/')" >/dev/null
[ "$(cat "$T/code")" = 400 ] && grep -q '\\"level\\"' "$T/body" ||
  fail "a meter event to pfid without --meter-config: HTTP $(cat "$T/code") $(cat "$T/body")"
"$PFI" ctl --url "http://127.0.0.1:${API[b]}" --token-file "$T/token" submit evm +0 +300 "$L" meter 2>"$T/ctl.err"
[ $? = 2 ] && grep -q 'level' "$T/ctl.err" || fail "pfi ctl submit meter to pfid b: $(cat "$T/ctl.err")"
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/token" submit evm +0 +300 "$L" rack 2>"$T/ctl.err"
[ $? = 2 ] && grep -q "LEVEL 'rack'" "$T/ctl.err" || fail "pfi ctl submit rack: $(cat "$T/ctl.err")"
api a POST /v1/events "$(event_json evm 0 300 "$L" | sed 's/}$/,"level":"kW"}/')" >/dev/null
[ "$(cat "$T/code")" = 400 ] && grep -q '\\"level\\"' "$T/body" || fail "level kW: HTTP $(cat "$T/code") $(cat "$T/body")"
[ "$(api a GET /v1/events)" = "[]" ] || fail "a refused event was booked: $(cat "$T/body")"

# The meter event through pfi ctl.
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/token" --format json submit evm +0 +300 "$L" meter >"$T/ctl.out" ||
  fail "pfi ctl submit meter: $(cat "$T/ctl.out")"
grep -q '"level": *"meter"' "$T/ctl.out" || fail "the event's answer: $(cat "$T/ctl.out")"
# matches L: pfid's GPU target against python's over the nodes read just
# before and just after it (both within the tolerance: pfid's period saw
# the same state); retried while the caps move.
matches() {
  api a GET /v1/nodes >"$T/na.json"
  api a GET /v1/status >"$T/s.json"
  api a GET /v1/nodes >"$T/nb.json"
  local ta tb
  ta=$(python3 "$T/chain.py" target "$T/na.json" "$1")
  tb=$(python3 "$T/chain.py" target "$T/nb.json" "$1")
  python3 - "$T/s.json" "$ta" "$tb" "$1" "${2:-evm}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ta, tb, limit = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
g = s["gpu_target_w"]
tol = 0.005 * ta + 1
ok = (s["event"] == sys.argv[5] and s["level"] == "meter" and s["stated_target_w"] == limit and
      s["target_w"] == g and not s["infeasible"] and abs(g - ta) <= tol and abs(g - tb) <= tol)
sys.exit(0 if ok else 1)
PY
}
until_true 40 matches "$L" || fail "GPU target of the meter limit $L W: pfid $(cat "$T/s.json"), python $(python3 "$T/chain.py" target "$T/na.json" "$L") / $(python3 "$T/chain.py" target "$T/nb.json" "$L")"
g1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpu_target_w"])' "$T/s.json")
o1=$(python3 "$T/chain.py" other "$T/nb.json")
# Caps matter: both jobs are cut.
cut() { [ "$(caps "$1" | awk -F, '{print ($1 < 650 && $2 < 650)}')" = 1 ]; }
until_true 30 cut n1 || fail "n1 not cut: $(caps n1) $(api a GET /v1/status)"
until_true 30 cut n2 || fail "n2 not cut: $(caps n2)"
api a GET /metrics >"$T/metrics.txt"
grep -q "^pfi_fleet_stated_target_watts{level=\"meter\"} $L\$" "$T/metrics.txt" &&
  grep -q '^pfi_fleet_meter_power_watts ' "$T/metrics.txt" &&
  grep -q '^pfi_fleet_node_power_watts ' "$T/metrics.txt" &&
  grep -q '^pfi_fleet_target_infeasible 0$' "$T/metrics.txt" ||
  fail "/metrics: $(grep -E 'pfi_fleet_(stated|meter|node|target)' "$T/metrics.txt")"

# Like with like: a GPU event below the meter figure but above the GPU
# target the meter limit becomes does not win.
gl=$(awk -v g="$g1" 'BEGIN { printf "%.0f", g + 300 }')
api a POST /v1/events "$(event_json evg 0 300 "$gl")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST evg: HTTP $(cat "$T/code")"
[ "$gl" -lt "$L" ] || fail "the test's GPU event $gl W is not below the meter limit $L W"
sleep 2 # (not a check) a few periods with both in force
api a GET /v1/status | grep -q '"event":"evm"' || fail "the GPU event $gl W won over the meter event ($L W at the meter, $g1 W of GPU): $(cat "$T/body")"

# n1's other power rises by 300 W: the GPU target follows.
echo 2200 >"$T/bmc.w"
risen() { api a GET /v1/nodes >"$T/nr.json"; python3 -c '
import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) + 250 else 1)' "$(python3 "$T/chain.py" other "$T/nr.json")" "$o1"; }
until_true 30 risen || fail "n1's reading did not rise: $(cat "$T/nr.json")"
until_true 40 matches "$L" || fail "after the rise: pfid $(cat "$T/s.json"), python $(python3 "$T/chain.py" target "$T/na.json" "$L") / $(python3 "$T/chain.py" target "$T/nb.json" "$L")"
g2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpu_target_w"])' "$T/s.json")
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) - 200 else 1)' "$g2" "$g1" ||
  fail "the GPU target did not follow the other power's 300 W rise: $g1 -> $g2 W"

# Infeasible: a meter limit below what the nodes draw with no GPU power.
api a GET /v1/nodes >"$T/ni.json"
floor=$(python3 "$T/chain.py" meter "$T/ni.json" 0)
Li=$(awk -v f="$floor" 'BEGIN { printf "%.0f", f - 100 }')
api a POST /v1/events "$(event_json evi 0 300 "$Li" | sed 's/}$/,"level":"meter"}/')" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST evi: HTTP $(cat "$T/code")"
# The shortfall is the floor less the limit, the floor read from the same
# moment's nodes: cut GPUs draw less, and n1's other power (its BMC's
# whole-node reading less its GPUs) rises as they fall.
infeasible() {
  api a GET /v1/nodes >"$T/nf.json"
  local fnow; fnow=$(python3 "$T/chain.py" meter "$T/nf.json" 0)
  api a GET /v1/status | python3 -c '
import json, sys
s = json.load(sys.stdin)
want = float(sys.argv[1]) - float(sys.argv[2])
sys.exit(0 if s["event"] == "evi" and s["infeasible"] and want > 50 and abs(s["shortfall_w"] - want) < 50 else 1)' "$fnow" "$Li"; }
until_true 30 infeasible || fail "infeasible meter limit $Li W (floor $floor W when posted, now $(python3 "$T/chain.py" meter "$T/nf.json" 0) W): $(cat "$T/body")"
sql "$T/records.db" "SELECT detail FROM fleet_log WHERE what = 'infeasible'" | grep -q "evi: the meter target" ||
  fail "no infeasible row in the log: $(sql "$T/records.db" "SELECT what, detail FROM fleet_log ORDER BY rowid DESC LIMIT 5")"
for e in evm evg evi; do api a DELETE /v1/events/$e >/dev/null; done

# pfi grid bridge: to a pfid without --meter-config it converts the meter
# limit of a schedule file to a GPU target (its own --config); to pfid a,
# which keeps meter targets, it posts the limit as stated, level meter.
t=$(now)
printf 'start,end,limit,level\n%.0f,%.0f,%s,meter\n' "$t" "$(awk -v t="$t" 'BEGIN { printf "%.0f", t + 300 }')" "$L" >"$T/sched.csv"
bridge() { timeout 60 "$PFI" grid bridge --pfid "http://127.0.0.1:${API[$1]}" --pfid-token-file "$T/token" \
  --schedule "$T/sched.csv" --config "$T/meter.conf" --once >>"$T/bridge.log" 2>&1 || fail "bridge --once to $1: $(cat "$T/bridge.log")"; }
# posted LEVEL CMP W: pfid a holds one live oadr- event at LEVEL, its
# target below (lt) or equal to (eq) W.
posted() { api a GET /v1/events | python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["id"].startswith("oadr-") and not x["cancelled"]]
ok = len(e) == 1 and e[0]["level"] == sys.argv[1] and (
    0 < e[0]["target_w"] < float(sys.argv[3]) if sys.argv[2] == "lt" else e[0]["target_w"] == float(sys.argv[3]))
sys.exit(0 if ok else 1)' "$@"; }
# (pfid b, a standby, knows no live node: the bridge's conversion is
# infeasible there, 1 mW; what matters is that it is a GPU target.)
bridge b
until_true 20 posted gpu lt "$L" || fail "the bridge to pfid b: $(cat "$T/body"), expected a GPU target below $L W"
bridge a
until_true 20 posted meter eq "$L" || fail "the bridge to pfid a: $(cat "$T/body"), expected meter $L W"
for e in $(api a GET /v1/events | python3 -c 'import json,sys; print(" ".join(x["id"] for x in json.load(sys.stdin) if x["id"].startswith("oadr-")))'); do
  api a DELETE "/v1/events/$e" >/dev/null
done

# An event record of an older pfid (no "level"), written to the bucket:
# a GPU target.
t=$(now)
printf '{"v":1,"id":"old","start":%.3f,"end":%.3f,"target_w":900,"cancelled":false}' "$t" "$(awk -v t="$t" 'BEGIN { printf "%.0f", t + 300 }')" >"$T/old.json"
timeout 20 "$PROBE" "$NATS_URL" pfid "$T/pw.pfid" kvput event.old "$T/old.json" >/dev/null || fail "probe kvput event.old"
old() { api a GET /v1/status | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["event"] == "old" and s["level"] == "gpu" and s["target_w"] == 900 and s["stated_target_w"] == 900 else 1)'; }
until_true 20 old || fail "the older record: $(cat "$T/body")"
api a GET /v1/events | grep -q '"id":"old"[^}]*"level":"gpu"' || fail "GET /v1/events: $(cat "$T/body")"
# n1's agent stops: n1 goes stale and counts at its last GPU power, its
# last reading's other power no lower than node_other_w (it read 2200 W:
# above); the GPU target of a meter event matches python's with that rule.
api a DELETE /v1/events/old >/dev/null
kill "${N1_PID:?}"
stale1() { api a GET /v1/nodes | python3 -c '
import json, sys
n = {x["node"]: x for x in json.load(sys.stdin)}
sys.exit(0 if n["n1"]["stale"] and n["n1"]["node_power"]["fresh"] is False else 1)'; }
until_true 30 stale1 || fail "n1 stale: $(api a GET /v1/nodes)"
api a POST /v1/events "$(event_json evs 0 300 "$L" | sed 's/}$/,"level":"meter"}/')" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST evs: HTTP $(cat "$T/code")"
until_true 40 matches "$L" evs || fail "with n1 stale: pfid $(cat "$T/s.json"), python $(python3 "$T/chain.py" target "$T/na.json" "$L") / $(python3 "$T/chain.py" target "$T/nb.json" "$L")"
exit $((fails > 0))
