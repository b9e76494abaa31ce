"""Image files of a bundled reader's folder (the ImageNet subsets) come from elsewhere:
a declared size is checked before decoding, a damaged file and a name that is not UTF-8
end in one line or work, never in a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.core.untrusted import UntrustedFileError
from engine.datasets import DatasetError, get_dataset
from tests.crafted_files import png_bomb


def pizza(tmp_path: Path) -> Path:
    for split in ("train", "test"):
        (tmp_path / split / "963").mkdir(parents=True)
        Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / split / "963" / "a.png")
    return tmp_path


def test_an_imagenet_image_declaring_billions_of_pixels_is_refused_undecoded(tmp_path):
    png_bomb(pizza(tmp_path) / "test" / "963" / "b.png")
    with pytest.raises(UntrustedFileError, match=r"b\.png' declares 3,600,000,000 pixels"):
        get_dataset("imagenet-pizza", tmp_path).load("test")


def test_a_damaged_imagenet_image_is_named_in_one_line(tmp_path):
    (pizza(tmp_path) / "test" / "963" / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n cut")
    with pytest.raises(DatasetError, match=r"b\.png: not a readable image") as e:
        get_dataset("imagenet-pizza", tmp_path).load("test")
    assert "\n" not in str(e.value)


def test_an_imagenet_file_named_in_another_encoding_is_fingerprinted(tmp_path):
    folder = pizza(tmp_path) / "train" / "963"
    before = get_dataset("imagenet-pizza", tmp_path).fingerprint()
    odd = os.fsdecode(os.fsencode(folder) + b"/p\xe9.png")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(odd)
    ds = get_dataset("imagenet-pizza", tmp_path)
    assert ds.fingerprint() != before  # it crashed encoding the file list
    assert len(ds.load("train")) == 2
