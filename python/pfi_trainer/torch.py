# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch helpers around a pfi_trainer.Reporter (imports torch lazily: the
package itself needs only the standard library).

    from pfi_trainer.torch import save, evaluating
    with rep.train_step(tokens=batch.numel()):
        loss = step(batch)
    with evaluating(rep, model):            # model.eval(), no_grad, phase evaluation
        val = evaluate(model)
    save(rep, model.state_dict(), "ckpt.pt", expected_s=40)
"""

import contextlib

__all__ = ["save", "evaluating", "tokens_of"]


def save(reporter, obj, f, expected_s=None, announce_s=None, **kwargs):
    """torch.save(obj, f, **kwargs) as a checkpoint pause of the reporter
    (announced `announce_s` before when given; its length `expected_s`)."""
    import torch
    with reporter.checkpoint(expected_s=expected_s, announce_s=announce_s):
        torch.save(obj, f, **kwargs)


@contextlib.contextmanager
def evaluating(reporter, model=None, expected_s=None, announce_s=None):
    """An evaluation pause: the model in eval mode without gradients inside
    it, back in the mode it had after."""
    import torch
    was = model.training if model is not None else None
    with reporter.evaluation(expected_s=expected_s, announce_s=announce_s):
        if model is not None:
            model.eval()
        try:
            with torch.no_grad():
                yield reporter
        finally:
            if model is not None and was:
                model.train()


def tokens_of(batch, world_size=1):
    """Elements of a tensor (e.g. input_ids: batch x sequence), or of a
    dict's `input_ids`, times the number of ranks: the job's tokens."""
    if isinstance(batch, dict):
        batch = batch["input_ids"]
    return int(batch.numel()) * int(world_size)
