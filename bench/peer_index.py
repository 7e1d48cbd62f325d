#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The peer of `pfi index FILE --definition ratio --format csv`: what a user
would write with pandas. Reads the curves CSV, sorts by job and cap, and
computes the ratio PFI of every job vectorized:
  mean over capped points with T < T_max of (1 - P/P_max) / (1 - T/T_max),
the reference (T_max, P_max) being the point with the highest cap. Writes
job,pfi (10 significant digits, - when undefined) in order of first
appearance, as pfi does.

usage: peer_index.py FILE OUT
"""
import sys

import numpy as np
import pandas as pd


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    df = pd.read_csv(sys.argv[1], usecols=["job", "cap_w", "power_w",
                                           "tokens_per_s"])
    codes, uniq = pd.factorize(df["job"])  # codes in order of first appearance
    df["code"] = codes
    df = df.sort_values(["code", "cap_w"], kind="stable")
    code = df["code"].to_numpy()
    p = df["power_w"].to_numpy()
    t = df["tokens_per_s"].to_numpy()
    last = np.r_[code[1:] != code[:-1], True]  # the highest cap of each job
    idx_last = np.flatnonzero(last)
    pmax = np.repeat(p[idx_last], np.diff(np.r_[-1, idx_last]))
    tmax = np.repeat(t[idx_last], np.diff(np.r_[-1, idx_last]))
    use = (~last) & (t < tmax)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(use, (1.0 - p / pmax) / (1.0 - t / tmax), 0.0)
    n = len(uniq)
    s = np.bincount(code, weights=term, minlength=n)
    c = np.bincount(code, weights=use.astype(float), minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        pfi = s / c
    out = pd.DataFrame({"job": uniq, "pfi": pfi})
    out.loc[c == 0, "pfi"] = np.nan
    out.to_csv(sys.argv[2], index=False, float_format="%.10g", na_rep="-")


if __name__ == "__main__":
    main()
