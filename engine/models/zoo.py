"""The model zoo: weights plus a JSON model card per model, under ``models/<name>/``.

Cards record what a user needs to trust a model: dataset, architecture and parameters,
the training command, config and seed, training time, quality metrics, GIFTbench latent
bounds and step presets, and inference time. Weights are safetensors, stored fp16 where the
card's metrics (measured on the stored weights) show it costs nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from engine.classifiers import (
    ARCHITECTURES,
    FORMATS,
    Classifier,
    ModuleClassifier,
    format_of,
)
from engine.classifiers import load_file as load_classifier_file
from engine.classifiers.fold import fold_batch_norm
from engine.core.errors import ConfigError
from engine.core.files import WEIGHTS, load_weights, save_weights, sha256
from engine.core.home import MODELS_DIR, current_home
from engine.datasets import Dataset, get_dataset
from engine.generators import GENERATORS, Generator

CARD = "card.json"


def models_dir() -> Path:
    """The bundled zoo, read-only: user models go to ``user_models_dir()``."""
    return Path(MODELS_DIR)


def user_models_dir() -> Path:
    """Models the user trained or imported: ``$LATENTFUZZ_HOME/models``."""
    return current_home() / "models"


def roots(root: Path | None = None) -> list[Path]:
    """Where models are looked up: the given folder alone, else the bundled zoo, then the
    user's models (bundled first, so a user model never shadows a bundled one)."""
    if root is not None:
        return [Path(root)]
    return [models_dir(), user_models_dir()]


def model_folder(name: str, root: Path | None = None) -> Path:
    """The folder holding model ``name``: the first root that has its card."""
    for r in roots(root):
        if (r / name / CARD).exists():
            return r / name
    known = ", ".join(c["name"] for c in list_cards(root)) or "(none)"
    raise ConfigError(
        f"no model {name!r} in {' or '.join(map(str, roots(root)))}; known models: {known}"
    )


def list_cards(root: Path | None = None) -> list[dict[str, Any]]:
    """Every model's card, bundled then user models; a name found twice is listed once."""
    cards: dict[str, dict[str, Any]] = {}
    for r in roots(root):
        for p in sorted(r.glob(f"*/{CARD}")):
            card = json.loads(p.read_text())
            cards.setdefault(card["name"], card)
    return list(cards.values())


def is_bundled(name: str) -> bool:
    """Whether model ``name`` is in the bundled, read-only zoo."""
    return (models_dir() / name / CARD).exists()


def load_card(name: str, root: Path | None = None) -> dict[str, Any]:
    """Model ``name``'s card, from the first root that has it."""
    return json.loads((model_folder(name, root) / CARD).read_text())


def save_model(
    module: torch.nn.Module, card: dict[str, Any], root: Path | None = None, fp16: bool = True
) -> Path:
    """Write weights and card; returns the model folder. The card gets the weights' hash."""
    folder = (root or models_dir()) / card["name"]
    folder.mkdir(parents=True, exist_ok=True)
    weights = save_weights(module, folder, fp16)
    card = {
        **card,
        "weights": WEIGHTS,
        "dtype": "float16" if fp16 else "float32",
        "sha256": sha256(weights),
    }
    (folder / CARD).write_text(json.dumps(card, indent=2) + "\n")
    return folder


def load_generator(name: str, device: str = "cpu", root: Path | None = None) -> Generator:
    """Zoo generator ``name``, with its card's latent bounds, in eval mode on ``device``."""
    card = load_card(name, root)
    if card.get("kind") != "generator":
        raise ConfigError(f"zoo model {name!r} is a {card.get('kind')}, not a generator")
    gen = GENERATORS.get(card["family"]).from_card(card, model_folder(name, root))
    # A card is measured after its weights are stored; until then the latent is unbounded.
    gen.latent_bounds = tuple(card.get("latent_bounds", (-float("inf"), float("inf"))))
    return gen.eval().to(device)


def build_classifier_module(card: dict[str, Any]) -> torch.nn.Module:
    """The untrained module of a zoo classifier card's architecture and params."""
    if "architecture" not in card:
        raise ConfigError(
            f"{card['name']} is an imported {card.get('format', '?')} file, not one of the "
            f"zoo's architectures ({', '.join(ARCHITECTURES.names())}); this command needs one"
        )
    return ARCHITECTURES.get(card["architecture"])(**card["params"])


def load_classifier(
    ref: str,
    dataset: str,
    device: str = "cpu",
    root: Path | None = None,
    data_dir: str | None = None,
) -> Classifier:
    """A zoo name, or a path to a classifier file (TorchScript, ONNX) validated against the
    dataset (read from `data_dir` where its shape depends on the files). Imported models
    keep their file and its format in the card."""
    ds = get_dataset(dataset, data_dir)
    if is_file_ref(ref):
        return load_classifier_file(ref, ds.shape, ds.num_classes, dataset).to(device)
    card = load_card(ref, root)
    if card.get("kind") != "classifier":
        raise ConfigError(f"zoo model {ref!r} is a {card.get('kind')}, not a classifier")
    if "format" in card:
        path = model_folder(ref, root) / card["file"]
        clf = FORMATS.get(card["format"])(path, ds.shape, ds.num_classes, dataset)
        clf.name = ref
        return clf.to(device)
    module = build_classifier_module(card)
    load_weights(module, model_folder(ref, root))
    fold_batch_norm(module.eval())  # inference only: one pass less per conv block
    return ModuleClassifier(module, ds.shape, ds.num_classes, name=ref, optimise=True).to(device)


