#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a synthetic job library for the simulation benchmark: OUT/curves.csv
(JOBS jobs x 6 caps, concave throughput-power curves, as a measured library
has) and OUT/features.csv (arch, task, gpus, dram_copy_product). Fixed seed.
The curves are synthetic and exercise the code; they are no measurement.

usage: gen_library.py JOBS OUT
"""
import os
import sys

import numpy as np


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    jobs, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    caps = [200, 300, 400, 500, 600, 700]
    with open(os.path.join(out, "curves.csv"), "w") as c, \
            open(os.path.join(out, "features.csv"), "w") as f:
        c.write("job,cap_w,power_w,tokens_per_s,gpus\n")
        f.write("job,arch,task,gpus,dram_copy_product,provenance\n")
        for i in range(jobs):
            gpus = (32, 16, 8)[i % 3]
            tmax = 1000 + 4000 * rng.random()
            k = 1.1 + 1.5 * rng.random()
            pmax = gpus * (600 + 80 * rng.random())
            arch = "moe" if i % 4 == 3 else "dense"
            task = "ft" if i % 2 else "pt"
            name = "%s-%s-%02d-x%d" % (arch, task, i, gpus)
            for cap in caps:
                u = cap / 700.0
                c.write("%s,%d,%.3f,%.3f,%d\n" % (
                    name, cap, pmax * u,
                    tmax * (1 - (1 - u) / k * (1 + 0.5 * (1 - u))), gpus))
            f.write("%s,%s,%s,%d,%.4f,synthetic benchmark library\n" % (
                name, arch, task, gpus, 0.1 + 0.3 * rng.random()))


if __name__ == "__main__":
    main()
