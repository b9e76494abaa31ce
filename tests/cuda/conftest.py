"""The device of tests/cuda: CUDA, or the CPU when `latentfuzz bench gpu --device cpu`
rehearses the plan ($LATENTFUZZ_CUDA_TESTS_DEVICE). These tests are marked `cuda`: the
default suite deselects them (pyproject.toml's addopts), `pytest -m cuda` runs them."""

from __future__ import annotations

import os

import pytest
import torch

from engine.bench.gpu import TEST_DEVICE_ENV


@pytest.fixture
def device() -> str:
    d = os.environ.get(TEST_DEVICE_ENV, "cuda")
    if d.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    return d
