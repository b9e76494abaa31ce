"""Files an attacker (or a damaged disk) hands over: tiny on disk, huge once decoded."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np


def png_bomb(path: Path, width: int = 60_000, height: int = 60_000) -> Path:
    """A valid 1-bit grey PNG of width x height black pixels: about 440 KB on disk for
    60000 x 60000, 3.6 GB once decoded to 8-bit grey."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte, then the packed bits
    z = zlib.compressobj(9)
    idat = [z.compress(row * 1000) for _ in range(height // 1000)]
    idat += [z.compress(row * (height % 1000)), z.flush()]
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", b"".join(idat))
        + chunk(b"IEND", b"")
    )
    return path


def npy_header_only(path: Path, shape: tuple[int, ...], descr: str = "<f8") -> Path:
    """A .npy whose header declares `shape` but which holds a few bytes: np.load
    allocates the declared size (74.5 GiB for (100000, 100000) floats) before reading."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": descr, "fortran_order": False, "shape": shape}
        )
        f.write(b"\0" * 1024)
    return path
