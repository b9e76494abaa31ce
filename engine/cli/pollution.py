"""`latentfuzz pollution-study`: SINVAD's RQ3 (engine/studies/pollution.py), run and
printed as one row per pollution rate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box

from engine.cli.common import HomeOpt, Table, console, err


def row_line(r: dict) -> str:
    """One measured rate as a line, printed while the study goes on."""
    return (
        f"rate {r['rate']:g}: escape {r['escape_successes']}/{r['escape_attempts']} "
        f"(rank {r['escape_rank']}, = {r['escape_tied']}), test error {r['test_errors']}/"
        f"{r['test_of']} (rank {r['test_rank']}, = {r['test_tied']}), campaign {r['campaign']}"
    )


def register(app: typer.Typer) -> None:
    app.command("pollution-study")(pollution_study)


def pollution_study(
    pair: Annotated[
        str, typer.Option(help="SOURCE:TARGET: class SOURCE's images are relabelled TARGET")
    ] = "7:1",
    rates: Annotated[
        str, typer.Option(help="comma-separated shares relabelled; 0: the clean classifier")
    ] = "0,0.1,0.2,0.4",
    architecture: Annotated[str, typer.Option(help="classifier trained per rate")] = "lenet5",
    epochs: Annotated[int, typer.Option(help="training epochs per classifier")] = 5,
    per_pair: Annotated[
        int, typer.Option(help="escape searches per (source, target) class pair")
    ] = 2,
    generations: Annotated[
        int, typer.Option(help="generation budget per escape search (SINVAD's RQ4: 100)")
    ] = 100,
    seed: Annotated[int, typer.Option(help="training and search seed, one for every rate")] = 0,
    name: Annotated[
        str, typer.Option(help="prefix of the classifiers' names (NAME-AtoB-rRATE)")
    ] = "pollution",
    row_only: Annotated[
        bool,
        typer.Option(
            "--row-only",
            help="search only from class A (one row of the matrix): more attempts per pair "
            "for the budget; ranks then among A's pairs",
        ),
    ] = False,
    csv: Annotated[Path | None, typer.Option(help="write the table as CSV here")] = None,
    home: HomeOpt = None,
) -> None:
    """Weak spots in training data (SINVAD RQ3): train on data with a share of class A
    relabelled B, per rate; compare the escape rate A -> B with the test error A -> B."""
    # Deferred (start-up time: loads torch, pandas and the campaign runner).
    from engine.core.csv_io import to_csv
    from engine.studies.pollution import (
        PollutionStudy,
        flags_first,
        parse_pair,
        parse_rates,
        run_pollution_study,
    )

    a, b = parse_pair(pair)
    study = PollutionStudy(
        a,
        b,
        parse_rates(rates),
        architecture,
        epochs,
        per_pair,
        generations,
        seed,
        name=name,
        row_only=row_only,
    )
    df = run_pollution_study(study, home, done=lambda r: err.print(row_line(r), soft_wrap=True))
    t = Table(
        "rate",
        "relabelled",
        "test acc.",
        f"escape {a}->{b}",
        "escape rank",
        f"test error {a}->{b}",
        "test rank",
        "mean escape (pairs searched)",
        title=f"pollution {a} -> {b}: ranks among {int(df['pairs'].iloc[0])} pairs "
        "(1 = flagged first; = n: tied with n pairs)",
        box=box.SIMPLE_HEAD,
    )
    for r in df.itertuples():
        t.add_row(
            f"{r.rate:g}",
            f"{r.relabelled} of {r.of}" if r.relabelled else "0 (clean)",
            f"{r.test_accuracy:.3f}",
            f"{r.escape_successes}/{r.escape_attempts} ({r.escape_rate:.0%})",
            f"{r.escape_rank} (= {r.escape_tied})",
            f"{r.test_errors}/{r.test_of} ({r.test_error_rate:.1%})",
            f"{r.test_rank} (= {r.test_tied})",
            f"{r.escape_mean:.2f}",
        )
    console.print(t)
    first = flags_first(df)
    console.print(
        "first rate at which the pair ranks 1: "
        + ", ".join(f"{k} {v:g}" if v is not None else f"{k} none" for k, v in first.items()),
        soft_wrap=True,
    )
    if csv is not None:
        to_csv(df, csv)
        err.print(f"wrote {csv} ({len(df)} rates)", markup=False, highlight=False, soft_wrap=True)
