"""Other tools' result images read for `latentfuzz import-results`: a .npy or .png file as
uint8 (C, H, W), anything else refused in one line naming the file and the fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from engine.core.errors import ConfigError


def to_chw(a: np.ndarray, shape: tuple[int, int, int], path: Path) -> np.ndarray:
    """An array as (C, H, W) for `shape`: from CxHxW, HxWxC, HxW (one channel) or a batch
    of one; other shapes refused naming the file and the fix."""
    c, h, w = shape
    if a.ndim == 4 and a.shape[0] == 1:  # a batch of one
        a = a[0]
    if a.shape == (c, h, w):
        return a
    if a.ndim == 3 and a.shape == (h, w, c):
        return np.transpose(a, (2, 0, 1))
    if c == 1 and a.shape == (h, w):
        return a[None]
    extra = " or HxW" if c == 1 else ""
    raise ConfigError(
        f"{path}: shape {'x'.join(map(str, a.shape))}; expected {c}x{h}x{w} (CxHxW or "
        f"HxWxC{extra}) for this dataset; pick the --dataset the images were made for"
    )


def read_image(path: Path, shape: tuple[int, int, int]) -> tuple[np.ndarray, str]:
    """An image file as uint8 (C, H, W) and what it was: '.npy [0, 1]', '.npy [0, 255]'
    or '.png'. A .npy of integers, or with any value above 1, is in [0, 255]; other
    floats are in [0, 1]. Anything else is refused, naming the file and what it holds."""
    c, h, w = shape
    if path.suffix.lower() == ".png":
        try:
            with Image.open(path) as im:
                img = np.asarray(im.convert("L" if c == 1 else "RGB"))
        except OSError as e:
            raise ConfigError(f"{path}: not a readable PNG ({e})") from e
        return to_chw(img, shape, path), ".png"
    if path.suffix.lower() != ".npy":
        raise ConfigError(f"{path}: a {path.suffix or 'suffix-less'} file; expected .npy or .png")
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a readable .npy array ({str(e).splitlines()[0]})") from e
    if a.dtype.kind not in "biuf":
        raise ConfigError(f"{path}: dtype {a.dtype}; expected a numeric array")
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
