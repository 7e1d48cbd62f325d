#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Node power in the fleet: three emulated agents, n1 with the emulator's node
# model (the default with --emulate), n2 with a BMC (a fake ipmitool printing
# the tool's documented reading, read by the agent's own thread every 1 s),
# n3 with none (--powercap none). pfid serves each node's power at GET
# /v1/nodes and on /metrics; the values are checked against the node model
# computed here from the GPUs' power the same answer reports. Every wait is
# bounded.
. "$(dirname "$0")/lib.sh"

# Bad options: exit 2, naming what is wrong.
mkdir -p "$T/nopc"
"$PFI_AGENT" --node x --powercap "$T/nopc" --record "$T/x.db" >"$T/bad.out" 2>&1
[ $? = 2 ] && grep -q "no readable RAPL package zone" "$T/bad.out" ||
  fail "--powercap without RAPL zones: $(cat "$T/bad.out")"
"$PFI_AGENT" --node x --powercap "$T/nopc" --bmc ipmitool --record "$T/x.db" >"$T/bad.out" 2>&1
[ $? = 2 ] && grep -q "one source" "$T/bad.out" || fail "--powercap with --bmc: $(cat "$T/bad.out")"
"$PFI_AGENT" --node x --bmc-period 0.5 >"$T/bad.out" 2>&1
[ $? = 2 ] && grep -q "bmc-period" "$T/bad.out" || fail "--bmc-period 0.5: $(cat "$T/bad.out")"

printf '#!/bin/sh\necho "    Instantaneous power reading:                   2151 Watts"\n' >"$T/ipmitool"
chmod 755 "$T/ipmitool"
setup_nats n1 n2 n3
MP=$(free_port)
agent_start n1 2 --metrics "127.0.0.1:$MP"
agent_start n2 3 --bmc "ipmitool:$T/ipmitool" --bmc-period 1
agent_start n3 2 --powercap none
pfid_start a
measured() { api a GET /v1/nodes | python3 -c '
import json, sys
n = {x["node"]: x for x in json.load(sys.stdin)}
sys.exit(0 if len(n) == 3 and all(not x["stale"] for x in n.values()) and
         "node_power" in n["n1"] and "node_power" in n["n2"] else 1)'; }
until_true 30 measured || { fail "three live nodes with node power: $(api a GET /v1/nodes)"; exit 1; }

api a GET /v1/nodes >"$T/nodes.json"
python3 - "$T/nodes.json" <<'PY' || fail "node power at /v1/nodes: $(cat "$T/nodes.json")"
import json, sys
n = {x["node"]: x for x in json.load(open(sys.argv[1]))}
def gpus(x):
    return sum(g["power_w"] for g in x["gpus"])
def near(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))
# n1: the emulator's node model (include/pfi/emu.h), computed here: 150 W
# of host per GPU plus 10 % of the GPUs' power for fans and regulators.
g1 = gpus(n["n1"])
p1 = n["n1"]["node_power"]
assert len(n["n1"]["gpus"]) == 2 and g1 > 0, n["n1"]
assert near(n["n1"]["gpu_power_w"], g1), n["n1"]
assert p1["source"] == "emulated" and p1["fresh"] is True, p1
assert near(p1["w"], g1 + 150 * 2 + 0.10 * g1), (p1, g1)
assert near(p1["other_w"], 150 * 2 + 0.10 * g1), (p1, g1)
# n2: the BMC's 2151 W, the whole node; other_w = 2151 - its GPUs.
g2 = gpus(n["n2"])
p2 = n["n2"]["node_power"]
assert p2["source"] == "dcmi" and p2["w"] == 2151 and p2["fresh"] is True, p2
assert 0 <= p2["age_s"] <= 30, p2
assert near(p2["other_w"], 2151 - g2), (p2, g2)
# n3: not measured.
assert "node_power" not in n["n3"], n["n3"]
PY

api a GET /metrics >"$T/metrics.txt"
grep -q '^pfi_node_power_watts{node="n1",source="emulated"} ' "$T/metrics.txt" &&
  grep -q '^pfi_node_power_watts{node="n2",source="dcmi"} 2151$' "$T/metrics.txt" &&
  grep -q '^pfi_node_power_age_seconds{node="n2",source="dcmi"} ' "$T/metrics.txt" &&
  ! grep -q 'pfi_node_power_watts{node="n3"' "$T/metrics.txt" ||
  fail "pfi_node_power_watts: $(grep pfi_node_power "$T/metrics.txt")"

# The agent's own /metrics has it too.
curl -s -m 5 "http://127.0.0.1:$MP/metrics" | grep -q '^pfi_node_power_watts{node="n1",source="emulated"} ' ||
  fail "the agent's /metrics has no pfi_node_power_watts"

# n2's agent stops: the node goes stale and its last reading is no longer
# fresh (the bridge then uses the configured baseline); /metrics drops it.
kill "${AGENT_PID[n2]}"
stale2() { api a GET /v1/nodes | python3 -c '
import json, sys
n = {x["node"]: x for x in json.load(sys.stdin)}
sys.exit(0 if n["n2"]["stale"] and n["n2"]["node_power"]["fresh"] is False else 1)'; }
until_true 30 stale2 || fail "n2 stale with a reading not fresh: $(api a GET /v1/nodes)"
api a GET /metrics | grep -q 'pfi_node_power_watts{node="n2"' && fail "a stale node's power on /metrics"
exit $((fails > 0))
