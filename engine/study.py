"""`latentfuzz study`: the ICST effectiveness study for every bundled generator.

Each (generator, preset) cell is an ordinary campaign with the same number of seeds, budget
and random seed, tagged with the study id; the table is computed from the store, so
`latentfuzz study --show ID` reprints it at any time.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from engine import zoo
from engine.config import parse_config, resolve
from engine.home import db_path
from engine.runner import CampaignResult, run_campaign
from store import Store, queries

FAMILY_ORDER = {"vae": 0, "gan": 1, "dm": 2}


def bundled_generators(dataset: str, root: Path | None = None) -> list[str]:
    cards = [
        c for c in zoo.list_cards(root) if c["kind"] == "generator" and c["dataset"] == dataset
    ]
    return [
        c["name"]
        for c in sorted(cards, key=lambda c: (FAMILY_ORDER.get(c["family"], 9), c["name"]))
    ]


def run_study(
    home: Path,
    seeds: int = 20,
    generations: int = 250,
    seed: int = 1,
    dataset: str = "mnist",
    generators: list[str] | None = None,
    presets: tuple[str, ...] = ("low", "high", "strong"),
    on_campaign: Callable[[str, str, CampaignResult], None] | None = None,
    models_root: Path | None = None,
) -> tuple[str, pd.DataFrame]:
    """Run every (generator, preset) campaign; returns the study id and its table."""
    generators = generators or bundled_generators(dataset, models_root)
    study = "study-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
    # Validate every cell before running any, so a typo does not waste the first hours.
    cfgs = [
        (g, p, parse_config({"dataset": dataset, "generator": g, "seeds": seeds, "seed": seed,
                             "name": f"{study} {g} {p}",
                             "strategy_params": {"generations": generations, "perturbation": p}}))
        for g in generators for p in presets
    ]  # fmt: skip
    for _, _, cfg in cfgs:
        resolve(cfg, models_root)
    for g, p, cfg in cfgs:
        res = run_campaign(cfg, home, models_root=models_root, study=study)
        if on_campaign:
            on_campaign(g, p, res)
    return study, queries.study_table(Store(db_path(home)), study)
