"""`latentfuzz labels`: create, import, report and export validity studies."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from engine.cli.calibration_view import print_calibration
from engine.cli.common import HomeOpt, Table, console, fmt, one_line, warn_unfinished
from engine.cli.common import open_store as _store
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home

labels_app = typer.Typer(no_args_is_help=True, help="Validity studies: human labels.")


def _images(n: int, what: str = "") -> str:
    return f"{n} {what}image{'s' * (n != 1)}"


def _pct(v: float) -> str:
    return fmt(v, ".1f") or "n/a"  # NaN when there is nothing to divide by


@labels_app.command("create")
def create_cmd(
    campaign: Annotated[list[str], typer.Option("--campaign", help="campaign id (repeat)")],
    k: Annotated[int, typer.Option(help="answers per image")] = 2,
    sample: Annotated[int | None, typer.Option(help="result images to draw [all]")] = None,
    plan: Annotated[bool, typer.Option(help="sample size for 95% confidence, 5% margin")] = False,
    seed_images: Annotated[bool, typer.Option(help="also show the seed images")] = False,
    triggering: Annotated[
        bool, typer.Option(help="label differential campaigns' triggering inputs")
    ] = False,
    gold_rate: Annotated[float, typer.Option(help="share of gold (real) images")] = 0.1,
    rule: Annotated[str, typer.Option(help="icst | majority (k >= 3)")] = "icst",
    seed: Annotated[int, typer.Option(help="random seed of sampling, orders, bootstrap")] = 0,
    name: Annotated[str | None, typer.Option(help="study name")] = None,
    home: HomeOpt = None,
) -> None:
    """Create a study from campaigns' failing images."""
    # Deferred (start-up time: loads pydantic).
    from pydantic import ValidationError

    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.labelling.agreement import sample_size
    from engine.labelling.validity import StudyConfig, create_study, failing_seeds
    from store import campaigns as sc

    store = _store(home)
    for cid in campaign:
        c = sc.campaign(store, cid)
        if c is not None:
            warn_unfinished(home, cid, c["status"])
    if plan:
        population = len(failing_seeds(store, campaign))
        sample = sample_size(population)
        console.print(f"planner: {sample} of {population} failing images (95% confidence, 5%)")
    try:
        cfg = StudyConfig(
            campaigns=campaign,
            k=k,
            sample=sample,
            seed_images=seed_images,
            gold_rate=gold_rate,
            rule=rule,
            seed=seed,
            name=name,
            triggering=triggering,
        )
    except ValidationError as e:
        raise LatentfuzzError(str(one_line(e, flags=True))) from e
    sid = create_study(store, resolve_home(home), cfg)
    console.print(f"created {sid}; open the Label page of the dashboard to label it")


@labels_app.command("list")
def list_cmd(home: HomeOpt = None) -> None:
    """List studies, newest first."""
    # Deferred (start-up time: loads duckdb, pandas).
    from store import labels

    df = labels.validity_studies(_store(home))
    if df.empty:
        console.print("no study yet; `latentfuzz labels create` or `labels import` makes one")
        return
    t = Table("id", "name", "dataset", "source", "k", "rule", "items", "answers", "labellers")
    t.columns[0].no_wrap = True
    for r in df.itertuples():
        t.add_row(
            r.id,
            str(r.name),
            r.dataset,
            r.source,
            str(r.k),
            r.rule,
            str(r.items),
            str(r.answers),
            str(r.labellers),
        )
    console.print(t)


