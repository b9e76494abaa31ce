"""Named read queries. Pages and the CLI read the store only through these.

Each returns a pandas DataFrame (or a dict for single rows) and holds the database only
for the duration of the query.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from store.connection import Store
from store.failures import FAILED_AS, failed_as  # noqa: F401 - named here too

_SUMMARY = """
    SELECT campaign_id,
           count(*) AS seeds_total,
           count(*) FILTER (WHERE viable) AS viable,
           count(*) FILTER (WHERE misclassified) AS misclassified,
           count(*) FILTER (WHERE status = 'searching') AS searching,
           count(*) FILTER (WHERE status = 'interrupted') AS interrupted,
           avg(iterations) FILTER (WHERE viable AND iterations IS NOT NULL)
               AS iterations_icst,
           stddev_samp(iterations) FILTER (WHERE viable AND iterations IS NOT NULL)
               AS iterations_icst_std,
           avg(iterations) FILTER (WHERE misclassified) AS iterations_to_failure,
           stddev_samp(iterations) FILTER (WHERE misclassified) AS iterations_to_failure_std
    FROM seeds GROUP BY campaign_id
"""
#: The study's "# iterations" (ICST 2025, Table III): the mean over all viable seeds of
#: the 1-based generation of the first failure, survivors counted at the budget. A seed
#: still searching (an interrupted campaign) has no iterations yet and is left out.
ICST_ITERATIONS = "mean iterations (viable seeds, survivors at budget)"
FAILURE_ITERATIONS = "mean iterations to failure (failing seeds)"
_ITERATION_COLS = ("iterations_icst", "iterations_icst_std", "iterations_to_failure",
                   "iterations_to_failure_std")  # fmt: skip


def list_campaigns(store: Store) -> pd.DataFrame:
    """One row per campaign, newest first, with the GIFTbench status figures and the
    failure criterion (`failed_as` names its failing seeds)."""
    return store.query(
        f"""
        SELECT c.id, c.name, c.status, c.dataset, c.generator, c.classifier, c.classifier_b,
               c.strategy, c.preset, c.n_seeds, c.target_class, c.random_seed, c.created_at,
               c.finished_at, c.wall_seconds, c.evaluations, c.kind,
               json_extract_string(c.config, '$.criterion') AS criterion,
               coalesce(s.viable, 0) AS viable,
               coalesce(s.misclassified, 0) AS misclassified,
               CASE WHEN s.viable > 0 THEN 100.0 * s.misclassified / s.viable END
                   AS misclassified_pct,
               s.iterations_icst, s.iterations_icst_std,
               s.iterations_to_failure, s.iterations_to_failure_std
        FROM campaigns c LEFT JOIN ({_SUMMARY}) s ON s.campaign_id = c.id
        ORDER BY c.created_at DESC, c.id DESC
        """
    )


def row_by_id(store: Store, table: str, key: str, json_cols: tuple[str, ...]):
    """One row of `table` by its id as a dict, its JSON columns parsed; None if absent."""
    df = store.query(f"SELECT * FROM {table} WHERE id = ?", [key])
    if df.empty:
        return None
    row = df.iloc[0].to_dict()
    for c in json_cols:
        row[c] = json.loads(row[c])
    return row


def campaign(store: Store, campaign_id: str) -> dict[str, Any] | None:
    """The campaign row with config and environment parsed, or None."""
    return row_by_id(store, "campaigns", campaign_id, ("config", "environment"))


def summary(store: Store, campaign_id: str) -> dict[str, Any]:
    """Viable seeds x of y, misclassified n (% of viable), both iteration means, and the
    campaign's failure criterion (what its failing seeds are called), also before its
    first seed row: a differential campaign's start-up said "misclassified 0"."""
    df = store.query(
        f"""
        SELECT c.id AS campaign_id, c.status,
               json_extract_string(c.config, '$.criterion') AS criterion,
               coalesce(s.seeds_total, 0) AS seeds_total, coalesce(s.viable, 0) AS viable,
               coalesce(s.misclassified, 0) AS misclassified,
               coalesce(s.searching, 0) AS searching,
               coalesce(s.interrupted, 0) AS interrupted,
               {", ".join(f"s.{c}" for c in _ITERATION_COLS)}
        FROM campaigns c LEFT JOIN ({_SUMMARY}) s ON s.campaign_id = c.id
        WHERE c.id = ?
        """,
        [campaign_id],
    )
    if df.empty:  # no such campaign
        return {"status": None, "criterion": None, "seeds_total": 0, "viable": 0,
                "misclassified": 0, "searching": 0, "interrupted": 0,
                "misclassified_pct": None, **dict.fromkeys(_ITERATION_COLS)}  # fmt: skip
    row = {k: (None if pd.isna(v) else v) for k, v in df.iloc[0].to_dict().items()}
    v = row["viable"]
    row["misclassified_pct"] = 100.0 * row["misclassified"] / v if v else None
    return row


