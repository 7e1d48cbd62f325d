#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The whole-event demo (scripts/demo-grid.sh, `make demo-grid`) run end to
# end in a time-compressed form, and its report opened in a real browser
# (Debian's chromium, headless, as test_grid_browser.sh): mock VTN,
# nats-server, pfid, four emulated 8-GPU nodes and the bridge; the emulated
# clock at 6x real time (the jobs' start-up, 150-240 s, in 25-40 s) and the
# 200-minute Phoenix event at 600x (20 s). Checked: the page's three figures
# (target against realized power, the delivered cut beside Emerald's
# measured one, capacity over time), the measured-beside-emulated table
# against values computed here from the published file and from the
# bridge's log, and the job table; every node's caps back at their
# pre-event limits at the end (the demo's own comparison, node by node).
. "$(dirname "$0")/lib.sh"
B=${PFI_BUILD_DIR:?}
command -v nats-server >/dev/null || { echo "SKIP: nats-server is not installed (make deps)"; exit 77; }
chromium=""
for c in /usr/bin/chromium chromium chromium-browser; do
  if command -v "$c" >/dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
done
[ -n "$chromium" ] || { echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }
art="$B/test-artifacts/demo-grid"
rm -rf "$art"
mkdir -p "$art"
art=$(cd "$art" && pwd)
PFI_DEMO_SPEED=6 PFI_DEMO_COMPRESS=600 PFI_DEMO_BASELINE_S=5 PFI_DEMO_TAIL_S=5 \
  timeout 400 bash scripts/demo-grid.sh "$B" "$art" >"$art/demo.log" 2>&1 ||
  { fail "demo-grid exit $? ($(tail -n 5 "$art/demo.log"))"; exit 1; }
[ -s "$art/event.html" ] || { fail "no event.html"; exit 1; }
grep -q "for 20 s (200 minutes at 600x)" "$art/demo.log" || fail "the event was not compressed 600x: $(cat "$art/demo.log")"
# Every cap back at its pre-event limit at the end, shown node by node.
grep -q "every cap back at its pre-event limit" "$art/demo.log" || fail "caps not back: $(tail -n 8 "$art/demo.log")"
[ "$(grep -c ' back$' "$art/demo.log")" = 4 ] || fail "not four nodes back: $(grep 'now ' "$art/demo.log")"

# Emerald's delivery by awk on the published file (baseline the median of
# the first 15 minutes, 16:10-19:30 on 2025-05-04), as in test_grid.sh;
# ours from the bridge's log: the event is the run of samples with a
# target, the baseline the median power before it, the mean cut the mean of
# 1 - power / baseline over the event.
base=$(awk -F, 'NR > 1 && NR <= 16 {print $2}' data/real/SRP_total_power.csv | sort -g | awk '{v[NR] = $1} END {print v[8]}')
read -r emcut emabove emn < <(awk -F, -v b="$base" 'NR > 1 && $1 >= "2025-05-04 16:10" &&
  $1 < "2025-05-04 19:30" {n++; s += 1 - $2 / b; if ($2 > 0.75 * b) a++}
  END {printf "%.9f %d %d\n", s / n, a, n}' data/real/SRP_total_power.csv)
python3 - "$art/summary.json" "$art/log/series.csv" "$emcut" "$emabove" "$emn" >"$art/ours.txt" <<'EOF' ||
import csv, json, statistics, sys
s = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
cut, above, n = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
e, p = s["same_target"]["emerald"], s["same_target"]["pfi"]
assert e["measured"] is True and abs(e["mean_cut"] - cut) < 1e-6, e
assert e["minutes_above_target"] == above and e["minutes"] == n, e
# The event: the longest run of samples with a target.
best, i = (0, 0), 0
while i < len(rows):
    if float(rows[i]["target_w"]) > 0:
        j = i
        while j < len(rows) and float(rows[j]["target_w"]) > 0:
            j += 1
        if j - i > best[1] - best[0]:
            best = (i, j)
        i = j
    else:
        i += 1
a, b = best
assert a > 0 and b - a >= 5, (a, b, len(rows))
pw = [float(r["power_w"]) for r in rows]
baseline = statistics.median(pw[:a])
mine = sum(1 - x / baseline for x in pw[a:b]) / (b - a)
assert p["kind"] == "emulated" and p["samples"] == b - a, p
assert abs(p["mean_cut"] - mine) < 1e-9, (p, mine)
assert abs(s["baseline_w"] - baseline) < 1e-6, s
# The fleet did shed (the 25 % cut asked, some of it delivered).
assert p["mean_cut"] > 0.05, p
# Capacity over time: every sample carries a quote or an empty cell.
assert all(r["shed_loss"] == "0.1" for r in rows), rows[0]
print("%.2f %.2f" % (100 * e["mean_cut"], 100 * p["mean_cut"]))
EOF
  fail "summary against the published file and the log: $(cat "$art/summary.json")"
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$T/profile")
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$art/event.html" >"$art/dom.html" 2>"$art/dom.log" ||
  fail "chromium --dump-dom failed (see $art/dom.log)"
timeout 120 "$chromium" "${flags[@]}" --window-size=1000,1400 --screenshot="$art/first-screen.png" \
  "file://$art/event.html" >"$art/shot.log" 2>&1 || fail "chromium --screenshot failed"
[ "$(head -c 8 "$art/first-screen.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
  fail "the screenshot is not a PNG"
[ "$(stat -c %s "$art/first-screen.png" 2>/dev/null || echo 0)" -gt 20000 ] || fail "the screenshot is nearly empty"
[ "$(grep -o "<svg" "$art/dom.html" | wc -l)" -ge 3 ] || fail "fewer than three figures in the page"
for s in "target (GPU)" "realized GPU power" "power at the meter" "Emerald AI, Phoenix (measured)" \
  "pfi (emulated)" "Flexible capacity over time" "shed at &lt;= 10 % loss"; do
  grep -qF "$s" "$art/dom.html" || fail "the page has no '$s'"
done
# The table's mean cuts, as computed above.
read -r em ours <"$art/ours.txt"
tr -d '\n' <"$art/dom.html" | grep -q "<td>Emerald AI, Phoenix SRP</td><td>measured</td><td>[0-9]* min</td><td>25 %</td><td>$em %</td>" ||
  fail "the table's measured row does not hold Emerald's mean cut $em %"
tr -d '\n' <"$art/dom.html" | grep -q "<td>pfi</td><td>emulated</td><td>[0-9]* s</td><td>25 %</td><td>$ours %</td>" ||
  fail "the table's emulated row does not hold the log's mean cut $ours %"
for j in emu-n1 emu-n2 emu-n3 emu-n4; do
  grep -q "<td>$j</td>" "$art/dom.html" || fail "job $j missing from the table"
done
exit $((fails > 0))
