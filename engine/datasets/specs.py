"""The user's datasets: a name bound to a folder and options, one small JSON spec each under
``$LATENTFUZZ_HOME/datasets/NAME.json`` (written by `latentfuzz data add`).

A spec names a format: ``imagefolder`` (engine/datasets/imagefolder.py, with its size,
channels and split options) or a registered reader that reads files (cifar10, svhn,
mnist-idx, ...), then bound to its folder and optional class names. ``get_dataset`` looks up
registered datasets first, then specs, so a user's name works wherever a dataset name does:
a campaign's ``dataset:``, a model card's ``dataset``, ``--dataset`` of train, New campaign.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.core.home import current_home
from engine.datasets.base import DATASETS, Dataset, DatasetError
from engine.datasets.imagefolder import ImageFolder, cached_files

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
IMAGEFOLDER = "imagefolder"


class DatasetSpec(BaseModel):
    """What `data add` stores; every option of the image folder has its default here."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    format: str = IMAGEFOLDER
    root: str
    size: int = Field(32, ge=4, le=1024)
    channels: Literal[1, 3] = 3
    fit: Literal["crop", "stretch"] = "crop"
    test_dir: str | None = None
    holdout: float = Field(0.2, gt=0, lt=1)
    split_seed: int = Field(0, ge=0)
    classes: list[str] | None = None
    classes_from: str | None = None
    domain: str | None = None


def specs_dir() -> Path:
    return current_home() / "datasets"


def readable_formats() -> list[str]:
    """Formats a spec may name: the image folder and every registered reader of files."""
    return [IMAGEFOLDER] + [n for n in DATASETS.names() if DATASETS.get(n).reads_files]


def _spec_error(e: ValidationError, where: str) -> DatasetError:
    parts = [
        f"{'.'.join(map(str, x['loc']))}: {x['msg']} (got {x.get('input')!r})" for x in e.errors()
    ]
    return DatasetError(f"{where}: {'; '.join(parts)}")


def make_spec(**raw: Any) -> DatasetSpec:
    """A checked spec: a free name, a known format, an existing folder (absolute)."""
    name = raw.get("name", "")
    if not NAME.match(name):
        raise DatasetError(
            f"dataset name {name!r}: use 1-64 lower-case letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        )
    if name in DATASETS:
        raise DatasetError(f"{name!r} is a bundled dataset; pick another name for yours")
    fmt = raw.get("format", IMAGEFOLDER)
    if fmt not in readable_formats():
        raise DatasetError(f"format {fmt!r} unknown; expected one of {readable_formats()}")
    for key in ("root", "test_dir"):
        if raw.get(key) is not None:
            raw[key] = str(Path(raw[key]).expanduser().resolve())
    try:
        return DatasetSpec(**raw)
    except ValidationError as e:
        raise _spec_error(e, f"dataset {name!r}") from None


def open_spec(spec: DatasetSpec, root: str | os.PathLike[str] | None = None) -> Dataset:
    """The dataset a spec describes; `root` (--data-dir) replaces its folder."""
    root = root or spec.root
    names_from = spec.classes_from or "the class names"
    if spec.format == IMAGEFOLDER:
        return ImageFolder(
            root,
            spec.name,
            spec.size,
            spec.channels,
            spec.fit,
            spec.test_dir,
            spec.holdout,
            spec.split_seed,
            spec.classes,
            spec.domain,
            names_from,
        )
    ds = DATASETS.get(spec.format)(root, spec.classes, names_from)
    ds.name = spec.name
    if spec.domain:
        ds.domain = spec.domain
    return ds


def load_spec(name: str) -> DatasetSpec | None:
    path = specs_dir() / f"{name}.json"
    if not NAME.match(name) or not path.is_file():
        return None
    try:
        return DatasetSpec(**json.loads(path.read_text()))
    except (json.JSONDecodeError, OSError) as e:
        raise DatasetError(
            f"{path} is not a readable dataset spec ({e}); run "
            f"`latentfuzz data add {name} DIR --replace` again"
        ) from None
    except ValidationError as e:
        raise _spec_error(e, str(path)) from None


def save_spec(spec: DatasetSpec, replace: bool = False) -> Path:
    """Write a spec atomically; refuse to overwrite one unless asked."""
    path = specs_dir() / f"{spec.name}.json"
    if path.exists() and not replace:
        old = load_spec(spec.name)
        raise DatasetError(
            f"dataset {spec.name!r} already exists ({old.root if old else path}); pass "
            "--replace to point it elsewhere, or pick another name"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(spec.model_dump(exclude_none=True), indent=2) + "\n")
    tmp.replace(path)
    return path


def remove_spec(name: str) -> Path:
    path = specs_dir() / f"{name}.json"
    if load_spec(name) is None:
        raise DatasetError(
            f"no dataset {name!r} of yours in {specs_dir()}; `latentfuzz data list` shows them"
        )
    path.unlink()
    # Its decoded images too (<home>/cache/datasets/NAME-<fingerprint>.npz): they stayed
    # behind, megabytes each, and nothing reads them once the name is gone.
    for cached in cached_files(specs_dir().parent / "cache" / "datasets", name):
        cached.unlink(missing_ok=True)
    return path


def user_dataset_names() -> list[str]:
    folder = specs_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if NAME.match(p.stem))


def dataset_names() -> list[str]:
    """Every dataset name: registered ones, then the user's."""
    return DATASETS.names() + [n for n in user_dataset_names() if n not in DATASETS]


def get_dataset(name: str, root: str | os.PathLike[str] | None = None) -> Dataset:
    """A registered dataset, else the user's dataset of that name."""
    if name in DATASETS:
        return DATASETS.get(name)(root)
    spec = load_spec(name)
    if spec is None:
        raise DatasetError(
            f"unknown dataset {name!r}; known datasets: {', '.join(dataset_names())}. Pass "
            "one of these with --dataset, or add your own images with `latentfuzz data add "
            f"{name} DIR`."
        )
    if root is None and spec.format == IMAGEFOLDER and not Path(spec.root).is_dir():
        # Moved or renamed: the same files under another path keep their fingerprint.
        raise DatasetError(
            f"dataset {name}'s image folder {spec.root} does not exist (moved or deleted?); "
            f"if it moved: `latentfuzz data add {name} NEW_FOLDER --replace` (the same files "
            "keep the fingerprint, so its models still fit)"
        )
    return open_spec(spec, root)
