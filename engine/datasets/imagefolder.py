"""A folder of the user's own images: one sub-folder per class, PNG or JPEG files.

Unlike the bundled readers, its shape and classes come from the data and the user's
options, so it is configured per instance; `latentfuzz data add NAME DIR` stores the options
under a name (engine/datasets/specs.py) usable wherever a dataset name is.

Each image is centre-cropped to a square (``fit="crop"``, the default) or stretched to one
(``fit="stretch"``), then resized to size x size with Pillow's bilinear filter, which is
antialiased when shrinking (its support grows with the scale). JPEGs are first decoded at
the smallest power-of-two reduction still at least that size (Pillow's ``draft``): 3.4
instead of 5.4 ms per 320x240 photo here. Channels: Pillow's ``convert("L")`` or
``convert("RGB")`` (an alpha channel is dropped).

The test split is a given folder with the same class folders (a folder holding just
``train/`` and ``test/`` gives both), or a seeded, stratified hold-out: in each class, a
permutation seeded by (split seed, CRC-32 of the class folder name) of the files sorted by
path puts round(fraction x n) of them in the test split (at least one, and one left for
training, when a class has two or more). Decoded images are
cached by fingerprint under the home's ``cache/datasets``, so a campaign does not decode
thousands of JPEGs each time it starts.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.core.home import current_home
from engine.datasets.base import (
    CLASSES_FILE,
    Dataset,
    DatasetError,
    Split,
    is_text,
    printable,
    read_class_names,
)
from engine.datasets.decoding import Fit, decode

SUFFIXES = (".png", ".jpg", ".jpeg")
HEX = frozenset("0123456789abcdef")


@dataclass
class Scan:
    """What a folder holds, before any decoding: image files per class folder, and what
    was set aside (path, why)."""

    folders: list[str]
    files: dict[str, list[Path]]
    rejected: list[tuple[Path, str]] = field(default_factory=list)


def scan(root: Path, what: str = "image folder") -> Scan:
    """Class folders of `root` and their PNG/JPEG files (sub-folders included), by name."""
    if not root.is_dir():
        raise DatasetError(
            f"{what} {root} does not exist or is not a folder; expected a "
            "folder with one sub-folder of images per class"
        )
    entries = sorted(p for p in root.iterdir() if not p.name.startswith("."))
    if not entries:
        raise DatasetError(
            f"{what} {root} is empty; expected one sub-folder of PNG or JPEG "
            "images per class (e.g. cats/1.png, dogs/2.jpg)"
        )
    out = Scan([], {})
    for p in entries:
        if not p.is_dir():
            if p.name != CLASSES_FILE:
                out.rejected.append((p, "file at the top level: put it in a class folder"))
            continue
        if not is_text(p.name):
            # Its name would be the class's, which the store, cards and specs hold as text.
            raise DatasetError(
                f"class folder '{printable(p.name)}' in {printable(root)} is not named in "
                "UTF-8 text (class names are stored as text); rename the folder"
            )
        files: list[Path] = []
        for f in sorted(p.rglob("*")):
            if f.name.startswith(".") or not f.is_file():
                continue
            if f.suffix.lower() not in SUFFIXES:
                out.rejected.append((f, f"not a PNG or JPEG file (suffix {f.suffix or 'none'})"))
            elif f.stat().st_size == 0:
                out.rejected.append((f, "empty file (0 bytes)"))
            else:
                files.append(f)
        if files:
            out.folders.append(p.name)
            out.files[p.name] = files
        else:
            out.rejected.append((p, "class folder without PNG or JPEG images: class left out"))
    if not out.folders:
        loose = sum(p.is_file() and p.suffix.lower() in SUFFIXES for p in entries)
        raise DatasetError(
            f"{what} {root} has no class folder with PNG or JPEG images"
            + (f" ({loose} images lie at its top level)" if loose else "")
            + "; expected one sub-folder per class (e.g. cats/1.png, dogs/2.jpg)"
        )
    out.rejected.sort()
    return out


def has_split_folders(root: Path) -> bool:
    """A folder holding exactly train/ and test/ (each with class folders): its splits."""
    if not root.is_dir():
        return False
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")} == {
        "train",
        "test",
    }


def cached_files(folder: Path, name: str) -> list[Path]:
    """The decoded-image caches of dataset `name` in `folder` (`NAME-<fingerprint>.npz`;
    not another dataset's whose name starts alike)."""
    return [
        p
        for p in folder.glob(f"{name}-*.npz")
        if len(rest := p.stem[len(name) + 1 :]) == 16 and set(rest) <= HEX
    ]


@dataclass
class Report:
    """`latentfuzz data check`: what a folder gave, split by split."""

    class_names: tuple[str, ...]
    folders: tuple[str, ...]
    counts: dict[str, list[int]]  # split -> images per class (decoded)
    sizes: Counter  # (width, height) -> files
    modes: Counter  # Pillow mode -> files
    rejected: list[tuple[Path, str]]
    shape: tuple[int, int, int]
    split_rule: str

    def without_training(self) -> str | None:
        """The classes that no decodable image trains, in words; None when every class has
        one. Rejected files count in the split, so a class can end with none."""
        train, test = self.counts["train"], self.counts["test"]
        empty = [
            f"{n} ({train[i]} train, {test[i]} test)"
            for i, n in enumerate(self.class_names)
            if train[i] == 0
        ]
        return ", ".join(empty) or None


def _rel(path: str | Path, root: Path) -> str:
    """A file's path under the dataset's folder, as the user sees it in the folder."""
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


class ImageFolder(Dataset):
    """One sub-folder per class of PNG/JPEG images, resized to size x size."""

    name = "imagefolder"
    domain = "image"
    expected_files = ("<class>/*.png|jpg|jpeg (one folder per class)",)

    def __init__(
        self,
        root: str | os.PathLike[str],
        name: str = "imagefolder",
        size: int = 32,
        channels: int = 3,
        fit: Fit = "crop",
        test_dir: str | os.PathLike[str] | None = None,
        holdout: float = 0.2,
        split_seed: int = 0,
        class_names: tuple[str, ...] | list[str] | None = None,
        domain: str | None = None,
        names_from: str = "the class names",
    ) -> None:
        if channels not in (1, 3):
            raise DatasetError(f"channels={channels}; expected 1 (grey) or 3 (RGB)")
        if not 4 <= size <= 1024:
            raise DatasetError(f"image size {size}; expected 4 to 1024 pixels")
        if fit not in ("crop", "stretch"):
            raise DatasetError(f"fit={fit!r}; expected crop or stretch")
        root = Path(root).expanduser()
        if test_dir is None and has_split_folders(root):
            if class_names is None and (root / CLASSES_FILE).is_file():
                class_names = read_class_names(root / CLASSES_FILE)  # beside train/, test/
                names_from = str(root / CLASSES_FILE)
            root, test_dir = root / "train", root / "test"
        if test_dir is None and not 0 < holdout < 1:
            raise DatasetError(
                f"hold-out fraction {holdout}; expected more than 0 and less "
                "than 1, or a test folder (--test-dir)"
            )
        self.name, self.domain = name, domain or name
        self.shape = (channels, size, size)
        self.fit, self.holdout, self.split_seed = fit, holdout, split_seed
        self.test_dir = None if test_dir is None else Path(test_dir).expanduser()
        self._scans = {"train": scan(root)}
        if self.test_dir is not None:
            self._scans["test"] = scan(self.test_dir, "test folder")
            extra = set(self._scans["test"].folders) - set(self._scans["train"].folders)
            if extra:
                raise DatasetError(
                    f"test folder {self.test_dir} has class folders {', '.join(sorted(extra))} "
                    f"that {root} lacks; give both folders the same class folders"
                )
        self._decoded: dict[str, np.ndarray] | None = None
        self._report: Report | None = None
        self._fingerprint: str | None = None
        self.folders = tuple(self._scans["train"].folders)
        self.class_names = self.folders
        super().__init__(root, class_names, names_from)
        how = "centre crop to a square" if fit == "crop" else "stretched to a square"
        split = (
            f"test = {self.test_dir}"
            if self.test_dir is not None
            else f"test = seeded hold-out {holdout:g} per class (split seed {split_seed})"
        )
        self.split_rule = (
            f"image folder {self.root}; {split}; {how}, Pillow bilinear resize to "
            f"{size}x{size} (antialiased), {'grey' if channels == 1 else 'RGB'}"
        )

    def named(self, names: tuple[str, ...], source: str) -> tuple[str, ...]:
        """A names file listing the class folders sets their order; other names rename
        the folders in sorted order."""
        if sorted(names) == sorted(self.folders):
            self.folders = names
            return names
        return super().named(names, source)

    def split_files(self) -> dict[str, list[tuple[Path, int]]]:
        """(file, label) of each split, before decoding."""
        label = {f: i for i, f in enumerate(self.folders)}
        train = self._scans["train"]
        out: dict[str, list[tuple[Path, int]]] = {"train": [], "test": []}
        for folder in self.folders:
            files = train.files[folder]
            test = set()
            if self.test_dir is None and len(files) >= 2:
                k = min(len(files) - 1, max(1, round(self.holdout * len(files))))
                rng = np.random.default_rng([self.split_seed, zlib.crc32(os.fsencode(folder))])
                test = set(rng.permutation(len(files))[:k].tolist())
            for i, f in enumerate(files):
                out["test" if i in test else "train"].append((f, label[folder]))
        if self.test_dir is not None:
            t = self._scans["test"]
            out["test"] = [(f, label[c]) for c in self.folders for f in t.files.get(c, [])]
        return out

    def source_files(self) -> list[Path]:
        return [f for files in self.split_files().values() for f, _ in files]

    def fingerprint(self) -> str:
        """Files, sizes, the options that change the pixels or the split, and the folders'
        label order: the same files read differently are different data. Kept once
        computed, like the file list it hashes (read when the dataset was opened)."""
        if self._fingerprint is None:
            self._fingerprint = self._hash()
        return self._fingerprint

    def _hash(self) -> str:
        split = "test folder" if self.test_dir else f"hold-out {self.holdout!r} {self.split_seed}"
        # Paths relative to the folders read: moving the data keeps its fingerprint.
        h = hashlib.sha256(
            f"{self.name}\n{self.shape}\n{self.fit}\n{split}\n{self.folders}\n".encode()
        )
        for split, files in self.split_files().items():
            base = self.root if split == "train" or self.test_dir is None else self.test_dir
            for f, y in files:
                # As bytes: a file name that is not UTF-8 crashed str.encode.
                rel = os.fsencode(f.relative_to(base).as_posix())
                h.update(f"{split}\t".encode() + rel + f"\t{y}\t{f.stat().st_size}\n".encode())
        return h.hexdigest()[:16]

    def inspect(self, write_cache: bool = True) -> Report:
        """Decode every file and say what was found (`data check` writes no cache)."""
        self._decoded = self._decode_all()
        if write_cache:
            self.save_cache()
        return self._report

    def save_cache(self) -> None:
        """The images `inspect` decoded, cached for the campaigns that read them."""
        self._write_cache(self._decoded)

    def _cache_path(self) -> Path:
        return current_home() / "cache" / "datasets" / f"{self.name}-{self.fingerprint()}.npz"

    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        if self._decoded is None:
            cache = self._cache_path()
            if cache.exists():
                with np.load(cache) as f:
                    self._decoded = {k: f[k] for k in f.files}
            else:
                self._decoded = self._decode_all()
                self._write_cache(self._decoded)
        return self._decoded[f"{split}_x"], self._decoded[f"{split}_y"]

    def _write_cache(self, arrays: dict[str, np.ndarray]) -> None:
        cache = self._cache_path()
        try:  # a read-only home only costs decoding again next time
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.npz")
            np.savez(tmp, **arrays)
            tmp.replace(cache)  # atomic: a parallel campaign never reads half a file
            # Earlier states of this folder are never read again: a model trained on
            # them is refused (engine/models/zoo.py, incompatibility).
            for old in cached_files(cache.parent, self.name):
                if old != cache:
                    old.unlink(missing_ok=True)
        except OSError:
            pass

    def _decode_all(self) -> dict[str, np.ndarray]:
        c, side, _ = self.shape
        sizes, modes, counts = Counter(), Counter(), {}
        rejected = [r for s in self._scans.values() for r in s.rejected]
        out: dict[str, np.ndarray] = {}
        for split, files in self.split_files().items():
            xs, ys = [], []
            for path, y in files:
                d = decode(path, side, c, self.fit)
                if d.array is None:
                    rejected.append((path, d.why))
                    continue
                xs.append(d.array)
                ys.append(y)
                sizes[d.size] += 1
                modes[d.mode] += 1
            out[f"{split}_x"] = np.stack(xs) if xs else np.zeros((0, *self.shape), np.uint8)
            out[f"{split}_y"] = np.asarray(ys, dtype=np.int64)
            counts[split] = np.bincount(out[f"{split}_y"], minlength=self.num_classes).tolist()
        if not len(out["train_y"]):
            # The reasons themselves: pointing to `data check` sent `data check` in a circle.
            why = "; ".join(f"{_rel(path, self.root)}: {reason}" for path, reason in rejected[:3])
            more = f" and {len(rejected) - 3} more" if len(rejected) > 3 else ""
            raise DatasetError(
                f"{self.root}: no image could be decoded ({len(rejected)} set aside: "
                f"{why}{more}); give class folders of PNG or JPEG images"
            )
        self._report = Report(
            self.class_names,
            self.folders,
            counts,
            sizes,
            modes,
            rejected,
            self.shape,
            self.split_rule,
        )
        return out
