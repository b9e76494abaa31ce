"""The class-escape matrix read from hand-made seed rows: SINVAD's success rate counts
every attempt, a seed that was never searched included."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import Store
from store import campaigns as sc


def _seeds(store: Store, rows: list[tuple[int, int, bool, bool | None, int | None]]) -> None:
    """rows: (source, target, viable, misclassified, iterations) of campaign 'c'."""
    with store.write() as con:
        for i, (src, tgt, viable, mis, it) in enumerate(rows):
            con.execute(
                "INSERT INTO seeds (campaign_id, seed_idx, seed_label, seed_pred, seed_margin, "
                "viable, status, misclassified, iterations, target) "
                "VALUES ('c', ?, ?, ?, 0.0, ?, ?, ?, ?, ?)",
                [
                    i,
                    src,
                    src if viable else tgt,
                    viable,
                    ("misclassified" if mis else "survived") if viable else "non-viable",
                    mis,
                    it,
                    tgt,
                ],
            )


def test_success_rate_counts_every_attempt_searched_or_not(tmp_path: Path):
    store = Store(tmp_path / "latentfuzz.duckdb")
    _seeds(
        store,
        [
            # 0 -> 1: one success, one failure, two never searched: 1 of 4 attempts.
            (0, 1, True, True, 3),
            (0, 1, True, False, 50),
            (0, 1, False, None, None),
            (0, 1, False, None, None),
            # 0 -> 2: both searched and both reached.
            (0, 2, True, True, 5),
            (0, 2, True, True, 9),
            # 1 -> 0: nothing searched: a rate of 0, not a missing one.
            (1, 0, False, None, None),
        ],
    )
    m = sc.escape_matrix(store, "c").set_index(["source", "target"])
    assert m.loc[(0, 1), ["attempts", "viable", "successes"]].tolist() == [4, 2, 1]
    assert m.loc[(0, 1), "success_rate"] == pytest.approx(0.25)
    assert m.loc[(0, 2), "success_rate"] == pytest.approx(1.0)
    assert m.loc[(0, 2), "median_iterations"] == pytest.approx(7.0)
    assert m.loc[(1, 0), "success_rate"] == 0.0
    a = sc.escape_attempts(store, "c")
    assert a["success"].tolist() == [True, False, False, False, True, True, False]
    assert a[["source", "target"]].values.tolist()[:2] == [[0, 1], [0, 1]]
