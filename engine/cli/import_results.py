"""`latentfuzz import-results`: another tool's results folder as an imported campaign."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli.common import HomeOpt, console
from engine.cli.common import open_store as _store
from engine.core.home import resolve_home


def register(app: typer.Typer) -> None:
    app.command("import-results")(import_results_cmd)


def import_results_cmd(
    folder: Annotated[Path, typer.Argument(help="the tool's results folder: CSV and images")],
    dataset: Annotated[str, typer.Option(help="dataset the images belong to")],
    generator_name: Annotated[str, typer.Option(help="the tool's generator, recorded as given")],
    format: Annotated[
        str, typer.Option("--format", help="built-in mapping (engine/io/formats/NAME.yaml)")
    ] = "giftbench",
    mapping: Annotated[
        Path | None, typer.Option(help="YAML: which column is which (instead of --format)")
    ] = None,
    name: Annotated[str | None, typer.Option(help="campaign name [GENERATOR (imported)]")] = None,
    preset: Annotated[
        str | None, typer.Option(help="perturbation label, e.g. high (Compare blocks by it)")
    ] = None,
    csv: Annotated[
        str | None,
        typer.Option("--csv", help="which CSV files, a pattern relative to FOLDER [the mapping's]"),
    ] = None,
    images: Annotated[
        str | None, typer.Option(help="image folder, relative to FOLDER [the mapping's]")
    ] = None,
    pixels: Annotated[
        str | None,
        typer.Option(help="a .npy's scale: auto, '[0, 1]', '[0, 255]', '[-1, 1]', imagenet"),
    ] = None,
    id: Annotated[str | None, typer.Option("--id", help="campaign id [a fresh one]")] = None,
    max_rows: Annotated[int, typer.Option(help="most data rows read per CSV", min=1)] = 100_000,
    home: HomeOpt = None,
) -> None:
    """Import a GIFTbench-style results folder (or another tool's, with --mapping).

    The ICST study's published CSVs name images that lie elsewhere in its repository:
    give the repository as FOLDER, the CSV with --csv and its image folder with --images."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.io.import_results import ResultsMapping, builtin_mapping, import_results

    m = ResultsMapping.from_yaml(mapping) if mapping else builtin_mapping(format)
    given = {"csv": csv, "images": images, "pixels": pixels}
    m = m.with_options(**{k: v for k, v in given.items() if v is not None})
    fmt = str(mapping) if mapping else format
    res = import_results(
        _store(home),
        resolve_home(home),
        folder,
        dataset,
        generator_name,
        m,
        fmt,
        name,
        preset,
        id,
        max_rows,
    )
    images = ", ".join(f"{n} {k}" for k, n in sorted(res.kinds.items()))
    console.print(
        f"imported {res.rows} images ({images}) as campaign {res.campaign_id}: "
        f"{res.misclassified} misclassified, {res.rows - res.misclassified} survived"
    )
    if res.skipped:
        console.print(f"rows naming no image and no labels, skipped: {res.skipped}")
    if res.ignored_columns:
        console.print(
            f"columns not in the mapping, not imported: {res.ignored_columns}", markup=False
        )