@labels_app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="CSV, one row per image")],
    dataset: Annotated[str, typer.Option(help="dataset whose classes the answers name")],
    mapping: Annotated[Path | None, typer.Option(help="YAML: columns and answer texts")] = None,
    name: Annotated[str | None, typer.Option(help="study name [file name]")] = None,
    encoding: Annotated[
        str | None, typer.Option(help="file encoding [from its byte-order mark, else utf-8]")
    ] = None,
    max_rows: Annotated[int, typer.Option(help="most data rows read", min=1)] = 100_000,
    again: Annotated[
        bool, typer.Option(help="import a file already imported as another study")
    ] = False,
    images: Annotated[
        Path | None,
        typer.Option(help="genai_tigs image folder (generated_images/mnist): link each row"),
    ] = None,
    verbose: Annotated[bool, typer.Option(help="list the rows --images left unlinked")] = False,
    home: HomeOpt = None,
) -> None:
    """Create a study from an external study's CSV and recompute its verdicts."""
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.labelling.importing import ImportMapping, import_csv

    if not file.exists():
        raise LatentfuzzError(f"no file {file}")
    m = ImportMapping.from_yaml(mapping) if mapping else None
    res = import_csv(
        _store(home),
        file,
        dataset,
        m,
        name,
        encoding=encoding,
        max_rows=max_rows,
        again=again,
        home=resolve_home(home),
        images=images,
    )
    if res.shape is None:
        console.print(
            f"imported {res.rows} images and {res.judgements} answers into {res.study_id} "
            f"({res.empty_cells} empty answer cells)"
        )
    else:
        console.print(
            f"imported a latentfuzz {res.shape} export: {res.rows} images, {res.judgements} "
            f"answers and {res.adjudications} adjudications into {res.study_id}"
            + (f" (not in the file, assumed: {res.assumed})" if res.assumed else "")
        )
    if res.images is not None:
        unlinked = res.images.ambiguous or res.images.missing
        hint = "; --verbose lists them" if unlinked and not verbose else ""
        console.print(Text(res.images.summary() + hint))
        for line in res.images.details() if verbose else ():
            console.print(Text(f"  {line}"))
    if res.disagreements.empty:
        console.print("the file's own verdict columns agree with ours")
    else:
        console.print(f"[yellow]{len(res.disagreements)} verdicts in the file differ from ours:")
        t = Table()
        for col in res.disagreements.columns:  # the file's own headers: text, not markup
            t.add_column(Text(str(col)))
        for r in res.disagreements.itertuples(index=False):
            t.add_row(*map(str, r))
        console.print(t)
    report_cmd(res.study_id, home=home)


