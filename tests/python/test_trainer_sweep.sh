#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi_trainer under pfi sweep: a real PyTorch loop (tests/python/train_mlp.py,
# an MLP on the CPU) reports through the package to the JSON-lines file the
# sweep names (PFI_THROUGHPUT_JSONL), at three caps of an emulated GPU in
# real time (--real-time: the job stamps its lines with the wall clock).
# The job stands in for a GPU whose speed follows its cap: each step is
# padded to 0.05 s x 700 / PFI_CAP_W. The curve the store holds (each run's
# mean of the rates pfi derived from the reported cumulative tokens) is
# checked against the job's own measurement of its throughput (tokens per
# step over its steps' wall time, which the reporter does not produce),
# within 10 %, and against the pacing: rising with the cap, 350 W at about
# half of 700 W. The loss falls (the loop trains).
. "$(dirname "$0")/../cli/lib.sh"
PY=${PFI_PYTHON:-/usr/bin/python3}
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIP: $PY cannot import torch (Debian: python3-torch)"; exit 77; }
SRC=$PWD
DB=$T/sweep.db
mkdir -p "$T/own"
# Each run writes its own measurements beside the store, named by its cap.
cat >"$T/job.sh" <<EOS
#!/bin/sh
exec "$PY" "$SRC/tests/python/train_mlp.py" --seconds 30 --step-s 0.05 --pace-cap 700 \
  --interval 0.25 --own "$T/own/\$PFI_CAP_W.json"
EOS
chmod +x "$T/job.sh"
timeout 150 "$PFI" sweep --backend emu --params "gpus=1,state=$T/emu" --caps 350,500,700 \
  --duration 12s --interval 0.5s --cooldown 0 --grace 5s --real-time --db "$DB" \
  --throughput "jsonl:$T/tput.jsonl" --job mlp-cpu --quiet -- "$T/job.sh" >"$T/out" 2>"$T/err" ||
  { fail "pfi sweep: $(tail -5 "$T/err")"; exit 1; }
for c in 350 500 700; do
  [ -s "$T/own/$c.json" ] || fail "the job at $c W left no measurements: $(tail -5 "$T/err")"
done
[ "$fails" = 0 ] || exit 1
sqlite3 -csv "$DB" "SELECT r.cap_w, s.step, ifnull(s.tokens_per_s, '') FROM steps s
  JOIN runs r ON r.id = s.run_id ORDER BY r.cap_w, s.t_s" >"$T/curve.csv"
"$PY" - "$T" <<'PY' || fail "$(cat "$T/why")"
import csv, json, sys
d = sys.argv[1]
# The training reports' rates: a line whose step went on from the line
# before. The job's evaluation and checkpoint after the run's SIGTERM (and
# close()'s last line) report no step: rate 0, pause lines, which the
# sweep's summary leaves out by the GPUs' phase.
rates, prev = {}, {}
for cap, step, r in csv.reader(open(d + "/curve.csv")):
    cap, step = float(cap), float(step)
    if r and step > prev.get(cap, -1):
        rates.setdefault(cap, []).append(float(r))
    prev[cap] = step
out = []
def no(msg):
    open(d + "/why", "w").write(msg + "\n  curve " + repr(out))
    sys.exit(1)
if sorted(rates) != [350.0, 500.0, 700.0]:
    no("runs with reported rates: %s" % sorted(rates))
for cap in sorted(rates):
    own = json.load(open("%s/own/%g.json" % (d, cap)))
    st = own["steps"]
    # The job's own throughput over its steps (the steps follow each other
    # but for the few microseconds between them).
    mine = own["tokens_per_step"] * len(st) / (st[-1][1] - st[0][0])
    # The rates pfi derived from the reports, but the first (startup) one.
    got = rates[cap][1:]
    if len(got) < 5:
        no("%g W: only %d rates from the reports (the job made %d steps; torch imported slowly?)"
           % (cap, len(got), len(own["steps"])))
    mean = sum(got) / len(got)
    out.append((cap, round(mean), round(mine)))
    if abs(mean - mine) > 0.10 * mine:
        no("%g W: pfi's mean rate %.0f tokens/s, the job's own %.0f (10 %%)" % (cap, mean, mine))
    if not own["loss_last"] < 0.75 * own["loss_first"]:
        no("%g W: the loss did not fall: %.3f -> %.3f" % (cap, own["loss_first"], own["loss_last"]))
    s = own["stats"]
    if s["dropped"] or any(s["lost"].values()) or s["sent"] != s["queued"]:
        no("%g W: reports lost: %s" % (cap, s))
m = {c: r for c, r, _ in out}
# The pacing: 0.05 x 700 / C s per step, so the rate is proportional to C
# (350 W: 1/2 of 700 W, 500 W: 5/7), within the 10 % above.
if not m[350] < m[500] < m[700]:
    no("the curve does not rise with the cap")
for c in (350, 500):
    if abs(m[c] / m[700] - c / 700.0) > 0.1 * c / 700.0:
        no("%d W over 700 W: %.3f, the pacing gives %.3f" % (c, m[c] / m[700], c / 700.0))
print("curve (cap, pfi's tokens/s, the job's own):", out)
PY
[ "$fails" -eq 0 ] && echo "test_trainer_sweep: all passed"
exit $((fails > 0))
