"""One image file of a user's folder decoded to a dataset's uint8 (C, size, size), or the
reason it cannot be (engine/datasets/imagefolder.py says how: crop or stretch, Pillow's
bilinear resize, JPEG draft decoding, 16-bit grey scaled)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, UnidentifiedImageError

from engine.core.images import open_image
from engine.core.untrusted import UntrustedFileError

Fit = Literal["crop", "stretch"]


@dataclass
class Decoded:
    """An image decoded to uint8 (C, size, size), or why not, plus what the file held."""

    array: np.ndarray | None
    size: tuple[int, int] | None = None  # (width, height) as stored
    mode: str | None = None
    why: str | None = None


def _eight_bit(a: np.ndarray) -> Image.Image | None:
    """16-bit grey as 8-bit (65535 -> 255), not saturated: Pillow's convert("L") clipped
    every value above 255, and a 16-bit scan read as white."""
    if a.size and (a.min() < 0 or a.max() > 65535):
        return None
    return Image.fromarray(np.round(a.astype(np.float64) / 257).astype(np.uint8), "L")


def decode(path: Path, side: int, channels: int, fit: Fit = "crop") -> Decoded:
    try:
        # The header's size is checked before a pixel is decoded (a 440 KB PNG can declare
        # 60000 x 60000 pixels, 3.6 GB once decoded).
        with open_image(path, "image") as im:
            size, mode = im.size, im.mode
            if im.format == "JPEG":
                im.draft("L" if channels == 1 else "RGB", (side, side))
            if mode == "F":
                return Decoded(
                    None,
                    size,
                    mode,
                    "32-bit float pixels, whose range is "
                    "unknown; save the image with 8- or 16-bit pixels",
                )
            if mode.startswith("I"):  # 16-bit PNG (I;16, or I): convert() clips to 255
                im = _eight_bit(np.asarray(im))
                if im is None:
                    return Decoded(None, size, mode, "integer pixels beyond 0..65535")
            im = im.convert("L" if channels == 1 else "RGB")  # also loads: truncation shows
    except UnidentifiedImageError:
        return Decoded(None, why="not an image (Pillow cannot identify it)")
    except UntrustedFileError as e:
        return Decoded(None, why=str(e))
    except (OSError, SyntaxError, ValueError) as e:
        return Decoded(None, why=f"corrupt or unreadable ({e})")
    if fit == "crop":
        s = min(im.size)
        left, top = (im.width - s) // 2, (im.height - s) // 2
        im = im.crop((left, top, left + s, top + s))
    im = im.resize((side, side), Image.Resampling.BILINEAR)
    a = np.asarray(im, dtype=np.uint8)
    return Decoded(a[None] if a.ndim == 2 else a.transpose(2, 0, 1), size, mode)
