"""Is the store file a whole DuckDB database? Damage named in one line, with the fix."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from pathlib import Path

from store._duckdb import duckdb
from store.errors import StoreError

#: How to get going again when the store file itself is damaged.
FIX = "restore a backup, or move the file away to start a new store"
# DuckDB's file: three 4 KiB headers, then whole blocks of 256 KiB; "DUCK" at byte 8.
_HEADER, _BLOCK, _MAGIC = 3 * 4096, 256 * 1024, b"DUCK"


def check_file(path: str) -> None:
    """Raise StoreError with the fix when `path` is not a whole DuckDB file.

    Cheap (a stat and the 12 KiB of headers): run on every open, so that an empty, garbage
    or truncated file is named at once rather than by a failing CHECKPOINT at the end of a
    campaign. A file is its headers plus whole 256 KiB blocks, with one exception, a torn
    tail: a checkpoint that failed on a full disk leaves part of a new block at the end,
    beside the WAL that holds what was committed, and DuckDB opens such a file and replays
    the WAL. A partial last block passes only with a WAL that is not empty and a file at
    least as long as its active database header counts. A cut file fails that last test
    even beside a stray WAL. (The count alone cannot judge every file: DuckDB drops free
    blocks from a file's end without lowering it.) Damage this check cannot see, such as
    whole blocks cut, is named in one line where a read meets it (`naming_damage`)."""
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"store {p} is a directory, expected a DuckDB file; move it away")
    size = p.stat().st_size
    if size == 0:
        raise StoreError(f"store {p} is empty (0 bytes), expected a DuckDB database; {FIX}")
    with open(p, "rb") as f:
        head = f.read(_HEADER)
    if head[8:12] != _MAGIC:
        raise StoreError(
            f"store {p} is not a DuckDB database (no DUCK signature in its header); {FIX}"
        )
    partial = size >= _HEADER and (size - _HEADER) % _BLOCK
    if size < _HEADER or (partial and not _torn_tail(p, head, size)):
        raise StoreError(
            f"store {p} is truncated ({size:,} bytes, not its headers plus whole 256 KiB "
            f"blocks); {FIX}"
        )


def _torn_tail(p: Path, head: bytes, size: int) -> bool:
    """Whether a file ending in part of a block is what a failed checkpoint leaves: a WAL
    with something in it, and at least the blocks the active database header counts.
    A database header (at 4 and 8 KiB) is a checksum, then iteration, meta block, free
    list, block count and block size, 8 bytes each; the higher iteration is active."""
    wal = Path(f"{p}.wal")
    if not wal.exists() or wal.stat().st_size == 0:
        return False
    active = None
    for at in (4096, 8192):
        iteration, _, _, blocks, block = struct.unpack_from("<QqqQQ", head, at + 8)
        sane = block == _BLOCK and blocks < 1 << 40
        if sane and (active is None or iteration > active[0]):
            active = (iteration, blocks)
    return active is not None and size >= _HEADER + active[1] * _BLOCK


def is_damage(e: BaseException) -> bool:
    """DuckDB's errors for a file missing blocks or holding corrupt ones."""
    msg = str(e).lower()
    return "could not read enough bytes" in msg or "corrupt database file" in msg


def damaged(path: str, e: BaseException) -> StoreError:
    return StoreError(f"store {path} is damaged ({first_line(e)}); {FIX}")


@contextlib.contextmanager
def naming_damage(path: str) -> Iterator[None]:
    """DuckDB's damage errors inside the block as one StoreError line; others as they are."""
    try:
        yield
    except duckdb.Error as e:
        if is_damage(e):
            raise damaged(path, e) from e
        raise


def first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
