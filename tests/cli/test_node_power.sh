#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Node power in sweeps (docs/sweep.md, "Node power"): an emulated sweep
# records, beside every instant's GPU samples, the emulated node's power
# (store table node_power, source emulated); pfi trace summarize writes
# node_curves.csv; pfi index --power node gives Eq. 1 over node power.
# Every number is recomputed here from the store and the emulator's
# documented node model (include/pfi/emu.h: 150 W per GPU + 10 % of GPU
# power), independently of pfi's code.
. "$(dirname "$0")/lib.sh"
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT
G=moe-ft-qwen30ba3b-x8

"$PFI" sweep --emulate "$G" --caps 300:700:100 --db "$T/x.db" 2>"$T/err" ||
  fail "emulated sweep: $(tail -3 "$T/err")"
grep -q "node power: emulated" "$T/err" || fail "the sweep does not say where node power came from: $(cat "$T/err")"
"$PFI" trace summarize "$T/x.db" --out "$T/s" 2>"$T/err" || fail "summarize: $(cat "$T/err")"
[ -s "$T/s/node_curves.csv" ] || fail "no node_curves.csv"
[ "$(head -1 "$T/s/node_curves.csv")" = "job,cap_w,power_w,tokens_per_s,gpus,power_sd_w,tokens_sd,runs,source,node_power_w,node_power_sd_w,node_source" ] ||
  fail "node_curves header: $(head -1 "$T/s/node_curves.csv")"

# The store: one node_power row per sampling instant of every run, node_w =
# the instant's GPU power + 150 W x GPUs + 0.1 x GPU power, labelled
# emulated; and the summary's node power is the same affine map of its GPU
# power (the top-10 % training instants by node power are those by GPU
# power, the map being increasing).
python3 - "$T/x.db" "$T/s/node_curves.csv" "$T/s/curves.csv" <<'PY' || fail "node power against the store"
import csv, sqlite3, struct, sys
def power_sum(data):
    # A samples row (docs/sweep.md): per GPU a uint32 index, a uint32 mask,
    # a double per set bit, little-endian; power_w is field 0.
    s, o = 0.0, 0
    while o < len(data):
        _, valid = struct.unpack_from("<II", data, o)
        if valid & 1:
            s += struct.unpack_from("<d", data, o + 8)[0]
        o += 8 + 8 * bin(valid).count("1")
    return s
db = sqlite3.connect(sys.argv[1])
gpus = {r: g for r, g in db.execute("SELECT id, gpus FROM runs")}
inst = {}
for r, t, data in db.execute("SELECT run_id, t_s, data FROM samples"):
    inst[(r, t)] = power_sum(data)
rows = list(db.execute("SELECT run_id, t_s, gpu_w, other_w, node_w, source FROM node_power"))
assert len(rows) == len(inst) and rows, (len(rows), len(inst))
for r, t, g, o, n, src in rows:
    p = inst[(r, t)]
    want = p + 150 * gpus[r] + 0.1 * p
    assert src == "emulated", src
    assert abs(g - p) <= 1e-9 * p and abs(n - want) <= 1e-9 * want and abs(g + o - n) <= 1e-9 * n, (r, t, g, o, n, want)
node = list(csv.DictReader(open(sys.argv[2])))
plain = list(csv.DictReader(open(sys.argv[3])))
assert len(node) == len(plain) == 5, (len(node), len(plain))
for a, b in zip(node, plain):
    assert a["power_w"] == b["power_w"] and a["tokens_per_s"] == b["tokens_per_s"], (a, b)
    p, g = float(a["power_w"]), int(a["gpus"])
    want = 1.1 * p + 150 * g
    assert abs(float(a["node_power_w"]) - want) <= 1e-8 * want, (a, want)
    assert abs(float(a["node_power_sd_w"]) - 1.1 * float(a["power_sd_w"])) <= 1e-6 * float(a["node_power_sd_w"]) + 1e-9, a
    assert a["node_source"] == "emulated", a
PY

# Eq. 1 over node power: the mean over capped points of (1 - P/P_max) /
# (1 - T/T_max) with P the node power, the highest cap the reference.
"$PFI" index --power node "$T/s/node_curves.csv" --format json >"$T/node.json" || fail "pfi index --power node"
"$PFI" index "$T/s/node_curves.csv" --format json >"$T/gpu.json" || fail "pfi index"
python3 - "$T/s/node_curves.csv" "$T/node.json" "$T/gpu.json" <<'PY' || fail "PFI over node power: $(cat "$T/node.json")"
import csv, json, sys
rows = sorted(csv.DictReader(open(sys.argv[1])), key=lambda r: float(r["cap_w"]))
got = json.load(open(sys.argv[2]))[0]
gpu = json.load(open(sys.argv[3]))[0]
assert got["excluded_caps"] == [] and gpu["excluded_caps"] == [], (got, gpu)
def ratio(col):
    top = rows[-1]
    pm, tm = float(top[col]), float(top["tokens_per_s"])
    v = [(1 - float(r[col]) / pm) / (1 - float(r["tokens_per_s"]) / tm) for r in rows[:-1]]
    return sum(v) / len(v)