def is_file_ref(ref: str) -> bool:
    """A classifier reference that names a file rather than a zoo model."""
    return "/" in ref or "\\" in ref or format_of(ref) is not None


def card_image_shape(card: dict[str, Any]) -> tuple[int, ...] | None:
    """The image shape (C, H, W) a model card says its model makes or takes, if it says."""
    p = card.get("params") or {}
    shape = card.get("image_shape") or p.get("image_shape")
    if shape is not None:
        return tuple(int(v) for v in shape)
    if "in_channels" in p and "side" in p:
        return (int(p["in_channels"]), int(p["side"]), int(p["side"]))
    return None


#: The `latentfuzz train` command that makes each trainable generator family.
TRAIN_COMMANDS = {"vae": "vae", "convvae": "vae", "gan": "gan", "dcgan": "gan", "dm": "dm"}


def train_command(card: dict[str, Any], dataset: str) -> str:
    """The `latentfuzz train` command that makes a model like ``card`` for ``dataset``."""
    if card.get("kind") != "generator":
        return f"latentfuzz train classifier --dataset {dataset}"
    what = TRAIN_COMMANDS.get(card.get("family"), "vae|gan|dm")
    return f"latentfuzz train {what} --dataset {dataset}"


def incompatibility(card: dict[str, Any], ds: Dataset) -> str | None:
    """Why a model cannot serve a campaign on dataset `ds`, naming the fix; None if it can.

    A card written by training records the fingerprint of its data (a hash of the file
    list and sizes): a model trained on other files is refused. Cards without one (the
    bundled MNIST zoo predates it) and imported files are trusted."""
    name, kind = card["name"], card.get("kind", "model")
    shape = card_image_shape(card)
    if shape is not None and shape != tuple(ds.shape):
        return (
            f"{kind} {name} works on images of shape {shape}, dataset {ds.name} has "
            f"{tuple(ds.shape)}; pick a {kind} made for {ds.name}, or train one with "
            f"`{train_command(card, ds.name)}`"
        )
    # An imported file was not trained on these files (its shape and classes are checked
    # on load): one image added to the folder made every imported model unusable, with
    # the advice to retrain what latentfuzz never trained.
    trained_on = None if "format" in card else card.get("dataset_fingerprint")
    if trained_on is not None:
        now = ds.fingerprint()
        if trained_on != now:
            why = (
                f"no {ds.name} files found under {ds.root}: give the data folder (data_dir)"
                if ds.reads_files and not ds.source_files()
                else "its files changed since, or it is other data"
            )
            return (
                f"{kind} {name} was trained on {card.get('dataset')} data with fingerprint "
                f"{trained_on}, but dataset {ds.name} has fingerprint {now} ({why}); retrain "
                f"with `{train_command(card, ds.name)}`, or pick the dataset the model was "
                "trained on"
            )
    return None


def resolve(kind: str, dataset: str, ref: str | None, root: Path | None = None) -> str:
    """Turn a short name ('vae', 'convnet') into the zoo name for this dataset.

    With ref None, the dataset's default model of that kind (card "default": true).
    Paths (TorchScript or ONNX files) are returned unchanged.
    """
    cards = [c for c in list_cards(root) if c.get("kind") == kind and c.get("dataset") == dataset]
    if ref is None:
        defaults = [c["name"] for c in cards if c.get("default")]
        if not defaults:
            what = "vae" if kind == "generator" else "classifier"
            others = ", ".join(sorted(c["name"] for c in cards))
            raise ConfigError(
                f"no default {kind} for dataset {dataset!r} in "
                f"{' or '.join(map(str, roots(root)))}; "
                + (f"name one of {others}, or " if others else "")
                + f"train one with `latentfuzz train {what} --dataset {dataset} --default`"
            )
        return defaults[0]
    if is_file_ref(ref):
        return ref
    names = {c["name"] for c in cards}
    for candidate in (ref, f"{dataset}-{ref}"):
        if candidate in names:
            return candidate
    by_family = [c["name"] for c in cards if ref in (c.get("family"), c.get("architecture"))]
    if by_family:
        return sorted(by_family)[0]
    available = ", ".join(sorted(names)) or "(none)"
    elsewhere = [c for c in list_cards(root) if c["name"] == ref and c.get("kind") == kind]
    if elsewhere:
        raise ConfigError(
            f"{kind} {ref!r} was trained on dataset {elsewhere[0].get('dataset')!r}, the "
            f"campaign uses {dataset!r}; pick dataset {elsewhere[0].get('dataset')!r}, one of "
            f"{dataset}'s {kind}s ({available}), or train one with "
            f"`{train_command(elsewhere[0], dataset)}`"
        )
    raise ConfigError(f"no {kind} {ref!r} for dataset {dataset!r}; available: {available}")
