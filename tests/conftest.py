"""Shared fixtures. Campaign tests run on the committed MNIST zoo (small, fast on CPU)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from engine.home import MODELS_DIR

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _threads():
    # Keep CI's 2 cores predictable and tests deterministic.
    torch.set_num_threads(2)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """Environment for subprocesses of the CLI."""
    return {**os.environ, "LATENTFUZZ_HOME": str(home), "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="session")
def zoo_root() -> Path:
    return Path(MODELS_DIR)
