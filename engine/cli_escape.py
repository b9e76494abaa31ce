"""`latentfuzz escape`: SINVAD's class-escape matrix, run and printed (or exported)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli_common import HomeOpt, console, err
from engine.cli_common import open_store as _store
from engine.errors import LatentfuzzError


def register(app: typer.Typer) -> None:
    app.command()(escape)


def escape(
    generator: Annotated[str, typer.Option(help="zoo generator or family")] = "vae",
    per_pair: Annotated[
        int, typer.Option(help="targeted searches per (source, target) class pair")
    ] = 5,
    dataset: Annotated[str | None, typer.Option(help="dataset name [mnist]")] = None,
    classifier: Annotated[
        str | None, typer.Option(help="zoo classifier or TorchScript file")
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="search strategy (sinvad: SINVAD's own analysis)")
    ] = "sinvad",
    perturbation: Annotated[
        str | None, typer.Option(help="GA step preset: low | high | strong [strong]")
    ] = None,
    generations: Annotated[
        int | None, typer.Option(help="generation budget per search [250]")
    ] = None,
    source: Annotated[
        int | None, typer.Option(help="one source class only (one row of the matrix)")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="random seed [0]")] = None,
    name: Annotated[str | None, typer.Option(help="campaign name")] = None,
    csv: Annotated[Path | None, typer.Option(help="write the matrix as CSV here")] = None,
    campaign: Annotated[
        str | None,
        typer.Option(help="print (and --csv export) the matrix of this campaign; no new run"),
    ] = None,
    home: HomeOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
) -> None:
    """Class-escape matrix: targeted searches from every source class to every other
    class, as one campaign; prints success rates and median iterations per pair."""
    from engine.cli import run

    if campaign is None:
        campaign = run(
            dataset=dataset, generator=generator, classifier=classifier, strategy=strategy,
            perturbation=perturbation, generations=generations, target_class=source,
            escape_per_pair=per_pair, seed=seed, name=name, home=home, quiet=quiet,
            no_individuals=True,
        ).campaign_id  # fmt: skip
    show_matrix(campaign, home, csv)


def show_matrix(cid: str, home: Path | None, csv: Path | None) -> None:
    from engine.csv_io import to_csv
    from engine.datasets import get_dataset
    from engine.escape import escape_table, grid
    from store import queries

    store = _store(home)
    c = queries.campaign(store, cid)
    if c is None:
        raise LatentfuzzError(f"no campaign {cid!r}; `latentfuzz campaigns` lists them")
    names = get_dataset(c["dataset"]).class_names
    df = escape_table(store, cid, names)
    if df.empty:
        raise LatentfuzzError(
            f"campaign {cid} has no per-seed targets, so no escape matrix; run "
            "`latentfuzz escape` (or give escape_per_pair) to make one"
        )
    rate = grid(df, "success_rate", names)
    its = grid(df, "median_iterations", names)
    table = _table(rate, its)
    table.title = "class escape: success rate (median iterations), from source to target"
    console.print(table)
    console.print(
        f"campaign {cid}: mean success rate {df['success_rate'].mean():.2f} over "
        f"{len(df)} pairs, {int(df['viable'].sum())} viable searches",
        soft_wrap=True,
    )
    if csv is not None:
        to_csv(df, csv)
        err.print(f"wrote {csv} ({len(df)} pairs)", markup=False, highlight=False, soft_wrap=True)


def _table(rate, its):
    import pandas as pd
    from rich.table import Table

    t = Table()
    t.add_column("from \\ to", no_wrap=True)
    for col in rate.columns:
        t.add_column(str(col), justify="right")
    for src in rate.index:
        cells = []
        for tgt in rate.columns:
            r, i = rate.loc[src, tgt], its.loc[src, tgt]
            cells.append("" if pd.isna(r) else f"{r:.2f}" + ("" if pd.isna(i) else f" ({i:.0f})"))
        t.add_row(str(src), *cells)
    return t
