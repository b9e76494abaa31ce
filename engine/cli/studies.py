"""`latentfuzz study`: the ICST effectiveness study (every bundled generator x preset) or,
with --strategies, search strategies compared at an equal evaluation budget."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli.common import HomeOpt, Table, console, err, fmt, status_line
from engine.cli.common import open_store as _store
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home
from engine.core.untrusted import quote


def study(
    seeds: Annotated[int, typer.Option(help="seeds per campaign")] = 20,
    generations: Annotated[int, typer.Option(help="generation budget")] = 250,
    seed: Annotated[int, typer.Option(help="random seed of every campaign")] = 1,
    dataset: str = "mnist",
    generators: Annotated[str | None, typer.Option(help="comma-separated [all bundled]")] = None,
    presets: Annotated[str, typer.Option(help="comma-separated presets")] = "low,high,strong",
    show: Annotated[str | None, typer.Option(help="only print the table of study ID")] = None,
    strategies: Annotated[
        str | None,
        typer.Option(
            help="comma-separated strategies to compare at the GA's evaluation "
            "budget, e.g. ga,sinvad,random (one generator: --generators, default vae)"
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option(help="cells at a time, each its own process (0: this process)")
    ] = 1,
    home: HomeOpt = None,
) -> None:
    """Run the ICST effectiveness study: every bundled generator x preset, same seeds and
    budget (a grid: `latentfuzz grid` runs any such grid)."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.core.csv_io import to_csv
    from engine.studies.effectiveness import run_study, study_realism
    from store import metrics as sm
    from store import studies as ss

    h = resolve_home(home)
    if strategies is not None or (show is not None and _is_strategy_study(home, show)):
        _strategy_study(
            h, home, strategies, seeds, generations, seed, dataset, generators, show, workers
        )
        return
    if show is None:

        def done(g: str, p: str, res) -> None:
            err.print(
                f"{g} {p}: {status_line(res.summary)} ({res.wall_seconds:.0f}s)", markup=False
            )

        def failed(g: str, p: str, error: str) -> None:
            err.print(f"{g} {p}: failed: {error}", markup=False, highlight=False)

        show, _ = run_study(
            h,
            seeds,
            generations,
            seed,
            dataset,
            generators.split(",") if generators else None,
            tuple(presets.split(",")),
            on_campaign=done,
            workers=workers,
            on_failed=failed,
        )
    table = ss.study_table(_store(home), show)
    if table.empty:
        known = ", ".join(ss.campaign_studies(_store(home))["study"]) or "none yet"
        raise LatentfuzzError(f"no study {quote(show)}; the studies are: {known}")
    table = study_realism(_store(home), table)  # its CSV keeps them too
    console.print(
        study_table(
            table, show, seeds=int(table["seeds"].iloc[0]), seed=seed, generations=generations
        )
    )
    features = sm.realism_table(_store(home), table["campaign"].tolist())["features"]
    console.print(realism_note(set(features.dropna())), markup=False, highlight=False)
    path = h / "studies" / f"{show}.csv"
    path.parent.mkdir(exist_ok=True)
    to_csv(table, path)  # formula cells neutralised
    console.print(f"saved {path}", markup=False)


def _is_strategy_study(home: Path | None, study_id: str) -> bool:
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import studies as ss

    return ss.strategy_table(_store(home), study_id)["strategy"].nunique() > 1


