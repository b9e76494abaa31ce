"""Studies of campaigns: the campaigns a study (or grid) groups under one name, their ICST
and strategy tables, and the grid cells a grid's campaigns ran as.

Not validity studies (people's labels: store/labels.py), which share only the word.
"""

from __future__ import annotations

import json

import pandas as pd

from store.campaigns import SUMMARY
from store.connection import Store
from store.metrics import METRIC_LABELS
from store.rows import marks


def campaign_studies(store: Store) -> pd.DataFrame:
    """Every study of campaigns (a name grouping campaigns), newest first, with its count."""
    return store.query(
        "SELECT study, count(*) AS campaigns, min(created_at) AS started FROM campaigns "
        "WHERE study IS NOT NULL GROUP BY study ORDER BY started DESC"
    )


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
        FROM campaigns c LEFT JOIN ({SUMMARY}) s ON s.campaign_id = c.id
        WHERE c.study = ?
        ORDER BY c.created_at
        """,
        [study],
    )


#: The mean top-2 gaps beside the stored medians: SINVAD's paper reports the mean (0.06),
#: and the row keeps every gap, so the mean is read from them.
GAP_MEANS = """list_avg(CAST(m.result_gaps AS DOUBLE[])) AS result_gap_mean,
               list_avg(CAST(m.test_gaps AS DOUBLE[])) AS test_gap_mean"""


def strategy_table(store: Store, study: str) -> pd.DataFrame:
    """One row per campaign of a study, with its ICST figures and stored metrics
    (the equal-budget strategy comparison)."""
    return store.query(
        f"""
        SELECT c.strategy, c.generator, c.id AS campaign, c.n_seeds AS seeds,
               json_extract_string(c.config, '$.fitness') AS fitness,
               json_extract(c.config, '$.evaluation_budget')::BIGINT AS budget,
               json_extract_string(c.config, '$.budget_rule') AS budget_rule,
               s.viable,
               CASE WHEN s.viable > 0 THEN 100.0 * s.misclassified / s.viable END
                   AS misclassified_pct,
               s.misclassified, s.iterations_icst, m.evaluations,
               m.{", m.".join(METRIC_LABELS)}, c.wall_seconds, c.status,
               {GAP_MEANS}
        FROM campaigns c LEFT JOIN ({SUMMARY}) s ON s.campaign_id = c.id
        LEFT JOIN campaign_metrics m ON m.campaign_id = c.id
        WHERE c.study = ?
        ORDER BY c.created_at
        """,
        [study],
    )


def strategy_study_budgets(store: Store, studies: list[str]) -> dict[str, int]:
    """{study: budget} of those studies that are one campaign per strategy (``study
    --strategies``) whose campaigns set no evaluation budget (run before studies set one):
    the largest evaluation budget of the study's campaigns, the GA's, which the study set
    and the others' whole generations stopped short of."""
    names = list(dict.fromkeys(studies))
    df = store.query(
        f"""
        SELECT study, max(json_extract(config, '$.evaluation_budget')::BIGINT) AS budget
        FROM campaigns WHERE study IN ({marks(names)})
        GROUP BY study
        HAVING count(DISTINCT strategy) > 1 AND count(DISTINCT strategy) = count(*)
           AND count(json_extract_string(config, '$.strategy_params.evaluations')) = 0
           AND count(json_extract_string(config, '$.evaluation_budget')) = count(*)
        """,
        names,
    )
    return {r.study: int(r.budget) for r in df.itertuples()}


def study_campaigns(store: Store, study: str) -> list[str]:
    """The ids of a study's (or grid's) campaigns, oldest first."""
    df = store.query("SELECT id FROM campaigns WHERE study = ? ORDER BY created_at, id", [study])
    return df["id"].tolist()


def grid_cells(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """campaign_id, grid, cell and axes ({axis: value}, in the grid's order) of those of
    the campaigns that are grid cells (engine/studies/grid.py)."""
    ids = list(dict.fromkeys(campaign_ids))
    df = store.query(
        f"SELECT campaign_id, grid, cell, axes FROM grid_cells WHERE campaign_id IN ({marks(ids)})",
        ids,
    )
    df["axes"] = [json.loads(v) if isinstance(v, str) else v for v in df["axes"]]
    return df


def record_grid_cell(con, campaign_id: str, grid: str, cell: str, axes: dict) -> None:
    """Inside the write that imports a cell's campaign: the campaign is that grid cell, with
    these axis values (the cell is done exactly when its rows are in)."""
    con.execute(
        "INSERT INTO grid_cells VALUES (?, ?, ?, ?)",
        [campaign_id, grid, cell, json.dumps(axes, default=str)],
    )
