"""User TorchScript classifiers: each way a file can be wrong gets its own clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from engine.classifiers import load_torchscript
from engine.core.errors import ModelError

SHAPE = (1, 28, 28)


class Linear(nn.Module):
    def __init__(self, d_in: int = 784, k: int = 10) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.flatten(1))


class NaNOut(Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.flatten(1)) * float("nan")


class BatchDependent(Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.flatten(1)) + x.shape[0]


class Unbatched(Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.flatten(1)).sum(0, keepdim=True)


def save(tmp_path: Path, module: nn.Module, name: str = "m.pt") -> Path:
    path = tmp_path / name
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


def test_valid_file_loads_and_classifies(tmp_path: Path):
    clf = load_torchscript(save(tmp_path, Linear()), SHAPE, 10, "mnist")
    out = clf.logits(torch.rand(5, *SHAPE))
    assert out.shape == (5, 10)


def test_wrong_input_shape(tmp_path: Path):
    path = save(tmp_path, Linear(d_in=3 * 32 * 32))
    with pytest.raises(ModelError, match=r"failed on mnist images of shape \(B, 1, 28, 28\)"):
        load_torchscript(path, SHAPE, 10, "mnist")


def test_wrong_class_count(tmp_path: Path):
    with pytest.raises(ModelError, match="returns 7 classes, dataset mnist has 10"):
        load_torchscript(save(tmp_path, Linear(k=7)), SHAPE, 10, "mnist")


def test_nan_outputs(tmp_path: Path):
    with pytest.raises(ModelError, match="NaN or infinite"):
        load_torchscript(save(tmp_path, NaNOut()), SHAPE, 10, "mnist")


def test_corrupt_file(tmp_path: Path):
    path = tmp_path / "broken.pt"
    path.write_bytes(b"PK\x03\x04 definitely not a torchscript archive")
    with pytest.raises(
        ModelError, match="could not load .*broken.pt as TorchScript.*torch.jit.save"
    ):
        load_torchscript(path, SHAPE, 10, "mnist")


def test_plain_state_dict_is_not_torchscript(tmp_path: Path):
    path = tmp_path / "weights.pt"
    torch.save(Linear().state_dict(), path)
    with pytest.raises(ModelError, match="as TorchScript"):
        load_torchscript(path, SHAPE, 10, "mnist")


def test_missing_file(tmp_path: Path):
    with pytest.raises(ModelError, match="does not exist"):
        load_torchscript(tmp_path / "nope.pt", SHAPE, 10, "mnist")


def test_batch_support_is_required(tmp_path: Path):
    with pytest.raises(ModelError, match="batch support is required"):
        load_torchscript(save(tmp_path, Unbatched()), SHAPE, 10, "mnist")
    with pytest.raises(ModelError, match="batches of 1 and 3"):
        load_torchscript(save(tmp_path, BatchDependent(), "b.pt"), SHAPE, 10, "mnist")


def test_checked_wrapper_rejects_bad_runtime_input(tmp_path: Path):
    clf = load_torchscript(save(tmp_path, Linear()), SHAPE, 10, "mnist")
    with pytest.raises(ModelError, match=r"expected \(B, 1, 28, 28\)"):
        clf.logits(torch.rand(2, 3, 28, 28))
    with pytest.raises(ModelError, match="NaN"):
        clf.logits(torch.full((2, *SHAPE), float("nan")))


def test_probe_checks_are_the_base_classs_own():
    """Both loaders hand their probe's outputs to one check in the base."""
    from engine.classifiers.base import check_probe

    good = torch.zeros(3, 10)
    check_probe("m.pt", good, good[:1], 10, "mnist", "the fix")
    with pytest.raises(ModelError, match=r"m.pt returned tuple for a batch of 3, .* the fix"):
        check_probe("m.pt", (good,), good[:1], 10, "mnist", "the fix")
    with pytest.raises(ModelError, match=r"\(2, 10\) for a batch of 1, expected \(1, 10\)"):
        check_probe("m.pt", good, torch.zeros(2, 10), 10, "mnist", "the fix")
    with pytest.raises(ModelError, match="NaN or infinite logits on valid mnist images"):
        check_probe("m.pt", good, torch.full((1, 10), float("inf")), 10, "mnist", "the fix")
