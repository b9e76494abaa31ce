"""Shared pieces of the training commands: batches, defaults per shape, where models go,
evaluation, timing, cards. The loop itself (progress, Ctrl-C, device) is engine/train/loop.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from engine.core.errors import ConfigError, LatentfuzzError
from engine.models import zoo
from engine.models.measure import finish_generator_card
from engine.models.provenance import command_line, stamp
from engine.train.loop import TrainRun, resolve_device
from engine.train.settings import TrainSettings


def batches(n: int, size: int, rng: torch.Generator | None) -> Iterator[torch.Tensor]:
    """Index batches of one epoch. A last batch of one image is left out: batch norm cannot
    train on it (the zoo's sizes never make one: 4,000 images in 64s or 128s)."""
    order = torch.randperm(n, generator=rng) if rng is not None else torch.arange(n)
    for i in range(0, n, size):
        if n - i == 1 and i > 0:
            return
        yield order[i : i + size]


def steps_per_epoch(n: int, size: int) -> int:
    """How many batches ``batches`` yields."""
    return sum(1 for _ in batches(n, size, None))


#: The bundled MNIST models' shape: its defaults are the original architectures.
LEGACY_SHAPE = (1, 28, 28)
#: Per training command: (default for 1x28x28, default for any other shape).
DEFAULTS = {
    "classifier": ("convnet", "vgg"),
    "vae": ("vae", "convvae"),
    "gan": ("gan", "dcgan"),
    "dm": ("dm", "dm"),
}


def default_architecture(command: str, shape: tuple[int, ...]) -> str:
    """The architecture or family `latentfuzz train COMMAND` uses for images of `shape`."""
    legacy, generic = DEFAULTS[command]
    return legacy if tuple(shape) == LEGACY_SHAPE else generic


def destination(name: str, out: Path | None) -> tuple[Path, Path | None]:
    """(folder the model goes under, root of the lookups that follow).

    By default the user's models folder, and lookups see the bundled zoo too (a user's
    MNIST generator is measured with the bundled classifier); a name the bundled zoo has
    is refused, since user models never shadow bundled ones. An explicit --out (the
    Makefile's `models` target retrains the bundled zoo) is both."""
    if out is not None:
        return Path(out), Path(out)
    if zoo.is_bundled(name):
        raise LatentfuzzError(
            f"model name {name!r} belongs to the bundled zoo ({zoo.models_dir() / name}), "
            "which is read-only; pick another --name (or retrain the bundled zoo with "
            "`make models`)"
        )
    card = zoo.user_models_dir() / name / zoo.CARD
    if card.exists() and "format" in (old := json.loads(card.read_text())):
        # Retraining one's own trained model under its name is the usual loop; an imported
        # file's card was replaced without a word and its file left behind.
        raise LatentfuzzError(
            f"model name {name!r} is your imported {old['format']} {old.get('kind', 'model')} "
            f"({card.parent}); pick another --name, or remove that folder first"
        )
    return zoo.user_models_dir(), None


def auto_default(default: bool | None, kind: str, dataset: str, name: str, root) -> bool:
    """--default/--no-default as given; unset: default when the dataset has no other
    default model of this kind (the first classifier trained on a dataset is the one its
    generators are measured with)."""
    if default is not None:
        return default
    return not any(
        c.get("default")
        and c.get("kind") == kind
        and c.get("dataset") == dataset
        and c["name"] != name
        for c in zoo.list_cards(root)
    )


def family_params(
    command: str, family: str, families: dict[str, dict[str, Any]], **given: Any
) -> dict[str, Any]:
    """The constructor sizes of `family`: its defaults, overridden by the options given.
    An option the family does not take (--hidden for convvae) is a one-line error."""
    if family not in families:
        raise ConfigError(
            f"latentfuzz train {command}: family {family!r} unknown; expected one of "
            f"{', '.join(families)}"
        )
    wrong = [k for k, v in given.items() if v is not None and k not in families[family]]
    if wrong:
        raise ConfigError(
            f"--{wrong[0].replace('_', '-')} does not apply to {family}; its sizes are "
            + ", ".join(f"--{k.replace('_', '-')} [{v}]" for k, v in families[family].items())
        )
    return {k: given.get(k) if given.get(k) is not None else v for k, v in families[family].items()}


def data_fields(ds: Any) -> dict[str, Any]:
    """What a card records about the data: image shape and the dataset's fingerprint."""
    return {"image_shape": list(ds.shape), "dataset_fingerprint": ds.fingerprint()}


def start(seed: int, ds: Any) -> tuple[torch.Generator, Any]:
    """Seed everything and load the training split: (rng, train split). Called after the
    options are checked, so that a wrong one fails before the data is read."""
    torch.manual_seed(seed)
    rng = torch.Generator().manual_seed(seed)
    return rng, ds.load("train")


def record(s: TrainSettings, ds: Any, train: Any, run: TrainRun, **settings: Any) -> dict[str, Any]:
    """The card's training section: the command line, the shared and the command's own
    settings, the run (device, interruption), the data split and the time."""
    return {
        "command": command_line(),
        "seed": s.seed,
        "epochs": s.epochs,
        "batch_size": s.batch_size,
        **settings,
        **run.record(),
        "train_images": len(train),
        "split": ds.split_rule,
        "seconds": round(run.seconds, 1),
    }


def generator_card(
    name: str,
    family: str,
    ds: Any,
    default: bool,
    module: torch.nn.Module,
    params: dict[str, Any],
    training: dict[str, Any],
    **extra: Any,
) -> dict:
    """A generator card before measurement (bounds, viability and timing come after)."""
    return {
        "name": name,
        "kind": "generator",
        "family": family,
        "dataset": ds.name,
        "default": default,
        "params": {"image_shape": list(ds.shape), "num_classes": ds.num_classes, **params},
        **data_fields(ds),
        "latent_shape": list(module.latent_shape),
        "parameters": sum(p.numel() for p in module.parameters()),
        **extra,
        "training": training,
        **stamp(),
    }


def save_generator(
    s: TrainSettings,
    name: str,
    family: str,
    ds: Any,
    module: torch.nn.Module,
    params: dict[str, Any],
    training: dict[str, Any],
    folder: Path,
    root: Path | None,
    **extra: Any,
) -> dict[str, Any]:
    """Store a trained generator with its card, then measure it (engine/models/measure.py);
    returns the measured card. ``folder``, ``root``: from ``destination``."""
    default = auto_default(s.default, "generator", s.dataset, name, root)
    card = generator_card(name, family, ds, default, module, params, training, **extra)
    zoo.save_model(module.eval().cpu(), card, folder, fp16=s.fp16)
    return finish_generator_card(name, ds, s.classifier, root, str(resolve_device(s.device)))
