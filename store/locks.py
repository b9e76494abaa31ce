"""Who may use the store file now: a lock per path among this process's threads, and an
advisory file lock among processes."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import threading
from pathlib import Path

# One lock per database path in this process: DuckDB refuses a read-only and a read-write
# connection to the same file inside one process, so threads take turns.
_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()
_FILE_LOCKS: dict[str, FileLock] = {}


def writable(path: Path) -> bool:
    """Whether this process may write the store: the file and its folder (DuckDB writes a
    WAL beside the file). EROFS counts too, which os.access reports for root as well."""
    folder = path.parent
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return False
    return not os.statvfs(folder).f_flag & os.ST_RDONLY


def lock_for(key: str) -> threading.RLock:
    """This process's one lock for the database at `key`, shared by its threads."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


class FileLock:
    """An advisory lock on ``<db>.lock`` held around every open-use-close of the database.

    DuckDB's own file lock has a window while a connection closes (its final checkpoint
    can shrink the file after another process has already opened it), which showed as
    "Could not read enough bytes" under several writing processes. Holding our own lock
    until close() has returned closes that window. Shared for readers, exclusive for
    writers; one per database path and process, re-entrant through the path's RLock."""

    def __init__(self, path: str) -> None:
        self.path = path + ".lock"
        self.fd: int | None = None
        self.depth = 0

    def try_acquire(self, exclusive: bool) -> bool:
        if self.depth:  # this thread holds it already (the RLock guarantees it is ours)
            self.depth += 1
            return True
        fd = self._open(exclusive)
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd, self.depth = fd, 1
        return True

    def _open(self, exclusive: bool) -> int:
        """A descriptor to lock. A read-only home cannot hold a new lock file, but flock
        needs no write access: readers lock an existing lock file, or else the database
        file itself (no writer can work in a read-only folder, so readers only meet
        readers there)."""
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            if exclusive or e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return os.open(self.path[: -len(".lock")], os.O_RDONLY)

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0 and self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None


def file_lock(key: str) -> FileLock:
    """This process's one FileLock for the database at `key` (a resolved path)."""
    with _LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(key, FileLock(key))


def holders(path: str) -> list[int]:
    """Pids holding a lock on the store or its lock file (Linux /proc/locks; [] elsewhere),
    so that a waiting process can say whom it waits for."""
    inodes = set()
    for p in (path, path + ".lock"):
        with contextlib.suppress(OSError):
            inodes.add(os.stat(p).st_ino)
    pids: list[int] = []
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return pids
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" ("->" marks a waiter)
        if "->" in parts or len(parts) < 6:
            continue
        try:
            pid, inode = int(parts[4]), int(parts[5].rsplit(":", 1)[1])
        except (ValueError, IndexError):
            continue
        if inode in inodes and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids


def is_lock_conflict(e: Exception) -> bool:
    msg = str(e).lower()
    # "lock" as a word: "Could not read enough bytes ... block" is damage, not a conflict.
    return (
        re.search(r"\block\b", msg) is not None
        or "different configuration" in msg
        or "resource temporarily" in msg
    )
