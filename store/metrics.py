"""A finished campaign's metrics row (engine/campaign/metrics.py computes it): written once,
read by the pages, the CLI and the strategy study."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from store.connection import Store
from store.rows import marks
from store.tables import columns, insert_table

if TYPE_CHECKING:
    import pandas as pd

JSON_COLS = ("result_gaps", "test_gaps", "per_generation", "test_confusion")


def metrics_frame(row: dict[str, Any]):
    """The metrics row as one-row columns (store/tables.py `columns`), JSON columns as text,
    without the campaign id (the insert binds it): what the close inserts, and what a
    recovery folder saves (as Arrow, tables.arrow). Not Arrow here: pa.array imports
    pandas, 0.4 s of every campaign's close. Scalars, not one-item lists: `columns` keeps
    a scalar text as a Python object, which DuckDB parses into a JSON column, where a
    numpy string array would be stored as one JSON string."""
    row = dict(row)
    for c in JSON_COLS:
        row[c] = None if row.get(c) is None else json.dumps(row[c])
    return columns([row])


def put_metrics(con, campaign_id: str, table) -> None:
    """Inside a write: replace the campaign's metrics with `table` (metrics_frame, or its
    Arrow form from a recovery folder)."""
    con.execute("DELETE FROM campaign_metrics WHERE campaign_id = ?", [campaign_id])
    insert_table(con, "campaign_metrics", table, campaign_id)


def write_metrics(store: Store, campaign_id: str, row: dict[str, Any]) -> None:
    """Insert (or replace) the campaign's metrics in one short transaction."""
    table = metrics_frame(row)
    with store.write() as con:
        put_metrics(con, campaign_id, table)


def missing_metrics(store: Store) -> list[str]:
    """Finished campaigns of this tool (not imported results, which have none) without a
    metrics row: a close that stopped between its two writes, before they were one."""
    df = store.query(
        "SELECT c.id FROM campaigns c LEFT JOIN campaign_metrics m ON m.campaign_id = c.id "
        "WHERE c.status = 'finished' AND coalesce(c.kind, 'native') = 'native' "
        "AND m.campaign_id IS NULL ORDER BY c.created_at, c.id"
    )
    return df["id"].tolist()


#: Per-campaign metrics (engine/campaign/metrics.py), in display order with their labels.
METRIC_LABELS: dict[str, str] = {
    "error_rate": "error rate (failing / all evaluations)",
    "success_rate": "success rate (seeds with a failure)",
    "label_diversity": "label diversity (wrong labels per seed)",
    "mean_mse": "MSE result vs seed",
    "mean_ssim": "SSIM result vs seed",
    "failures_per_1k": "failures per 1,000 evaluations",
    "result_gap_median": "median top-2 gap, results",
    "test_gap_median": "median top-2 gap, test images",
}


def metrics(store: Store, campaign_id: str) -> dict[str, Any] | None:
    """The campaign's metrics row, gap lists parsed; None before it finished."""
    # Deferred (start-up time: loads pandas).
    import pandas as pd  # here: write_metrics is on every campaign's start-up path (0.3 s)

    df = store.query("SELECT * FROM campaign_metrics WHERE campaign_id = ?", [campaign_id])
    if df.empty:
        return None
    row = {
        k: (None if not isinstance(v, str) and pd.isna(v) else v)
        for k, v in df.iloc[0].to_dict().items()
    }
    for c in (*JSON_COLS, "differential", "realism"):
        row[c] = None if row.get(c) is None else json.loads(row[c])
    return row


def metrics_table(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The metrics of several campaigns (those that have them), one row each."""
    # Deferred (start-up time: loads pandas).
    import pandas as pd  # here: write_metrics is on every campaign's start-up path (0.3 s)

    if not campaign_ids:
        return pd.DataFrame(columns=["campaign_id", *METRIC_LABELS])
    return store.query(
        f"SELECT campaign_id, evaluations, {', '.join(METRIC_LABELS)} FROM campaign_metrics "
        f"WHERE campaign_id IN ({marks(campaign_ids)})",
        list(campaign_ids),
    )


def realism_images(store: Store, campaign_id: str) -> list[str]:
    """The images a campaign's realism is measured on: its seeds' results, then its
    archived failing inputs, each distinct file once (plain rows: no pandas at a close)."""
    rows = store.query_rows(
        "SELECT image FROM (SELECT result_image AS image, 0 AS part, seed_idx AS pos FROM seeds "
        "WHERE campaign_id = ? AND result_image IS NOT NULL "
        "UNION ALL SELECT image, 1, entry FROM archive WHERE campaign_id = ?) "
        "ORDER BY part, pos",
        [campaign_id, campaign_id],
    )
    return list(dict.fromkeys(r["image"] for r in rows))


def write_realism(store: Store, campaign_id: str, realism: dict[str, Any]) -> None:
    """Store a campaign's realism figures (engine/campaign/realism.py) beside its other
    metrics (the metrics row exists once the campaign finished)."""
    with store.write() as con:
        con.execute(
            "UPDATE campaign_metrics SET realism = ? WHERE campaign_id = ?",
            [json.dumps(realism), campaign_id],
        )


#: The realism figures (engine/campaign/realism.py), with their labels: never Inception's.
REALISM_LABELS: dict[str, str] = {
    "fid": "FID (classifier features, not Inception)",
    "kid": "KID (classifier features, not Inception)",
    "kid_sd": "KID SD over subsets",
    "images": "images compared",
    "reference_images": "real test images",
}


def realism_table(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The realism of several campaigns, one row each with its generator (those measured):
    campaign_id, generator, fid, kid, kid_sd, images, reference_images, features."""
    # Deferred (start-up time: loads pandas).
    import pandas as pd  # here: write_metrics is on every campaign's start-up path (0.3 s)

    cols = ["campaign_id", "generator", *REALISM_LABELS, "features"]
    if not campaign_ids:
        return pd.DataFrame(columns=cols)
    return store.query(
        "SELECT m.campaign_id, c.generator, "
        "TRY_CAST(json_extract(m.realism, '$.fid') AS DOUBLE) AS fid, "
        "TRY_CAST(json_extract(m.realism, '$.kid') AS DOUBLE) AS kid, "
        "TRY_CAST(json_extract(m.realism, '$.kid_sd') AS DOUBLE) AS kid_sd, "
        "TRY_CAST(json_extract(m.realism, '$.images') AS BIGINT) AS images, "
        "TRY_CAST(json_extract(m.realism, '$.reference_images') AS BIGINT) AS reference_images, "
        "json_extract_string(m.realism, '$.features') AS features "
        "FROM campaign_metrics m JOIN campaigns c ON c.id = m.campaign_id "
        f"WHERE m.realism IS NOT NULL AND m.campaign_id IN ({marks(campaign_ids)}) "
        "ORDER BY c.created_at, m.campaign_id",
        list(campaign_ids),
    )
