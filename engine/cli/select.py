"""`latentfuzz select`: a model-selection mechanism trained on a differential campaign's
triggering inputs (DiffGAN's RQ4; engine/studies/selection.py)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich import box

from engine.cli.common import HomeOpt, Table, console


def register(app: typer.Typer) -> None:
    app.command("select")(select)


def pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def select(
    campaign: Annotated[
        list[str],
        typer.Option(
            help="differential campaign whose triggering inputs train a selector "
            "(repeat: one selector each, e.g. NSGA-II's and the GA's)"
        ),
    ],
    fresh: Annotated[
        list[str] | None,
        typer.Option(
            help="differential campaign (another seed) whose triggering inputs measure the "
            "selectors; repeatable"
        ),
    ] = None,
    all_inputs: Annotated[
        bool,
        typer.Option(
            "--all-inputs", help="also learn from and measure on inputs the validity filters reject"
        ),
    ] = False,
    study: Annotated[
        str | None,
        typer.Option(
            help="people's verdicts instead of the generator's label: a validity study of "
            "the campaigns' triggering inputs (`labels create --triggering`)"
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="seeds the held-out split and the forest")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print the rows as JSON")] = False,
    home: HomeOpt = None,
) -> None:
    """Model selection (DiffGAN RQ4): learn from a differential campaign which classifier
    to trust where they disagree; report held-out selection accuracy and the selected
    ensemble's accuracy against each classifier alone."""
    # Deferred (start-up time: loads torch, scikit-learn and the store).
    from engine.studies.selection import run_selection

    rows = run_selection(
        campaign, fresh or [], home, valid_only=not all_inputs, seed=seed, study=study
    )
    if as_json:
        console.print_json(json.dumps(rows))
        return
    show(rows, fresh or [])


def show(rows: list[dict[str, Any]], fresh: list[str]) -> None:
    """One table row per selector: what it learnt from, and its accuracies."""
    first = rows[0]
    heads = ["trained on", "inputs (only A / only B / both wrong)"]
    heads += ["held-out selection (always the majority)"]
    heads += ["test: A / B / selected"]
    heads += [f"fresh {f}: A / B / selected" for f in fresh]
    t = Table(
        *heads,
        title=f"selector between A = {first['classifier']} and B = {first['classifier_b']}, "
        f"verdicts: {first['verdicts']} (test split: {first['test_n']} images, "
        f"{first['test_disagree']} disagreements)",
        box=box.SIMPLE_HEAD,
    )
    for r in rows:
        cells = [
            f"{r['campaign']} ({r['strategy']})",
            f"{r['inputs']} ({r['only_a_right']} / {r['only_b_right']} / {r['both_wrong']})",
            f"{pct(r['held_out_selection'])} of {r['held_out_n']} "
            f"({pct(r['held_out_majority'])}, {r['majority']})",
            f"{pct(r['test_a'])} / {pct(r['test_b'])} / {pct(r['test_selected'])}",
        ]
        for j in range(len(fresh)):
            cells.append(
                f"{pct(r[f'fresh{j}_a'])} / {pct(r[f'fresh{j}_b'])} / "
                f"{pct(r[f'fresh{j}_selected'])} (n {r[f'fresh{j}_n']})"
            )
        t.add_row(*cells)
    console.print(t)
