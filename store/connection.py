"""Opening the store: short-lived connections with retry, one code path for file and memory.

See CONTRACT.md in this folder for the rules every process follows.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from store import host, interrupts
from store._duckdb import duckdb
from store.errors import StoreBusy, StoreError
from store.files import FIX, check_file, damaged, first_line, naming_damage
from store.liveness import live_campaigns
from store.locks import file_lock, holders, is_lock_conflict, lock_for, writable
from store.schema import DDL, MIGRATIONS, SCHEMA_VERSION

DUCKDB_MAJOR = duckdb.__version__.split(".")[0]


class Store:
    """A latentfuzz store at ``path`` (a file, or ':memory:' for tests).

    File stores are opened per operation and closed right after, so that the engine, the
    dashboard and the CLI can take turns on one file; memory stores keep one connection.
    """

    def __init__(self, path: str | Path = ":memory:", timeout: float | None = None) -> None:
        self.path = str(path)
        self.memory = self.path == ":memory:"
        # $LATENTFUZZ_STORE_TIMEOUT shortens the wait in tests (the final write retries).
        self.timeout = (
            float(os.environ.get("LATENTFUZZ_STORE_TIMEOUT", 30.0)) if timeout is None else timeout
        )
        key = self.path if self.memory else str(Path(self.path).resolve())
        self._lock = lock_for(key)
        self._flock = None if self.memory else file_lock(key)
        self._mem = duckdb.connect(":memory:") if self.memory else None
        self._tls = threading.local()  # this thread's session (Store.session), if any
        #: False where the file or its folder cannot be written: reads work, writes raise.
        self.writable = True
        if not self.memory:
            path = Path(self.path)
            if path.parent.exists() and not path.parent.is_dir():
                raise StoreError(
                    f"{path.parent} is a file, expected the data directory; "
                    "move it away or pick another --home"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writable = writable(path)
            if path.exists():
                check_file(self.path)
            elif not self.writable:
                raise StoreError(
                    f"no store at {path} and {path.parent} is read-only; give write access "
                    "or pick another --home"
                )
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
            if not read_only:
                self.require_writable()
                # DuckDB refuses a read-write connection beside a read-only one in one
                # process: this thread's session connection closes first.
                self._end_session_connection()
            begun = time.monotonic()
            deadline = begun + timeout
            delay = 0.001
            while True:
                con = None
                if self._flock.try_acquire(exclusive=not read_only):
                    try:
                        # Depth 1: no other use of the file in this process.
                        outermost = self._flock.depth == 1
                        con = host.attach(self.path, read_only, outermost)
                    except BaseException as e:
                        # A process that does not take our lock file (an older latentfuzz,
                        # the duckdb CLI) still holds the database: wait for it too.
                        self._flock.release()
                        if not isinstance(e, duckdb.Error):
                            raise  # a StoreError of host's, or an interrupt
                        if not is_lock_conflict(e):
                            raise StoreError(
                                f"store {self.path} cannot be opened ({first_line(e)}); {FIX}"
                            ) from e
                if con is not None:
                    break
                if time.monotonic() >= deadline:
                    pids = holders(self.path)
                    who = f" (held by pid {', '.join(map(str, pids))})" if pids else ""
                    raise StoreBusy(
                        f"store {self.path} stayed locked by another process{who} for "
                        f"{timeout:.1f}s; close other writers or retry"
                    )
                # A Ctrl-C held back by a closing campaign ends a long wait in its final write.
                if time.monotonic() - begun >= interrupts.GIVE_WAY_AFTER:
                    interrupts.honour()
                # Short polls: holders keep the file for milliseconds, and a long sleep
                # would let busy writers starve a waiting one. Jitter breaks lockstep.
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.01)
            try:
                with naming_damage(self.path):
                    yield con
            finally:
                try:
                    host.detach(con, self.path)
                finally:
                    self._flock.release()

    def require_writable(self) -> None:
        """Raise StoreError (one line, with the fix) when the store cannot be written."""
        if not self.writable:
            raise StoreError(
                f"store {self.path} is read-only; listing, showing and exporting work, "
                "changing it needs write access to the file and its folder"
            )

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
        """Run a read query and return a pandas DataFrame (on this thread's session
        connection inside `session()`)."""
        con = self._session_connection()
        if con is None:
            with self.read() as con:
                return con.execute(sql, params or []).df()
        with naming_damage(self.path):  # a page's session: not inside _connect's block
            return con.execute(sql, params or []).df()

    def query_rows(self, sql: str, params: list | None = None) -> list[dict[str, Any]]:
        """The same read as `query`, as one dict per row (NULL as None), without pandas:
        for the reads on a campaign's own path, where importing pandas is 0.4 s."""

        def fetch(con) -> list[dict[str, Any]]:
            cur = con.execute(sql, params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

        con = self._session_connection()
        if con is None:
            with self.read() as con:
                return fetch(con)
        with naming_damage(self.path):
            return fetch(con)

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """One read connection serves this thread's `query` calls inside the block: opened
        at the first query, closed at the end of the block or before this thread writes.
        A dashboard page run makes about ten queries. Opening and closing the file cost
        20 to 120 ms each while every open built a database instance, and still costs a
        few ms attached (store/host.py); one open also gives the page one snapshot.
        Other processes can read meanwhile; a campaign's writer defers its rows to its
        next flush (store/CONTRACT.md, rule 4), so keep sessions as short as a page run."""
        if self.memory or getattr(self._tls, "stack", None) is not None:
            yield  # memory stores keep one connection anyway; nested: the outer one serves
            return
        self._tls.stack, self._tls.con = contextlib.ExitStack(), None
        try:
            yield
        finally:
            stack, self._tls.stack, self._tls.con = self._tls.stack, None, None
            stack.close()

    def _session_connection(self) -> duckdb.DuckDBPyConnection | None:
        stack = getattr(self._tls, "stack", None)
        if stack is None:
            return None
        if self._tls.con is None:
            self._tls.con = stack.enter_context(self._connect(read_only=True, timeout=None))
        return self._tls.con

    def _end_session_connection(self) -> None:
        stack = getattr(self._tls, "stack", None)
        if stack is not None and self._tls.con is not None:
            self._tls.con = None
            stack.close()  # an ExitStack is reusable after close: the next query reopens

    def _init_schema(self) -> None:
        version = 0
        if not self.memory and Path(self.path).exists():
            try:
                with self.read() as con:
                    tables = con.execute(
                        "SELECT table_name FROM information_schema.tables "
                        "WHERE table_catalog = current_database()"
                    ).fetchall()
                    if ("meta",) in tables:
                        row = con.execute(
                            "SELECT value FROM meta WHERE key = 'schema_version'"
                        ).fetchone()
                        version = int(row[0]) if row else 0
            except duckdb.Error as e:
                # Any failure to read the catalog of a file that passed check_file is
                # damage (lock conflicts were settled when it was attached).
                raise damaged(self.path, e) from e
            if version == SCHEMA_VERSION:
                return
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, this latentfuzz knows "
                    f"{SCHEMA_VERSION}; upgrade latentfuzz, or move the file away (or use "
                    "another --home) to start a new store"
                )
            if not self.writable:
                raise StoreError(
                    f"store {self.path} has schema version {version} and needs upgrading "
                    f"to {SCHEMA_VERSION}, but it is read-only; give write access once"
                )
            if version and (live := live_campaigns(Path(self.path).parent)):
                # The older latentfuzz of a running campaign would refuse the upgraded
                # store at its next write and end the campaign: wait for it instead.
                raise StoreError(
                    f"store {self.path} needs upgrading from schema {version} to "
                    f"{SCHEMA_VERSION}, but campaign {', '.join(live[:3])} is still running "
                    "with the older latentfuzz; let it finish (or stop it), then retry"
                )
        with self.write() as con:
            if version:  # an older store: migrate it step by step, in this one transaction
                for v in range(version + 1, SCHEMA_VERSION + 1):
                    for stmt in MIGRATIONS.get(v, []):
                        stmt(con) if callable(stmt) else con.execute(stmt)
            for stmt in DDL:
                con.execute(stmt)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), ('duckdb_major', ?), "
                "('duckdb_version', ?)",
                [str(SCHEMA_VERSION), DUCKDB_MAJOR, duckdb.__version__],
            )
