"""Every access attaches the store file to one long-lived in-memory DuckDB per process.

`duckdb.connect(path)` builds a whole database instance (the catalog of built-in
functions, a thread pool) and tears it down at close. That costs about 12 ms on a quiet
machine and 30 to 60 ms beside a campaign's model threads, on every flush. ATTACH on an
instance that stays up opens only the file (about 1 ms). DETACH checkpoints and releases
it, as close does. DuckDB takes the same file lock either way, and so does our lock file
(store/connection.py), so other processes see no difference: the file is held only for
the read or the write, as CONTRACT.md asks. A dashboard query cost 20 to 40 ms, most of it
that instance; now a few ms.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading

import duckdb

_GUARD = threading.Lock()
_HOST: duckdb.DuckDBPyConnection | None = None
_PID: int | None = None
#: Uses of each attached file under way (alias -> count).
_USERS: dict[str, int] = {}


def _host() -> duckdb.DuckDBPyConnection:
    global _HOST, _PID
    with _GUARD:
        # A forked child gets a copy of its parent's instance, threads not included: it
        # must never use it, so it builds its own.
        if _HOST is None or os.getpid() != _PID:
            # Spills of large queries go to the system's temporary folder, not to `.tmp`
            # in whatever folder the user started latentfuzz from.
            spill = os.path.join(tempfile.gettempdir(), f"latentfuzz-duckdb-{os.getpid()}")
            _HOST = duckdb.connect(":memory:", config={"temp_directory": spill})
            _PID = os.getpid()
            _USERS.clear()
        return _HOST


def _reset() -> None:
    """Drop the instance (closing it releases every file it holds); the next access builds
    a new one."""
    global _HOST
    with _GUARD:
        host, _HOST = _HOST, None
        _USERS.clear()
    if host is not None and os.getpid() == _PID:
        # The failure that brought us here is raised by the caller.
        with contextlib.suppress(duckdb.Error):
            host.close()


def alias(path: str) -> str:
    """The catalog name of the file while attached: one per file, however its path is
    spelled, so that two stores used by two threads at once never meet."""
    return "store_" + hashlib.sha1(os.path.realpath(path).encode()).hexdigest()[:16]


def attach(path: str, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection whose default catalog is the store file at `path`. Raises duckdb's
    error when the file cannot be opened (held by another process).

    A use nested in another of the same file (a read inside a page's session, in the
    thread that holds the file's lock) shares its attachment, as duckdb.connect shared
    its instance: the file is released when the last one ends."""
    con = _host().cursor()
    name = alias(path)
    try:
        with _GUARD:
            if _USERS.get(name, 0) == 0:
                quoted = path.replace("'", "''")
                mode = " (READ_ONLY)" if read_only else ""
                con.execute(f"ATTACH '{quoted}' AS {name}{mode}")
            _USERS[name] = _USERS.get(name, 0) + 1
    except BaseException:
        con.close()
        raise
    try:
        con.execute(f"USE {name}")
    except BaseException:
        detach(con, path)
        raise
    return con


def detach(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """End a use of the file: the last one releases it (checkpointed, if it was written).
    Closes the connection."""
    name = alias(path)
    try:
        con.execute("USE memory")
        with _GUARD:
            _USERS[name] -= 1
            if _USERS[name] == 0:
                del _USERS[name]
                con.execute(f"DETACH {name}")
    except BaseException:
        # A checkpoint that failed (a full disk) may leave the file attached and locked:
        # closing the whole instance lets it go.
        with contextlib.suppress(duckdb.Error):
            con.close()
        _reset()
        raise
    con.close()
