#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pfi sweep` of real commands on the emulator: a real PyTorch training job
# (Debian's python3-torch, CPU, a few seconds of training per cap) sweeps
# into a curve; the job's default name comes from its script and a hash of
# its command line, and a name whose runs had another command is refused;
# the job gets CUDA_VISIBLE_DEVICES (and NVML's order) for the swept GPUs
# and an environment that chose other GPUs is refused; a regex job's
# standard output is passed on and kept beside the store; --smoke checks a
# job's reports in one short run; a summary with nothing to summarize
# writes no file.
. "$(dirname "$0")/lib.sh"
TRAINER=${PFI_BUILD_DIR:-build}/pfi-test-trainer
export PFI_EMU_STATE=$T/emu
unset PFI_EMU_REALTIME PFI_SWEEP_KILL_AT CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER PFI_FAKE_NVML_FAIL \
  PFI_FAKE_NVML_LOST_AFTER PFI_FAKE_NVML_NO_GPM PFI_FAKE_NVML_MAX_MW PFI_FAKE_NVML_INIT PFI_FAKE_NVML_JOB PFI_FAKE_NVML_AT
G=moe-ft-qwen30ba3b-x8
EMU4="--backend emu --params gpus=4"
# Debian's interpreter, whose python3-torch the test runs (scripts/install-deps.sh).
PY=/usr/bin/python3
TORCH=tests/trainer/torch_tiny.py

caps() { "$PFI" devices $EMU4 --format json 2>/dev/null | python3 -c 'import json,sys; print(",".join("%g" % g["cap_w"] for g in json.load(sys.stdin)))'; }
"$PFI" cap $EMU4 --set 650 >/dev/null 2>&1 || fail "pfi cap --set 650"
[ "$(caps)" = "650,650,650,650" ] || fail "caps before: $(caps)"

# runs DB: the runs' job names in order, one a line.
runs() { sqlite3 "$1" "select job from runs order by id"; }

# hash8 WORD...: the name's hash, computed here from its definition (FNV-1a
# 64 over each word and its NUL byte, the halves XORed), not by pfi.
hash8() {
  python3 - "$@" <<'PY'
import sys
h = 14695981039346656037
for w in sys.argv[1:]:
    for b in w.encode() + b"\0":
        h ^= b
        h = (h * 1099511628211) % (1 << 64)
print("%08x" % ((h ^ (h >> 32)) & 0xffffffff))
PY
}

# ---- a real PyTorch job sweeps on the emulator into a curve ----
$PY -c 'import torch' 2>/dev/null || fail "Debian's python3-torch is missing ($PY -c 'import torch'): scripts/install-deps.sh installs it"
"$PFI" sweep $EMU4 --emulate $G --caps 300,500,700 --duration 60s --interval 0.5s --cooldown 0 \
  --db "$T/torch.db" --throughput "jsonl:$T/torch.jsonl" -- $PY $TORCH --seconds 3 >"$T/out" 2>"$T/err" ||
  fail "torch sweep: $(tail -3 "$T/err")"
[ "$(caps)" = "650,650,650,650" ] || fail "caps after the torch sweep: $(caps)"
"$PFI" trace summarize "$T/torch.db" --out "$T/ts" 2>"$T/err" || fail "summarize the torch sweep: $(cat "$T/err")"
# One row per cap, every number finite and positive; power rises with the
# cap (the emulated GPUs), the throughput is the CPU job's.
python3 - "$T/ts/curves.csv" "$T/torch.jsonl" <<'PY' || fail "torch curve: $(cat "$T/ts/curves.csv")"
import csv, json, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["cap_w"] for r in rows] == ["300", "500", "700"], rows
assert all(r["job"] == "moe-ft-qwen30ba3b-x8" and r["source"] == "emulated" for r in rows), rows
for r in rows:
    for k in ("power_w", "tokens_per_s"):
        v = float(r[k])
        assert math.isfinite(v) and v > 0, (k, r)
