"""Dataset readers on tiny files written in each format's exact layout."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from scipy.io import savemat

from engine.datasets import DATASETS, DatasetError, get_dataset
from tests.helpers import write_idx


def test_registry_lists_bundled_datasets():
    assert {"mnist", "mnist-idx", "cifar10", "svhn"} <= set(DATASETS.names())


def test_embedded_mnist_split_is_deterministic_and_stratified():
    ds = get_dataset("mnist")
    train, test = ds.load("train"), ds.load("test")
    assert (len(train), len(test)) == (4000, 1000)
    assert tuple(test.images.shape[1:]) == (1, 28, 28)
    assert float(test.images.min()) >= 0.0 and float(test.images.max()) <= 1.0
    assert np.bincount(test.labels.numpy()).tolist() == [100] * 10
    again = get_dataset("mnist").load("test")
    assert (again.images == test.images).all()


@pytest.mark.parametrize("gz", [False, True])
def test_idx_reader(tmp_path: Path, gz: bool):
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 6), ("t10k", 4)):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)), gz)
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", np.arange(n) % 10, gz)
    ds = get_dataset("mnist-idx", tmp_path)
    test = ds.load("test")
    assert tuple(test.images.shape) == (4, 1, 28, 28)
    assert test.labels.tolist() == [0, 1, 2, 3]
    assert len(ds.load("train")) == 6


def test_idx_reader_rejects_bad_magic(tmp_path: Path):
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(b"\x00\x00\x0d\x03" + b"\x00" * 12)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(1))
    with pytest.raises(DatasetError, match="IDX magic"):
        get_dataset("mnist-idx", tmp_path).load("test")


def test_idx_missing_files_name_what_is_expected(tmp_path: Path):
    with pytest.raises(DatasetError) as e:
        get_dataset("mnist-idx", tmp_path).load("train")
    msg = str(e.value)
    assert "train-images-idx3-ubyte" in msg and "--data-dir" in msg and str(tmp_path) in msg


def test_cifar10_reader(tmp_path: Path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"data": rng.integers(0, 256, (3, 3072), dtype=np.uint8),
            b"labels": [1, 5, 9],
            b"batch_label": name.encode(),
        }
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)
    ds = get_dataset("cifar10", tmp_path)  # the parent folder is accepted too
    train, test = ds.load("train"), ds.load("test")
    assert tuple(train.images.shape) == (15, 3, 32, 32)
    assert test.labels.tolist() == [1, 5, 9]
    with open(folder / "test_batch", "rb") as f:
        raw = pickle.load(f, encoding="bytes")[b"data"]
    # Row layout is 1024 red, then green, then blue values, each row-major.
    assert int(round(float(test.images[0, 1, 0, 0]) * 255)) == raw[0, 1024]
    assert ds.class_names[9] == "truck"


def test_cifar10_missing(tmp_path: Path):
    with pytest.raises(DatasetError, match="data_batch_1"):
        get_dataset("cifar10", tmp_path).load("train")


def test_svhn_reader(tmp_path: Path):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (32, 32, 3, 4), dtype=np.uint8)
    savemat(
        tmp_path / "test_32x32.mat", {"X": x, "y": np.array([[10], [1], [2], [10]], dtype=np.uint8)}
    )
    test = get_dataset("svhn", tmp_path).load("test")
    assert tuple(test.images.shape) == (4, 3, 32, 32)
    assert test.labels.tolist() == [0, 1, 2, 0]  # SVHN's label 10 is the digit 0
    assert int(round(float(test.images[3, 2, 5, 7]) * 255)) == x[5, 7, 2, 3]


def test_svhn_missing_and_corrupt(tmp_path: Path):
    with pytest.raises(DatasetError, match="train_32x32.mat"):
        get_dataset("svhn", tmp_path).load("train")
    (tmp_path / "train_32x32.mat").write_bytes(b"not a mat file")
    with pytest.raises(DatasetError, match="MATLAB"):
        get_dataset("svhn", tmp_path).load("train")
