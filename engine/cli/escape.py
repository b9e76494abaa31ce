"""`latentfuzz escape`: SINVAD's class-escape matrix, run and printed (or exported)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.text import Text

from engine.cli.common import (
    HomeOpt,
    Table,  # class names are the dataset's text, not markup
    console,
    err,
)
from engine.cli.common import open_store as _store
from engine.cli.run import run
from engine.core.errors import LatentfuzzError


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
    fitness: Annotated[
        str | None,
        typer.Option(help="escape: SINVAD's Eq. 4 [default]; targeted: the logit margin"),
    ] = None,
    perturbation: Annotated[
        str | None, typer.Option(help="GA step preset: low | high | strong [strong]")
    ] = None,
    generations: Annotated[
        int | None, typer.Option(help="generation budget per search [the strategy's; sinvad: 500]")
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
    stability: Annotated[
        bool,
        typer.Option(
            "--stability",
            help="also print how stable the ranking of pairs is per attempts per pair "
            "(a bootstrap over the campaign's attempts)",
        ),
    ] = False,
    home: HomeOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar")] = False,
) -> None:
    """Class-escape matrix: targeted searches from every source class to every other
    class, as one campaign; prints success rates and median iterations per pair."""
    if campaign is None:
        campaign = run(
            dataset=dataset,
            generator=generator,
            classifier=classifier,
            strategy=strategy,
            fitness=fitness,
            target_class=source,
            escape_per_pair=per_pair,
            seed=seed,
            name=name,
            home=home,
            quiet=quiet,
            no_individuals=True,
            strategy_params={"perturbation": perturbation, "generations": generations},
        ).campaign_id
    show_matrix(campaign, home, csv, stability)


def show_matrix(cid: str, home: Path | None, csv: Path | None, stability: bool = False) -> None:
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.core.csv_io import to_csv
    from engine.datasets import get_dataset
    from engine.studies.escape import escape_table, grid
    from store import campaigns as sc

    store = _store(home)
    c = sc.campaign(store, cid)
    if c is None:
        raise LatentfuzzError(f"no campaign {cid!r}; `latentfuzz campaigns` lists them")
    names = get_dataset(c["dataset"]).class_names
    df = escape_table(store, cid, names)
    if df.empty:
        raise LatentfuzzError(
            f"campaign {cid} has no per-seed targets, so no escape matrix; run "
            "`latentfuzz escape` (or give escape_per_pair) to make one"
        )
    # Two tables, not one of "rate (iterations)" cells: ten classes fit 80 columns.
    for column, title, spec in (
        ("success_rate", "class escape: success rate, from source (rows) to target", ".2f"),
        ("median_iterations", "median iterations of the successful searches", ".0f"),
    ):
        console.print(title, soft_wrap=True)  # a table title as wide would widen its columns
        console.print(_table(grid(df, column, names), spec))
    console.print(
        f"campaign {cid}: mean success rate {df['success_rate'].mean():.2f} over "
        f"{len(df)} pairs, {int(df['attempts'].sum())} attempts "
        f"({int(df['viable'].sum())} searched)",
        soft_wrap=True,
    )
    if stability:
        _print_stability(sc.escape_attempts(store, cid))
    if csv is not None:
        to_csv(df, csv)
        err.print(f"wrote {csv} ({len(df)} pairs)", markup=False, highlight=False, soft_wrap=True)


def _print_stability(attempts) -> None:
    # Deferred (start-up time: loads pandas and numpy).
    from engine.studies.escape import attempts_needed, ranking_stability

    st = ranking_stability(attempts)
    t = Table(
        "attempts per pair",
        "rank correlation",
        "5-95%",
        "undefined",
        "",
        title="ranking stability: Spearman correlation of the pair rankings of two "
        "bootstrap resamples",
        box=box.SIMPLE_HEAD,
    )
    for r in st.itertuples():
        defined = r.undefined < 1  # every draw ranked all pairs equal: nothing to print
        t.add_row(
            str(r.attempts),
            f"{r.rank_correlation:.2f}" if defined else "n/a",
            f"{r.low:.2f}-{r.high:.2f}" if defined else "",
            f"{r.undefined:.0%}",
            "extrapolated" if r.extrapolated else "",
        )
    console.print(t)
    need = attempts_needed(st)
    console.print(
        "attempts per pair for a rank correlation of 0.9: "
        + (str(need) if need is not None else f"more than {int(st['attempts'].max())}"),
        soft_wrap=True,
    )


def _table(g, spec: str):
    # Deferred (start-up time: loads pandas).
    import pandas as pd

    t = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    t.add_column("from \\ to", no_wrap=True)
    for col in g.columns:
        t.add_column(Text(str(col)), justify="right", no_wrap=True)
    for src in g.index:
        t.add_row(str(src), *("" if pd.isna(v) else format(v, spec) for v in g.loc[src]))
    return t
