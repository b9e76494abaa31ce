"""Validity filters against people: the filters' scores of a validity study's images, the
study a campaign's calibrated threshold came from, and the automatic validity of
campaigns for Compare. Set-based: one query whatever the number of campaigns or images.
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from store.connection import Store
from store.rows import marks
from store.tables import frame

SCORE_COLUMNS = ["item_id", "validator", "score", "preserves"]


def write_study_scores(store: Store, study_id: str, rows: pd.DataFrame) -> None:
    """Replace the scores of the validators in `rows` (item_id, validator, score,
    preserves) for this study, in one transaction: all of them or none."""
    names = sorted(rows["validator"].unique()) if len(rows) else []
    with store.write() as con:
        for name in names:
            con.execute(
                "DELETE FROM study_scores WHERE study_id = ? AND validator = ?", [study_id, name]
            )
        if names:
            table = frame([{c: rows[c].to_numpy() for c in SCORE_COLUMNS}])
            con.register("new_scores", table)
            con.execute(
                "INSERT INTO study_scores BY NAME SELECT ?::VARCHAR AS study_id, "
                "item_id::INTEGER AS item_id, validator, score, preserves, "
                "?::TIMESTAMP AS scored_at FROM new_scores",
                [study_id, datetime.now()],
            )
            con.unregister("new_scores")


def study_scores(store: Store, study_id: str, validators: list[str] | None = None) -> pd.DataFrame:
    """item_id, validator, score, preserves of a study's scored images (these validators,
    or all), by validator then item."""
    where, params = "study_id = ?", [study_id]
    if validators:
        where += f" AND validator IN ({marks(validators)})"
        params += list(validators)
    return store.query(
        f"SELECT item_id, validator, score, preserves FROM study_scores WHERE {where} "
        "ORDER BY validator, item_id",
        params,
    )


def scored_validators(store: Store, study_id: str) -> list[str]:
    """The validators that scored this study's images, by name."""
    df = store.query(
        "SELECT DISTINCT validator FROM study_scores WHERE study_id = ? ORDER BY 1", [study_id]
    )
    return df["validator"].tolist()


def record_calibrated(store: Store, campaign_id: str, used: dict[str, tuple[str, float]]) -> None:
    """Mark a campaign's validity rows of each validator scored at its calibrated
    threshold with the study it was fitted on ({validator: (study, threshold)})."""
    with store.write() as con:
        for validator, (study, threshold) in used.items():
            con.execute(
                "UPDATE validity SET calibrated_on = ? WHERE campaign_id = ? AND validator = ? "
                "AND threshold = ?",
                [study, campaign_id, validator, float(threshold)],
            )


def validity_thresholds(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """campaign_id, validator, threshold, calibrated_on (None: a fixed threshold) of each
    validator a campaign's images were scored with."""
    ids = list(dict.fromkeys(campaign_ids))
    if not ids:
        return pd.DataFrame(columns=["campaign_id", "validator", "threshold", "calibrated_on"])
    df = store.query(
        f"""SELECT campaign_id, validator, any_value(threshold) AS threshold,
                   any_value(calibrated_on) AS calibrated_on
            FROM validity WHERE campaign_id IN ({marks(ids)})
            GROUP BY campaign_id, validator ORDER BY campaign_id, validator""",
        ids,
    )
    df["calibrated_on"] = (
        df["calibrated_on"].astype(object).where(df["calibrated_on"].notna(), None)
    )
    return df


def auto_validity_table(
    store: Store, campaign_ids: list[str], kind: str = "result"
) -> pd.DataFrame:
    """Per campaign and validator, over its `kind` images (result: each failing seed's
    result, the images people label): images scored, valid, % valid (auto), the threshold,
    and the validity study it was calibrated on (None when fixed). For Compare's
    "% valid (auto, calibrated on STUDY)" beside the human figure."""
    cols = ["campaign_id", "validator", "images", "valid", "valid_pct", "threshold", "study"]
    ids = list(dict.fromkeys(campaign_ids))
    if not ids:
        return pd.DataFrame(columns=cols)
    df = store.query(
        f"""SELECT campaign_id, validator, count(*) AS images,
                   count(*) FILTER (WHERE valid) AS valid,
                   100.0 * count(*) FILTER (WHERE valid) / count(*) AS valid_pct,
                   any_value(threshold) AS threshold, any_value(calibrated_on) AS study
            FROM validity WHERE campaign_id IN ({marks(ids)}) AND kind = ?
            GROUP BY campaign_id, validator ORDER BY campaign_id, validator""",
        [*ids, kind],
    )
    df["study"] = df["study"].astype(object).where(df["study"].notna(), None)
    return df


def scored_studies(store: Store, dataset: str) -> pd.DataFrame:
    """study_id, name, validator, scored_at (the latest), answers, adjudications: each
    validator that scored a validity study of `dataset`, newest study first. The counts
    and the time tell a caller when a calibration computed from them is out of date."""
    return store.query(
        """
        WITH scored AS (
            SELECT study_id, validator, max(scored_at) AS scored_at
            FROM study_scores GROUP BY study_id, validator
        )
        SELECT s.id AS study_id, s.name, c.validator, c.scored_at,
               (SELECT count(*) FROM judgements j WHERE j.study_id = s.id) AS answers,
               (SELECT count(*) FROM adjudications a WHERE a.study_id = s.id) AS adjudications
        FROM scored c JOIN label_studies s ON s.id = c.study_id
        WHERE s.dataset = ?
        ORDER BY s.created_at DESC, s.id DESC, c.validator
        """,
        [dataset],
    )
