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

from store._duckdb import duckdb
from store.errors import StoreError

_GUARD = threading.Lock()
_HOST: duckdb.DuckDBPyConnection | None = None
_PID: int | None = None
#: Each attached file (alias -> [uses under way, attached read-only]).
_ATTACHED: dict[str, list] = {}
#: The instance each open connection came from (id -> instance), so that a failure resets
#: that one, never a newer one another thread has built since.
_INSTANCE: dict[int, duckdb.DuckDBPyConnection] = {}


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
            _ATTACHED.clear()
        return _HOST


def _reset(instance: duckdb.DuckDBPyConnection) -> None:
    """Drop `instance` if it is still the process's (closing it releases every file it
    holds); the next access builds a new one. Another thread's newer instance stays."""
    global _HOST
    with _GUARD:
        if _HOST is not instance:
            return
        _HOST = None
        _ATTACHED.clear()
    if os.getpid() == _PID:
        # The failure that brought us here is raised by the caller.
        with contextlib.suppress(duckdb.Error):
            instance.close()


def alias(path: str) -> str:
    """The catalog name of the file while attached: one per file, however its path is
    spelled, so that two stores used by two threads at once never meet."""
    return "store_" + hashlib.sha1(os.path.realpath(path).encode()).hexdigest()[:16]


def attach(path: str, read_only: bool = False, outermost: bool = True) -> duckdb.DuckDBPyConnection:
    """A connection whose default catalog is the store file at `path`. Raises duckdb's
    error when the file cannot be opened (held by another process).

    A use nested in another of the same file (`outermost` False: a read inside a page's
    session, in the thread that holds the file's lock) shares its attachment, as
    duckdb.connect shared its instance: the file is released when the last one ends. An
    outermost use starts from a clean slate: an attachment or a count that an interrupt
    left behind (Ctrl-C between ATTACH and the count) is dropped first."""
    instance = _host()
    con = instance.cursor()
    name = alias(path)
    counted = False
    try:
        with _GUARD:
            if outermost:
                _ATTACHED.pop(name, None)
                con.execute(f"DETACH DATABASE IF EXISTS {name}")
            if name not in _ATTACHED:
                quoted = path.replace("'", "''")
                mode = " (READ_ONLY)" if read_only else ""
                con.execute(f"ATTACH '{quoted}' AS {name}{mode}")
                _ATTACHED[name] = [0, read_only]
            elif _ATTACHED[name][1] and not read_only:
                raise StoreError(
                    f"store {path} is open read-only in this thread: a write cannot run "
                    "inside a read of the same store; end the read first"
                )
            _ATTACHED[name][0] += 1
            counted = True
        con.execute(f"USE {name}")
    except BaseException:
        if counted:
            detach(con, path)
        else:
            con.close()
        raise
    _INSTANCE[id(con)] = instance
    return con


def detach(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """End a use of the file: the last one releases it (checkpointed, if it was written).
    Closes the connection."""
    name = alias(path)
    instance = _INSTANCE.pop(id(con), None) or _HOST
    try:
        con.execute("USE memory")
        with _GUARD:
            _ATTACHED[name][0] -= 1
            if _ATTACHED[name][0] == 0:
                del _ATTACHED[name]
                try:
                    con.execute(f"DETACH {name}")
                except duckdb.Error:
                    names = {
                        r[0]
                        for r in con.execute(
                            "SELECT database_name FROM duckdb_databases()"
                        ).fetchall()
                    }
                    if name in names:
                        raise
                    # Detached, but its checkpoint failed (a full disk): what was committed
                    # is in the WAL, which the next open replays, as duckdb.connect's close
                    # left it. The write succeeded; it must not be retried.
    except BaseException:
        # A release that failed may leave the file attached and locked: closing the
        # whole instance lets it go.
        with contextlib.suppress(duckdb.Error):
            con.close()
        if instance is not None:
            _reset(instance)
        raise
    con.close()
