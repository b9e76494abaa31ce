"""Readers for full datasets in their standard on-disk formats, from a user's folder.

No torchvision: each format is a few lines. Tests write tiny files in exactly these formats.
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from pathlib import Path
from typing import Any

import numpy as np

from engine.datasets.base import DATASETS, Dataset, DatasetError, Split
from engine.datasets.mnist_embedded import DIGITS


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (optionally gzipped): magic 0x0000 08 NDIM, big-endian dims, uint8 data."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4:
        raise DatasetError(f"{path}: {len(raw)} bytes, too short for an IDX header")
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise DatasetError(
            f"{path}: IDX magic {raw[:4].hex()}, expected 0000 08 NN (unsigned bytes)"
        )
    dims = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise DatasetError(f"{path}: header says {dims} but holds {data.size} values")
    return data.reshape(dims)


class SafeUnpickler(pickle.Unpickler):
    """Unpickles only plain data: dicts, lists, bytes, strings, numbers and numpy arrays.

    A CIFAR-10 batch is a pickle, and pickle.load runs whatever a crafted file names (os.system
    via __reduce__). Plain containers need no global at all; numpy arrays need exactly the
    reconstructors below, so every other global is refused before it is called."""

    ALLOWED = frozenset(
        {
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"),
        }
    )

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(
                f"refusing {module}.{name}: only numpy arrays, lists, dicts, bytes and "
                "strings are read"
            )
        return super().find_class(module, name)


def _find(ds: Dataset, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (ds.root / name).exists():
            return ds.root / name
    return ds.require(stem)[0]


@DATASETS.register("mnist-idx")
class IdxMNIST(Dataset):
    """The full 70,000-image MNIST from the original IDX files."""

    name = "mnist-idx"
    shape = (1, 28, 28)
    class_names = DIGITS
    domain = "digit"
    expected_files = (
        "train-images-idx3-ubyte[.gz]",
        "train-labels-idx1-ubyte[.gz]",
        "t10k-images-idx3-ubyte[.gz]",
        "t10k-labels-idx1-ubyte[.gz]",
    )

    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        prefix = "train" if split == "train" else "t10k"
        images = read_idx(_find(self, f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(_find(self, f"{prefix}-labels-idx1-ubyte"))
        return images[:, None, :, :], labels.astype(np.int64)


@DATASETS.register("cifar10")
class CIFAR10(Dataset):
    """CIFAR-10 'python version': pickled batches in cifar-10-batches-py/."""

    name = "cifar10"
    shape = (3, 32, 32)
    class_names = (
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    )
    domain = "real-world object"
    expected_files = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)

    def __init__(
        self, root: str | os.PathLike[str] | None = None, *args: Any, **options: Any
    ) -> None:
        super().__init__(root, *args, **options)
        # Accept either the extracted folder itself or its parent. Decided here, not on the
        # first read: the fingerprint (file paths under the root) must not depend on it.
        sub = self.root / "cifar-10-batches-py"
        if not (self.root / "data_batch_1").exists() and sub.is_dir():
            self.root = sub

    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        names = self.expected_files[:5] if split == "train" else ("test_batch",)
        xs, ys = [], []
        for path in self.require(*names):
            with open(path, "rb") as f:
                try:
                    batch = SafeUnpickler(f, encoding="bytes").load()
                except Exception as e:  # noqa: BLE001 - any unpickling failure means a bad file
                    raise DatasetError(f"{path}: not a CIFAR-10 pickle batch ({e})") from e
            if b"data" not in batch or b"labels" not in batch:
                raise DatasetError(f"{path}: keys {sorted(batch)}, expected b'data' and b'labels'")
            xs.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(batch[b"labels"], dtype=np.int64))
        return np.concatenate(xs), np.concatenate(ys)


@DATASETS.register("svhn")
class SVHN(Dataset):
    """SVHN cropped digits: train_32x32.mat / test_32x32.mat (X: 32x32x3xN, y: N x 1, 10 = '0')."""

    name = "svhn"
    shape = (3, 32, 32)
    class_names = DIGITS
    domain = "house-number digit"
    expected_files = ("train_32x32.mat", "test_32x32.mat")

    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        # Deferred (start-up time: loads scipy).
        from scipy.io import loadmat  # scipy is slow to import; only SVHN needs it

        (path,) = self.require(f"{split}_32x32.mat")
        try:
            mat = loadmat(path)
        except Exception as e:  # noqa: BLE001
            raise DatasetError(f"{path}: not a MATLAB .mat file ({e})") from e
        if "X" not in mat or "y" not in mat:
            names = sorted(k for k in mat if not k.startswith("__"))
            raise DatasetError(f"{path}: variables {names}, expected X and y")
        x = np.transpose(mat["X"], (3, 2, 0, 1)).astype(np.uint8)
        y = mat["y"].reshape(-1).astype(np.int64) % 10  # SVHN stores digit 0 as label 10
        return x, y
