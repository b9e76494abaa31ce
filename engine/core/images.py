"""Image files: uint8 conversion and a background PNG writer, so encoding never blocks search.

Seed and result images are single PNGs. A seed's improvements (its best image each time
the best fitness dropped, often nearly every generation) go into one horizontal strip
PNG per seed: creating a file costs more than encoding a small image, and one file per
improvement slowed campaigns by about 8% on a 2-core machine. A generation row refers to
its image as (strip path, frame index); ``read_frame`` cuts it out.

While a seed searches, its frames are appended raw to a sidecar next to the strip
(``improvements.frames``: a 10-byte header, then C*H*W bytes per frame), and the PNG is
assembled once, when the seed finishes or the campaign closes. Re-encoding the growing
PNG at every flush made strip work quadratic in generations (a run with flushes disabled
was 36% faster); appending costs each frame once. ``read_frame`` and ``frame_count`` read
the sidecar while it exists, so a running seed's frames are readable as before.
"""

from __future__ import annotations

import errno
import os
import re
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from engine.core.untrusted import UntrustedFileError, inside, quote

if TYPE_CHECKING:  # `doctor` reads strips without importing torch (fast start)
    import torch

_MAGIC = b"LFFR"
_HEADER = struct.Struct("<4sHHH")  # magic, C, H, W

#: Most pixels an image from a user's file may declare: Pillow's own warning threshold
#: (about 89 million). A 440 KB PNG can declare 60000 x 60000, 3.6 GB once decoded.
MAX_PIXELS = 89_478_485


def open_image(
    path: str | os.PathLike[str],
    field: str = "image",
    *,
    root: str | os.PathLike[str] | None = None,
    source: str = "",
    max_pixels: int = MAX_PIXELS,
) -> Image.Image:
    """An image from a file the user did not write, opened but not decoded: its declared
    size (read from the header) is at most `max_pixels`, and with `root` the path (taken
    from `root` when relative) lies inside `root`. Else UntrustedFileError in one line;
    OSError when the file is missing or no image Pillow reads. Close it (`with`)."""
    if root is not None:
        path = inside(root, path, field, source=source)
    if os.path.exists(path) and not os.path.isfile(path):
        # Opening a FIFO waits for a writer for ever: a page showing one never finished.
        raise OSError(errno.EINVAL, "not a regular file (a pipe, a device or a folder)", path)
    try:
        im = Image.open(path)
    except Image.DecompressionBombError as e:
        # Pillow refuses at twice its limit already, before its size can be asked.
        n = re.search(r"\((\d+) pixels\)", str(e))
        big = f"{int(n[1]):,}" if n else f"over {2 * Image.MAX_IMAGE_PIXELS:,}"
        raise UntrustedFileError(_too_big(path, field, big)) from None
    w, h = im.size
    if w * h > max_pixels:
        im.close()
        raise UntrustedFileError(_too_big(path, field, f"{w:,} x {h:,}", max_pixels))
    return im


def _too_big(path: object, field: str, size: str, limit: int = MAX_PIXELS) -> str:
    return (
        f"{field} {quote(os.fsdecode(path))} declares {size} pixels, more than the "
        f"{limit:,} an image may have; it may be damaged, or made to exhaust memory: "
        "resize it"
    )


def to_uint8(x: torch.Tensor) -> torch.Tensor:
    """Images (B, C, H, W) in [0, 1] -> uint8 (B, C, H, W), rounded as PNG will store them."""
    # Deferred (start-up time: loads torch).
    import torch  # `doctor` imports this module and must start without torch

    return x.mul(255.0).round_().clamp_(0, 255).to(torch.uint8)


def to_pil(img: np.ndarray) -> Image.Image:
    """uint8 (C, H, W) -> PIL image (L or RGB)."""
    return Image.fromarray(img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0)))


def sidecar(path: str | Path) -> Path:
    """The raw frame file of a strip that is still being written."""
    return Path(path).with_suffix(".frames")


