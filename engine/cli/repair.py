"""`latentfuzz repair`: fine-tune a classifier on its validated failures, with controls."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from engine.cli.common import HomeOpt, Table, console, err, open_store
from engine.cli.differential import calibrated_thresholds, parse_validators


def register(app: typer.Typer) -> None:
    app.command()(repair)


#: The report's columns: (key, heading, format).
COLUMNS = (
    ("held_out_accuracy", "held-out acc.", "pct"),
    ("failures_accuracy", "acc. on failures used", "pct"),
    ("fresh_failures_accuracy", "acc. on fresh failures", "pct"),
    ("fresh_misclassified_pct", "new campaign misclassified", "pct100"),
    ("fresh_iterations_icst", "new campaign iterations", "num"),
)


def cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "pct":
        return f"{100 * value:.2f}%"
    if kind == "pct100":
        return f"{value:.1f}%"
    return f"{value:.1f}"


def repair(
    classifier: Annotated[
        str, typer.Option(help="the classifier to repair: a zoo or home model name")
    ],
    from_campaign: Annotated[
        str | None,
        typer.Option(help="campaign whose failures the --validator passes are used"),
    ] = None,
    from_study: Annotated[
        str | None,
        typer.Option(help="validity study whose valid, label-preserving failures are used"),
    ] = None,
    validator: Annotated[
        list[str] | None,
        typer.Option(
            help="validity filter NAME, NAME=THRESHOLD or NAME=calibrated:STUDY (repeat; all "
            "must pass)"
        ),
    ] = None,
    replay: Annotated[
        float, typer.Option(help="replayed training images per failure in the mix")
    ] = 10.0,
    epochs: Annotated[int, typer.Option(help="fine-tuning epochs")] = 5,
    lr: Annotated[float, typer.Option(help="fine-tuning learning rate (AdamW, constant)")] = 5e-4,
    batch_size: Annotated[int, typer.Option(help="images per optimisation step")] = 64,
    seed: Annotated[int, typer.Option(help="seeds every draw of the mix and the training")] = 0,
    name: Annotated[
        str | None, typer.Option(help="the repaired model's name [CLASSIFIER-repair-SOURCE]")
    ] = None,
    controls: Annotated[
        bool, typer.Option(help="also train the Random and No-validity controls")
    ] = True,
    fresh_seeds: Annotated[
        int | None,
        typer.Option(help="seeds of the fresh campaigns (0: none) [the source campaign's]"),
    ] = None,
    fresh_generations: Annotated[
        int | None, typer.Option(help="their generation budget [the source campaign's]")
    ] = None,
    fresh_seed: Annotated[
        int | None, typer.Option(help="their random seed [the source campaign's + 1]")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu | cuda | cuda:N")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    home: HomeOpt = None,
) -> None:
    """Fine-tune a copy of a classifier on its validated failures mixed with replayed
    training data, beside two controls at equal count (Random: held-out real images;
    No-validity: the same campaign's failures unfiltered), and measure all before and
    after. Writes the repaired model, carded with its lineage, to your models."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.repair.run import repair_events
    from engine.repair.settings import RepairSettings

    # A threshold fitted on a validity study (`labels calibrate`): read before anything runs.
    chosen, used = (
        calibrated_thresholds(open_store(home), parse_validators(validator, calibrated=True))
        if validator
        else ({}, {})
    )
    for n, (study, t) in used.items():
        err.print(f"{n}: threshold {t:.4g}, calibrated on {study}", markup=False)
    s = RepairSettings(
        classifier=classifier,
        campaign=from_campaign,
        study=from_study,
        validators=chosen,
        calibrated_on={n: study for n, (study, _) in used.items()},
        replay=replay,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        seed=seed,
        name=name,
        controls=controls,
        fresh_seeds=fresh_seeds,
        fresh_generations=fresh_generations,
        fresh_seed=fresh_seed,
        device=device,
    )
    report: dict[str, Any] = {}
    for event in repair_events(s, home):
        if event["stage"] == "done":
            report = event["report"]
        err.print(event["message"], markup=False, highlight=False, soft_wrap=True)
    if as_json:
        print(json.dumps(report, indent=2))
        return
    print_report(report)


def print_report(report: dict[str, Any]) -> None:
    """The before/after table: the parent, the repair and each control."""
    c = report["counts"]
    t = Table(
        "model",
        "added",
        *(heading for _, heading, _ in COLUMNS),
        title=f"repair of {report['parent']}: {c['failures_used']} failures used",
        caption=f"held-out: {c['evaluation_images']} test images no arm trained on; fresh "
        f"failures: {c['fresh_failures'] if c['fresh_failures'] is not None else 'none'}",
    )
    for row in report["rows"]:
        added = c["added_per_arm"].get(row["model"])
        t.add_row(
            f"{row['model']} ({row['name']})",
            "-" if added is None else str(added),
            *(cell(row.get(key), kind) for key, _, kind in COLUMNS),
        )
    console.print(t)
