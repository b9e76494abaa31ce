"""What the model-based filters score with: the zoo's models of a dataset, the real images
they are calibrated on, and their features.

The filters of issue 37 score any campaign's images with models of the *dataset*, not of
the campaign: the same VAE scores a GAN's and a DM's images, so that their scores compare.
Models are loaded once per process (a calibration builds a filter per study).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.core.errors import ConfigError
from engine.core.home import current_home
from engine.models import zoo
from engine.search.diversity import linear_input

#: Real test images a default threshold is measured on (evenly spaced over the split):
#: MNIST's whole test split (1,000), a fifth of CIFAR-10's.
REFERENCE_IMAGES = 2000
#: Share of real test images a calibrated default threshold lets through (as the
#: discriminator's, engine/validators/discriminator.py).
REAL_KEPT = 0.95
#: Images per forward pass.
BATCH = 512

_LOADED: dict[tuple[str, str, str], Any] = {}


def device_of(generator: Any) -> str:
    """The device the campaign runs on; the CPU where there is no generator (a study's
    imported images)."""
    return str(getattr(generator, "device", "cpu")) if generator is not None else "cpu"


def cards(kind: str, dataset: str) -> list[dict[str, Any]]:
    """The zoo's cards of `kind` for `dataset`, the default first, then by name."""
    found = [c for c in zoo.list_cards() if c.get("kind") == kind and c.get("dataset") == dataset]
    return sorted(found, key=lambda c: (not c.get("default"), c["name"]))


def default_classifier_name(dataset: str) -> str | None:
    """The dataset's default zoo classifier, or None."""
    return next((c["name"] for c in cards("classifier", dataset) if c.get("default")), None)


def independent_classifier_name(dataset: str, under_test: str | None) -> str | None:
    """A zoo classifier of the dataset other than the one under test (the default when
    none is named): one of another architecture first (mnist-convnet -> mnist-lenet5; a
    compressed twin fails where its original does), then any other; None when there is
    no other."""
    under = under_test or default_classifier_name(dataset)
    others = [c for c in cards("classifier", dataset) if c["name"] != under]
    arch = next(
        (c.get("architecture") for c in cards("classifier", dataset) if c["name"] == under), None
    )
    others.sort(key=lambda c: (arch is not None and c.get("architecture") == arch, c["name"]))
    return others[0]["name"] if others else None


def vae_name(dataset: str) -> str | None:
    """The dataset's zoo VAE (the default generator first where it is one), or None."""
    vaes = [c for c in cards("generator", dataset) if c.get("family") == "vae"]
    return vaes[0]["name"] if vaes else None


def classifier(name: str, dataset: Any, device: str) -> Any:
    """Zoo classifier `name` of `dataset`, loaded once per process and device."""
    key = ("classifier", name, device)
    if key not in _LOADED:
        _LOADED[key] = zoo.load_classifier(name, dataset.name, device)
    return _LOADED[key]


def generator(name: str, device: str) -> Any:
    """Zoo generator `name`, loaded once per process and device."""
    key = ("generator", name, device)
    if key not in _LOADED:
        _LOADED[key] = zoo.load_generator(name, device)
    return _LOADED[key]


def model_hash(name: str) -> str:
    """The SHA-256 of a zoo model's weights, from its card (names the fit in the cache)."""
    return str(zoo.load_card(name)["sha256"])


def require(name: str | None, what: str, dataset: str, fix: str) -> str:
    """`name`, or ConfigError (one line) saying the zoo has no `what` for `dataset`."""
    if name is None:
        raise ConfigError(f"{what} for dataset {dataset!r}: the zoo has none; {fix}")
    return name


def unit(images: torch.Tensor) -> torch.Tensor:
    """uint8 (or [0, 1] float) images -> float32 in [0, 1]."""
    return images.float() / 255.0 if images.dtype == torch.uint8 else images.float()


def spaced(split: Any, most: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to `most` (REFERENCE_IMAGES by default) images (N, C, H, W) uint8 and labels (N,)
    evenly spaced over a split."""
    n, most = len(split), REFERENCE_IMAGES if most is None else most
    idx = torch.linspace(0, n - 1, min(n, most)).round().long().unique()
    return split.images[idx], split.labels[idx].long()


@torch.no_grad()
def logits(clf: Any, images: torch.Tensor) -> torch.Tensor:
    """Logits (N, K) of images (N, C, H, W), batched, on the CPU."""
    out = [
        clf.logits(unit(images[i : i + BATCH]).to(clf.device)).cpu()
        for i in range(0, len(images), BATCH)
    ]
    return torch.cat(out).float() if out else torch.zeros(0, 0)


@torch.no_grad()
def penultimate(clf: Any, images: torch.Tensor) -> torch.Tensor:
    """Penultimate features (N, F) float64 of images (N, C, H, W): the input of the
    classifier's last linear layer (engine/search/diversity.py `linear_input`)."""
    if not len(images):
        return torch.zeros(0, 0, dtype=torch.float64)
    return linear_input(clf, unit(images).to(clf.device), first=False).cpu().double()


def kept_quantile(scores: torch.Tensor) -> float:
    """The score REAL_KEPT of real images reach: a default threshold measured on them."""
    return float(torch.quantile(scores.double(), 1 - REAL_KEPT))


def cache_folder(cache: Path | None, name: str) -> Path:
    """Where a filter keeps its fits: `cache` (the caller's home's cache folder), else the
    current home's."""
    return (Path(cache) if cache is not None else current_home() / "cache") / name