def _read_sidecar(path: Path) -> tuple[tuple[int, int, int], int]:
    """((C, H, W), whole frames held) of a sidecar."""
    with open(path, "rb") as f:
        head = f.read(_HEADER.size)
    if len(head) < _HEADER.size:
        # A kill -9 between creating the file and writing its header: no frame in it.
        # (struct.error here crashed `doctor` on a killed campaign's folder.)
        raise OSError(f"{path} is cut short inside its header ({len(head)} bytes)")
    magic, c, h, w = _HEADER.unpack(head)
    if magic != _MAGIC:
        raise OSError(f"{path} is not a latentfuzz frame file")
    # A crash can cut the last frame short: only whole frames count.
    return (c, h, w), (path.stat().st_size - _HEADER.size) // (c * h * w)


def read_uint8(path: str | Path) -> np.ndarray:
    """A PNG -> uint8 (C, H, W): the inverse of ``to_pil``."""
    with Image.open(path) as im:
        a = np.asarray(im)
    return a[None] if a.ndim == 2 else np.transpose(a, (2, 0, 1))


def read_frame(path: str | Path, frame: int, width: int) -> Image.Image:
    """Frame `frame` (0-based) of a strip whose frames are `width` pixels wide (from its
    sidecar while the seed still searches)."""
    side = sidecar(path)
    if side.exists():
        (c, h, w), n = _read_sidecar(side)
        if frame >= n:
            raise IndexError(f"{side} holds {n} frames, frame {frame} asked")
        size = c * h * w
        with open(side, "rb") as f:
            f.seek(_HEADER.size + frame * size)
            img = np.frombuffer(f.read(size), dtype=np.uint8).reshape(c, h, w)
        return to_pil(img)
    with Image.open(path) as strip:
        if (frame + 1) * width > strip.width:
            raise IndexError(f"{path} holds {strip.width // width} frames, frame {frame} asked")
        return strip.crop((frame * width, 0, (frame + 1) * width, strip.height))


def frame_count(path: str | Path, width: int) -> int | None:
    """Frames a strip (or its sidecar) holds; None when neither is readable."""
    try:
        side = sidecar(path)
        if side.exists():
            return _read_sidecar(side)[1]
        with Image.open(path) as im:  # reads the header only
            return im.width // width
    except OSError:
        return None


