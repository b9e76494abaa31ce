"""`latentfuzz models`: the bundled zoo and your own models: list, measure (and, from
engine/cli/models.py, sd.py and differential.py: import, import-generator,
import-pipeline, compress)."""

from __future__ import annotations

from typing import Annotated

import typer

from engine.cli.common import HomeOpt, Table, console, fmt
from engine.cli.differential import register_zoo as register_diff_zoo
from engine.cli.models import register as register_models
from engine.cli.sd import register as register_sd
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home, use_home

zoo_app = typer.Typer(
    no_args_is_help=True,
    help="Models: the bundled zoo and your own (under $LATENTFUZZ_HOME/models).",
)
# `models` and `zoo` are one group: `latentfuzz models import` reads as users expect.


@zoo_app.command("list")
def zoo_list(home: HomeOpt = None) -> None:
    """Every zoo model with its quality and inference figures."""
    # Deferred (start-up time: loads torch, numpy, safetensors).
    from engine.models import zoo

    use_home(home)  # user models live under it; listing creates nothing

    t = Table(
        "name", "kind", "dataset", "source", "parameters", "quality", "ms/img b1", "ms/img b25"
    )
    for c in zoo.list_cards():
        m = c.get("metrics", {})
        q = (
            f"accuracy {m['test_accuracy']:.3f}"
            if "test_accuracy" in m
            else f"viability {fmt(m.get('viability'), '.3f') or 'not measured'}"
        )
        inf = c.get("inference", {})
        t.add_row(
            c["name"],
            c["kind"],
            c["dataset"],
            "bundled" if zoo.is_bundled(c["name"]) else "yours",
            f"{c['parameters']:,}",
            q,
            fmt(inf.get("ms_per_image_b1"), ".3f"),
            fmt(inf.get("ms_per_image_b25"), ".3f"),
        )
    console.print(t)


@zoo_app.command("measure")
def zoo_measure(
    name: Annotated[str | None, typer.Argument(help="generator [all generators]")] = None,
    dataset: Annotated[str | None, typer.Option(help="dataset [the card's; mnist]")] = None,
    data_dir: Annotated[str | None, typer.Option(help="folder of the dataset's files")] = None,
    bundled: Annotated[
        bool, typer.Option(help="also the bundled zoo's cards (the project's models/ folder)")
    ] = False,
    classifier: Annotated[
        str | None,
        typer.Option(help="measures viability [the card's, else the dataset's default]"),
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Re-measure generators' latent bounds, viability and inference time into their cards:
    your generators of the dataset, or the one named."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.datasets import get_dataset
    from engine.models import zoo
    from engine.models.measure import finish_generator_card
    from engine.studies.effectiveness import bundled_generators

    resolve_home(home)  # user models live under it
    if dataset is None:
        dataset = zoo.load_card(name)["dataset"] if name else "mnist"
    ds = get_dataset(dataset, data_dir)
    names = [name] if name else bundled_generators(dataset)
    # The bundled cards are the project's published figures: a user's `models measure`
    # rewrote them with this machine's timings (and in an installed package, inside it).
    if not bundled and (theirs := [n for n in names if zoo.is_bundled(n)]):
        if name:
            raise LatentfuzzError(
                f"{name} is a bundled model, whose card holds the project's figures; pass "
                "--bundled to measure it again into that card"
            )
        names = [n for n in names if n not in theirs]
        if not names:
            raise LatentfuzzError(
                f"no generator of yours for dataset {dataset} (the bundled "
                f"{', '.join(theirs)} are measured only with --bundled)"
            )
    for n in names:
        # The classifier it was measured with: an imported decoder's viability, measured
        # with the user's own classifier at import, became "not measured".
        was = (zoo.load_card(n).get("metrics") or {}).get("viability_classifier")
        card = finish_generator_card(n, ds, classifier or was, None)
        v = card["metrics"]["viability"]
        console.print(
            f"{n}: viability {fmt(v, '.4f') or 'not measured'} "
            f"({card['metrics']['viability_how']}), latent range "
            f"{card['latent_range']:.3f}, {card['inference']}"
        )


register_diff_zoo(zoo_app)  # models compress
register_models(zoo_app)  # models import, models import-generator
register_sd(zoo_app)  # models import-pipeline


def register(app: typer.Typer) -> None:
    # `models` and `zoo` are one group: `latentfuzz models import` reads as users expect;
    # `zoo` is the older name, kept working but out of the help.
    app.add_typer(zoo_app, name="models")
    app.add_typer(zoo_app, name="zoo", hidden=True)
