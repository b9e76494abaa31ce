"""`latentfuzz diff-study`: DiffGAN's NSGA-II against a single-objective GA baseline.

For each classifier pair (A, B) and each repetition r (random seed r), two campaigns with
the same generator, seeds and seed images: ``nsga2`` (divergence and diversity) and ``ga``
with the ``divergence`` fitness. Both search on after the first triggering input
(``stop_at_failure`` off) and archive every distinct one, at the same number of
evaluations per search (``Strategy.with_budget``). Both score their archives with every
validity filter that applies to the generator. The table gives, per pair and method, the
mean and standard deviation over repetitions of the triggering inputs, the valid ones, and
the geometric diversity and label entropy of the valid ones (engine/campaign/triggering.py).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from engine.campaign.config import parse_config, resolve
from engine.campaign.runner import StoppedAfterClose, run_in_series
from engine.core.home import db_path, resolve_home
from engine.search.strategies import STRATEGIES
from store import Store
from store.differential import differential_table

METHODS = ("nsga2", "ga")
FIGURES = ("triggering", "valid_triggering", "geometric_diversity", "label_entropy")


def study_configs(
    pairs: list[list[str]], generator: str, seeds: int, evaluations: int, population: int,
    repetitions: int, embedding: str, study: str,
) -> list[dict]:  # fmt: skip
    """Every campaign config of the study, in the order they run."""
    own = {"nsga2": {"embedding": embedding}, "ga": {"elites": max(2, population // 5)}}
    out = []
    for a, b in pairs:
        for rep in range(repetitions):
            for method in METHODS:
                raw = {"population": population, "stop_at_failure": False, **own[method]}
                params = STRATEGIES.get(method).with_budget(evaluations, raw)
                out.append({
                    "generator": generator, "classifier": a, "classifier_b": b,
                    "strategy": method, "fitness": "divergence", "seeds": seeds, "seed": rep,
                    "strategy_params": params, "name": f"{study} {a} vs {b} {method} #{rep}",
                })  # fmt: skip
    return out


def run_diff_study(
    pairs: list[list[str]], generator: str = "gan", seeds: int = 4, evaluations: int = 1500,
    population: int = 50, repetitions: int = 3, embedding: str = "pca",
    name: str | None = None, home: Path | None = None, models_root: Path | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Run the study; returns one row per (pair, method) with means and SDs."""
    h = resolve_home(home)
    study = name or "diff-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
    raws = study_configs(
        pairs, generator, seeds, evaluations, population, repetitions, embedding, study
    )
    cfgs = [parse_config(raw) for raw in raws]
    ids: list[str] = []
    kept = 0  # a campaign that finished while Ctrl-C was held back in its close
    try:
        for cfg in cfgs:  # every cell checked before any runs
            resolve(cfg, models_root)
        for cfg in cfgs:
            try:
                ids.append(run_in_series(cfg, h, models_root=models_root, study=study).campaign_id)
            except StoppedAfterClose as e:
                kept = int(e.result.status == "finished")
                raise
    except KeyboardInterrupt:  # also in a campaign's start-up, or while the cells are checked
        raise StudyStopped(study, len(ids) + kept, len(cfgs)) from None
    return summarise(differential_table(Store(db_path(h)), ids))


class StudyStopped(KeyboardInterrupt):
    """Ctrl-C stopped a study between or inside its campaigns."""

    def __init__(self, study: str, done: int, total: int) -> None:
        super().__init__(f"study {study} stopped by Ctrl-C after {done} of its {total} "
                         f"campaigns; they stay in the store under the study's name")  # fmt: skip


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD over repetitions of each figure, per (A, B, strategy)."""
    keys = ["classifier", "classifier_b", "strategy"]
    g = df.groupby(keys, sort=False)
    out = g.size().rename("runs").to_frame()
    for f in FIGURES:
        col = pd.to_numeric(df[f], errors="coerce") if f in df else pd.Series(dtype=float)
        out[f"{f}_mean"] = col.groupby([df[k] for k in keys], sort=False).mean()
        out[f"{f}_sd"] = col.groupby([df[k] for k in keys], sort=False).std()
    # Geometric diversity compares only at equal subset sizes: the table shows the range.
    sub = pd.to_numeric(df["geometric_subset"] if "geometric_subset" in df else
                        pd.Series(float("nan"), index=df.index), errors="coerce")  # fmt: skip
    out["geometric_subset_min"] = sub.groupby([df[k] for k in keys], sort=False).min()
    out["geometric_subset_max"] = sub.groupby([df[k] for k in keys], sort=False).max()
    return out.reset_index()
