"""A compressed twin of a zoo classifier: "did compression change behaviour, and where?"

Global magnitude pruning: the given share of all convolution and linear weights, the
smallest in absolute value across the whole network, is set to zero; biases and batch
norm stay. No fine-tuning, so the twin is what a practitioner gets from pruning alone.
The twin keeps its original's architecture (it loads like any zoo classifier; zeros
compress well in git) and its card records the sparsity, test accuracy and how often it
agrees with its original on the test split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from engine.core.errors import ConfigError
from engine.core.files import load_weights
from engine.datasets import get_dataset
from engine.models import zoo
from engine.models.measure import accuracy, ms_per_image
from engine.models.provenance import command_line, stamp


def prune_(module: torch.nn.Module, amount: float) -> float:
    """Zero the `amount` share of smallest-magnitude conv and linear weights, in place;
    returns the share of those weights that are zero afterwards."""
    weights = [
        m.weight for m in module.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))
    ]
    flat = torch.cat([w.detach().abs().flatten() for w in weights])
    k = int(amount * len(flat))
    if k == 0:
        return 0.0
    cut = flat.kthvalue(k).values
    with torch.no_grad():
        for w in weights:
            w.mul_((w.abs() > cut).to(w.dtype))
    return float(sum(int((w == 0).sum()) for w in weights) / len(flat))


def compress_classifier(
    name: str,
    amount: float = 0.7,
    dataset: str = "mnist",
    out: Path | None = None,
    twin: str | None = None,
) -> dict[str, Any]:
    """Write the pruned twin of zoo classifier `name`; returns its card."""
    if not 0 < amount < 1:
        raise ConfigError(f"amount={amount}, expected a share of weights in (0, 1), e.g. 0.7")
    card = zoo.load_card(name, out)
    if card.get("kind") != "classifier":
        raise ConfigError(f"zoo model {name!r} is a {card.get('kind')}, not a classifier")
    module = zoo.build_classifier_module(card)
    load_weights(module, (out or zoo.models_dir()) / name)
    sparsity = prune_(module.eval(), amount)
    twin = twin or f"{name}-pruned{round(amount * 100)}"
    new = {
        "name": twin,
        "kind": "classifier",
        "architecture": card["architecture"],
        "dataset": card["dataset"],
        "default": False,
        "params": card["params"],
        "parameters": card["parameters"],
        "compressed_from": {"name": name, "sha256": card["sha256"]},
        "compression": {
            "method": "global magnitude pruning, no fine-tuning",
            "amount": amount,
            "sparsity": round(sparsity, 4),
        },
        "training": {"command": command_line()},
        **stamp(),
    }
    folder = zoo.save_model(module, new, out, fp16=True)
    test = get_dataset(dataset).load("test")
    a = zoo.load_classifier(name, dataset, root=out)
    b = zoo.load_classifier(twin, dataset, root=out)
    with torch.inference_mode():
        agree = float(
            (a.logits(test.images).argmax(1) == b.logits(test.images).argmax(1)).float().mean()
        )
    new = zoo.load_card(twin, out)
    new["metrics"] = {
        "test_accuracy": accuracy(b.logits, test.images, test.labels),
        "test_images": len(test),
        "original_test_accuracy": card.get("metrics", {}).get("test_accuracy"),
        "agreement_with_original": round(agree, 4),
    }
    probe = test.images[:25]
    new["inference"] = {
        f"ms_per_image_b{n}": round(ms_per_image(lambda k: b.logits(probe[:k]), n), 4)
        for n in (1, 25)
    }
    (folder / zoo.CARD).write_text(json.dumps(new, indent=2) + "\n")
    return new