want_node, want_gpu = ratio("node_power_w"), ratio("power_w")
assert abs(got["pfi"] - want_node) <= 1e-6 * abs(want_node), (got["pfi"], want_node)
assert abs(gpu["pfi"] - want_gpu) <= 1e-6 * abs(want_gpu), (gpu["pfi"], want_gpu)
# Power that does not fall with the cap: a lower PFI over node power.
assert got["pfi"] < gpu["pfi"], (got["pfi"], gpu["pfi"])
assert abs(got["p_max"] - float(rows[-1]["node_power_w"])) <= 1e-6 * got["p_max"], got
PY
"$PFI" index --power node "$T/s/node_curves.csv" | head -1 | grep -q "^Power: node (node_power_w)" ||
  fail "the table does not name the power signal"

# Bad usage: a curves file without node power, an unknown signal, a --map
# of the power columns: located errors, exit 2.
"$PFI" index --power node "$T/s/curves.csv" >/dev/null 2>"$T/err"
[ $? = 2 ] || fail "--power node on curves.csv: exit status"
grep -q "curves.csv:1:1: missing column 'node_power_w'" "$T/err" || fail "--power node on curves.csv: $(cat "$T/err")"
"$PFI" index --power meter "$T/s/node_curves.csv" >/dev/null 2>&1
[ $? = 2 ] || fail "--power meter: exit status"
"$PFI" index --power node --map power_w=x "$T/s/node_curves.csv" >/dev/null 2>&1
[ $? = 2 ] || fail "--power node with --map power_w: exit status"

# Measured GPUs: node power from RAPL. The fake libnvidia-ml.so.1 (on the
# emulator) with GPUs that do not name themselves emulated, and a powercap
# tree built here (package-0 with its dram sub-zone; psys left out) whose
# counters do not move: every instant after a run's first has a row,
# source rapl, other power 0 and node power = GPU power.
B=${PFI_BUILD_DIR:-build}
if [ -e "$B/fake-nvml/libnvidia-ml.so.1" ]; then
  RAPL=$T/powercap
  for z in intel-rapl:0:package-0 intel-rapl:0:0:dram intel-rapl:1:psys; do
    d=$RAPL/${z%:*}
    mkdir -p "$d"
    echo "${z##*:}" >"$d/name"
    echo 1000000 >"$d/energy_uj"
    echo 262143328850 >"$d/max_energy_range_uj"
  done
  NV=(env PFI_NVML_LIB="$B/fake-nvml/libnvidia-ml.so.1" PFI_FAKE_NVML_EMU="profile=h200,gpus=2"
    PFI_FAKE_NVML_NAME="NVIDIA H200 (test double)" PFI_EMU_STATE="$T/nvemu")
  "${NV[@]}" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --cooldown 0 \
    --powercap "$RAPL" --caps 300,700 --db "$T/m.db" --job mjob -- sleep 30 2>"$T/err" ||
    fail "measured sweep: $(tail -3 "$T/err")"
  grep -q "node power: measured, GPUs + CPU packages and DRAM (3 RAPL zone(s) under $RAPL)" "$T/err" ||
    fail "the measured sweep does not say it read RAPL: $(cat "$T/err")"
  python3 - "$T/m.db" <<'PY' || fail "RAPL node power in the store"
import sqlite3, struct, sys
def power_sum(data):
    # A samples row (docs/sweep.md): per GPU a uint32 index, a uint32 mask,
    # a double per set bit, little-endian; power_w is field 0.
    s, o = 0.0, 0
    while o < len(data):
        _, valid = struct.unpack_from("<II", data, o)
        if valid & 1:
            s += struct.unpack_from("<d", data, o + 8)[0]
        o += 8 + 8 * bin(valid).count("1")
    return s
