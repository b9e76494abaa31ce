"""Other tools' result images read for `latentfuzz import-results`: a .npy or .png file as
uint8 (C, H, W), anything else refused in one line naming the file and the fix. Each file
lies inside the results folder (symlinks followed), and its declared size (a .npy's
header, a PNG's) is checked before anything that size is allocated."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.images import open_image
from engine.core.untrusted import inside

IMAGE_SUFFIXES = (".npy", ".png")


def find_image(folder: Path, images: str, name: str, what: str) -> Path:
    """An image named by the CSV, in the mapping's `images` folder; a name without suffix
    tries .npy, .png. It must lie inside the results `folder`, symlinks followed."""
    rel = Path(name.strip())
    where = folder / images
    if not name.strip() or rel.is_absolute() or ".." in rel.parts:
        raise ConfigError(f"{what} {name!r} is not a file name inside {where}")
    candidates = [rel] if rel.suffix else [rel.with_suffix(s) for s in IMAGE_SUFFIXES]
    for c in candidates:
        if (where / c).is_file():
            return inside(folder, os.path.normpath(os.path.join(images, c)), what)
    raise ConfigError(f"{what} {name!r} not found in {where}")


def to_chw(a: np.ndarray, shape: tuple[int, int, int], path: Path) -> np.ndarray:
    """An array as (C, H, W) for `shape`: from CxHxW, HxWxC, HxW (one channel) or a batch
    of one; other shapes refused naming the file and the fix."""
    check_shape(a.shape, shape, path)
    c, h, w = shape
    if a.ndim == 4:  # a batch of one
        a = a[0]
    if a.shape == (c, h, w):
        return a
    if a.ndim == 3:
        return np.transpose(a, (2, 0, 1))
    return a[None]


def check_shape(found: tuple[int, ...], shape: tuple[int, int, int], path: Path) -> None:
    """Refuse an array shape that is no (C, H, W) layout of `shape`: checked on a .npy's
    header, before its declared size is allocated."""
    c, h, w = shape
    one = found[1:] if len(found) == 4 and found[0] == 1 else found
    if one in ((c, h, w), (h, w, c)) or (c == 1 and one == (h, w)):
        return
    extra = " or HxW" if c == 1 else ""
    raise ConfigError(
        f"{path}: shape {'x'.join(map(str, found))}; expected {c}x{h}x{w} (CxHxW or "
        f"HxWxC{extra}) for this dataset; pick the --dataset the images were made for"
    )


def _npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a .npy declares, read without loading its data."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = {
            (1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0,
        }.get(version)
        if read is None:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, _, dtype = read(f)
    return shape, dtype


def read_image(path: Path, shape: tuple[int, int, int]) -> tuple[np.ndarray, str]:
    """An image file as uint8 (C, H, W) and what it was: '.npy [0, 1]', '.npy [0, 255]'
    or '.png'. A .npy of integers, or with any value above 1, is in [0, 255]; other
    floats are in [0, 1]. Anything else is refused, naming the file and what it holds."""
    c, h, w = shape
    if path.suffix.lower() == ".png":
        try:
            # The header's size is checked before a pixel is decoded (a 60000 x 60000 PNG).
            with open_image(path, "image file") as im:
                if im.size != (w, h):
                    raise ConfigError(
                        f"{path}: {im.width}x{im.height} pixels; expected {w}x{h} for this "
                        "dataset; pick the --dataset the images were made for"
                    )
                img = np.asarray(im.convert("L" if c == 1 else "RGB"))
        except LatentfuzzError:
            raise
        except (OSError, SyntaxError, ValueError) as e:
            raise ConfigError(f"{path}: not a readable PNG ({str(e).splitlines()[0]})") from e
        return to_chw(img, shape, path), ".png"
    if path.suffix.lower() != ".npy":
        raise ConfigError(f"{path}: a {path.suffix or 'suffix-less'} file; expected .npy or .png")
    try:
        declared, dtype = _npy_header(path)
    except (OSError, ValueError, SyntaxError) as e:
        raise ConfigError(f"{path}: not a readable .npy array ({str(e).splitlines()[0]})") from e
    if dtype.kind not in "biuf":
        raise ConfigError(f"{path}: dtype {dtype}; expected a numeric array")
    check_shape(declared, shape, path)  # np.load allocates what the header declares
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a readable .npy array ({str(e).splitlines()[0]})") from e
    a = to_chw(a, shape, path)
    x = a.astype(np.float64)
    if not np.isfinite(x).all():
        raise ConfigError(f"{path}: holds NaN or infinite values; expected pixels in [0, 1]")
    lo, hi = float(x.min()), float(x.max())
    if lo < 0 or hi > 255:
        raise ConfigError(
            f"{path}: values in [{lo:g}, {hi:g}]; expected [0, 1] or [0, 255] (images in "
            "[-1, 1] need (x + 1) / 2 first)"
        )
    if a.dtype.kind in "biu" or hi > 1 + 1e-6:
        return np.rint(x).astype(np.uint8), ".npy [0, 255]"
    return np.rint(np.clip(x, 0, 1) * 255).astype(np.uint8), ".npy [0, 1]"


def image_to_pil(img: np.ndarray) -> Image.Image:
    """A uint8 (C, H, W) image as PIL (grey for one channel)."""
    return Image.fromarray(img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0)))
