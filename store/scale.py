"""A large store for the scale benchmark (engine/bench/scale_store.py): real campaigns
cloned a batch at a time, their rows interleaved as campaigns running side by side write
them, and the counts it reports."""

from __future__ import annotations

import pandas as pd

from store.connection import Store

#: The tables a clone copies, with the column holding the campaign id.
TABLES = {
    "campaigns": "id",
    "seeds": "campaign_id",
    "generations": "campaign_id",
    "individuals": "campaign_id",
    "images": "campaign_id",
    "campaign_metrics": "campaign_id",
}
#: Rows of a table ordered as concurrent campaigns write them: generation first.
ORDER = {
    "generations": "t.generation, c.dst, t.seed_idx",
    "individuals": "t.generation, c.dst, t.seed_idx, t.individual",
    "seeds": "c.dst, t.seed_idx",
    "images": "c.dst, t.seed_idx",
    "campaigns": "c.dst",
    "campaign_metrics": "c.dst",
}


def row_count(store: Store, table: str) -> int:
    """How many rows `table` holds."""
    return int(store.query(f"SELECT count(*) AS n FROM {table}")["n"][0])


def clone_count(store: Store) -> int:
    """How many clones the store holds (campaign ids starting with 'x')."""
    return int(store.query("SELECT count(*) AS n FROM campaigns WHERE id LIKE 'x%'")["n"][0])


def individuals_per_campaign(store: Store) -> pd.Series:
    """Individual rows per campaign id."""
    return store.query(
        "SELECT campaign_id, count(*) AS n FROM individuals GROUP BY campaign_id"
    ).set_index("campaign_id")["n"]


def clone(store: Store, pairs: list[tuple[str, str, str | None]]) -> None:
    """Copy campaigns in one transaction: (source id, clone id, the clone's study or None)
    per clone; a clone is named by its id."""
    with store.write() as con:
        con.execute("CREATE OR REPLACE TEMP TABLE c (src VARCHAR, dst VARCHAR, study VARCHAR)")
        con.executemany("INSERT INTO c VALUES (?, ?, ?)", pairs)
        for table, key in TABLES.items():
            extra = ", c.dst AS name, c.study AS study" if table == "campaigns" else ""
            con.execute(
                f"INSERT INTO {table} SELECT t.* REPLACE (c.dst AS {key}{extra}) "
                f"FROM {table} t JOIN c ON t.{key} = c.src ORDER BY {ORDER[table]}"
            )


def checkpoint(store: Store) -> None:
    """Fold the WAL into the file (a benchmark times the file, not a replay)."""
    with store.write() as con:
        con.execute("CHECKPOINT")
