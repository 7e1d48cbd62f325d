# SPDX-License-Identifier: GPL-3.0-or-later
"""A real PyTorch training loop on the CPU for the pfi_trainer tests: a small
MLP fitting y = sum(x) on random batches with SGD, reporting through
pfi_trainer (from the environment, as a job would). It writes its own
measurements to --own (JSON: each step's start and end on its own clock,
the tokens it counted, the losses, the reporter's counts, the caps it read)
so that the tests compare pfi's numbers with figures the reporter did not
produce.

--pace-cap REF: a stand-in for a GPU whose speed follows its power cap:
each step is padded to --step-s x REF / PFI_CAP_W seconds (the tokens per
step fixed), so the job's true throughput at cap C is
tokens_per_step / (step_s x REF / C) whatever the CPU does, as long as the
step's computation is shorter than that."""

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import time

# SIGTERM (the sweep's end of a run) ends the loop; set before importing
# torch, which takes seconds on a loaded machine.
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402

import pfi_trainer  # noqa: E402
from pfi_trainer.torch import evaluating, save  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=10.0)
ap.add_argument("--step-s", type=float, default=0.02)
ap.add_argument("--pace-cap", type=float, default=0.0)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--tokens-per-sample", type=int, default=128)
ap.add_argument("--interval", type=float, default=0.2)
ap.add_argument("--timeout", type=float, default=0.5)
ap.add_argument("--cap-poll", type=float, default=0.5)
ap.add_argument("--ckpt-at", type=float, action="append", default=[],
                help="a checkpoint this many seconds after the start")
ap.add_argument("--ckpt-s", type=float, default=2.0, help="a checkpoint's length")
ap.add_argument("--announce-s", type=float, default=0.0,
                help="announce each checkpoint this long before (0: not)")
ap.add_argument("--req-dir", default=None,
                help="a file req.N (LEN ANNOUNCE_S IDLE) makes the N-th checkpoint: LEN s "
                     "long, from ANNOUNCE_S s on (announced then when > 0; else after 1 s), "
                     "the GPUs' caps at their minimum through it with IDLE 1 (IDLE_CMD, "
                     "BUSY_CMD); pause.N gets its start, done.N its end; a file stop ends")
ap.add_argument("--own", required=True)
ap.add_argument("--dir", default=None, help="where checkpoints go (default: beside --own)")
a = ap.parse_args()

logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format="%(asctime)s %(levelname)s %(name)s %(message)s")
torch.manual_seed(1)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.02)
rep = pfi_trainer.Reporter(interval_s=a.interval, timeout_s=a.timeout, cap_poll_s=a.cap_poll)
caps_seen = []
rep.on_cap_change(lambda c: caps_seen.append(
    {"t": time.time(), "cap_w": c.cap_w, "default_w": c.default_w, "reason": c.reason,
     "event": c.event, "mode": c.mode, "job": c.job}))
pad = a.step_s * (a.pace_cap / float(os.environ["PFI_CAP_W"]) if a.pace_cap else 1.0)
tokens_per_step = a.batch * a.tokens_per_sample
d = a.dir or os.path.dirname(os.path.abspath(a.own))
steps, losses, pauses = [], [], []
ckpts = sorted(a.ckpt_at)
t0 = time.time()


def checkpoint(k, length=None, idle=None):
    # The GPUs' caps to their minimum through it where the test asks
    # (the emulated GPUs draw their training power whatever this job does).
    length = a.ckpt_s if length is None else length
    if idle is None:
        idle = bool(os.environ.get("IDLE_CMD"))
    if idle:
        subprocess.run(os.environ["IDLE_CMD"], shell=True)
    t_a = time.time()
    with rep.checkpoint(expected_s=length):
        torch.save(model.state_dict(), os.path.join(d, "ckpt.pt"))
        time.sleep(max(0.0, t_a + length - time.time()))
    t_b = time.time()
    if idle:
        subprocess.run(os.environ["BUSY_CMD"], shell=True)
    pauses.append({"k": k, "start": t_a, "end": t_b})


def put(name, text):
    with open(os.path.join(a.req_dir, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(a.req_dir, name + ".tmp"), os.path.join(a.req_dir, name))


plan, n_req = None, 1


while not stop and time.time() - t0 < a.seconds:
    now = time.time()
    if a.req_dir:
        if os.path.exists(os.path.join(a.req_dir, "stop")):
            break
        req = os.path.join(a.req_dir, "req.%d" % n_req)
        if plan is None and os.path.exists(req):
            f = open(req).read().split()
            L, A, idle = float(f[0]), float(f[1]), f[2] == "1"
            plan = (now + (A if A > 0 else 1.0), L, idle)
            if A > 0:
                rep.announce(A, L)
            put("pause.%d" % n_req, "%.3f\n" % plan[0])
        if plan is not None and now >= plan[0]:
            checkpoint(n_req, plan[1], plan[2])
            put("done.%d" % n_req, "%.3f %.3f\n" % (pauses[-1]["start"], pauses[-1]["end"]))
            plan, n_req = None, n_req + 1
            continue
    if ckpts and a.announce_s and now >= t0 + ckpts[0] - a.announce_s and \
            not getattr(rep, "_announced", False):
        rep.announce(max(0.0, t0 + ckpts[0] - now), a.ckpt_s)
        rep._announced = True
    if ckpts and now >= t0 + ckpts[0]:
        checkpoint(len(pauses))
        ckpts.pop(0)
        rep._announced = False
        continue
    s = time.time()
    with rep.train_step(tokens=tokens_per_step):
        x = torch.randn(a.batch, 16)
        y = x.sum(dim=1, keepdim=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rep.set_loss(loss.item())
        time.sleep(max(0.0, s + pad - time.time()))
    e = time.time()
    steps.append((s, e))
    losses.append(loss.item())

with evaluating(rep, model):
    x = torch.randn(256, 16)
    val = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True)).item()
# The last checkpoint through the helper (torch.save in a checkpoint pause).
save(rep, model.state_dict(), os.path.join(d, "final.pt"))
rep.close(timeout=3.0)
own = {"steps": steps, "tokens_per_step": tokens_per_step, "pad_s": pad,
       "loss_first": sum(losses[:20]) / max(1, len(losses[:20])),
       "loss_last": sum(losses[-20:]) / max(1, len(losses[-20:])), "val_loss": val,
       "stats": rep.stats, "caps": caps_seen, "pauses": pauses,
       "cap_w": float(os.environ.get("PFI_CAP_W", "nan"))}
tmp = a.own + ".tmp"
with open(tmp, "w") as f:
    json.dump(own, f)
os.rename(tmp, a.own)
