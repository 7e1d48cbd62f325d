#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi gate: the shipped Zeus traces, V100 (reference) against A40 (new), a
# hardware change; every number the gate derives from the curves is
# recomputed here by a python reference, and the verdicts follow from the
# rule of docs/gate.md, with each file's noise estimated here as
# docs/index-and-stats.md says (the pooled scatter of log power and log
# throughput of each job's points drawing under 70 % of the cap). Then a sweep compared with itself passes, a 5 %
# slowdown fails on throughput only, and trace stores are read.
. "$(dirname "$0")/lib.sh"
export PFI_EMU_STATE="$T/emu"

Z=data/real/zeus-nsdi23
M="job=dataset+network+batch_size+optimizer,cap_w=power_limit,power_w=average_power,tokens_per_s=1/time_per_epoch"

"$PFI" gate "$Z/summary_power_v100.csv" "$Z/summary_power_a40.csv" --map "$M" --ci 500 --format csv >"$T/g.csv"
rc=$?
[ $rc -eq 1 ] || fail "V100 vs A40: exit status $rc, expected 1 (fail)"
python3 - "$Z/summary_power_v100.csv" "$Z/summary_power_a40.csv" "$T/g.csv" <<'PY' || fail "gate V100 vs A40 differs from the reference"
import csv, math, sys
from collections import defaultdict
from statistics import NormalDist
def load(p):
    jobs = defaultdict(list)
    for r in csv.DictReader(open(p)):
        k = "/".join([r["dataset"], r["network"], r["batch_size"], r["optimizer"]])
        jobs[k].append((float(r["power_limit"]), float(r["average_power"]), 1 / float(r["time_per_epoch"])))
    for v in jobs.values(): v.sort()
    return jobs
def noise(jobs):  # (rel sd power, rel sd tokens): pooled log scatter
    ssp = sst = 0.0; dof = 0
    for v in jobs.values():
        u = [p for p in v if p[1] < 0.7 * p[0]]
        if len(u) < 2: continue
        lp = [math.log(p[1]) for p in u]; lt = [math.log(p[2]) for p in u]
        mp = sum(lp) / len(lp); mt = sum(lt) / len(lt)
        ssp += sum((x - mp) ** 2 for x in lp); sst += sum((x - mt) ** 2 for x in lt)
        dof += len(u) - 1
    assert dof >= 3
    return math.sqrt(ssp / dof), math.sqrt(sst / dof)
def pfi(pts, nz):   # the noise rule with the file's noise
    sp, st = nz
    n = len(pts); c = [p[0] for p in pts]; P = [p[1] for p in pts]; T = [p[2] for p in pts]
    pm, tm = P[-1], T[-1]
    rt = max([0.0] + [(T[a] - T[b]) / tm for a in range(n) for b in range(a + 1, n)])
    rp = max([0.0] + [(P[a] - P[b]) / pm for a in range(n) for b in range(a + 1, n)])
    t = [(1 - P[i] / pm) / (1 - T[i] / tm) for i in range(n - 1)
         if 1 - T[i] / tm > max(2 * T[i] / tm * math.hypot(st, st), rt)
         and 1 - P[i] / pm > max(2 * P[i] / pm * math.hypot(sp, sp), rp)]
    return sum(t) / len(t) if t else None
