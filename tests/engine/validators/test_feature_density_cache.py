"""feature-density's fit (training features through the default classifier) is kept in
the home's cache: a second campaign, or `latentfuzz validate`, reads it back instead of
fitting again; a damaged or foreign file is fitted again, never trusted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from engine.datasets import get_dataset
from engine.validators import VALIDATORS, feature_density, references


def counting(monkeypatch) -> list[int]:
    fits: list[int] = []
    real = feature_density.fit

    def fit(*a, **kw):
        fits.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(feature_density, "fit", fit)
    return fits


def build(cache: Path):
    return VALIDATORS.get("feature-density")(None, get_dataset("mnist"), None, cache=cache)


def test_a_second_filter_reads_the_fit_back_from_the_home(tmp_path, monkeypatch, small_fit):
    # Fits of 100 training and 50 test images: this test fits four times.
    monkeypatch.setattr(feature_density, "FIT_IMAGES", 100)
    monkeypatch.setattr(references, "REFERENCE_IMAGES", 50)
    fits = counting(monkeypatch)
    first = build(tmp_path)
    (saved,) = (tmp_path / "feature-density").glob("*.npz")
    feature_density._FITS.clear()  # a new process: only the home remembers
    second = build(tmp_path)
    assert len(fits) == 1
    assert torch.equal(first.train, second.train) and first.threshold == second.threshold
    assert len(first.train) == 100 and len(first.train) < len(get_dataset("mnist").load("train"))
    # Another home has no fit yet; a damaged file is fitted again, and replaced.
    feature_density._FITS.clear()
    build(tmp_path / "other")
    assert len(fits) == 2
    saved.write_bytes(b"PK\x03\x04 not a fit")
    feature_density._FITS.clear()
    build(tmp_path)
    assert len(fits) == 3
    feature_density._FITS.clear()
    build(tmp_path)  # the replaced file is read back
    assert len(fits) == 3
    # A valid archive of the wrong shapes is not a fit either.
    np.savez(saved, train=np.zeros((3, 4, 5)), scale=np.ones(1), test_scores=np.ones(3))
    feature_density._FITS.clear()
    build(tmp_path)
    assert len(fits) == 4
