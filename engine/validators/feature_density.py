"""Distance to the training data in a classifier's features as a validity filter (the
"surprise adequacy" family: Kim et al., ICSE 2019, distance-based).

The features are the penultimate layer of the dataset's default classifier (the input of
its last linear layer). The filter is fitted on the training split (up to FIT_IMAGES
evenly spaced images): their features, and a scale, the median over training images of
their mean distance to their K nearest other training images. An image's distance is its
mean Euclidean distance to its K nearest training features, divided by that scale; the
score is minus it, so higher is more valid and scores lie in (-inf, 0]. A typical training
image scores about -1.

The default threshold is measured on real images: the score that 95% of the real test
split (up to 2,000 evenly spaced images) reaches: -1.68 on MNIST with mnist-convnet (a
test digit's median is -1.01).

Fitting reads and classifies the training split, so the fit is kept in the home's cache
(``cache/feature-density``), named by the classifier's weights hash, the dataset and its
fingerprint: a second campaign, or `latentfuzz validate`, reads it back instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import torch

from engine.validators import references as ref
from engine.validators.base import VALIDATORS, Validator

#: Nearest training images averaged over.
K = 5
#: Training images the filter is fitted on (evenly spaced over the split).
FIT_IMAGES = 10_000
#: Largest fit file read back (FIT_IMAGES x 4,096 float32 features): a bigger one is not
#: ours, and is fitted again.
FIT_FILE_LIMIT = 200 << 20
#: Query rows per distance matrix (chunk x FIT_IMAGES doubles).
CHUNK = 1024

#: Fits made in this process, for the process (tests count fits by wrapping `fit`).
_FITS: dict[str, dict[str, torch.Tensor]] = {}


def knn_distance(
    queries: torch.Tensor, train: torch.Tensor, skip_self: bool = False
) -> torch.Tensor:
    """Mean Euclidean distance (N,) of features (N, F) to their K nearest rows of train
    (M, F); skip_self: queries are train itself, and each row's own zero is left out."""
    k = min(K + int(skip_self), len(train))
    out = []
    for i in range(0, len(queries), CHUNK):
        d = torch.cdist(queries[i : i + CHUNK], train).topk(k, dim=1, largest=False).values
        out.append((d[:, 1:] if skip_self else d).mean(1))
    return torch.cat(out) if out else torch.zeros(0, dtype=train.dtype)


def fit(clf, dataset) -> dict[str, torch.Tensor]:
    """Training features (M, F) float32, the distance scale and the test split's scores."""
    images, _ = ref.spaced(dataset.load("train"), FIT_IMAGES)
    train = ref.penultimate(clf, images)
    scale = knn_distance(train, train, skip_self=True).median().clamp_min(1e-12)
    test, _ = ref.spaced(dataset.load("test"))
    test_scores = -knn_distance(ref.penultimate(clf, test), train) / scale
    return {"train": train.float(), "scale": scale.reshape(1), "test_scores": test_scores}


def _key(clf_name: str, dataset) -> str:
    what = [
        "feature-density",
        clf_name,
        ref.model_hash(clf_name),
        dataset.name,
        dataset.fingerprint(),
        K,
        FIT_IMAGES,
        ref.REFERENCE_IMAGES,
    ]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]


def _read(path: Path) -> dict[str, torch.Tensor] | None:
    """The fit at `path`, or None when absent or not one we wrote (then fitted again)."""
    try:
        if path.stat().st_size > FIT_FILE_LIMIT:
            return None
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: torch.from_numpy(f[k].copy()) for k in ("train", "scale", "test_scores")}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    train, scale, scores = arrays["train"], arrays["scale"], arrays["test_scores"]
    ok = (
        train.ndim == 2
        and 0 < len(train) <= FIT_IMAGES
        and scale.shape == (1,)
        and float(scale) > 0
        and scores.ndim == 1
        and all(bool(torch.isfinite(t.double()).all()) for t in (train, scale, scores))
    )
    if not ok:
        return None
    return {"train": train.float(), "scale": scale.double(), "test_scores": scores.double()}


def _write(path: Path, fitted: dict[str, torch.Tensor]) -> None:
    with contextlib.suppress(OSError):  # a read-only or full home: fitted again next time
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.part.npz")
        np.savez(tmp, **{k: v.numpy() for k, v in fitted.items()})
        os.replace(tmp, path)


@VALIDATORS.register("feature-density")
class FeatureDensity(Validator):
    name = "feature-density"
    default_threshold = float("nan")  # measured on the real test split unless given
    describes = (
        "minus the distance to the K nearest training images in the default classifier's "
        "penultimate features (1 = a typical training image's)"
    )
    score_range = (float("-inf"), 0.0)
    by_default = False

    @classmethod
    def check(cls, generator, dataset=None) -> str | None:
        if dataset is not None and ref.default_classifier_name(dataset.name) is None:
            return (
                f"validity filter 'feature-density' needs the default classifier of dataset "
                f"{dataset.name!r} and the zoo has none; train one with `latentfuzz train "
                f"classifier --dataset {dataset.name} --default`, or pick another filter"
            )
        return None

    def __init__(self, generator, dataset, threshold: float | None = None, **context) -> None:
        super().__init__(generator, dataset, threshold, **context)
        name = ref.require(
            ref.default_classifier_name(dataset.name),
            "feature-density needs the default classifier",
            dataset.name,
            f"train one with `latentfuzz train classifier --dataset {dataset.name} --default`",
        )
        self.clf = ref.classifier(name, dataset, ref.device_of(generator))
        key = _key(name, dataset)
        path = ref.cache_folder(self.cache, "feature-density") / f"{key}.npz"
        fitted = _FITS.get(key) or _read(path)
        if fitted is None:
            fitted = fit(self.clf, dataset)
            _write(path, fitted)
        _FITS[key] = fitted
        self.train, self.scale = fitted["train"].double(), float(fitted["scale"])
        if threshold is None:
            self.threshold = ref.kept_quantile(fitted["test_scores"])

    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if not len(images):
            return torch.zeros(0, dtype=torch.float64)
        return -knn_distance(ref.penultimate(self.clf, images), self.train) / self.scale
