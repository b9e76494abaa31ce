"""Other tools' result images read for `latentfuzz import-results`: a .npy or .png file as
uint8 (C, H, W), anything else refused in one line naming the file and the fix. Each file
lies inside the results folder (symlinks followed), and its declared size (a .npy's
header, a PNG's) is checked before anything that size is allocated.

A .npy's pixel scale is judged over the whole run, not file by file: a GAN's images are
in [-1, 1] and the ICST study's ImageNet ones are normalised by ImageNet's mean and std,
and one dark image of either would read as [0, 1] on its own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.images import open_image
from engine.core.untrusted import inside

IMAGE_SUFFIXES = (".npy", ".png")
#: How a .npy's values map to pixels: judged over the run (auto), or said by the mapping.
PIXELS = ("auto", "[0, 1]", "[0, 255]", "[-1, 1]", "imagenet")
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406])
IMAGENET_STD = np.array([0.229, 0.224, 0.225])
#: Largest side a .npy may declare for a dataset whose reader resizes its own images.
MAX_FIT_SIDE = 2048
#: float32 rounding of the bounds (ImageNet's black is -2.1179039...).
TOLERANCE = 1e-3
#: How far past [0, 1] an ImageNet-normalised image may reach, clipped: a decoder without
#: a final clamp overshoots (the ICST study's ImageNet VAE reaches -0.09 and 1.10).
OVERSHOOT = 0.15
IMAGENET_LO = (-OVERSHOOT - IMAGENET_MEAN) / IMAGENET_STD
IMAGENET_HI = (1 + OVERSHOOT - IMAGENET_MEAN) / IMAGENET_STD


def find_image(folder: Path, images: str, name: str, what: str) -> Path:
    """An image named by the CSV, in the mapping's `images` folder; a name without suffix
    tries .npy, .png. It must lie inside that folder (itself inside the results `folder`),
    symlinks followed."""
    where = folder / images
    if not name.strip():
        raise ConfigError(f"{what} is empty; expected a file name inside {where}")
    rel = Path(name.strip())
    inside(where, rel, what)  # "/etc/x", "../../x.npy", before anything is looked up
    candidates = [rel] if rel.suffix else [rel.with_suffix(s) for s in IMAGE_SUFFIXES]
    for c in candidates:
        if (where / c).is_file():
            return inside(where, c, what)
    raise ConfigError(f"{what} {name!r} not found in {where}")


def to_chw(a: np.ndarray, shape: tuple[int, int, int], path: Path, fit: bool = False) -> np.ndarray:
    """An array as (C, H, W) for `shape`: from CxHxW, HxWxC, HxW (one channel) or a batch
    of one; other shapes refused naming the file and the fix. With `fit`, any height and
    width (the dataset's reader resizes its own images: ImageNet's)."""
    check_shape(a.shape, shape, path, fit)
    c, h, w = shape
    if a.ndim == 4:  # a batch of one
        a = a[0]
    if a.ndim == 2:
        return a[None]
    if a.shape == (c, h, w) or (fit and a.shape[0] == c):
        return a
    return np.transpose(a, (2, 0, 1))


def check_shape(
    found: tuple[int, ...], shape: tuple[int, int, int], path: Path, fit: bool = False
) -> None:
    """Refuse an array shape that is no (C, H, W) layout of `shape` (with `fit`, of any
    height and width up to MAX_FIT_SIDE): checked on a .npy's header, before its declared
    size is allocated."""
    c, h, w = shape
    one = found[1:] if len(found) == 4 and found[0] == 1 else found
    if one in ((c, h, w), (h, w, c)) or (c == 1 and one == (h, w)):
        return
    if fit:
        sides = [one] if c == 1 and len(one) == 2 else []
        if len(one) == 3:
            sides += [one[1:]] * (one[0] == c) + [one[:2]] * (one[-1] == c)
        if any(all(1 <= s <= MAX_FIT_SIDE for s in hw) for hw in sides):
            return
    extra = " or HxW" if c == 1 else ""
    size = f"Cx(H)x(W) up to {MAX_FIT_SIDE} a side, resized to {h}x{w}" if fit else f"{c}x{h}x{w}"
    raise ConfigError(
        f"{path}: shape {'x'.join(map(str, found))}; expected {size} (CxHxW or "
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


def load_npy(path: Path, shape: tuple[int, int, int], fit: bool = False) -> np.ndarray:
    """A .npy as (C, H, W) of its own values (not yet pixels): the header's dtype and shape
    checked before its data is loaded, NaN and infinities refused."""
    try:
        declared, dtype = _npy_header(path)
    except (OSError, ValueError, SyntaxError) as e:
        raise ConfigError(f"{path}: not a readable .npy array ({str(e).splitlines()[0]})") from e
    if dtype.kind not in "biuf":
        raise ConfigError(f"{path}: dtype {dtype}; expected a numeric array")
    check_shape(declared, shape, path, fit)  # np.load allocates what the header declares
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a readable .npy array ({str(e).splitlines()[0]})") from e
    a = to_chw(a, shape, path, fit)
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ConfigError(f"{path}: holds NaN or infinite values; expected pixels in [0, 1]")
    return a


@dataclass(frozen=True)
class Scan:
    """A .npy's value range, per channel: what judging a run's pixel scale needs."""

    path: Path
    integer: bool
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, path: Path, shape: tuple[int, int, int], fit: bool = False) -> Scan:
        a = load_npy(path, shape, fit)
        x = a.astype(np.float64)
        return cls(path, a.dtype.kind in "biu", x.min(axis=(1, 2)), x.max(axis=(1, 2)))

    def within(self, lo: np.ndarray | float, hi: np.ndarray | float) -> bool:
        return bool((self.lo >= lo - TOLERANCE).all() and (self.hi <= hi + TOLERANCE).all())

    def imagenet(self) -> bool:
        """Within what ImageNet's normalisation makes of [0, 1] (give or take a decoder's
        overshoot), channel by channel."""
        if self.lo.shape != (3,):
            return False
        return self.within(IMAGENET_LO, IMAGENET_HI)

    def says(self) -> str:
        return f"[{self.lo.min():g}, {self.hi.max():g}]"


def run_scale(scans: Iterable[Scan], pixels: str = "auto") -> str | None:
    """The pixel scale of a run's float .npy files: the mapping's, else judged over the
    run where any holds negative values ([-1, 1], else ImageNet-normalised), else None
    (each file alone: [0, 1], or [0, 255] when a value is above 1)."""
    if pixels != "auto":
        return pixels
    floats = [s for s in scans if not s.integer]
    negative = [s for s in floats if s.lo.min() < 0]
    if not negative:
        return None
    for scale, fits in (("[-1, 1]", lambda s: s.within(-1, 1)), ("imagenet", Scan.imagenet)):
        if all(fits(s) for s in floats):
            return scale
    odd = min(negative, key=lambda s: s.lo.min())
    bad = next(s for s in floats if not (s.within(-1, 1) or s.imagenet()))
    but = "" if bad is odd else f", but {bad.path.name} holds {bad.says()}"
    raise ConfigError(
        f"{odd.path}: values in {odd.says()}{but}; expected one scale for every image of a "
        "run: [0, 1] or [0, 255], [-1, 1] (a GAN's), or normalised by ImageNet's mean and "
        "std. Say which with pixels: in a mapping file (--mapping)"
    )


def _unit(x: np.ndarray, scale: str, path: Path) -> np.ndarray:
    """Values in `scale` as [0, 1]; values outside it refused."""
    bounds = {
        "[0, 1]": (0.0, 1.0),
        "[0, 255]": (0.0, 255.0),
        "[-1, 1]": (-1.0, 1.0),
        "imagenet": (IMAGENET_LO, IMAGENET_HI),
    }[scale]
    lo, hi = x.min(axis=(1, 2)), x.max(axis=(1, 2))
    if scale == "imagenet" and x.shape[0] != 3:
        raise ConfigError(f"{path}: {x.shape[0]} channel(s); ImageNet-normalised images have 3")
    if (lo < bounds[0] - TOLERANCE).any() or (hi > bounds[1] + TOLERANCE).any():
        raise ConfigError(
            f"{path}: values in [{lo.min():g}, {hi.max():g}]; expected {scale} (the mapping's "
            "pixels), or another pixels: in the mapping"
        )
    if scale == "[0, 255]":
        return x / 255
    if scale == "[-1, 1]":
        return (x + 1) / 2
    if scale == "imagenet":
        return x * IMAGENET_STD[:, None, None] + IMAGENET_MEAN[:, None, None]
    return x


def _resized(img: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """uint8 (C, H, W) brought to `shape` as the ImageNet readers do: the shorter side
    scaled (bicubic), then the centre cropped."""
    _, h, w = shape
    if img.shape[1:] == (h, w):
        return img
    im = image_to_pil(img)
    scale = max(h, w) / min(im.size)
    size = max(w, round(im.width * scale)), max(h, round(im.height * scale))
    im = im.resize(size, Image.Resampling.BICUBIC)
    left, top = (size[0] - w) // 2, (size[1] - h) // 2
    out = np.asarray(im.crop((left, top, left + w, top + h)))
    return out[None] if out.ndim == 2 else np.transpose(out, (2, 0, 1))


def read_image(
    path: Path, shape: tuple[int, int, int], scale: str | None = None, fit: bool = False
) -> tuple[np.ndarray, str]:
    """An image file as uint8 (C, H, W) and what it was: '.png', or '.npy' and its scale.
    A float .npy is read in `scale` (run_scale's); with None, alone: [0, 255] when any
    value is above 1, else [0, 1]. A .npy of integers is in [0, 255]. With `fit`, another
    image size is resized to the dataset's. Anything else is refused, naming the file and
    what it holds."""
    c, h, w = shape
    if path.suffix.lower() == ".png":
        try:
            # The header's size is checked before a pixel is decoded (a 60000 x 60000 PNG).
            with open_image(path, "image file") as im:
                if im.size != (w, h) and not fit:
                    raise ConfigError(
                        f"{path}: {im.width}x{im.height} pixels; expected {w}x{h} for this "
                        "dataset; pick the --dataset the images were made for"
                    )
                img = np.asarray(im.convert("L" if c == 1 else "RGB"))
        except LatentfuzzError:
            raise
        except (OSError, SyntaxError, ValueError) as e:
            raise ConfigError(f"{path}: not a readable PNG ({str(e).splitlines()[0]})") from e
        return _resized(to_chw(img, shape, path, fit), shape), ".png"
    if path.suffix.lower() != ".npy":
        raise ConfigError(f"{path}: a {path.suffix or 'suffix-less'} file; expected .npy or .png")
    a = load_npy(path, shape, fit)
    x = a.astype(np.float64)
    lo, hi = float(x.min()), float(x.max())
    if a.dtype.kind in "biu" or scale is None:
        if lo < 0 or hi > 255:
            raise ConfigError(
                f"{path}: values in [{lo:g}, {hi:g}]; expected [0, 1] or [0, 255] (images in "
                "[-1, 1] need (x + 1) / 2 first)"
            )
        scale = "[0, 255]" if a.dtype.kind in "biu" or hi > 1 + 1e-6 else "[0, 1]"
    u = _unit(x, scale, path)
    if scale == "[0, 255]":  # rounded as stored, not through [0, 1]
        img = np.rint(np.clip(x, 0, 255)).astype(np.uint8)
    else:
        img = np.rint(np.clip(u, 0, 1) * 255).astype(np.uint8)
    name = "ImageNet-normalised" if scale == "imagenet" else scale
    return _resized(img, shape), f".npy {name}"


def image_to_pil(img: np.ndarray) -> Image.Image:
    """A uint8 (C, H, W) image as PIL (grey for one channel)."""
    return Image.fromarray(img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0)))