db = sqlite3.connect(sys.argv[1])
for run, in db.execute("SELECT id FROM runs"):
    inst = [t for t, in db.execute("SELECT t_s FROM samples WHERE run_id=? ORDER BY t_s", (run,))]
    rows = list(db.execute("SELECT t_s, gpu_w, other_w, node_w, source FROM node_power WHERE run_id=? ORDER BY t_s", (run,)))
    assert len(inst) >= 2 and [r[0] for r in rows] == inst[1:], (run, inst, rows)
    for t, g, o, n, src in rows:
        data, = db.execute("SELECT data FROM samples WHERE run_id=? AND t_s=?", (run, t)).fetchone()
        p = power_sum(data)
        assert src == "rapl" and o == 0 and abs(n - p) <= 1e-9 * p and g == n, (t, g, o, n, src, p)
PY
  # No readable zone there: no node power, and the sweep says so.
  mkdir -p "$T/empty"
  "${NV[@]}" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --cooldown 0 \
    --powercap "$T/empty" --caps 300 --db "$T/e.db" --job ejob -- sleep 30 2>"$T/err" ||
    fail "measured sweep without RAPL: $(tail -3 "$T/err")"
  grep -q "node power: not recorded (no readable RAPL zone under $T/empty)" "$T/err" ||
    fail "the sweep without RAPL: $(cat "$T/err")"
  [ "$(sqlite3 "$T/e.db" "select count(*) from node_power")" = 0 ] || fail "node power without RAPL"

  # The BMC's DCMI reading (docs/sweep.md): a fake ipmitool on PATH printing
  # ipmitool(1)'s "dcmi power reading" output, 1000 W more on each call
  # (a counter file), its 3rd call failing (exit 1, the tool's session
  # error). It wins over the RAPL tree also given: every instant has a row
  # (the first too: the reading is not over an interval) but the failed
  # one, source dcmi, node_w the reading, other_w = node_w - the instant's
  # GPU power.
  mkdir -p "$T/bin"
  cat >"$T/bin/ipmitool" <<EOF
#!/bin/sh
[ "\$*" = "dcmi power reading" ] || { echo "args: \$*"; exit 3; }
n=\$(( \$(cat "$T/bmc.n" 2>/dev/null || echo 0) + 1 ))
echo \$n >"$T/bmc.n"
[ \$n = 3 ] && { echo "Error: Unable to establish IPMI v2 / RMCP+ session" >&2; exit 1; }
printf '\n    Instantaneous power reading:  %d Watts\n' \$(( n * 1000 ))
echo '    Minimum during sampling period:   80 Watts'
echo '    Power reading state is:           activated'
EOF
  chmod +x "$T/bin/ipmitool"
  PATH="$T/bin:$PATH" "${NV[@]}" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --cooldown 0 \
    --powercap "$RAPL" --bmc ipmitool --caps 300,700 --db "$T/d.db" --job djob -- sleep 30 2>"$T/err" ||
    fail "sweep with --bmc: $(tail -3 "$T/err")"
  grep -q "node power: measured, the whole node (the BMC's DCMI reading through ipmitool)" "$T/err" ||
    fail "the sweep does not say it read the BMC: $(cat "$T/err")"
  grep -q "warning: 1 BMC reading(s) failed (no node power at those instants); the first: .*/ipmitool dcmi power reading: exit status 1 ('Error: Unable to establish IPMI v2 / RMCP+ session')" "$T/err" ||
    fail "the failed BMC reading is not reported: $(cat "$T/err")"
  python3 - "$T/d.db" "$(cat "$T/bmc.n")" <<'PY' || fail "DCMI node power in the store"
import sqlite3, struct, sys
def power_sum(data):
    # A samples row (docs/sweep.md): per GPU a uint32 index, a uint32 mask,
    # a double per set bit, little-endian; power_w is field 0.
    s, o = 0.0, 0
    while o < len(data):
        _, valid = struct.unpack_from("<II", data, o)
        if valid & 1:
            s += struct.unpack_from("<d", data, o + 8)[0]
        o += 8 + 8 * bin(valid).count("1")
    return s
db = sqlite3.connect(sys.argv[1])
calls = int(sys.argv[2])
rows = list(db.execute("SELECT run_id, t_s, gpu_w, other_w, node_w, source FROM node_power ORDER BY run_id, t_s"))
inst = [(r, t, power_sum(d)) for r, t, d in db.execute("SELECT run_id, t_s, data FROM samples ORDER BY run_id, t_s")]
# Call 1 is the sweep's probe before any cap changes; calls 2.. are the
# instants in order, call 3 (the 2nd instant) failed.
assert calls == len(inst) + 1, (calls, len(inst))
want = [(r, t, p, (k + 2) * 1000.0) for k, (r, t, p) in enumerate(inst) if k + 2 != 3]
assert len(rows) == len(want), (len(rows), len(want))
for (r, t, g, o, n, src), (wr, wt, p, reading) in zip(rows, want):
    assert (r, t) == (wr, wt) and src == "dcmi", (r, t, wr, wt, src)
    assert n == reading and abs(g - p) <= 1e-9 * p and abs(o - (reading - p)) <= 1e-9 * reading, (t, g, o, n, p, reading)
