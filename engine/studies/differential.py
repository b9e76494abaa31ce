"""`latentfuzz diff-study`: DiffGAN's NSGA-II against a single-objective GA baseline.

For each classifier pair (A, B) and each repetition r (random seed r), campaigns with the
same generator, seeds and seed images: ``nsga2`` (divergence and diversity, DiffGAN's
first population), ``ga`` with the ``divergence`` fitness, and with ``ablation``
``nsga2-divergence`` (DiffGAN's ablation: NSGA-II on divergence alone, strategy parameter
``objectives: divergence``). All search on after the first triggering input
(``stop_at_failure`` off) and archive every distinct one, at the same number of
evaluations per search (``Strategy.with_budget``), and score their archives with every
validity filter that applies to the generator. The table gives, per pair and method, the
mean and standard deviation over repetitions of the triggering inputs, the valid ones,
and the geometric diversity, Shannon diversity and label-pair entropy of the valid ones
(engine/campaign/triggering.py, engine/search/diversity.py). The geometric diversity is
measured as ``spec`` says; campaigns close with DiffGAN's, and another is measured again
over the finished campaigns' archives.

The study is a grid (engine/studies/grid.py) with a pair, a repetition (the random seed)
and a method axis, run in this process, cell after cell; its folder is
``<home>/grids/<study>``, and the grid runner handles Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.home import db_path, resolve_home
from engine.core.ids import ID_PATTERN, timestamped_id
from engine.core.untrusted import quote
from engine.search.diversity import GeometricSpec, extractor
from engine.search.strategies import STRATEGIES
from engine.studies.grid import run_grid
from engine.studies.spec import MAX_CELLS, MAX_NAME, GridSpec
from store import Store
from store.differential import differential_table

METHODS = ("nsga2", "ga")
#: DiffGAN's ablation, run beside METHODS with ``ablation``: NSGA-II on divergence alone.
ABLATION = "nsga2-divergence"
#: Each method's strategy and its own parameters.
STRATEGY_OF = {"nsga2": "nsga2", "ga": "ga", ABLATION: "nsga2"}
FIGURES = (
    "triggering",
    "valid_triggering",
    "geometric_diversity",
    "shannon_diversity",
    "label_entropy",
)
#: The pair axis of the study's grid: [A, B], set as classifier and classifier_b.
PAIR = "pair"


def method_params(method: str, evaluations: int, population: int, embedding: str) -> dict[str, Any]:
    """A method's strategy parameters: the same population, searching on after the first
    triggering input, at `evaluations` per search."""
    own = {
        "nsga2": {"embedding": embedding},
        "ga": {"elites": max(2, population // 5)},
        ABLATION: {"embedding": embedding, "objectives": "divergence"},
    }
    raw = {"population": population, "stop_at_failure": False, **own[method]}
    return STRATEGIES.get(STRATEGY_OF[method]).with_budget(evaluations, raw)


def methods(ablation: bool) -> list[str]:
    return [*METHODS, ABLATION] if ablation else list(METHODS)


def study_grid(
    pairs: list[list[str]],
    generator: str,
    seeds: int,
    evaluations: int,
    population: int,
    repetitions: int,
    embedding: str,
    study: str,
    ablation: bool = False,
) -> GridSpec:
    """The study as a grid: pair x repetition x method, in the order they run (the method
    axis is named ``strategy``, as before the ablation: the cells' ids stay)."""
    if isinstance(repetitions, bool) or not 1 <= repetitions <= MAX_CELLS:
        # 0 ended in a KeyError traceback; 10^9 in a MemoryError building the axis.
        raise ConfigError(
            f"--repetitions is {quote(repetitions)}, expected 1 to {MAX_CELLS:,} "
            "(campaigns per method and pair)"
        )
    base = {"generator": generator, "fitness": "divergence", "seeds": seeds}
    axes = {
        PAIR: [list(p) for p in pairs],
        "seed": list(range(repetitions)),
        "strategy": methods(ablation),
    }

    def derive(raw: dict[str, Any]) -> dict[str, Any]:
        out = dict(raw)
        a, b = out.pop(PAIR)
        method, rep = out["strategy"], out["seed"]
        params = method_params(method, evaluations, population, embedding)
        return {
            **out,
            "strategy": STRATEGY_OF[method],
            "classifier": a,
            "classifier_b": b,
            "strategy_params": params,
            "name": f"{study} {a} vs {b} {method} #{rep}",
        }

    return GridSpec(study, base, axes, derive=derive)


def run_diff_study(
    pairs: list[list[str]],
    generator: str = "gan",
    seeds: int = 4,
    evaluations: int = 1500,
    population: int = 100,
    repetitions: int = 3,
    embedding: str = "pca",
    name: str | None = None,
    home: Path | None = None,
    models_root: Path | None = None,
    ablation: bool = False,
    spec: GeometricSpec | None = None,
) -> pd.DataFrame:
    """Run the study; returns one row per (pair, method) with means and SDs. Every cell
    is checked before any runs; Ctrl-C raises StudyStopped, saying how far it got."""
    spec = spec or GeometricSpec()
    h = resolve_home(home)
    study = name or timestamped_id("diff-")
    if not ID_PATTERN.fullmatch(study) or len(study) > MAX_NAME:
        raise ConfigError(
            f"study name {study!r} is not allowed; expected 1-{MAX_NAME} letters, digits, "
            "'.', '_' or '-', starting with a letter or digit (--name)"
        )
    grid = study_grid(
        pairs, generator, seeds, evaluations, population, repetitions, embedding, study, ablation
    )
    total = len(pairs) * repetitions * len(methods(ablation))
    try:
        run = run_grid(grid, h, workers=0, models_root=models_root)
    except KeyboardInterrupt:  # while the cells are checked, or in a campaign's start-up
        raise StudyStopped(study, 0, total) from None
    ids = run.campaign_ids()
    if run.stopped:
        raise StudyStopped(study, len(ids), total)
    if run.failed:
        raise LatentfuzzError(
            "; ".join(f"{c}: {e}" for c, e in run.failed.items()) + f" (grid {run.folder})"
        )
    store = Store(db_path(h))
    if spec != GeometricSpec():
        remeasure(store, h, ids, spec)
    table = differential_table(store, ids)
    method = {c.campaign_id(run.grid): c.values["strategy"] for c in run.cells}
    if not table.empty:
        table["method"] = table["campaign_id"].map(method)
    return summarise(table)


def remeasure(store: Store, home: Path, ids: list[str], spec: GeometricSpec) -> None:
    """Measure the geometric diversity of finished campaigns again as `spec` says (their
    validity scores stay) and store their figures."""
    # Deferred (start-up time: loads the campaign runner's models).
    from engine.campaign import triggering
    from engine.campaign.config import from_record
    from engine.campaign.resolve import resolve
    from store import campaigns as sc
    from store import differential as sd
    from store import metrics as sm

    for cid in ids:
        row, metrics = sc.campaign(store, cid), sm.metrics(store, cid)
        if row is None or metrics is None:
            continue
        r = resolve(from_record(row["config"]))
        features_of = extractor(triggering.feature_classifier(r), spec.features)
        scored = not sd.validity(store, cid).empty
        evaluations = int(metrics["evaluations"])
        seed = r.config.seed
        figs = triggering.figures(store, home, cid, evaluations, features_of, seed, scored, spec)
        sd.write_differential(store, cid, figs)


class StudyStopped(KeyboardInterrupt):
    """Ctrl-C stopped a study between or inside its campaigns."""

    def __init__(self, study: str, done: int, total: int) -> None:
        super().__init__(
            f"study {study} stopped by Ctrl-C after {done} of its {total} "
            f"campaigns; they stay in the store under the study's name"
        )


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD over repetitions of each figure, per (A, B, method); a table without a
    method column (campaigns not run by a study) groups by strategy."""
    if "method" not in df:
        df = df.assign(method=df["strategy"] if "strategy" in df else pd.Series(dtype=str))
    keys = ["classifier", "classifier_b", "method"]
    g = df.groupby(keys, sort=False)
    out = g.size().rename("runs").to_frame()
    for f in FIGURES:
        col = pd.to_numeric(df[f], errors="coerce") if f in df else pd.Series(dtype=float)
        out[f"{f}_mean"] = col.groupby([df[k] for k in keys], sort=False).mean()
        out[f"{f}_sd"] = col.groupby([df[k] for k in keys], sort=False).std()
    # Geometric diversity compares only at equal subset sizes: the table shows the range.
    sub = pd.to_numeric(
        df["geometric_subset"]
        if "geometric_subset" in df
        else pd.Series(float("nan"), index=df.index),
        errors="coerce",
    )
    out["geometric_subset_min"] = sub.groupby([df[k] for k in keys], sort=False).min()
    out["geometric_subset_max"] = sub.groupby([df[k] for k in keys], sort=False).max()
    return out.reset_index()
