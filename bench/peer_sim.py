#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The peer of `pfi simulate --true-pfi --strategies equal,pfi-aware,oracle`:
the same simulation written with numpy, vectorized over workloads.

Workloads are sampled exactly as pfi samples them (GSL's MT19937 seeded
with SEED, gsl_rng_uniform_int: numpy's MT19937 with the same legacy
seeding gives the same 32-bit stream), so both score the same workloads and
the gaps agree to rounding. Each workload's budget at a cut is
(1 - cut) x its uncapped power; the strategies:
  oracle     exact for concave curves: segments filled in order of
             decreasing slope (one sort per workload, prefix sums per cut);
  equal      each job cut in proportion to its uncapped power, down to its
             floor, the rest shared by the others (water-filling);
  pfi-aware  the same with weights P_max x PFI / T_max.
Prints strategy,cut_pct,gap_tokens_per_s_per_job (the mean over workloads
of oracle minus strategy, tokens/s per job) to OUT.

usage: peer_sim.py CURVES PFI_CSV WORKLOADS SIZE SEED CUTS OUT
(PFI_CSV: job,pfi as `pfi index --definition ratio --format csv` writes;
CUTS: percentages, comma-separated.)
"""
import sys

import numpy as np
import pandas as pd


def sample(n_lib, workloads, size, seed):
    bg = np.random.MT19937(0)
    bg._legacy_seeding(seed)
    scale = 0xFFFFFFFF // n_lib
    need = workloads * size
    out = np.empty(0, dtype=np.int64)
    while out.size < need:  # rejection as gsl_rng_uniform_int
        k = bg.random_raw(need - out.size + 64) // scale
        out = np.concatenate([out, k[k < n_lib].astype(np.int64)])
    return out[:need].reshape(workloads, size)


def waterfill(room, w, C):
    """cut_i = min(room_i, t w_i), sum of cuts = C, per row (vectorized)."""
    W_rows, S = room.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where((w > 0) & (room > 0), room / w, np.inf)
    order = np.argsort(r, axis=1, kind="stable")
    rs = np.take_along_axis(r, order, 1)
    ws = np.take_along_axis(np.where(np.isfinite(r), w, 0.0), order, 1)
    rms = np.take_along_axis(np.where(np.isfinite(r), room, 0.0), order, 1)
    Wtot = ws.sum(axis=1, keepdims=True)
    wpre = np.cumsum(ws, axis=1) - ws  # weight of the jobs before k
    rpre = np.cumsum(rms, axis=1) - rms
    full = np.isfinite(rs) & (rs * (Wtot - wpre) <= C[:, None] - rpre)
    k = full.sum(axis=1)  # jobs cut to their floor (a prefix)
    idx = np.arange(W_rows)
    kk = np.minimum(k, S - 1)
    Wleft = np.where(k < S, Wtot[:, 0] - wpre[idx, kk], 0.0)
    Cleft = np.where(k < S, C - rpre[idx, kk], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(Wleft > 0, Cleft / Wleft, 0.0)
    return np.minimum(room, t[:, None] * w)


def interp_rows(x, xs, ys):
    """f(x) for each (workload, job): xs, ys of shape (..., P)."""
    P = xs.shape[-1]
    k = np.clip((x[..., None] >= xs[..., 1:P - 1]).sum(axis=-1), 0, P - 2)
    x0 = np.take_along_axis(xs, k[..., None], -1)[..., 0]
    x1 = np.take_along_axis(xs, k[..., None] + 1, -1)[..., 0]
    y0 = np.take_along_axis(ys, k[..., None], -1)[..., 0]
    y1 = np.take_along_axis(ys, k[..., None] + 1, -1)[..., 0]
    t = (x - x0) / (x1 - x0)
    return np.where(x >= xs[..., -1], ys[..., -1],
                    np.where(x <= xs[..., 0], ys[..., 0], y0 + t * (y1 - y0)))


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    curves, pfi_csv, W, S, seed, cuts_s, out = sys.argv[1:]
    W, S, seed = int(W), int(S), int(seed)
    cuts = np.array([float(c) for c in cuts_s.split(",")])
    df = pd.read_csv(curves)
    jobs = pd.unique(df["job"])
    df = df.set_index("job").loc[jobs].reset_index()
    df = df.sort_values(["job", "cap_w"], kind="stable")
    est = pd.read_csv(pfi_csv).set_index("job")["pfi"].loc[jobs].to_numpy()
    L = len(jobs)
    P = df.groupby("job", sort=False).size().loc[jobs].to_numpy()
    if (P != P[0]).any():
        sys.exit("peer_sim: every library job needs the same number of points")
    P = P[0]
    g = df.set_index("job").loc[jobs]
    xs = g["power_w"].to_numpy().reshape(L, P)
    ys = g["tokens_per_s"].to_numpy().reshape(L, P)
    o = np.argsort(xs, axis=1, kind="stable")  # points by power
    xs = np.take_along_axis(xs, o, 1)
    ys = np.take_along_axis(ys, o, 1)
    lo, hi, tmax = xs[:, 0], xs[:, -1], ys[:, -1]
    seg_len = np.diff(xs, axis=1)
    seg_slope = np.diff(ys, axis=1) / seg_len

    pick = sample(L, W, S, seed)  # W x S library indices
    wx, wy = xs[pick], ys[pick]   # W x S x P
    wlo, whi = lo[pick], hi[pick]
    sum_lo, sum_hi = wlo.sum(axis=1), whi.sum(axis=1)
    base_val = ys[pick, 0].sum(axis=1)
    # Oracle: one sort of each workload's segments by slope, descending.
    sl = seg_slope[pick].reshape(W, -1)
    ln = seg_len[pick].reshape(W, -1)
    order = np.argsort(-sl, axis=1, kind="stable")
    sl = np.take_along_axis(sl, order, 1)
    ln = np.take_along_axis(ln, order, 1)
    lpre = np.concatenate([np.zeros((W, 1)), np.cumsum(ln, axis=1)], axis=1)
    vpre = np.concatenate([np.zeros((W, 1)), np.cumsum(ln * sl, axis=1)],
                          axis=1)
    room = whi - wlo
    weights = {"equal": whi,
               "pfi-aware": np.where((est[pick] > 0) & (tmax[pick] > 0),
                                     whi * est[pick] / tmax[pick], 0.0)}
    rows = []
    gaps = {s: [] for s in ("oracle", "equal", "pfi-aware")}
    for cut in cuts:
        B = (1 - cut / 100.0) * sum_hi
        R = B - sum_lo
        t = (lpre[:, 1:] <= R[:, None]).sum(axis=1)  # full segments
        tt = np.minimum(t, sl.shape[1] - 1)
        idx = np.arange(W)
        part = np.where(t < sl.shape[1],
                        sl[idx, tt] * (R - lpre[idx, t]), 0.0)
        oracle = (base_val + vpre[idx, t] + part) / S
        gaps["oracle"].append(np.zeros(W))
        C = sum_hi - B
        for s, w in weights.items():
            cut_w = waterfill(room, w, C)
            tok = interp_rows(whi - cut_w, wx, wy).sum(axis=1) / S
            gaps[s].append(oracle - tok)
    with open(out, "w") as f:
        f.write("strategy,cut_pct,gap_tokens_per_s_per_job\n")
        for s in ("oracle", "equal", "pfi-aware"):
            for c, gap in zip(cuts, gaps[s]):
                f.write("%s,%g,%.9f\n" % (s, c, gap.mean()))


if __name__ == "__main__":
    main()
