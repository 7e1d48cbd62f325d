#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fits the dynamics of a power-cap change to the real V100 step-response
trace (data/real/gridpilot-v100/E2_inner_loop: cap 280 -> 200 W at t = 10 s,
200 -> 280 W at t = 20 s, ~193 Hz): a dead time d then a first-order lag
tau, separately for the decrease and the increase,

    P(t) = P0                                         t < t0 + d
    P(t) = P1 + (P0 - P1) exp(-(t - t0 - d) / tau)    t >= t0 + d

P0 is the mean of the second before the step; d, tau by grid search, P1 by
least squares for each (d, tau). The windows end before the workload's
next idle burst (10.84 s, 21.28 s). Prints one line per direction:
direction d_s tau_s p0_w p1_w rmse_w n noise_sd_w, where noise_sd_w is the
standard deviation of the samples in a steady window at the new cap (the
floor any fit can reach). Used by src/control/cluster.c (its constants) and
tests/cli/test_step_fit.sh."""
import json
import sys

import numpy as np

root = sys.argv[1] if len(sys.argv) > 1 else "data/real/gridpilot-v100"
d = np.genfromtxt(root + "/E2_inner_loop/telemetry.csv", delimiter=",",
                  names=True, usecols=("t_s", "power_w"))
t, p = d["t_s"], d["power_w"]
plan = json.load(open(root + "/E2_inner_loop/step_plan.json"))
applied = {a["label"]: a["t_actual"] for a in plan["applied"]}


def fit(t0, t_end, steady):
    p0 = p[(t >= t0 - 1.0) & (t < t0)].mean()
    m = (t >= t0) & (t < t_end)
    tt, pp = t[m] - t0, p[m]
    best = None
    for dd in np.arange(0.0, 0.3001, 0.001):
        for tau in np.exp(np.linspace(np.log(0.001), np.log(2.0), 400)):
            e = np.where(tt < dd, 0.0, 1.0 - np.exp(-(tt - dd) / tau))
            # P = p0 + (p1 - p0) e: least squares in p1.
            den = (e * e).sum()
            if den <= 0:
                continue
            p1 = p0 + ((pp - p0) * e).sum() / den
            r = pp - (p0 + (p1 - p0) * e)
            sse = (r * r).sum()
            if best is None or sse < best[0]:
                best = (sse, dd, tau, p1)
    sse, dd, tau, p1 = best
    s = p[(t >= steady[0]) & (t < steady[1])]
    return dd, tau, p0, p1, np.sqrt(sse / m.sum()), int(m.sum()), s.std(ddof=1)


for name, label, end, steady in (("decrease", "step-down", 10.84, (10.3, 10.8)),
                                 ("increase", "step-up", 21.28, (20.7, 21.2))):
    dd, tau, p0, p1, rmse, n, sd = fit(applied[label], end, steady)
    print(f"{name} {dd:.3f} {tau:.4f} {p0:.2f} {p1:.2f} {rmse:.2f} {n} {sd:.2f}")
