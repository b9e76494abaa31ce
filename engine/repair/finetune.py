"""Fine-tune a copy of a zoo classifier on a mix (engine/repair/mix.py).

The parent's weights are loaded into a fresh module of its architecture, and trained
with AdamW at a constant learning rate, with the random shifts the zoo trains with
(engine/train/classifier.py) drawn from the run's generator. Batch norm keeps the
parent's running statistics: a mix of a few hundred images would otherwise replace
statistics measured on the whole training split, and with them the accuracy on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.core.files import load_weights
from engine.models import zoo
from engine.repair.mix import Mix
from engine.train.classifier import shift
from engine.train.common import batches, steps_per_epoch


def parent_module(card: dict[str, Any], folder: Path) -> nn.Module:
    """A trainable copy of the parent: its architecture, with its stored weights."""
    module = zoo.build_classifier_module(card)
    load_weights(module, folder)
    return module


def _freeze_batch_norm(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eval()


def finetune(
    module: nn.Module,
    data: Mix,
    epochs: int,
    lr: float,
    batch_size: int,
    rng: torch.Generator,
    device: torch.device,
    augment_shift: int = 2,
) -> Iterator[dict[str, Any]]:
    """Train ``module`` in place on ``data``; yields {"epoch", "epochs", "loss"} after
    each epoch (the mean training loss of that epoch)."""
    # Dropout draws from torch's global generator, which takes no generator argument: it
    # is seeded from the run's, inside a fork so that the caller's global state stays.
    dropout_seed = int(torch.randint(0, 2**62, (1,), generator=rng))
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(dropout_seed)
        yield from _train(module, data, epochs, lr, batch_size, rng, device, augment_shift)
    module.eval().cpu()


def _train(
    module: nn.Module,
    data: Mix,
    epochs: int,
    lr: float,
    batch_size: int,
    rng: torch.Generator,
    device: torch.device,
    augment_shift: int,
) -> Iterator[dict[str, Any]]:
    module.to(device)
    opt = torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=1e-4)
    for epoch in range(epochs):
        module.train()
        _freeze_batch_norm(module)
        total = seen = 0.0
        for idx in batches(len(data), batch_size, rng):
            x = shift(data.images[idx], augment_shift, rng).to(device)
            loss = F.cross_entropy(module(x), data.labels[idx].to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, seen = total + float(loss.detach()) * len(idx), seen + len(idx)
        yield {"epoch": epoch + 1, "epochs": epochs, "loss": total / max(seen, 1)}


def steps(data: Mix, epochs: int, batch_size: int) -> int:
    """Optimisation steps the fine-tuning takes (for the report)."""
    return epochs * steps_per_epoch(len(data), batch_size)
