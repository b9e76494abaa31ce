"""Helpers the read queries of every domain share."""

from __future__ import annotations

import json
from typing import Any

from store.connection import Store


def row_by_id(
    store: Store, table: str, key: str, json_cols: tuple[str, ...]
) -> dict[str, Any] | None:
    """One row of `table` by its id as a dict, its JSON columns parsed; None if absent."""
    df = store.query(f"SELECT * FROM {table} WHERE id = ?", [key])
    if df.empty:
        return None
    row = df.iloc[0].to_dict()
    for c in json_cols:
        row[c] = json.loads(row[c])
    return row


def marks(ids: list[str]) -> str:
    """Placeholders for an IN list; never empty (an empty list matches no row)."""
    return ", ".join("?" * len(ids)) or "NULL"
