"""The test-set reference of a campaign's close (engine/campaign/metrics.py) is kept in the
home's cache: the next campaign of the pair classifies no test image, gets the same figures,
and a cache file it did not write (damaged, or crafted) is made again, not believed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from engine.campaign import metrics


class Counting:
    """A classifier that counts the images it is asked about."""

    device = torch.device("cpu")

    def __init__(self) -> None:
        self.images = 0

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        self.images += len(x)
        flat = x.flatten(1)
        return torch.stack([flat.mean(1), flat.std(1), flat[:, 0]], 1)


class Split:
    """300 test images of 3 classes."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (300, 1, 4, 4), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 3, (300,), generator=g)

    def __len__(self) -> int:
        return len(self.labels)


def dataset(fingerprint: str = "fp-1"):
    return SimpleNamespace(
        num_classes=3, load=lambda name: Split(), fingerprint=lambda: fingerprint
    )


KEY = ("toy", "sha-of-classifier", False)


@pytest.fixture(autouse=True)
def _fresh_process_cache(monkeypatch):
    monkeypatch.setattr(metrics, "_REFERENCE", {})  # as a new process: only the disk cache


def test_the_next_campaign_of_the_pair_classifies_no_test_image(tmp_path: Path, monkeypatch):
    cache, first = tmp_path / "cache", Counting()
    gaps, confusion = metrics.test_reference(dataset(), first, 64, KEY, cache)
    assert first.images == 300 and len(list(cache.iterdir())) == 1
    monkeypatch.setattr(metrics, "_REFERENCE", {})
    second = Counting()
    gaps2, confusion2 = metrics.test_reference(dataset(), second, 64, KEY, cache)
    assert second.images == 0
    assert torch.equal(gaps, gaps2) and gaps2.dtype == torch.float32 and confusion == confusion2
    # Another dataset content, batch or key: another file, computed.
    for args in ((dataset("fp-2"), 64, KEY), (dataset(), 32, KEY), (dataset(), 64, ("x",))):
        monkeypatch.setattr(metrics, "_REFERENCE", {})
        third = Counting()
        d, b, k = args
        metrics.test_reference(d, third, b, k, cache)
        assert third.images == 300
    assert len(list(cache.iterdir())) == 4


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps({"gaps": [0.5], "confusion": [[1, 2], [3, 4]]}),  # 2 classes, not 3
        json.dumps({"gaps": [2.0], "confusion": [[0] * 3] * 3}),  # a gap outside [0, 1]
        json.dumps({"gaps": ["0.5"], "confusion": [[0] * 3] * 3}),
        json.dumps({"gaps": [0.5], "confusion": [[-1, 0, 0]] + [[0] * 3] * 2}),
        json.dumps({"gaps": [0.5] * 2000, "confusion": [[0] * 3] * 3}),  # more than written
        json.dumps({"gaps": [0.5], "confusion": [[0] * 3] * 3, "pad": "x" * (2 << 20)}),
        json.dumps([1, 2, 3]),
    ],
)
def test_a_cache_file_not_ours_is_made_again(tmp_path: Path, monkeypatch, content: str):
    cache = tmp_path / "cache"
    truth = metrics.test_reference(dataset(), Counting(), 64, KEY, cache)
    (path,) = cache.iterdir()
    path.write_text(content)
    monkeypatch.setattr(metrics, "_REFERENCE", {})
    again = Counting()
    gaps, confusion = metrics.test_reference(dataset(), again, 64, KEY, cache)
    assert again.images == 300  # recomputed, not believed
    assert torch.equal(gaps, truth[0]) and confusion == truth[1]
    assert json.loads(path.read_text())["confusion"] == truth[1]  # and the file replaced


def test_without_a_cache_folder_nothing_is_written(tmp_path: Path):
    metrics.test_reference(dataset(), Counting(), 64, KEY)
    assert not any(tmp_path.iterdir())
