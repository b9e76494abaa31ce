"""The parts of a campaign, loaded and cross-checked for ``config.resolve``.

Each function checks one thing a config asks of its dataset, models or seeds, and raises
ConfigError (one line: what was received, what was expected, the fix). ``resolve`` calls
them in a fixed order, so the first problem of a config is always the one reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from engine.classifiers import Classifier
from engine.core import files
from engine.core.errors import ConfigError, ModelError
from engine.datasets import Dataset, DatasetError, get_dataset
from engine.generators import Generator
from engine.models import zoo
from engine.validators import check_validators

if TYPE_CHECKING:
    from engine.campaign.config import CampaignConfig


def dataset(cfg: CampaignConfig) -> Dataset:
    """The config's dataset, checked against its data_dir, classes and device."""
    try:
        ds = get_dataset(cfg.dataset, cfg.data_dir)
    except DatasetError as e:
        raise ConfigError(str(e)) from None
    if cfg.data_dir is not None and not ds.reads_files:
        # It was stored and ignored, so the config claimed data the campaign never read.
        raise ConfigError(
            f"data_dir={cfg.data_dir!r}, but dataset {cfg.dataset!r} reads no files "
            f"({ds.expected_files[0].strip('()')}); drop data_dir (--data-dir)"
        )
    for name in ("target_class", "target"):
        value = getattr(cfg, name)
        if value is not None and value >= ds.num_classes:
            raise ConfigError(
                f"{name}={value}, but {cfg.dataset} has classes 0..{ds.num_classes - 1}"
            )
    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={cfg.device!r} but no CUDA device is available; use cpu")
    return ds


def escape_seeds(cfg: CampaignConfig, num_classes: int) -> CampaignConfig:
    """An escape campaign's config with its seed count: escape_per_pair searches for every
    (source, target) pair, over all sources or just target_class."""
    if cfg.escape_per_pair is None:
        return cfg
    sources = 1 if cfg.target_class is not None else num_classes
    n = cfg.escape_per_pair * sources * (num_classes - 1)
    if "seeds" in cfg.model_fields_set and cfg.seeds != n:
        raise ConfigError(
            f"seeds={cfg.seeds}, but escape_per_pair={cfg.escape_per_pair} over {sources} "
            f"source and {num_classes - 1} target classes makes {n}; leave seeds out"
        )
    return cfg.model_copy(update={"seeds": n})


@dataclass
class Models:
    """The campaign's models, loaded, with the names they resolved to."""

    generator: Generator
    generator_name: str
    classifier: Classifier
    classifier_name: str
    classifier_b: Classifier | None
    classifier_b_name: str | None
    #: False for a generator built without a model file (pixel space): nothing to hash.
    generator_file: bool = True


def load_models(
    cfg: CampaignConfig, ds: Dataset, models_root: Path | None, generator: Generator | None = None
) -> Models:
    """Resolve, check against the dataset and load the generator and classifiers; check
    the validity filters and generator options the config names. `generator`: one built
    already (a strategy's own, engine/campaign/resolve.py), used instead of the zoo's."""
    gen_name = (
        generator.family
        if generator is not None
        else zoo.resolve("generator", cfg.dataset, cfg.generator, models_root)
    )
    clf_name = zoo.resolve("classifier", cfg.dataset, cfg.classifier, models_root)
    clf_b_name = (
        None
        if cfg.classifier_b is None
        else zoo.resolve("classifier", cfg.dataset, cfg.classifier_b, models_root)
    )
    cards = {c["name"]: c for c in zoo.list_cards(models_root)}
    for name in (gen_name, clf_name, clf_b_name):
        if name in cards:  # model files given by path have no card to compare
            why = zoo.incompatibility(cards[name], ds)
            if why is not None:
                raise ConfigError(why)
    if clf_b_name is not None and clf_b_name == clf_name:
        raise ConfigError(
            f"classifier_b is {clf_b_name}, the same model as classifier; differential "
            "testing compares two different classifiers"
        )
    try:
        gen = (
            generator.eval().to(cfg.device)
            if generator is not None
            else zoo.load_generator(gen_name, cfg.device, models_root)
        )
        clf = zoo.load_classifier(clf_name, cfg.dataset, cfg.device, models_root)
        clf_b = (
            None
            if clf_b_name is None
            else zoo.load_classifier(clf_b_name, cfg.dataset, cfg.device, models_root)
        )
    except ModelError as e:
        raise ConfigError(str(e)) from None
    check_validators(cfg.validators, gen, ds)
    if extra := sorted(set(cfg.generator_params) - set(gen.Options.model_fields)):
        # "Extra inputs are not permitted" did not say that --guidance is the DM's alone.
        takes = ", ".join(gen.Options.model_fields) or "none"
        raise ConfigError(
            f"generator {gen_name} ({gen.family}) has no option {', '.join(extra)} (its "
            f"options: {takes}); leave it out (generator_params, or its flag)"
        )
    return Models(gen, gen_name, clf, clf_name, clf_b, clf_b_name, generator is None)


def check_generator(cfg: CampaignConfig, ds: Dataset, gen: Generator, gen_name: str) -> None:
    """The generator makes the dataset's images and knows its classes."""
    if gen.image_shape != ds.shape:
        raise ConfigError(
            f"generator {gen_name} makes images of shape {gen.image_shape}, dataset "
            f"{cfg.dataset} has {ds.shape}; pick a generator trained on {cfg.dataset}"
        )
    if gen.conditional and gen.num_classes != ds.num_classes:
        raise ConfigError(
            f"generator {gen_name} knows {gen.num_classes} classes, "
            f"{cfg.dataset} has {ds.num_classes}"
        )


def check_seed_pool(cfg: CampaignConfig, ds: Dataset, gen: Generator) -> None:
    """An encoder generator seeds from test images: there must be enough of them."""
    if not gen.has_encoder or gen.conditional:
        return
    try:
        test = ds.load("test")
    except DatasetError as e:
        raise ConfigError(str(e)) from None
    pool = (
        int((test.labels == cfg.target_class).sum()) if cfg.target_class is not None else len(test)
    )
    if cfg.escape_per_pair is not None:
        # Each source class seeds escape_per_pair images (engine/campaign/seeding.py).
        counts = torch.bincount(test.labels, minlength=ds.num_classes)
        sources = [cfg.target_class] if cfg.target_class is not None else range(len(counts))
        short = [c for c in sources if counts[c] < cfg.escape_per_pair]
        if short:
            c = short[0]
            raise ConfigError(
                f"escape_per_pair={cfg.escape_per_pair} but {cfg.dataset} has only "
                f"{int(counts[c])} test images of class {c}; ask for at most "
                f"{int(counts[list(sources)].min())}"
            )
    elif cfg.seeds > pool:
        raise ConfigError(
            f"{cfg.seeds:,} seeds asked for, but {cfg.dataset} has only {pool:,} test "
            f"images{'' if cfg.target_class is None else f' of class {cfg.target_class}'} "
            f"to seed from; ask for at most {pool:,}"
        )


def model_hashes(models: Models, models_root: Path | None) -> dict[str, str]:
    """SHA-256 of every model file, by name: from its card, or of the file given by path."""
    hashes = (
        {models.generator_name: zoo.load_card(models.generator_name, models_root)["sha256"]}
        if models.generator_file
        else {}
    )
    for name in (models.classifier_name, models.classifier_b_name):
        if name is not None:
            hashes[name] = (
                files.sha256(Path(name))
                if Path(name).is_file()
                else zoo.load_card(name, models_root)["sha256"]
            )
    return hashes
