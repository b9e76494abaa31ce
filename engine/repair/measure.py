"""What a repair is judged by, for the parent and each arm: accuracy on the evaluation
part of the test split, on the failures used, and on failures of a fresh campaign it
never saw; and the misclassification rate and ICST iterations of that campaign run again,
identically, against it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.campaign.config import from_record
from engine.campaign.runner import run_in_series
from engine.core.errors import ConfigError
from engine.models.measure import accuracy
from engine.repair.failures import Failures, from_campaign
from store import Store
from store import campaigns as sc


def accuracy_on(classifier: Any, images: torch.Tensor, labels: torch.Tensor) -> float | None:
    """Share right of float images (N, C, H, W) in [0, 1]; None for no images."""
    if len(labels) == 0:
        return None
    with torch.inference_mode():
        return accuracy(classifier.logits, images, labels)


def on_failures(classifier: Any, f: Failures) -> float | None:
    """Share of failures ``classifier`` now labels with their expected class."""
    return accuracy_on(classifier, f.floats(), f.labels)


def fresh_config(
    template: dict[str, Any],
    classifier: str,
    seed: int,
    seeds: int | None,
    generations: int | None,
    name: str,
    device: str,
) -> Any:
    """The fresh campaign's config: the source campaign's, with another seed, against
    ``classifier``, with the seed count and generation budget given (None: the source's)."""
    cfg = from_record(template)
    params = dict(cfg.strategy_params)
    if generations is not None:
        params["generations"] = generations
    update: dict[str, Any] = {
        "classifier": classifier,
        "seed": seed,
        "strategy_params": params,
        "name": name,
        "device": device,
        "validators": None,  # scored by the repair, with its own filters
    }
    if seeds is not None:
        update["seeds"] = seeds
    return cfg.model_validate({**cfg.model_dump(), **update})


def run_fresh(cfg: Any, home: Path) -> tuple[str, dict[str, Any]]:
    """Run one campaign; its id, viable seeds, misclassification % and ICST iterations
    (mean over viable seeds, survivors counted at the budget)."""
    res = run_in_series(cfg, home)
    s = sc.summary(Store(home / "latentfuzz.duckdb"), res.campaign_id)
    return res.campaign_id, {
        "campaign": res.campaign_id,
        "viable": int(s["viable"]),
        "misclassified": int(s["misclassified"]),
        "misclassified_pct": s["misclassified_pct"],
        "iterations_icst": s["iterations_icst"],
    }


def fresh_failures(
    store: Store,
    home: Path,
    cid: str,
    classifier: Any,
    dataset: str,
    chosen: dict[str, float | None],
) -> Failures:
    """The fresh campaign's failures for ``classifier``, validated as the repair's were
    (all of them when no filter is chosen); none when it found none."""
    try:
        return from_campaign(store, home, cid, classifier, dataset, chosen).valid
    except ConfigError:  # found no failure, or none valid: an empty set, not an error
        empty = torch.zeros(0, dtype=torch.uint8)
        return Failures(empty, torch.zeros(0, dtype=torch.long), ())
