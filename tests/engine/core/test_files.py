"""engine/core/files.py: a module's weights file and a file's SHA-256."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from torch import nn

from engine.core.files import WEIGHTS, load_weights, save_weights, sha256


def test_sha256_is_hashlibs_over_the_whole_file(tmp_path: Path):
    p = tmp_path / "blob"
    data = bytes(range(256)) * 9000  # over one 1 MiB chunk
    p.write_bytes(data)
    assert sha256(p) == hashlib.sha256(data).hexdigest()


def test_weights_round_trip_as_fp16_then_load_as_fp32(tmp_path: Path):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    path = save_weights(net, tmp_path)
    assert path == tmp_path / WEIGHTS and path.is_file()
    other = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    load_weights(other, tmp_path)
    for (k, a), b in zip(net.state_dict().items(), other.state_dict().values(), strict=True):
        assert b.dtype == a.dtype, k  # floats back as fp32, the batch count as int64
        assert torch.allclose(a.float(), b.float(), atol=1e-3), k


def test_full_precision_weights_load_exactly(tmp_path: Path):
    net = nn.Linear(5, 2)
    save_weights(net, tmp_path, fp16=False)
    other = nn.Linear(5, 2)
    load_weights(other, tmp_path)
    assert torch.equal(net.weight, other.weight) and torch.equal(net.bias, other.bias)
