"""engine/core/tensors.py: the one check on tensors crossing a plug-in boundary."""

from __future__ import annotations

import pytest
import torch

from engine.core.errors import ModelError
from engine.core.tensors import check_tensor

CPU = torch.device("cpu")


def test_a_good_tensor_passes():
    check_tensor(torch.zeros(2, 3, 4), "x", (3, 4), CPU)


@pytest.mark.parametrize(
    ("x", "says"),
    [
        ([1.0, 2.0], "x: expected a torch.Tensor, got list"),
        (torch.zeros(2, 4, 3), r"x: got shape \(2, 4, 3\), expected \(B, 3, 4\)"),
        (torch.full((2, 3, 4), float("nan")), "x: contains NaN or infinite values"),
        (torch.full((1, 3, 4), float("inf")), "x: contains NaN or infinite values"),
    ],
)
def test_refusals_name_what_was_given(x, says: str):
    with pytest.raises(ModelError, match=says):
        check_tensor(x, "x", (3, 4), CPU)


def test_non_finite_values_pass_when_not_asked_about():
    check_tensor(torch.full((1, 3, 4), float("nan")), "x", (3, 4), CPU, finite=False)


def test_another_device_is_refused():
    with pytest.raises(ModelError, match="x: tensor on meta, model on cpu; move it first"):
        check_tensor(torch.zeros(2, 3, 4, device="meta"), "x", (3, 4), CPU, finite=False)
