"""Images where a validity filter's answer is known: real MNIST test digits, and three
kinds that are not digits (uniform noise, blanks, and white shapes on black drawn as an
other dataset would show them)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from engine.datasets import get_dataset
from engine.validators import VALIDATORS, feature_density, references

#: Images of each kind: enough for a stable AUC, few enough to score in a second.
N = 200


def shapes(n: int, seed: int = 0) -> torch.Tensor:
    """uint8 (n, 1, 28, 28): filled circles, squares and triangles, white on black, the
    toy dataset of docs/walkthrough/make_shapes.py drawn at MNIST's size and colours."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        im = Image.new("L", (28, 28), 0)
        d = ImageDraw.Draw(im)
        r = rng.uniform(5, 11)
        cx, cy = rng.uniform(10, 18, 2)
        box = [cx - r, cy - r, cx + r, cy + r]
        if i % 3 == 0:
            d.ellipse(box, fill=255)
        elif i % 3 == 1:
            d.rectangle(box, fill=255)
        else:
            d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=255)
        out.append(np.asarray(im))
    return torch.from_numpy(np.stack(out))[:, None]


@pytest.fixture(scope="session")
def known() -> SimpleNamespace:
    test = get_dataset("mnist").load("test")
    g = torch.Generator().manual_seed(0)
    return SimpleNamespace(
        real=test.images[:N],
        labels=test.labels[:N].long(),
        noise=torch.randint(0, 256, (N, 1, 28, 28), generator=g, dtype=torch.uint8),
        blank=torch.zeros(N, 1, 28, 28, dtype=torch.uint8),
        shapes=shapes(N),
    )


@contextlib.contextmanager
def small_fits() -> Iterator[None]:
    """Filters fitted and calibrated on few images (the suite's budget: 500 training and 300
    test images), in-process fits forgotten before and after."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(feature_density, "FIT_IMAGES", 500)
        mp.setattr(references, "REFERENCE_IMAGES", 300)
        feature_density._FITS.clear()
        try:
            yield
        finally:
            feature_density._FITS.clear()


@pytest.fixture
def small_fit() -> Iterator[None]:
    with small_fits():
        yield


@pytest.fixture(scope="session")
def density(tmp_path_factory) -> Any:
    """feature-density fitted once for the session's tests (in a cache of its own)."""
    with small_fits():
        return VALIDATORS.get("feature-density")(
            None, get_dataset("mnist"), None, cache=tmp_path_factory.mktemp("cache")
        )
