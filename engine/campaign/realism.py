"""Realism per campaign: FID- and KID-style distances between a campaign's images and the
real test split, in the dataset's default classifier's penultimate features.

These are NOT Inception FIDs: the features are those of a small classifier of the
dataset (128 for mnist-convnet), not Inception-v3's 2,048, so the figures compare
campaigns of one dataset with each other and never with published FIDs. Every place that
prints them says "FID (classifier features, not Inception)".

- FID: the Fréchet distance between Gaussians fitted to the two feature sets,
  |mu_a - mu_b|^2 + Tr(C_a + C_b - 2 (C_a C_b)^1/2) (Heusel et al. 2017). It is biased
  upwards for few images: compare campaigns with similar image counts (stored beside it).
- KID: the unbiased squared MMD with the cubic polynomial kernel (x.y / d + 1)^3 (Binkowski
  et al. 2018), averaged over KID_SUBSETS random subsets of up to KID_SUBSET_SIZE images of
  each side, with its SD over subsets; unbiased, so it can be slightly negative.

Computed with numpy (the trace of the matrix square root from eigenvalues): torchmetrics
is not installed here, so its FrechetInceptionDistance with a custom feature module was
not an option without a new dependency.

A campaign's images are its seeds' result images and its archived failing inputs, each
distinct file once. The reference is up to REFERENCE_IMAGES evenly spaced test images;
their features are kept in the home's cache (``cache/realism``) and the user's
(``~/.cache/latentfuzz/realism``), named by the classifier's weights hash, the dataset's
fingerprint and torch's version.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.core.errors import LatentfuzzError
from engine.core.images import read_uint8
from engine.models import zoo
from engine.validators import references as ref
from store import Store
from store import metrics as sm

#: Test images the campaign's images are compared with (MNIST's whole test split).
REFERENCE_IMAGES = 1000
#: KID: random subsets averaged over, and images per subset per side (clean-fid's and
#: torchmetrics' defaults: 100 of 1,000), capped by the images there are.
KID_SUBSETS, KID_SUBSET_SIZE = 100, 1000
#: KID: most rows of a side its kernel matrix is built on (a seeded draw beyond; 3,000^2
#: doubles are 72 MB).
KID_MOST = 3000
#: Said beside every figure.
NOTE = "classifier features, not Inception"
#: Largest cached feature file read back (REFERENCE_IMAGES x 4,096 float64): a bigger one
#: is not ours, and is made again.
FILE_LIMIT = 64 << 20

#: Reference features and their moments, per cache key, for the process.
_REFERENCE: dict[str, tuple[np.ndarray, tuple[torch.Tensor, torch.Tensor]]] = {}


def moments(x: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean (F,) and covariance (F, F) of features x (N, F), float64."""
    t = torch.as_tensor(x, dtype=torch.float64)
    return t.mean(0), torch.cov(t.T)


def frechet(
    a: np.ndarray, b: np.ndarray, b_moments: tuple[torch.Tensor, torch.Tensor] | None = None
) -> float | None:
    """FID-style distance between features a (N, F) and b (M, F), b's `moments` where
    known; None with fewer than 2 rows on a side (no covariance)."""
    if len(a) < 2 or len(b) < 2:
        return None
    (mu_a, ca), (mu_b, cb) = moments(a), b_moments or moments(b)
    # Tr (C_a C_b)^1/2 is the sum of the square roots of C_a C_b's eigenvalues, which are
    # real and >= 0 (a product of two PSD matrices); rounding can leave tiny negative or
    # imaginary parts. No matrix square root: scipy's sqrtm warns, and is slower, on the
    # singular covariances of campaigns with fewer images than features. Torch, not numpy:
    # the campaign sets torch's threads, and numpy's OpenBLAS took 5x longer on a loaded
    # machine with its own.
    eig = torch.linalg.eigvals(ca @ cb).real.clamp_min(0)
    d = (mu_a - mu_b).square().sum() + ca.trace() + cb.trace() - 2 * eig.sqrt().sum()
    return max(float(d), 0.0)