@labels_app.command("report")
def report_cmd(
    study: Annotated[str | None, typer.Argument(help="study id [the latest]")] = None,
    by: Annotated[
        str,
        typer.Option(help="comma-separated: generator, preset, strategy, campaign_id, kind"),
    ] = "generator,preset",
    calibration_csv: Annotated[
        Path | None, typer.Option(help="CSV: the calibration table, when filters scored it")
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Validity and label preservation per generator x perturbation (and strategy, where
    the study's campaigns use several), and how well the validity filters scored on the
    study agree with people (`labels calibrate`)."""
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.labelling.statistics import (
        agreement_table,
        group_keys,
        key_text,
        labeller_table,
        load,
        model_agreement,
        report,
    )

    # Deferred (start-up time: loads duckdb, pandas).
    from store import labels

    store = _store(home)
    if study is None:
        df = labels.validity_studies(store)
        if df.empty:
            raise LatentfuzzError("no study yet; `latentfuzz labels create` or `labels import`")
        study = str(df.iloc[0]["id"])
    keys = tuple(c.strip() for c in by.split(","))
    table = report(store, study, keys)
    keys = tuple(group_keys(table)) or keys  # with kind and strategy where they vary
    s, v, j = load(store, study)
    console.print(Text.assemble((study, "bold"), f" {s['name']}  rule {s['rule']}, k={s['k']}"))
    headers = {"generator": "generator", "preset": "perturbation"}
    t = Table(
        *[headers.get(c, c) for c in keys],
        "n",
        "valid #",
        "valid %",
        "95% CI",
        "preserved #",
        "preserved %",
        "95% CI ",
    )
    for r in table.itertuples():
        t.add_row(
            *[key_text(getattr(r, c)) for c in keys],
            str(r.n),
            str(r.valid),
            _pct(r.valid_pct),
            r.valid_ci,
            str(r.preserved),
            _pct(r.preserved_pct),
            r.preserved_ci,
        )
    console.print(t if len(table) else "no image has all its answers yet")
    if len(table) and (table["undecided_validity"].sum() or table["undecided_preservation"].sum()):
        a, b = int(table["undecided_validity"].sum()), int(table["undecided_preservation"].sum())
        console.print(
            f"undecided (in no # above): the validity of {_images(a)}, the label preservation "
            f"of {_images(b, 'valid ')}; the Validity studies page's Adjudication tab settles "
            "them"
        )
    sides = model_agreement(v, s["rule"])
    if len(sides):  # triggering inputs: the dashboard's "Which classifier people agree with"
        w = Table(
            "campaign",
            "labelled",
            "valid",
            "A's label",
            "B's label",
            "another label",
            "undecided",
            title="Of the valid triggering inputs, the label people give",
        )
        for r in sides.itertuples():
            w.add_row(r.campaign_id, *(str(x) for x in r[2:]))
        console.print(w)
    incomplete = v[~v["complete"] & v["kind"].ne("gold")]
    if len(incomplete):
        n = len(incomplete)
        console.print(
            f"{_images(n)} {'has' if n == 1 else 'have'} fewer than {s['k']} answers "
            f"and {'is' if n == 1 else 'are'} not counted"
        )
    ag = agreement_table(j, v)
    if ag["items"]:
        console.print(
            "agreement: "
            + ", ".join(f"{k} {v:.3f}" for k, v in ag.items() if k != "items" and v is not None)
            + f" (over {ag['items']} images with two or more answers)"
        )
    lt = labeller_table(j, v)
    if lt["gold"].sum():
        for r in lt.itertuples():
            acc = (
                f"gold accuracy {_pct(r.gold_accuracy_pct)}% of {r.gold}"
                if r.gold
                else ("answered no gold image")
            )
            console.print(f"{r.labeller}: {acc}", markup=False)
    print_calibration(store, study, calibration_csv)


@labels_app.command("calibrate")
def calibrate_cmd(
    study: Annotated[str, typer.Argument(help="study id")],
    validator: Annotated[
        list[str] | None,
        typer.Option(help="validity filter (repeat) [every one that can score the study]"),
    ] = None,
    csv: Annotated[Path | None, typer.Option(help="CSV: the calibration table")] = None,
    home: HomeOpt = None,
) -> None:
    """Score a study's images with validity filters, then say how well each agrees with
    people: ROC AUC, the best threshold, kappa, and the labels it would have saved."""
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.labelling.study_calibration import score_study

    store = _store(home)
    done = score_study(store, resolve_home(home), study, validator)
    for name, n in done.scored.items():
        part = f" ({done.partly[name]})" if name in done.partly else ""
        console.print(f"{name}: scored {_images(n)}{part}")
    for name, why in done.skipped.items():
        console.print(Text(f"{name}: skipped: {why}", "yellow"))
    if done.unreadable:
        console.print(
            Text(f"{_images(done.unreadable)} not scored, e.g. {done.why_unreadable}", "yellow")
        )
    if not done.scored:
        raise LatentfuzzError(
            f"no validity filter could score study {study}: "
            + "; ".join(f"{k}: {v}" for k, v in done.skipped.items())
        )
    print_calibration(store, study, csv)


@labels_app.command("export")
def export_cmd(
    study: Annotated[str, typer.Argument(help="study id")],
    raw: Annotated[Path | None, typer.Option(help="CSV, one row per judgement")] = None,
    wide: Annotated[Path | None, typer.Option(help="CSV, one row per image")] = None,
    home: HomeOpt = None,
) -> None:
    """Write the raw judgements and/or the wide per-image table."""
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.core.csv_io import to_csv
    from engine.labelling.exchange import raw_export, wide_export

    if raw is None and wide is None:
        raise LatentfuzzError("nothing to write: give --raw FILE and/or --wide FILE")
    store = _store(home)
    for path, fn in ((raw, raw_export), (wide, wide_export)):
        if path is not None:
            df = fn(store, study)
            to_csv(df, path)  # formula cells neutralised
            console.print(f"wrote {path} ({len(df)} rows)", markup=False)
