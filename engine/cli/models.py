"""`latentfuzz models import`, `import-generator`, `rename` and `delete`: bring your own
models, and look after them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli.common import HomeOpt, console, err
from engine.core.errors import LatentfuzzError
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
    """Add `import`, `import-generator`, `rename` and `delete` to the `models` (`zoo`)
    group."""

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
        # Deferred (stdlib only; before torch, so that a file that is no model is
        # refused in a blink, not after seconds of imports).
        from engine.models.sniff import classifier_format

        if file.is_file():  # a folder or a missing file: import_classifier says which
            classifier_format(file, str(file))
        # Deferred (start-up time: loads torch, numpy, safetensors).
        from engine.models.importing import import_classifier  # torch: not for `--help`
        from engine.models.measure import chance_note

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
        if note := chance_note(card):  # added all the same: the user may know why
            err.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)

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

    @zoo_app.command("rename")
    def rename_cmd(
        name: Annotated[str, typer.Argument(help="one of your models (`latentfuzz models`)")],
        new_name: Annotated[str, typer.Argument(help="its new name")],
        home: HomeOpt = None,
    ) -> None:
        """Rename one of your own models (refused while campaigns use it)."""
        # Deferred (start-up time: loads torch through the generator registry).
        from engine.models.manage import rename_model

        resolve_home(home)
        rename_model(name, new_name)
        console.print(f"renamed model {name} to {new_name}", markup=False, highlight=False)

    @zoo_app.command("delete")
    def delete_cmd(
        name: Annotated[str, typer.Argument(help="one of your models (`latentfuzz models`)")],
        yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
        home: HomeOpt = None,
    ) -> None:
        """Delete one of your own models and its files (refused while campaigns use it)."""
        # Deferred (start-up time: loads torch through the generator registry).
        from engine.models.manage import delete_model, users_model

        resolve_home(home)
        folder = users_model(name)  # a bundled or unknown name is refused before asking
        files = [f for f in folder.rglob("*") if f.is_file()]
        size = sum(f.stat().st_size for f in files)
        what = f"{len(files)} file{'s' if len(files) != 1 else ''}, {size_text(size)}"
        if not yes and not typer.confirm(f"delete model {name} ({what})?"):
            raise LatentfuzzError("nothing deleted (answer y, or pass --yes)")
        delete_model(name)
        console.print(f"deleted model {name} ({what})", markup=False, highlight=False)


def size_text(n: float) -> str:
    """Bytes as people read them: 1.2 MB."""
    if n < 1000:
        return f"{int(n):,} bytes"
    for unit in ("KB", "MB", "GB"):
        n /= 1000
        if n < 1000 or unit == "GB":
            break
    return f"{n:.1f} {unit}"
