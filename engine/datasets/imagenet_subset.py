"""Subsets of ImageNet-1k, as the ICST study uses them (pizza 963, teddy bear 850).

The classes are a handful of the 1,000 ImageNet classes, so a valid image of the domain
("a real-world object") may belong to none of them: labellers can answer "a different
real-world object" (valid, another class), and an answer that names another ImageNet id
(an imported study's "923") counts the same way. Class indices are positions in
``class_ids``; imported answers and expected labels are ImageNet ids.

Images are read from ``<root>/<split>/<class>/*.{png,jpg,jpeg}``, where ``<class>`` is the
ImageNet id or the class name, each resized so its shorter side is 224 (bicubic) and
centre-cropped to 224 x 224, as the usual ImageNet evaluation does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from engine.core.errors import LatentfuzzError
from engine.core.images import open_image
from engine.datasets.base import DATASETS, Dataset, DatasetError, Split, printable

SIDE = 224
SUFFIXES = (".png", ".jpg", ".jpeg")


def load_square(path: Path, side: int = SIDE) -> np.ndarray:
    """An image file as uint8 (3, side, side): shorter side to `side`, centre crop. Its
    declared size is checked before it is decoded; a damaged file is named in one line."""
    try:
        with open_image(path, "image") as im:
            im = im.convert("RGB")
    except LatentfuzzError:
        raise
    except (OSError, SyntaxError, ValueError) as e:
        raise DatasetError(
            f"{printable(path)}: not a readable image ({e}); remove or replace it"
        ) from None
    scale = side / min(im.size)
    w, h = max(side, round(im.width * scale)), max(side, round(im.height * scale))
    im = im.resize((w, h), Image.Resampling.BICUBIC)
    left, top = (w - side) // 2, (h - side) // 2
    im = im.crop((left, top, left + side, top + side))
    return np.asarray(im, dtype=np.uint8).transpose(2, 0, 1)


class ImageNetSubset(Dataset):
    """Base of the ImageNet subsets; subclasses set name, class_names and class_ids."""

    shape = (3, SIDE, SIDE)
    domain = "real-world object"
    taxonomy_size = 1000
    expected_files = ("train/<id or name>/*.png|jpg", "test/<id or name>/*.png|jpg")

    # Folders keep the declared names: a classes.txt renames classes for display only.
    def source_files(self) -> list[Path]:
        """Every image of the class folders of both splits, for the fingerprint."""
        found: list[Path] = []
        for split in ("train", "test"):
            for cid, cname in zip(self.class_ids, type(self).class_names, strict=True):
                for folder in (self.root / split / str(cid), self.root / split / cname):
                    if folder.is_dir():
                        found += [p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES]
        return found

    def _load(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        images, labels = [], []
        for idx, (cid, cname) in enumerate(
            zip(self.class_ids, type(self).class_names, strict=True)
        ):
            folders = [self.root / split / str(cid), self.root / split / cname]
            folder = next((f for f in folders if f.is_dir()), None)
            if folder is None:
                raise DatasetError(
                    f"dataset {self.name!r}: no folder {folders[0]} or {folders[1]}. Put the "
                    f"{split} images of class {cname} (ImageNet {cid}) there, and pass the "
                    f"parent folder with --data-dir."
                )
            files = sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES)
            images += [load_square(p) for p in files]
            labels += [idx] * len(files)
        if not images:
            raise DatasetError(f"dataset {self.name!r}: no PNG or JPEG images under {self.root}")
        return np.stack(images), np.asarray(labels, dtype=np.int64)


def declare(name: str, classes: dict[int, str]) -> type[ImageNetSubset]:
    """Register a subset of ImageNet classes {ImageNet id: name} as a dataset."""
    ids = tuple(sorted(classes))
    if not all(0 <= i < 1000 for i in ids):
        raise ValueError(f"ImageNet ids are 0..999, got {ids}")
    cls = type(
        f"ImageNetSubset_{name}",
        (ImageNetSubset,),
        {
            "name": name,
            "class_ids": ids,
            "class_names": tuple(classes[i] for i in ids),
            "__doc__": f"ImageNet classes {', '.join(f'{classes[i]} ({i})' for i in ids)}.",
        },
    )
    return DATASETS.register(name)(cls)


# The ICST study's two ImageNet datasets, and both together.
declare("imagenet-pizza", {963: "pizza"})
declare("imagenet-teddy", {850: "teddy bear"})
declare("imagenet-icst", {963: "pizza", 850: "teddy bear"})
