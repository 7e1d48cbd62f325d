#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Zeus NSDI'23 power traces (data/real/zeus-nsdi23, measured V100 and
# A40): read with --map (a job named by four columns, throughput as
# 1/time_per_epoch), and the noise rule of the ratio PFI checked against a
# reference implementation written here from the rule's statement in
# docs/index-and-stats.md.
. "$(dirname "$0")/lib.sh"

Z=data/real/zeus-nsdi23
M="job=dataset+network+batch_size+optimizer,cap_w=power_limit,power_w=average_power,tokens_per_s=1/time_per_epoch"

expect_err() {
  local pat=$1
  shift
  "$PFI" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2"
  grep -Eq -- "$pat" "$T/err" || fail "pfi $*: stderr '$(cat "$T/err")' does not match '$pat'"
  [ ! -s "$T/out" ] || fail "pfi $*: wrote to stdout on error"
}

for f in LICENSE NOTICE.md TRACE-README.md summary_power_v100.csv summary_power_a40.csv; do
  [ -s "$Z/$f" ] || fail "$Z/$f missing"
done

for gpu in v100 a40; do
  "$PFI" index "$Z/summary_power_$gpu.csv" --map "$M" --format csv >"$T/$gpu.csv" ||
    fail "index $gpu"
  python3 - "$Z/summary_power_$gpu.csv" "$T/$gpu.csv" <<'PY' || fail "$gpu: pfi index differs from the reference"
import csv, math, sys
from collections import defaultdict
Z, RP, RT = 2.0, 0.0004, 0.0005
jobs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    k = "/".join([r["dataset"], r["network"], r["batch_size"], r["optimizer"]])
    jobs[k].append((float(r["power_limit"]), float(r["average_power"]),
                    1.0 / float(r["time_per_epoch"])))
got = {r["job"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert set(got) == set(jobs), "job sets differ"
bad = 0
for k, pts in jobs.items():
    pts.sort()
    c = [p[0] for p in pts]; P = [p[1] for p in pts]; T = [p[2] for p in pts]
    n = len(pts); pm, tm = P[-1], T[-1]
    # The curve's noise floor: largest rise from a cap to a lower one.
    rt = max([0.0] + [(T[a] - T[b]) / tm for a in range(n) for b in range(a + 1, n)])
    rp = max([0.0] + [(P[a] - P[b]) / pm for a in range(n) for b in range(a + 1, n)])
    terms, excl = [], []
    for i in range(n - 1):
        loss, save = 1 - T[i] / tm, 1 - P[i] / pm
        sl = Z * (T[i] / tm) * math.hypot(RT, RT)
        sp = Z * (P[i] / pm) * math.hypot(RP, RP)
        if loss > max(sl, rt) and save > max(sp, rp):
            terms.append(save / loss)
        else:
            excl.append(c[i])
    g = got[k]
    if terms:
        ref = sum(terms) / len(terms)
        if g["pfi"] == "-" or abs(float(g["pfi"]) - ref) > 1e-9 * max(1, abs(ref)):
            print(k, "pfi", g["pfi"], ref); bad += 1
    elif g["pfi"] != "-":
        print(k, "pfi should be undefined, got", g["pfi"]); bad += 1
    if int(g["points_used"]) != len(terms):
        print(k, "points_used", g["points_used"], len(terms)); bad += 1
    ex = [] if g["excluded_caps"] == "-" else [float(x) for x in g["excluded_caps"].split(";")]
    if ex != excl:
        print(k, "excluded", ex, excl); bad += 1
    # area: trapezoids over the points by power from (0, 0), minus 1/2
    xy = sorted((P[i] / pm, T[i] / tm) for i in range(n))
    area = 0.5 * xy[0][0] * xy[0][1] + sum(
        0.5 * (xy[i][0] - xy[i - 1][0]) * (xy[i][1] + xy[i - 1][1]) for i in range(1, n))
    if abs(float(g["pfi_area"]) - (area - 0.5)) > 1e-9:
        print(k, "area", g["pfi_area"], area - 0.5); bad += 1
    # the ratio must never be one of the meaningless values of the naive
    # computation: every used term has a loss above the noise
    if g["pfi"] != "-" and not math.isfinite(float(g["pfi"])):
        bad += 1
print(len(jobs), "jobs checked")
sys.exit(1 if bad else 0)
PY
done
# The shipped sets are the ones described: 68 V100 and 53 A40 configurations.
[ "$(($(wc -l <"$T/v100.csv") - 1))" -eq 68 ] || fail "v100: $(($(wc -l <"$T/v100.csv") - 1)) jobs, expected 68"
[ "$(($(wc -l <"$T/a40.csv") - 1))" -eq 53 ] || fail "a40: $(($(wc -l <"$T/a40.csv") - 1)) jobs, expected 53"
# Every point left out is named with its reason.
awk -F, 'NR > 1 && $6 != "-" { n = split($6, a, ";"); m = split($NF, b, ";");
  if (n != m) exit 1; for (i = 1; i <= m; i++) if (b[i] !~ /^(no-loss|loss-in-noise|power-in-noise)$/) exit 1 }' \
  "$T/v100.csv" || fail "excluded_why does not name a reason per excluded cap"

# --map forms: K/COLUMN scales, a composite job needs its columns.
printf 'a,b,cap,pw,t\nx,1,100,50,4\nx,1,200,90,2\n' >"$T/m.csv"
"$PFI" index "$T/m.csv" --map "job=a+b,cap_w=cap,power_w=pw,tokens_per_s=60/t" --format csv >"$T/out" ||
  fail "composite job and 60/t"
grep -q '^x/1,' "$T/out" || fail "composite job name: $(cat "$T/out")"
# T = 60/4 = 15 and 60/2 = 30: t_max 30
awk -F, 'NR == 2 { exit !($7 == 30) }' "$T/out" || fail "t_max of 60/t: $(cat "$T/out")"
expect_err "m.csv:1:1: missing column 'nope' \(mapped to job as a\+nope\)" \
  index "$T/m.csv" --map "job=a+nope,cap_w=cap,power_w=pw,tokens_per_s=t"
expect_err "numerator of K/COLUMN must be a positive number" \
  index "$T/m.csv" --map "job=a,cap_w=cap,power_w=pw,tokens_per_s=x/t"
expect_err "missing column 'q' \(mapped to tokens_per_s as 1/q\)" \
  index "$T/m.csv" --map "job=a,cap_w=cap,power_w=pw,tokens_per_s=1/q"
printf 'a,b,cap,pw,t\nx,,100,50,4\nx,1,200,90,2\n' >"$T/e.csv"
expect_err "e.csv:2:3: field 'job': empty" \
  index "$T/e.csv" --map "job=a+b,cap_w=cap,power_w=pw,tokens_per_s=t"
exit $((fails > 0))
