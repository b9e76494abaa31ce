"""`latentfuzz data check|add|list|remove` (engine/cli/data.py) on folders of your own images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import engine.core.home
from engine.datasets import DatasetError, get_dataset
from engine.datasets.imagefolder import ImageFolder

# The folder fixtures and the CLI runner of the imagefolder tests (in_home is autouse).
from tests.engine.datasets.test_imagefolder import cli, folder, in_home, splits  # noqa: F401
from tests.tiny_data import CLASSES, REJECTED, write_folder


def test_check_says_what_it_found_and_what_it_rejected(folder: Path):
    out = cli("data", "check", str(folder))
    assert out.exit_code == 0, out.output
    ds = ImageFolder(folder)
    report = ds.inspect(write_cache=False)
    assert report.class_names == CLASSES
    # Every decodable file is counted once, in one split.
    decodable = sum(1 for p in folder.rglob("*") if p.suffix in (".png", ".jpg")) - 2
    assert sum(report.counts["train"]) + sum(report.counts["test"]) == decodable
    for name, train, test in zip(CLASSES, *report.counts.values(), strict=True):
        assert f"│ {name}" in out.output and f"│ {train} " in out.output and test >= 1
    assert f"32x32: {decodable - 1}" in out.output and "40x30: 1" in out.output
    assert "RGB: " in out.output and "L: 1" in out.output
    for rel, why in REJECTED.items():
        line = next(line for line in out.output.splitlines() if line.strip().startswith(rel))
        assert why in line, line
    assert not (engine.core.home.current_home() / "cache").exists()  # check writes nothing


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is empty"),
        (lambda p: (p.mkdir(), (p / "a.png").write_bytes(b"x")), "no class folder"),
        (lambda p: None, "does not exist"),
        # Class folders of files that are no images: the reasons, not "run data check"
        # (which this is), the advice it gave.
        (
            lambda p: (
                (p / "a").mkdir(parents=True),
                (p / "a" / "x.txt").write_text("hi"),
                (p / "b").mkdir(),
                (p / "b" / "y.png").write_bytes(b"not png"),
            ),
            "a/x.txt: not a PNG or JPEG file",
        ),
    ],
)
def test_check_refuses_an_unusable_folder_in_one_line(tmp_path: Path, make, message):
    make(tmp_path / "d")
    out = cli("data", "check", str(tmp_path / "d"))
    assert isinstance(out.exception, DatasetError)
    assert message in str(out.exception) and "\n" not in str(out.exception)
    assert "data check" not in str(out.exception)


def test_data_add_names_a_folder_everywhere(folder: Path, in_home: Path, tmp_path: Path):
    out = cli("data", "add", "pets", str(folder), "--home", str(in_home))
    assert out.exit_code == 0, out.output
    ds = get_dataset("pets")
    assert (ds.name, ds.shape, ds.class_names) == ("pets", (3, 32, 32), CLASSES)
    assert tuple(ds.load("test").images.shape[1:]) == (3, 32, 32)
    assert ds.fingerprint() in out.output
    listed = cli("data", "list", "--home", str(in_home)).output
    assert "pets (yours): 3x32x32, 3 classes (cat, dog, fox)" in listed
    assert ds.fingerprint() in listed and "mnist (bundled)" in listed
    again = cli("data", "add", "pets", str(tmp_path), "--home", str(in_home))
    assert "already exists" in str(again.exception)
    assert get_dataset("pets").root == folder.resolve()  # unchanged
    bad = tmp_path / "two.txt"
    bad.write_text("a\nb\n")
    out = cli("data", "add", "pets2", str(folder), "--classes", str(bad), "--home", str(in_home))
    assert isinstance(out.exception, DatasetError)
    assert not (in_home / "datasets" / "pets2.json").exists()  # nothing half-written
    assert "bundled" in str(cli("data", "add", "cifar10", str(folder)).exception)
    (tmp_path / "one" / "a").mkdir(parents=True)
    for i in range(2):
        Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "one" / "a" / f"{i}.png")
    out = cli("data", "add", "solo", str(tmp_path / "one"), "--home", str(in_home))
    assert "at least two" in str(out.exception)
    assert not (in_home / "datasets" / "solo.json").exists()


def test_a_class_left_without_training_images_is_refused_by_data_add(tmp_path: Path, in_home):
    """Rejected files count in the split: a class of corrupt files, or of one image that
    the split held out, was added and trained on as a label with no data."""
    root = write_folder(tmp_path / "few", per_class=3, rejects=False)
    for f in (root / "fox").iterdir():
        f.write_bytes(b"\x89PNG\r\n\x1a\n" + b"broken" * 5)  # every fox image corrupt
    out = cli("data", "check", str(root))
    assert out.exit_code == 0 and "warning: no training image in class fox (0 train, 0 test)" in (
        " ".join(out.output.split())
    )
    out = cli("data", "add", "few", str(root), "--home", str(in_home))
    assert isinstance(out.exception, DatasetError)
    assert "no training image in class fox (0 train, 0 test); add images" in str(out.exception)
    assert not (in_home / "datasets" / "few.json").exists()
    assert not list((in_home / "cache").rglob("few-*.npz"))  # nothing half-written


def test_a_moved_folder_says_how_to_point_the_dataset_at_it(folder: Path, tmp_path: Path):
    assert cli("data", "add", "pets", str(folder)).exit_code == 0
    before = get_dataset("pets").fingerprint()
    moved = folder.rename(tmp_path / "moved")
    with pytest.raises(
        DatasetError,
        match=r"dataset pets's image folder .* does not exist "
        r"\(moved or deleted\?\); if it moved: `latentfuzz data add pets "
        r"NEW_FOLDER --replace`",
    ):
        get_dataset("pets")
    assert cli("data", "add", "pets", str(moved), "--replace").exit_code == 0
    assert get_dataset("pets").fingerprint() == before  # its models still fit


def test_data_add_at_a_size_training_cannot_take_says_so(folder: Path):
    out = cli("data", "add", "odd", str(folder), "--size", "30")
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "warning: latentfuzz cannot train models at this size" in said
    assert "side 30 is not supported" in said and "next: latentfuzz train" not in said


def test_data_remove_takes_its_decoded_images_with_it(folder: Path, in_home: Path):
    assert cli("data", "add", "pets", str(folder)).exit_code == 0
    assert cli("data", "add", "petsy", str(folder)).exit_code == 0  # a name that starts alike
    cache = in_home / "cache" / "datasets"
    assert len(list(cache.glob("pets-*.npz"))) == 1
    assert cli("data", "remove", "pets").exit_code == 0
    assert not list(cache.glob("pets-*.npz")) and len(list(cache.glob("petsy-*.npz"))) == 1
    assert folder.is_dir()  # the images stay
