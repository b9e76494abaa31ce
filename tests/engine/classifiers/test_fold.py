"""Batch norm folded into convolutions at inference: same outputs, one layer less."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from engine.classifiers.fold import fold_batch_norm
from engine.classifiers.zoo_nets import ConvNet, LeNet5
from engine.core.files import load_weights
from engine.datasets import get_dataset
from engine.models import zoo


def trained_like(net: nn.Module) -> nn.Module:
    """Non-trivial running statistics and affine parameters, as after training."""
    g = torch.Generator().manual_seed(0)
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g))
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.randn(n, generator=g))
            m.bias.data.copy_(torch.randn(n, generator=g))
    return net.eval()


def test_folding_keeps_the_outputs_and_removes_every_batch_norm():
    net = trained_like(ConvNet())
    ref = copy.deepcopy(net)
    assert fold_batch_norm(net) == 4
    assert not any(isinstance(m, nn.BatchNorm2d) for m in net.modules())
    x = torch.rand(16, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        torch.testing.assert_close(net(x), ref(x), rtol=1e-4, atol=1e-4)


def test_nothing_to_fold_and_training_mode_is_refused():
    assert fold_batch_norm(LeNet5().eval()) == 0
    with pytest.raises(ValueError, match="eval mode"):
        fold_batch_norm(ConvNet().train())


def test_the_zoo_classifier_is_folded_and_classifies_as_before():
    clf = zoo.load_classifier("mnist-convnet", "mnist")
    assert not any(isinstance(m, nn.BatchNorm2d) for m in clf.module.modules())
    unfolded = zoo.build_classifier_module(zoo.load_card("mnist-convnet"))
    load_weights(unfolded, zoo.models_dir() / "mnist-convnet")
    unfolded.eval()
    x = get_dataset("mnist").load("test").images[:200]
    with torch.inference_mode():
        a, b = clf.logits(x), unfolded(x)
    torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3)
    assert (a.argmax(1) == b.argmax(1)).all()
