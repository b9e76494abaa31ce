"""Opening the store: short-lived connections with retry, one code path for file and memory.

See CONTRACT.md in this folder for the rules every process follows.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

from store.schema import DDL, MIGRATIONS, SCHEMA_VERSION

DUCKDB_MAJOR = duckdb.__version__.split(".")[0]

# One lock per database path in this process: DuckDB refuses a read-only and a read-write
# connection to the same file inside one process, so threads take turns.
_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


class StoreBusy(TimeoutError):
    """Another process held the database for longer than the timeout."""


class StoreError(RuntimeError):
    """The store file is not one this version can use."""


def _lock_for(key: str) -> threading.RLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


class _FileLock:
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
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd, self.depth = fd, 1
        return True

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0 and self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None


_FILE_LOCKS: dict[str, _FileLock] = {}


def _is_lock_conflict(e: Exception) -> bool:
    msg = str(e).lower()
    return "lock" in msg or "different configuration" in msg or "resource temporarily" in msg


class Store:
    """A latentfuzz store at ``path`` (a file, or ':memory:' for tests).

    File stores are opened per operation and closed right after, so that the engine, the
    dashboard and the CLI can take turns on one file; memory stores keep one connection.
    """

    def __init__(self, path: str | Path = ":memory:", timeout: float = 30.0) -> None:
        self.path = str(path)
        self.memory = self.path == ":memory:"
        self.timeout = timeout
        key = self.path if self.memory else str(Path(self.path).resolve())
        self._lock = _lock_for(key)
        with _LOCKS_GUARD:
            self._flock = None if self.memory else _FILE_LOCKS.setdefault(key, _FileLock(key))
        self._mem = duckdb.connect(":memory:") if self.memory else None
        if not self.memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._init_schema()

    @contextlib.contextmanager
    def _connect(
        self, read_only: bool, timeout: float | None
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        timeout = self.timeout if timeout is None else timeout
        with self._lock:
            if self._mem is not None:
                yield self._mem.cursor()
                return
            deadline = time.monotonic() + timeout
            delay = 0.001
            while True:
                con = None
                if self._flock.try_acquire(exclusive=not read_only):
                    try:
                        con = duckdb.connect(self.path, read_only=read_only)
                    except (duckdb.IOException, duckdb.ConnectionException) as e:
                        # A process that does not take our lock file (an older latentfuzz,
                        # the duckdb CLI) still holds the database: wait for it too.
                        self._flock.release()
                        if not _is_lock_conflict(e):
                            raise
                if con is not None:
                    break
                if time.monotonic() >= deadline:
                    raise StoreBusy(
                        f"store {self.path} stayed locked by another process for "
                        f"{timeout:.1f}s; close other writers or retry"
                    )
                # Short polls: holders keep the file for milliseconds, and a long sleep
                # would let busy writers starve a waiting one. Jitter breaks lockstep.
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.01)
            try:
                yield con
            finally:
                try:
                    con.close()
                finally:
                    self._flock.release()

    @contextlib.contextmanager
    def read(self, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection, held only for the block."""
        with self._connect(read_only=True, timeout=timeout) as con:
            yield con

    @contextlib.contextmanager
    def write(
        self, timeout: float | None = None, checkpoint: bool = False
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction: all of the block or none of it.
        checkpoint=True folds the WAL into the file after the commit, on the same connection."""
        with self._connect(read_only=False, timeout=timeout) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            if checkpoint:
                con.execute("CHECKPOINT")

    def query(self, sql: str, params: list | None = None):
        """Run a read query and return a pandas DataFrame."""
        with self.read() as con:
            return con.execute(sql, params or []).df()

    def _init_schema(self) -> None:
        version = 0
        if not self.memory and Path(self.path).exists():
            with self.read() as con:
                tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
                if ("meta",) in tables:
                    row = con.execute(
                        "SELECT value FROM meta WHERE key = 'schema_version'"
                    ).fetchone()
                    version = int(row[0]) if row else 0
            if version == SCHEMA_VERSION:
                return
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, this latentfuzz knows "
                    f"{SCHEMA_VERSION}; upgrade latentfuzz or use another --home"
                )
        with self.write() as con:
            if version:  # an older store: migrate it step by step, in this one transaction
                for v in range(version + 1, SCHEMA_VERSION + 1):
                    for stmt in MIGRATIONS.get(v, []):
                        con.execute(stmt)
            for stmt in DDL:
                con.execute(stmt)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), ('duckdb_major', ?), "
                "('duckdb_version', ?)",
                [str(SCHEMA_VERSION), DUCKDB_MAJOR, duckdb.__version__],
            )
