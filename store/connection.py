"""Opening the store: short-lived connections with retry, one code path for file and memory.

See CONTRACT.md in this folder for the rules every process follows.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import re
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

from store import host, interrupts
from store.errors import StoreBusy, StoreError
from store.schema import DDL, MIGRATIONS, SCHEMA_VERSION

DUCKDB_MAJOR = duckdb.__version__.split(".")[0]

# One lock per database path in this process: DuckDB refuses a read-only and a read-write
# connection to the same file inside one process, so threads take turns.
_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


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
    whole blocks cut, is named in one line where a read meets it (`_connect`)."""
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


def _is_damage(e: BaseException) -> bool:
    """DuckDB's errors for a file missing blocks or holding corrupt ones."""
    msg = str(e).lower()
    return "could not read enough bytes" in msg or "corrupt database file" in msg


def _damaged(path: str, e: BaseException) -> StoreError:
    return StoreError(f"store {path} is damaged ({_first_line(e)}); {FIX}")


@contextlib.contextmanager
def _naming_damage(path: str) -> Iterator[None]:
    """DuckDB's damage errors inside the block as one StoreError line; others as they are."""
    try:
        yield
    except duckdb.Error as e:
        if _is_damage(e):
            raise _damaged(path, e) from e
        raise


def _writable(path: Path) -> bool:
    """Whether this process may write the store: the file and its folder (DuckDB writes a
    WAL beside the file). EROFS counts too, which os.access reports for root as well."""
    folder = path.parent
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return False
    return not os.statvfs(folder).f_flag & os.ST_RDONLY


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


_FILE_LOCKS: dict[str, _FileLock] = {}


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


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


def _is_lock_conflict(e: Exception) -> bool:
    msg = str(e).lower()
    # "lock" as a word: "Could not read enough bytes ... block" is damage, not a conflict.
    return (
        re.search(r"\block\b", msg) is not None
        or "different configuration" in msg
        or "resource temporarily" in msg
    )


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
        self._lock = _lock_for(key)
        with _LOCKS_GUARD:
            self._flock = None if self.memory else _FILE_LOCKS.setdefault(key, _FileLock(key))
        self._mem = duckdb.connect(":memory:") if self.memory else None
        self._tls = threading.local()  # this thread's session (Store.session), if any
        #: False where the file or its folder cannot be written: reads work, writes raise.
        self.writable = True
        if not self.memory:
            path = Path(self.path)
            if path.parent.exists() and not path.parent.is_dir():
                raise StoreError(f"{path.parent} is a file, expected the data directory; "
                                 "move it away or pick another --home")  # fmt: skip
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writable = _writable(path)
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
                        if not _is_lock_conflict(e):
                            raise StoreError(
                                f"store {self.path} cannot be opened ({_first_line(e)}); {FIX}"
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
                with _naming_damage(self.path):
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
        with _naming_damage(self.path):  # a page's session: not inside _connect's block
            return con.execute(sql, params or []).df()

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
                raise _damaged(self.path, e) from e
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
            from store.liveness import live_campaigns  # it imports this module

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
