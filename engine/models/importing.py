"""`latentfuzz models import` and `import-generator`: a user's model file becomes a model
of their zoo (``$LATENTFUZZ_HOME/models/<name>/``), with a card like the bundled ones.

Both check what can be checked without running the file (its name, an ONNX file's
external data locations, the declared latent shape), copy it (with an ONNX file's external
weights) into a hidden staging folder, validate and measure the copy in a child process
under a time limit (engine/models/import_checks.py), and only then rename the folder into
place: a failure leaves nothing behind.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.classifiers import format_of
from engine.classifiers.onnx import external_data_files
from engine.core.errors import ConfigError, ModelError, refuse_not_file
from engine.core.files import sha256
from engine.core.untrusted import bounded, inside, quote
from engine.datasets import get_dataset
from engine.datasets.base import DatasetError
from engine.generators.torchscript import DECODER, TorchScriptGenerator
from engine.models import zoo
from engine.models.import_checks import check_classifier, check_generator
from engine.models.limited import run_limited
from engine.models.provenance import command_line, stamp
from engine.models.sniff import classifier_format, refuse_not_torchscript

#: Values in one latent at most: N_LATENTS of them (4 GB) are drawn to measure the bounds,
#: and 3 x 512 x 512 image-sized noise still fits.
MAX_LATENT_ELEMENTS = 1 << 20

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


#: NAME in words, for a form's help and its refusal.
NAME_RULES = (
    "letters, digits, '.', '_' or '-', up to 64, starting with a letter or digit, with no "
    "file suffix such as .pt"
)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a new model, in words without command-line options (a
    form says it as the name is typed), or None."""
    if not NAME.match(name) or format_of(name) is not None:
        return f"{quote(name)} is not a plain name: use {NAME_RULES}"
    if zoo.is_bundled(name):
        return f"{name} is a bundled model's name: pick another name."
    if (zoo.user_models_dir() / name / zoo.CARD).exists():
        return f"A model named {name} exists already: pick another name."
    return None


def check_name(name: str, replace: bool) -> None:
    """Refuse a name that is not a plain folder name, a bundled model's, or (without
    replace) one of the user's own."""
    if not NAME.match(name) or format_of(name) is not None:
        raise ConfigError(
            f"model name {name!r} is not a plain name; expected letters, digits, '.', '_' or "
            f"'-' (up to 64, no file suffix): give one with --name"
        )
    if zoo.is_bundled(name):
        raise ConfigError(f"{name!r} is a bundled model, which cannot be replaced; pick --name")
    if (zoo.user_models_dir() / name / zoo.CARD).exists() and not replace:
        raise ConfigError(
            f"you already have a model {name!r} in {zoo.user_models_dir()}; pass --replace "
            f"to overwrite it, or pick another --name"
        )


@contextmanager
def staged(name: str) -> Iterator[Path]:
    """A hidden folder beside the user's models, renamed to ``name`` when the block ends
    cleanly and removed when it raises. ``list_cards`` never sees it (no card at its top)."""
    root = zoo.user_models_dir()
    root.mkdir(parents=True, exist_ok=True)
    stage = root / f".import-{name}-{secrets.token_hex(4)}"
    stage.mkdir()
    try:
        yield stage
        final, old = root / name, root / f".replaced-{name}-{secrets.token_hex(4)}"
        if final.exists():
            final.rename(old)  # the replaced model goes only once the new one is in place
        stage.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _dataset(dataset: str, data_dir: str | None):
    ds = get_dataset(dataset, data_dir)
    try:
        fingerprint = ds.fingerprint()
    except (DatasetError, OSError):
        fingerprint = None
    return ds, fingerprint


def _copy(src: Path, stage: Path, extra: list[str], as_name: str | None = None) -> dict[str, str]:
    """Copy the model file (as ``as_name`` if given) and its companion files, which keep
    their paths relative to it; returns each copied file's sha256."""
    hashes = {}
    shutil.copyfile(src, stage / (as_name or src.name))
    hashes[as_name or src.name] = sha256(stage / (as_name or src.name))
    for rel in extra:
        # Checked on both sides: a companion file is read only from the model's folder
        # and written only into the staging folder, however its name is spelt.
        field = f"external data file {rel!r}"
        origin = inside(src.absolute().parent, rel, field, source=str(src))
        dest = inside(stage, rel, field, source=str(src))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(origin, dest)
        hashes[rel] = sha256(dest)
    return hashes


