"""Named queries and writes of differential testing: the archive of failing inputs, the
validity filters' scores, and the per-campaign differential figures."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from store.connection import Store
from store.tables import frame


def archive(store: Store, campaign_id: str) -> pd.DataFrame:
    """Every archived failing input of a campaign, in the order found, with one column
    ``valid_<filter>`` and ``score_<filter>`` per validity filter scored, and ``valid``:
    valid under every filter scored (True when none was)."""
    df = store.query(
        "SELECT entry, seed_idx, generation, label, pred, pred_b, fitness, image "
        "FROM archive WHERE campaign_id = ? ORDER BY entry",
        [campaign_id],
    )
    return _with_validity(store, campaign_id, "archive", df, "entry")


def validity(store: Store, campaign_id: str) -> pd.DataFrame:
    """All validity scores of a campaign: kind, ref, validator, score, threshold, valid."""
    return store.query(
        "SELECT kind, ref, validator, score, threshold, valid FROM validity "
        "WHERE campaign_id = ? ORDER BY kind, validator, ref",
        [campaign_id],
    )


def _with_validity(
    store: Store, campaign_id: str, kind: str, df: pd.DataFrame, key: str
) -> pd.DataFrame:
    scores = store.query(
        "SELECT ref, validator, score, valid FROM validity WHERE campaign_id = ? AND kind = ?",
        [campaign_id, kind],
    )
    df = df.copy()
    df["valid"] = True
    for name, part in scores.groupby("validator"):
        part = part.set_index("ref")
        df[f"score_{name}"] = df[key].map(part["score"])
        ok = df[key].map(part["valid"]).fillna(False).astype(bool)
        df[f"valid_{name}"] = ok
        df["valid"] &= ok
    return df


def write_validity(store: Store, campaign_id: str, rows: pd.DataFrame) -> None:
    """Replace the scores of the validators in `rows` (kind, ref, validator, score,
    threshold, valid) for this campaign, in one transaction."""
    names = sorted(rows["validator"].unique()) if len(rows) else []
    table = frame([{c: rows[c].to_numpy() for c in rows.columns}]) if len(rows) else None
    with store.write() as con:
        for name in names:
            con.execute(
                "DELETE FROM validity WHERE campaign_id = ? AND validator = ?",
                [campaign_id, name],
            )
        if table is not None:
            con.register("new_validity", table)
            con.execute(
                "INSERT INTO validity BY NAME SELECT ?::VARCHAR AS campaign_id, * "
                "FROM new_validity",
                [campaign_id],
            )
            con.unregister("new_validity")


def write_differential(store: Store, campaign_id: str, figures: dict[str, Any]) -> None:
    """Store a campaign's differential figures beside its other metrics (the metrics row
    exists once the campaign finished)."""
    with store.write() as con:
        con.execute(
            "UPDATE campaign_metrics SET differential = ? WHERE campaign_id = ?",
            [json.dumps(figures), campaign_id],
        )


def pareto(store: Store, campaign_id: str, seed_idx: int | None = None) -> pd.DataFrame:
    """Every recorded individual of a multi-objective campaign with both objectives
    (fitness and objective2), per generation and seed, for the Pareto front view."""
    where, params = "campaign_id = ? AND objective2 IS NOT NULL", [campaign_id]
    if seed_idx is not None:
        where += " AND seed_idx = ?"
        params.append(seed_idx)
    return store.query(
        f"SELECT seed_idx, generation, individual, fitness, objective2, pred, pred_b "
        f"FROM individuals WHERE {where} ORDER BY generation, seed_idx, individual",
        params,
    )


def differential_table(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The differential figures of several campaigns, one row each (Compare, studies)."""
    if not campaign_ids:
        return pd.DataFrame()
    marks = ", ".join("?" * len(campaign_ids))
    df = store.query(
        f"SELECT c.id AS campaign_id, c.classifier, c.classifier_b, c.strategy, "
        f"m.differential FROM campaigns c JOIN campaign_metrics m ON m.campaign_id = c.id "
        f"WHERE c.id IN ({marks}) AND m.differential IS NOT NULL",
        list(campaign_ids),
    )
    rows = []
    for _, r in df.iterrows():
        figures = json.loads(r["differential"])
        rows.append({**{k: r[k] for k in df.columns if k != "differential"}, **flat(figures)})
    return pd.DataFrame(rows)


def flat(figures: dict[str, Any]) -> dict[str, Any]:
    """The scalar figures of a differential dict (lists and matrices left out)."""
    return {k: v for k, v in figures.items() if not isinstance(v, (list, dict))}


def triggering_validity_studies(store: Store, campaign_id: str) -> list[str]:
    """Label studies that show this campaign's triggering inputs."""
    df = store.query(
        "SELECT DISTINCT study_id FROM label_items WHERE campaign_id = ? AND kind = 'triggering' "
        "ORDER BY 1",
        [campaign_id],
    )
    return df["study_id"].tolist()


def triggering(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The archived triggering inputs (two labels) of several campaigns, in one query, with
    each campaign's generator, preset and dataset."""
    if not campaign_ids:
        return pd.DataFrame()
    marks = ", ".join("?" * len(campaign_ids))
    return store.query(
        f"SELECT a.* EXCLUDE (campaign_id), a.campaign_id, c.generator, c.preset, c.dataset "
        f"FROM archive a JOIN campaigns c ON c.id = a.campaign_id "
        f"WHERE a.campaign_id IN ({marks}) AND a.pred_b IS NOT NULL "
        f"ORDER BY a.campaign_id, a.entry",
        list(campaign_ids),
    )


def validity_inputs(store: Store, campaign_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The images the validity pass scores: the archived ones (ref = entry) and the seeds'
    results (ref = seed_idx), each with its label and image path, in order."""
    archive = store.query(
        "SELECT entry AS ref, label, image FROM archive WHERE campaign_id = ? ORDER BY entry",
        [campaign_id],
    )
    results = store.query(
        "SELECT seed_idx AS ref, seed_label AS label, result_image AS image FROM seeds "
        "WHERE campaign_id = ? AND result_image IS NOT NULL ORDER BY seed_idx",
        [campaign_id],
    )
    return archive, results