class ImageSink:
    """Writes PNGs under ``home`` on one worker thread; paths given relative to home.

    Strip work is counted, not timed: ``strip_bytes`` holds the raw bytes each
    ``write_strips`` call of running seeds queued (tests/engine/campaign/test_strips.py).
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="png")
        #: Queued writes not yet done, and failed ones (for close): insertion-ordered.
        self._futures: dict[Future, None] = {}
        self._pending: dict[str, list[np.ndarray]] = {}  # frames not yet appended
        self._count: dict[str, int] = {}  # frames so far, per open strip
        self.strip_bytes: list[int] = []

    def add_frames(self, strips: list[str], images: torch.Tensor) -> list[int]:
        """Append uint8 images (B, C, H, W), one to each strip; returns their frame indices."""
        arr = images.cpu().numpy()
        index = []
        for strip, img in zip(strips, arr, strict=True):
            n = self._count.get(strip, 0)
            index.append(n)
            self._count[strip] = n + 1
            self._pending.setdefault(strip, []).append(img)
        return index

    def write_strips(self, only: list[str] | None = None, release: bool = False) -> None:
        """Queue the append of new frames to the sidecars of strips (all, or `only`);
        `release` (the seed is finished) assembles their PNG once and forgets them."""
        names = list(self._count) if only is None else [s for s in only if s in self._count]
        queued = 0
        for name in names:
            frames = self._pending.pop(name, None)
            if frames is not None:
                fresh = self._count[name] == len(frames)  # first write in this process
                self._submit(self._append, name, np.stack(frames), fresh)
                queued += sum(f.nbytes for f in frames)
            if release:
                self._submit(self._assemble, name)
                del self._count[name]
        if not release:
            self.strip_bytes.append(queued)

    def state_dict(self) -> dict[str, object]:
        """The open strips' frame counts and their frames not yet appended (uint8
        (n, C, H, W) each), for a checkpoint (engine/campaign/checkpoint.py)."""
        return {
            "count": dict(self._count),
            "pending": {k: np.stack(v) for k, v in self._pending.items() if v},
        }

    def load_state_dict(self, state: dict, frame: tuple[int, int, int]) -> None:
        """Take up a state_dict: each open strip's sidecar is cut back to the frames it had
        on disk then (later ones are appended again, identical), or made again from its
        PNG where the campaign's close assembled it. OSError when a strip holds fewer
        frames than that (nothing is changed in memory then). `frame`: (C, H, W)."""
        count = {str(k): int(v) for k, v in state["count"].items()}
        pending = {str(k): np.asarray(v, dtype=np.uint8) for k, v in state["pending"].items()}
        for name, n in count.items():
            on_disk = n - len(pending.get(name, ()))
            if on_disk > 0:
                self._cut_back(name, on_disk, frame)
        self._count = count
        self._pending = {k: list(v) for k, v in pending.items()}

    def _cut_back(self, rel: str, n: int, frame: tuple[int, int, int]) -> None:
        path = self.home / rel
        side = sidecar(path)
        size = int(np.prod(frame))
        if side.exists():
            shape, held = _read_sidecar(side)
            if shape == frame and held >= n:
                os.truncate(side, _HEADER.size + n * size)
                return
        if path.exists():
            c, h, w = frame
            strip = read_uint8(path)
            held = strip.shape[2] // w if strip.shape[:2] == (c, h) else 0
            if held >= n:
                frames = strip[:, :, : n * w].reshape(c, h, n, w).transpose(2, 0, 1, 3)
                with open(side, "wb") as f:
                    f.write(_HEADER.pack(_MAGIC, c, h, w))
                    f.write(np.ascontiguousarray(frames).tobytes())
                return
        raise OSError(f"{path} holds fewer than the {n} frames the checkpoint counts")

    def barrier(self) -> Future:
        """A future done once every write queued so far is (one worker: in order)."""
        return self._pool.submit(lambda: None)

    def save(self, rel_paths: list[str], images: torch.Tensor) -> None:
        """Queue uint8 images (B, C, H, W) for writing to rel_paths."""
        if not rel_paths:
            return
        self._submit(self._write, rel_paths, images.cpu().numpy())

    def _submit(self, fn, *args) -> None:
        # A done write forgets itself: rescanning the list at every submit was quadratic,
        # 2.1 s of a one-generation 1,000-seed campaign whose seeds all finished at once.
        f = self._pool.submit(fn, *args)
        self._futures[f] = None
        f.add_done_callback(self._forget)

    def _forget(self, f: Future) -> None:
        if not f.cancelled() and f.exception() is None:
            self._futures.pop(f, None)

    def _write(self, rel_paths: list[str], arr: np.ndarray) -> None:
        for rel, img in zip(rel_paths, arr, strict=True):
            path = self.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            to_pil(img).save(path, compress_level=1)

    def _append(self, rel: str, frames: np.ndarray, fresh: bool) -> None:
        """frames (n, C, H, W) to the strip's sidecar; `fresh` starts it over (a resumed
        campaign replays from the first generation)."""
        side = sidecar(self.home / rel)
        side.parent.mkdir(parents=True, exist_ok=True)
        with open(side, "wb" if fresh else "ab") as f:
            if fresh:
                f.write(_HEADER.pack(_MAGIC, *frames.shape[1:]))
            f.write(np.ascontiguousarray(frames).tobytes())

    def _assemble(self, rel: str) -> None:
        """The strip PNG from its sidecar, written once; the sidecar goes after it."""
        path = self.home / rel
        side = sidecar(path)
        if not side.exists():
            # Ctrl-C between a strip's bookkeeping steps: its PNG was assembled already,
            # or no frame of it reached the disk. Either way there is nothing to add, and
            # the campaign must end `interrupted`, not fail here at close.
            return
        (c, h, w), n = _read_sidecar(side)
        raw = np.fromfile(side, dtype=np.uint8, offset=_HEADER.size, count=n * c * h * w)
        strip = raw.reshape(n, c, h, w).transpose(1, 2, 0, 3).reshape(c, h, n * w)
        to_pil(strip).save(path, compress_level=1)
        side.unlink()

    def close(self) -> None:
        """Append pending frames, assemble every open strip (an interrupted campaign's
        seeds keep a PNG), wait for every queued image; re-raise the first error."""
        self.write_strips(release=True)
        self._pool.shutdown(wait=True)
        for f in list(self._futures):
            f.result()