ref, new = load(sys.argv[1]), load(sys.argv[2])
nref, nnew = noise(ref), noise(new)
print("noise: V100 %.4f %.4f, A40 %.4f %.4f" % (nref + nnew))
rows = {r["job"]: r for r in csv.DictReader(open(sys.argv[3]))}
assert set(rows) == set(ref) & set(new), "compared jobs"
bad = 0
def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1, abs(b))
for k, r in rows.items():
    a, b = pfi(ref[k], nref), pfi(new[k], nnew)
    for got, want in ((r["pfi_ref"], a), (r["pfi_new"], b)):
        if (want is None) != (got == "-") or (want is not None and not close(float(got), want)):
            print(k, "pfi", got, want); bad += 1
    if a is not None and b is not None and r["pfi_diff"] != "-":
        d = float(r["pfi_diff"])
        if not close(d, b - a): print(k, "diff", d, b - a); bad += 1
        lo, hi = float(r["pfi_diff_lo"]), float(r["pfi_diff_hi"])
        if int(r["pfi_beyond_noise"]) != (lo > 0 or hi < 0): print(k, "beyond noise flag"); bad += 1
    # the largest drop at a common cap
    tr = {p[0]: p for p in ref[k]}; tn = {p[0]: p for p in new[k]}
    ch = sorted((tn[c][2] / tr[c][2] - 1, c) for c in tr if c in tn)
    if int(r["common_caps"]) != len(ch): print(k, "common caps"); bad += 1
    w, cap = ch[0]
    sig = (1 + w) * math.hypot(nref[1], nnew[1])
    z = NormalDist().inv_cdf(1 - 0.025 / len(ch))   # Bonferroni over the caps
    if not close(float(r["worst_tput_change"]), w) or float(r["worst_cap_w"]) != cap or not close(float(r["worst_tput_sigma"]), sig):
        print(k, "worst", r["worst_tput_change"], w, r["worst_cap_w"], cap); bad += 1
    tb = w < 0 and -w > z * sig
    if int(r["tput_beyond_noise"]) != tb: print(k, "tput beyond noise"); bad += 1
    tpw = (new[k][-1][2] / new[k][-1][1]) / (ref[k][-1][2] / ref[k][-1][1]) - 1
    if not close(float(r["tput_per_w_change"]), tpw): print(k, "tput/W"); bad += 1
    pfail = int(r["pfi_beyond_noise"]) and r["pfi_diff"] != "-" and abs(float(r["pfi_diff"])) > 0.10 * abs(a)
    fail = pfail or (tb and -w > 0.02) or (r["pfi_diff"] == "-" and not ch)
    if r["verdict"] != ("fail" if fail else "pass"): print(k, "verdict", r["verdict"]); bad += 1
    for w, nz in (("ref", nref), ("new", nnew)):   # the noise used, per row
        if r[w + "_noise_source"] != "points the cap cannot bind" or \
           not close(float(r[w + "_noise_rel_sd_power"]), nz[0], 1e-8) or \
           not close(float(r[w + "_noise_rel_sd_tokens"]), nz[1], 1e-8):
            print(k, "noise", w); bad += 1
print(len(rows), "jobs compared")
sys.exit(1 if bad else 0)
PY

# The same sweep against itself passes (exit 0): no change beyond noise.
"$PFI" gate "$Z/summary_power_v100.csv" "$Z/summary_power_v100.csv" --map "$M" --ci 300 >"$T/self.txt"
rc=$?
[ $rc -eq 0 ] || fail "V100 vs itself: exit status $rc: $(tail -3 "$T/self.txt")"
grep -q '^verdict: pass (0 of 68 compared jobs fail)' "$T/self.txt" || fail "self verdict: $(tail -1 "$T/self.txt")"

# Every throughput 5 % lower, measured with the paper's repeatability
# (--noise 0.04,0.05): PFI unchanged (it is scale-free), throughput fails
# at every cap, so the gate fails on throughput alone.
slow() {
  awk -F, -v OFS=, -v f="$1" 'NR == 1 { print; next } { $6 = sprintf("%.17g", $6 / f); print }' \
    "$Z/summary_power_v100.csv" >"$T/slow.csv"
}
slow 0.95
"$PFI" gate "$Z/summary_power_v100.csv" "$T/slow.csv" --map "$M" --ci 300 --noise 0.04,0.05 --format json >"$T/slow.json"
rc=$?
[ $rc -eq 1 ] || fail "5 % slowdown: exit status $rc"
python3 - "$T/slow.json" 0.95 <<'PY' || fail "5 % slowdown: $(head -c 600 "$T/slow.json")"
import json, sys
d = json.load(open(sys.argv[1])); f = float(sys.argv[2])
assert d["verdict"] == "fail" and d["failed"] == 68, (d["verdict"], d["failed"])
for j in d["jobs"]:
    assert abs(j["worst_tput_change"] - (f - 1)) < 1e-9, j
    assert j["tput_beyond_noise"]
    if j["pfi_diff"] is not None:
        assert abs(j["pfi_diff"]) < 1e-9, j          # same ratios
        assert not j["pfi_beyond_noise"], j
