"""`latentfuzz models import` and `models import-generator`: bring your own models."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli.common import HomeOpt, console
from engine.core.home import resolve_home

NameOpt = Annotated[str | None, typer.Option(help="model name [the file's name]")]
ReplaceOpt = Annotated[
    bool, typer.Option("--replace", help="overwrite your own model of that name")
]
DataDirOpt = Annotated[str | None, typer.Option(help="folder of a local dataset")]


def _timing(card: dict[str, Any]) -> str:
    inf = card["inference"]
    return f"{inf['ms_per_image_b1']:.3f} ms/image at batch 1, {inf['ms_per_image_b25']:.3f} at 25"


def register(zoo_app: typer.Typer) -> None:
    """Add `import` and `import-generator` to the `models` (`zoo`) group."""

    @zoo_app.command("import")
    def import_cmd(
        file: Annotated[Path, typer.Argument(help="a TorchScript (.pt) or ONNX (.onnx) file")],
        dataset: Annotated[str, typer.Option(help="the dataset it classifies")],
        name: NameOpt = None,
        replace: ReplaceOpt = False,
        data_dir: DataDirOpt = None,
        home: HomeOpt = None,
    ) -> None:
        """Validate a classifier file and add it to your models, with a card."""
        # Deferred (start-up time: loads torch, numpy, safetensors).
        from engine.models.importing import import_classifier  # torch: not for `--help`

        resolve_home(home)  # user models live under this home
        card = import_classifier(file, dataset, name, replace, data_dir)
        m = card["metrics"]
        quality = (
            f"test accuracy {m['test_accuracy']:.4f} on {m['test_images']} images"
            if "test_accuracy" in m
            else m["test_accuracy_skipped"]
        )
        extra = [f for f in card["files"] if f != card["file"]]
        console.print(
            f"imported {card['name']} ({card['format']}"
            f"{', with ' + ', '.join(extra) if extra else ''}) for {dataset}: "
            f"{card['parameters']:,} parameters, {quality}, {_timing(card)}",
            highlight=False,
        )
        console.print(
            f"use it with: latentfuzz run --dataset {dataset} --classifier {card['name']}"
        )

    @zoo_app.command("import-generator")
    def import_generator_cmd(
        file: Annotated[Path, typer.Argument(help="a TorchScript decoder: latents -> images")],
        dataset: Annotated[str, typer.Option(help="the dataset it generates")],
        latent_shape: Annotated[
            str, typer.Option(help="one latent's shape without the batch, e.g. 8 or 4,8,8")
        ],
        classes: Annotated[int, typer.Option(help="number of classes (the dataset's)")],
        conditional: Annotated[
            bool, typer.Option("--conditional", help="the decoder takes (latents, labels)")
        ] = False,
        output_range: Annotated[
            str, typer.Option(help="the decoder's pixel range LOW,HIGH (-1,1 for tanh)")
        ] = "0,1",
        classifier: Annotated[
            str | None, typer.Option(help="classifier for viability [the dataset's default]")
        ] = None,
        name: NameOpt = None,
        replace: ReplaceOpt = False,
        data_dir: DataDirOpt = None,
        home: HomeOpt = None,
    ) -> None:
        """Validate a TorchScript decoder and add it as a generator, measuring its latent
        bounds, viability and timing into its card."""
        # torch: not for `--help`
        from engine.models.importing import import_generator, parse_floats, parse_latent_shape

        resolve_home(home)
        shape = parse_latent_shape(latent_shape)
        lo, hi = parse_floats(output_range, "--output-range", 2)
        card = import_generator(
            file,
            dataset,
            shape,
            classes,
            conditional,
            (lo, hi),
            name,
            replace,
            classifier,
            data_dir,
        )
        m = card["metrics"]
        console.print(
            f"imported {card['name']} (TorchScript decoder, "
            f"{'conditional' if conditional else 'unconditional'}, latent "
            f"{tuple(card['latent_shape'])}) for {dataset}: viability {m['viability']:.3f} "
            f"by {m['viability_classifier']}, latent bounds "
            f"[{card['latent_bounds'][0]:.3f}, {card['latent_bounds'][1]:.3f}], "
            f"{_timing(card)}",
            highlight=False,
        )
        console.print(
            f"use it with: latentfuzz run --dataset {dataset} --generator {card['name']}",
            markup=False,
        )
