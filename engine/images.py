"""Image files: uint8 conversion and a background PNG writer, so encoding never blocks search.

Seed and result images are single PNGs. A seed's improvements (its best image each time
the best fitness dropped, often nearly every generation) go into one horizontal strip
PNG per seed: creating a file costs more than encoding a small image, and one file per
improvement slowed campaigns by about 8% on a 2-core machine. A generation row refers to
its image as (strip path, frame index); ``read_frame`` cuts it out.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from PIL import Image


def to_uint8(x: torch.Tensor) -> torch.Tensor:
    """Images (B, C, H, W) in [0, 1] -> uint8 (B, C, H, W), rounded as PNG will store them."""
    return x.mul(255.0).round_().clamp_(0, 255).to(torch.uint8)


def to_pil(img: np.ndarray) -> Image.Image:
    """uint8 (C, H, W) -> PIL image (L or RGB)."""
    return Image.fromarray(img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0)))


def read_frame(path: str | Path, frame: int, width: int) -> Image.Image:
    """Frame `frame` (0-based) of a strip whose frames are `width` pixels wide."""
    with Image.open(path) as strip:
        if (frame + 1) * width > strip.width:
            raise IndexError(f"{path} holds {strip.width // width} frames, frame {frame} asked")
        return strip.crop((frame * width, 0, (frame + 1) * width, strip.height))


class ImageSink:
    """Writes PNGs under ``home`` on one worker thread; paths given relative to home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="png")
        self._futures: list[Future] = []
        self._strips: dict[str, list[np.ndarray]] = {}
        self._dirty: set[str] = set()

    def add_frames(self, strips: list[str], images: torch.Tensor) -> list[int]:
        """Append uint8 images (B, C, H, W), one to each strip; returns their frame indices."""
        arr = images.cpu().numpy()
        index = []
        for strip, img in zip(strips, arr, strict=True):
            frames = self._strips.setdefault(strip, [])
            index.append(len(frames))
            frames.append(img)
            self._dirty.add(strip)
        return index

    def write_strips(self, only: list[str] | None = None, release: bool = False) -> None:
        """Queue a rewrite of strips with new frames (all, or `only`); `release` drops
        their frames from memory afterwards (the seed is finished)."""
        names = [s for s in (only if only is not None else list(self._dirty)) if s in self._dirty]
        for name in names:
            frames = self._strips[name]
            strip = np.concatenate(frames, axis=2)  # (C, H, n*W)
            self._futures.append(self._pool.submit(self._write, [name], strip[None]))
            self._dirty.discard(name)
            if release:
                del self._strips[name]

    def save(self, rel_paths: list[str], images: torch.Tensor) -> None:
        """Queue uint8 images (B, C, H, W) for writing to rel_paths."""
        if not rel_paths:
            return
        arr = images.cpu().numpy()
        self._futures.append(self._pool.submit(self._write, rel_paths, arr))
        self._futures = [f for f in self._futures if not f.done() or f.exception()]

    def _write(self, rel_paths: list[str], arr: np.ndarray) -> None:
        for rel, img in zip(rel_paths, arr, strict=True):
            path = self.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            to_pil(img).save(path, compress_level=1)

    def close(self) -> None:
        """Write pending strips, wait for every queued image; re-raise the first error."""
        self.write_strips()
        self._pool.shutdown(wait=True)
        for f in self._futures:
            f.result()
