"""The failures a repair learns from: images a classifier gets wrong, each with the class
it should show, validated by a filter (a campaign's) or by people (a study's).

Every source gives two sets: the validated failures, and the same source's failures
without the validity filter (the "no-validity" control draws from the second). An image
is a failure when the classifier to repair misclassifies it now, whichever classifier
the campaign searched against; an image found twice (a seed's result is also in the
archive) counts once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from engine.campaign.triggering import validate as score_validity
from engine.core.errors import ConfigError
from engine.core.images import read_uint8
from engine.core.untrusted import inside, quote
from engine.datasets import get_dataset
from engine.labelling import statistics
from engine.models import zoo
from engine.validators import VALIDATORS, check_validators
from store import Store
from store import campaigns as sc
from store import differential as sd


@dataclass(frozen=True)
class Failures:
    """Images (N, C, H, W) uint8, the classes they should show (N,), and where each came
    from ("campaign/kind/ref" or "study/item")."""

    images: torch.Tensor
    labels: torch.Tensor
    refs: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.refs)

    def take(self, idx: torch.Tensor) -> Failures:
        """The failures at positions idx (K,), in that order."""
        return Failures(self.images[idx], self.labels[idx], tuple(self.refs[int(i)] for i in idx))

    def floats(self) -> torch.Tensor:
        """The images as float32 in [0, 1], as classifiers take them."""
        return self.images.float() / 255.0


@dataclass(frozen=True)
class Source:
    """What a source gave: the validated failures, all its failures (no validity filter),
    and the campaign config a fresh campaign copies (None: none to copy)."""

    valid: Failures
    unfiltered: Failures
    template: dict[str, Any] | None
    describes: dict[str, Any]


def image_hash(image: torch.Tensor) -> str:
    """A content hash of one uint8 image (C, H, W): the same pixels, the same hash."""
    return hashlib.sha256(image.contiguous().numpy().tobytes()).hexdigest()[:16]


def read_images(home: Path, paths: list[str], source: str) -> torch.Tensor:
    """uint8 images (N, C, H, W) from paths stored relative to the home; a stored path
    that leads outside it (an imported bundle's) is refused in one line."""
    arrays = []
    for p in paths:
        full = inside(home, p, "image", source=source)
        if not full.is_file():
            raise ConfigError(
                f"{source} names image {quote(p)}, which is not in {home}; the campaign "
                "folder was moved or deleted: restore it, or repair from another source"
            )
        arrays.append(read_uint8(full))
    return torch.from_numpy(np.stack(arrays)) if arrays else torch.zeros(0, dtype=torch.uint8)


def misclassified(classifier: Any, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mask (N,): the classifier's label differs from the expected one."""
    if len(labels) == 0:
        return torch.zeros(0, dtype=torch.bool)
    with torch.inference_mode():
        preds = torch.cat(
            [
                classifier.logits(images[i : i + 500].float() / 255.0).argmax(1).cpu()
                for i in range(0, len(labels), 500)
            ]
        )
    return preds != labels


def distinct(images: torch.Tensor) -> torch.Tensor:
    """Positions of the first image of each distinct content, in order."""
    seen: set[str] = set()
    keep = []
    for i in range(len(images)):
        h = image_hash(images[i])
        if h not in seen:
            seen.add(h)
            keep.append(i)
    return torch.tensor(keep, dtype=torch.long)


def thresholds(chosen: dict[str, float | None]) -> dict[str, float]:
    """Each filter's threshold in force: the one given, else the filter's default."""
    return {
        n: float(VALIDATORS.get(n).default_threshold if t is None else t) for n, t in chosen.items()
    }


def campaign_scores(
    store: Store,
    home: Path,
    cid: str,
    generator: Any,
    dataset: Any,
    chosen: dict[str, float | None],
) -> pd.DataFrame:
    """The campaign's stored validity scores of the chosen filters (kind, ref, validator,
    score), scoring first with the filters that lack a score for some image."""
    arch, res = sd.validity_inputs(store, cid)
    wanted = {("archive", int(r)) for r in arch["ref"]} | {("result", int(r)) for r in res["ref"]}
    stored = sd.validity(store, cid)
    missing = {}
    for name, threshold in chosen.items():
        have = stored[stored["validator"] == name]
        if wanted - set(zip(have["kind"], have["ref"].astype(int), strict=True)):
            missing[name] = threshold
    if missing:
        score_validity(store, home, cid, generator, dataset, missing)
        stored = sd.validity(store, cid)
    return stored[stored["validator"].isin(list(chosen))]


def from_campaign(
    store: Store,
    home: Path,
    cid: str,
    classifier: Any,
    dataset: str,
    chosen: dict[str, float | None],
) -> Source:
    """The campaign's result and archived images that ``classifier`` misclassifies and
    every chosen filter passes (at the threshold given, else its default)."""
    row = sc.campaign(store, cid)
    if row is None:
        raise ConfigError(
            f"--from-campaign {quote(cid)}: no such campaign in {home}; "
            "`latentfuzz campaigns` lists them"
        )
    if row["dataset"] != dataset:
        raise ConfigError(
            f"--from-campaign {cid} searched dataset {row['dataset']!r}, the classifier "
            f"classifies {dataset!r}; pick a campaign on {dataset}"
        )
    # The campaign's own generator: the filters judge its images against its domain.
    generator = zoo.load_generator(row["generator"])
    check_validators(chosen, generator)
    arch, res = sd.validity_inputs(store, cid)
    parts = [("archive", arch), ("result", res)]
    refs = [f"{cid}/{kind}/{int(r)}" for kind, df in parts for r in df["ref"]]
    keys = [(kind, int(r)) for kind, df in parts for r in df["ref"]]
    paths = [p for _, df in parts for p in df["image"]]
    labels = torch.tensor([int(x) for _, df in parts for x in df["label"]], dtype=torch.long)
    images = read_images(home, paths, f"campaign {cid}")
    wrong = misclassified(classifier, images, labels)
    if not bool(wrong.any()):
        raise ConfigError(
            f"--from-campaign {cid}: none of its {len(keys)} result and archived images is "
            f"misclassified by {classifier.name}; repair from a campaign that found failures"
        )
    scores = campaign_scores(store, home, cid, generator, get_dataset(dataset), chosen)
    limits = thresholds(chosen)
    ok = torch.ones(len(keys), dtype=torch.bool)
    for name, limit in limits.items():
        part = scores[scores["validator"] == name]
        score = dict(
            zip(zip(part["kind"], part["ref"].astype(int), strict=True), part["score"], strict=True)
        )
        ok &= torch.tensor([score.get(k, float("-inf")) >= limit for k in keys])
    every = Failures(images, labels, tuple(refs))
    unfiltered = every.take(wrong.nonzero().flatten())
    unfiltered = unfiltered.take(distinct(unfiltered.images))
    valid = every.take((wrong & ok).nonzero().flatten())
    valid = valid.take(distinct(valid.images))
    said = ", ".join(f"{n} >= {t:g}" for n, t in limits.items())
    if len(valid) == 0:
        raise ConfigError(
            f"--from-campaign {cid}: none of its {len(unfiltered)} failures passes the "
            f"validator ({said}); lower the threshold (NAME=THRESHOLD) or repair from "
            "another campaign"
        )
    return Source(
        valid,
        unfiltered,
        row["config"],
        {"campaign": cid, "validators": limits, "unfiltered": len(unfiltered)},
    )


def settled(verdict: Any) -> bool | None:
    """A verdict cell as True / False / None (undecided: None, or NaN after a merge)."""
    if verdict is None or (isinstance(verdict, float) and verdict != verdict):
        return None
    return bool(verdict)


#: Study items that show a searched image (not a gold-standard real one or a seed).
SEARCHED = ("result", "imported", "triggering")


def from_study(store: Store, home: Path, sid: str, classifier: Any) -> Source:
    """The study's items that people judged valid and label-preserving and that
    ``classifier`` misclassifies."""
    study, verdicts, _ = statistics.load(store, sid)
    items = verdicts[verdicts["kind"].isin(SEARCHED) & verdicts["expected"].notna()]
    decided = items["validity"].map(lambda v: settled(v) is not None)
    if not bool(decided.any()):
        raise ConfigError(
            f"--from-study {sid}: none of its {len(items)} searched images has a verdict yet "
            f"({int(study['k'])} answers each, or an adjudication); label them first "
            "(`latentfuzz labels`), or repair from a campaign"
        )
    source = f"study {sid}"
    images = read_images(home, items["image"].tolist(), source)
    labels = torch.tensor(items["expected"].astype(int).to_numpy(), dtype=torch.long)
    refs = tuple(f"{sid}/{int(i)}" for i in items["item_id"])
    wrong = misclassified(classifier, images, labels)
    good = torch.tensor(
        [
            (v is True) and (p is True)
            for v, p in zip(items["validity"], items["preservation"], strict=True)
        ],
        dtype=torch.bool,
    )
    every = Failures(images, labels, refs)
    unfiltered = every.take(wrong.nonzero().flatten())
    unfiltered = unfiltered.take(distinct(unfiltered.images))
    valid = every.take((wrong & good).nonzero().flatten())
    valid = valid.take(distinct(valid.images))
    if len(valid) == 0:
        raise ConfigError(
            f"--from-study {sid}: of its {int(decided.sum())} judged images, none is valid, "
            f"label-preserving and misclassified by {classifier.name}; label more, or repair "
            "from a campaign"
        )
    campaigns = [c for c in items["campaign_id"].dropna().unique()]
    template = None
    if campaigns:
        row = sc.campaign(store, str(campaigns[0]))
        template = None if row is None else row["config"]
    return Source(
        valid,
        unfiltered,
        template,
        {"study": sid, "rule": study["rule"], "unfiltered": len(unfiltered)},
    )
