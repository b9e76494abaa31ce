"""The store's own health: the facts it records about itself (schema and DuckDB versions),
duplicated keys with their repair (`latentfuzz doctor`), and the check that keeps a damaged
store from being written to (`require_sound`)."""

from __future__ import annotations

import contextlib
import json

from store.connection import Store, StoreError
from store.errors import StoreBusy
from store.schema import KEYS, UNINDEXED, rebuild


def schema_info(store: Store) -> dict[str, str]:
    """The meta table: schema version, DuckDB major and version that wrote the store."""
    df = store.query("SELECT key, value FROM meta")
    return dict(zip(df["key"], df["value"], strict=True))


def duplicated_keys(store: Store, table: str) -> int:
    """How many keys of campaign table `table` (store/schema.py KEYS) appear twice."""
    key = KEYS[table]
    df = store.query(
        f"SELECT count(*) AS n FROM (SELECT {key} FROM {table} GROUP BY {key} HAVING count(*) > 1)"
    )
    return int(df["n"][0])


def _copies(table: str) -> str:
    key = KEYS[table]
    return f"SELECT count(*) - count(DISTINCT ({key})) AS n FROM {table}"


def duplicate_rows(store: Store, table: str) -> int:
    """How many rows of `table` are second copies of a key (0 when none)."""
    return int(store.query(_copies(table))["n"][0])


def drop_duplicate_rows(con, table: str) -> int:
    """Inside a write: keep the first row of each key of `table`, drop the copies; returns
    how many were dropped."""
    n = con.execute(_copies(table)).fetchone()[0]
    key = KEYS[table]
    rebuild(con, table, f"rowid IN (SELECT min(rowid) FROM {table} GROUP BY {key})")
    return n


#: The meta row where `latentfuzz doctor` records the store's damage (JSON list of lines,
#: absent when it found none): what a start reads where its own check would be too long.
DAMAGE = "damage"
#: Up to this many rows in a table without an index (UNINDEXED), a command that writes a
#: campaign checks its keys itself. Measured on this 2-core machine at load 7: 0.4 s for
#: 1 million `individuals` rows (a 100-seed, 250-generation campaign writes 625,000),
#: 0.85 s for 2 million, 1 to 9 s for 10 million (idle to loaded), against a start-up of 3
#: to 4 s. Above it, the start reads doctor's recorded verdict instead (a count: 9 ms).
LIVE_ROWS = 1_000_000


def record_damage(store: Store, problems: list[str]) -> None:
    """Record doctor's verdict on the store's own damage (an empty list clears it). A
    read-only or busy store keeps the old one: doctor's report does not depend on it."""
    if not store.writable:
        return
    value = json.dumps(problems) if problems else None
    with contextlib.suppress(StoreBusy):
        with store.read(timeout=1) as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", [DAMAGE]).fetchone()
        if (row[0] if row else None) == value:
            return
        with store.write(timeout=1) as con:
            con.execute("DELETE FROM meta WHERE key = ?", [DAMAGE])
            if value is not None:
                con.execute("INSERT INTO meta VALUES (?, ?)", [DAMAGE, value])


def damage(store: Store) -> list[str]:
    """The store's own damage that a new write would build on: keys that appear twice in a
    table no index guards (the indexed ones refuse a second key themselves). Checked here
    up to LIVE_ROWS rows, else taken from doctor's record; bare queries, no pandas."""
    found: list[str] = []
    unchecked = False
    with store.read() as con:
        for table in sorted(UNINDEXED):
            if con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > LIVE_ROWS:
                unchecked = True
                continue
            key = KEYS[table]
            n = con.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {table} GROUP BY {key} HAVING count(*) > 1)"
            ).fetchone()[0]
            if n:
                found.append(f"{table}: {n} keys appear twice")
        row = con.execute("SELECT value FROM meta WHERE key = ?", [DAMAGE]).fetchone()
    if unchecked and not found and row:
        found = json.loads(row[0])
    return found


def require_sound(store: Store) -> None:
    """Refuse (StoreError, one line with doctor's advice) to write a campaign into a store
    that is damaged, before anything is written."""
    found = damage(store)
    if found:
        n = f"{len(found)} problem{'s' * (len(found) > 1)}"
        raise StoreError(
            f"the store {store.path} is damaged ({n}: {'; '.join(found)}); run "
            "`latentfuzz doctor` to see them and `latentfuzz doctor --fix` to repair"
        )
