"""A campaign's rows as they land: columns in, one set-based statement per table.

The writer's flushes and the recovery files' ingest share these, so both write a batch
the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

Columns = dict[str, Any]

SEED_UPDATE_COLS = (
    "status",
    "misclassified",
    "iterations",
    "evaluations",
    "final_pred",
    "final_fitness",
    "final_top1",
    "final_top2",
    "latent_distance",
    "result_image",
    "elapsed_s",
    "improvements_image",
    "final_pred_b",
)


def _column(v: Any, n: int) -> np.ndarray:
    if isinstance(v, (np.ndarray, list, tuple)):
        return np.asarray(v)
    # Strings and None stay Python objects; numbers broadcast with their own dtype.
    return np.array([v] * n, dtype=object) if v is None or isinstance(v, str) else np.full(n, v)


def columns(chunks: list[Columns]) -> dict[str, np.ndarray]:
    """One array per column from chunks of columns; scalars are broadcast to their chunk's
    length. DuckDB scans such a dict itself (NaN and None become NULL): an Arrow table would
    import pandas, 0.4 s of the first flush, and a pandas frame per flush cost more than the
    insert itself."""
    cols: dict[str, list[np.ndarray]] = {}
    for chunk in chunks:
        n = max(
            (len(v) for v in chunk.values() if isinstance(v, (np.ndarray, list, tuple))), default=1
        )
        for name, v in chunk.items():
            cols.setdefault(name, []).append(_column(v, n))
    return {name: np.concatenate(parts) for name, parts in cols.items()}


def frame(chunks: list[Columns]) -> pa.Table:
    """The same columns as an Arrow table (recovery files are Parquet)."""
    return arrow(columns(chunks))


def arrow(cols: dict[str, np.ndarray]) -> pa.Table:
    """`columns` as an Arrow table, NaN as null (as DuckDB reads the dict). Only for a
    recovery folder: pa.array imports pandas."""
    # Deferred (start-up time: pyarrow is 0.1 s; only a recovery folder needs Arrow).
    import pyarrow as pa

    return pa.table({k: pa.array(v, from_pandas=True) for k, v in cols.items()})


def insert_table(con, table: str, rows, campaign_id: str) -> None:
    """Insert rows (an Arrow table, or `columns`) into a campaign table; the id is bound
    once, not sent per row."""
    con.register("batch", rows)
    con.execute(
        f"INSERT INTO {table} BY NAME SELECT ?::VARCHAR AS campaign_id, * FROM batch",
        [campaign_id],
    )
    con.unregister("batch")


def apply_seed_updates(con, upd, campaign_id: str) -> None:
    """Final per-seed outcomes (seed_idx plus SEED_UPDATE_COLS columns), as an Arrow table
    or `columns`."""
    names = list(upd) if isinstance(upd, dict) else upd.column_names
    cols = [c for c in SEED_UPDATE_COLS if c in names]
    con.register("upd", upd)
    sets = ", ".join(f"{c} = upd.{c}" for c in cols)
    con.execute(
        f"UPDATE seeds SET {sets} FROM upd WHERE seeds.campaign_id = ? "
        f"AND seeds.seed_idx = upd.seed_idx",
        [campaign_id],
    )
    con.unregister("upd")
