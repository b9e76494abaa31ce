"""`latentfuzz study --strategies`: search strategies compared at an equal evaluation budget.

Every strategy runs as an ordinary campaign with the same dataset, generator, seeds and
random seed (so the same seed images, drawn first from the campaign's generator), tagged
with the study id. The budget is the GA's per seed at its generation budget, P + (P - E)
x (G - 1) evaluations, and every strategy is set exactly that budget
(``Strategy.with_budget``): its ``evaluations`` setting, and the fewest generations that
reach it, the last one cut short to it (BUDGET_RULE, engine/search/strategies/base.py).
So a seed that searches to the end costs the same under every strategy, and Compare
blocks the study's campaigns by that setting (dashboard/compare.py). The table joins each
campaign's ICST figures with its stored metrics (engine/campaign/metrics.py), so
``latentfuzz study --show ID`` reprints it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from engine.campaign.runner import CampaignResult
from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.home import db_path
from engine.core.ids import timestamped_id
from engine.search.strategies import STRATEGIES
from engine.studies.grid import run_grid
from engine.studies.spec import GridSpec
from store import Store
from store import studies as ss


def evaluation_budget(generations: int) -> int:
    """The GA's per-seed evaluation budget at its default population and elites."""
    ga = STRATEGIES.get("ga")
    return ga.budget(ga.Params(generations=generations))


def check_strategies(strategies: list[str]) -> list[str]:
    """The names as given, or ConfigError naming the unknown ones and the known."""
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        raise ConfigError(
            f"--strategies {','.join(strategies)!s}: unknown {unknown}; expected a "
            f"comma-separated list of {', '.join(STRATEGIES.names())}"
        )
    return strategies


def strategy_configs(
    strategies: list[str],
    seeds: int,
    seed: int,
    generations: int,
    dataset: str,
    generator: str,
    study: str,
) -> list[tuple[str, dict]]:
    """One raw campaign config per strategy, each set exactly the GA's evaluation budget
    per seed at `generations`."""
    check_strategies(strategies)
    budget = evaluation_budget(generations)
    out = []
    for name in strategies:
        params = STRATEGIES.get(name).with_budget(budget, {})
        out.append(
            (
                name,
                {
                    "dataset": dataset,
                    # The pixel baselines search their own space, whatever the study's.
                    "generator": STRATEGIES.get(name).generator_family or generator,
                    "seeds": seeds,
                    "seed": seed,
                    "strategy": name,
                    "strategy_params": params,
                    "name": f"{study} {name}",
                },
            )
        )
    return out


def run_strategy_study(
    home: Path,
    strategies: list[str],
    seeds: int = 30,
    generations: int = 250,
    seed: int = 1,
    dataset: str = "mnist",
    generator: str = "vae",
    on_campaign: Callable[[str, CampaignResult], None] | None = None,
    models_root: Path | None = None,
    workers: int = 0,
) -> tuple[str, pd.DataFrame]:
    """Run one campaign per strategy as a grid with a strategy axis (engine/studies/grid.py,
    `workers` processes at a time, 0: in this process); returns the study id and its
    table."""
    study = timestamped_id("study-")
    raws = dict(strategy_configs(strategies, seeds, seed, generations, dataset, generator, study))
    base = {"dataset": dataset, "generator": generator, "seeds": seeds, "seed": seed}

    def derive(
        raw: dict,
    ) -> dict:  # each strategy set the GA's evaluation budget, on its own generator
        own = raws[raw["strategy"]]
        return {**raw, "generator": own["generator"], "strategy_params": own["strategy_params"]}

    spec = GridSpec(study, base, {"strategy": list(strategies)}, derive=derive)

    def done(cell, res: CampaignResult) -> None:
        if on_campaign:
            on_campaign(cell.values["strategy"], res)

    run = run_grid(spec, home, workers=workers, models_root=models_root, on_done=done)
    if run.failed:
        raise LatentfuzzError(
            "; ".join(f"{c}: {e}" for c, e in run.failed.items()) + f" (grid {run.folder})"
        )
    return study, ss.strategy_table(Store(db_path(home)), study)
