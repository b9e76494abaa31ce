"""Dataset plug-in base class and registry.

A dataset knows its image shape, its class names and its domain word (used by the
labelling question "not a valid <domain> image"), and loads a split as tensors. A dataset
whose classes are a subset of a larger domain (two ImageNet classes of the ICST study)
also names its classes' ids in that domain's taxonomy and the taxonomy's size; labellers
can then answer "a valid <domain> of another class".

Shape and class names are class attributes for the bundled readers and instance attributes
where they come from the data (engine/datasets/imagefolder.py); read them from an instance
(``get_dataset(name)``), never from the registered class. Class names can be replaced by
the user's, one per line: a ``classes.txt`` beside the data, or a dataset spec's
``--classes`` file (engine/datasets/specs.py).
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import torch

from engine.core.errors import LatentfuzzError
from engine.core.registry import Registry

Split = Literal["train", "test"]
DATA_ENV_VAR = "LATENTFUZZ_DATA"
#: Class names, one per line in label order, read from beside a dataset's files.
CLASSES_FILE = "classes.txt"


def printable(path: str | os.PathLike[str]) -> str:
    """A path as text that prints and stores: bytes that are not UTF-8 (a name from a
    Latin-1 disk, which Python holds as surrogates) shown as \\xNN. Printing or storing
    the surrogates themselves raised UnicodeEncodeError."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_text(name: str) -> bool:
    """Whether a file name is UTF-8 text (no surrogates standing for other bytes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_class_names(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """A class-names file: one name per line; blank lines and surrounding spaces ignored."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(
            f"cannot read class names from {path} ({e}); expected a UTF-8 "
            "text file with one class name per line"
        ) from None
    names = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not names:
        raise DatasetError(f"{path} names no classes; expected one class name per line")
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise DatasetError(f"{path} names {', '.join(twice)} twice; class names must differ")
    return names


@dataclass(frozen=True)
class DataSplit:
    """Images (N, C, H, W) float32 in [0, 1] and labels (N,) int64."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])


class DatasetError(LatentfuzzError, ValueError):
    """A dataset could not be read; the message names the files expected."""


class Dataset(ABC):
    name: ClassVar[str]
    shape: ClassVar[tuple[int, int, int]]
    class_names: ClassVar[tuple[str, ...]]
    domain: ClassVar[str]
    #: Files the reader needs under its root, for error messages and docs.
    expected_files: ClassVar[tuple[str, ...]] = ()
    #: False for data shipped inside a package: a user's spec cannot point it at a folder.
    reads_files: ClassVar[bool] = True
    #: How the train/test split is made, recorded in model cards.
    split_rule: ClassVar[str] = "the dataset's own train/test files"
    #: For a subset of a larger taxonomy: each class's id there (e.g. ImageNet 963 = pizza)
    #: and the taxonomy's size. None: the classes are the whole domain.
    class_ids: ClassVar[tuple[int, ...] | None] = None
    taxonomy_size: ClassVar[int | None] = None

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        class_names: tuple[str, ...] | list[str] | None = None,
        names_from: str = CLASSES_FILE,
    ) -> None:
        self.root = Path(root or os.environ.get(DATA_ENV_VAR, ".")).expanduser()
        self._cache: dict[str, DataSplit] = {}
        # Class names from the user: given here (a dataset spec's --classes), else a
        # classes.txt beside the data. Only in a folder named for this dataset: neither the
        # working directory's classes.txt nor one in a $LATENTFUZZ_DATA folder shared by
        # several datasets may rename it.
        if class_names is None and root and (self.root / CLASSES_FILE).is_file():
            class_names = read_class_names(self.root / CLASSES_FILE)
            names_from = str(self.root / CLASSES_FILE)
        if class_names is not None:
            self.class_names = self.named(tuple(class_names), names_from)

    def named(self, names: tuple[str, ...], source: str) -> tuple[str, ...]:
        """User class names, one per class the data has: a wrong count is an error."""
        if len(names) != len(self.class_names):
            raise DatasetError(
                f"{source} names {len(names)} classes, dataset {self.name!r} has "
                f"{len(self.class_names)}; give one name per line, in label order"
            )
        return names

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def open_world(self) -> bool:
        """True when valid images of the domain may belong to none of the classes."""
        return self.taxonomy_size is not None and self.taxonomy_size > len(self.class_names)

    def load(self, split: Split) -> DataSplit:
        """Load a split once and keep it; validates what the reader produced."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        if split not in self._cache:
            images, labels = self._load(split)
            self._cache[split] = self._check(images, labels, split)
        return self._cache[split]

    @abstractmethod
    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        """Return uint8 images (N, C, H, W) and integer labels (N,)."""

    def _check(self, images: np.ndarray, labels: np.ndarray, split: str) -> DataSplit:
        if images.ndim != 4 or tuple(images.shape[1:]) != self.shape:
            raise DatasetError(
                f"{self.name} {split}: images have shape {tuple(images.shape)}, "
                f"expected (N, {', '.join(map(str, self.shape))})"
            )
        if len(images) != len(labels):
            raise DatasetError(
                f"{self.name} {split}: {len(images)} images but {len(labels)} labels"
            )
        if len(labels) and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise DatasetError(
                f"{self.name} {split}: labels span {labels.min()}..{labels.max()}, "
                f"expected 0..{self.num_classes - 1}"
            )
        x = torch.from_numpy(np.array(images, dtype=np.uint8)).float().div_(255.0)
        y = torch.from_numpy(np.asarray(labels, dtype=np.int64))
        return DataSplit(x, y)

    def source_files(self) -> list[Path]:
        """The files this dataset reads, for its fingerprint. Readers with a fixed file list
        need not override it: every existing file under the root named like an expected file."""
        found: list[Path] = []
        for name in self.expected_files:
            stem = name.split("[")[0]
            found += [p for p in (self.root / stem, self.root / (stem + ".gz")) if p.is_file()]
        return found

    def fingerprint(self) -> str:
        """A hash of the dataset's file list and sizes (not contents: cheap on large data).

        Model cards record it, so a campaign can refuse a model trained on other data."""
        h = hashlib.sha256(f"{self.name}\n{self.shape}\n".encode())
        files = sorted(self.source_files())
        for path in files:
            try:
                rel = path.relative_to(self.root)
            except ValueError:
                rel = Path(path.name)
            # As bytes: a file name that is not UTF-8 crashed str.encode.
            h.update(os.fsencode(rel.as_posix()) + f"\t{path.stat().st_size}\n".encode())
        return h.hexdigest()[:16]

    def require(self, *names: str) -> list[Path]:
        """Paths of the files a reader needs, with a clear error if any is missing."""
        paths = [self.root / n for n in names]
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise DatasetError(
                f"dataset {self.name!r}: missing {', '.join(str(p) for p in missing)}. "
                f"Expected these files under {self.root}: {', '.join(self.expected_files)}. "
                f"Pass the folder with --data-dir or set ${DATA_ENV_VAR}."
            )
        return paths


DATASETS: Registry[type[Dataset]] = Registry("dataset")
