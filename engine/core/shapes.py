"""Which image shapes the generic architectures take, and how deep they go.

The convolutional VAE, the DCGAN and the VGG/ResNet classifiers halve the image side with
stride-2 layers down to a small base grid and (for generators) double it back up. So the
image must be square, and its side must halve cleanly at least twice: 28 -> 14 -> 7,
32 -> 16 -> 8 -> 4, 64 -> ... -> 4. Sides like 30 (one halving) or 25 (none) are refused
with a message naming the nearest sides that work.
"""

from __future__ import annotations

from engine.core.errors import ConfigError

MIN_SIDE, MAX_SIDE = 16, 512
#: Halving stops at this side: a 4x4 grid is DCGAN's usual starting point.
BASE = 4


def halvings(side: int) -> int:
    """Stride-2 halvings from `side` down to the base grid: while the side is even and its
    half at least BASE. 28 -> 2 (base 7), 32 -> 3 (base 4), 64 -> 4 (base 4)."""
    n = 0
    while side % 2 == 0 and side // 2 >= BASE:
        side //= 2
        n += 1
    return n


def check_shape(shape: tuple[int, ...], what: str) -> tuple[int, int, int]:
    """(C, H, W) as ints, or ConfigError saying why `what` cannot take this shape."""
    if len(shape) != 3:
        raise ConfigError(f"{what}: image shape {tuple(shape)}, expected (C, H, W)")
    c, h, w = (int(v) for v in shape)
    if h != w:
        raise ConfigError(
            f"{what}: images of {h}x{w} are not square; resize the dataset to a square side "
            "(e.g. 32 or 64)"
        )
    if not 1 <= c <= 4:
        raise ConfigError(f"{what}: {c} channels, expected 1 (grey), 3 (RGB) or 4")
    if not MIN_SIDE <= h <= MAX_SIDE or halvings(h) < 2:
        ok = [s for s in (28, 32, 64, 128) if MIN_SIDE <= s <= MAX_SIDE]
        raise ConfigError(
            f"{what}: side {h} is not supported; expected a multiple of 4 from {MIN_SIDE} to "
            f"{MAX_SIDE} that halves cleanly (e.g. {', '.join(map(str, ok))}); resize the dataset"
        )
    return c, h, w