PY
  # A BMC that stops answering (every call from the 3rd fails) is not read
  # again after 3 failures in a row: 5 calls in all (the probe, one good
  # reading, 3 failures) however many instants the runs have, one row.
  cat >"$T/bin/ipmitool" <<EOF
#!/bin/sh
n=\$(( \$(cat "$T/bmc2.n" 2>/dev/null || echo 0) + 1 ))
echo \$n >"$T/bmc2.n"
[ \$n -ge 3 ] && { echo "Error: Unable to establish IPMI v2 / RMCP+ session" >&2; exit 1; }
echo '    Instantaneous power reading:  777 Watts'
EOF
  PATH="$T/bin:$PATH" "${NV[@]}" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --cooldown 0 \
    --bmc ipmitool --caps 300,700 --db "$T/d2.db" --job d2job -- sleep 30 2>"$T/err" ||
    fail "sweep with a BMC that stops answering: $(tail -3 "$T/err")"
  [ "$(cat "$T/bmc2.n")" = 5 ] || fail "the BMC was run $(cat "$T/bmc2.n") times, expected 5"
  grep -q "warning: 3 BMC reading(s) failed (no node power at those instants, the BMC not read again after 3 failures in a row)" "$T/err" ||
    fail "giving up on the BMC is not reported: $(cat "$T/err")"
  [ "$(sqlite3 "$T/d2.db" "select count(*) || ',' || min(node_w) from node_power where source = 'dcmi'")" = "1,777.0" ] ||
    fail "rows of a BMC that stops answering: $(sqlite3 "$T/d2.db" "select * from node_power")"
  [ "$(sqlite3 "$T/d2.db" "select count(distinct t_s) > 4 from samples")" = 1 ] || fail "too few instants to test giving up"
  # A BMC that cannot be read stops the sweep before any cap changes
  # (exit 1, no run); an unknown reader or a missing tool is bad usage.
  printf '#!/bin/sh\necho "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory" >&2\nexit 1\n' >"$T/bin/ipmi-dcmi"
  chmod +x "$T/bin/ipmi-dcmi"
  PATH="$T/bin:$PATH" "${NV[@]}" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --cooldown 0 \
    --bmc ipmi-dcmi --caps 300 --db "$T/f.db" --job fjob -- sleep 30 2>"$T/err"
  [ $? = 1 ] || fail "unreadable BMC: exit status"
  grep -q -- "--bmc ipmi-dcmi: the first reading failed: .*/ipmi-dcmi --get-system-power-statistics: exit status 1 ('Could not open device at /dev/ipmi0" "$T/err" ||
    fail "unreadable BMC: $(cat "$T/err")"
  [ "$(sqlite3 "$T/f.db" "select count(*) from runs")" = 0 ] || fail "unreadable BMC: a run was made"
  [ "$(sqlite3 "$T/f.db" "select count(*) from cap_events where action='set'")" = 0 ] || fail "unreadable BMC: a cap was set"
  "${NV[@]}" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --bmc ipmiutil --caps 300 --db "$T/g.db" --job g -- true 2>"$T/err"
  [ $? = 2 ] || fail "--bmc ipmiutil: exit status"
  grep -q "BMC reader 'ipmiutil': expected ipmitool, ipmi-dcmi" "$T/err" || fail "--bmc ipmiutil: $(cat "$T/err")"
  "${NV[@]}" PATH="$T/empty" "$PFI" sweep --backend nvml --duration 1s --interval 0.25s --bmc ipmitool --caps 300 --db "$T/g.db" --job g -- true 2>"$T/err"
  [ $? = 2 ] || fail "--bmc ipmitool without the tool: exit status"
  grep -q "ipmitool (not found on PATH; Debian package ipmitool)" "$T/err" || fail "--bmc without the tool: $(cat "$T/err")"
fi
# This machine's own powercap tree, said (docs/sweep.md records what the
# development machine has).
if [ -d /sys/class/powercap ]; then echo "powercap: $(ls /sys/class/powercap | tr '\n' ' ')"; else echo "powercap: /sys/class/powercap absent on this machine"; fi
echo "BMC: $(ls /dev/ipmi* 2>/dev/null || echo no /dev/ipmi device); $(command -v ipmitool || echo no ipmitool); $(command -v ipmi-dcmi || echo no ipmi-dcmi)"
exit $((fails > 0))
