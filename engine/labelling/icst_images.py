"""The ICST study's images (the deeptestai/genai_tigs repository), linked to the rows of
its human-study CSVs, so that an imported study shows its images like our own studies do.

The repository keeps one folder per generator and perturbation extent:

    generated_images/mnist/mnist_vae/mnist_vae_high/image_<N>_iteration<I>_X<E>_Y<P>.npy

N numbers the seeds of that run (not the CSV's ID, and not unique: a seed that failed and
survived is saved twice), I is the generation, E the expected and P the predicted label.
A CSV row names (TOOL, MUT_EXT, ITER, Expected, Predicted) and nothing else, so that is the
key; where two files of a folder share it, the row is ambiguous and gets no image, and
where none does, it is missing. Nothing is guessed: both are listed by row.

The arrays are float32, (1, 28, 28) or (28, 28) for MNIST and (3, 32, 32) for SVHN and
CIFAR-10; the GAN folders hold tanh outputs in [-1, 1], the others [0, 1]. The range is
judged per folder, so one dark GAN image is not read as [0, 1]. The ImageNet folders are
refused: their VAE images are 128 x 128 (not the dataset's 224) and their GAN arrays hold
the classifier's normalised input.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from engine.core.errors import ConfigError
from engine.core.images import to_pil
from engine.core.untrusted import UntrustedFileError, bounded, inside, quote
from engine.datasets import Dataset

FILE = re.compile(r"image_(\d+)_iteration(\d+)_X(\d+)_Y(\d+)\.npy")
LAYOUT = "<dataset>_<tool>/<dataset>_<tool>_<low|high>/image_<N>_iteration<I>_X<E>_Y<P>.npy"
#: Files indexed at most: the study's largest dataset folder holds 580.
MAX_FILES = 100_000
#: Slack on a value range: float32 outputs overshoot 1.0 by rounding.
TOL = 1e-3

Key = tuple[str, str, int, int, int]  # tool, extent, iteration, expected, predicted


def key(tool: str, extent: str, iteration: str, expected: str, predicted: str | None):
    """A CSV row's key from its cells as written; None when one is no whole number."""
    try:
        numbers = tuple(int(float(t)) for t in (iteration, expected, predicted))
    except (TypeError, ValueError, OverflowError):  # "inf" and "nan" are no iteration
        return None
    return (tool.strip().lower(), extent.strip().lower(), *numbers)


@dataclass
class Links:
    """Which items got which file, per the study's rows."""

    root: Path
    linked: dict[int, Path] = field(default_factory=dict)  # item_id -> .npy
    ambiguous: dict[int, list[Path]] = field(default_factory=dict)
    missing: list[int] = field(default_factory=list)
    ranges: dict[str, str] = field(default_factory=dict)  # folder -> range read as
    names: dict[int, str] = field(default_factory=dict)  # item_id -> the row's ID

    def summary(self) -> str:
        n = len(self.linked) + len(self.ambiguous) + len(self.missing)
        return (
            f"images: {len(self.linked)} of {n} rows linked to {self.root}; "
            f"{len(self.ambiguous)} ambiguous (two or more files share tool, extent, "
            f"iteration, X and Y), {len(self.missing)} missing (no such file)"
        )

    def details(self) -> list[str]:
        """One line per row without an image, and the value range read per folder."""
        out = [
            f"ID {self.names[i]}: ambiguous, "
            + ", ".join(p.relative_to(self.root).as_posix() for p in files)
            for i, files in self.ambiguous.items()
        ]
        out += [f"ID {self.names[i]}: missing" for i in self.missing]
        out += [f"{folder}: values read as {r}" for folder, r in sorted(self.ranges.items())]
        return out


