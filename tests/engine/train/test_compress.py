"""The compressed twin: global magnitude pruning, carded, loadable as any zoo classifier."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from engine.core.errors import ConfigError
from engine.models import zoo
from engine.train.compress import compress_classifier, prune_


def test_prune_zeros_the_stated_share_of_the_smallest_weights():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(20, 30), torch.nn.Linear(30, 5))
    before = [m.weight.detach().clone() for m in net]
    sparsity = prune_(net, 0.6)
    assert sparsity == pytest.approx(0.6, abs=0.01)
    kept = torch.cat([m.weight.detach().abs().flatten() for m in net])
    dropped = torch.cat([b.abs().flatten() for b in before])[kept == 0]
    assert dropped.max() <= kept[kept > 0].min()  # global: the smallest anywhere go first


def test_the_twin_is_carded_and_loads_from_the_zoo(tmp_path: Path):
    root = tmp_path / "zoo"
    shutil.copytree(zoo.models_dir() / "mnist-convnet", root / "mnist-convnet")
    card = compress_classifier("mnist-convnet", 0.5, out=root)
    assert card["name"] == "mnist-convnet-pruned50" and card["compression"]["sparsity"] >= 0.5
    assert 0.9 < card["metrics"]["agreement_with_original"] <= 1.0
    clf = zoo.load_classifier("mnist-convnet-pruned50", "mnist", root=root)
    assert clf.logits(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    with pytest.raises(ConfigError, match="expected a share of weights"):
        compress_classifier("mnist-convnet", 1.5, out=root)


def test_the_bundled_twin_is_what_its_card_says():
    card = zoo.load_card("mnist-convnet-pruned80")
    assert card["compressed_from"]["sha256"] == zoo.load_card("mnist-convnet")["sha256"]
    clf = zoo.load_classifier("mnist-convnet-pruned80", "mnist")
    w = [
        m.weight for m in clf.module.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))
    ]
    zeros = sum(int((x == 0).sum()) for x in w) / sum(x.numel() for x in w)
    assert zeros == pytest.approx(card["compression"]["sparsity"], abs=0.002)