def import_classifier(
    file: str | Path,
    dataset: str,
    name: str | None = None,
    replace: bool = False,
    data_dir: str | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """Validate, copy and measure a TorchScript or ONNX classifier; returns its card.
    ``origin``: where the file came from, for the card (an upload names the file the user
    sent, not the temporary copy it was read from); default its path and this command."""
    src = Path(file).expanduser()
    if src.is_dir():
        raise ModelError(
            f"{src} is a folder; give the path of a TorchScript (.pt) or ONNX (.onnx) file"
        )
    if not src.is_file():
        raise ModelError(
            f"classifier file {src} does not exist; give the path of a "
            "TorchScript (.pt) or ONNX (.onnx) file"
        )
    # From its bytes, before the dataset is read or the file copied and run: a text file
    # took 8 s to refuse, in PyTorch's words. The bytes decide, not the suffix.
    fmt = classifier_format(src, str(file))
    name = name or src.stem
    check_name(name, replace)
    ds, fingerprint = _dataset(dataset, data_dir)
    # Parsed, not run: where its external data lies is checked before anything is copied.
    extra = external_data_files(src) if fmt == "onnx" else []
    with staged(name) as stage:
        hashes = _copy(src, stage, extra)
        # Loaded and run only in a child process, under a time limit: the file is code.
        measured = run_limited(
            check_classifier, (stage / src.name, fmt, dataset, data_dir), f"classifier {src.name}"
        )
        card = {
            "name": name,
            "kind": "classifier",
            "format": fmt,
            "file": src.name,
            "files": hashes,
            "sha256": hashes[src.name],
            "dataset": dataset,
            "dataset_fingerprint": fingerprint,
            "input_shape": list(ds.shape),
            "classes": ds.num_classes,
            "class_names": list(ds.class_names),
            "parameters": measured["parameters"],
            "default": False,
            **provenance(src, origin),
            **stamp(),
            "metrics": measured["metrics"],
            "inference": measured["inference"],
        }
        (stage / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
    return card


def provenance(src: Path, origin: str | None) -> dict[str, str]:
    """The card's `imported_from` and `command`: the file and command line, or an upload's
    own words."""
    if origin is None:
        return {"imported_from": str(src.resolve()), "command": command_line()}
    return {"imported_from": origin, "command": "uploaded on the dashboard's Models page"}


def parse_floats(text: str, what: str, count: int | None = None) -> list[float]:
    """Numbers separated by commas (or "x") from a command-line option, ``count`` of them
    if given; a one-line ConfigError naming ``what`` otherwise."""
    try:
        values = [float(v) for v in text.replace("x", ",").split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or (count is not None and len(values) != count):
        n = f"{count} numbers" if count else "numbers"
        raise ConfigError(f"{what} {text!r} is not {n} separated by commas, e.g. -1,1 or 4,8,8")
    return values


def check_latent_shape(shape: tuple[int, ...]) -> None:
    """Refuse, before a latent is drawn, a shape that is empty, not positive, or too big
    to measure: the card's bounds take N_LATENTS latents at once (100000000000 asked the
    allocator for 1.2 TB and died with its traceback)."""
    if not shape or any(d < 1 for d in shape):
        raise ConfigError(f"--latent-shape {list(shape)}: expected positive sizes")
    bounded(
        math.prod(shape),
        MAX_LATENT_ELEMENTS,
        f"--latent-shape {quote(list(shape))}: one latent",
        unit="values",
        fix="give the decoder's real latent shape (e.g. 100 or 4,8,8)",
    )


def parse_latent_shape(text: str) -> tuple[int, ...]:
    """--latent-shape as whole positive sizes of a latent that can be measured."""
    shape = parse_floats(text, "--latent-shape")
    if any(not math.isfinite(d) or d != int(d) for d in shape):
        raise ConfigError(f"--latent-shape {quote(text)}: sizes must be whole numbers")
    sizes = tuple(int(d) for d in shape)
    check_latent_shape(sizes)
    return sizes


def import_generator(
    file: str | Path,
    dataset: str,
    latent_shape: tuple[int, ...],
    classes: int,
    conditional: bool = False,
    output_range: tuple[float, float] = (0.0, 1.0),
    name: str | None = None,
    replace: bool = False,
    classifier: str | None = None,
    data_dir: str | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """Validate, copy and measure a TorchScript decoder as a generator; returns its card.

    Latent bounds, viability and timing are measured as for the zoo's own generators
    (engine/models/measure.py)."""
    src = Path(file).expanduser()
    name = name or src.stem
    check_name(name, replace)
    ds, fingerprint = _dataset(dataset, data_dir)
    if classes != ds.num_classes:
        raise ConfigError(
            f"--classes {classes}, but dataset {dataset} has {ds.num_classes} classes; import "
            f"the decoder for the dataset it was trained on"
        )
    check_latent_shape(latent_shape)
    params = {
        "image_shape": list(ds.shape),
        "num_classes": ds.num_classes,
        "latent_shape": list(latent_shape),
        "conditional": conditional,
        "output_range": list(output_range),
        "file": DECODER,
    }
    TorchScriptGenerator(**params)  # refuses an empty output range before anything is copied
    refuse_not_file(src, "decoder file", "a TorchScript (.pt) file")
    refuse_not_torchscript(src, str(file))  # before it is copied and run in a child
    clf_name = zoo.resolve("classifier", dataset, classifier)
    with staged(name) as stage:
        hashes = _copy(src, stage, [], as_name=DECODER)
        # Loaded and run only in a child process, under a time limit: the file is code.
        measured = run_limited(
            check_generator, (params, stage, dataset, clf_name), f"decoder {src.name}"
        )
        card = {
            "name": name,
            "kind": "generator",
            "family": TorchScriptGenerator.family,
            "format": "torchscript",
            "dataset": dataset,
            "dataset_fingerprint": fingerprint,
            "default": False,
            "params": params,
            "latent_shape": list(latent_shape),
            "parameters": measured["parameters"],
            "files": hashes,
            "sha256": hashes[DECODER],
            **provenance(src, origin),
            **stamp(),
            **measured["bounds"],
        }
        card["metrics"] = {
            "viability": measured["viability"],
            "viability_how": "conditional samples (100 per class) the classifier assigns to "
            "their conditioning label"
            if conditional
            else "unconditional samples (100 per "
            "class label) the classifier assigns to that label: a campaign draws each seed's "
            "label at random, so about 1 in K is viable",
            "viability_classifier": clf_name,
            "viability_seeds": measured["viability_seeds"],
        }
        card["inference"] = measured["inference"]
        (stage / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
    return card
