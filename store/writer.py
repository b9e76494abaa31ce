"""Batched, append-mostly writes for one campaign.

The runner hands over one DataFrame per table per generation; the writer keeps them and
writes them in a single short transaction at most every ``flush_seconds``. If another
process holds the file at that moment the batch simply waits for the next flush, so a
reader never stalls the search; ``flush(block=True)`` at the end waits until it is written.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from store.connection import Store, StoreBusy

TABLES = ("seeds", "generations", "individuals", "images")
SEED_UPDATE_COLS = (
    "status", "misclassified", "iterations", "evaluations", "final_pred", "final_fitness",
    "final_top1", "final_top2", "latent_distance", "result_image", "elapsed_s",
)  # fmt: skip


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def create_campaign(store: Store, row: dict[str, Any]) -> None:
    """Insert the campaign row (status 'running'); config and environment as JSON."""
    row = {**row, "config": json.dumps(row["config"]), "environment": json.dumps(row["environment"])}
    df = pd.DataFrame([row])
    with store.write() as con:
        con.register("new_campaign", df)
        con.execute("INSERT INTO campaigns BY NAME SELECT * FROM new_campaign")


class CampaignWriter:
    def __init__(self, store: Store, campaign_id: str, flush_seconds: float = 1.0) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.flush_seconds = flush_seconds
        self._pending: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
        self._seed_updates: list[pd.DataFrame] = []
        self._last = time.monotonic()
        #: Wall seconds spent inside the store (opening, writing, committing), for benchmarks.
        self.seconds = 0.0
        self.flushes = 0

    def append(self, table: str, df: pd.DataFrame) -> None:
        if len(df):
            self._pending[table].append(df)

    def update_seeds(self, df: pd.DataFrame) -> None:
        """Final per-seed outcomes; keyed by seed_idx, columns among SEED_UPDATE_COLS."""
        if len(df):
            self._seed_updates.append(df)

    def maybe_flush(self) -> None:
        if time.monotonic() - self._last >= self.flush_seconds:
            self.flush(block=False)

    def flush(self, block: bool = True) -> bool:
        """Write everything pending in one transaction. Returns False if it must wait."""
        if not any(self._pending.values()) and not self._seed_updates:
            return True
        t0 = time.perf_counter()
        try:
            with self.store.write(timeout=None if block else 0.05) as con:
                for table, frames in self._pending.items():
                    if frames:
                        con.register("batch", pd.concat(frames, ignore_index=True))
                        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM batch")
                        con.unregister("batch")
                if self._seed_updates:
                    upd = pd.concat(self._seed_updates, ignore_index=True)
                    cols = [c for c in SEED_UPDATE_COLS if c in upd.columns]
                    con.register("upd", upd)
                    sets = ", ".join(f"{c} = upd.{c}" for c in cols)
                    con.execute(
                        f"UPDATE seeds SET {sets} FROM upd WHERE seeds.campaign_id = ? "
                        f"AND seeds.seed_idx = upd.seed_idx",
                        [self.campaign_id],
                    )
                    con.unregister("upd")
        except StoreBusy:
            if block:
                raise
            return False
        finally:
            self.seconds += time.perf_counter() - t0
            self._last = time.monotonic()
        self._pending = {t: [] for t in TABLES}
        self._seed_updates = []
        self.flushes += 1
        return True

    def finish(self, status: str, fields: dict[str, Any] | None = None, error: str | None = None) -> None:
        """Flush, then mark the campaign finished/interrupted/failed, in one transaction."""
        self.flush(block=True)
        t0 = time.perf_counter()
        cols = {"status": status, "finished_at": now(), "error": error, **(fields or {})}
        sets = ", ".join(f"{k} = ?" for k in cols)
        with self.store.write() as con:
            if status in ("interrupted", "failed"):
                con.execute(
                    "UPDATE seeds SET status = 'interrupted' WHERE campaign_id = ? "
                    "AND status = 'searching'",
                    [self.campaign_id],
                )
            con.execute(f"UPDATE campaigns SET {sets} WHERE id = ?", [*cols.values(), self.campaign_id])
        self.store.checkpoint()
        self.seconds += time.perf_counter() - t0