def index(root: Path) -> dict[Key, list[Path]]:
    """Every image file of a genai_tigs dataset folder, by key; refuses a folder that holds
    none in the repository's layout."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(
            f"--images {quote(root)} is no folder; expected a genai_tigs image folder "
            f"(e.g. generated_images/mnist, holding {LAYOUT})"
        )
    files: dict[Key, list[Path]] = {}
    seen = 0
    for tool_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for run_dir in sorted(p for p in tool_dir.iterdir() if p.is_dir()):
            prefix, _, extent = run_dir.name.rpartition("_")
            tool = prefix.rpartition("_")[2]
            if not extent or not tool or not tool_dir.name.endswith(f"_{tool}"):
                continue
            for f in sorted(run_dir.iterdir()):
                if not (m := FILE.fullmatch(f.name)):
                    continue  # the runs' own CSV and spreadsheet files sit beside them
                seen += 1
                bounded(seen, MAX_FILES, f"image files under {root}", unit="files")
                k = (tool.lower(), extent.lower(), int(m[2]), int(m[3]), int(m[4]))
                files.setdefault(k, []).append(f)
    if not files:
        raise ConfigError(
            f"--images {quote(root)} holds no file laid out as {LAYOUT}; expected a "
            "genai_tigs image folder: pass the dataset's folder under generated_images "
            "(e.g. generated_images/mnist)"
        )
    return files


def link(root: Path, keys: list[Key | None], names: list[str]) -> Links:
    """Each item (its position in `keys`) to its one file, or listed as ambiguous/missing."""
    files = index(root)
    out = Links(Path(root), names=dict(enumerate(names)))
    for item, k in enumerate(keys):
        found = files.get(k, []) if k is not None else []
        if len(found) == 1:
            out.linked[item] = found[0]
        elif found:
            out.ambiguous[item] = found
        else:
            out.missing.append(item)
    return out


def prepare(
    root: Path, named: list[list], items: list[dict], ds: Dataset
) -> tuple[Links, dict[int, np.ndarray]]:
    """The links of an import's items, from each row's (tool, extent, iteration, expected,
    predicted) cells, and their images as uint8 (C, H, W), every file read and checked."""
    links = link(root, [key(*n) for n in named], [i["external_id"] for i in items])
    return links, convert(links, ds)


def read_npy(path: Path, root: Path, ds: Dataset) -> np.ndarray:
    """One image file as (C, H, W), its dtype and value range as stored; refuses a path that
    leaves `root`, a pickle, and a shape or dtype that is no image of `ds`, reading the
    header before the data (a header may declare an array of any size)."""
    where = f"{path.relative_to(root).as_posix()} under {root}"
    full = inside(root, path, "image file", source=str(root))
    c, h, w = ds.shape
    expected = {(c, h, w), (h, w, c)} | ({(h, w)} if c == 1 else set())
    shapes = " or ".join(str(s) for s in sorted(expected))
    with open(full, "rb") as f:
        try:
            version = npy_format.read_magic(f)
            header = {
                (1, 0): npy_format.read_array_header_1_0,
                (2, 0): npy_format.read_array_header_2_0,
            }.get(version)
            if header is None:
                raise ValueError(f"format version {version} is not read here")
            shape, _, dtype = header(f)
        except ValueError as e:
            raise UntrustedFileError(f"{where} is no .npy array ({e}); expected {shapes}") from None
        if dtype.hasobject or dtype.kind not in "fiu":
            raise UntrustedFileError(
                f"{where} holds {dtype} values"
                + (" (Python objects, read only by unpickling)" if dtype.hasobject else "")
                + f"; expected float or integer pixels of shape {shapes}"
            )
        if tuple(shape) not in expected:
            raise UntrustedFileError(
                f"{where} has shape {tuple(shape)}, expected {shapes} (a {ds.name} image): "
                "pass the --images folder of the study's own dataset"
            )
        f.seek(0)
        a = np.load(f, allow_pickle=False)
    if a.ndim == 2:
        a = a[None]
    elif a.shape == (h, w, c) and (h, w, c) != (c, h, w):
        a = a.transpose(2, 0, 1)
    return a


def _as_unit(arrays: list[np.ndarray], integer: bool, folder: str) -> tuple[str, list]:
    """A folder's arrays in [0, 1], and the range they were read as."""
    lo = min(float(a.min()) for a in arrays)
    hi = max(float(a.max()) for a in arrays)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise UntrustedFileError(f"{folder} holds NaN or infinite pixels; expected finite values")
    if integer or (lo >= -TOL and 1 + TOL < hi <= 255 + TOL):
        if lo < -TOL or hi > 255 + TOL:
            raise UntrustedFileError(
                f"{folder} holds integer pixels in [{lo:g}, {hi:g}], expected [0, 255]"
            )
        return "[0, 255]", [a / 255 for a in arrays]
    if lo >= -TOL and hi <= 1 + TOL:
        return "[0, 1]", arrays
    if lo >= -1 - TOL and hi <= 1 + TOL:
        return "[-1, 1]", [(a + 1) / 2 for a in arrays]
    raise UntrustedFileError(
        f"{folder} holds pixels in [{lo:.4g}, {hi:.4g}]; expected [0, 1], [-1, 1] (a GAN's "
        "tanh) or [0, 255]: check that the folder holds images"
    )


def convert(links: Links, ds: Dataset) -> dict[int, np.ndarray]:
    """The linked images as uint8 (C, H, W), every file read and checked (nothing is
    written here); sets `links.ranges`."""
    by_folder: dict[Path, list[int]] = {}
    for item, path in links.linked.items():
        by_folder.setdefault(path.parent, []).append(item)
    out: dict[int, np.ndarray] = {}
    for folder, items in sorted(by_folder.items()):
        raw = [read_npy(links.linked[i], links.root, ds) for i in items]
        integer = all(np.issubdtype(a.dtype, np.integer) for a in raw)
        raw = [a.astype(np.float64) for a in raw]
        rel = folder.relative_to(links.root).as_posix()
        links.ranges[rel], unit = _as_unit(raw, integer, f"{rel} under {links.root}")
        for i, a in zip(items, unit, strict=True):
            out[i] = np.clip(np.round(a * 255), 0, 255).astype(np.uint8)
    return out


def write(home: Path, study_id: str, images: dict[int, np.ndarray]) -> dict[int, str]:
    """The PNGs of a study's items, in its folder of the home; their paths from the home.
    Removes the folder again when a write fails."""
    folder = inside(home, f"studies/{study_id}", "study folder")
    out = {}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for item, img in images.items():
            rel = f"studies/{study_id}/icst-{item:04d}.png"
            to_pil(img).save(inside(home, rel, "study image"))
            out[item] = rel
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return out
