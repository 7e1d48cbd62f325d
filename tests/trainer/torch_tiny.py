#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real PyTorch training job for `pfi sweep` tests: a small MLP trained on
random data on the CPU for a few seconds, reporting its throughput by the
protocol of docs/throughput-protocol.md: one JSON line per step, appended to
the file PFI_THROUGHPUT_JSONL names ("t" Unix time, cumulative "tokens",
"step", "loss"), or with --stdout a log line per step on standard output
("step N loss L tokens_per_s=R"). A token here is one training sample.

    torch_tiny.py [--seconds 3] [--batch 64] [--stdout] [--seed 0]

It trains for --seconds of wall time after its start-up (importing torch,
building the model), then exits 0; SIGTERM ends it at once (exit 0).
"""
import argparse
import json
import os
import signal
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--stdout", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(1024, 32)
    y = x[:, :1] * 0.5 + 0.1 * torch.randn(1024, 1)
    log = None
    if not a.stdout:
        log = open(os.environ.get("PFI_THROUGHPUT_JSONL", "throughput.jsonl"),
                   "a", buffering=1)
    tokens, step = 0, 0
    start = time.time()
    last = start
    while time.time() - start < a.seconds:
        i = (step * a.batch) % x.shape[0]
        xb, yb = x[i:i + a.batch], y[i:i + a.batch]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        step += 1
        tokens += xb.shape[0]
        now = time.time()
        if a.stdout:
            rate = xb.shape[0] / (now - last) if now > last else 0.0
            print(f"step {step} loss {loss.item():.4f} tokens_per_s={rate:.1f}",
                  flush=True)
        else:
            log.write(json.dumps({"t": now, "tokens": tokens, "step": step,
                                  "loss": float(loss)}) + "\n")
        last = now
        time.sleep(0.005)  # a step of a few ms: about 100 reports a second
    return 0


if __name__ == "__main__":
    sys.exit(main())
