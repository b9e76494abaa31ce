"""Fine-tuning draws everything from the run's generator: dropout included."""

from __future__ import annotations

import torch

from engine.models import zoo
from engine.repair.finetune import finetune, parent_module
from engine.repair.mix import Mix


def tuned(seed: int) -> dict[str, torch.Tensor]:
    card = zoo.load_card("mnist-convnet")
    module = parent_module(card, zoo.model_folder("mnist-convnet"))
    g = torch.Generator().manual_seed(99)
    data = Mix(torch.rand(12, 1, 28, 28, generator=g), torch.arange(12) % 10, 12)
    rng = torch.Generator().manual_seed(seed)
    list(finetune(module, data, 1, 1e-3, 6, rng, torch.device("cpu")))
    return module.state_dict()


def test_same_seed_same_weights_other_seed_others() -> None:
    torch.manual_seed(1)
    a = tuned(0)
    torch.manual_seed(2)  # the global generator's state must not matter
    b = tuned(0)
    c = tuned(1)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