p = [float(r["power_w"]) for r in rows]
assert p[0] < p[1] < p[2], p
# The 700 W run's own reports (the last run's file): its top-10 % mean lies
# between the run's mean rate (a tenth below it for scheduling noise) and
# its fastest step.
lines = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert len(lines) > 20, len(lines)
steps = [(b["tokens"] - a["tokens"]) / (b["t"] - a["t"]) for a, b in zip(lines, lines[1:]) if b["t"] > a["t"]]
mean = (lines[-1]["tokens"] - lines[0]["tokens"]) / (lines[-1]["t"] - lines[0]["t"])
top = float(rows[2]["tokens_per_s"])
assert 0.9 * mean <= top <= max(steps) * (1 + 1e-9), (mean, top, max(steps))
PY
grep -qi "nan\|inf" "$T/ts/curves.csv" && fail "NaN or inf in the torch curve: $(cat "$T/ts/curves.csv")"

# ---- default job names: script and a hash of the command line ----
cat >"$T/a.sh" <<'SH'
env >"$1/env-$PFI_CAP_W"
SH
cp "$T/a.sh" "$T/b.sh"
# Real time: the job runs its course (in virtual time a command that reports
# nothing is not waited for).
SW=(sweep $EMU4 --caps 300,700 --duration 1s --interval 0.5s --cooldown 0 --real-time)
"$PFI" "${SW[@]}" --db "$T/n.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err" || fail "sweep a.sh: $(tail -2 "$T/err")"
"$PFI" "${SW[@]}" --db "$T/n.db" -- /bin/sh "$T/b.sh" "$T" 2>"$T/err" || fail "sweep b.sh: $(tail -2 "$T/err")"
grep -q "2 run(s) done, 0 skipped" "$T/err" || fail "a second script's sweep was not run: $(tail -2 "$T/err")"
ha=$(hash8 /bin/sh "$T/a.sh" "$T")
hb=$(hash8 /bin/sh "$T/b.sh" "$T")
[ "$(runs "$T/n.db" | tr '\n' ' ')" = "a-$ha a-$ha b-$hb b-$hb " ] ||
  fail "job names: $(runs "$T/n.db" | tr '\n' ' ') (expected a-$ha, b-$hb)"
