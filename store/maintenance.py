"""The store's own health: the facts it records about itself (schema and DuckDB versions),
and duplicated keys with their repair (`latentfuzz doctor`)."""

from __future__ import annotations

from store.connection import Store
from store.schema import KEYS, rebuild


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
