#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a synthetic curves CSV (job,cap_w,power_w,tokens_per_s,gpus) of
JOBS jobs x 6 caps (200..700 W) for the index benchmark.

usage: gen_curves.py JOBS LAYOUT OUT
LAYOUT adjacent: the six rows of a job follow each other (descending cap);
LAYOUT interleaved: rows grouped by cap (all jobs at 700 W, then 600 W...),
as a telemetry export sorted by time is, so the rows of a job are JOBS rows
apart. Fixed seed: the same arguments write the same bytes. The curves are
synthetic (throughput ~ cap^alpha, alpha per job, small noise); they
exercise the code and are no measurement.
"""
import sys

import numpy as np


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("adjacent", "interleaved"):
        sys.exit(__doc__)
    jobs, layout, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    rng = np.random.default_rng(20261201)
    caps = np.array([700, 600, 500, 400, 300, 200])
    gpus = 8 << rng.integers(0, 3, jobs)
    tmax = 1e4 * (1.0 + 9.0 * rng.random(jobs))
    alpha = 0.35 + 0.55 * rng.random(jobs)
    frac = caps / 700.0
    p = gpus[:, None] * caps[None, :] * (0.92 + 0.05 * rng.random((jobs, 6)))
    t = tmax[:, None] * frac[None, :] ** alpha[:, None] * \
        (0.998 + 0.004 * rng.random((jobs, 6)))
    names = np.char.add("job", np.char.zfill(np.arange(jobs).astype(str), 7))
    p_s = np.char.mod("%.2f", p)
    t_s = np.char.mod("%.3f", t)
    cap_s = caps.astype(str)
    g_s = gpus.astype(str)
    if layout == "adjacent":
        order = [(j, k) for j in range(0)]  # unused; vectorized below
        rows = np.char.add(np.repeat(names, 6), ",")
        rows = np.char.add(rows, np.tile(cap_s, jobs))
        rows = np.char.add(rows, ",")
        rows = np.char.add(rows, p_s.reshape(-1))
        rows = np.char.add(rows, ",")
        rows = np.char.add(rows, t_s.reshape(-1))
        rows = np.char.add(rows, ",")
        rows = np.char.add(rows, np.repeat(g_s, 6))
    else:
        rows = np.char.add(np.tile(names, 6), ",")
        rows = np.char.add(rows, np.repeat(cap_s, jobs))
        rows = np.char.add(rows, ",")
        rows = np.char.add(rows, p_s.T.reshape(-1))
        rows = np.char.add(rows, ",")
        rows = np.char.add(rows, t_s.T.reshape(-1))
        rows = np.char.add(rows, ",")
        rows = np.char.add(rows, np.tile(g_s, 6))
    with open(out, "w") as f:
        f.write("job,cap_w,power_w,tokens_per_s,gpus\n")
        f.write("\n".join(rows.tolist()))
        f.write("\n")


if __name__ == "__main__":
    main()
