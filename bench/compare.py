#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""pfi against the peers a user would pick instead, side by side in one run.

usage: compare.py BUILD_DIR [WORK_DIR]

For each piece of work, generates the input (kept in WORK_DIR, default
BUILD_DIR/bench-data, for the next run), runs pfi and its peer on it in
turn, three times each (whole processes; the best of three is quoted),
checks that both give the same numbers, and prints the ratio. Timings are
wall seconds of the whole process (bench/measure.c: fork, exec, wait4) and, beside them, its CPU
seconds (user + system), which other work on a shared machine disturbs
less. In-process parsers are compared by CPU time. Exits 1 when a pair
disagrees on a number; a ratio below its goal is printed as such.
"""
import csv
import os
import platform
import re
import subprocess
import sys
import time

PY = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []
WORK = MEASURE = None  # set by main()
rows = []


def run(cmd, out=None):
    """Runs cmd (a list) to completion through BUILD_DIR/measure: (wall s,
    cpu s, peak RSS MiB). Started straight from this interpreter, a
    command's peak RSS would include the interpreter's (the kernel carries
    the peak of the image a process was exec'd from into its own), so
    measure, a C program of about a MiB, forks and execs it and reports
    what wait4 gives."""
    fo = open(out, "w") if out else subprocess.DEVNULL
    res = os.path.join(WORK, "measure.out")
    p = subprocess.run([MEASURE, res] + cmd, stdout=fo, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    if out:
        fo.close()
    if p.returncode != 0:
        sys.exit("compare: %s failed: %s" % (" ".join(cmd), err[-2000:]))
    with open(res) as f:
        wall, cpu, kib = f.read().split()
    return float(wall), float(cpu), float(kib) / 1024.0


def pair(name, pfi_cmd, peer_cmd, pfi_out=None, peer_out=None, n=3):
    """Best of n of each, in turn (A B A B ...)."""
    a, b = [], []
    for _ in range(n):
        a.append(run(pfi_cmd, pfi_out))
        b.append(run(peer_cmd, peer_out))
    best = lambda v, k: min(x[k] for x in v)
    return {"name": name, "pfi_wall": best(a, 0), "pfi_cpu": best(a, 1),
            "pfi_mib": max(x[2] for x in a), "peer_wall": best(b, 0),
            "peer_cpu": best(b, 1), "peer_mib": max(x[2] for x in b)}


def close(a, b, rel, absol=0.0):
    return abs(a - b) <= absol + rel * max(abs(a), abs(b))


def read_pfi(path, col):
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            out[r["job"]] = None if r[col] == "-" else float(r[col])
    return out


def check(what, ok, detail=""):
    if not ok:
        failures.append("%s: %s" % (what, detail))
        print("  MISMATCH %s %s" % (what, detail))


def report(r, goal, unit="x"):
    ratio = r["peer_wall"] / r["pfi_wall"]
    cratio = r["peer_cpu"] / r["pfi_cpu"]
    mark = "meets" if ratio >= goal else "BELOW"
    print("  pfi %.3f s (cpu %.3f s, %.0f MiB) | peer %.3f s (cpu %.3f s, "
          "%.0f MiB) | ratio %.1fx wall, %.1fx cpu; goal >= %gx: %s" %
          (r["pfi_wall"], r["pfi_cpu"], r["pfi_mib"], r["peer_wall"],
           r["peer_cpu"], r["peer_mib"], ratio, cratio, goal, mark))
    rows.append((r["name"], "%.3f s" % r["pfi_wall"],
                 "%.3f s" % r["peer_wall"], "%.1fx (cpu %.1fx)" % (ratio, cratio),
                 ">= %gx" % goal, mark))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else \
        os.path.join(build, "bench-data")
    os.makedirs(work, exist_ok=True)
    global WORK, MEASURE
    WORK, MEASURE = work, os.path.join(build, "measure")
    pfi = os.path.join(build, "pfi")
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print("compare: %s, %d processors (%s), %s, %s" %
          (platform.machine(), os.cpu_count(), cpu,
           time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load %.1f" % os.getloadavg()[0]))

    # 1. pfi index vs pandas, 300,000 jobs x 6 caps, both layouts.
    for layout in ("interleaved", "adjacent"):
        f = os.path.join(work, "curves-300k-%s.csv" % layout)
        if not os.path.exists(f):
            subprocess.check_call([PY, os.path.join(HERE, "gen_curves.py"),
                                   "300000", layout, f])
        po, qo = os.path.join(work, "pfi-index.csv"), \
            os.path.join(work, "peer-index.csv")
        print("index, 300,000 jobs x 6 caps, %s rows:" % layout)
        r = pair("index %s" % layout,
                 [pfi, "index", f, "--definition", "ratio", "--format", "csv"],
                 [PY, os.path.join(HERE, "peer_index.py"), f, qo], po)
        a, b = read_pfi(po, "pfi"), read_pfi(qo, "pfi")
        bad = [j for j in a if not (a[j] is None and b.get(j) is None) and
               (a[j] is None or b.get(j) is None or
                not close(a[j], b[j], 1e-9))]
        check("index %s" % layout, len(a) == len(b) == 300000 and not bad,
              "%d jobs differ, e.g. %s" % (len(bad), bad[:3]))
        report(r, 5)
        check("index %s memory" % layout, r["pfi_mib"] <= r["peer_mib"],
              "pfi %.0f MiB > pandas %.0f MiB" % (r["pfi_mib"], r["peer_mib"]))

    # 2. pfi simulate vs numpy, 500 workloads x 100 jobs x 9 cuts.
    lib = os.path.join(work, "library")
    if not os.path.exists(os.path.join(lib, "features.csv")):
        subprocess.check_call([PY, os.path.join(HERE, "gen_library.py"),
                               "25", lib])
    lc, lf = os.path.join(lib, "curves.csv"), os.path.join(lib, "features.csv")
    lp = os.path.join(work, "library-pfi.csv")
    run([pfi, "index", lc, "--definition", "ratio", "--format", "csv"], lp)
    cuts = "0,5,10,15,20,25,30,35,40"
    po, qo = os.path.join(work, "pfi-sim.csv"), os.path.join(work, "peer-sim.csv")
    print("simulate, 500 workloads x 100 jobs x 9 cuts, equal, pfi-aware, "
          "oracle:")
    r = pair("simulate", [pfi, "simulate", "--curves", lc, "--features", lf,
                          "--true-pfi", "--strategies",
                          "equal,pfi-aware,oracle", "--cuts", cuts,
                          "--format", "csv"],
             [PY, os.path.join(HERE, "peer_sim.py"), lc, lp, "500", "100", "1",
              cuts, qo], po)
    got = {}
    with open(po) as f:
        for x in csv.DictReader(f):
            got[(x["strategy"], float(x["cut_pct"]))] = \
                float(x["gap_tokens_per_s_per_job"])
    n = 0
    with open(qo) as f:
        for x in csv.DictReader(f):
            k = (x["strategy"], float(x["cut_pct"]))
            v = float(x["gap_tokens_per_s_per_job"])
            n += 1
            check("simulate %s %g" % k, k in got and close(got[k], v, 1e-9, 1e-6),
                  "pfi %s, numpy %.9f" % (got.get(k), v))
    check("simulate cells", n == 27, "%d cells" % n)
    report(r, 20)
    out = subprocess.check_output([os.path.join(build, "bench_sim")]).decode()
    m = re.search(r"([0-9.]+)x the limit", out)
    print("  " + out.strip().splitlines()[-1])
    rows.append(("simulate vs its one-sort-one-pass limit", "", "",
                 "%sx the limit" % (m.group(1) if m else "?"), "", ""))

    # 3. Prometheus text: pfi's parser vs prometheus_client, in-process CPU.
    node = os.path.join(work, "node.prom")
    subprocess.check_call([os.path.join(build, "bench_prom"), "--write", node])
    real = os.path.join(os.path.dirname(HERE), "data", "dcgm",
                        "h100-idle-eks.prom")
    for label, f, reps, preps in (("8-GPU dcgm-exporter scrape", node, 3000, 40),
                                  ("real dcgm-exporter sample", real, 60000,
                                   2000)):
        best_a, best_b, fa, fb = 0, 0, None, None
        for _ in range(3):
            a = subprocess.check_output([os.path.join(build, "bench_prom"), f,
                                         str(reps)]).decode()
            b = subprocess.check_output([PY, os.path.join(HERE, "peer_prom.py"),
                                         f, str(preps)]).decode()
            fa = dict(zip(a.split()[::2], a.split()[1::2]))
            fb = dict(zip(b.split()[::2], b.split()[1::2]))
            best_a = max(best_a, float(fa["mb_s"]))
            best_b = max(best_b, float(fb["mb_s"]))
        for k in ("gpus", "samples"):
            check("prom %s %s" % (label, k), fa[k] == fb[k],
                  "%s vs %s" % (fa[k], fb[k]))
        check("prom %s power" % label,
              close(float(fa["power_sum"]), float(fb["power_sum"]), 1e-12),
              "%s vs %s" % (fa["power_sum"], fb["power_sum"]))
        ratio = best_a / best_b
        mark = "meets" if ratio >= 50 else "BELOW"
        print("prometheus text, %s: pfi %.0f MB/s, prometheus_client %.1f MB/s "
              "(CPU time): %.0fx; goal >= 50x: %s" %
              (label, best_a, best_b, ratio, mark))
        rows.append(("prometheus text, %s" % label, "%.0f MB/s" % best_a,
                     "%.1f MB/s" % best_b, "%.0fx" % ratio, ">= 50x", mark))
    out = subprocess.check_output([os.path.join(build, "bench_prom"), "--fleet",
                                   "10000"]).decode()
    ff = dict(zip(out.split()[::2], out.split()[1::2]))
    check("fleet GPUs", ff["gpus"] == "80000", ff["gpus"])
    mark = "meets" if float(ff["cpu_s"]) < 1 else "BELOW"
    print("prometheus text, 10,000 nodes x 8 GPUs x 40 fields (%.0f MB): "
          "%.2f s CPU, %.2f s wall: %s (goal: well under 1 s)" %
          (int(ff["bytes"]) / 1e6, float(ff["cpu_s"]), float(ff["wall_s"]),
           mark))
    rows.append(("prometheus text, 10,000-node fleet scrape",
                 "%.2f s CPU" % float(ff["cpu_s"]), "", "", "< 1 s", mark))

    # 4. Oracle on 1,000,000 jobs; 5. the trace store.
    out = subprocess.check_output([os.path.join(build, "bench_alloc")]).decode()
    cpus = [float(x) for x in re.findall(r"oracle [0-9.]+ s wall ([0-9.]+) s CPU",
                                         out)]
    mark = "meets" if max(cpus) <= 0.5 else "BELOW"
    print("oracle, 1,000,000 jobs (concave, noisy): %s s CPU: %s (goal <= 0.5 s)"
          % (", ".join("%.3f" % c for c in cpus), mark))
    rows.append(("oracle, 1,000,000 jobs", "%.3f s CPU" % max(cpus), "", "",
                 "<= 0.5 s", mark))
    out = subprocess.check_output([os.path.join(build, "bench_store")]).decode()
    m = re.search(r"([0-9]+) rows/s of CPU", out)
    rate = int(m.group(1)) if m else 0
    mark = "meets" if rate >= 1000000 else "BELOW"
    print("trace store, one transaction per interval: %d rows/s of CPU: %s "
          "(goal >= 1,000,000)" % (rate, mark))
    rows.append(("trace store insert, a transaction per interval",
                 "%d rows/s of CPU" % rate, "", "", ">= 1,000,000 rows/s",
                 mark))

    print("\n| work | pfi | peer | ratio | goal | |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if failures:
        print("\ncompare: %d mismatch(es):\n  %s" % (len(failures),
                                                   "\n  ".join(failures)))
        sys.exit(1)
    print("\ncompare: every pair gave the same numbers")


if __name__ == "__main__":
    main()
