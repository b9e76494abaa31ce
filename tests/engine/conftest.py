"""Fixtures for engine tests: a tiny zoo of untrained generators of every family."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.generators import GENERATORS
from engine.models import zoo

TINY = {
    "vae": {"hidden": 32, "latent": 8},
    "gan": {"latent": 8, "width": 8},
    "dm": {"channels": [8, 8], "steps": 2, "guidance": 1.5},
}


class LeftIsZero(nn.Module):
    """A toy classifier: class 0 when the left half is brighter than the right, else 1.
    Untrained generators make both about equally often, so seeds are viable at random."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x[..., :14].mean(dim=(1, 2, 3)) - x[..., 14:].mean(dim=(1, 2, 3))
        logits = torch.zeros(x.shape[0], 10)
        logits[:, 0] = 400 * d
        logits[:, 1] = -400 * d
        return logits


@pytest.fixture(scope="module")
def tiny_zoo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("zoo")
    for family, params in TINY.items():
        torch.manual_seed(0)
        gen = GENERATORS.get(family)((1, 28, 28), 10, **params)
        if family == "vae":
            # Untrained, every digit would encode to nearly one latent and decode to one
            # image; spread the latents as a trained encoder would and drop the output bias.
            torch.nn.init.zeros_(gen.dec2.bias)
            gen.mu.weight.data.mul_(60)
        card = {
            "name": f"mnist-{family}",
            "kind": "generator",
            "family": family,
            "dataset": "mnist",
            "params": {"image_shape": [1, 28, 28], "num_classes": 10, **params},
            "latent_bounds": [-3.0, 3.0],
        }
        zoo.save_model(gen, card, root)
    torch.jit.save(torch.jit.script(LeftIsZero()), str(root / "toy.pt"))
    shutil.copytree(zoo.models_dir() / "mnist-convnet", root / "mnist-convnet")
    return root
