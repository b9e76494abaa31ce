"""Tags and notes on campaigns and studies (issue 11, organisation), as MLflow and W&B
users expect: a few short tags to filter by, and free notes.

One row per (kind, id) in `annotations`; a campaign's or study's own rows are never
rewritten to annotate it. Errors are one line (what was received, what is expected).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a campaign's run path imports this module (store.admin): no pandas
    import pandas as pd

from store.connection import Store, StoreError

KINDS = ("campaign", "study")
MAX_TAGS, MAX_TAG, MAX_NOTES = 20, 40, 10_000
_TAG = re.compile(r"[^\s,][^,]*")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise StoreError(f"kind {kind!r} unknown; expected one of {', '.join(KINDS)}")


def clean_tags(tags: list[str]) -> list[str]:
    """Tags stripped, duplicates dropped, order kept; StoreError for a bad one."""
    out: list[str] = []
    for t in (t.strip() for t in tags):
        if not t:
            continue
        if len(t) > MAX_TAG or not _TAG.fullmatch(t):
            raise StoreError(
                f"tag {t!r} is not allowed; expected 1-{MAX_TAG} characters without a comma"
            )
        if t not in out:
            out.append(t)
    if len(out) > MAX_TAGS:
        raise StoreError(f"{len(out)} tags given; at most {MAX_TAGS} per {KINDS[0]} or study")
    return out


def get(store: Store, kind: str, id_: str) -> dict[str, object]:
    """{"tags": [...], "notes": "..."} (empty when never annotated)."""
    _check_kind(kind)
    with store.read() as con:
        row = con.execute(
            "SELECT tags, notes FROM annotations WHERE kind = ? AND id = ?", [kind, id_]
        ).fetchone()
    return {"tags": list(row[0]) if row else [], "notes": row[1] if row else ""}


def annotate(
    store: Store, kind: str, id_: str, tags: list[str] | None = None, notes: str | None = None
) -> dict[str, object]:
    """Set the tags and/or the notes (None: keep as they are); returns the new pair."""
    _check_kind(kind)
    if notes is not None and len(notes) > MAX_NOTES:
        raise StoreError(f"notes of {len(notes):,} characters; at most {MAX_NOTES:,}")
    tags = None if tags is None else clean_tags(tags)
    with store.write() as con:
        row = con.execute(
            "SELECT tags, notes FROM annotations WHERE kind = ? AND id = ?", [kind, id_]
        ).fetchone()
        old_tags, old_notes = (list(row[0]), row[1]) if row else ([], "")
        new = {
            "tags": old_tags if tags is None else tags,
            "notes": old_notes if notes is None else notes,
        }
        con.execute(
            "INSERT OR REPLACE INTO annotations VALUES (?, ?, ?, ?, ?)",
            [kind, id_, new["tags"], new["notes"], datetime.now(UTC).replace(tzinfo=None)],
        )
    return new


def table(store: Store, kind: str) -> pd.DataFrame:
    """id, tags (list), notes of every annotated campaign or study."""
    _check_kind(kind)
    df = store.query("SELECT id, tags, notes FROM annotations WHERE kind = ?", [kind])
    df["tags"] = df["tags"].apply(lambda t: list(t) if t is not None else [])
    return df


def forget(con, kind: str, id_: str) -> None:
    """Drop the annotation inside a caller's transaction (deleting the campaign)."""
    con.execute("DELETE FROM annotations WHERE kind = ? AND id = ?", [kind, id_])
