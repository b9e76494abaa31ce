"""Opening the store: short-lived connections with retry, one code path for file and memory.

See CONTRACT.md in this folder for the rules every process follows.
"""

from __future__ import annotations

import contextlib
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
        self._lock = _lock_for(self.path if self.memory else str(Path(self.path).resolve()))
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
            delay = 0.005
            while True:
                try:
                    con = duckdb.connect(self.path, read_only=read_only)
                    break
                except (duckdb.IOException, duckdb.ConnectionException) as e:
                    if not _is_lock_conflict(e):
                        raise
                    if time.monotonic() >= deadline:
                        raise StoreBusy(
                            f"store {self.path} stayed locked by another process for "
                            f"{timeout:.1f}s; close other writers or retry"
                        ) from e
                    # Jitter keeps two waiting processes from retrying in lockstep.
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.2)
            try:
                yield con
            finally:
                con.close()

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
