"""Image files: uint8 conversion and a background PNG writer, so encoding never blocks search."""

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


class ImageSink:
    """Writes PNGs under ``home`` on one worker thread; paths given relative to home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="png")
        self._futures: list[Future] = []

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
        """Wait for every queued image; re-raise the first write error."""
        self._pool.shutdown(wait=True)
        for f in self._futures:
            f.result()
