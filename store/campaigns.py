"""Campaigns: their rows, seeds, generations and individuals, the GIFTbench status
figures, the live view, and the writes that change a campaign's status.

Each read returns a pandas DataFrame (or a dict for single rows) and holds the database
only for the duration of the query.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from store.admin import CAMPAIGN_TABLES
from store.connection import Store
from store.errors import StoreBusy
from store.liveness import CRASHED_ERROR, alive
from store.rows import marks, row_by_id
from store.tables import insert_table

if TYPE_CHECKING:
    import pandas as pd  # the frames come from Store.query; summary (every close) needs none
    import pyarrow as pa

#: The per-seed figures of every campaign (a subquery; studies' tables join it too).
SUMMARY = """
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
           stddev_samp(iterations) FILTER (WHERE misclassified) AS iterations_to_failure_std,
           avg(evaluations) FILTER (WHERE viable AND evaluations IS NOT NULL)
               AS evaluations_per_seed
    FROM seeds GROUP BY campaign_id
"""
#: How a campaign's search length is told (from its stored config): `whole_budget`, its
#: strategy searched on past a seed's first failure (`stop_at_failure` off, NSGA-II's
#: default), so its seeds' iterations are the generation a failure was first found in, not
#: a search length, and it is told in generations and evaluations; its generation budget.
WORDS = """
    coalesce(json_extract_string(c.config, '$.strategy_params.stop_at_failure') = 'false',
             false) AS whole_budget,
    TRY_CAST(json_extract_string(c.config, '$.strategy_params.generations') AS INTEGER)
        AS generation_budget"""
#: The study's "# iterations" (ICST 2025, Table III): the mean over all viable seeds of
#: the 1-based generation of the first failure, survivors counted at the budget. A seed
#: still searching (an interrupted campaign) has no iterations yet and is left out.
ICST_ITERATIONS = "mean iterations (viable seeds, survivors at budget)"
FAILURE_ITERATIONS = "mean iterations to failure (failing seeds)"
_ITERATION_COLS = (
    "iterations_icst",
    "iterations_icst_std",
    "iterations_to_failure",
    "iterations_to_failure_std",
)


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
               s.iterations_to_failure, s.iterations_to_failure_std, s.evaluations_per_seed,
               {WORDS}
        FROM campaigns c LEFT JOIN ({SUMMARY}) s ON s.campaign_id = c.id
        ORDER BY c.created_at DESC, c.id DESC
        """
    )


def campaign(store: Store, campaign_id: str) -> dict[str, Any] | None:
    """The campaign row with config and environment parsed, or None."""
    return row_by_id(store, "campaigns", campaign_id, ("config", "environment"))


def summary(store: Store, campaign_id: str) -> dict[str, Any]:
    """Viable seeds x of y, misclassified n (% of viable), both iteration means, and the
    campaign's failure criterion (what its failing seeds are called), also before its
    first seed row: a differential campaign's start-up said "misclassified 0". With
    WORDS, the generations searched so far and the mean evaluations per viable seed, for
    a campaign told in those (NSGA-II read "mean iterations")."""
    rows = store.query_rows(
        f"""
        SELECT c.id AS campaign_id, c.status,
               json_extract_string(c.config, '$.criterion') AS criterion,
               coalesce(s.seeds_total, 0) AS seeds_total, coalesce(s.viable, 0) AS viable,
               coalesce(s.misclassified, 0) AS misclassified,
               coalesce(s.searching, 0) AS searching,
               coalesce(s.interrupted, 0) AS interrupted,
               {", ".join(f"s.{c}" for c in _ITERATION_COLS)}, s.evaluations_per_seed,
               {WORDS}
        FROM campaigns c LEFT JOIN ({SUMMARY}) s ON s.campaign_id = c.id
        WHERE c.id = ?
        """,
        [campaign_id],
    )
    if not rows:  # no such campaign
        return {
            "status": None,
            "criterion": None,
            "seeds_total": 0,
            "viable": 0,
            "misclassified": 0,
            "searching": 0,
            "interrupted": 0,
            "misclassified_pct": None,
            **dict.fromkeys(_ITERATION_COLS),
            "evaluations_per_seed": None,
            "whole_budget": False,
            "generation_budget": None,
            "generations": None,
        }
    row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rows[0].items()}
    # Generations searched, read only where they are told: a scan of the generations table
    # cost every other campaign's summary (each close, each live refresh) 4 ms at 300.
    row["generations"] = (
        store.query_rows(
            "SELECT max(generation) AS g FROM generations WHERE campaign_id = ?", [campaign_id]
        )[0]["g"]
        if row["whole_budget"]
        else None
    )
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