def kernel_distance(
    a: np.ndarray, b: np.ndarray, seed: int, subsets: int = KID_SUBSETS, size: int = KID_SUBSET_SIZE
) -> tuple[float | None, float | None, int]:
    """KID-style distance of features a (N, F) and b (M, F): mean and SD of the unbiased
    squared MMD over `subsets` draws of `size` rows of each (capped by N and M; each side
    first cut to a seeded draw of KID_MOST rows); (None, None, 0) with fewer than 2 rows on
    a side."""
    m = min(size, len(a), len(b))
    if m < 2:
        return None, None, 0
    rng = np.random.default_rng(seed)
    x, y = (
        torch.as_tensor(
            v[np.sort(rng.choice(len(v), KID_MOST, replace=False))] if len(v) > KID_MOST else v,
            dtype=torch.float64,
        )
        for v in (a, b)
    )
    d = x.shape[1]

    def kernel(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return (p @ q.T / d + 1) ** 3

    kxx, kyy, kxy = kernel(x, x), kernel(y, y), kernel(x, y)
    # Every subset at once: row s of wx marks subset s's rows of x, so the sum of a
    # subset's kernel block is w K w^T, one product for all subsets.
    wx, wy = (
        torch.zeros(subsets, len(x), dtype=torch.float64),
        torch.zeros(subsets, len(y), dtype=torch.float64),
    )
    for s in range(subsets):
        wx[s, rng.choice(len(x), m, replace=False)] = 1
        wy[s, rng.choice(len(y), m, replace=False)] = 1
    xx = ((wx @ kxx) * wx).sum(1) - wx @ kxx.diagonal()
    yy = ((wy @ kyy) * wy).sum(1) - wy @ kyy.diagonal()
    xy = ((wx @ kxy) * wy).sum(1)
    values = (xx + yy) / (m * (m - 1)) - 2 * xy / m**2
    sd = float(values.std()) if subsets > 1 else None
    return float(values.mean()), sd, m


def distances(
    a: np.ndarray, b: np.ndarray, seed: int, b_moments: tuple | None = None
) -> dict[str, Any]:
    """FID and KID of features a (the campaign's) against b (the real images'), b's
    `moments` where known."""
    kid, kid_sd, m = kernel_distance(a, b, seed)
    return {
        "fid": frechet(a, b, b_moments),
        "kid": kid,
        "kid_sd": kid_sd,
        "kid_subset": m,
        "kid_subsets": KID_SUBSETS if m else 0,
        "images": len(a),
        "reference_images": len(b),
        "dim": int(b.shape[1]) if b.ndim == 2 else None,
        "note": NOTE,
    }


def _key(clf_name: str, dataset: Any) -> str:
    what = [
        "realism",
        clf_name,
        ref.model_hash(clf_name),
        dataset.name,
        dataset.fingerprint(),
        REFERENCE_IMAGES,
        torch.__version__,
    ]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]


def user_cache() -> Path:
    """The user's cache folder of latentfuzz ($XDG_CACHE_HOME, else ~/.cache)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "latentfuzz"


def _read(path: Path) -> np.ndarray | None:
    """Cached reference features, or None when absent or not ours (then made again)."""
    try:
        if path.stat().st_size > FILE_LIMIT:
            return None
        f = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    ok = f.ndim == 2 and 0 < len(f) <= REFERENCE_IMAGES and np.isfinite(f).all()
    return f.astype(np.float64) if ok else None


def reference_features(
    clf_name: str, clf: Any, dataset: Any, cache: Path | None
) -> tuple[np.ndarray, tuple[torch.Tensor, torch.Tensor]]:
    """Penultimate features (M, F) of up to REFERENCE_IMAGES test images and their moments:
    kept for the process, and the features in `cache` (the home's cache folder) where
    given."""
    key = _key(clf_name, dataset)
    if key in _REFERENCE:
        return _REFERENCE[key]
    paths = [Path(cache) / "realism" / f"{key}.npy"] if cache is not None else []
    # Also the user's cache, shared by homes (as the parsed MNIST is): the key names the
    # classifier's weights, the dataset's files and torch, so a new home reads them back
    # instead of classifying the reference images again.
    paths.append(user_cache() / "realism" / f"{key}.npy")
    feats = next((f for f in map(_read, paths) if f is not None), None)
    if feats is None:
        images, _ = ref.spaced(dataset.load("test"), REFERENCE_IMAGES)
        feats = ref.penultimate(clf, images).numpy()
    for path in paths:
        if path.exists():
            continue
        with contextlib.suppress(OSError):  # a read-only or full home: made again
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.{os.getpid()}.part.npy")
            np.save(tmp, feats)
            os.replace(tmp, path)
    _REFERENCE[key] = feats, moments(feats)
    return _REFERENCE[key]


def feature_classifier(r: Any) -> tuple[str, Any] | None:
    """The dataset's default zoo classifier (the campaign's own where it is that one), or
    None when the dataset has none (realism is then not measured)."""
    try:
        name = zoo.resolve("classifier", r.config.dataset, None)
        for clf, clf_name in (
            (r.classifier, r.classifier_name),
            (r.classifier_b, r.classifier_b_name),
        ):
            if clf is not None and clf_name == name:
                return name, clf
        return name, ref.classifier(name, r.dataset, r.config.device)
    except LatentfuzzError:
        # No default classifier, or one that does not load for this dataset (trained on
        # other files): no realism, and the campaign closes as before.
        return None


def measure(store: Store, home: Path, cid: str, r: Any) -> dict[str, Any] | None:
    """Campaign `cid`'s realism (see the module docstring), stored in its metrics row;
    None (nothing stored) where the dataset has no default classifier."""
    found = feature_classifier(r)
    if found is None:
        return None
    name, clf = found
    real, real_moments = reference_features(name, clf, r.dataset, Path(home) / "cache")
    paths = sm.realism_images(store, cid)
    images = (
        torch.from_numpy(np.stack([read_uint8(Path(home) / p) for p in paths])) if paths else None
    )
    feats = ref.penultimate(clf, images).numpy() if paths else np.zeros((0, real.shape[1]))
    out = {
        **distances(feats, real, r.config.seed, real_moments),
        "features": f"penultimate of {name}",
    }
    # JSON has no NaN or infinity: stored as null.
    out = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
    sm.write_realism(store, cid, out)
    return out