PY
# ... and a tolerance of 6 % lets it pass.
"$PFI" gate "$Z/summary_power_v100.csv" "$T/slow.csv" --map "$M" --ci 100 --noise 0.04,0.05 --tolerance tput=6% >/dev/null ||
  fail "--tolerance tput=6% should pass a 5 % slowdown"
# With the file's own noise (3.7 % of throughput, estimated from the points
# the cap cannot bind) a 5 % drop at one cap is within the noise: the gate
# cannot see it (docs/gate.md) and passes; a 20 % drop is beyond it
# (z 2.69 for 7 caps times sqrt(2) 0.8 3.7 % = 11.3 %) and fails every job.
"$PFI" gate "$Z/summary_power_v100.csv" "$T/slow.csv" --map "$M" --ci 100 >"$T/slow.txt" ||
  fail "5 % slowdown at the data's noise: $(tail -1 "$T/slow.txt")"
grep -q '^noise, reference: 2.08 % power, 3.71 % throughput (points the cap cannot bind, ' "$T/slow.txt" ||
  fail "noise not stated: $(head -3 "$T/slow.txt")"
slow 0.8
"$PFI" gate "$Z/summary_power_v100.csv" "$T/slow.csv" --map "$M" --ci 300 --format json >"$T/slow.json"
[ $? -eq 1 ] || fail "20 % slowdown: exit status"
python3 - "$T/slow.json" 0.8 <<'PY' || fail "20 % slowdown: $(head -c 600 "$T/slow.json")"
import json, sys
d = json.load(open(sys.argv[1])); f = float(sys.argv[2])
assert d["verdict"] == "fail" and d["failed"] == 68, (d["verdict"], d["failed"])
assert d["reference_noise"]["source"] == "points the cap cannot bind"
for j in d["jobs"]:
    assert abs(j["worst_tput_change"] - (f - 1)) < 1e-9, j
    assert j["tput_beyond_noise"], j
PY

# Jobs only in one file: listed, failing only with --strict.
grep -E '^dataset|^cifar100,shufflenetv2,1024,adam,' "$Z/summary_power_v100.csv" >"$T/few.csv"
"$PFI" gate "$Z/summary_power_v100.csv" "$T/few.csv" --map "$M" --ci 100 >"$T/few.txt" ||
  fail "subset: $(tail -2 "$T/few.txt")"
grep -q '^67 jobs only in the reference, 0 only in the new sweep (not compared)' "$T/few.txt" ||
  fail "missing jobs not listed: $(tail -2 "$T/few.txt")"
"$PFI" gate "$Z/summary_power_v100.csv" "$T/few.csv" --map "$M" --ci 100 --strict >/dev/null
[ $? -eq 1 ] || fail "--strict with missing jobs passed"

# Trace stores (an emulated sweep), labelled emulated.
"$PFI" sweep --emulate moe-ft-qwen30ba3b-x8 --caps 400:700:100 --duration 5m --interval 30s \
  --cooldown 0s --db "$T/s.db" >/dev/null 2>&1 || fail "sweep for the store"
"$PFI" gate "$T/s.db" "$T/s.db" --ci 100 >"$T/st.txt" || fail "store vs itself: $(cat "$T/st.txt")"
grep -q "(emulated) -> .*(emulated)" "$T/st.txt" || fail "store not labelled emulated: $(head -1 "$T/st.txt")"

# Usage and input errors: exit 2.
"$PFI" gate "$T/few.csv" >/dev/null 2>&1; [ $? -eq 2 ] || fail "one argument"
"$PFI" gate "$T/few.csv" "$T/few.csv" --tolerance speed=1% >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad tolerance"
printf 'job,cap_w,power_w,tokens_per_s\na,100,x,1\n' >"$T/bad.csv"
"$PFI" gate "$T/bad.csv" "$T/bad.csv" 2>"$T/err" >/dev/null; [ $? -eq 2 ] || fail "bad input status"
grep -q 'bad.csv:2:' "$T/err" || fail "bad input message: $(cat "$T/err")"
exit $((fails > 0))