def campaigns_by_id(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The campaign rows of several campaigns in one query, config and environment parsed,
    in the order asked (ids that do not exist are left out)."""
    ids = list(dict.fromkeys(campaign_ids))
    df = store.query(f"SELECT * FROM campaigns WHERE id IN ({marks(ids)})", ids)
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
        f"SELECT * FROM seeds WHERE campaign_id IN ({marks(ids)}){cond} "
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
        f"FROM generations WHERE campaign_id IN ({marks(ids)}) "
        "ORDER BY campaign_id, seed_idx, generation",
        ids,
    )


def seeds(store: Store, campaign_id: str) -> pd.DataFrame:
    """The per-seed table."""
    return store.query(
        "SELECT * EXCLUDE (campaign_id) FROM seeds WHERE campaign_id = ? ORDER BY seed_idx",
        [campaign_id],
    )


def has_generation(store: Store, campaign_id: str) -> bool:
    """Whether any generation of the campaign is written: one index probe, for the page
    that polls a just-launched campaign every half second."""
    rows = store.query_rows(
        "SELECT EXISTS (SELECT 1 FROM generations WHERE campaign_id = ?) AS yes", [campaign_id]
    )
    return bool(rows[0]["yes"])


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


def escape_matrix(store: Store, campaign_id: str) -> pd.DataFrame:
    """SINVAD's class-escape matrix of a targeted campaign: one row per (source, target)
    pair with its attempts (seeds), viable ones, successes (reached the target), the
    success rate over all attempts (SINVAD's: a seed not searched is a failed attempt) and
    the median iterations of the successes. Empty for a campaign without per-seed targets."""
    return store.query(
        """
        SELECT seed_label AS source, target, count(*) AS attempts,
               count(*) FILTER (WHERE viable) AS viable,
               count(*) FILTER (WHERE viable AND misclassified) AS successes,
               (count(*) FILTER (WHERE viable AND misclassified))::DOUBLE / count(*)
                   AS success_rate,
               median(iterations) FILTER (WHERE viable AND misclassified)
                   AS median_iterations
        FROM seeds WHERE campaign_id = ? AND target IS NOT NULL
        GROUP BY seed_label, target ORDER BY source, target
        """,
        [campaign_id],
    )


def escape_attempts(store: Store, campaign_id: str) -> pd.DataFrame:
    """One row per attempt of a targeted campaign: source, target and whether it reached
    the target (a seed not searched did not): what a bootstrap over attempts resamples."""
    return store.query(
        """
        SELECT seed_label AS source, target, coalesce(viable AND misclassified, false)
                   AS success
        FROM seeds WHERE campaign_id = ? AND target IS NOT NULL ORDER BY seed_idx
        """,
        [campaign_id],
    )


def reap(store: Store, timeout: float = 1.0) -> list[str]:
    """Mark every dead `running` campaign `crashed` (its searching seeds `interrupted`);
    returns their ids. A read-only or busy store is left as it is (readers then show the
    status from ``liveness.status``)."""
    if store.memory:
        return []
    home = Path(store.path).parent
    running = store.query("SELECT id FROM campaigns WHERE status = 'running'")["id"].tolist()
    dead = [cid for cid in running if not alive(home, cid)]
    if not dead or not store.writable:
        return dead
    with contextlib.suppress(StoreBusy), store.write(timeout=timeout) as con:
        for cid in dead:
            if alive(home, cid):  # re-checked inside the write: a resume may have begun
                continue
            con.execute(
                "UPDATE campaigns SET status = 'crashed', error = ? WHERE id = ? "
                "AND status = 'running'",
                [CRASHED_ERROR.format(cid=cid), cid],
            )
            con.execute(
                "UPDATE seeds SET status = 'interrupted' WHERE campaign_id = ? "
                "AND status = 'searching'",
                [cid],
            )
    return dead


def seed_count(store: Store, campaign_id: str) -> int:
    """How many seed rows the campaign has (none before its seeds were chosen)."""
    df = store.query("SELECT count(*) AS n FROM seeds WHERE campaign_id = ?", [campaign_id])
    return int(df["n"][0])


def mark_resumed(con, campaign_id: str, pid: int) -> None:
    """Inside the resume's write: the campaign runs again in process `pid`, and its
    interrupted seeds search again."""
    con.execute(
        "UPDATE campaigns SET status = 'running', pid = ?, error = NULL, "
        "finished_at = NULL WHERE id = ?",
        [pid, campaign_id],
    )
    con.execute(
        "UPDATE seeds SET status = 'searching' WHERE campaign_id = ? AND status = 'interrupted'",
        [campaign_id],
    )


def strip_frames(store: Store, campaign_id: str) -> pd.DataFrame:
    """Per seed and strip image, the last strip frame its generation rows point to
    (seed_idx, image, last), for the check that strips hold their frames."""
    return store.query(
        "SELECT seed_idx, image, max(image_frame) AS last FROM generations "
        "WHERE campaign_id = ? AND image IS NOT NULL GROUP BY seed_idx, image",
        [campaign_id],
    )


def insert_finished(
    store: Store, campaign_id: str, campaign: pa.Table, tables: dict[str, pa.Table]
) -> None:
    """A campaign made elsewhere (imported results): its campaign row and its rows of
    campaign tables, in one checkpointed transaction."""
    with store.write(checkpoint=True) as con:
        con.register("new_campaign", campaign)
        con.execute("INSERT INTO campaigns BY NAME SELECT * FROM new_campaign")
        con.unregister("new_campaign")
        for table, rows in tables.items():
            insert_table(con, table, rows, campaign_id)


def footprint(store: Store, campaign_id: str) -> dict[str, int]:
    """What deleting a campaign removes from the store: {"seeds": its seeds, "rows": its
    rows in every table}, for the confirmation that names it."""
    counts = " UNION ALL ".join(
        f"SELECT '{t}' AS t, count(*) AS n FROM {t} WHERE campaign_id = ?" for t in CAMPAIGN_TABLES
    )
    rows = store.query_rows(
        f"{counts} UNION ALL SELECT 'campaigns', count(*) FROM campaigns WHERE id = ?",
        [campaign_id] * (len(CAMPAIGN_TABLES) + 1),
    )
    by_table = {r["t"]: int(r["n"]) for r in rows}
    return {"seeds": by_table.get("seeds", 0), "rows": sum(by_table.values())}
