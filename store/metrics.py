"""Writes a finished campaign's metrics row (engine/campaign/metrics.py computes it)."""

from __future__ import annotations

import json
from typing import Any

from store.connection import Store
from store.writer import frame

JSON_COLS = ("result_gaps", "test_gaps", "per_generation", "test_confusion")


def write_metrics(store: Store, campaign_id: str, row: dict[str, Any]) -> None:
    """Insert (or replace) the campaign's metrics in one short transaction."""
    row = {"campaign_id": campaign_id, **row}
    for c in JSON_COLS:
        row[c] = None if row.get(c) is None else json.dumps(row[c])
    table = frame([{k: [v] for k, v in row.items()}])
    with store.write() as con:
        con.register("new_metrics", table)
        con.execute("DELETE FROM campaign_metrics WHERE campaign_id = ?", [campaign_id])
        con.execute("INSERT INTO campaign_metrics BY NAME SELECT * FROM new_metrics")
        con.unregister("new_metrics")