def unfinished_note(summary: dict[str, Any]) -> str:
    """What a stopped campaign's figures leave out: a seed stopped mid-search has no
    outcome yet, also when it had failed and searched on (`stop_at_failure: false`), and
    "misclassified 0" read as "found nothing"."""
    n = summary["interrupted"]
    seeds = f"{n} viable seed" + ("s" if n != 1 else "")
    return f"{seeds} stopped before finishing: not counted, nor any failure found in them so far"


def _marks(ids: list[str]) -> str:
    """Placeholders for an IN list; never empty (an empty list matches no row)."""
    return ", ".join("?" * len(ids)) or "NULL"


def campaigns_by_id(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The campaign rows of several campaigns in one query, config and environment parsed,
    in the order asked (ids that do not exist are left out)."""
    ids = list(dict.fromkeys(campaign_ids))
    df = store.query(f"SELECT * FROM campaigns WHERE id IN ({_marks(ids)})", ids)
    for c in ("config", "environment"):
        df[c] = [json.loads(v) if isinstance(v, str) else v for v in df[c]]
    order = {cid: i for i, cid in enumerate(ids)}
    return df.sort_values("id", key=lambda col: col.map(order)).reset_index(drop=True)


def seeds_of(store: Store, campaign_ids: list[str], where: str = "") -> pd.DataFrame:
    """The per-seed tables of several campaigns in one query, with their campaign_id,
    ordered by campaign (as asked) and seed; `where` is an extra SQL condition."""
    ids = list(dict.fromkeys(campaign_ids))
    cond = f" AND ({where})" if where else ""
    df = store.query(
        f"SELECT * FROM seeds WHERE campaign_id IN ({_marks(ids)}){cond} "
        "ORDER BY campaign_id, seed_idx",
        ids,
    )
    order = {cid: i for i, cid in enumerate(ids)}
    return df.sort_values(
        ["campaign_id", "seed_idx"], key=lambda c: c.map(order) if c.name == "campaign_id" else c
    ).reset_index(drop=True)


def best_fitness_of(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """What convergence charts need of several campaigns' generation rows, in one query:
    campaign_id, seed_idx, generation, best_fitness, evaluations, elapsed_s."""
    ids = list(dict.fromkeys(campaign_ids))
    return store.query(
        "SELECT campaign_id, seed_idx, generation, best_fitness, evaluations, elapsed_s "
        f"FROM generations WHERE campaign_id IN ({_marks(ids)}) "
        "ORDER BY campaign_id, seed_idx, generation",
        ids,
    )


def seeds(store: Store, campaign_id: str) -> pd.DataFrame:
    """The per-seed table."""
    return store.query(
        "SELECT * EXCLUDE (campaign_id) FROM seeds WHERE campaign_id = ? ORDER BY seed_idx",
        [campaign_id],
    )


def generations(store: Store, campaign_id: str, seed_idx: int | None = None) -> pd.DataFrame:
    """Per-seed, per-generation history (one seed when seed_idx is given)."""
    sql = "SELECT * EXCLUDE (campaign_id) FROM generations WHERE campaign_id = ?"
    params: list[Any] = [campaign_id]
    if seed_idx is not None:
        sql += " AND seed_idx = ?"
        params.append(seed_idx)
    return store.query(sql + " ORDER BY seed_idx, generation", params)


def individuals(store: Store, campaign_id: str, seed_idx: int) -> pd.DataFrame:
    return store.query(
        "SELECT generation, individual, fitness, pred, evaluated, pred_b, objective2 "
        "FROM individuals "
        "WHERE campaign_id = ? AND seed_idx = ? ORDER BY generation, individual",
        [campaign_id, seed_idx],
    )


def progress(store: Store, campaign_id: str) -> dict[str, Any]:
    """Live view: status, generations written so far (and the campaign time of the last,
    `saved_s`), and seeds done (non-viable ones among them: never searched)."""
    df = store.query(
        """
        WITH g AS (  -- one pass over the campaign's generations rows
            SELECT coalesce(max(generation), 0) AS generation, count(*) AS generation_rows,
                   max(elapsed_s) AS saved_s
            FROM generations WHERE campaign_id = ?
        )
        SELECT c.status, g.generation, g.generation_rows, g.saved_s,
               (SELECT count(*) FROM seeds s WHERE s.campaign_id = c.id
                   AND s.status NOT IN ('searching')) AS seeds_done,
               (SELECT count(*) FROM seeds s WHERE s.campaign_id = c.id
                   AND s.status = 'non-viable') AS non_viable,
               c.n_seeds
        FROM campaigns c, g WHERE c.id = ?
        """,
        [campaign_id, campaign_id],
    )
    return {} if df.empty else df.iloc[0].to_dict()


def schema_info(store: Store) -> dict[str, str]:
    df = store.query("SELECT key, value FROM meta")
    return dict(zip(df["key"], df["value"], strict=True))


def study_table(store: Store, study: str) -> pd.DataFrame:
    """The ICST table of a study: one row per (generator, preset) campaign."""
    return store.query(
        f"""
        SELECT c.generator, c.preset, c.id AS campaign, c.n_seeds AS seeds,
               s.viable, 100.0 * s.viable / c.n_seeds AS viable_pct,
               s.misclassified,
               CASE WHEN s.viable > 0 THEN 100.0 * s.misclassified / s.viable END
                   AS misclassified_pct,
               s.iterations_icst, s.iterations_icst_std,
               s.iterations_to_failure, s.iterations_to_failure_std, c.status
        FROM campaigns c LEFT JOIN ({_SUMMARY}) s ON s.campaign_id = c.id
        WHERE c.study = ?
        ORDER BY c.created_at
        """,
        [study],
    )


def studies(store: Store) -> pd.DataFrame:
    return store.query(
        "SELECT study, count(*) AS campaigns, min(created_at) AS started FROM campaigns "
        "WHERE study IS NOT NULL GROUP BY study ORDER BY started DESC"
    )


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
    df = store.query("SELECT * FROM campaign_metrics WHERE campaign_id = ?", [campaign_id])
    if df.empty:
        return None
    row = {k: (None if not isinstance(v, str) and pd.isna(v) else v)
           for k, v in df.iloc[0].to_dict().items()}  # fmt: skip
    for c in ("result_gaps", "test_gaps", "per_generation", "test_confusion", "differential"):
        row[c] = None if row.get(c) is None else json.loads(row[c])
    return row


def escape_matrix(store: Store, campaign_id: str) -> pd.DataFrame:
    """SINVAD's class-escape matrix of a targeted campaign: one row per (source, target)
    pair with its attempts (seeds), viable ones, successes (reached the target), the
    success rate over viable attempts and the median iterations of the successes.
    Empty for a campaign without per-seed targets."""
    return store.query(
        """
        SELECT seed_label AS source, target, count(*) AS attempts,
               count(*) FILTER (WHERE viable) AS viable,
               count(*) FILTER (WHERE viable AND misclassified) AS successes,
               CASE WHEN count(*) FILTER (WHERE viable) > 0 THEN
                   (count(*) FILTER (WHERE viable AND misclassified))::DOUBLE
                   / count(*) FILTER (WHERE viable) END AS success_rate,
               median(iterations) FILTER (WHERE viable AND misclassified)
                   AS median_iterations
        FROM seeds WHERE campaign_id = ? AND target IS NOT NULL
        GROUP BY seed_label, target ORDER BY source, target
        """,
        [campaign_id],
    )


def metrics_table(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The metrics of several campaigns (those that have them), one row each."""
    if not campaign_ids:
        return pd.DataFrame(columns=["campaign_id", *METRIC_LABELS])
    marks = ", ".join("?" * len(campaign_ids))
    return store.query(
        f"SELECT campaign_id, evaluations, {', '.join(METRIC_LABELS)} FROM campaign_metrics "
        f"WHERE campaign_id IN ({marks})",
        list(campaign_ids),
    )


def strategy_table(store: Store, study: str) -> pd.DataFrame:
    """One row per campaign of a study, with its ICST figures and stored metrics
    (the equal-budget strategy comparison)."""
    return store.query(
        f"""
        SELECT c.strategy, c.generator, c.id AS campaign, c.n_seeds AS seeds,
               json_extract_string(c.config, '$.fitness') AS fitness,
               json_extract(c.config, '$.evaluation_budget')::BIGINT AS budget,
               s.viable,
               CASE WHEN s.viable > 0 THEN 100.0 * s.misclassified / s.viable END
                   AS misclassified_pct,
               s.misclassified, s.iterations_icst, m.evaluations,
               m.{", m.".join(METRIC_LABELS)}, c.wall_seconds, c.status
        FROM campaigns c LEFT JOIN ({_SUMMARY}) s ON s.campaign_id = c.id
        LEFT JOIN campaign_metrics m ON m.campaign_id = c.id
        WHERE c.study = ?
        ORDER BY c.created_at
        """,
        [study],
    )


def study_campaigns(store: Store, study: str) -> list[str]:
    """The ids of a study's (or grid's) campaigns, oldest first."""
    df = store.query("SELECT id FROM campaigns WHERE study = ? ORDER BY created_at, id", [study])
    return df["id"].tolist()


def grid_cells(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """campaign_id, grid, cell and axes ({axis: value}, in the grid's order) of those of
    the campaigns that are grid cells (engine/studies/grid.py)."""
    ids = list(dict.fromkeys(campaign_ids))
    df = store.query(
        f"SELECT campaign_id, grid, cell, axes FROM grid_cells WHERE campaign_id IN "
        f"({_marks(ids)})",
        ids,
    )
    df["axes"] = [json.loads(v) if isinstance(v, str) else v for v in df["axes"]]
    return df
