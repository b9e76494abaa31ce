"""`latentfuzz data check` and `data add` on folders from elsewhere: file and folder names
that are not UTF-8 (a Latin-1 disk), and images that declare billions of pixels."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

from engine.datasets import DatasetError
from engine.datasets.imagefolder import ImageFolder
from tests.crafted_files import png_bomb

# The CLI runner and the home of the imagefolder tests (in_home is autouse).
from tests.engine.datasets.test_imagefolder import cli, in_home  # noqa: F401
from tests.tiny_data import write_folder


def named(folder: Path, raw: bytes) -> Path:
    """`folder` / a name made of raw bytes, as os.listdir gives it back (surrogates)."""
    return Path(os.fsdecode(os.fsencode(folder) + b"/" + raw))


def test_files_named_in_another_encoding_are_read_and_named(tmp_path: Path, in_home: Path):
    root = write_folder(tmp_path / "imgs", rejects=False)
    shutil.copy(root / "cat" / "1.png", named(root / "cat", b"chat-\xe9t\xe9.png"))
    named(root / "dog", b"cass\xe9.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    out = cli("data", "check", str(root))
    assert out.exit_code == 0, out.output
    assert "19 images" in out.output  # 3 x 6, and the one named in Latin-1
    assert "dog/cass\\xe9.png: not an image" in out.output  # named by its bytes
    out = cli("data", "add", "pets", str(root), "--home", str(in_home))
    assert out.exit_code == 0, out.output  # it crashed hashing the file list
    assert ImageFolder(root, name="pets").fingerprint() in out.output


def test_a_folder_named_in_another_encoding_is_added(tmp_path: Path, in_home: Path):
    root = write_folder(named(tmp_path, b"donn\xe9es"), rejects=False)
    out = cli("data", "add", "pets", str(root), "--home", str(in_home))
    assert out.exit_code == 0, out.output
    out = cli("data", "list", "--home", str(in_home))
    assert out.exit_code == 0 and "pets (yours)" in out.output


def test_a_class_folder_named_in_another_encoding_is_refused_in_one_line(
    tmp_path: Path, in_home: Path
):
    root = write_folder(tmp_path / "imgs", rejects=False)
    (root / "dog").rename(named(root, b"chien-\xe9"))
    for args in (["check", str(root)], ["add", "pets", str(root), "--home", str(in_home)]):
        out = cli("data", *args)
        assert isinstance(out.exception, DatasetError), out.output
        said = str(out.exception)
        assert "\n" not in said and "chien-\\xe9" in said and "not named in UTF-8" in said
        assert "rename" in said
    assert not (in_home / "datasets").exists() or not any((in_home / "datasets").iterdir())
    assert not (in_home / "cache").exists()


def test_an_image_declaring_billions_of_pixels_is_set_aside_undecoded(
    tmp_path: Path, in_home: Path
):
    root = write_folder(tmp_path / "imgs", rejects=False)
    png_bomb(root / "cat" / "bomb.png")  # 440 KB; 3.6 GB decoded
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(root / "cat" / "small.png")
    out = cli("data", "check", str(root))
    assert out.exit_code == 0, out.output
    line = next(ln for ln in out.output.splitlines() if "bomb.png" in ln)
    assert "declares 3,600,000,000 pixels" in line
    out = cli("data", "add", "pets", str(root), "--home", str(in_home))
    assert out.exit_code == 0, out.output
