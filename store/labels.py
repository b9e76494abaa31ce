"""Validity studies' storage: studies, their items, judgements and adjudications, as
created, imported and read. A labeller's turn (claims, answers) is store/judging.py.

Every write is one short transaction (store/CONTRACT.md), so labels written from the
dashboard while a campaign runs are never lost: the writer waits for the file.

Not studies of campaigns (a name grouping campaigns: store/studies.py), which share only
the word.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pandas as pd

from store.connection import Store
from store.rows import marks, row_by_id

JUDGEMENT_COLUMNS = [
    "study_id",
    "item_id",
    "labeller",
    "answer",
    "raw",
    "position",
    "shown_at",
    "answered_at",
    "seconds",
]


def create_validity_study(
    store: Store,
    study: dict[str, Any],
    items: pd.DataFrame,
    judgements: pd.DataFrame | None = None,
    adjudications: pd.DataFrame | None = None,
) -> None:
    """Insert a study, its items (item_id 0..n-1) and any judgements and adjudications it
    comes with (imports) in one transaction: all of it or nothing."""
    cols = [
        "study_id",
        "item_id",
        "kind",
        "campaign_id",
        "seed_idx",
        "generator",
        "preset",
        "image",
        "expected",
        "predicted",
        "iterations",
        "external_id",
        "predicted_b",
    ]
    frame = items.reindex(columns=cols).assign(study_id=study["id"])
    for c in ("seed_idx", "expected", "predicted", "iterations", "predicted_b"):
        frame[c] = frame[c].astype("Int64")
    with store.write() as con:
        con.execute(
            "INSERT INTO label_studies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                study["id"],
                study.get("name"),
                datetime.now(),
                study["dataset"],
                study["source"],
                int(study["k"]),
                study["rule"],
                int(study["seed"]),
                int(study["resamples"]),
                json.dumps(study.get("config", {})),
            ],
        )
        con.register("new_items", frame)
        con.execute(
            f"INSERT INTO label_items ({', '.join(cols)}) SELECT {', '.join(cols)} FROM new_items"
        )
        con.unregister("new_items")
        if judgements is not None and len(judgements):
            j = judgements.reindex(columns=JUDGEMENT_COLUMNS).assign(study_id=study["id"])
            j["shown_at"] = pd.to_datetime(j["shown_at"])
            j["seconds"] = j["seconds"].astype(float)
            j["raw"] = j["raw"].astype(object)
            con.register("new_judgements", j)
            con.execute(
                f"INSERT INTO judgements SELECT {', '.join(JUDGEMENT_COLUMNS)} FROM new_judgements"
            )
            con.unregister("new_judgements")
        if adjudications is not None and len(adjudications):
            a = adjudications.assign(study_id=study["id"])
            con.register("new_adjudications", a)
            con.execute(
                "INSERT INTO adjudications SELECT study_id, item_id, reviewer, answer, "
                "note, decided_at FROM new_adjudications"
            )
            con.unregister("new_adjudications")


def validity_studies(store: Store) -> pd.DataFrame:
    """Every validity study, newest first, with its size and how many answers it has."""
    return store.query(
        """
        SELECT s.id, s.name, s.created_at, s.dataset, s.source, s.k, s.rule, s.seed,
               (SELECT count(*) FROM label_items i WHERE i.study_id = s.id) AS items,
               (SELECT count(*) FROM judgements j WHERE j.study_id = s.id) AS answers,
               (SELECT count(DISTINCT labeller) FROM judgements j WHERE j.study_id = s.id)
                   AS labellers
        FROM label_studies s ORDER BY s.created_at DESC, s.id DESC
        """
    )


def validity_study(store: Store, study_id: str) -> dict[str, Any] | None:
    """The validity study row with its config parsed, or None."""
    return row_by_id(store, "label_studies", study_id, ("config",))


def imported_validity_study(store: Store, key: str) -> dict[str, Any] | None:
    """The newest imported validity study with this import key (id, name, created_at), or
    None."""
    rows = store.query(
        "SELECT id, name, created_at FROM label_studies WHERE source = 'import' "
        "AND json_extract_string(config, '$.import_key') = ? ORDER BY created_at DESC LIMIT 1",
        [key],
    )
    return None if rows.empty else rows.iloc[0].to_dict()


def items(store: Store, study_id: str) -> pd.DataFrame:
    return store.query("SELECT * FROM label_items WHERE study_id = ? ORDER BY item_id", [study_id])


def item_image(store: Store, study_id: str, item_id: int) -> str | None:
    """The image path of one item: all the Label page may know about it."""
    df = store.query(
        "SELECT image FROM label_items WHERE study_id = ? AND item_id = ?", [study_id, item_id]
    )
    return None if df.empty else df["image"].iloc[0]


def judgements(store: Store, study_id: str | None = None) -> pd.DataFrame:
    """Raw judgements, one row per (item, labeller), in the order they were given."""
    where, params = ("WHERE study_id = ?", [study_id]) if study_id else ("", [])
    return store.query(
        f"SELECT * FROM judgements {where} ORDER BY answered_at, item_id, labeller", params
    )


def adjudications(store: Store, study_id: str) -> pd.DataFrame:
    return store.query("SELECT * FROM adjudications WHERE study_id = ?", [study_id])


def result_labels(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """Items of these campaigns' result images in any study, with their study's rule and k,
    for the validity columns of the Compare page."""
    if not campaign_ids:
        return pd.DataFrame()
    return store.query(
        f"""SELECT i.*, s.k, s.rule, s.created_at AS study_created
            FROM label_items i JOIN label_studies s ON s.id = i.study_id
            WHERE i.kind = 'result' AND i.campaign_id IN ({marks(campaign_ids)})""",
        list(campaign_ids),
    )