def _strategy_study(
    h: Path, home, strategies, seeds, generations, seed, dataset, generators, show, workers: int = 1
) -> None:
    """`study --strategies`: one campaign per strategy at an equal evaluation budget."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.core.csv_io import to_csv
    from engine.studies.strategy import run_strategy_study
    from store import studies as ss

    if show is None:

        def done(name: str, res) -> None:
            err.print(f"{name}: {status_line(res.summary)} ({res.wall_seconds:.0f}s)", markup=False)

        show, _ = run_strategy_study(
            h,
            [s.strip() for s in strategies.split(",") if s.strip()],
            seeds,
            generations,
            seed,
            dataset,
            (generators or "vae").split(",")[0],
            on_campaign=done,
            workers=workers,
        )
    table = ss.strategy_table(_store(home), show)
    console.print(print_table(table, show))
    path = h / "studies" / f"{show}.csv"
    path.parent.mkdir(exist_ok=True)
    to_csv(table, path)  # formula cells neutralised
    console.print(f"saved {path}", markup=False)


def study_table(df, study_id: str, seeds: int, seed: int, generations: int) -> Table:
    t = Table(
        "generator",
        "perturbation",
        "% viable seeds",
        "% misclassification (#)",
        "iterations, mean (std): viable seeds, survivors at budget",
        "iterations to failure, mean (std): failing seeds",
        "FID (classifier features, not Inception)",
        "KID (classifier features, not Inception)",
        title=f"{study_id}: {seeds} seeds per cell, {generations} generations, seed {seed}",
    )
    for r in df.itertuples():
        t.add_row(
            r.generator,
            str(r.preset),
            f"{r.viable_pct:.0f}",
            f"{fmt(r.misclassified_pct, '.0f') or 'n/a'} ({r.misclassified})",
            f"{fmt(r.iterations_icst, '.1f') or 'n/a'} "
            f"({fmt(r.iterations_icst_std, '.1f') or '-'})",
            f"{fmt(r.iterations_to_failure, '.1f') or 'n/a'} "
            f"({fmt(r.iterations_to_failure_std, '.1f') or '-'})",
            fmt(getattr(r, "fid", None), ",.1f"),
            fmt(getattr(r, "kid", None), ",.2f"),
        )
    return t


def realism_note(features: set[str]) -> str:
    """What the realism columns of the study's table measure, in words (`features`: the
    campaigns' feature names, "penultimate of mnist-convnet"): never Inception's, and how
    a campaign without them gets them."""
    return (
        "FID and KID: how far each campaign's images lie from up to 1,000 real test images "
        "in the features of the dataset's default classifier"
        + (f" ({', '.join(sorted(features))})" if features else "")
        + ", not Inception's: they compare these generators with each other, never with a "
        "published FID. Blank: no realism stored (a campaign from before it, or a dataset "
        "without a default classifier); `latentfuzz validate ID` computes it."
    )


def print_table(df, study: str) -> Table:
    """The strategy study's table for the terminal."""
    budget = df["budget"].dropna()
    t = Table(
        "strategy",
        "fitness",
        "% misclassification (#)",
        "evaluations",
        "failures / 1,000 evals",
        "error rate",
        "success rate",
        "label diversity",
        "MSE",
        "SSIM",
        "top-2 gap, results / test: median (mean)",
        "wall s",
        title=f"{study}: {int(df['seeds'].iloc[0])} seeds per strategy, "
        f"{int(budget.iloc[0]) if len(budget) else '?'} evaluations per seed at most",
    )
    for r in df.itertuples():
        t.add_row(
            r.strategy,
            str(r.fitness),
            f"{fmt(r.misclassified_pct, '.0f') or 'n/a'} ({r.misclassified})",
            str(r.evaluations),
            fmt(r.failures_per_1k, ".2f") or "n/a",
            fmt(r.error_rate, ".3f") or "n/a",
            fmt(r.success_rate, ".2f") or "n/a",
            fmt(r.label_diversity, ".2f") or "n/a",
            fmt(r.mean_mse, ".4f") or "n/a",
            fmt(r.mean_ssim, ".3f") or "n/a",
            _gaps(r),
            fmt(r.wall_seconds, ".0f") or "",
        )
    return t


def _gaps(r) -> str:
    # SINVAD reports the mean gap (0.06), the median hides a long tail: both are printed.
    def two(median, mean) -> str:
        return f"{fmt(median, '.3f') or 'n/a'} ({fmt(mean, '.3f') or 'n/a'})"

    return (
        f"{two(r.result_gap_median, r.result_gap_mean)} / {two(r.test_gap_median, r.test_gap_mean)}"
    )


def register(app: typer.Typer) -> None:
    app.command()(study)