# The same command resumes.
"$PFI" "${SW[@]}" --db "$T/n.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err" || fail "resume a.sh"
grep -q "0 run(s) done, 2 skipped" "$T/err" || fail "the same command did not resume: $(tail -2 "$T/err")"
# Interpreter and launcher words and their options are skipped.
mkdir -p "$T/bin"
cat >"$T/bin/torchrun" <<'SH'
#!/bin/sh
while [ $# -gt 0 ] && [ "${1%.py}" = "$1" ]; do shift; done
exec /usr/bin/python3 "$@"
SH
chmod +x "$T/bin/torchrun"
printf 'import sys\n' >"$T/train.py"
PATH="$T/bin:$PATH" "$PFI" "${SW[@]}" --caps 700 --db "$T/l.db" -- torchrun --nproc-per-node 2 "$T/train.py" --lr 3e-4 2>"$T/err" ||
  fail "torchrun sweep: $(tail -2 "$T/err")"
"$PFI" "${SW[@]}" --caps 700 --db "$T/l.db" -- /usr/bin/python3 -u "$T/train.py" 2>"$T/err" ||
  fail "python3 sweep: $(tail -2 "$T/err")"
[ "$(runs "$T/l.db" | tr '\n' ' ')" = "train-$(hash8 torchrun --nproc-per-node 2 "$T/train.py" --lr 3e-4) train-$(hash8 /usr/bin/python3 -u "$T/train.py") " ] ||
  fail "launcher job names: $(runs "$T/l.db" | tr '\n' ' ')"
# A name whose runs had another command: refused (exit 2), nothing run.
before=$(sqlite3 "$T/n.db" "select count(*) from runs")
"$PFI" "${SW[@]}" --db "$T/n.db" --job "a-$ha" -- /bin/sh "$T/b.sh" "$T" 2>"$T/err"
[ $? -eq 2 ] || fail "another command under a job's name: exit status"
grep -q "holds runs of job 'a-$ha' made by another command ('/bin/sh $T/a.sh $T'; this one is '/bin/sh $T/b.sh $T'): give this sweep its own name with --job NAME" "$T/err" ||
  fail "another command under a job's name: message: $(cat "$T/err")"
[ "$(sqlite3 "$T/n.db" "select count(*) from runs")" = "$before" ] || fail "a refused sweep added runs"
[ "$(caps)" = "650,650,650,650" ] || fail "caps after a refused sweep: $(caps)"

# ---- CUDA_VISIBLE_DEVICES: the swept GPUs, in NVML's order ----
# Through the nvml backend on the test NVML library (tests/fake-nvml), as on
# real GPUs; the emu backend's GPUs are seen by no CUDA program.
NVENV=(env PFI_NVML_LIB=${PFI_BUILD_DIR:-build}/fake-nvml/libnvidia-ml.so.1 PFI_FAKE_NVML_EMU=profile=h200,gpus=4)
NSW=(sweep --backend nvml --caps 700 --duration 1s --interval 0.5s --cooldown 0)
nvcaps() { "${NVENV[@]}" "$PFI" devices --backend nvml --format json 2>/dev/null | python3 -c 'import json,sys; print(",".join("%g" % g["cap_w"] for g in json.load(sys.stdin)))'; }
before=$(nvcaps)
rm -f "$T"/env-*
"${NVENV[@]}" "$PFI" "${NSW[@]}" --gpus 2,3 --db "$T/c.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err" || fail "sweep --gpus 2,3: $(tail -2 "$T/err")"
for kv in CUDA_VISIBLE_DEVICES=2,3 CUDA_DEVICE_ORDER=PCI_BUS_ID PFI_GPUS=2,3; do
  [ "$(grep -c "^${kv%%=*}=" "$T/env-700")" = 1 ] && grep -qx "$kv" "$T/env-700" || fail "job environment: no single $kv: $(grep CUDA "$T/env-700")"
done
# The same GPUs named by the environment, by index or by UUID: accepted.
rm -f "$T"/env-*
"${NVENV[@]}" CUDA_VISIBLE_DEVICES=2,3 "$PFI" "${NSW[@]}" --gpus 2,3 --db "$T/c2.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err" ||
  fail "CUDA_VISIBLE_DEVICES=2,3 with --gpus 2,3: $(tail -2 "$T/err")"
uu=$("${NVENV[@]}" "$PFI" devices --backend nvml --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[2]["uuid"] + "," + d[3]["uuid"])')
rm -f "$T"/env-*
"${NVENV[@]}" CUDA_VISIBLE_DEVICES="$uu" "$PFI" "${NSW[@]}" --gpus 2,3 --db "$T/c3.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err" ||
  fail "CUDA_VISIBLE_DEVICES by UUID: $(tail -2 "$T/err")"
grep -qx "CUDA_VISIBLE_DEVICES=2,3" "$T/env-700" || fail "job environment with UUIDs given: $(grep CUDA "$T/env-700")"
# Other GPUs, or another order: refused before any cap changes.
"${NVENV[@]}" CUDA_VISIBLE_DEVICES=0 "$PFI" "${NSW[@]}" --gpus 2,3 --caps 300 --db "$T/c4.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err"
[ $? -eq 2 ] || fail "CUDA_VISIBLE_DEVICES=0 with --gpus 2,3: exit status"
grep -q "the environment sets CUDA_VISIBLE_DEVICES=0, but the sweep caps and measures GPU(s) 2,3" "$T/err" ||
  fail "CUDA_VISIBLE_DEVICES conflict: message: $(cat "$T/err")"
"${NVENV[@]}" CUDA_DEVICE_ORDER=FASTEST_FIRST "$PFI" "${NSW[@]}" --caps 300 --db "$T/c5.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err"
[ $? -eq 2 ] || fail "CUDA_DEVICE_ORDER=FASTEST_FIRST: exit status"
grep -q "CUDA_DEVICE_ORDER=FASTEST_FIRST" "$T/err" || fail "CUDA_DEVICE_ORDER conflict: message: $(cat "$T/err")"
[ "$(nvcaps)" = "$before" ] || fail "caps after refused sweeps: $(nvcaps), before $before"
# On the emu backend the job keeps the CUDA environment it was given.
rm -f "$T"/env-*
CUDA_VISIBLE_DEVICES=5 "$PFI" "${SW[@]}" --caps 700 --db "$T/c6.db" -- /bin/sh "$T/a.sh" "$T" 2>"$T/err" ||
  fail "emu sweep with CUDA_VISIBLE_DEVICES=5: $(tail -2 "$T/err")"
grep -qx "CUDA_VISIBLE_DEVICES=5" "$T/env-700" && ! grep -q "^CUDA_DEVICE_ORDER=" "$T/env-700" ||
  fail "emu job's CUDA environment: $(grep CUDA "$T/env-700")"

# ---- regex throughput: the job's stdout passed on and kept ----
"$PFI" sweep $EMU4 --emulate $G --caps 500,700 --db "$T/r.db" --job rx --cooldown 0 \
  --throughput 'regex:tokens_per_s=([0-9.]+)' -- "$TRAINER" --stdout --every 50 >"$T/rx.out" 2>"$T/err" ||
  fail "regex sweep: $(tail -3 "$T/err")"
grep -q "kept in $T/r.db-logs/run-ID.stdout" "$T/err" || fail "the sweep does not say where the job's output is: $(tail -3 "$T/err")"
n=$(grep -c "^step .* tokens_per_s=" "$T/rx.out")
[ "$n" -gt 10 ] || fail "the job's standard output was not passed on ($n lines)"
for id in 1 2; do
  [ "$(sqlite3 "$T/r.db" "select value from meta where key='run.$id.stdout'")" = "$T/r.db-logs/run-$id.stdout" ] ||
    fail "run $id: meta run.$id.stdout: $(sqlite3 "$T/r.db" "select key, value from meta where key like 'run.%'")"
done
cat "$T/r.db-logs/run-1.stdout" "$T/r.db-logs/run-2.stdout" | cmp -s - "$T/rx.out" ||
  fail "the kept output differs from what was passed on"
# Every passed-on line was matched: the store holds one step per line.
[ "$(sqlite3 "$T/r.db" "select count(*) from steps")" = "$n" ] ||
  fail "steps $(sqlite3 "$T/r.db" "select count(*) from steps") vs $n lines"

# A job that writes nothing to its standard output leaves no empty log.
"$PFI" sweep $EMU4 --caps 700 --duration 1s --interval 0.5s --real-time --db "$T/q.db" \
  --throughput 'regex:tokens_per_s=([0-9.]+)' -- /bin/true >"$T/q.out" 2>"$T/err" || fail "silent regex job: $(tail -2 "$T/err")"
[ -e "$T/q.db-logs/run-1.stdout" ] && fail "a job that wrote nothing left an empty log"
[ "$(sqlite3 "$T/q.db" "select value from meta where key='run.1.stdout'")" = "none (the job wrote nothing to it)" ] ||
  fail "silent job: meta run.1.stdout: $(sqlite3 "$T/q.db" "select value from meta where key='run.1.stdout'")"

# ---- --smoke: one short run, what the reports said ----
mkdir -p "$T/tmp"
TMPDIR=$T/tmp "$PFI" sweep $EMU4 --emulate $G --caps 300,700 --smoke --db "$T/sm.db" \
  --throughput "jsonl:$T/sm.jsonl" -- $PY $TORCH --seconds 3 >"$T/sm.out" 2>"$T/err" ||
  fail "smoke of the torch job: $(cat "$T/sm.out" "$T/err" | tail -5)"
grep -q "one run at 700 W until 5 s after the first report (at most 120 s; jsonl:$T/sm.jsonl): complete after" "$T/sm.out" ||
  fail "smoke: cap and length: $(cat "$T/sm.out")"
grep -q "^ok: pfi sweep reads this job's throughput" "$T/sm.out" || fail "smoke: verdict: $(cat "$T/sm.out")"
# The rates it printed are the job's, computed here from its own lines.
python3 - "$T/sm.out" "$T/sm.jsonl" <<'PY' || fail "smoke rates: $(cat "$T/sm.out")"
import json, re, sys
out = open(sys.argv[1]).read()
m = re.search(r"reports: (\d+) read, (\d+) with a rate", out)
lines = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert m and int(m.group(1)) == len(lines) and int(m.group(2)) == len(lines) - 1, (m and m.groups(), len(lines))
r = re.search(r"tokens/s: min ([0-9.e+]+), median ([0-9.e+]+), max ([0-9.e+]+)", out)
steps = sorted((b["tokens"] - a["tokens"]) / (b["t"] - a["t"]) for a, b in zip(lines, lines[1:]))
# pfi prints 6 significant digits; the job's t has microseconds: 1e-5.
for got, want in zip(map(float, r.groups()), (steps[0], steps[len(steps) // 2] if len(steps) % 2 else 0.5 * (steps[len(steps) // 2 - 1] + steps[len(steps) // 2]), steps[-1])):
    assert abs(got - want) <= 1e-5 * want, (got, want)
PY
[ -e "$T/sm.db" ] && fail "--smoke wrote the --db store"
[ -z "$(ls -A "$T/tmp")" ] || fail "--smoke left its store: $(ls -A "$T/tmp")"
[ "$(caps)" = "650,650,650,650" ] || fail "caps after smoke: $(caps)"
# A job whose lines the expression never matches: exit 1, saying so.
TMPDIR=$T/tmp "$PFI" sweep $EMU4 --caps 700 --smoke --duration 2s --throughput 'regex:tok/s=([0-9.]+)' \
  -- /bin/sh -c 'echo "tokens_per_s=5"; sleep 1' >"$T/sm2.out" 2>"$T/err"
[ $? -eq 1 ] || fail "smoke of a job never matched: exit status"
grep -q "no line of the job's standard output matched" "$T/err" || fail "smoke of a job never matched: $(cat "$T/err")"
grep -qx "tokens_per_s=5" "$T/sm2.out" || fail "smoke: the job's output not passed on: $(cat "$T/sm2.out")"
# A "t" that is not Unix time (a monotonic clock): the reports fall outside the run.
cat >"$T/mono.sh" <<'SH'
i=1
while [ $i -le 8 ]; do printf '{"t": %d, "tokens": %d}\n' $((1000 + i)) $((i * 100)) >>"$PFI_THROUGHPUT_JSONL"; i=$((i + 1)); done
SH
TMPDIR=$T/tmp "$PFI" sweep $EMU4 --caps 700 --smoke --duration 2s --throughput "jsonl:$T/mono.jsonl" \
  -- /bin/sh "$T/mono.sh" >"$T/sm3.out" 2>"$T/err"
[ $? -eq 1 ] || fail "smoke of a job with monotonic times: exit status"
grep -q "^timestamps: the reports fall outside the run" "$T/sm3.out" || fail "smoke, monotonic times: $(cat "$T/sm3.out" "$T/err")"
grep -q "tokens/s: min 100, median 100, max 100" "$T/sm3.out" || fail "smoke, monotonic times: rates: $(cat "$T/sm3.out")"
[ -z "$(ls -A "$T/tmp")" ] || fail "--smoke left its store: $(ls -A "$T/tmp")"
# Bad usage: no throughput to check.
"$PFI" sweep $EMU4 --caps 700 --smoke -- /bin/true 2>"$T/err"
[ $? -eq 2 ] || fail "smoke without --throughput: exit status"

# ---- a summary with nothing to summarize writes no file ----
# A command on the emu backend without --emulate: the GPUs stay idle.
"$PFI" "${SW[@]}" --db "$T/e.db" --throughput "jsonl:$T/e.jsonl" -- /bin/sh "$T/mono.sh" 2>"$T/err" || fail "idle sweep: $(tail -2 "$T/err")"
"$PFI" trace summarize "$T/e.db" --out "$T/es" 2>"$T/err"
[ $? -eq 2 ] || fail "summary of idle runs: exit status"
grep -q "the emulated GPUs were idle through every run: a command on the emu backend needs --emulate GROUP" "$T/err" ||
  fail "summary of idle runs: message: $(cat "$T/err")"
grep -q -- "--duration 300" "$T/err" && fail "summary of idle runs: advice on the duration: $(cat "$T/err")"
[ -z "$(ls -A "$T/es" 2>/dev/null)" ] || fail "summary of idle runs wrote: $(ls -A "$T/es")"

[ "$fails" -eq 0 ] && echo "test_sweep_real: all passed"
exit $((fails > 0))
