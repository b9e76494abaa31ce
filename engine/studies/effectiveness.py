"""`latentfuzz study`: the ICST effectiveness study for every bundled generator.

Each (generator, preset) cell is an ordinary campaign with the same number of seeds, budget
and random seed, tagged with the study id; the table is computed from the store, so
`latentfuzz study --show ID` reprints it at any time. The study is a grid (engine/studies/grid.py):
its cells run as separate processes, `--workers` at a time, and its folder is
``<home>/grids/<study id>``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from engine.campaign.runner import CampaignResult
from engine.core.home import db_path
from engine.core.ids import timestamped_id
from engine.models import zoo
from engine.studies.grid import run_grid
from engine.studies.spec import GridSpec
from store import Store
from store import metrics as sm
from store import studies as ss

FAMILY_ORDER = {"vae": 0, "gan": 1, "dm": 2}


def bundled_generators(dataset: str, root: Path | None = None) -> list[str]:
    cards = [
        c for c in zoo.list_cards(root) if c["kind"] == "generator" and c["dataset"] == dataset
    ]
    return [
        c["name"]
        for c in sorted(cards, key=lambda c: (FAMILY_ORDER.get(c["family"], 9), c["name"]))
    ]


def study_grid(
    study: str,
    seeds: int,
    generations: int,
    seed: int,
    dataset: str,
    generators: list[str],
    presets: tuple[str, ...],
) -> GridSpec:
    """The study as a grid: generator x perturbation preset on one base config."""
    base = {
        "dataset": dataset,
        "seeds": seeds,
        "seed": seed,
        "strategy_params": {"generations": generations},
    }
    return GridSpec(
        study, base, {"generator": list(generators), "strategy_params.perturbation": list(presets)}
    )


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
    workers: int = 0,
    on_failed: Callable[[str, str, str], None] | None = None,
) -> tuple[str, pd.DataFrame]:
    """Run every (generator, preset) campaign as a grid (engine/studies/grid.py: `workers`
    processes at a time; 0, the default here: one after another in this process, as before
    grids; the CLI's default is 1); returns the study id and its table. Every cell is checked before
    any runs; a failing cell is reported to `on_failed(generator, preset, error)` and the
    others go on."""
    generators = generators or bundled_generators(dataset, models_root)
    study = timestamped_id("study-")
    spec = study_grid(study, seeds, generations, seed, dataset, generators, presets)

    def cell_keys(cell) -> tuple[str, str]:
        return cell.values["generator"], cell.values["strategy_params.perturbation"]

    def done(cell, res: CampaignResult) -> None:
        if on_campaign:
            on_campaign(*cell_keys(cell), res)

    def status(cell, st: str, run) -> None:
        if st == "failed" and on_failed:
            on_failed(*cell_keys(cell), run.errors.get(cell.id, ""))

    run_grid(spec, home, workers=workers, models_root=models_root, on_status=status, on_done=done)
    return study, ss.study_table(Store(db_path(home)), study)


def study_realism(store: Store, table: pd.DataFrame) -> pd.DataFrame:
    """The study table (one row per generator x preset campaign) with each campaign's
    realism beside it: ``fid`` and ``kid`` in the default classifier's features, NOT
    Inception's (engine/campaign/realism.py), ``realism_images`` compared; missing where
    a campaign has none (its dataset has no default classifier, or it predates them)."""
    r = sm.realism_table(store, table["campaign"].tolist())
    r = r[["campaign_id", "fid", "kid", "images"]].rename(
        columns={"campaign_id": "campaign", "images": "realism_images"}
    )
    return table.merge(r, on="campaign", how="left")
