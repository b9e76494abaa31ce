"""Shared fixtures. Campaign tests run on the committed MNIST zoo (small, fast on CPU)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from engine.core.home import MODELS_DIR

REPO = Path(__file__).resolve().parent.parent


#: Modules holding the suite's longest tests (a minute or more each on the 2-core machine:
#: the documented campaign twice, the live readers, ten kills, the browser). They start
#: first, so that `make test`'s two workers (pytest-xdist) share them and neither is left
#: running one alone at the end. Only the order changes; every test stays independent.
LONGEST_FIRST = (
    "test_acceptance.py",
    "test_concurrency.py",
    "test_kill_resume.py",
    "test_browser_campaigns.py",
    "test_browser_labelling.py",
    "test_campaign_live.py",
    "test_cli.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable sort


# One torch thread in every process of the suite, here and in the campaign, CLI and
# dashboard processes it starts (they inherit this environment). Tests run beside those
# processes, a second xdist worker and a browser on 2 cores: with two threads each, OpenMP's
# workers spin waiting on each other, and the engine tests took 132 s instead of 59 s.
os.environ["OMP_NUM_THREADS"] = "1"
# Campaigns in the suite keep one fixed batch size instead of measuring it: hundreds of
# campaigns would each pay the start-up sweep (engine/campaign/batching.py), and tests that compare
# runs in different homes need the same batches. tests/engine/campaign/test_batching.py unsets it.
os.environ["LATENTFUZZ_BATCH_SIZE"] = "2048"


@pytest.fixture(autouse=True)
def _threads():
    # Predictable on CI's 2 cores, and the same arithmetic in every process.
    torch.set_num_threads(1)


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
