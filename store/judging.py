"""A labeller's turn at a validity study: joining it, being served items (claims), answers,
undo, progress and adjudication.

Every write is one short transaction (store/CONTRACT.md), so labels written from the
dashboard while a campaign runs are never lost: the writer waits for the file, it never
drops an answer. Serving an item and answering it are transactions too, which is what
keeps two labellers in two browsers from being served the same last slot of an item.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np

from store.connection import Store

#: A claim (an item shown to a labeller and not yet answered) holds its slot this long.
CLAIM_SECONDS = 600


def _now() -> datetime:
    return datetime.now()


def _drop_claim(con, study_id: str, item_id: int, labeller: str) -> None:
    con.execute(
        "DELETE FROM label_claims WHERE study_id = ? AND item_id = ? AND labeller = ?",
        [study_id, item_id, labeller],
    )


def join(store: Store, study_id: str, labeller: str) -> int:
    """Register a labeller (once) and return the seed of their fixed presentation order."""
    with store.write() as con:
        row = con.execute(
            "SELECT order_seed FROM labellers WHERE study_id = ? AND labeller = ?",
            [study_id, labeller],
        ).fetchone()
        if row:
            return int(row[0])
        base, n = con.execute(
            "SELECT s.seed, (SELECT count(*) FROM labellers l WHERE l.study_id = s.id) "
            "FROM label_studies s WHERE s.id = ?",
            [study_id],
        ).fetchone()
        # Derived from the study seed and the join order, so a study replays exactly.
        order_seed = int(np.random.SeedSequence([int(base), int(n)]).generate_state(1)[0])
        con.execute(
            "INSERT INTO labellers VALUES (?, ?, ?, ?)", [study_id, labeller, order_seed, _now()]
        )
        return order_seed


def labeller_order(n_items: int, order_seed: int) -> np.ndarray:
    """The item ids in the order this labeller sees them."""
    return np.random.default_rng(order_seed).permutation(n_items)


def next_item(
    store: Store, study_id: str, labeller: str, skip: frozenset[int] = frozenset()
) -> int | None:
    """Claim and return the next item for this labeller, or None when nothing is left.

    An item is served while its answers plus other labellers' live claims are fewer than
    k, and never to a labeller who answered it. The labeller's own live claim is served
    again first (a reload shows the same image). Skipped items come after all others.
    """
    with store.write() as con:
        return _next_items(con, study_id, labeller, skip)[0]


def _next_items(
    con, study_id: str, labeller: str, skip: frozenset[int], reserve: bool = False
) -> tuple[int | None, int | None]:
    """Claim the next item (see next_item) and name the one that would follow it, so that
    the page can load that image while the labeller looks at this one. reserve=True claims
    that one too: the page may then show it on the next key before any write."""
    k, order_seed, n_items = con.execute(
        """SELECT s.k, l.order_seed,
                  (SELECT count(*) FROM label_items i WHERE i.study_id = s.id)
           FROM label_studies s JOIN labellers l ON l.study_id = s.id
           WHERE s.id = ? AND l.labeller = ?""",
        [study_id, labeller],
    ).fetchone()
    since = _now().timestamp() - CLAIM_SECONDS
    busy = dict(
        con.execute(
            """SELECT item_id, count(*) FROM (
                   SELECT item_id FROM judgements WHERE study_id = $s
                   UNION ALL
                   SELECT item_id FROM label_claims WHERE study_id = $s
                       AND labeller <> $l AND epoch(claimed_at) >= $since)
               GROUP BY item_id""",
            {"s": study_id, "l": labeller, "since": since},
        ).fetchall()
    )
    mine = {
        r[0]
        for r in con.execute(
            "SELECT item_id FROM judgements WHERE study_id = ? AND labeller = ?",
            [study_id, labeller],
        ).fetchall()
    }
    held = con.execute(
        "SELECT item_id FROM label_claims WHERE study_id = ? AND labeller = ? "
        "AND epoch(claimed_at) >= ? ORDER BY claimed_at DESC",
        [study_id, labeller, since],
    ).fetchall()
    order = labeller_order(n_items, order_seed).tolist()
    candidates = [i for (i,) in held if i not in skip] + [i for i in order if i not in skip]
    candidates += [i for i in order if i in skip]
    open_ = [i for i in dict.fromkeys(candidates) if i not in mine and busy.get(i, 0) < k]
    if not open_:
        return None, None
    now = _now()
    con.execute(
        "INSERT OR REPLACE INTO label_claims VALUES (?, ?, ?, ?)",
        [study_id, open_[0], labeller, now],
    )
    upcoming = int(open_[1]) if len(open_) > 1 else None
    if reserve and upcoming is not None:
        # A moment older than the item's claim: after a reload, the item comes back first.
        con.execute(
            "INSERT OR REPLACE INTO label_claims VALUES (?, ?, ?, ?)",
            [study_id, upcoming, labeller, now - timedelta(milliseconds=1)],
        )
    return int(open_[0]), upcoming


def answer(
    store: Store,
    study_id: str,
    item_id: int,
    labeller: str,
    value: int,
    shown_at: datetime,
    raw: str | None = None,
) -> bool:
    """Record one answer; False when this labeller had already answered the item (a double
    click, or a second tab), in which case nothing changes."""
    with store.write() as con:
        return _answer(con, study_id, item_id, labeller, value, shown_at, raw)


def _answer(con, study_id, item_id, labeller, value, shown_at, raw=None) -> bool:
    answered = _now()
    done = con.execute(
        "SELECT count(*) FROM judgements WHERE study_id = ? AND item_id = ? AND labeller = ?",
        [study_id, item_id, labeller],
    ).fetchone()[0]
    if not done:
        position = con.execute(
            "SELECT count(*) + 1 FROM judgements WHERE study_id = ? AND labeller = ?",
            [study_id, labeller],
        ).fetchone()[0]
        con.execute(
            "INSERT INTO judgements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                study_id,
                item_id,
                labeller,
                int(value),
                raw,
                position,
                shown_at,
                answered,
                (answered - shown_at).total_seconds(),
            ],
        )
    _drop_claim(con, study_id, item_id, labeller)
    return not done


def undo(store: Store, study_id: str, labeller: str) -> int | None:
    """Take back this labeller's last answer and claim its item again; returns the item."""
    with store.write() as con:
        return _undo(con, study_id, labeller)


