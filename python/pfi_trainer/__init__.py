# SPDX-License-Identifier: GPL-3.0-or-later
"""pfi_trainer: a training job's side of pfi (docs/python.md).

    import pfi_trainer
    rep = pfi_trainer.Reporter()        # PFI_TPUT_ADDR / PFI_THROUGHPUT_JSONL
    with rep.train_step(tokens=n):      # every step
        ...
    with rep.checkpoint(expected_s=40): # a pause, reported and announced
        ...
    rep.cap()                           # the cap the job runs under, and why

Standard library only; pfi_trainer.torch holds the PyTorch helpers."""

from .cap import CapInfo, CapSource, cap_source_from_env, parse_cap
from .reporter import PHASES, Reporter, encode_report
from ._http import parse_address

__version__ = "0.1.0"
__all__ = ["Reporter", "CapInfo", "CapSource", "cap_source_from_env", "parse_cap",
           "parse_address", "encode_report", "PHASES", "__version__"]