def _undo(con, study_id: str, labeller: str) -> int | None:
    row = con.execute(
        "SELECT item_id FROM judgements WHERE study_id = ? AND labeller = ? "
        "ORDER BY position DESC LIMIT 1",
        [study_id, labeller],
    ).fetchone()
    if row is None:
        return None
    con.execute(
        "DELETE FROM judgements WHERE study_id = ? AND item_id = ? AND labeller = ?",
        [study_id, row[0], labeller],
    )
    con.execute(
        "INSERT OR REPLACE INTO label_claims VALUES (?, ?, ?, ?)",
        [study_id, row[0], labeller, _now()],
    )
    return int(row[0])


def progress(store: Store, study_id: str, labeller: str | None = None) -> dict[str, int]:
    """Answers given by this labeller, answers given in all, answers wanted (items x k)."""
    with store.read() as con:
        return _progress(con, study_id, labeller)


def _progress(con, study_id: str, labeller: str | None) -> dict[str, int]:
    k, n_items = con.execute(
        "SELECT k, (SELECT count(*) FROM label_items WHERE study_id = $s) "
        "FROM label_studies WHERE id = $s",
        {"s": study_id},
    ).fetchone()
    # Answers beyond k (a claim that expired and was served again) do not count twice.
    total = con.execute(
        "SELECT coalesce(sum(least(n, $k)), 0) FROM (SELECT count(*) AS n FROM judgements "
        "WHERE study_id = $s GROUP BY item_id)",
        {"s": study_id, "k": k},
    ).fetchone()[0]
    mine = con.execute(
        "SELECT count(*) FROM judgements WHERE study_id = ? AND labeller = ?",
        [study_id, labeller],
    ).fetchone()[0]
    return {"mine": int(mine), "done": int(total), "wanted": int(k * n_items), "items": n_items}


def adjudicate(
    store: Store, study_id: str, item_id: int, reviewer: str, value: int, note: str = ""
) -> None:
    """Settle an undecided item; the raw judgements stay as they are."""
    with store.write() as con:
        con.execute(
            "INSERT OR REPLACE INTO adjudications VALUES (?, ?, ?, ?, ?, ?)",
            [study_id, item_id, reviewer, int(value), note, _now()],
        )


def unadjudicate(store: Store, study_id: str, item_id: int) -> None:
    """Take a verdict back (a mis-click): the item is undecided again."""
    with store.write() as con:
        con.execute(
            "DELETE FROM adjudications WHERE study_id = ? AND item_id = ?", [study_id, item_id]
        )


def release(store: Store, study_id: str, item_id: int, labeller: str) -> None:
    """Give a skipped item's slot back, so that another labeller can take it now."""
    with store.write() as con:
        _drop_claim(con, study_id, item_id, labeller)


def turn(
    store: Store,
    study_id: str,
    labeller: str,
    skip: frozenset[int] = frozenset(),
    *,
    answers: list[tuple[int, int, datetime]] = (),
    release: int | None = None,
    undo: bool = False,
) -> dict[str, Any]:
    """One or more key presses of the Label page in one transaction: record `answers`
    (item, value, shown_at), give back the skipped item `release`, take back the last
    answer (`undo`); then claim the next item and reserve the one after it. One open of
    the store instead of four per key, and the reserved item lets the page show the next
    image before this write.

    Returns item and image (None when nothing is left), the reserved item expected next
    and its image, the labeller's progress, and how many answers were new (a repeat, a
    double click or a second tab, changes nothing)."""
    with store.write() as con:
        recorded, item, upcoming = 0, None, None
        for item_id, value, shown_at in answers:
            recorded += _answer(con, study_id, item_id, labeller, value, shown_at)
        if release is not None:
            _drop_claim(con, study_id, release, labeller)
        if undo:
            item = _undo(con, study_id, labeller)
        served, upcoming = _next_items(con, study_id, labeller, skip, reserve=True)
        if item is None:
            item = served
        elif upcoming is not None and served != item:
            # The undone item is shown now; the item that was on screen comes after it.
            upcoming = served
        images = dict(
            con.execute(
                "SELECT item_id, image FROM label_items WHERE study_id = ? AND item_id IN (?, ?)",
                [study_id, item, upcoming],
            ).fetchall()
        )
        return {
            "item": item,
            "image": images.get(item),
            "upcoming": upcoming,
            "upcoming_image": images.get(upcoming),
            "progress": _progress(con, study_id, labeller),
            "recorded": recorded,
        }
